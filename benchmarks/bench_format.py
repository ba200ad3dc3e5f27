"""Fermion vs pyarrow Parquet, side by side in one run (``python -m benchmarks.bench_format``).

Scenarios (docs/benchmarks.md, "Fermion format"): a wide file (10,000 float64 columns ×
10,000 rows) — open, read 10 columns, read all, write; narrow 10M-row float64 / int64 /
timestamp columns — write and read; and the size of realistic quote data, in total and per
column. Runs alternate Fermion and Parquet in the same loop; report the ratios (the machine is
shared and absolute times are noisy). Prints a table and writes JSON to benchmarks/results/.

Options: ``--quick`` (smaller sizes), ``--reps N``, ``--skip wide,narrow,quotes``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from arcticlite.format import FermionReader, FermionWriter

RESULTS = Path(__file__).parent / "results"


def timed(fn: Callable[[], Any], reps: int) -> float:
    """Median wall time of ``reps`` calls (seconds)."""
    out = []
    for _ in range(reps):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def interleaved(fns: dict[str, Callable[[], Any]], reps: int) -> dict[str, float]:
    """Median times of several contenders, alternating them in one loop."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(reps):
        for k, fn in fns.items():
            gc.collect()
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def write_fermion(table: pa.Table, path: Path) -> None:
    with FermionWriter(path) as w:
        w.write(table)


def write_parquet(table: pa.Table, path: Path, compression: str) -> None:
    pq.write_table(table, path, compression=compression)


def fermion_column_sizes(path: Path) -> dict[str, int]:
    with FermionReader(path) as r:
        out = {}
        for i in range(r.num_columns):
            cm = r.column_meta(i)
            data = sum(p["compressed"] for p in r.page_stats(i)) if not cm.all_null else 0
            out[r.field(i).name] = data + cm.cmb_length
        return out


def parquet_column_sizes(path: Path) -> dict[str, int]:
    md = pq.ParquetFile(path).metadata
    out: dict[str, int] = {}
    for rg in range(md.num_row_groups):
        g = md.row_group(rg)
        for c in range(g.num_columns):
            cc = g.column(c)
            name = cc.path_in_schema.split(".")[0]
            out[name] = out.get(name, 0) + cc.total_compressed_size
    return out


