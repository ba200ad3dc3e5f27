"""The fair benchmark: ArcticDB vs arcticlite, one fresh process per engine, scenario and run.

Run ``python -m benchmarks.fair [--scale 1.0] [--runs 5] [--only NAME,...] [--backends lmdb,s3]``
(``--set KEY=N`` overrides one size, see ``benchmarks/fair_data.py``; ``--list`` shows the
scenarios). Results: a table on stdout and JSON in ``benchmarks/results/fair.json``.

How a scenario is measured:

1. Its data is generated once, as plain arrays pickled to a file (``fair_data.make_parts``).
2. What is read is written before any timed run, by a separate process per engine (each engine
   reads its own store; the writer of a read scenario is never the process that is timed).
3. The runs: for run ``r`` both engines run once, in the order A B for even ``r`` and B A for
   odd ``r`` (A B B A A B …), each in a fresh worker process (``benchmarks/_fair_worker.py``)
   that imports only its engine. The driver calls ``sync`` before launching each worker; the
   worker does its untimed setup (open the client and library, build the frame from the parts,
   a warm-up operation on a 10-row ``warm`` symbol unless ``--no-warmup``), calls ``sync``
   again, and times only the operation (``time.perf_counter``, the garbage collector off).
   Writes and appends go to a fresh, empty store (LMDB directory or S3 bucket) every run, which
   is deleted afterwards. ``--cache cold`` also evicts the LMDB files of a read's store from the
   page cache (``posix_fadvise(DONTNEED)``) before the run; the default (``warm``) leaves the
   files of the engine's own store cached (written by the preparing process), the same for both.
   Before the timed runs, ``--discard`` (default 1) untimed runs of each engine (A B) absorb
   the effects of the first process ever to read a fresh store; their times are kept in the
   JSON and reported as "discarded first run / median".
4. Every result is checked after the timed call (shape, dtypes, index, a sample of values).

Reported per scenario: median and min–max of each engine's runs, the ratio of the medians
(ArcticDB / arcticlite, > 1 means arcticlite is faster) and the min–max of the per-run ratios,
and the order effect: for each engine, the median of its runs when it went first in its pair
over the median when it went second (1.00 = no effect).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import pickle
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.fair_data import (
    ENGINE_LABELS,
    ENGINES,
    Scenario,
    fmt_cell,
    make_parts,
    order_effect,
    ratio,
    run_order,
    scenarios,
    select_scenarios,
    sizes_for,
    summarise,
)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "fair.json"
S3_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                  "AWS_DEFAULT_REGION": "us-east-1"}
SECONDARY = {  # op -> [(metric, label, unit)]
    "append": [("first", "per append, mean of the first {w}", "ms"),
               ("last", "per append, mean of the last {w}", "ms"),
               ("read_after", "read after the appends", "ms")],
    "as_of": [("latest", "latest read of the same symbol", "ms")],
}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# -- machine -------------------------------------------------------------------------------------
def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "date_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "loadavg_start": os.getloadavg(),
    }
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        info["cpu"] = names[0] if names else platform.processor()
        with open("/proc/meminfo") as f:
            info["ram_gib"] = round(int(f.readline().split()[1]) / 2**20, 1)
    except OSError:
        pass
    try:
        info["git_head"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, text=True,
                                          capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    for mod in ("pyarrow", "lmdb", "moto", "boto3"):
        try:
            from importlib.metadata import version

            info[mod] = version(mod)
        except Exception:  # noqa: BLE001 - optional
            pass
    return info


# -- stores --------------------------------------------------------------------------------------
class Stores:
    """Where each engine's stores live: LMDB directories under ``root``, or buckets of the moto
    server (started on first use, in a thread of this process, which is idle while a worker
    runs)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.server: Any = None
        self._n = 0

    def _s3(self) -> Any:
        if self.server is None:
            for k, v in S3_CREDENTIALS.items():
                os.environ.setdefault(k, v)
            from arcticlite.testing.s3server import S3TestServer

            self.server = S3TestServer(serialise=True).start()
            log(f"moto S3 server at {self.server.endpoint_url}")
        return self.server

    def new(self, backend: str, engine: str, tag: str) -> dict[str, Any]:
        """A fresh, empty store for ``engine``: ``{"uri", "path" | "bucket"}``."""
        self._n += 1
        if backend == "lmdb":
            path = self.root / f"{tag}-{engine}-{self._n}"
            return {"uri": f"lmdb://{path}", "path": str(path)}
        server = self._s3()
        bucket = server.make_bucket(f"fair-{self._n}-{engine[:6]}")
        extra = {"access": "testing", "secret": "testing"} if engine == "arcticdb" else {}
        return {"uri": server.uri(bucket, **extra), "bucket": bucket}

    def copy(self, store: dict[str, Any], engine: str, tag: str) -> dict[str, Any]:
        """A copy of an LMDB store (the store as it was, for operations that change it)."""
        new = self.new("lmdb", engine, tag)
        shutil.copytree(store["path"], new["path"])
        return new

    def drop(self, store: dict[str, Any]) -> None:
        if "path" in store:
            shutil.rmtree(store["path"], ignore_errors=True)
        elif self.server is not None:
            client = self.server.client()
            bucket = store["bucket"]
            while True:
                listed = client.list_objects_v2(Bucket=bucket)
                keys = [{"Key": o["Key"]} for o in listed.get("Contents", [])]
                if not keys:
                    break
                for i in range(0, len(keys), 1000):
                    client.delete_objects(Bucket=bucket, Delete={"Objects": keys[i:i + 1000]})
            client.delete_bucket(Bucket=bucket)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


