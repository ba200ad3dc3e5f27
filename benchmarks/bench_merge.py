"""Keyed merge side by side: ArcticDB's ``merge_experimental`` and arcticlite's merge on read.

Run ``python -m benchmarks.bench_merge [--rows 10000000] [--source 1000] [--merges 100]
[--runs 5] [--only merge,rewrite,read_after,compact] [--out FILE]``. Scenarios (LMDB, a timeseries of ``--rows`` rows: unique one-second
timestamps and four float64 columns; a source of ``--source`` rows, 90 % updates of stored
rows spread over the whole symbol and 10 % inserts between them, sorted):

``merge``
    one merge of the source into the symbol: ArcticDB (``merge_experimental``), arcticlite
    merged on read (the default) and arcticlite copy-on-write (``merge_on_read=False``);
``rewrite``
    writing the whole symbol again (what a merge without row-group reuse costs), both engines;
``read_after``
    a full read after ``--merges`` such merges: ArcticDB, arcticlite with the deltas pending,
    arcticlite after compacting them;
``compact``
    arcticlite's ``compact_deltas`` of those merges with 1 and with 2 workers.

Each timed run is a fresh process (``python -m benchmarks.bench_merge --worker ...``) that
imports only its engine, opens a private copy of a store prepared beforehand (by a separate
process; copied before the run, so a merge or compaction always starts from the same state),
calls ``os.sync()``, and times only the operation (``time.perf_counter``, the garbage collector
off). The engines of a scenario alternate their order run by run (A B, B A, ...). Reported: the
median and min–max of ``--runs`` runs, and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
SYM = "s"


# -- data -----------------------------------------------------------------------------------------
def frame(rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    idx = pd.date_range("2020-01-01", periods=rows, freq="s", name="ts")
    return pd.DataFrame({c: rng.standard_normal(rows) for c in "abcd"}, index=idx)


def source(rows: int, n: int, seed: int) -> pd.DataFrame:
    """``n`` rows: 90 % updates of stored rows anywhere in the symbol, 10 % inserts."""
    rng = np.random.default_rng(1000 + seed)
    base = pd.Timestamp("2020-01-01").value
    upd = rng.choice(rows, n - n // 10, replace=False) * 1_000_000_000
    new = rng.choice(rows, n // 10, replace=False) * 1_000_000_000 + 500_000_000  # between rows
    ts = np.sort(np.concatenate([upd, new])) + base
    # column by column: ArcticDB's merge refuses the strided columns of a 2-D block
    return pd.DataFrame({c: rng.standard_normal(n) for c in "abcd"},
                        index=pd.DatetimeIndex(ts.view("M8[ns]"), name="ts"))


# -- worker: one engine, one operation, one fresh process ------------------------------------------
def _open(engine: str, path: str, merge_on_read: bool = True) -> Any:
    if engine == "arcticdb":
        import arcticdb

        return arcticdb.Arctic(f"lmdb://{path}").get_library("m", create_if_missing=True)
    import arcticlite

    opts = arcticlite.LibraryOptions(merge_on_read=merge_on_read)
    return arcticlite.Arctic(f"lmdb://{path}").get_library("m", create_if_missing=True, library_options=opts)


def _merge(engine: str, lib: Any, src: pd.DataFrame) -> None:
    if engine == "arcticdb":
        from arcticdb.version_store.library import MergeStrategy

        lib.merge_experimental(SYM, src, strategy=MergeStrategy("update", "insert"))
    else:
        lib.merge(SYM, src)


def worker(argv: list[str]) -> None:
    engine, op, path, rows, n, merges, extra = argv[0], argv[1], argv[2], int(argv[3]), int(argv[4]), \
        int(argv[5]), argv[6]
    cow = extra == "cow"
    lib = _open(engine, path, merge_on_read=not cow)
    if op == "prepare":  # untimed: the symbol, and ``merges`` merges into it
        lib.write(SYM, frame(rows))
        for i in range(merges):
            _merge(engine, lib, source(rows, n, i))
        print(json.dumps({"ok": True}))
        return
    data = frame(rows) if op == "rewrite" else source(rows, n, 10_000) if op == "merge" else None
    if engine == "arcticlite" and op != "rewrite":
        lib.read(SYM, row_range=(0, 1))  # warm the client as the first ArcticDB call does
    gc.collect()
    gc.disable()
    os.sync()
    t0 = time.perf_counter()
    if op == "merge":
        _merge(engine, lib, data)
    elif op == "rewrite":
        lib.write(SYM, data)
    elif op == "read":
        out = lib.read(SYM).data
    elif op == "compact":
        lib.compact_deltas(SYM, workers=int(extra))
    else:
        raise SystemExit(f"unknown op {op!r}")
    seconds = time.perf_counter() - t0
    gc.enable()
    result: dict[str, Any] = {"seconds": seconds}
    if op == "read":
        result["rows"] = len(out)
    print(json.dumps(result))


# -- driver -----------------------------------------------------------------------------------------
def run_worker(engine: str, op: str, path: Path, args: argparse.Namespace, merges: int = 0,
               extra: str = "-") -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.bench_merge", "--worker", engine, op, str(path), str(args.rows),
           str(args.source), str(merges), extra]
    os.sync()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    if proc.returncode:
        raise RuntimeError(f"{engine} {op} failed:\n{proc.stderr}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2:])
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--source", type=int, default=1_000)
    p.add_argument("--merges", type=int, default=100)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    p.add_argument("--only", default="merge,rewrite,read_after,compact",
                   help="comma-separated scenarios to run (default: all)")
    args = p.parse_args()
    only = set(args.only.split(","))
    unknown = only - {"merge", "rewrite", "read_after", "compact"}
    if unknown:
        p.error(f"unknown scenarios {sorted(unknown)}: choose from merge, rewrite, read_after, compact")
    tmp = Path(tempfile.mkdtemp(prefix="bench_merge_"))
    results: dict[str, dict[str, Any]] = {}
    try:
        stores = {}
        needs_n = bool(only & {"read_after", "compact"})
        for name, engine, merges, extra in (("adb0", "arcticdb", 0, "-"), ("lite0", "arcticlite", 0, "-"),
                                            ("cow0", "arcticlite", 0, "cow"),
                                            ("adbN", "arcticdb", args.merges, "-"),
                                            ("liteN", "arcticlite", args.merges, "-")):
            if merges and not needs_n:
                continue
            t0 = time.perf_counter()
            run_worker(engine, "prepare", tmp / name, args, merges, extra)
            print(f"prepared {name} in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
            stores[name] = tmp / name
        if "read_after" in only:  # the folded store for the read after compaction (prepared, not timed)
            shutil.copytree(stores["liteN"], tmp / "liteC")
            run_worker("arcticlite", "compact", tmp / "liteC", args, extra="1")
            stores["liteC"] = tmp / "liteC"
        scenarios = [
            ("merge", [("ArcticDB merge_experimental", "arcticdb", "merge", "adb0", "-"),
                       ("arcticlite merge (on read)", "arcticlite", "merge", "lite0", "-"),
                       ("arcticlite merge (copy-on-write)", "arcticlite", "merge", "cow0", "cow")]),
            ("rewrite", [("ArcticDB write", "arcticdb", "rewrite", "adb0", "-"),
                         ("arcticlite write", "arcticlite", "rewrite", "lite0", "-")]),
            ("read_after", [("ArcticDB read", "arcticdb", "read", "adbN", "-"),
                            ("arcticlite read, deltas pending", "arcticlite", "read", "liteN", "-"),
                            ("arcticlite read, compacted", "arcticlite", "read", "liteC", "-")]),
            ("compact", [("arcticlite compact_deltas, 1 worker", "arcticlite", "compact", "liteN", "1"),
                         ("arcticlite compact_deltas, 2 workers", "arcticlite", "compact", "liteN", "2")]),
        ]
        for scenario, entries in scenarios:
            if scenario not in only:
                continue
            times: dict[str, list[float]] = {e[0]: [] for e in entries}
            for r in range(args.runs):
                order = entries if r % 2 == 0 else entries[::-1]  # alternate which goes first
                for label, engine, op, store, extra in order:
                    run_dir = tmp / f"run_{store}"
                    if op in ("merge", "rewrite", "compact"):  # a private copy: every run starts alike
                        shutil.rmtree(run_dir, ignore_errors=True)
                        shutil.copytree(stores[store], run_dir)
                        target = run_dir
                    else:
                        target = stores[store]
                    times[label].append(run_worker(engine, op, target, args, extra=extra)["seconds"])
            results[scenario] = {label: summary(v) | {"runs": v} for label, v in times.items()}
            for label, s in results[scenario].items():
                print(f"{scenario:11s} {label:40s} median {s['median']:.3f} s  (min {s['min']:.3f}, "
                      f"max {s['max']:.3f})", flush=True)
        if {"merge", "rewrite"} <= only:
            m = results["merge"]
            lite = m["arcticlite merge (on read)"]["median"]
            print(f"\nmerge on read / rewrite of the symbol: {lite / results['rewrite']['arcticlite write']['median']:.1%}; "
                  f"ArcticDB merge / arcticlite merge: {m['ArcticDB merge_experimental']['median'] / lite:.1f}x")
        if args.out:
            args.out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()},
                                            "results": results}, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
