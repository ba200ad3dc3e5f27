"""Crash safety (DESIGN §2 invariant 3): a failure or a kill at the commit point leaves every
symbol readable at its last committed version, and a failed call changes nothing visible."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from enginehelpers import assert_frame_equal, endless_append_worker, frame

from arcticlite import Arctic, Library
from arcticlite.exceptions import (
    ArcticException,
    CommitStateUnknownError,
    MissingKeysInStageResultsError,
    StorageException,
    UserInputException,
)
from arcticlite.library import MergeStrategy
from arcticlite.storage import FaultInjectingStore, KVStore, open_store
from arcticlite.testing import CrashingStore, SimulatedCrash

COMMIT_OPS = {"commit", "write_if_absent"}  # the commit point: atomic commit (LMDB, memory) or create-if-absent (S3)

OPS: dict[str, Callable[[Library], object]] = {
    "write": lambda lib: lib.write("s", frame(7, base=100)),
    "append": lambda lib: lib.append("s", frame(2, start="2024-02-01", base=100)),
    "update": lambda lib: lib.update("s", frame(2, start="2024-01-02", base=100)),
    "delete_data_in_range": lambda lib: lib.delete_data_in_range("s", (pd.Timestamp("2024-01-02"), pd.Timestamp("2024-01-03"))),
    "write_metadata": lambda lib: lib.write_metadata("s", "new"),
    "delete_version": lambda lib: lib.delete("s", versions=[0]),
    "delete_all": lambda lib: lib.delete("s"),
    "prune": lambda lib: lib.prune_previous_versions("s"),
    "write_pickle": lambda lib: lib.write_pickle("s", {"x": 1}),
    "finalize": lambda lib: lib.finalize_staged_data("s", mode="append"),
}


def setup_symbol(lib: Library) -> None:
    lib.write("s", frame(5), metadata="v0")
    lib.append("s", frame(2, start="2024-01-10", base=50), metadata="v1")
    lib.stage("s", frame(1, start="2024-03-01", base=7))


def observe(lib: Library) -> tuple[object, ...]:
    """What a user can see of symbol ``s``."""
    item = lib.read("s")
    return (sorted((k.version, v.deleted) for k, v in lib.list_versions("s").items()), item.version,
            item.metadata, lib.list_symbols(), lib.has_symbol("s"), item.data)


def assert_same_view(a: tuple[object, ...], b: tuple[object, ...]) -> None:
    assert a[:-1] == b[:-1]
    assert_frame_equal(a[-1], b[-1])  # type: ignore[arg-type]


def clean_client(ac: Arctic, uri: str, backend: str) -> Library:
    return (ac if backend == "memory" else Arctic(uri))["lib"]


@pytest.mark.parametrize("op", list(OPS))
def test_failure_at_commit_point_changes_nothing(ac: Arctic, uri: str, backend: str, op: str) -> None:
    setup_symbol(ac.create_library("lib"))
    before = observe(clean_client(ac, uri, backend))
    faulty = Arctic(uri, store=FaultInjectingStore(ac._store, seed=0, error_rate=1.0, ops=COMMIT_OPS))
    with pytest.raises(ArcticException) as info:
        OPS[op](faulty["lib"])
    assert isinstance(info.value, CommitStateUnknownError | StorageException)
    if backend == "s3":
        assert isinstance(info.value, CommitStateUnknownError)
    lib = clean_client(ac, uri, backend)
    assert_same_view(observe(lib), before)
    assert_frame_equal(lib.read("s", as_of=0).data, frame(5))
    # the library keeps working: the next commit takes the next id
    assert lib.write("s", frame(1, base=9)).version == 2
    assert_frame_equal(lib.read("s").data, frame(1, base=9))


@pytest.mark.parametrize("op", ["write", "append", "update", "delete_version"])
def test_lost_commit_response_leaves_old_or_new_state(ac: Arctic, uri: str, backend: str, op: str) -> None:
    """The commit lands but its response is lost: the caller may see an error, but readers see
    exactly the old or the new version, never a mix."""
    setup_symbol(ac.create_library("lib"))
    before = observe(clean_client(ac, uri, backend))
    faulty = Arctic(uri, store=FaultInjectingStore(ac._store, seed=0, after_rate=1.0, ops=COMMIT_OPS))
    try:
        OPS[op](faulty["lib"])
    except ArcticException:
        pass
    lib = clean_client(ac, uri, backend)
    after = observe(lib)
    reference = Arctic("mem://").create_library("lib")
    setup_symbol(reference)
    OPS[op](reference)
    new = observe(reference)
    assert after[:-1] in (before[:-1], new[:-1])
    assert_same_view(after, before if after[:-1] == before[:-1] else new)
    if (0, False) in after[0]:  # type: ignore[operator]
        assert_frame_equal(lib.read("s", as_of=0).data, frame(5))


def test_crash_after_data_writes_before_commit(lib: Library, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process dying after writing segments but before the commit point."""
    setup_symbol(lib)
    before = observe(lib)

    class Crash(BaseException):
        pass

    def crash(*_a: object, **_k: object) -> None:
        raise Crash

    monkeypatch.setattr(lib._engine, "commit", crash)
    for op in ("write", "append", "update", "delete_data_in_range", "finalize"):
        with pytest.raises(Crash):
            OPS[op](lib)
    monkeypatch.undo()
    assert_same_view(observe(lib), before)