def evict(store: dict[str, Any]) -> None:
    """Drop the files of an LMDB store from the page cache (after ``sync``)."""
    if "path" not in store or not hasattr(os, "posix_fadvise"):
        return
    for dirpath, _, files in os.walk(store["path"]):
        for name in files:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


# -- workers -------------------------------------------------------------------------------------
def run_worker(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    env = {**os.environ, **S3_CREDENTIALS}
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks._fair_worker", json.dumps(spec)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"worker {spec['engine']} {spec['op']} failed "
                           f"(exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


class Driver:
    def __init__(self, args: argparse.Namespace, sizes: dict[str, int], root: Path) -> None:
        self.args = args
        self.sizes = sizes
        self.root = root
        self.stores = Stores(root)
        self.parts: dict[tuple[Any, ...], str] = {}
        self.prepared: dict[tuple[Any, ...], dict[str, Any]] = {}
        self.versions: dict[str, str] = {}

    # data files and prepared stores are cached across scenarios of one run
    def parts_file(self, shape: str, rows: int, ncols: int | None) -> str:
        key = (shape, rows, ncols)
        if key not in self.parts:
            t = time.perf_counter()
            parts = make_parts(shape, rows, ncols or 10)
            path = self.root / f"parts-{shape}-{rows}-{ncols}.pkl"
            with open(path, "wb") as f:
                pickle.dump(parts, f, protocol=5)
            del parts
            self.parts[key] = str(path)
            log(f"  data {shape} {rows:,} rows: {time.perf_counter() - t:.1f} s")
        return self.parts[key]

    def base_spec(self, s: Scenario, engine: str) -> dict[str, Any]:
        spec: dict[str, Any] = {"engine": engine, "lib": "bench", "sym": "data",
                                "warmup": not self.args.no_warmup, "check": not self.args.no_check}
        if self.args.lite_path:
            spec["lite_path"] = self.args.lite_path
        if s.dataset is not None:
            shape, rows, ncols = s.dataset.key(self.sizes)
            spec.update(shape=shape, rows=rows, ncols=ncols,
                        parts=self.parts_file(shape, rows, ncols))
        return spec

    def prepare(self, s: Scenario, engine: str, kind: str) -> dict[str, Any]:
        """The store a read-type scenario reads (written by its own, untimed process)."""
        spec = self.base_spec(s, engine)
        key = (s.backend, kind, spec.get("shape"), spec.get("rows"), spec.get("ncols"), engine)
        if key not in self.prepared:
            store = self.stores.new(s.backend, engine, f"prep-{kind}")
            t = time.perf_counter()
            if kind == "frame":
                run_worker({**spec, "op": "prepare_frame", **store}, self.args.timeout)
            elif kind == "batch":
                run_worker({**spec, "op": "prepare_batch", "count": self.sizes["batch_symbols"],
                            **store}, self.args.timeout)
            elif kind == "versions":
                run_worker({**spec, "op": "prepare_versions", "count": self.sizes["versions"],
                            **store}, self.args.timeout)
            elif kind == "symbols":
                run_worker({**spec, "op": "prepare_symbols", "count": self.sizes["symbols"],
                            **store}, self.args.timeout)
            elif kind == "symbols_listed":  # a copy of "symbols", listed once (compacted)
                store = self.stores.copy(self.prepare(s, engine, "symbols"), engine, "listed")
                run_worker({**spec, "op": "untimed_list", **store}, self.args.timeout)
            self.prepared[key] = store
            log(f"  prepared {kind} for {engine}: {time.perf_counter() - t:.1f} s")
        return self.prepared[key]

    def spec_for(self, s: Scenario, engine: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """(spec, a store to drop after the run or None)."""
        spec = {**self.base_spec(s, engine), "op": s.op}
        if s.op in ("write", "append", "write_batch", "write_each"):
            store = self.stores.new(s.backend, engine, s.op)
            if s.op in ("write_batch", "write_each"):
                spec["count"] = self.sizes["batch_symbols"]
            if s.op == "append":
                spec.update(count=self.sizes["appends"],
                            window=min(100, max(1, self.sizes["appends"] // 4)))
            return {**spec, **store}, store
        if s.op in ("read", "date_range", "select"):
            store = self.prepare(s, engine, "frame")
            if s.op == "date_range":
                start = pd.Timestamp("2020-01-01") + pd.Timedelta(seconds=spec["rows"] // 2)
                spec["window"] = [str(start), str(start + pd.Timedelta(seconds=3599))]
            if s.op == "select":
                idx = np.linspace(0, spec["ncols"] - 1, 10).astype(int)
                spec["columns"] = [f"c{i}" for i in idx]
            return {**spec, **store}, None
        if s.op == "read_batch":
            store = self.prepare(s, engine, "batch")
            return {**spec, "count": self.sizes["batch_symbols"], **store}, None
        if s.op == "as_of":
            store = self.prepare(s, engine, "versions")
            return {**spec, "count": self.sizes["versions"], **store}, None
        if s.op == "list_first":  # every run lists a pristine copy: always the first call
            copy = self.stores.copy(self.prepare(s, engine, "symbols"), engine, "first")
            return {**spec, "count": self.sizes["symbols"], **copy}, copy
        if s.op == "list":
            store = self.prepare(s, engine, "symbols_listed")
            return {**spec, "count": self.sizes["symbols"], **store}, None
        raise KeyError(s.op)

    PREPARE = {"read": "frame", "read_batch": "batch", "date_range": "frame", "select": "frame", "as_of": "versions",
               "list_first": "symbols", "list": "symbols_listed"}

    def run_scenario(self, s: Scenario) -> dict[str, Any]:
        log(f"== {s.name}: {s.label}")
        if s.dataset is not None:
            self.parts_file(*s.dataset.key(self.sizes))
        if s.op in self.PREPARE:  # both engines' stores, before the first timed run
            for engine in ENGINES:
                self.prepare(s, engine, self.PREPARE[s.op])
        records: list[dict[str, Any]] = []
        discarded: list[dict[str, Any]] = []
        schedule = [(True, *x) for x in run_order(self.args.discard)]
        schedule += [(False, *x) for x in run_order(self.args.runs)]
        for is_discard, run, position, engine in schedule:
            spec, drop = self.spec_for(s, engine)
            os.sync()
            if self.args.cache == "cold" and drop is None:
                evict(spec)
            t = time.perf_counter()
            out = run_worker(spec, self.args.timeout)
            wall = time.perf_counter() - t
            self.versions[engine] = out.get("version", "?")
            (discarded if is_discard else records).append(
                {"run": run, "position": position, "engine": engine, "metrics": out["metrics"],
                 "cpu_total": out.get("cpu_total"), "process_seconds": wall,
                 "loadavg": os.getloadavg()[0]})
            if drop is not None:
                self.stores.drop(drop)
            m = out["metrics"]["seconds"]
            log(f"  {'discard' if is_discard else 'run'} {run} {'AB'[position]} {engine:10s} "
                f"{m * 1e3:10.2f} ms (process {wall:.1f} s)")
        return {"scenario": s.name, "label": s.label, "op": s.op, "backend": s.backend,
                "unit": s.unit, "records": records, "discarded": discarded,
                **summarise_records(s, records, self.sizes, discarded)}

    def cleanup(self) -> None:
        for store in self.prepared.values():
            self.stores.drop(store)
        self.stores.stop()


def summarise_records(s: Scenario, records: list[dict[str, Any]], sizes: dict[str, int],
                      discarded: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Per metric: each engine's summary, the ratio of the medians, the per-run ratios, the
    order effect, and the discarded (first) run of each engine over its median."""
    metrics = [("seconds", s.label, s.unit)]
    w = min(100, max(1, sizes["appends"] // 4))
    metrics += [(m, label.format(w=w), unit) for m, label, unit in SECONDARY.get(s.op, [])]
    rows = []
    for metric, label, unit in metrics:
        per = {e: [r["metrics"][metric] for r in records if r["engine"] == e] for e in ENGINES}
        summ = {e: summarise(per[e]) for e in ENGINES}
        by_run: dict[int, dict[str, float]] = {}
        for r in records:
            by_run.setdefault(r["run"], {})[r["engine"]] = r["metrics"][metric]
        run_ratios = [ratio(v.get("arcticdb"), v.get("arcticlite")) for v in by_run.values()]
        run_ratios = [x for x in run_ratios if x is not None]
        med = {e: (summ[e] or {}).get("median") for e in ENGINES}
        first_run = {}
        for e in ENGINES:
            d = [r["metrics"][metric] for r in discarded or [] if r["engine"] == e]
            first_run[e] = (d[0] / med[e]) if d and med[e] else None
        rows.append({
            "metric": metric, "label": label, "unit": unit, "summary": summ,
            "discarded_over_median": first_run,
            "ratio": ratio(med["arcticdb"], med["arcticlite"]),
            "run_ratios": run_ratios,
            "order_effect": order_effect(records, metric),
        })
    return {"rows": rows}


# -- output --------------------------------------------------------------------------------------
def _x(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def table(results: list[dict[str, Any]]) -> str:
    head = ("| scenario | ArcticDB median (min–max) | arcticlite median (min–max) | ratio | "
            "per-run ratios | order effect ADB / lite |")
    lines = [head, "|---|---|---|---|---|---|"]
    for res in results:
        for row in res["rows"]:
            label = row["label"] if row["metric"] == "seconds" else f"  … {row['label']}"
            rr = row["run_ratios"]
            spread = f"{min(rr):.2f}–{max(rr):.2f}" if rr else "–"
            oe = row["order_effect"]
            order = (f"{_x(oe['arcticdb']['first_over_second'])} / "
                     f"{_x(oe['arcticlite']['first_over_second'])}")
            r = row["ratio"]
            lines.append(
                f"| {label} | {fmt_cell(row['summary']['arcticdb'], row['unit'])} | "
                f"{fmt_cell(row['summary']['arcticlite'], row['unit'])} | "
                f"**{_x(r)}** | {spread} | {order} |")
    return "\n".join(lines)


def order_summary(results: list[dict[str, Any]], field: str = "order_effect") -> dict[str, Any]:
    """Over all primary rows, per engine: the geometric mean and range of first / second in a
    pair (``order_effect``), or of the discarded first run over the median
    (``discarded_over_median``)."""
    out = {}
    for e in ENGINES:
        if field == "order_effect":
            vals = [row[field][e]["first_over_second"] for res in results
                    for row in res["rows"][:1] if row[field][e]["first_over_second"]]
        else:
            vals = [row[field][e] for res in results for row in res["rows"][:1]
                    if row.get(field, {}).get(e)]
        if vals:
            out[e] = {"geomean": float(np.exp(np.mean(np.log(vals)))), "min": min(vals),
                      "max": max(vals), "n": len(vals),
                      "slower_first": sum(v > 1.05 for v in vals),
                      "slower_second": sum(v < 1 / 1.05 for v in vals)}
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.fair", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", type=float, default=1.0, help="row counts x SCALE (default 1.0)")
    p.add_argument("--runs", type=int, default=5, help="runs per engine (default 5, minimum "
                   "for a reported figure)")
    p.add_argument("--only", default="", help="comma-separated scenario names or ops "
                   "(write, read, read_array, s3_read_mixed, append, ...)")
    p.add_argument("--backends", default="lmdb,s3", help="lmdb,s3 (default both)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=N",
                   help="override one size (e.g. --set s3_array_rows=2000000)")
    p.add_argument("--discard", type=int, default=1,
                   help="untimed runs per engine before the timed ones (default 1; kept in the "
                   "JSON as 'discarded': the first process ever to touch a store or a library)")
    p.add_argument("--cache", choices=("warm", "cold"), default="warm",
                   help="cold: evict a read's LMDB files from the page cache before each run")
    p.add_argument("--no-warmup", action="store_true",
                   help="no untimed warm-up operation in the worker (measures first calls)")
    p.add_argument("--no-check", action="store_true", help="skip the result checks")
    p.add_argument("--tmp", default=None, help="directory for the stores (default: $TMPDIR)")
    p.add_argument("--out", default=str(RESULTS), help=f"JSON output (default {RESULTS})")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per worker")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--lite-path", default=None,
                   help="import arcticlite from this directory (e.g. an exported commit: "
                   "git archive HEAD arcticlite | tar -x -C DIR) instead of the working tree")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    overrides = {}
    for item in args.set:
        k, _, v = item.partition("=")
        overrides[k.strip()] = int(v)
    sizes = sizes_for(args.scale, overrides)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    only = [o.strip() for o in args.only.split(",") if o.strip()]
    chosen = select_scenarios(scenarios(sizes), only, backends)
    if args.list:
        for s in scenarios(sizes):
            print(f"{s.name:22s} {s.backend:5s} {s.label}")
        return
    if not chosen:
        raise SystemExit("no scenario selected (see --list)")
    if args.lite_path:
        args.lite_path = os.path.abspath(args.lite_path)
        sys.path.insert(0, args.lite_path)  # for the moto helper (arcticlite.testing)
    if args.runs < 5:
        log(f"warning: {args.runs} runs (< 5): a smoke run, not a reported figure")
    info = machine()
    info["arcticlite_from"] = args.lite_path or "working tree"
    command = "python -m benchmarks.fair " + " ".join(argv if argv is not None else sys.argv[1:])
    root = Path(tempfile.mkdtemp(prefix="fairbench-", dir=args.tmp))
    driver = Driver(args, sizes, root)
    results = []
    t0 = time.perf_counter()
    try:
        for s in chosen:
            results.append(driver.run_scenario(s))
    finally:
        driver.cleanup()
        shutil.rmtree(root, ignore_errors=True)
    info["loadavg_end"] = os.getloadavg()
    info["elapsed_s"] = round(time.perf_counter() - t0, 1)
    info.update({f"engine_{e}": v for e, v in driver.versions.items()})
    effects = order_summary(results)
    first_runs = order_summary(results, "discarded_over_median")
    doc = {"command": command.strip(), "machine": info, "sizes": sizes, "runs": args.runs,
           "cache": args.cache, "warmup": not args.no_warmup, "order": "A B B A A B ...",
           "ratio": "ArcticDB / arcticlite (> 1: arcticlite faster)",
           "order_effect": "median when first in its pair / median when second",
           "order_summary": effects, "discarded_summary": first_runs, "results": results}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1, default=str))
    print(f"# {doc['command']}")
    print(f"# {info.get('date_utc')}, {info.get('cpu')}, {info.get('cpu_count')} CPUs, "
          f"{info.get('ram_gib')} GiB, Python {info['python']}, "
          + ", ".join(f"{ENGINE_LABELS[e]} {v}" for e, v in driver.versions.items())
          + f", load {info['loadavg_start'][0]:.1f} -> {info['loadavg_end'][0]:.1f}, "
          f"{info['elapsed_s']} s")
    print(f"# {args.runs} runs per engine, order A B B A ..., cache {args.cache}, "
          f"warm-up {'on' if not args.no_warmup else 'off'}; ratio = ArcticDB / arcticlite")
    print(table(results))
    for e, v in effects.items():
        print(f"# order effect {ENGINE_LABELS[e]}: first/second geomean {v['geomean']:.3f} "
              f"(range {v['min']:.2f}–{v['max']:.2f} over {v['n']} scenarios; slower first in "
              f"{v['slower_first']}, slower second in {v['slower_second']}, > 5 %)")
    for e, v in first_runs.items():
        print(f"# discarded first run / median, {ENGINE_LABELS[e]}: geomean {v['geomean']:.3f} "
              f"(range {v['min']:.2f}–{v['max']:.2f} over {v['n']} scenarios; slower in "
              f"{v['slower_first']}, faster in {v['slower_second']}, > 5 %)")
    print(f"# JSON: {out}")


if __name__ == "__main__":
    main()
