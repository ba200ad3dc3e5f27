"""arcticlite vs ArcticDB, side by side in one run, both on LMDB in temporary directories.

Run ``python -m benchmarks.bench_engine [--quick] [--only NAME[,NAME...]] [--libs arcticlite,arcticdb]``.

The scenarios are those of DESIGN §8 that concern the engine:

- ``write``: write N rows x 10 float64 columns (standard normal, incompressible) + DatetimeIndex
  (1 s spacing); one run each (writes create a new version, so repeats would be unequal);
- ``read``: read that frame back (best of ``reps``);
- ``quote``: read an M-row quote frame (bid/ask floats with 2 decimals, int64 sizes, a string
  venue column of 10 values), best of ``reps``; then the same through a QueryBuilder filter
  keeping the rows whose bid is above its 97th percentile (a random walk: they cluster in time);
- ``append``: A appends of 10 rows each; mean ms of the first 100 vs the last 100 appends (a
  flat cost means the last 100 are no slower), then a latest read of the appended symbol;
- ``as_of``: a symbol with V versions (V writes of a 100-row frame); ``read(as_of=0)`` vs a
  latest read (best of ``reps``, milliseconds);
- ``list``: ``list_symbols()`` on S symbols from a fresh client, in a fresh process: first
  the very first call after the writes (it may compact the symbol-list journal), then a second
  fresh client;
- ``wide``: read 10 of C columns x 10k rows (the 10 columns spread over the frame);
- ``date_range``: read one hour (3,600 rows) from the middle of the ``write`` frame;
- ``memory``: peak memory of a full read of the ``write`` frame in a fresh process:
  the peak RSS during the read (``VmHWM``, reset just before it) minus the RSS just before it,
  divided by the in-memory size of the result (``DataFrame.memory_usage(deep=True)``). Pages of
  the LMDB memory map that the read touches count in RSS, for both libraries (arcticlite releases
  the pages of each large segment from its resident set once the segment is decoded).

Prints a table (scenario | arcticlite | ArcticDB | ratio = arcticlite / ArcticDB, below 1 means
arcticlite is faster or smaller) and writes JSON to ``benchmarks/results/engine.json``.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

LIB_NAMES = {"arcticlite": "arcticlite", "arcticdb": "ArcticDB"}
ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "engine.json"

FULL = dict(
    rows=10_000_000,
    quote_rows=5_000_000,
    appends=2_000,
    versions=2_000,
    symbols=5_000,
    wide_cols=10_000,
    wide_rows=10_000,
    reps=3,
)
QUICK = dict(
    rows=1_000_000,
    quote_rows=500_000,
    appends=200,
    versions=200,
    symbols=500,
    wide_cols=1_000,
    wide_rows=10_000,
    reps=2,
)
SCENARIOS = ["write", "read", "date_range", "memory", "quote", "append", "as_of", "list", "wide"]


# -- data ----------------------------------------------------------------------------------------
def float_frame(n: int, ncols: int = 10, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    idx = pd.date_range("2020-01-01", periods=n, freq="s", name="ts")
    data = rng.standard_normal((ncols, n))  # column-major so that each column is contiguous
    return pd.DataFrame({f"c{i}": data[i] for i in range(ncols)}, index=idx)


def quote_frame(n: int, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(5_000, n).astype(np.int64) * 1_000  # microsecond resolution, mean 5 ms
    gaps[rng.random(n) < 0.3] = 0
    ts = pd.DatetimeIndex(np.datetime64("2024-01-02T09:30", "ns") + np.cumsum(gaps), name="ts")
    moves = rng.integers(-1, 2, n) * (rng.random(n) < 0.3)
    bid_ticks = 10_000 + np.cumsum(moves)
    spread = rng.integers(1, 4, n)
    lots = np.maximum(1, rng.lognormal(1.0, 1.0, n).astype(np.int64)) * 100
    odd = rng.random(n) < 0.1
    lots[odd] = rng.integers(1, 100, int(odd.sum()))
    asks = np.maximum(1, rng.lognormal(1.0, 1.0, n).astype(np.int64)) * 100
    venues = np.array(
        ["NYSE", "NASDAQ", "ARCA", "BATS", "IEX", "EDGX", "EDGA", "BYX", "MEMX", "AMEX"],
        dtype=object,
    )
    p = np.array([0.25, 0.25, 0.12, 0.1, 0.08, 0.07, 0.05, 0.04, 0.02, 0.02])
    return pd.DataFrame(
        {
            "bid": bid_ticks / 100.0,
            "ask": (bid_ticks + spread) / 100.0,
            "bid_size": lots,
            "ask_size": asks,
            "venue": venues[rng.choice(10, n, p=p)],
        },
        index=ts,
    )


def small_frame(start: pd.Timestamp, n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    idx = pd.date_range(start, periods=n, freq="ms", name="ts")
    return pd.DataFrame({"a": rng.standard_normal(n), "b": rng.integers(0, 1000, n)}, index=idx)


# -- helpers -------------------------------------------------------------------------------------
def open_arctic(lib: str, path: Path) -> Any:
    mod = importlib.import_module(lib)
    return mod.Arctic(f"lmdb://{path}")


def get_library(ac: Any, lib: str, name: str) -> Any:
    return ac.get_library(name, create_if_missing=True)  # default options: 100k rows x 127 columns


def best_of(reps: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(reps):
        out = None
        gc.collect()
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def check_same(got: pd.DataFrame, want: pd.DataFrame, what: str) -> None:
    """Cheap agreement check: shape, index and a sample of rows of every column."""
    if got.shape != want.shape:
        raise AssertionError(f"{what}: shape {got.shape} != {want.shape}")
    step = max(1, len(want) // 1000)
    g, w = got.iloc[::step], want.iloc[::step]
    if not (g.index == w.index).all():
        raise AssertionError(f"{what}: index differs")
    for c in want.columns:
        a, b = g[c].to_numpy(), w[c].to_numpy()
        if not (a == b).all():
            raise AssertionError(f"{what}: column {c!r} differs")


def run_child(args: list[str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_engine", "--child", *args],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def reset_peak_rss() -> bool:
    """Reset the peak RSS (VmHWM) of this process to its current RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def child_main(argv: list[str]) -> None:
    task, lib, path, libname, sym = argv
    ac = open_arctic(lib, Path(path))
    library = ac.get_library(libname)
    if task == "list":
        t = time.perf_counter()
        syms = library.list_symbols()
        print(json.dumps({"seconds": time.perf_counter() - t, "count": len(syms)}))
    elif task == "memory":
        library.read_metadata(sym)  # open the store and the library outside the measurement
        gc.collect()
        # peak RSS of this process during the read (VmHWM reset just before; ru_maxrss would
        # include the parent's RSS inherited through fork), minus the RSS before it
        if not reset_peak_rss():
            raise SystemExit("cannot reset the peak RSS (/proc/self/clear_refs)")
        before = _status("VmRSS")
        t = time.perf_counter()
        df = library.read(sym).data
        secs = time.perf_counter() - t
        peak = _status("VmHWM")
        size = int(df.memory_usage(index=True, deep=True).sum())
        print(json.dumps({"peak_delta": peak - before, "result": size, "seconds": secs}))
    else:
        raise SystemExit(f"unknown child task {task}")