@pytest.mark.slow
@pytest.mark.parametrize("backend", [pytest.param("lmdb", marks=pytest.mark.lmdb),
                                     pytest.param("s3", marks=pytest.mark.s3)])
def test_killed_writer_leaves_symbol_readable(uri: str) -> None:
    Arctic(uri).create_library("lib")
    ctx = mp.get_context("spawn")
    started = ctx.Event()
    p = ctx.Process(target=endless_append_worker, args=(uri, "lib", "sym", started))
    p.start()
    try:
        assert started.wait(120)
    finally:
        os.kill(p.pid, signal.SIGKILL)  # type: ignore[arg-type]
        p.join(30)
    lib = Arctic(uri)["lib"]
    final = lib.read("sym").data
    n = len(final)
    assert n >= 3
    assert final["seq"].tolist() == list(range(n))  # acknowledged or not, never a gap or a duplicate
    versions = sorted(v.version for v in lib.list_versions("sym"))
    assert versions == list(range(n))
    for v in versions[-3:]:
        assert_frame_equal(lib.read("sym", as_of=v).data, final.iloc[: v + 1])
    lib.append("sym", final.iloc[-1:].assign(seq=n))  # writable afterwards
    assert lib.read("sym").version == n


@pytest.mark.parametrize("op", ["create", "delete"])
def test_crash_right_after_commit_point_keeps_symbol_list_consistent(
    ac: Arctic, uri: str, backend: str, op: str
) -> None:
    """A process dying right after the commit point: LMDB and memory write the journal entry
    in the commit transaction; on S3 an intent entry written before the commit point is
    confirmed against the version record. Either way list_symbols() agrees with has_symbol()."""
    lib = ac.create_library("lib")
    lib.write("other", frame(1))
    if op == "delete":
        lib.write("s", frame(1))

    class Crash(BaseException):
        pass

    store = lib._store
    if store.atomic_commit:
        real_commit = store.commit

        def commit_then_crash(create: object, put: object) -> bool:
            if real_commit(create, put):  # type: ignore[arg-type]
                raise Crash
            return False

        store.commit = commit_then_crash  # type: ignore[method-assign]
        undo = ("commit", real_commit)
    else:
        def crash(*_a: object, **_k: object) -> None:
            raise Crash

        real_advance = lib._engine._advance_ref
        lib._engine._advance_ref = crash  # type: ignore[method-assign]
        undo = ("advance", real_advance)
    with pytest.raises(Crash):
        lib.write("s", frame(2)) if op == "create" else lib.delete("s")
    if undo[0] == "commit":
        store.commit = undo[1]  # type: ignore[method-assign]
    else:
        lib._engine._advance_ref = undo[1]  # type: ignore[method-assign]
    fresh = clean_client(ac, uri, backend)
    assert fresh.has_symbol("s") == (op == "create")
    assert set(fresh.list_symbols()) == {s for s in ("other", "s") if fresh.has_symbol(s)}


