"""delete / prune_previous_versions / list_versions / snapshots / has_symbol(as_of), on every
backend (reference §2 "delete", "prune_previous_versions", "list_versions", "snapshot").

Version ids are ArcticDB's: a standalone delete or prune takes no id (it is a commit in the
chain, under a commit sequence of its own: docs/engine.md, "Version ids").
"""

from __future__ import annotations

import pandas as pd
import pytest
from enginehelpers import all_options, assert_frame_equal, frame, versions_of

from arcticlite import Library, SymbolVersion, VersionInfo
from arcticlite.exceptions import (
    InternalException,
    NoDataFoundException,
    NoSuchVersionException,
    StorageException,
    UserInputException,
)


def data_keys(lib: Library, sym: str) -> int:
    """Number of stored data segments of ``sym`` (to check that deletes free space)."""
    return sum(1 for _ in lib._store.list_keys(lib._keys.tdata_prefix(sym)))


def write_versions(lib: Library, sym: str = "s", n: int = 4) -> None:
    for k in range(n):
        lib.write(sym, frame(3, base=10 * k))


# -- delete ---------------------------------------------------------------------------------------
@all_options
def test_delete_all_versions(lib: Library) -> None:
    write_versions(lib)
    lib.write("other", frame(2))
    lib.delete("s")
    assert not lib.has_symbol("s")
    assert "s" not in lib
    assert lib.list_symbols() == ["other"]
    assert lib.list_versions("s") == {}
    with pytest.raises(NoSuchVersionException):
        lib.read("s")
    with pytest.raises(NoSuchVersionException):
        lib.read("s", as_of=0)
    assert data_keys(lib, "s") == 0
    assert_frame_equal(lib.read("other").data, frame(2))
    lib.delete("s")  # already deleted: a no-op
    lib.delete("never")  # missing: a no-op


def test_delete_some_versions(lib: Library) -> None:
    write_versions(lib)
    lib.delete("s", versions=[0, 2])
    assert versions_of(lib, "s") == [1, 3]
    for v in (0, 2):
        with pytest.raises(NoSuchVersionException):
            lib.read("s", as_of=v)
    assert_frame_equal(lib.read("s", as_of=1).data, frame(3, base=10))
    lib.delete("s", 3)  # an int works too; the latest becomes the previous live version
    assert lib.read("s").version == 1
    assert_frame_equal(lib.read("s").data, frame(3, base=10))
    assert lib.list_symbols() == ["s"]
    lib.delete("s", versions=[])  # no-op
    assert versions_of(lib, "s") == [1]
    lib.delete("s", versions=[1])  # the last live version: the symbol is gone
    assert not lib.has_symbol("s")
    assert lib.list_symbols() == []


def test_delete_errors_delete_nothing(lib: Library) -> None:
    write_versions(lib, n=3)
    lib.delete("s", versions=[1])
    with pytest.raises(NoSuchVersionException, match="already deleted"):
        lib.delete("s", versions=[1])
    with pytest.raises(NoSuchVersionException):
        lib.delete("s", versions=[99])
    with pytest.raises(NoSuchVersionException):
        lib.delete("s", versions=[0, 99])  # one bad element: nothing is deleted
    with pytest.raises(NoSuchVersionException):
        lib.delete("missing", versions=[0])
    assert versions_of(lib, "s") == [0, 2]
    assert_frame_equal(lib.read("s", as_of=0).data, frame(3))


def test_delete_keeps_data_shared_with_live_versions(lib: Library) -> None:
    lib.write("s", frame(4))
    lib.append("s", frame(2, start="2024-02-01"))  # v1 reuses v0's segment
    lib.delete("s", versions=[0])
    assert_frame_equal(lib.read("s").data, pd.concat([frame(4), frame(2, start="2024-02-01")]))


def test_version_ids_after_delete(lib: Library) -> None:
    lib.write("s", frame(2))
    lib.write("s", frame(3))
    lib.delete("s")
    # as in ArcticDB: a delete takes no id; the next write continues after the highest id
    assert lib.write("s", frame(4)).version == 2
    assert versions_of(lib, "s") == [2]
    assert lib.read("s", as_of=-1).version == 2


