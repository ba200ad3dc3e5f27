"""The symbol-list race (issue 16's battery): processes writing and deleting symbols while other
processes compact and rebuild the symbol-list cache. ``list_symbols()`` never misses a live
symbol nor shows a deleted one once the operation returned, and in the end it equals the truth
from the version refs (``has_symbol``) for every client."""

from __future__ import annotations

import multiprocessing as mp
import os

import pytest
from enginehelpers import symbol_list_compactor, symbol_list_worker

from arcticlite import Arctic

pytestmark = pytest.mark.slow

LMDB_S3 = [pytest.param("lmdb", marks=pytest.mark.lmdb), pytest.param("s3", marks=pytest.mark.s3)]
FULL = os.environ.get("ARCTICLITE_BATTERY") == "full"
SHARED = [f"shared_{i}" for i in range(10)]


def run_race(uri: str, writers: int, steps: int, compactors: int) -> tuple[int, int]:
    Arctic(uri).create_library("lib")
    ctx = mp.get_context("spawn")
    barrier, stop, queue, cqueue = ctx.Barrier(writers), ctx.Event(), ctx.Queue(), ctx.Queue()
    ws = [ctx.Process(target=symbol_list_worker, args=(uri, "lib", t, steps, SHARED, barrier, queue))
          for t in range(writers)]
    cs = [ctx.Process(target=symbol_list_compactor, args=(uri, "lib", 100 + c, stop, cqueue))
          for c in range(compactors)]
    for p in cs + ws:
        p.start()
    reports = [queue.get(timeout=600) for _ in ws]
    stop.set()
    compacted = [cqueue.get(timeout=120) for _ in cs]
    for p in cs + ws:
        p.join(timeout=60)
    assert all(not isinstance(r, str) for r in reports + compacted), reports + compacted
    assert [p.exitcode for p in ws + cs] == [0] * (writers + compactors)
    violations = [v for r in reports for v in r[1]]
    assert violations == []
    # the end state: every client's list equals the truth from the refs
    candidates = SHARED + [f"p{t}_{i}" for t in range(writers) for i in range(8)]
    truth = {s for s in candidates if Arctic(uri)["lib"].has_symbol(s)}
    for _ in range(2):
        lib = Arctic(uri)["lib"]
        assert set(lib.list_symbols()) == truth
        lib.compact_symbol_list()
    assert set(Arctic(uri)["lib"].list_symbols()) == truth
    return sum(r[0] for r in reports), sum(compacted)  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", LMDB_S3)
def test_list_symbols_is_exact_while_clients_compact(uri: str, backend: str) -> None:
    """Battery: 4 writer/deleter processes (LMDB 60 operations each, S3 25) over 8 own and 10
    shared symbols, 2 processes compacting and rebuilding the cache (full: 8 writers, 250 / 60
    operations)."""
    writers, steps = (8, 250 if backend == "lmdb" else 60) if FULL else (4, 60 if backend == "lmdb" else 25)
    checks, compactions = run_race(uri, writers, steps, 2)
    print(f"\n{backend}: {writers} writers, {checks} list_symbols checks, {compactions} compactions/rebuilds/lists")
    assert checks > 0 and compactions > 0