@pytest.mark.parametrize("op", ["create", "delete"])
def test_failed_commit_leaves_symbol_list_unchanged(ac: Arctic, uri: str, backend: str, op: str) -> None:
    """A commit that fails at its commit point (nothing committed) must not change what
    list_symbols() reports, whatever the symbol list recorded before the commit point."""
    lib = ac.create_library("lib")
    lib.write("other", frame(1))
    if op == "delete":
        lib.write("s", frame(1))
    before = set(lib.list_symbols())
    faulty = Arctic(uri, store=FaultInjectingStore(ac._store, seed=0, error_rate=1.0, ops=COMMIT_OPS))["lib"]
    with pytest.raises(ArcticException):
        faulty.write("s", frame(2)) if op == "create" else faulty.delete("s")
    for client in (lib, clean_client(ac, uri, backend)):
        assert set(client.list_symbols()) == before
        assert set(client.list_symbols()) == {s for s in ("other", "s") if client.has_symbol(s)}
        client.compact_symbol_list()
        assert set(client.list_symbols()) == before


# -- the battery: a crash at every step boundary of every operation (issue 16) ------------------
STEP_OPS: dict[str, Callable[[Library], object]] = {
    "write": OPS["write"],
    "append": OPS["append"],
    "update": OPS["update"],
    "delete_version": OPS["delete_version"],
    "delete_all": OPS["delete_all"],
    "snapshot": lambda lib: lib.snapshot("snap2", metadata="m2"),
    "compact_data": lambda lib: lib.compact_data("s", rows_per_segment=100),
    "finalize_staged_data": OPS["finalize"],
}
# run on a symbol whose latest version also carries merge deltas (setup_with_deltas)
DELTA_STEP_OPS: dict[str, Callable[[Library], object]] = {
    "merge": lambda lib: lib.merge("s", frame(2, start="2024-01-12", base=700), metadata="merged"),
    "merge_experimental": lambda lib: lib.merge_experimental(
        "s", frame(2, start="2024-01-01", base=800), strategy=MergeStrategy("update", "do_nothing")),
    "delete_rows": lambda lib: lib.delete_rows("s", pd.DataFrame(index=pd.DatetimeIndex(["2024-01-02", "2024-01-11"]))),
    "delete_data_in_range": OPS["delete_data_in_range"],
    "write_metadata": OPS["write_metadata"],
    "delete_snapshot": lambda lib: lib.delete_snapshot("snap"),
    "prune_previous_versions": OPS["prune"],
    "compact_deltas": lambda lib: lib.compact_deltas("s"),
}


def setup_for_steps(lib: Library) -> None:
    """Two versions (the second three small appends: slices to compact), a snapshot, a staged
    segment."""
    lib.write("s", frame(5), metadata="v0")
    for k in range(3):
        lib.append("s", frame(1, start=f"2024-01-{10 + k}", base=50 + k), metadata=f"v{k + 1}")
    lib.snapshot("snap", metadata="m")
    lib.stage("s", frame(1, start="2024-03-01", base=7))


def setup_with_deltas(lib: Library) -> None:
    """:func:`setup_for_steps`, then a merge (an upsert of two rows: delta segments on the
    latest version, folded by nothing yet)."""
    setup_for_steps(lib)
    lib.merge("s", frame(2, start="2024-01-04", base=900), metadata="v4")


def _setup_of(op: str) -> Callable[[Library], None]:
    return setup_with_deltas if op in DELTA_STEP_OPS else setup_for_steps


def _op_of(op: str) -> Callable[[Library], object]:
    return DELTA_STEP_OPS[op[len("deltas:"):]] if op.startswith("deltas:") else STEP_OPS[op]


def key_shape(store: KVStore) -> Counter[str]:
    """The store's keys, with the randomly named ones (data segments, index nodes, staged
    segments) counted by kind; the symbol-list journal and gc's ledger are left out (the
    journal is compacted at will; an S3 intent entry is confirmed against the version records)."""
    shape: Counter[str] = Counter()
    for key in store.list_keys(""):
        parts = key.split("/")
        if len(parts) > 1 and parts[1] in ("sl", "_gc"):
            continue
        shape["/".join(parts[:3]) if len(parts) > 1 and parts[1] in ("tdata", "tindex", "stage") else key] += 1
    return shape