def test_version_ids_are_arcticdbs_after_deletes_and_prunes(lib: Library) -> None:
    for i in range(3):
        assert lib.write("s", frame(i + 1)).version == i
    lib.delete("s", versions=[1])
    assert lib.write("s", frame(4)).version == 3
    assert versions_of(lib, "s") == [0, 2, 3]
    lib.prune_previous_versions("s")
    assert lib.write("s", frame(5)).version == 4
    assert lib.read("s", as_of=-2).version == 3  # counted back from the highest id ever written
    with pytest.raises(NoSuchVersionException, match="version -3"):
        lib.read("s", as_of=-3)  # id 2 was pruned; the error names what was asked
    assert_frame_equal(lib.read("s", as_of=3).data, frame(4))
    with pytest.raises(NoSuchVersionException, match="higher than the latest version 4"):
        lib.delete("s", versions=[9])
    lib.delete("s", versions=[3])
    assert [k.version for k in lib.list_versions("s", latest_only=True)] == [4]
    assert lib.write_metadata("s", {"m": 1}).version == 5
    assert lib.append("s", frame(2, start="2025-01-01")).version == 6
    assert lib.read_metadata("s", as_of=5).metadata == {"m": 1}


def test_latest_only_lists_the_latest_live_version_alone(lib: Library) -> None:
    for i in range(4):
        lib.write("s", frame(i + 1))
    lib.snapshot("snap", versions={"s": 1})
    lib.delete("s", versions=[1, 3])
    assert [k.version for k in lib.list_versions("s", latest_only=True)] == [2]
    assert sorted(k.version for k in lib.list_versions("s")) == [0, 1, 2]  # 1: held by the snapshot


# -- prune ----------------------------------------------------------------------------------------
@all_options
def test_prune_previous_versions(lib: Library) -> None:
    write_versions(lib)
    lib.snapshot("keep")  # holds v3
    lib.write("s", frame(5, base=99))
    before = data_keys(lib, "s")
    lib.prune_previous_versions("s")
    assert versions_of(lib, "s") == [3, 4]  # v3 is only held by the snapshot
    assert [k for k, v in lib.list_versions("s").items() if v.deleted] == [SymbolVersion("s", 3)]
    assert lib.read("s").version == 4
    assert_frame_equal(lib.read("s", as_of="keep").data, frame(3, base=30))
    assert data_keys(lib, "s") < before
    with pytest.raises(NoSuchVersionException):
        lib.read("s", as_of=0)


def test_prune_missing_symbol(lib: Library) -> None:
    with pytest.raises(StorageException):
        lib.prune_previous_versions("missing")


def test_prune_with_one_version_is_a_no_op(lib: Library) -> None:
    lib.write("s", frame(3))
    lib.prune_previous_versions("s")
    assert versions_of(lib, "s") == [0]
    assert_frame_equal(lib.read("s").data, frame(3))


def test_library_default_prune(ac: object) -> None:
    from arcticlite import LibraryOptions

    lib = ac.create_library("p", LibraryOptions(prune_previous_versions=True))  # type: ignore[attr-defined]
    write_versions(lib, n=3)
    assert versions_of(lib, "s") == [2]
    lib.write("s", frame(1), prune_previous_versions=False)  # per call overrides the default
    assert versions_of(lib, "s") == [2, 3]


# -- list_versions --------------------------------------------------------------------------------
def test_list_versions(lib: Library) -> None:
    write_versions(lib, n=3)
    lib.write("t", frame(1))
    vs = lib.list_versions("s")
    assert list(vs) == [SymbolVersion("s", 2), SymbolVersion("s", 1), SymbolVersion("s", 0)]  # newest first
    assert repr(SymbolVersion("s", 2)) == "s_v2"
    info = vs[SymbolVersion("s", 2)]
    assert isinstance(info, VersionInfo)
    assert info.deleted is False and info.snapshots == []
    assert str(info.date.tz) == "UTC"
    assert info.date == pd.Timestamp(lib.read("s").timestamp, unit="ns", tz="UTC")
    dates = [v.date for v in vs.values()]
    assert dates == sorted(dates, reverse=True)
    assert set(lib.list_versions()) == {SymbolVersion("s", v) for v in range(3)} | {SymbolVersion("t", 0)}
    assert set(lib.list_versions(latest_only=True)) == {SymbolVersion("s", 2), SymbolVersion("t", 0)}
    assert lib.list_versions("missing") == {}


