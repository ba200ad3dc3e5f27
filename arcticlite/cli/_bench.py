"""``bench``: a small built-in workload timed on arcticlite, Parquet files and (if installed)
ArcticDB, with a fair method: every run a fresh process that imports only its engine, the
engines' order alternated run by run, ``os.sync()`` before each timed call, the median and the
min–max of the runs reported. The timed calls are in ``_bench_worker.py``."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from typing import Any

from arcticlite.cli._common import BAD_INPUT, FAILED, CliError, emit_json
from arcticlite.progress import Progress

ENGINES = ("arcticlite", "arcticdb", "parquet")
OPS = ("write", "read", "date_range", "columns")
OP_LABELS = {"write": "write all rows", "read": "read all rows", "date_range": "read a 10% date range",
             "columns": "read 2 of 10 columns"}
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bench_worker.py")


def _engines(value: str | None) -> list[str]:
    if value is None:  # every engine installed (arcticdb is optional)
        return [e for e in ENGINES if e != "arcticdb" or importlib.util.find_spec("arcticdb") is not None]
    chosen = [e.strip() for e in value.split(",") if e.strip()]
    unknown = [e for e in chosen if e not in ENGINES]
    if unknown or not chosen:
        raise CliError(f"--engines {value!r}: choose among {', '.join(ENGINES)} (comma-separated)", BAD_INPUT)
    if "arcticdb" in chosen and importlib.util.find_spec("arcticdb") is None:
        raise CliError("--engines arcticdb: ArcticDB is not installed; pip install 'arcticlite[bench]' "
                       "(or leave it out)", BAD_INPUT)
    return chosen


def _ops(value: str | None) -> list[str]:
    if value is None:
        return list(OPS)
    chosen = [o.strip() for o in value.split(",") if o.strip()]
    if not chosen or any(o not in OPS for o in chosen):
        raise CliError(f"--ops {value!r}: choose among {', '.join(OPS)} (comma-separated)", BAD_INPUT)
    return chosen


def _worker(spec: dict[str, Any]) -> dict[str, Any]:
    """One fresh process running one operation of one engine."""
    os.sync()
    env = {**os.environ, "ARCTICLITE_PROGRESS": "0"}
    # the worker runs as a script: its process imports arcticlite only when arcticlite is timed
    pkg_root = os.path.dirname(os.path.dirname(os.path.dirname(WORKER)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_root, os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, WORKER, json.dumps(spec)], capture_output=True, text=True, env=env,
                          check=False)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise CliError(f"bench: {spec['engine']} {spec['op']} failed: {tail}", FAILED)
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _size(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def run_order(runs: int, engines: list[str]) -> list[list[str]]:
    """The engines' order run by run: forwards, then backwards (A B C, C B A, A B C …), so each
    engine goes first and last equally often."""
    return [list(engines) if r % 2 == 0 else list(reversed(engines)) for r in range(runs)]


def summary(times: list[float]) -> dict[str, float]:
    return {"median": statistics.median(times), "min": min(times), "max": max(times), "runs": len(times)}


def measure(rows: int, runs: int, engines: list[str], ops: list[str], workdir: str) -> dict[str, Any]:
    """Time every (op, engine) ``runs`` times in fresh processes; return the results as a dict."""
    times: dict[str, dict[str, list[float]]] = {op: {e: [] for e in engines} for op in ops}
    sizes: dict[str, int] = {}
    reads = [op for op in ops if op != "write"]
    total = len(ops) * runs * len(engines) + (len(engines) if reads else 0)
    with Progress(total, "bench", unit="run", delay=0.0) as bar:
        if reads or "write" in ops:  # each engine writes the store its reads use, untimed, in its own process
            for e in engines:
                path = os.path.join(workdir, f"{e}-read")
                _worker({"engine": e, "op": "prepare", "path": path, "rows": rows})
                sizes[e] = _size(path)
                bar.update(1)
        for op in ops:
            for r, order in enumerate(run_order(runs, engines)):
                for e in order:
                    path = os.path.join(workdir, f"{e}-read")
                    if op == "write":  # a fresh, empty store every run
                        path = os.path.join(workdir, f"{e}-write-{r}")
                    times[op][e].append(_worker({"engine": e, "op": op, "path": path, "rows": rows})["seconds"])
                    if op == "write":
                        shutil.rmtree(path, ignore_errors=True)
                    bar.update(1)
    results = []
    for op in ops:
        base = statistics.median(times[op]["arcticlite"]) if "arcticlite" in engines else None
        for e in engines:
            s = summary(times[op][e])
            results.append({"op": op, "engine": e, **s, "seconds": times[op][e],
                            "vs_arcticlite": None if base is None else s["median"] / base})
    return {"rows": rows, "runs": runs, "engines": engines, "ops": ops, "stored_bytes": sizes,
            "python": sys.version.split()[0], "results": results}


def table(res: dict[str, Any]) -> str:
    """The results as a readable table (times in ms; ratio > 1: arcticlite is faster)."""
    lines = [f"{res['rows']:,} rows x 10 columns, {res['runs']} runs each (fresh process per run, engines "
             "alternated, median and min-max)",
             f"{'operation':24s} {'engine':11s} {'median ms':>10s} {'min-max ms':>17s} {'Mrows/s':>8s} "
             f"{'/ arcticlite':>12s}"]
    for r in res["results"]:
        ratio = "" if r["vs_arcticlite"] is None else f"{r['vs_arcticlite']:.2f}"
        rate = res["rows"] / r["median"] / 1e6 if r["op"] != "date_range" else res["rows"] / 10 / r["median"] / 1e6
        lines.append(f"{OP_LABELS[r['op']]:24s} {r['engine']:11s} {r['median'] * 1e3:10.1f} "
                     f"{r['min'] * 1e3:8.1f}-{r['max'] * 1e3:<8.1f} {rate:8.2f} {ratio:>12s}")
    if res["stored_bytes"]:
        lines.append("stored bytes: " + ", ".join(f"{e} {n:,}" for e, n in res["stored_bytes"].items()))
    lines.append("'/ arcticlite': the engine's median over arcticlite's (> 1: arcticlite is faster)")
    return "\n".join(lines)


def bench(args: argparse.Namespace) -> int:
    engines, ops = _engines(args.engines), _ops(args.ops)
    rows = args.rows if args.rows is not None else (100_000 if args.quick else 1_000_000)
    runs = args.runs if args.runs is not None else (3 if args.quick else 5)
    if rows < 10 or runs < 1:
        raise CliError("--rows must be at least 10 and --runs at least 1", BAD_INPUT)
    workdir = tempfile.mkdtemp(prefix="arcticlite-bench-", dir=args.dir)
    try:
        res = measure(rows, runs, engines, ops, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)
    if args.plot:
        from arcticlite.plot import plot_bench

        plot_bench(res, args.plot)
    if args.json:
        emit_json(res)
    else:
        print(table(res))
        for what, path in (("results", args.out), ("chart", args.plot)):
            if path:
                print(f"{what}: {path}")
    return 0