def _frame_key(df: pd.DataFrame) -> tuple[object, ...]:
    return (list(df.columns), [str(t) for t in df.dtypes], df.index.tolist(), [df[c].tolist() for c in df])


def full_view(lib: Library) -> dict[str, object]:
    """Everything a user can see of the library: versions and what each reads, symbols,
    snapshots and what they read, staged symbols."""
    versions = lib.list_versions("s")
    data = {}
    for key, info in versions.items():
        if info.deleted:  # deleted, kept by a snapshot: read through the snapshot (below)
            continue
        item = lib.read("s", as_of=key.version)  # every listed version reads completely
        data[key.version] = (_frame_key(item.data), item.metadata)
    snaps = lib.list_snapshots()
    snapdata = {name: _frame_key(lib.read("s", as_of=name).data) for name in snaps
                if "s" in lib.list_symbols(snapshot_name=name)}
    return {"versions": sorted((k.version, v.deleted, tuple(sorted(v.snapshots))) for k, v in versions.items()),
            "data": data, "symbols": sorted(lib.list_symbols()), "has": lib.has_symbol("s"),
            "snapshots": snaps, "snapdata": snapdata, "staged": sorted(lib.get_staged_symbols())}


def _crash_run(new_store: Callable[[], KVStore], op: str, crash_at: int | None) -> tuple[Library, CrashingStore, bool]:
    """A fresh store (``new_store()``: the same store each call) set up, then ``op`` run through
    a store that dies at call ``crash_at``; returns a fresh client, the crashing store and
    whether ``op`` returned (``op``: a name of STEP_OPS, or ``deltas:`` and a name of
    DELTA_STEP_OPS)."""
    _setup_of(op.removeprefix("deltas:"))(Arctic("crash://", store=new_store()).create_library("lib"))
    crashing = CrashingStore(new_store())
    lib = Arctic("crash://", store=crashing)["lib"]
    crashing.calls.clear()  # count (and crash) from the operation's first call
    crashing.crash_at = crash_at
    try:
        _op_of(op)(lib)
        acked = True
    except SimulatedCrash:
        acked = False
    return Arctic("crash://", store=new_store())["lib"], crashing, acked


def _fresh_stores(backend: str, tmp_path: Any, request: pytest.FixtureRequest) -> Callable[[], Callable[[], KVStore]]:
    """``fresh()`` makes a new empty store and returns its opener (LMDB: a new directory; S3: a
    new bucket, opened with the session's boto3 client: a client per open would cost ~0.6 s)."""
    counter = iter(range(10**6))
    if backend == "lmdb":
        opened: list[KVStore] = []
        request.addfinalizer(lambda: [st.close() for st in opened])

        def fresh_lmdb() -> Callable[[], KVStore]:
            uri = f"lmdb://{tmp_path}/run{next(counter)}"

            def open_it() -> KVStore:
                opened.append(open_store(uri))
                return opened[-1]
            return open_it
        return fresh_lmdb
    from arcticlite.storage import S3Store, parse_uri

    server, client = request.getfixturevalue("s3_server"), request.getfixturevalue("s3_client")

    def fresh_s3() -> Callable[[], KVStore]:
        uri = server.new_bucket_uri()
        return lambda: S3Store.from_uri(parse_uri(uri), client=client)  # type: ignore[arg-type]
    return fresh_s3


@pytest.mark.parametrize("backend", [pytest.param("lmdb", marks=pytest.mark.lmdb),
                                     pytest.param("s3", marks=pytest.mark.s3)])
