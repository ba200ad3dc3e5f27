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
    args = ap.parse_args(argv)
    print(f"## Size, quote data, {args.rows:,} rows (pyarrow {pa.__version__})\n")
    print("\n".join(size_report(args.rows, args.seed)))
    print(f"\n## Throughput, {args.rows:,} values, best of {args.reps}\n")
    print("\n".join(throughput_report(args.rows, args.seed, args.reps)))


if __name__ == "__main__":
    main()
