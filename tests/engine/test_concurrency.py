"""Concurrent writers (DESIGN §2 invariant 2): every call that returned is in exactly one version.

ArcticDB documents one writer per symbol (4 processes × 50 appends to one LMDB symbol lost 50 of
the appends it acknowledged); arcticlite's appends rebase on a concurrent commit instead.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
from typing import Any

import numpy as np
import pandas as pd
import pytest
from enginehelpers import APPEND_TS, acked_append_worker, assert_frame_equal, reader_worker

from arcticlite import Arctic

pytestmark = pytest.mark.slow

LMDB_S3 = [pytest.param("lmdb", marks=pytest.mark.lmdb), pytest.param("s3", marks=pytest.mark.s3)]
PROCS, APPENDS = 4, 50


#: ``ARCTICLITE_BATTERY=full`` runs the battery's full sizes (issue 16): 8 × 250 appends on LMDB,
#: 8 × 40 on S3; the default sizes keep ``make test`` short on 2 cores.
FULL = os.environ.get("ARCTICLITE_BATTERY") == "full"
full_only = pytest.mark.skipif(not FULL, reason="full battery size: set ARCTICLITE_BATTERY=full")
READERS = 2


def run_appenders(uri: str, procs: int, appends: int, *, readers: int = READERS,
                  conditional: bool = True, faults: dict[str, Any] | None = None) -> dict[str, Any]:
    """The concurrency harness of the battery: ``procs`` processes × ``appends`` one-row appends
    to one symbol, ``readers`` processes reading the latest version meanwhile
    (``enginehelpers.reader_worker``). Returns the final frame, what was lost and duplicated,
    and the readers' reports. ``faults``: the writers go through a ``FaultInjectingStore`` of
    these settings (``enginehelpers.acked_append_worker``), and ``outcomes`` counts their failed
    calls by kind."""
    Arctic(uri).create_library("lib")
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(procs)
    acked = ctx.Array("q", procs)
    outcomes = ctx.Array("q", 3 * procs)
    stop, queue = ctx.Event(), ctx.Queue()
    rs = [ctx.Process(target=reader_worker, args=(uri, "lib", "sym", procs, acked, stop, queue))
          for _ in range(readers)]
    ws = [ctx.Process(target=acked_append_worker, args=(uri, "lib", "sym", tag, appends, barrier, acked, conditional, faults, outcomes))
          for tag in range(procs)]
    for p in rs + ws:
        p.start()
    for p in ws:
        p.join(timeout=600)
    stop.set()
    reports = [queue.get(timeout=300) for _ in rs]
    for p in rs:
        p.join(timeout=60)
    assert [p.exitcode for p in ws + rs] == [0] * (procs + readers)
    assert all(not isinstance(r, str) for r in reports), reports  # a traceback
    final = Arctic(uri)["lib"].read("sym").data
    pairs = list(zip(final["tag"], final["seq"], strict=True))
    kinds = [sum(outcomes[3 * t + i] for t in range(procs)) for i in range(3)]
    return {"final": final, "acked": list(acked[:]), "clean_failures": kinds[0], "unknown": kinds[1:],
            "lost": procs * appends - len(set(pairs)), "duplicated": len(pairs) - len(set(pairs)),
            "reads": sum(r[0] for r in reports), "violations": [v for r in reports for v in r[2]]}


def check_no_loss(uri: str, backend: str, procs: int, appends: int,
                  faults: dict[str, Any] | None = None) -> dict[str, Any]:
    out = run_appenders(uri, procs, appends, faults=faults)
    final = out["final"]
    assert out["acked"] == [appends] * procs  # every append was acknowledged ...
    assert (out["lost"], out["duplicated"]) == (0, 0)  # ... and is in the last version exactly once
    assert set(zip(final["tag"], final["seq"], strict=True)) == {(t, k) for t in range(procs) for k in range(appends)}
    for t in range(procs):  # each process's appends in the order it made them
        assert final.loc[final["tag"] == t, "seq"].tolist() == list(range(appends))
    assert final.index.is_monotonic_increasing and (final.index == APPEND_TS).all()
    # the readers saw only complete versions, moving forward, holding every acknowledged append
    assert out["reads"] > 0
    assert out["violations"] == []

    # every intermediate version is readable and a prefix of the final one. Version v holds
    # v + 1 one-row rows, so full reads of all versions cost O(n²) segment reads: every version
    # is read through its last rows (and its row count), every 10th (S3: 50th) version and the last in full.
    lib = Arctic(uri)["lib"]
    versions = sorted(v.version for v in lib.list_versions("sym"))
    assert versions == list(range(procs * appends))
    step = 10 if backend == "lmdb" else 50
    for v in versions[:: max(1, len(versions) // 200)] + versions[-1:]:
        assert lib.get_description("sym", as_of=v).row_count == v + 1
        assert_frame_equal(lib.tail("sym", 2, as_of=v).data, final.iloc[max(0, v - 1) : v + 1])
        if v % step == 0 or v == versions[-1]:
            assert_frame_equal(lib.read("sym", as_of=v).data, final.iloc[: v + 1])
    return out


@pytest.mark.parametrize("backend", LMDB_S3)
def test_processes_appending_to_one_symbol_lose_nothing(uri: str, backend: str) -> None:
    """Battery: 4 × 50 appends on LMDB, 4 × 20 on S3 (moto, one request at a time), with 2
    readers: 0 lost, 0 duplicated, every version seen complete and moving forward."""
    check_no_loss(uri, backend, PROCS, APPENDS if backend == "lmdb" else 20)


@full_only
@pytest.mark.parametrize("backend", LMDB_S3)
def test_processes_appending_to_one_symbol_lose_nothing_full(uri: str, backend: str) -> None:
    """Battery at issue 16's sizes: 8 × 250 appends on LMDB, 8 × 40 on S3."""
    check_no_loss(uri, backend, 8, 250 if backend == "lmdb" else 40)