@pytest.mark.parametrize("op", [*STEP_OPS, *(f"deltas:{name}" for name in DELTA_STEP_OPS)])
def test_crash_at_every_step_boundary(backend: str, op: str, tmp_path: Any, request: pytest.FixtureRequest) -> None:
    """The process dies before each store call of ``op`` in turn (calls 1 .. N-1 landed): a
    fresh client then reads every listed version and snapshot completely, sees exactly the
    state before ``op`` or exactly the state after it (nothing half-visible; the setup's
    acknowledged operations all present), and ``gc(grace_period=0)`` deletes nothing reachable
    (the view is unchanged), leaves no orphan (a second gc finds nothing unreachable) and
    leaves the keys of a store where ``op`` ran (or did not run) without a crash."""
    fresh = _fresh_stores(backend, tmp_path, request)
    lib, counting, acked = _crash_run(fresh(), op, None)
    assert acked and not counting.crashed
    calls = len(counting.calls)
    assert calls > 0
    after = full_view(lib)
    lib.gc(grace_period=0)
    shapes = {"after": key_shape(lib._store)}
    ref_open = fresh()
    _setup_of(op.removeprefix("deltas:"))(Arctic("crash://", store=ref_open()).create_library("lib"))
    ref = Arctic("crash://", store=ref_open())["lib"]
    before = full_view(ref)
    ref.gc(grace_period=0)
    shapes["before"] = key_shape(ref._store)
    assert after != before  # the operation changes what a user sees
    # S3 makes several times LMDB's calls per operation, and each run costs a fresh bucket: by
    # default every boundary on LMDB; on S3 every sixth before the commit point (data writes:
    # all alike) and every one from the commit point on (every one, for an operation that
    # commits no version: a snapshot's); ARCTICLITE_BATTERY=full tries them all
    points = list(range(1, calls + 1))
    if backend == "s3" and os.environ.get("ARCTICLITE_BATTERY") != "full":
        commit = next((i for i, c in enumerate(counting.calls, 1) if "/ver/" in c and c.startswith("write_if_absent")),
                      1)
        points = sorted(set(points[::6]) | set(range(commit, calls + 1)))
    outcomes: dict[str, list[object]] = {"before": [], "after": [], "half-visible": []}
    for n in points:
        lib, crashing, acked = _crash_run(fresh(), op, n)
        assert crashing.crashed and not acked, f"{op}: no crash at call {n} of {calls}"
        view = full_view(lib)
        if view not in (before, after):  # collected, to name every such boundary
            outcomes["half-visible"].append((n, crashing.calls[-1] if crashing.calls else None))
            continue
        state = "before" if view == before else "after"
        outcomes[state].append(n)
        lib.gc(grace_period=0)
        assert full_view(lib) == view, f"{op}: gc after a crash at call {n} changed what is visible"
        assert lib.gc(grace_period=0, dry_run=True).unreachable == 0, f"{op}: orphan left at call {n}"
        assert key_shape(lib._store) == shapes[state], f"{op}: keys after a crash at call {n} and gc"
    print(f"\n{op} on {backend}: {len(points)} of {calls} boundaries, {len(outcomes['before'])} before, "
          f"{len(outcomes['after'])} after, {len(outcomes['half-visible'])} half-visible")
    assert outcomes["half-visible"] == [], f"{op} ({calls} calls): {outcomes}"
    assert 1 in outcomes["before"]  # a crash at the first call leaves the old state


def test_a_finalize_that_dies_after_its_commit_is_not_finalized_again(tmp_path: Any) -> None:
    # the commit names the staged entries it used; their deletion, a separate call, never
    # happens here: the entries are then skipped (and cleaned up), never appended twice
    df = pd.DataFrame({"x": np.arange(4)}, index=pd.date_range("2024-01-01", periods=4, freq="D"))

    def staged(name: str) -> tuple[str, list[Any]]:
        uri = f"lmdb://{tmp_path}/{name}"
        lib = Arctic(uri).create_library("lib")
        return uri, [lib.stage("s", df.iloc[:2]), lib.stage("s", df.iloc[2:])]

    uri, results = staged("count")
    counting = CrashingStore(Arctic(uri)._store)
    Arctic(uri, store=counting)["lib"].finalize_staged_data("s", stage_results=results)
    at = next(i + 1 for i, c in enumerate(counting.calls) if c.startswith("delete") and "/stage/" in c)
    uri, results = staged("crash")  # the same state again; now die at that deletion
    with pytest.raises(SimulatedCrash):
        Arctic(uri, store=CrashingStore(Arctic(uri)._store, crash_at=at))["lib"].finalize_staged_data(
            "s", stage_results=results)
    fresh = Arctic(uri)["lib"]
    assert_frame_equal(fresh.read("s").data, df)  # committed
    assert fresh.get_staged_symbols() == []  # the leftovers are known to be used
    with pytest.raises(MissingKeysInStageResultsError):
        fresh.finalize_staged_data("s", stage_results=results, mode="append")
    with pytest.raises(UserInputException, match="no staged data"):
        fresh.finalize_staged_data("s", mode="append")
    assert_frame_equal(fresh.read("s").data, df)  # not appended a second time
    assert not list(fresh._store.list_keys(fresh._table.keys.staged_prefix()))  # and cleaned up