# -- the benchmark -------------------------------------------------------------------------------
class Bench:
    def __init__(self, sizes: dict[str, int], libs: list[str], only: list[str], tmp: Path) -> None:
        self.sizes = sizes
        self.libs = libs
        self.only = only
        self.tmp = tmp
        self.rows: list[dict[str, Any]] = []
        self.arctic = {lib: open_arctic(lib, tmp / lib) for lib in libs}
        warm = float_frame(200_000, seed=9)  # first-call costs (imports, pools) out of the figures
        for lib in libs:
            library = self.lib(lib, "warmup")
            library.write("w", warm)
            tail = float_frame(10, seed=9)
            library.append("w", tail.set_axis(pd.date_range(warm.index[-1] + pd.Timedelta(seconds=1),
                                                             periods=10, freq="s", name="ts")))
            library.read("w")

    def lib(self, lib: str, name: str) -> Any:
        return get_library(self.arctic[lib], lib, name)

    def record(self, scenario: str, unit: str, values: dict[str, float], note: str = "") -> None:
        row: dict[str, Any] = {"scenario": scenario, "unit": unit, "note": note}
        for lib in LIB_NAMES:
            row[lib] = values.get(lib)
        a, b = values.get("arcticlite"), values.get("arcticdb")
        row["ratio"] = (a / b) if a is not None and b else None
        self.rows.append(row)
        print(
            f"  {scenario:<52} {_fmt(row['arcticlite'], unit):>12} {_fmt(row['arcticdb'], unit):>12} "
            f"{_ratio(row['ratio']):>8}",
            flush=True,
        )

    def want(self, name: str) -> bool:
        return not self.only or name in self.only

    # each scenario ------------------------------------------------------------------------------
    def run(self) -> None:
        s = self.sizes
        need_big = any(self.want(x) for x in ("write", "read", "date_range", "memory"))
        if need_big:
            df = float_frame(s["rows"])
            w: dict[str, float] = {}
            for lib in self.libs:
                library = self.lib(lib, "big")
                gc.collect()
                t = time.perf_counter()
                library.write("big", df)
                w[lib] = time.perf_counter() - t
            if self.want("write"):
                self.record(f"write {s['rows']:,} rows x 10 float64", "s", w)
            if self.want("read"):
                r: dict[str, float] = {}
                for lib in self.libs:
                    library = self.lib(lib, "big")
                    r[lib], out = best_of(
                        s["reps"], lambda library=library: library.read("big").data
                    )
                    check_same(out, df, f"{lib} read")
                    del out
                self.record(f"read {s['rows']:,} rows x 10 float64", "s", r)
            if self.want("date_range"):
                mid = df.index[len(df) // 2].floor("h")
                dr = (mid, mid + pd.Timedelta(hours=1) - pd.Timedelta(1, "ns"))
                want = df.loc[dr[0] : dr[1]]
                r = {}
                for lib in self.libs:
                    library = self.lib(lib, "big")
                    r[lib], out = best_of(
                        max(5, s["reps"]),
                        lambda library=library: library.read("big", date_range=dr).data,
                    )
                    check_same(out, want, f"{lib} date_range")
                self.record(
                    f"date_range read of 1 hour ({len(want):,} rows) of the {s['rows']:,}",
                    "ms",
                    {k: v * 1e3 for k, v in r.items()},
                )
            del df
            gc.collect()
            if self.want("memory"):
                m: dict[str, float] = {}
                notes = []
                for lib in self.libs:
                    res = run_child(["memory", lib, str(self.tmp / lib), "big", "big"])
                    m[lib] = res["peak_delta"] / res["result"]
                    notes.append(
                        f"{lib}: +{res['peak_delta'] / 2**20:,.0f} MiB for {res['result'] / 2**20:,.0f} MiB"
                    )
                self.record(
                    f"peak memory of read {s['rows']:,} rows / result size",
                    "x",
                    m,
                    "; ".join(notes),
                )

        if self.want("quote"):
            q = quote_frame(s["quote_rows"])
            r = {}
            rf: dict[str, float] = {}
            hi = round(float(q["bid"].quantile(0.97)), 2) + 0.005  # between two ticks: no ties
            want = q[q["bid"] > hi]
            for lib in self.libs:
                library = self.lib(lib, "quote")
                library.write("quote", q)
                r[lib], out = best_of(s["reps"], lambda library=library: library.read("quote").data)
                check_same(out, q, f"{lib} quote")
                del out
                qb = importlib.import_module(lib).QueryBuilder()
                qb = qb[qb["bid"] > hi]
                rf[lib], out = best_of(s["reps"], lambda library=library, qb=qb: library.read(
                    "quote", query_builder=qb).data)
                check_same(out, want, f"{lib} filtered quote")
                del out
            self.record(f"read {s['quote_rows']:,}-row quote frame (floats, ints, string)", "s", r)
            self.record(f"  the same, filtered to the top 3 % of bid ({len(want):,} rows)", "s", rf)
            del q, want
            gc.collect()

        if self.want("append"):
            n_app = s["appends"]
            t0 = pd.Timestamp("2021-01-01")
            frames = [small_frame(t0 + pd.Timedelta(seconds=i), 10, i) for i in range(n_app + 1)]
            first: dict[str, float] = {}
            last: dict[str, float] = {}
            cfirst: dict[str, float] = {}
            clast: dict[str, float] = {}
            total: dict[str, float] = {}
            rd: dict[str, float] = {}
            for lib in self.libs:
                library = self.lib(lib, "append")
                library.write("app", frames[0])
                times = np.empty(n_app)
                cpu = np.empty(n_app)
                for i in range(n_app):
                    c = time.process_time()
                    t = time.perf_counter()
                    library.append("app", frames[i + 1])
                    times[i] = time.perf_counter() - t
                    cpu[i] = time.process_time() - c
                first[lib] = times[:100].mean() * 1e3
                last[lib] = times[-100:].mean() * 1e3
                cfirst[lib] = cpu[:100].mean() * 1e3
                clast[lib] = cpu[-100:].mean() * 1e3
                total[lib] = times.sum()
                rd[lib], out = best_of(s["reps"], lambda library=library: library.read("app").data)
                check_same(out, pd.concat(frames), f"{lib} appended read")
            self.record(f"append 10 rows: mean of first 100 of {n_app:,}", "ms", first)
            self.record(f"append 10 rows: mean of last 100 of {n_app:,}", "ms", last)
            self.record("  CPU time (all threads) per append, first 100", "ms", cfirst)
            self.record("  CPU time (all threads) per append, last 100", "ms", clast)
            self.record(f"{n_app:,} appends of 10 rows, total", "s", total)
            self.record(
                f"read after {n_app:,} appends ({(n_app + 1) * 10:,} rows)",
                "ms",
                {k: v * 1e3 for k, v in rd.items()},
            )

        if self.want("as_of"):
            n_ver = s["versions"]
            f = small_frame(pd.Timestamp("2022-01-01"), 100, 7)
            r0: dict[str, float] = {}
            rl: dict[str, float] = {}
            for lib in self.libs:
                library = self.lib(lib, "versions")
                for _ in range(n_ver):
                    library.write("ver", f)
                reps = max(10, s["reps"])
                r0[lib], out = best_of(
                    reps, lambda library=library: library.read("ver", as_of=0).data
                )
                check_same(out, f, f"{lib} as_of=0")
                rl[lib], out = best_of(reps, lambda library=library: library.read("ver").data)
                check_same(out, f, f"{lib} latest")
            self.record(
                f"read(as_of=0) of a {n_ver:,}-version symbol",
                "ms",
                {k: v * 1e3 for k, v in r0.items()},
            )
            self.record(
                "  latest read of the same symbol", "ms", {k: v * 1e3 for k, v in rl.items()}
            )
            self.record("  as_of=0 / latest", "x", {k: r0[k] / rl[k] for k in r0})

        if self.want("list"):
            n_sym = s["symbols"]
            small = small_frame(pd.Timestamp("2023-01-01"), 10, 3)
            c1: dict[str, float] = {}
            c2: dict[str, float] = {}
            for lib in self.libs:
                mod = importlib.import_module(lib)
                library = self.lib(lib, "symbols")
                for i in range(0, n_sym, 500):
                    library.write_batch(
                        [
                            mod.WritePayload(f"sym{j:05d}", small)
                            for j in range(i, min(n_sym, i + 500))
                        ]
                    )
                res1 = run_child(["list", lib, str(self.tmp / lib), "symbols", ""])
                res2 = run_child(["list", lib, str(self.tmp / lib), "symbols", ""])
                assert res1["count"] == n_sym and res2["count"] == n_sym, (res1, res2)
                c1[lib], c2[lib] = res1["seconds"], res2["seconds"]
            self.record(f"list_symbols() of {n_sym:,}, fresh client, first call", "s", c1)
            self.record(f"list_symbols() of {n_sym:,}, fresh client, again", "ms",
                        {k: v * 1e3 for k, v in c2.items()})

        if self.want("wide"):
            nc, nr = s["wide_cols"], s["wide_rows"]
            rng = np.random.default_rng(5)
            wide = pd.DataFrame(
                rng.standard_normal((nr, nc)),
                columns=[f"c{i}" for i in range(nc)],
                index=pd.date_range("2020-01-01", periods=nr, freq="min", name="ts"),
            )
            cols = [f"c{i}" for i in np.linspace(0, nc - 1, 10).astype(int)]
            r = {}
            for lib in self.libs:
                library = self.lib(lib, "wide")
                library.write("wide", wide)
                r[lib], out = best_of(
                    max(5, s["reps"]),
                    lambda library=library: library.read("wide", columns=cols).data,
                )
                check_same(out, wide[cols], f"{lib} wide")
            self.record(
                f"read 10 of {nc:,} columns x {nr:,} rows", "ms", {k: v * 1e3 for k, v in r.items()}
            )
            del wide
            gc.collect()


def _fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "x":
        return f"{v:.2f}x"
    if unit == "ms":
        return f"{v:,.1f} ms" if v < 1000 else f"{v:,.0f} ms"
    return f"{v:,.2f} s" if v < 100 else f"{v:,.0f} s"


def _ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def machine() -> dict[str, Any]:
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    versions = {}
    for m in ("arcticlite", "arcticdb", "pandas", "pyarrow", "numpy", "lmdb"):
        try:
            versions[m] = getattr(importlib.import_module(m), "__version__", "?")
        except ImportError:
            versions[m] = None
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(mem / 2**30, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": versions,
    }


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        child_main(argv[1:])
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller sizes for a smoke run")
    p.add_argument("--only", default="", help="comma-separated scenarios: " + ",".join(SCENARIOS))
    p.add_argument("--libs", default="arcticlite,arcticdb")
    p.add_argument("--out", default=str(RESULTS))
    args = p.parse_args(argv)
    only = [x for x in args.only.split(",") if x]
    for x in only:
        if x not in SCENARIOS:
            p.error(f"unknown scenario {x!r}")
    libs = [x for x in args.libs.split(",") if x]
    sizes = QUICK if args.quick else FULL
    info = machine()
    print(
        f"arcticlite vs ArcticDB on LMDB -- {info['cpu']}, {info['cores']} cores, {info['memory_gib']} GiB; "
        f"{'quick' if args.quick else 'full'} sizes",
        flush=True,
    )
    print(f"  {'scenario':<52} {'arcticlite':>12} {'ArcticDB':>12} {'ratio':>8}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench_engine_"))
    t_start = time.perf_counter()
    try:
        bench = Bench(sizes, libs, only, tmp)
        bench.run()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    elapsed = time.perf_counter() - t_start
    print(
        f"(ratio = arcticlite / ArcticDB; below 1 is better for arcticlite; {elapsed:.0f} s in all)"
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "machine": info,
                "quick": args.quick,
                "sizes": sizes,
                "elapsed_s": elapsed,
                "command": "python -m benchmarks.bench_engine" + (" --quick" if args.quick else ""),
                "results": bench.rows,
            },
            indent=2,
        )
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