def test_list_versions_with_snapshots(lib: Library) -> None:
    write_versions(lib, n=3)
    lib.snapshot("a", versions={"s": 1})
    lib.snapshot("b")
    lib.delete("s", versions=[1])
    vs = lib.list_versions("s")
    assert vs[SymbolVersion("s", 1)].deleted is True
    assert vs[SymbolVersion("s", 1)].snapshots == ["a"]
    assert vs[SymbolVersion("s", 2)].snapshots == ["b"]
    assert lib.list_versions("s", skip_snapshots=True).get(SymbolVersion("s", 2), None) is not None
    snap = lib.list_versions(snapshot="a")
    assert list(snap) == [SymbolVersion("s", 1)]
    assert snap[SymbolVersion("s", 1)].deleted is False  # documented ArcticDB limitation, kept
    with pytest.raises(NoDataFoundException):
        lib.list_versions(snapshot="nosnap")
    # a deleted version held by a snapshot: readable only through the snapshot (ArcticDB, PR #2699)
    with pytest.raises(NoSuchVersionException):
        lib.read("s", as_of=1)
    assert_frame_equal(lib.read("s", as_of="a").data, frame(3, base=10))


def test_list_versions_of_all_symbols_includes_deleted_symbols_held_by_snapshots(lib: Library) -> None:
    lib.write("gone", frame(2))
    lib.write("kept", frame(2))
    lib.snapshot("snap")
    lib.delete("gone")
    assert "gone" not in lib.list_symbols()
    vs = lib.list_versions()
    assert set(vs) == {SymbolVersion("gone", 0), SymbolVersion("kept", 0)}
    assert vs[SymbolVersion("gone", 0)].deleted is True and vs[SymbolVersion("gone", 0)].snapshots == ["snap"]
    assert set(lib.list_versions(skip_snapshots=True)) == {SymbolVersion("kept", 0)}
    lib.delete_snapshot("snap")
    assert set(lib.list_versions()) == {SymbolVersion("kept", 0)}


# -- snapshots ------------------------------------------------------------------------------------
@all_options
def test_snapshot_preserves_versions(lib: Library) -> None:
    lib.write("s", frame(4))
    lib.write("t", frame(2, base=5))
    lib.snapshot("snap", metadata={"why": "test"})
    lib.append("s", frame(2, start="2024-02-01"))
    lib.delete("t")
    lib.write("u", frame(1))
    assert set(lib.list_symbols(snapshot_name="snap")) == {"s", "t"}
    assert_frame_equal(lib.read("s", as_of="snap").data, frame(4))
    assert_frame_equal(lib.read("t", as_of="snap").data, frame(2, base=5))
    assert lib.has_symbol("t", as_of="snap") and not lib.has_symbol("t")
    assert not lib.has_symbol("u", as_of="snap")
    assert lib.list_snapshots() == {"snap": {"why": "test"}}
    assert lib.list_snapshots(load_metadata=False) == ["snap"]
    lib.delete_snapshot("snap")
    assert lib.list_snapshots() == {}
    with pytest.raises(NoDataFoundException):
        lib.read("t", as_of="snap")
    assert data_keys(lib, "t") == 0  # no live version or snapshot needs t's data any more
    assert_frame_equal(lib.read("s", as_of=0).data, frame(4))


def test_snapshot_skip_symbols_and_versions(lib: Library) -> None:
    write_versions(lib, n=3)
    lib.write("t", frame(1))
    lib.snapshot("skip", skip_symbols=["t"])
    assert lib.list_symbols(snapshot_name="skip") == ["s"]
    lib.snapshot("pick", versions={"s": 1})
    assert lib.list_symbols(snapshot_name="pick") == ["s"]
    assert lib.read("s", as_of="pick").version == 1
    assert lib.read("s", as_of="skip").version == 2


def test_snapshot_errors(lib: Library) -> None:
    with pytest.raises(NoSuchVersionException):  # empty library
        lib.snapshot("empty")
    write_versions(lib, n=2)
    lib.snapshot("snap")
    with pytest.raises(InternalException, match="already exists"):
        lib.snapshot("snap")
    with pytest.raises(InternalException):
        lib.snapshot("both", skip_symbols=["s"], versions={"s": 0})
    with pytest.raises(NoSuchVersionException):
        lib.snapshot("bad", versions={"s": 99})
    with pytest.raises(NoSuchVersionException):
        lib.snapshot("bad", versions={"missing": 0})
    for name in ("", "a*b", "x" * 255):
        with pytest.raises(UserInputException):
            lib.snapshot(name)
    with pytest.raises(NoDataFoundException):
        lib.delete_snapshot("nosnap")
    with pytest.raises(NoDataFoundException):
        lib.list_symbols(snapshot_name="nosnap")
    with pytest.raises(NoDataFoundException):
        lib.has_symbol("s", as_of="nosnap")
    assert lib.list_snapshots(load_metadata=False) == ["snap"]