#: Ambiguous commits: faults around the commit point (a call that lands and loses its answer,
#: p = 0.2; one that fails before landing, p = 0.1), or around every store call (p = 0.05 each).
LMDB_FAULTS = {
    "commit": {"after_rate": 0.2, "error_rate": 0.1, "ops": ["commit", "write_if_absent", "compare_and_swap"]},
    "every-call": {"after_rate": 0.05, "error_rate": 0.05},
}
AMBIGUOUS = [pytest.param("lmdb", "commit", marks=pytest.mark.lmdb, id="lmdb-commit"),
             pytest.param("lmdb", "every-call", marks=pytest.mark.lmdb, id="lmdb-every-call"),
             pytest.param("s3", "server", marks=pytest.mark.s3, id="s3-server")]


def check_ambiguous(uri: str, backend: str, where: str, s3_server: Any, procs: int, appends: int) -> None:
    """The concurrency harness with commits whose outcome the writer does not learn: on LMDB
    through ``FaultInjectingStore`` in each writer, on S3 from the moto server (every request:
    p = 0.2 answered 500 after moto applied it, p = 0.05 refused 503 SlowDown before). Every
    acknowledged append is in the last version exactly once; an append that raised
    ``StorageUnavailableError`` left nothing behind (the writer makes it again: a duplicate
    would show); the readers see only complete versions moving forward."""
    if backend == "s3":
        s3_server.set_fault_rates(after=0.2, before=0.05, seed=16)
        try:
            out = check_no_loss(uri, backend, procs, appends)
        finally:
            injected = s3_server.injected
            s3_server.clear_faults()
        assert injected["after"] > 0 and injected["before"] > 0
    else:
        out = check_no_loss(uri, backend, procs, appends, faults={"seed": 16, **LMDB_FAULTS[where]})
        assert out["clean_failures"] + sum(out["unknown"]) > 0  # the faults reached the writers
    print(f"\n{backend}/{where} {procs}x{appends}: clean failures retried {out['clean_failures']}, "
          f"unknown outcomes landed/absent {out['unknown']}, reads checked {out['reads']}")
    # nothing unreachable is visible: gc finds only what failed calls wrote, and reads stay whole
    lib = Arctic(uri)["lib"]
    lib.gc(grace_period=0)
    assert lib.gc(grace_period=0, dry_run=True).unreachable == 0
    assert len(lib.read("sym").data) == procs * appends


