"""Selective queries, arcticlite vs ArcticDB (issue 15): Bloom filters, min/max pruning, page skipping.

Run ``python -m benchmarks.bench_pushdown [--rows 20000000] [--runs 5] [--layout random|blocks]``.

The symbol: a datetime index, a sorted int64 ``id``, a random float ``x`` and a string
``ticker`` of 10,000 values — ``random`` layout: each row's ticker drawn uniformly (every
segment holds every ticker); ``blocks``: each ticker's rows contiguous, tickers in random name
order (a segment holds ~rows/10,000 tickers whose names span the whole range, so page min/max
cannot prune an equality but Bloom filters can). Queries: ``ticker == x``,
``ticker.isin([3 values])``, a range on ``id`` (0.1 % of the rows), ``x > 0.999``, and
groupby-sum of ``x`` by ``ticker`` (every row read).

Fair harness (as ``benchmarks/fair.py``): each engine writes its own LMDB store in a separate
process, generating the same rows deterministically in chunks of 2M (a write, then appends), so
a 20M-row run holds one chunk at a time (~0.5 GB per writer process, not the whole frame); every timed run is a fresh process importing
only its engine, which opens the library, calls ``os.sync()`` and times one
``lib.read(sym, query_builder=q).data`` (wall time, and the process's CPU time over all its
threads, steadier on a loaded machine); engines alternate A B, B A, … per run; the median of
the runs is reported, with the result's row count of each engine (equal run to run; they differ where ArcticDB compares a float literal at float32 precision, docs/compatibility.md). arcticlite's
``QueryBuilder.explain`` figures (segments / pages fetched) come from an untimed call.
Results: a table on stdout and JSON in ``benchmarks/results/pushdown.json``.

``--cpu-in-process`` (profiling aid, not the fair comparison): one arcticlite process writes the
symbol, reads each query once to warm up, then ``--runs`` times, and prints the median CPU time
(``time.process_time``) of a read; ``--queries`` narrows the queries.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

QUERIES = ["ticker_eq", "ticker_isin", "id_range", "x_gt", "groupby_sum"]
CHUNK = 2_000_000
ENGINES = ["arcticlite", "arcticdb"]


def make_frame(rows: int, layout: str, seed: int = 0, start: int = 0, stop: int | None = None) -> pd.DataFrame:
    """Rows ``[start, stop)`` (default all) of the ``rows``-row frame: the same values whatever
    the chunks they are generated in, as long as chunks start at multiples of :data:`CHUNK`."""
    stop = rows if stop is None else stop
    names = np.array([f"T{i:05d}" for i in range(10_000)], dtype=object)
    parts = []
    for c0 in range(start - start % CHUNK, stop, CHUNK):
        rng = np.random.default_rng([seed, c0 // CHUNK])
        m = min(CHUNK, rows - c0)
        pos = np.arange(c0, c0 + m, dtype=np.int64)
        if layout == "random":
            codes = rng.integers(0, 10_000, m)
        else:
            codes = np.random.default_rng(seed).permutation(10_000)[(pos * 10_000) // rows]
        part = pd.DataFrame({"id": pos, "x": rng.random(m), "ticker": names[codes]},
                            index=pd.Timestamp("2020-01-01") + pd.to_timedelta(pos, unit="s"))
        parts.append(part.iloc[max(0, start - c0): stop - c0])
    return pd.concat(parts) if len(parts) > 1 else parts[0]


def query(mod: Any, name: str, rows: int) -> Any:
    q = mod.QueryBuilder()
    if name == "ticker_eq":
        return q[q["ticker"] == "T00042"]
    if name == "ticker_isin":
        return q[q["ticker"].isin(["T00042", "T05000", "T09999"])]
    if name == "id_range":
        lo = rows // 2
        return q[(q["id"] >= lo) & (q["id"] < lo + max(1, rows // 1000))]
    if name == "groupby_sum":
        return q.groupby("ticker").agg({"x": "sum"})
    return q[q["x"] > 0.999]


# -- worker -------------------------------------------------------------------------------------
def worker(spec: dict[str, Any]) -> dict[str, Any]:
    mod = importlib.import_module(spec["engine"])
    lib = mod.Arctic(spec["uri"]).get_library("bench", create_if_missing=spec["op"] == "prepare")
    if spec["op"] == "prepare":
        rows, spent = spec["rows"], 0.0
        for c0 in range(0, rows, CHUNK):
            df = make_frame(rows, spec["layout"], start=c0, stop=min(rows, c0 + CHUNK))
            t = time.perf_counter()
            (lib.write if c0 == 0 else lib.append)("s", df)
            spent += time.perf_counter() - t
            del df
            gc.collect()
        return {"write_s": spent, "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    q = query(mod, spec["query"], spec["rows"])
    os.sync()
    gc.collect()
    gc.disable()
    c = time.process_time()
    t = time.perf_counter()
    out = lib.read("s", query_builder=q).data
    elapsed = time.perf_counter() - t
    cpu = time.process_time() - c
    gc.enable()
    res: dict[str, Any] = {"seconds": elapsed, "cpu_seconds": cpu, "rows": len(out)}
    if spec["engine"] == "arcticlite" and spec.get("explain"):
        res["explain"] = query(mod, spec["query"], spec["rows"]).explain(lib, "s").to_dict()
    return res


def run_worker(spec: dict[str, Any]) -> dict[str, Any]:
    os.sync()
    proc = subprocess.run([sys.executable, "-m", "benchmarks.bench_pushdown", "--worker", json.dumps(spec)],
                          capture_output=True, text=True, check=False)
    lines = proc.stdout.strip().splitlines()
    try:
        # ArcticDB 6.28 now and then dies at interpreter exit (SIGSEGV) after printing its result
        out = dict(json.loads(lines[-1]))
    except (IndexError, ValueError):
        raise RuntimeError(f"worker failed (exit {proc.returncode}): {spec}\n{proc.stderr[-3000:]}") from None
    if proc.returncode:
        out["exit"] = proc.returncode
    return out


def cpu_in_process(rows: int, layout: str, runs: int, names: list[str]) -> None:
    """Median CPU time of ``runs`` reads of each query in this process, after one warm-up."""
    import arcticlite

    root = tempfile.mkdtemp(prefix="bench_pushdown_cpu_")
    try:
        worker({"engine": "arcticlite", "op": "prepare", "uri": f"lmdb://{root}", "rows": rows, "layout": layout})
        lib = arcticlite.Arctic(f"lmdb://{root}").get_library("bench")
        for name in names:
            q = query(arcticlite, name, rows)
            n = len(lib.read("s", query_builder=q).data)
            cpus = []
            for _ in range(runs):
                c = time.process_time()
                lib.read("s", query_builder=q)
                cpus.append(time.process_time() - c)
            print(f"{name:<13}{n:>9} rows  cpu median {1000 * float(np.median(cpus)):8.1f} ms"
                  f"  (min {1000 * min(cpus):.1f}, {runs} reads, {rows:,} rows, layout {layout})")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def store_bytes(path: str) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--layout", choices=["random", "blocks"], default="random")
    ap.add_argument("--worker")
    ap.add_argument("--cpu-in-process", action="store_true")
    ap.add_argument("--queries", default=",".join(QUERIES))
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return
    if args.cpu_in_process:
        cpu_in_process(args.rows, args.layout, args.runs, args.queries.split(","))
        return
    root = tempfile.mkdtemp(prefix="bench_pushdown_")
    try:
        uris = {e: f"lmdb://{os.path.join(root, e)}" for e in ENGINES}
        prep = {e: run_worker({"engine": e, "op": "prepare", "uri": uris[e], "rows": args.rows,
                               "layout": args.layout}) for e in ENGINES}
        sizes = {e: store_bytes(os.path.join(root, e)) for e in ENGINES}
        results: dict[str, Any] = {"rows": args.rows, "layout": args.layout, "runs": args.runs,
                                   "load_before": os.getloadavg(),
                                   "writer_max_rss_mb": {e: prep[e]["max_rss_mb"] for e in ENGINES},
                                   "write_s": {e: prep[e]["write_s"] for e in ENGINES},
                                   "store_bytes": sizes, "queries": {}}
        for name in QUERIES:
            times: dict[str, list[float]] = {e: [] for e in ENGINES}
            cpus: dict[str, list[float]] = {e: [] for e in ENGINES}
            counts: dict[str, set[int]] = {e: set() for e in ENGINES}
            explain = None
            for r in range(args.runs):
                for e in (ENGINES if r % 2 == 0 else ENGINES[::-1]):
                    spec = {"engine": e, "op": "read", "uri": uris[e], "query": name, "rows": args.rows,
                            "explain": e == "arcticlite" and explain is None}
                    out = run_worker(spec)
                    times[e].append(out["seconds"])
                    cpus[e].append(out["cpu_seconds"])
                    counts[e].add(out["rows"])
                    explain = out.get("explain", explain)
            if len(counts["arcticlite"]) != 1 or len(counts["arcticdb"]) != 1:
                raise RuntimeError(f"{name}: row counts differ between runs {counts}")
            if counts["arcticlite"] != counts["arcticdb"]:
                # ArcticDB compares a float literal at float32 precision (docs/compatibility.md):
                # `x > 0.999` drops the rows between 0.999 and float32(0.999); pandas keeps them
                print(f"note: {name} rows differ: arcticlite {counts['arcticlite']}, arcticdb {counts['arcticdb']}",
                      file=sys.stderr)
            med = {e: float(np.median(times[e])) for e in ENGINES}
            cpu_med = {e: float(np.median(cpus[e])) for e in ENGINES}
            results["queries"][name] = {"times": times, "median": med, "cpu": cpus, "cpu_median": cpu_med,
                                        "rows": counts["arcticlite"].pop(), "arcticdb_rows": counts["arcticdb"].pop(),
                                        "arcticdb_over_arcticlite": med["arcticdb"] / med["arcticlite"],
                                        "explain": explain}
        results["load_after"] = os.getloadavg()
        print(f"{args.rows:,} rows, layout {args.layout}, median of {args.runs} (fresh process per run, A B / B A);"
              f" load average before {results['load_before'][0]:.1f}, after {results['load_after'][0]:.1f};"
              f" writer peak RSS (MB) {results['writer_max_rss_mb']}")
        print(f"stored bytes: arcticlite {sizes['arcticlite']:,}, arcticdb {sizes['arcticdb']:,}")
        print(f"{'query':<13}{'rows':>9}{'arcticlite s':>14}{'arcticdb s':>12}{'ratio':>8}{'cpu ratio':>10}"
              "  segments / pages fetched")
        for name, q in results["queries"].items():
            ex = q["explain"] or {}
            print(f"{name:<13}{q['rows']:>9}{q['median']['arcticlite']:>14.4f}{q['median']['arcticdb']:>12.4f}"
                  f"{q['arcticdb_over_arcticlite']:>8.2f}"
                  f"{q['cpu_median']['arcticdb'] / max(q['cpu_median']['arcticlite'], 1e-9):>10.2f}"
                  f"  {ex.get('segments_fetched')}/{ex.get('segments_total')}"
                  f" segs, {ex.get('pages_considered', 0) - ex.get('pages_skipped', 0)}/{ex.get('pages_considered')}"
                  f" pages (bloom pruned {ex.get('row_groups_pruned_bloom')} row groups,"
                  f" min/max {ex.get('row_groups_pruned_minmax')})")
        out_dir = Path(__file__).parent / "results"
        out_dir.mkdir(exist_ok=True)
        (out_dir / "pushdown.json").write_text(json.dumps(results, indent=1, default=str))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
