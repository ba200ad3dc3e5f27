"""One worker process of the fair benchmark: one engine, one operation, one run.

``python -m benchmarks._fair_worker '<json spec>'`` imports only the engine of the spec
(``arcticdb`` or ``arcticlite``), prepares what the operation needs outside the timed region,
calls ``os.sync()``, times the operation with ``time.perf_counter`` and prints one JSON line
(``{"metrics": {...}, "cpu": ..., ...}``) as the last line of stdout.

Spec keys: ``engine``, ``op``, ``uri``, ``lib``, ``sym``, ``shape``, ``parts`` (pickle of
:func:`benchmarks.fair_data.make_parts`), ``rows``, ``ncols``, ``warmup`` (bool), ``check``
(bool), plus op-specific ones (``count`` for append / versions / symbols, ``columns`` for
select, ``window`` for date_range).

Ops ``prepare_*`` write the data that a later, separate process reads; they are not timed.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import pickle
import sys
import time
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.fair_data import build_frame, make_parts


def _load(path: str) -> Any:
    with open(path, "rb") as f:
        return pickle.load(f)


def _library(spec: dict[str, Any], create: bool = False) -> Any:
    mod = importlib.import_module(spec["engine"])
    ac = mod.Arctic(spec["uri"])
    return ac.get_library(spec["lib"], create_if_missing=create)


def _timed(fn: Any) -> tuple[float, Any]:
    gc.collect()
    gc.disable()
    try:
        t = time.perf_counter()
        out = fn()
        return time.perf_counter() - t, out
    finally:
        gc.enable()


def _sync() -> None:
    os.sync()


def _check(got: pd.DataFrame, want: pd.DataFrame, what: str) -> None:
    """Shape, dtypes, index and a sample of every column (outside the timed region)."""
    if got.shape != want.shape:
        raise AssertionError(f"{what}: shape {got.shape} != {want.shape}")
    if list(got.columns) != list(want.columns):
        raise AssertionError(f"{what}: columns differ")
    for c in want.columns:
        if got[c].dtype != want[c].dtype:
            raise AssertionError(f"{what}: dtype of {c!r} is {got[c].dtype}, want {want[c].dtype}")
    if not got.index.equals(want.index):
        raise AssertionError(f"{what}: index differs ({got.index.dtype} vs {want.index.dtype})")
    step = max(1, len(want) // 2_000)
    g, w = got.iloc[::step], want.iloc[::step]
    for c in want.columns:
        if not (g[c].to_numpy() == w[c].to_numpy()).all():
            raise AssertionError(f"{what}: column {c!r} differs")


def _small(n: int, seed: int, start_ns: int) -> pd.DataFrame:
    parts = make_parts("small", n, seed=seed)
    parts["index"] = parts["index"] - parts["index"][0] + start_ns
    return build_frame("small", parts)


# -- untimed preparation -------------------------------------------------------------------------
def prepare_frame(spec: dict[str, Any]) -> dict[str, Any]:
    lib = _library(spec, create=True)
    df = build_frame(spec["shape"], _load(spec["parts"]))
    lib.write(spec["sym"], df)
    lib.write("warm", df.iloc[:10])
    return {}


def _batch_symbols(spec: dict[str, Any]) -> list[str]:
    return [f"b_{i:04d}" for i in range(spec["count"])]


def prepare_batch(spec: dict[str, Any]) -> dict[str, Any]:
    lib = _library(spec, create=True)
    df = build_frame(spec["shape"], _load(spec["parts"]))
    for sym in _batch_symbols(spec):
        lib.write(sym, df)
    lib.write("warm", df.iloc[:10])
    return {}


def prepare_versions(spec: dict[str, Any]) -> dict[str, Any]:
    lib = _library(spec, create=True)
    for v in range(spec["count"]):
        lib.write(spec["sym"], _small(100, v, 1_600_000_000 * 10**9))
    lib.write("warm", _small(100, 0, 1_600_000_000 * 10**9))
    return {}


def prepare_symbols(spec: dict[str, Any]) -> dict[str, Any]:
    lib = _library(spec, create=True)
    df = _small(10, 0, 1_600_000_000 * 10**9)
    for i in range(spec["count"]):
        lib.write(f"sym_{i:06d}", df)
    return {}


def untimed_list(spec: dict[str, Any]) -> dict[str, Any]:
    return {"count": len(_library(spec).list_symbols())}


# -- timed operations ----------------------------------------------------------------------------
def op_write(spec: dict[str, Any]) -> dict[str, Any]:
    lib = _library(spec, create=True)
    df = build_frame(spec["shape"], _load(spec["parts"]))
    if spec["warmup"]:
        lib.write("warm", df.iloc[:10])
    _sync()
    seconds, _ = _timed(lambda: lib.write(spec["sym"], df))
    out = {"metrics": {"seconds": seconds}}
    if spec["check"]:
        _check(lib.read(spec["sym"]).data, df, "write then read")
    return out


def op_read(spec: dict[str, Any]) -> dict[str, Any]:
    lib = _library(spec)
    if spec["warmup"]:
        lib.read("warm")
    _sync()
    seconds, item = _timed(lambda: lib.read(spec["sym"]))
    df = item.data
    if spec["check"]:
        _check(df, build_frame(spec["shape"], _load(spec["parts"])), "read")
    return {"metrics": {"seconds": seconds}, "rows": len(df)}


def op_date_range(spec: dict[str, Any]) -> dict[str, Any]:
    lib = _library(spec)
    start, end = (pd.Timestamp(x) for x in spec["window"])
    if spec["warmup"]:
        lib.read("warm", date_range=(start, end))
    _sync()
    seconds, item = _timed(lambda: lib.read(spec["sym"], date_range=(start, end)))
    df = item.data
    if spec["check"]:
        want = build_frame(spec["shape"], _load(spec["parts"])).loc[start:end]
        _check(df, want, "date_range")
    return {"metrics": {"seconds": seconds}, "rows": len(df)}


def op_select(spec: dict[str, Any]) -> dict[str, Any]:
    lib = _library(spec)
    cols = spec["columns"]
    if spec["warmup"]:
        lib.read("warm", columns=cols)
    _sync()
    seconds, item = _timed(lambda: lib.read(spec["sym"], columns=cols))
    df = item.data
    if spec["check"]:
        _check(df, build_frame(spec["shape"], _load(spec["parts"]))[cols], "select")
    return {"metrics": {"seconds": seconds}, "rows": len(df)}


def op_write_batch(spec: dict[str, Any]) -> dict[str, Any]:
    """One ``write_batch`` of ``count`` symbols (the same frame under each name)."""
    mod = importlib.import_module(spec["engine"])
    lib = _library(spec, create=True)
    df = build_frame(spec["shape"], _load(spec["parts"]))
    payloads = [mod.WritePayload(sym, df) for sym in _batch_symbols(spec)]
    if spec["warmup"]:
        lib.write_batch([mod.WritePayload("warm", df.iloc[:10])])
    _sync()
    seconds, _ = _timed(lambda: lib.write_batch(payloads))
    if spec["check"]:
        for item in lib.read_batch(_batch_symbols(spec)[:: max(1, spec["count"] // 5)]):
            _check(item.data, df, "write_batch then read")
    return {"metrics": {"seconds": seconds}}


def op_write_each(spec: dict[str, Any]) -> dict[str, Any]:
    """``count`` writes of one symbol each (the same frame under each name), one after another."""
    lib = _library(spec, create=True)
    df = build_frame(spec["shape"], _load(spec["parts"]))
    syms = _batch_symbols(spec)
    if spec["warmup"]:
        lib.write("warm", df.iloc[:10])
    _sync()

    def each() -> None:
        for sym in syms:
            lib.write(sym, df)

    seconds, _ = _timed(each)
    if spec["check"]:
        for sym in syms[:: max(1, spec["count"] // 5)]:
            _check(lib.read(sym).data, df, "write then read")
    return {"metrics": {"seconds": seconds}}


def op_read_batch(spec: dict[str, Any]) -> dict[str, Any]:
    """One ``read_batch`` of ``count`` symbols."""
    lib = _library(spec)
    syms = _batch_symbols(spec)
    if spec["warmup"]:
        lib.read_batch(["warm"])
    _sync()
    seconds, items = _timed(lambda: lib.read_batch(syms))
    if spec["check"]:
        df = build_frame(spec["shape"], _load(spec["parts"]))
        if len(items) != len(syms):
            raise AssertionError(f"read_batch: {len(items)} results, want {len(syms)}")
        for item in items[:: max(1, len(items) // 5)]:
            _check(item.data, df, "read_batch")
    return {"metrics": {"seconds": seconds}, "rows": sum(len(i.data) for i in items)}


def op_append(spec: dict[str, Any]) -> dict[str, Any]:
    lib = _library(spec, create=True)
    count, window = spec["count"], spec["window"]
    t0 = 1_600_000_000 * 10**9
    frames = [_small(10, i + 1, t0 + (i + 1) * 10 * 10**6) for i in range(count)]
    first = _small(10, 0, t0)
    lib.write(spec["sym"], first)
    if spec["warmup"]:
        lib.write("warm", first)
        lib.append("warm", frames[0])
    _sync()
    times = np.empty(count)
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for i, f in enumerate(frames):
            t = time.perf_counter()
            lib.append(spec["sym"], f)
            times[i] = time.perf_counter() - t
        total = time.perf_counter() - start
    finally:
        gc.enable()
    seconds, item = _timed(lambda: lib.read(spec["sym"]))
    if spec["check"]:
        _check(item.data, pd.concat([first, *frames]), "append")
    return {"metrics": {"seconds": total, "first": float(times[:window].mean()),
                        "last": float(times[-window:].mean()), "read_after": seconds}}


def op_as_of(spec: dict[str, Any]) -> dict[str, Any]:
    lib = _library(spec)
    if spec["warmup"]:
        lib.read("warm", as_of=0)
    _sync()
    seconds, item = _timed(lambda: lib.read(spec["sym"], as_of=0))
    latest, item2 = _timed(lambda: lib.read(spec["sym"]))
    if spec["check"]:
        _check(item.data, _small(100, 0, 1_600_000_000 * 10**9), "as_of=0")
        _check(item2.data, _small(100, spec["count"] - 1, 1_600_000_000 * 10**9), "latest")
    return {"metrics": {"seconds": seconds, "latest": latest}}


def op_list(spec: dict[str, Any]) -> dict[str, Any]:
    lib = _library(spec)  # a fresh client: this process has never listed this library
    _sync()
    seconds, syms = _timed(lambda: lib.list_symbols())
    if spec["check"] and len(syms) != spec["count"]:
        raise AssertionError(f"list_symbols: {len(syms)} symbols, want {spec['count']}")
    return {"metrics": {"seconds": seconds}, "count": len(syms)}


OPS = {
    "prepare_frame": prepare_frame,
    "prepare_versions": prepare_versions,
    "prepare_batch": prepare_batch,
    "prepare_symbols": prepare_symbols,
    "untimed_list": untimed_list,
    "write": op_write,
    "read": op_read,
    "date_range": op_date_range,
    "select": op_select,
    "append": op_append,
    "write_batch": op_write_batch,
    "write_each": op_write_each,
    "read_batch": op_read_batch,
    "as_of": op_as_of,
    "list": op_list,
    "list_first": op_list,
}


def _version(engine: str) -> str:
    mod = importlib.import_module(engine)
    v = getattr(mod, "__version__", None)
    if v is None:
        from importlib.metadata import version

        v = version(engine)
    return str(v)


def main() -> None:
    spec = json.loads(sys.argv[1])
    if spec.get("lite_path"):  # benchmark another checkout of arcticlite (--lite-path)
        sys.path.insert(0, spec["lite_path"])
    cpu0 = time.process_time()
    out = OPS[spec["op"]](spec)
    out["cpu_total"] = time.process_time() - cpu0
    out["version"] = _version(spec["engine"])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