@pytest.mark.parametrize(("backend", "where"), AMBIGUOUS)
def test_ambiguous_commits_lose_and_duplicate_nothing(uri: str, backend: str, where: str,
                                                       request: pytest.FixtureRequest) -> None:
    """Battery: ambiguous commits, LMDB 4 × 30 and S3 4 × 10 appends (full: 8 × 250, 8 × 40)."""
    server = request.getfixturevalue("s3_server") if backend == "s3" else None
    check_ambiguous(uri, backend, where, server, PROCS, 30 if backend == "lmdb" else 10)


@full_only
@pytest.mark.parametrize(("backend", "where"), AMBIGUOUS)
def test_ambiguous_commits_lose_and_duplicate_nothing_full(uri: str, backend: str, where: str,
                                                            request: pytest.FixtureRequest) -> None:
    server = request.getfixturevalue("s3_server") if backend == "s3" else None
    check_ambiguous(uri, backend, where, server, 8, 250 if backend == "lmdb" else 40)


@pytest.mark.parametrize("backend", [pytest.param("lmdb", marks=pytest.mark.lmdb)])
def test_control_without_conditional_writes_appends_are_lost(uri: str) -> None:
    """The same harness with conditional writes switched off (``UnconditionalStore``: last
    writer wins, as ArcticDB's ref overwrite) loses acknowledged appends, so the test above can
    fail: the writers' acknowledged appends are missing from the last version."""
    out = run_appenders(uri, PROCS, APPENDS, conditional=False)
    assert out["acked"] == [APPENDS] * PROCS
    assert out["lost"] > 0
    assert any("acknowledged appends missing" in v or "went backwards" in v for v in out["violations"])


def test_threads_writing_one_symbol_make_distinct_versions(uri: str) -> None:
    threads_n, writes = 8, 25
    lib = Arctic(uri).create_library("lib")
    results: dict[tuple[int, int], int] = {}
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(threads_n)

    def frame_of(t: int, k: int) -> pd.DataFrame:
        return pd.DataFrame({"t": np.array([t, t], dtype=np.int64), "k": np.array([k, k], dtype=np.int64)},
                            index=pd.date_range("2024-01-01", periods=2))

    def worker(t: int) -> None:
        try:
            start.wait()
            for k in range(writes):
                v = lib.write("sym", frame_of(t, k)).version
                with lock:
                    results[(t, k)] = v
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    ts = [threading.Thread(target=worker, args=(t,)) for t in range(threads_n)]
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    assert errors == []
    assert sorted(results.values()) == list(range(threads_n * writes))  # 200 distinct versions
    assert sorted(v.version for v in lib.list_versions("sym")) == list(range(threads_n * writes))
    by_version = {v: tk for tk, v in results.items()}
    for v in range(0, threads_n * writes, 13):  # each version holds what its writer wrote
        t, k = by_version[v]
        assert_frame_equal(lib.read("sym", as_of=v).data, frame_of(t, k))
    t, k = by_version[threads_n * writes - 1]
    assert_frame_equal(lib.read("sym").data, frame_of(t, k))
    for t in range(threads_n):  # one thread's writes get increasing versions
        mine = [results[(t, k)] for k in range(writes)]
        assert mine == sorted(mine)


def test_prune_racing_a_writer_keeps_the_writers_version(uri: str, backend: str) -> None:
    """Deterministic interleaving of ArcticDB PR #3028's race: writer A writes its segments,
    client B prunes (tombstone + clean-up), then A commits. With content-addressed segment keys
    A's segment (identical to v0's) is deleted by B's clean-up and A's acknowledged version is
    lost; segment and index-node keys must be fresh names (or deletion deferred to gc)."""
    ac = Arctic(uri)
    a = ac.create_library("lib")
    b = (Arctic(uri) if backend != "memory" else Arctic("mem://", store=ac._store))["lib"]
    df = pd.DataFrame({"x": np.arange(10)}, index=pd.date_range("2024-01-01", periods=10))
    a.write("sym", df)  # v0: the segment A will re-create
    a.write("sym", df.assign(x=df["x"] + 100))  # v1

    real_commit = a._engine.commit

    def commit_after_prune(sym: str, build: object, **kw: object) -> object:
        b.prune_previous_versions("sym")  # runs between A's data writes and A's commit point
        return real_commit(sym, build, **kw)  # type: ignore[arg-type]

    a._engine.commit = commit_after_prune  # type: ignore[method-assign]
    v = a.write("sym", df).version
    a._engine.commit = real_commit  # type: ignore[method-assign]
    assert b.read("sym").version == v
    assert_frame_equal(b.read("sym").data, df)


