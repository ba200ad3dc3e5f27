"""One run of ``arcticlite bench``: one engine, one operation, in a fresh process.

Run as a script (``python .../_bench_worker.py '<json spec>'``, not ``-m``), so that the process
imports only its engine: ``arcticlite``, ``arcticdb`` or ``pyarrow`` (Parquet). It builds the
frame (untimed), calls ``os.sync()``, times the operation with ``time.perf_counter`` (the
garbage collector off), checks the result's row count (untimed) and prints one JSON line.

Spec keys: ``engine``, ``op`` (``prepare``, ``write``, ``read``, ``date_range``, ``columns``),
``path`` (the engine's store: an LMDB folder, or a folder holding one Parquet file), ``rows``.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from typing import Any

import numpy as np
import pandas as pd

SYMBOL = "bench"
COLUMNS = 10  # 7 float64, 2 int64, 1 string (venue), under a DatetimeIndex named "time"
SELECTED = ["c0", "c1"]  # the columns a "columns" read asks for
VENUES = np.array(["XNAS", "ARCX", "BATS", "EDGX", "IEXG"], dtype=object)


def frame(rows: int) -> pd.DataFrame:
    """The workload: ``rows`` one-second ticks of 7 float, 2 int and 1 string columns (seeded)."""
    rng = np.random.default_rng(17)
    data: dict[str, Any] = {f"c{i}": rng.standard_normal(rows) for i in range(7)}
    data["size"] = rng.integers(1, 10_000, rows)
    data["seq"] = np.arange(rows, dtype=np.int64)
    data["venue"] = VENUES[rng.integers(0, len(VENUES), rows)]
    return pd.DataFrame(data, index=pd.date_range("2024-01-02", periods=rows, freq="1s", name="time"))


def window(rows: int) -> tuple[pd.Timestamp, pd.Timestamp, int]:
    """The date range a ``date_range`` read asks for: the middle tenth of the index."""
    start = rows * 45 // 100
    n = max(1, rows // 10)
    first = pd.Timestamp("2024-01-02") + pd.Timedelta(seconds=start)
    return first, first + pd.Timedelta(seconds=n - 1), n


def _library(engine: str, path: str) -> Any:
    import importlib

    mod = importlib.import_module(engine)
    return mod.Arctic(f"lmdb://{path}").get_library(SYMBOL, create_if_missing=True)


def _operation(spec: dict[str, Any]) -> tuple[Any, int]:
    """(the timed call, the rows it must return), everything it needs built beforehand."""
    engine, op, path, rows = spec["engine"], spec["op"], spec["path"], int(spec["rows"])
    start, end, n = window(rows)
    if engine == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        file = os.path.join(path, f"{SYMBOL}.parquet")
        if op in ("prepare", "write"):
            df = frame(rows)
            os.makedirs(path, exist_ok=True)
            return (lambda: pq.write_table(pa.Table.from_pandas(df), file)), rows
        if op == "read":
            return (lambda: pq.read_table(file).to_pandas()), rows
        if op == "date_range":
            return (lambda: pq.read_table(file, filters=[("time", ">=", start), ("time", "<=", end)]).to_pandas()), n
        return (lambda: pq.read_table(file, columns=[*SELECTED, "time"]).to_pandas()), rows
    lib = _library(engine, path)
    if op in ("prepare", "write"):
        df = frame(rows)
        return (lambda: lib.write(SYMBOL, df)), rows
    if op == "read":
        return (lambda: lib.read(SYMBOL).data), rows
    if op == "date_range":
        return (lambda: lib.read(SYMBOL, date_range=(start, end)).data), n
    return (lambda: lib.read(SYMBOL, columns=SELECTED).data), rows


def run(spec: dict[str, Any]) -> dict[str, Any]:
    call, want = _operation(spec)
    os.sync()
    gc.collect()
    gc.disable()
    try:
        t = time.perf_counter()
        out = call()
        seconds = time.perf_counter() - t
    finally:
        gc.enable()
    if isinstance(out, pd.DataFrame) and len(out) != want:
        raise SystemExit(f"{spec['engine']} {spec['op']}: {len(out)} rows, want {want}")
    return {"seconds": seconds}


if __name__ == "__main__":
    print(json.dumps(run(json.loads(sys.argv[1]))))