def test_snapshot_keeps_data_through_delete_and_prune(lib: Library) -> None:
    lib.write("s", frame(6))
    lib.snapshot("snap")
    lib.write("s", frame(2, base=50))
    lib.prune_previous_versions("s")
    lib.delete("s")
    assert_frame_equal(lib.read("s", as_of="snap").data, frame(6))
    assert lib.list_versions("s")[SymbolVersion("s", 0)].deleted is True


def test_has_symbol(lib: Library) -> None:
    assert not lib.has_symbol("s")
    lib.write("s", frame(2))
    lib.write("s", frame(3))
    assert lib.has_symbol("s") and lib.has_symbol("s", as_of=0) and lib.has_symbol("s", as_of=1)
    assert not lib.has_symbol("s", as_of=2)
    lib.delete("s", versions=[0])
    assert not lib.has_symbol("s", as_of=0)
    lib.stage("staged", frame(2))
    assert not lib.has_symbol("staged")  # staged-only symbols are not there


def test_a_library_numbered_before_version_ids_reads_with_its_numbering() -> None:
    """Records written before version ids were separated from commit sequences carry no
    ``vid`` / ``top`` / ``vmap``: they keep their numbering (a delete took an id), and new
    commits continue after it."""
    from arcticlite import Arctic
    from arcticlite._envelope import KIND_REF, KIND_VERSION, seal, unseal

    ac = Arctic("mem://")
    lib = ac.create_library("old")
    lib.write("s", frame(2))
    lib.write("s", frame(3))
    lib.delete("s", versions=[0])  # commit 2: a tombstone, which old numbering counted
    store, keys = lib._store, lib._keys

    def strip(raw: bytes) -> bytes:
        h, blob = unseal(raw, KIND_VERSION)
        for k in ("vid", "top", "vmap"):
            h.pop(k)
        return seal(KIND_VERSION, h, bytes(blob))

    for seq in range(3):
        store.write(keys.version("s", seq), strip(store.read(keys.version("s", seq))))
    rh, body = unseal(store.read(keys.ref("s")), KIND_REF)
    store.write(keys.ref("s"), seal(KIND_REF, rh, strip(bytes(body))))
    lib = ac.get_library("old")
    assert lib.read("s").version == 1 and versions_of(lib, "s") == [1]
    assert_frame_equal(lib.read("s", as_of=1).data, frame(3))
    assert lib.write("s", frame(4)).version == 3  # after the old head's commit number
    assert versions_of(lib, "s") == [1, 3]
    assert lib.read("s", as_of=-1).version == 3


def test_delete_data_in_range_keeps_metadata_and_update_sets_it(lib: Library) -> None:
    lib.write("s", frame(5), metadata={"k": 1})
    lib.delete_data_in_range("s", (pd.Timestamp("2024-01-02"), pd.Timestamp("2024-01-02")))
    assert lib.read("s").metadata == {"k": 1}
    lib.update("s", frame(1, start="2024-01-03"))
    assert lib.read("s").metadata is None  # update writes the metadata it is given, None included


def test_has_symbol_counts_a_deleted_version_a_snapshot_holds(lib: Library) -> None:
    lib.write("s", frame(2))
    lib.snapshot("snap")
    lib.write("s", frame(3), prune_previous_versions=True)
    assert lib.has_symbol("s", as_of=0) and lib.has_symbol("s", as_of="snap")
    with pytest.raises(NoSuchVersionException):
        lib.read("s", as_of=0)
    assert not lib.has_symbol("s", as_of=5)


def test_prune_of_a_deleted_symbol_names_the_cause(lib: Library) -> None:
    lib.write("s", frame(2))
    lib.delete("s")
    with pytest.raises(InternalException, match="every version was deleted"):
        lib.prune_previous_versions("s")