def test_gc_removes_staged_entries_a_finalize_that_died_had_committed(tmp_path: Any) -> None:
    # the same crash; then gc (default grace period: a used staged entry is dead at once)
    # deletes the leftover entries, and the finalized version still reads
    df = pd.DataFrame({"x": np.arange(4)}, index=pd.date_range("2024-01-01", periods=4, freq="D"))

    def staged(name: str) -> str:
        uri = f"lmdb://{tmp_path}/{name}"
        lib = Arctic(uri).create_library("lib")
        lib.stage("s", df.iloc[:2])
        lib.stage("s", df.iloc[2:])
        return uri

    uri = staged("count")
    counting = CrashingStore(Arctic(uri)._store)
    Arctic(uri, store=counting)["lib"].finalize_staged_data("s")
    at = next(i + 1 for i, c in enumerate(counting.calls) if c.startswith("delete") and "/stage/" in c)
    uri = staged("crash")
    with pytest.raises(SimulatedCrash):
        Arctic(uri, store=CrashingStore(Arctic(uri)._store, crash_at=at))["lib"].finalize_staged_data("s")
    fresh = Arctic(uri)["lib"]
    staged_prefix = fresh._table.keys.staged_prefix()
    assert len(list(fresh._store.list_keys(staged_prefix))) == 2
    assert fresh.gc().deleted == 2
    assert not list(fresh._store.list_keys(staged_prefix))
    assert_frame_equal(fresh.read("s").data, df)
    assert fresh.gc(dry_run=True).unreachable == 0


@pytest.mark.lmdb
def test_delete_library_stopped_at_any_step_is_finished_by_the_next_call(tmp_path: Any) -> None:
    """delete_library dies before each of its store calls in turn: the library then either
    reads as before (no call landed) or is reported as deleted -- never as corrupt, which a
    missing registry entry with the data still there means when no deletion is under way --
    and the next delete_library or create_library of the name finishes the deletion: the new
    library starts empty, the other library is untouched."""
    from arcticlite.exceptions import LibraryNotFound

    def run(n: int | None, finish: str) -> CrashingStore:
        store = open_store(f"lmdb://{tmp_path}/run{n}{finish}")
        ac = Arctic("crash://", store=store)
        lib = ac.create_library("lib")
        lib.write("s", frame(3))
        lib.snapshot("snap")
        ac.create_library("other").write("t", frame(2))
        crashing = CrashingStore(store, crash_at=n)
        try:
            Arctic("crash://", store=crashing).delete_library("lib")
        except SimulatedCrash:
            pass
        fresh = Arctic("crash://", store=store)
        if "lib" in fresh.list_libraries():  # stopped before the registry entry was deleted
            assert_frame_equal(fresh["lib"].read("s").data, frame(3))
            assert_frame_equal(fresh["lib"].read("s", as_of="snap").data, frame(3))
            fresh.delete_library("lib")
        else:
            with pytest.raises(LibraryNotFound):
                fresh["lib"]
            if finish == "delete":
                fresh.delete_library("lib")
        again = fresh.create_library("lib")
        assert again.list_symbols() == [] and again.list_snapshots() == {}
        assert_frame_equal(fresh["other"].read("t").data, frame(2))
        assert not [k for k in store.list_keys("_arctic/deleting/")]
        store.close()
        return crashing

    counting = run(None, "create")
    calls = len(counting.calls)
    assert calls >= 3
    for n in range(1, calls + 1):
        for finish in ("create", "delete"):
            run(n, finish)
