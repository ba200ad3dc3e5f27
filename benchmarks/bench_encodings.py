"""Fermion value encodings vs pyarrow Parquet (zstd): size per column and throughput.

Run ``python -m benchmarks.bench_encodings [--rows N] [--reps R] [--seed S]``.

Quote data (one instrument, ``N`` rows):

- ``ts``: sorted int64 ns timestamps, microsecond resolution, exponential gaps (mean 5 ms),
  30 % of rows share the previous timestamp;
- ``bid``/``ask``: float64 prices with 2 decimals around 100.00, a 0.01-tick random walk where
  30 % of rows move, ask = bid + 1..3 ticks;
- ``bid_size``/``ask_size``: int64, 90 % multiples of 100 (lognormal lots), 10 % odd lots;
- ``venue``: strings, 10 venues with skewed frequencies.

Parquet sizes are ``total_compressed_size`` of each column chunk written by
``pq.write_table(..., compression="zstd")``; Fermion sizes are the blob lengths of
``encode_fixed`` / ``encode_binary`` on the whole column. Throughput is raw (decoded) bytes per
second, best of ``R`` repetitions, next to a same-run ``np.copyto`` (memcpy) baseline.
"""

from __future__ import annotations

import argparse
import io
import os
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from arcticlite.format._encodings import (
    decode_binary,
    decode_fixed,
    describe,
    encode_binary,
    encode_fixed,
)

VENUES = ["NYSE", "NASDAQ", "ARCA", "BATS", "IEX", "EDGX", "EDGA", "BYX", "MEMX", "AMEX"]


def quote_table(rows: int, seed: int = 0) -> pa.Table:
    """Build the synthetic quote table described in the module docstring."""
    rng = np.random.default_rng(seed)
    gaps_us = np.rint(rng.exponential(5000.0, rows)).astype(np.int64)
    gaps_us[rng.random(rows) < 0.3] = 0
    ts = np.int64(1_704_205_800_000_000_000) + np.cumsum(gaps_us) * 1000
    moves = np.where(rng.random(rows) < 0.3, rng.choice([-1, 1], rows), 0)
    bid_ticks = 10_000 + np.cumsum(moves)
    ask_ticks = bid_ticks + rng.choice([1, 2, 3], rows, p=[0.7, 0.2, 0.1])
    lots = np.minimum(rng.lognormal(1.0, 1.0, (2, rows)).astype(np.int64) + 1, 500) * 100
    odd = rng.random((2, rows)) < 0.1
    lots[odd] = rng.integers(1, 100, int(odd.sum()))
    venue_p = np.array([30, 25, 12, 10, 8, 5, 4, 3, 2, 1], dtype=float)
    venue = np.array(VENUES, dtype=object)[rng.choice(10, rows, p=venue_p / venue_p.sum())]
    return pa.table(
        {
            "ts": pa.array(ts.view("datetime64[ns]")),
            "bid": pa.array(bid_ticks / 100.0),
            "ask": pa.array(ask_ticks / 100.0),
            "bid_size": pa.array(lots[0]),
            "ask_size": pa.array(lots[1]),
            "venue": pa.array(venue, type=pa.string()),
        }
    )


def parquet_sizes(table: pa.Table) -> dict[str, int]:
    """Return the Parquet-zstd column chunk size (bytes) of every column."""
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    meta = pq.ParquetFile(io.BytesIO(sink.getvalue())).metadata
    sizes = dict.fromkeys(table.column_names, 0)
    for i in range(meta.num_row_groups):
        rg = meta.row_group(i)
        for j in range(rg.num_columns):
            col = rg.column(j)
            sizes[col.path_in_schema] += col.total_compressed_size
    return sizes


def _string_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    offs = np.frombuffer(arr.buffers()[1], np.int32, len(arr) + 1, arr.offset * 4)
    data = np.frombuffer(arr.buffers()[2], np.uint8)
    return offs, data


def _numeric(col: pa.ChunkedArray) -> np.ndarray:
    arr = col.combine_chunks()
    if pa.types.is_timestamp(arr.type):
        arr = arr.cast(pa.int64())
    return arr.to_numpy(zero_copy_only=False)


