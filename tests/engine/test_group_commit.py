"""A batch write's commits go to the store together (LMDB: one transaction, one sync), and keep
each item's rules: a version taken meanwhile by another writer is not overwritten, the item is
done again after it, a failed item writes nothing."""

from __future__ import annotations

import os
from typing import Any

import pandas as pd
import pytest
from enginehelpers import assert_frame_equal, frame, versions_of

from arcticlite import Arctic, DataError, VersionedItem, WritePayload
from arcticlite.version import _group


@pytest.fixture
def lmdb_uri(tmp_path: os.PathLike[str]) -> str:
    return f"lmdb://{tmp_path}/db"


def _storage_write_transactions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What each LMDB write transaction of this test did (recorded, not changed)."""
    from arcticlite.storage import _lmdb

    seen: list[str] = []
    run = _lmdb.LmdbStore._run

    def recording(self: Any, write: bool, fn: Any, what: str, buffers: bool = False) -> Any:
        if write:
            seen.append(what)
        return run(self, write, fn, what, buffers)

    monkeypatch.setattr(_lmdb.LmdbStore, "_run", recording)
    return seen


def test_write_batch_commits_in_one_transaction(lmdb_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = Arctic(lmdb_uri).create_library("lib")
    lib.write("s3", frame(2))
    seen = _storage_write_transactions(monkeypatch)
    out = lib.write_batch([WritePayload(f"s{i}", frame(5 + i, base=i), metadata=i) for i in range(6)])
    assert seen == ["commit of 6 writes"]
    assert [(o.symbol, o.version, o.metadata) for o in out] == [  # type: ignore[union-attr]
        ("s0", 0, 0), ("s1", 0, 1), ("s2", 0, 2), ("s3", 1, 3), ("s4", 0, 4), ("s5", 0, 5)]
    fresh = Arctic(lmdb_uri)["lib"]  # another client sees every item, with its metadata
    for i in range(6):
        item = fresh.read(f"s{i}")
        assert_frame_equal(item.data, frame(5 + i, base=i))
        assert item.metadata == i
    assert sorted(fresh.list_symbols()) == [f"s{i}" for i in range(6)]


def test_a_failed_item_writes_nothing_and_the_others_land(lmdb_uri: str) -> None:
    lib = Arctic(lmdb_uri).create_library("lib")
    out = lib.write_batch([WritePayload("a", frame(3)), WritePayload("bad", frame(3).iloc[::-1]),
                           WritePayload("c", frame(4))])
    assert isinstance(out[0], VersionedItem) and isinstance(out[2], VersionedItem)
    assert isinstance(out[1], DataError)
    assert sorted(lib.list_symbols()) == ["a", "c"]
    assert lib.gc(grace_period=0, dry_run=True).unreachable == 0  # nothing unreferenced left


def test_a_version_taken_meanwhile_is_kept_and_the_item_lands_after_it(
        lmdb_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = Arctic(lmdb_uri).create_library("lib")
    lib.write("a", frame(2))
    other = Arctic(lmdb_uri)["lib"]  # another client commits version 1 of "a" before the batch's flush
    flush = _group.CommitGroup.flush

    def racing_flush(self: _group.CommitGroup) -> None:
        if not getattr(self, "raced", False):
            self.raced = True  # type: ignore[attr-defined]
            other.write("a", frame(7, base=100), metadata="other")
        flush(self)

    monkeypatch.setattr(_group.CommitGroup, "flush", racing_flush)
    out = lib.write_batch([WritePayload("a", frame(3, base=10), metadata="mine"), WritePayload("b", frame(4))])
    assert [(o.symbol, o.version) for o in out] == [("a", 2), ("b", 0)]  # type: ignore[union-attr]
    assert versions_of(lib, "a") == [0, 1, 2]
    assert_frame_equal(lib.read("a", as_of=1).data, frame(7, base=100))
    assert lib.read("a", as_of=1).metadata == "other"
    assert_frame_equal(lib.read("a").data, frame(3, base=10))
    assert lib.read("a").metadata == "mine"
    assert_frame_equal(lib.read("b").data, frame(4))
    assert lib.gc(grace_period=0, dry_run=True).unreachable == 0  # the lost attempt left nothing


def test_groups_flushed_while_the_batch_goes_on(lmdb_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_group, "GROUP_BYTES", 1)  # every item fills a group
    lib = Arctic(lmdb_uri).create_library("lib")
    frames = {f"s{i}": pd.DataFrame({"x": range(i + 1)}, index=pd.date_range("2024", periods=i + 1))
              for i in range(20)}
    out = lib.write_batch([WritePayload(s, df) for s, df in frames.items()])
    assert all(isinstance(o, VersionedItem) and o.version == 0 for o in out)
    for s, df in frames.items():
        assert_frame_equal(lib.read(s).data, df)


def test_prune_previous_versions_commits_each_item(lmdb_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = Arctic(lmdb_uri).create_library("lib")
    lib.write_batch([WritePayload("a", frame(2)), WritePayload("b", frame(2))])
    seen = _storage_write_transactions(monkeypatch)
    lib.write_batch([WritePayload("a", frame(3)), WritePayload("b", frame(3))], prune_previous_versions=True)
    assert seen.count("commit") == 2  # the prune of each item follows its own commit
    assert versions_of(lib, "a") == [1] and versions_of(lib, "b") == [1]


def test_append_batch_racing_an_append_loses_neither(lmdb_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = Arctic(lmdb_uri).create_library("lib")
    lib.write("a", frame(2))
    lib.write("b", frame(2))
    other = Arctic(lmdb_uri)["lib"]
    flush = _group.CommitGroup.flush

    def racing_flush(self: _group.CommitGroup) -> None:
        if not getattr(self, "raced", False):
            self.raced = True  # type: ignore[attr-defined]
            other.append("a", frame(1, start="2024-02-01", base=50))
        flush(self)

    monkeypatch.setattr(_group.CommitGroup, "flush", racing_flush)
    seen = _storage_write_transactions(monkeypatch)
    out = lib.append_batch([WritePayload("a", frame(2, start="2024-03-01", base=60)),
                            WritePayload("b", frame(3, start="2024-03-01", base=70))])
    assert [(o.symbol, o.version) for o in out] == [("a", 2), ("b", 1)]  # type: ignore[union-attr]
    want = pd.concat([frame(2), frame(1, start="2024-02-01", base=50), frame(2, start="2024-03-01", base=60)])
    assert_frame_equal(lib.read("a").data, want)
    assert_frame_equal(lib.read("b").data, pd.concat([frame(2), frame(3, start="2024-03-01", base=70)]))
    assert seen[0] == "commit" and seen[1] == "commit of 2 writes"  # the other's, then the group


def _batch_view(lib: Any) -> dict[str, object]:
    out: dict[str, object] = {}
    for sym in ("a", "b", "c"):
        if lib.has_symbol(sym):
            item = lib.read(sym)
            out[sym] = (versions_of(lib, sym), item.data["a"].tolist(), item.metadata)
    out["symbols"] = sorted(lib.list_symbols())
    return out


def test_a_batch_stopped_at_any_store_call_lands_whole_or_not_at_all(tmp_path: Any) -> None:
    """The process dies before each store call of a ``write_batch`` in turn: a fresh client
    sees the state before the batch or after it, and gc finds nothing half-written."""
    from arcticlite.storage import open_store
    from arcticlite.testing import CrashingStore, SimulatedCrash

    def run(n: int, crash_at: int | None) -> tuple[Any, CrashingStore]:
        uri = f"lmdb://{tmp_path}/run{n}"
        Arctic(uri).create_library("lib").write("a", frame(2), metadata="old")
        crashing = CrashingStore(open_store(uri))
        lib = Arctic("crash://", store=crashing)["lib"]
        crashing.calls.clear()
        crashing.crash_at = crash_at
        try:
            lib.write_batch([WritePayload("a", frame(3, base=10), metadata="new"),
                             WritePayload("b", frame(4, base=20)), WritePayload("c", frame(5, base=30))])
        except SimulatedCrash:
            pass
        crashing.inner.close()
        return Arctic(uri)["lib"], crashing

    lib, counting = run(0, None)
    after = _batch_view(lib)
    assert after["symbols"] == ["a", "b", "c"] and after["a"] == ([0, 1], list(range(10, 13)), "new")
    assert sum(c.startswith("commit_many") for c in counting.calls) == 1
    before = {"a": ([0], [0, 1], "old"), "symbols": ["a"]}
    for n in range(1, len(counting.calls) + 1):
        lib, crashing = run(n, n)
        assert crashing.crashed
        view = _batch_view(lib)
        assert view in (before, after), f"crash at call {n} ({crashing.calls[-1:]}): {view}"
        lib.gc(grace_period=0)
        assert _batch_view(lib) == view
        assert lib.gc(grace_period=0, dry_run=True).unreachable == 0