def test_concurrent_appends_and_updates_rebase(uri: str, backend: str) -> None:
    """An appender and an updater racing on one symbol: both rebase on each other's commits,
    so no appended row is lost and the updated span holds the last update's values."""
    n = 12 if backend == "s3" else 25
    lib = Arctic(uri).create_library("lib")
    t0 = pd.Timestamp("2024-01-01")
    base = pd.DataFrame({"v": np.zeros(10, dtype=np.int64)}, index=pd.date_range(t0, periods=10))
    lib.write("sym", base)
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def appender() -> None:
        try:
            start.wait()
            for k in range(n):
                lib.append("sym", pd.DataFrame({"v": [1000 + k]}, index=[t0 + pd.Timedelta(days=100 + k)]))
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    def updater() -> None:
        try:
            start.wait()
            for k in range(n):
                upd = pd.DataFrame({"v": np.full(4, k + 1, dtype=np.int64)},
                                   index=pd.date_range(t0 + pd.Timedelta(days=2), periods=4))
                lib.update("sym", upd)
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    ts = [threading.Thread(target=appender), threading.Thread(target=updater)]
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    assert errors == []
    got = lib.read("sym").data
    assert got["v"].tolist() == [0, 0] + [n] * 4 + [0] * 4 + [1000 + k for k in range(n)]
    assert got.index.is_monotonic_increasing
    versions = sorted(v.version for v in lib.list_versions("sym"))
    assert versions == list(range(2 * n + 1))
    for v in versions[:: 5 if backend == "s3" else 1]:
        data = lib.read("sym", as_of=v).data
        appended = data["v"][data["v"] >= 1000].tolist()
        assert appended == [1000 + k for k in range(len(appended))]  # a prefix of the appends
        assert len(set(data["v"].iloc[2:6])) == 1  # one update's values, never a mix


@pytest.mark.parametrize("mode", ["versions", "latest"])
def test_snapshot_racing_a_delete_is_readable_or_refused(uri: str, backend: str, mode: str) -> None:
    """Client B deletes the version client A's snapshot chose, between the choice and the
    snapshot's write: the snapshot is refused (explicit versions) or retaken (latest), never
    left pointing at data B's clean-up removed."""
    from arcticlite.exceptions import NoSuchVersionException

    ac = Arctic(uri)
    a = ac.create_library("lib")
    b = (Arctic(uri) if backend != "memory" else Arctic("mem://", store=ac._store))["lib"]
    df = pd.DataFrame({"x": np.arange(5)}, index=pd.date_range("2024-01-01", periods=5))
    a.write("s", df)
    a.write("s", df + 1)
    store = a._store
    real = store.write_if_absent
    fired = []

    def delete_then_write(key: str, body: object) -> bool:
        if "/snap/" in key and not fired:
            fired.append(key)
            b.delete("s", versions=[0 if mode == "versions" else 1])
        return real(key, body)  # type: ignore[arg-type]

    store.write_if_absent = delete_then_write  # type: ignore[method-assign]
    try:
        if mode == "versions":
            with pytest.raises(NoSuchVersionException):
                a.snapshot("snap", versions={"s": 0})
            assert b.list_snapshots() == {}
        else:
            a.snapshot("snap")
            assert b.read("s", as_of="snap").version == 0
            assert_frame_equal(b.read("s", as_of="snap").data, df)
    finally:
        store.write_if_absent = real  # type: ignore[method-assign]
    assert fired