# ----------------------------------------------------------------------------- scenarios
def bench_wide(tmp: Path, ncols: int, nrows: int, reps: int) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    table = pa.table({f"c{i}": rng.random(nrows) for i in range(ncols)})
    paths = {"fermion": tmp / "wide.fermion", "pq_snappy": tmp / "wide_snappy.parquet",
             "pq_zstd": tmp / "wide_zstd.parquet"}
    res: dict[str, Any] = {"shape": [nrows, ncols]}
    res["write_s"] = interleaved({
        "fermion": lambda t=table: write_fermion(t, paths["fermion"]),
        "pq_snappy": lambda t=table: write_parquet(t, paths["pq_snappy"], "snappy"),
        "pq_zstd": lambda t=table: write_parquet(t, paths["pq_zstd"], "zstd"),
    }, 1)
    res["bytes"] = {k: p.stat().st_size for k, p in paths.items()}
    del table
    gc.collect()

    def open_fermion() -> None:
        with FermionReader(paths["fermion"]) as r:
            r.footer  # noqa: B018 - footer, name index and CIT are ready

    def open_pq(p: Path) -> Callable[[], None]:
        return lambda: pq.ParquetFile(p).metadata

    res["open_s"] = interleaved({"fermion": open_fermion, "pq_snappy": open_pq(paths["pq_snappy"]),
                                 "pq_zstd": open_pq(paths["pq_zstd"])}, max(reps, 5))
    res["open_schema_s"] = interleaved({
        "fermion": lambda: FermionReader(paths["fermion"]).schema,
        "pq_zstd": lambda: pq.ParquetFile(paths["pq_zstd"]).schema_arrow,
    }, max(reps, 3))
    cols = [f"c{i}" for i in range(0, ncols, max(1, ncols // 10))][:10]
    res["read10_s"] = interleaved({
        "fermion": lambda: FermionReader(paths["fermion"]).read(cols),
        "pq_snappy": lambda: pq.ParquetFile(paths["pq_snappy"]).read(columns=cols),
        "pq_zstd": lambda: pq.ParquetFile(paths["pq_zstd"]).read(columns=cols),
    }, max(reps, 5))
    res["read_all_s"] = interleaved({
        "fermion": lambda: FermionReader(paths["fermion"]).read(),
        "pq_snappy": lambda: pq.read_table(paths["pq_snappy"]),
        "pq_zstd": lambda: pq.read_table(paths["pq_zstd"]),
    }, max(1, reps // 2))
    return res


def bench_narrow(tmp: Path, nrows: int, reps: int) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    tables = {
        "float64": pa.table({"x": rng.standard_normal(nrows)}),
        "int64": pa.table({"x": rng.integers(-(2**62), 2**62, nrows)}),
        "timestamp": pa.table({"x": pa.array(
            (1_700_000_000_000_000_000 + np.cumsum(rng.exponential(5e6, nrows)).astype(np.int64))
            .astype("datetime64[ns]"))}),
    }
    out: dict[str, Any] = {"rows": nrows}
    for name, table in tables.items():
        paths = {"fermion": tmp / f"{name}.fermion", "pq_snappy": tmp / f"{name}_s.parquet",
                 "pq_zstd": tmp / f"{name}_z.parquet"}
        w = interleaved({
            "fermion": lambda t=table, p=paths: write_fermion(t, p["fermion"]),
            "pq_snappy": lambda t=table, p=paths: write_parquet(t, p["pq_snappy"], "snappy"),
            "pq_zstd": lambda t=table, p=paths: write_parquet(t, p["pq_zstd"], "zstd"),
        }, max(1, reps // 2))
        r = interleaved({
            "fermion": lambda p=paths: FermionReader(p["fermion"]).read(),
            "pq_snappy": lambda p=paths: pq.read_table(p["pq_snappy"]),
            "pq_zstd": lambda p=paths: pq.read_table(p["pq_zstd"]),
        }, reps)
        raw = tmp / f"{name}.raw"
        buf = np.asarray(table.column(0).chunk(0).buffers()[1]).view(np.uint8)
        raw.write_bytes(buf.tobytes())
        out_buf = np.empty_like(buf)

        def readinto(path: Path = raw, dst: np.ndarray = out_buf) -> None:
            with open(path, "rb", buffering=0) as fh:
                fh.readinto(memoryview(dst))

        base = timed(readinto, reps)
        out[name] = {"write_s": w, "read_s": r, "readinto_s": base,
                     "bytes": {k: p.stat().st_size for k, p in paths.items()},
                     "raw_bytes": int(buf.nbytes)}
    return out


def quote_table(n: int) -> pa.Table:
    rng = np.random.default_rng(7)
    gaps = rng.exponential(5_000, n).astype(np.int64) * 1000  # µs resolution, 5 ms mean gap
    gaps[rng.random(n) < 0.3] = 0  # 30 % duplicate timestamps
    ts = 1_700_000_000_000_000_000 + np.cumsum(gaps)
    move = rng.random(n) < 0.3
    mid = 100 + np.cumsum(np.where(move, rng.integers(-2, 3, n), 0)) * 0.01
    spread = rng.integers(1, 4, n) * 0.01
    bid = np.round(mid, 2)
    ask = np.round(mid + spread, 2)
    venues = np.array(["XNYS", "XNAS", "ARCX", "BATS", "BATY", "EDGA", "EDGX", "IEXG", "XCHI",
                       "MEMX"])
    return pa.table({
        "ts": pa.array(ts.astype("datetime64[ns]")).cast(pa.timestamp("ns", "UTC")),
        "bid": bid, "ask": ask,
        "bid_size": rng.integers(1, 50, n) * 100, "ask_size": rng.integers(1, 50, n) * 100,
        "venue": pa.array(venues[rng.zipf(1.6, n) % len(venues)]),
    })


def bench_quotes(tmp: Path, nrows: int, reps: int) -> dict[str, Any]:
    table = quote_table(nrows)
    paths = {"fermion": tmp / "q.fermion", "pq_snappy": tmp / "q_s.parquet", "pq_zstd": tmp / "q_z.parquet"}
    w = interleaved({
        "fermion": lambda: write_fermion(table, paths["fermion"]),
        "pq_snappy": lambda: write_parquet(table, paths["pq_snappy"], "snappy"),
        "pq_zstd": lambda: write_parquet(table, paths["pq_zstd"], "zstd"),
    }, max(1, reps // 2))
    r = interleaved({
        "fermion": lambda: FermionReader(paths["fermion"]).read(),
        "pq_snappy": lambda: pq.read_table(paths["pq_snappy"]),
        "pq_zstd": lambda: pq.read_table(paths["pq_zstd"]),
    }, reps)
    cols = {"fermion": fermion_column_sizes(paths["fermion"]),
            "pq_zstd": parquet_column_sizes(paths["pq_zstd"]),
            "pq_snappy": parquet_column_sizes(paths["pq_snappy"])}
    with FermionReader(paths["fermion"]) as fr:
        enc = {}
        for name in table.column_names:
            st = [p for p in fr.page_stats(name) if p["stream"] == "DATA"]
            enc[name] = fr.describe_page(st[0]["offset"], st[0]["compressed"]) if st else "-"
    return {"rows": nrows, "write_s": w, "read_s": r,
            "bytes": {k: p.stat().st_size for k, p in paths.items()},
            "arrow_bytes": table.nbytes, "columns": cols, "encodings": enc}


# ----------------------------------------------------------------------------- report
def _ratio(a: float, b: float) -> str:
    return f"{b / a:6.1f}x" if a > 0 else "   n/a"


def report(res: dict[str, Any]) -> None:
    line = "-" * 96
    print(line)
    print(f"{'scenario':44s} {'fermion':>10s} {'pq snappy':>10s} {'pq zstd':>10s}  "
          f"{'vs snappy':>9s} {'vs zstd':>8s}")
    print(line)

    def row(label: str, d: dict[str, float], unit: str = "ms", scale: float = 1e3) -> None:
        f, s, z = d.get("fermion", 0.0), d.get("pq_snappy", 0.0), d.get("pq_zstd", 0.0)
        def fmt(v: float) -> str:
            return f"{v * scale:8.1f}{unit}" if v else "         -"

        print(f"{label:44s} {fmt(f):>10s} {fmt(s):>10s} {fmt(z):>10s}  "
              f"{_ratio(f, s) if s else '':>9s} {_ratio(f, z) if z else '':>8s}")

    if "wide" in res:
        w = res["wide"]
        tag = f"wide {w['shape'][1]:,} cols x {w['shape'][0]:,} rows"
        row(f"{tag}: open (footer/metadata)", w["open_s"])
        row(f"{tag}: open + full schema", w["open_schema_s"])
        row(f"{tag}: read 10 columns", w["read10_s"])
        row(f"{tag}: read all", w["read_all_s"], "s ", 1)
        row(f"{tag}: write", w["write_s"], "s ", 1)
    if "narrow" in res:
        n = res["narrow"]
        for name in ("float64", "int64", "timestamp"):
            d = n[name]
            row(f"narrow {n['rows']:,} {name}: read", d["read_s"])
            row(f"narrow {n['rows']:,} {name}: write", d["write_s"])
            gbs = d["raw_bytes"] / d["read_s"]["fermion"] / 1e9
            base = d["raw_bytes"] / d["readinto_s"] / 1e9
            print(f"{'':44s} fermion read {gbs:.2f} GB/s = {gbs / base:.0%} of readinto "
                  f"({base:.2f} GB/s); sizes F {d['bytes']['fermion']:,} / pq-zstd "
                  f"{d['bytes']['pq_zstd']:,}")
    if "quotes" in res:
        q = res["quotes"]
        row(f"quotes {q['rows']:,} rows: read", q["read_s"])
        row(f"quotes {q['rows']:,} rows: write", q["write_s"])
        b = q["bytes"]
        print(f"{'quotes: file bytes':44s} {b['fermion']:>10,d} {b['pq_snappy']:>10,d} "
              f"{b['pq_zstd']:>10,d}  ratio F/pq-zstd {b['fermion'] / b['pq_zstd']:.3f}")
        for c, fb in q["columns"]["fermion"].items():
            zb = q["columns"]["pq_zstd"].get(c, 0)
            sb = q["columns"]["pq_snappy"].get(c, 0)
            print(f"{'  column ' + c:44s} {fb:>10,d} {sb:>10,d} {zb:>10,d}  "
                  f"ratio {fb / zb if zb else float('nan'):.3f}  {q['encodings'][c]}")
    print(line)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--skip", default="", help="comma list of wide,narrow,quotes")
    ap.add_argument("--wide-cols", type=int, default=None)
    ap.add_argument("--wide-rows", type=int, default=None)
    ap.add_argument("--narrow-rows", type=int, default=None)
    ap.add_argument("--quote-rows", type=int, default=None)
    args = ap.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    wc = args.wide_cols or (1000 if args.quick else 10_000)
    wr = args.wide_rows or (1000 if args.quick else 10_000)
    nr = args.narrow_rows or (1_000_000 if args.quick else 10_000_000)
    qr = args.quote_rows or (500_000 if args.quick else 5_000_000)
    res: dict[str, Any] = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                       "pyarrow": pa.__version__, "numpy": np.__version__,
                                       "load": os.getloadavg()},
                           "argv": argv if argv is not None else __import__("sys").argv[1:]}
    with tempfile.TemporaryDirectory(prefix="bench_format_") as d:
        tmp = Path(d)
        if "quotes" not in skip:
            print(f"quotes: {qr:,} rows ...", flush=True)
            res["quotes"] = bench_quotes(tmp, qr, args.reps)
        if "narrow" not in skip:
            print(f"narrow: {nr:,} rows ...", flush=True)
            res["narrow"] = bench_narrow(tmp, nr, args.reps)
        if "wide" not in skip:
            print(f"wide: {wc:,} x {wr:,} ...", flush=True)
            res["wide"] = bench_wide(tmp, wc, wr, args.reps)
    res["machine"]["load_after"] = os.getloadavg()
    report(res)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"format{'-quick' if args.quick else ''}.json"
    out.write_text(json.dumps(res, indent=1, default=str))
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