def _best(fn: Callable[[], object], reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def size_report(rows: int, seed: int) -> list[str]:
    """Return the per-column size table (markdown lines)."""
    table = quote_table(rows, seed)
    pq_sizes = parquet_sizes(table)
    lines = [
        "| column | raw MB | Parquet-zstd bytes | Fermion bytes | ratio | encode s | encoding |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    tot_pq = tot_fm = 0
    for name in table.column_names:
        col = table.column(name)
        t0 = time.perf_counter()
        if pa.types.is_string(col.type):
            offs, data = _string_buffers(col.combine_chunks())
            blob = encode_binary(offs, data)
            raw = offs.nbytes + int(offs[-1])
            o2, d2 = decode_binary(blob, len(col), np.int32)
            assert np.array_equal(o2, offs - offs[0]) and d2.tobytes() == data.tobytes()
        else:
            x = _numeric(col)
            blob = encode_fixed(x)
            raw = x.nbytes
            assert decode_fixed(blob, x.dtype, len(x)).tobytes() == x.tobytes()
        dt = time.perf_counter() - t0
        tot_pq += pq_sizes[name]
        tot_fm += len(blob)
        lines.append(
            f"| {name} | {raw / 1e6:.1f} | {pq_sizes[name]:,} | {len(blob):,} | "
            f"{len(blob) / pq_sizes[name]:.3f} | {dt:.2f} | `{describe(blob)}` |"
        )
    lines.append(
        f"| **total** | | **{tot_pq:,}** | **{tot_fm:,}** | **{tot_fm / tot_pq:.3f}** | | |"
    )
    return lines


def other_columns(rows: int, seed: int) -> dict[str, np.ndarray | pa.Array]:
    """Further distributions (not part of the quote table) to check the per-column rule."""
    rng = np.random.default_rng(seed + 1)
    sym = rng.zipf(1.5, rows) % 500
    n_str = max(1, rows // 5)
    return {
        "normal float64": rng.standard_normal(rows),
        "normal float32": rng.standard_normal(rows).astype(np.float32),
        "int32 uniform 0..999": rng.integers(0, 1000, rows).astype(np.int32),
        "ns timestamps, ns resolution": 1_700_000_000_000_000_000
        + np.cumsum(rng.exponential(5e6, rows).astype(np.int64)),
        "lognormal int64": rng.lognormal(5, 2, rows).astype(np.int64),
        "sparse int64 (99% zero)": np.where(
            rng.random(rows) < 0.01, rng.integers(1, 1000, rows), 0
        ),
        "bool as uint8": (rng.random(rows) < 0.3).astype(np.uint8),
        "500-symbol trade prices": np.round(
            (50 + sym * 3.7) * (1 + rng.standard_normal(rows) * 1e-3), 2
        ),
        "uniform 3-decimal float64": np.round(rng.uniform(0, 1000, rows), 3),
        "sorted int64": np.sort(rng.integers(0, 10**12, rows)),
        "random-walk int64": np.cumsum(rng.integers(-5, 6, rows)),
        "non-decimal float64": rng.integers(0, 10000, rows) / 10000 * rng.standard_normal(rows),
        "hex ids (strings)": pa.array([rng.bytes(16).hex() for _ in range(n_str)]),
        "500 Zipf symbols (strings)": pa.array([f"S{int(s):03d}" for s in sym[:n_str]]),
    }


def other_report(rows: int, seed: int) -> list[str]:
    """Return the size table of :func:`other_columns` (markdown lines)."""
    lines = [
        "| column | rows | Parquet-zstd bytes | Fermion bytes | ratio | encoding |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, col in other_columns(rows, seed).items():
        arr = col if isinstance(col, pa.Array) else pa.array(col)
        pq_size = parquet_sizes(pa.table({"c": arr}))["c"]
        if isinstance(col, pa.Array):
            offs, data = _string_buffers(col)
            blob = encode_binary(offs, data)
        else:
            blob = encode_fixed(col)
            assert decode_fixed(blob, col.dtype, len(col)).tobytes() == col.tobytes()
        lines.append(
            f"| {name} | {len(arr):,} | {pq_size:,} | {len(blob):,} | "
            f"{len(blob) / pq_size:.3f} | `{describe(blob)}` |"
        )
    return lines


def throughput_report(rows: int, seed: int, reps: int) -> list[str]:
    """Return the encode/decode throughput table (markdown lines)."""
    rng = np.random.default_rng(seed)
    table = quote_table(rows, seed)
    cases = {
        "random float64": rng.standard_normal(rows),
        "random int64": rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, rows),
        "sorted ns timestamps (ts)": _numeric(table.column("ts")),
        "price float64 (bid)": _numeric(table.column("bid")),
        "sizes int64 (bid_size)": _numeric(table.column("bid_size")),
        "small ints 0..4095": rng.integers(0, 4096, rows),
    }
    lines = [
        "| data | encoding | ratio | encode MB/s | decode MB/s | decode / memcpy |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, x in cases.items():
        out = np.empty_like(x)
        t_copy = _best(lambda x=x, out=out: np.copyto(out, x), reps)
        t_enc = _best(lambda x=x: encode_fixed(x), max(1, reps // 2))
        blob = encode_fixed(x)
        t_dec = _best(lambda b=blob, x=x, out=out: decode_fixed(b, x.dtype, len(x), out=out), reps)
        assert out.tobytes() == x.tobytes()
        mb = x.nbytes / 1e6
        lines.append(
            f"| {name} | `{describe(blob)}` | {x.nbytes / len(blob):.2f} | {mb / t_enc:,.0f} | "
            f"{mb / t_dec:,.0f} | {t_copy / t_dec:.2f} (memcpy {mb / t_copy:,.0f} MB/s) |"
        )
    for bp_name, x in (("bitpack-only decode, w=13", rng.integers(0, 8192, rows)),):
        from arcticlite.format._enc_bitpack import pack, unpack_into

        packed = pack(x.astype(np.uint64), 13)
        out = np.empty(rows, np.uint64)
        t_dec = _best(lambda p=packed, out=out: unpack_into(p, rows, 13, out, 0, 1), reps)
        lines.append(f"| {bp_name} | kernel | | | {x.nbytes / 1e6 / t_dec:,.0f} | |")
    return lines


def main(argv: list[str] | None = None) -> None:
    """Print the size and throughput tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--throughput-rows",
        type=int,
        default=None,
        help="values per throughput case (default: --rows)",
    )
    args = ap.parse_args(argv)
    t_rows = args.throughput_rows or args.rows
    print(f"## Size, quote data, {args.rows:,} rows (pyarrow {pa.__version__})\n")
    print("\n".join(size_report(args.rows, args.seed)))
    print(f"\n## Size, other distributions, {args.rows:,} rows\n")
    print("\n".join(other_report(args.rows, args.seed)))
    print(f"\n## Throughput, {t_rows:,} values, best of {args.reps}\n")
    print("\n".join(throughput_report(t_rows, args.seed, args.reps)))
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"\nload average during the run: {load} ({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
