"""Where a bulk write's time goes, in one process: the CPU of encoding its segments, and the
write on one or two encode threads.

Run ``python -m benchmarks.bench_write_cpu [--shapes quotes,mixed] [--rows N] [--reps R]
[--threads]``.

- **encode**: every segment of the ``benchmarks.fair_data`` frame of each shape, normalized as a
  library write normalizes it, encoded one after the other in this thread exactly as a bulk
  write encodes them (``optimize_for="read"``, the write's shared memo of encoding choices,
  Bloom filters from 16 distinct values): CPU time (``time.process_time``), best of ``R``, and
  the bytes written. It measures the encoders alone: no storage, no threads, no page cache.
- **threads** (``--threads``): whole ``Library.write`` calls to LMDB in this process with one
  and with two segments encoded at once (``Pools.encode_threads``), median of ``R``: wall time,
  user and system CPU, and voluntary context switches (each is a thread giving up the GIL or
  waiting for it).

Compare only within one run; the fair comparison with ArcticDB is ``benchmarks.fair``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import tempfile
import time
from typing import Any

import pyarrow as pa

from benchmarks.fair_data import build_frame, make_parts

ROWS_PER_SEGMENT = 100_000


def encode_cpu(shape: str, rows: int, reps: int) -> tuple[float, int]:
    """Best CPU seconds of encoding every segment of the frame, and the bytes they take."""
    from arcticlite import format as fermion
    from arcticlite import normalize as norm

    df = build_frame(shape, make_parts(shape, rows))
    table, _ = norm.normalize(df, dictionary_strings=True)
    schema = pa.schema(list(norm.value_schema(table.schema)), metadata=table.schema.metadata)
    best, size = float("inf"), 0
    for _ in range(reps):
        memo: dict[Any, Any] = {}
        size = 0
        t = time.process_time()
        for r0 in range(0, table.num_rows, ROWS_PER_SEGMENT):
            blob = fermion.encode(table.slice(r0, ROWS_PER_SEGMENT), schema=schema, page_size=1 << 20,
                                  optimize_for="read", choices=memo, bloom_min_distinct=16, parallel=False)
            size += len(blob)
        best = min(best, time.process_time() - t)
    return best, size


def write_threads(shape: str, rows: int, reps: int, encode_threads: int) -> dict[str, float]:
    """Median wall / user / system seconds and context switches of ``reps`` writes."""
    import arcticlite
    from arcticlite.table._pools import Pools

    df = build_frame(shape, make_parts(shape, rows))
    root = tempfile.mkdtemp(prefix="bench_write_cpu_")
    out: dict[str, list[float]] = {"wall": [], "user": [], "sys": [], "vcsw": []}
    try:
        lib = arcticlite.Arctic(f"lmdb://{root}").get_library("b", create_if_missing=True)
        lib._table.pools = Pools(threads=2, encode_threads=encode_threads)  # type: ignore[attr-defined]
        lib.write("warm", df.iloc[:10])
        for i in range(reps):
            r0, t = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            lib.write(f"s{i % 2}", df)
            w, r1 = time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF)
            out["wall"].append(w)
            out["user"].append(r1.ru_utime - r0.ru_utime)
            out["sys"].append(r1.ru_stime - r0.ru_stime)
            out["vcsw"].append(r1.ru_nvcsw - r0.ru_nvcsw)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {k: statistics.median(v) for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="quotes,mixed")
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--threads", action="store_true", help="also time whole writes on 1 and 2 encode threads")
    args = ap.parse_args()
    print(f"# {os.cpu_count()} cores, {args.rows:,} rows, best / median of {args.reps}")
    for shape in args.shapes.split(","):
        cpu, size = encode_cpu(shape, args.rows, args.reps)
        print(f"{shape:8s} encode: {cpu * 1000:7.1f} ms CPU, {size / 1e6:8.3f} MB")
        if args.threads:
            for n in (1, 2):
                r = write_threads(shape, args.rows, args.reps, n)
                print(f"{shape:8s} write, {n} encode thread(s): wall {r['wall']:.3f} s, user {r['user']:.3f} s, "
                      f"sys {r['sys']:.3f} s, {r['vcsw']:.0f} voluntary context switches")


if __name__ == "__main__":
    main()
