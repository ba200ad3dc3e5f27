"""gc() removes what crashes and lost races leave behind, and nothing a reader can reach."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import arcticlite as adb
from arcticlite.exceptions import StorageUnavailableError


@pytest.fixture
def lib(uri: str) -> adb.Library:
    return adb.Arctic(uri).create_library("gc", adb.LibraryOptions(rows_per_segment=3))


def _df(n: int, scale: float = 1.0) -> pd.DataFrame:
    return pd.DataFrame({"a": np.arange(n) * scale}, index=pd.date_range("2024-01-01", periods=n))


def _data_keys(lib: adb.Library) -> set[str]:
    return set(lib._store.list_keys("gc/tdata/")) | set(lib._store.list_keys("gc/tindex/"))


def _crash_during_commit(lib: adb.Library, monkeypatch: pytest.MonkeyPatch, data: pd.DataFrame) -> None:
    def crash(*_a: object, **_k: object) -> None:
        raise StorageUnavailableError("simulated crash at the commit point")

    from arcticlite.table import Operation

    with monkeypatch.context() as m:
        m.setattr(lib._engine, "commit", crash)
        # a crash kills the process: the clean-up a refused write does never runs
        m.setattr(Operation, "discard", lambda self: None)
        with pytest.raises(StorageUnavailableError):
            lib.write("s", data)


def test_crash_leaves_symbol_readable_and_gc_removes_orphans(
    lib: adb.Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib.write("s", _df(7))
    lib.append("s", _df(9).iloc[7:])
    before = _data_keys(lib)
    _crash_during_commit(lib, monkeypatch, _df(8, 10.0))
    orphans = _data_keys(lib) - before
    assert orphans, "the crashed write left its segments behind"
    pd.testing.assert_frame_equal(lib.read("s").data, _df(9), check_freq=False)

    first = lib.gc()  # default grace period: only records the orphans
    assert first.deleted == 0 and first.deferred == len(orphans)
    assert _data_keys(lib) >= orphans
    second = lib.gc(grace_period=0)
    assert second.deleted == len(orphans)
    assert _data_keys(lib) == before
    pd.testing.assert_frame_equal(lib.read("s").data, _df(9), check_freq=False)
    pd.testing.assert_frame_equal(lib.read("s", as_of=0).data, _df(7), check_freq=False)


def test_gc_keeps_snapshot_and_staged_data(lib: adb.Library) -> None:
    lib.write("s", _df(5))
    lib.snapshot("snap")
    lib.write("s", _df(4, 2.0), prune_previous_versions=True)
    lib.stage("t", _df(6))
    report = lib.gc(grace_period=0)
    assert report.deleted == 0
    pd.testing.assert_frame_equal(lib.read("s", as_of="snap").data, _df(5), check_freq=False)
    lib.finalize_staged_data("t")
    pd.testing.assert_frame_equal(lib.read("t").data, _df(6), check_freq=False)
    lib.delete_snapshot("snap")
    lib.gc(grace_period=0)
    pd.testing.assert_frame_equal(lib.read("s").data, _df(4, 2.0), check_freq=False)


def test_gc_dry_run_deletes_nothing(lib: adb.Library, monkeypatch: pytest.MonkeyPatch) -> None:
    lib.write("s", _df(4))
    _crash_during_commit(lib, monkeypatch, _df(5, 3.0))
    keys = _data_keys(lib)
    report = lib.gc(grace_period=0, dry_run=True)
    assert report.unreachable > 0 and report.deleted == 0
    assert _data_keys(lib) == keys


def test_a_refused_write_leaves_nothing_behind(lib: adb.Library) -> None:
    """A refused update / append (its segments already written) deletes them: gc finds nothing."""
    before = _data_keys(lib)
    with pytest.raises(adb.exceptions.InternalException):
        lib.update("missing", _df(5))  # no such symbol, no upsert
    lib.write("s", _df(5))
    with pytest.raises(adb.exceptions.ArcticException):
        lib.append("s", _df(7))  # starts before the last stored row
    assert _data_keys(lib) - before == {k for k in _data_keys(lib) if "/s/" in k}
    report = lib.gc(grace_period=0, dry_run=True)
    assert report.unreachable == 0


def test_gc_refuses_to_delete_when_a_kept_versions_index_node_is_missing(lib: adb.Library) -> None:
    """A lost index node would make its version's segments look unreachable: gc names the
    damage and deletes nothing, and neither does the clean-up after a version delete."""
    lib.write("s", _df(7))
    lib.update("s", _df(2, 5.0))  # shares segments with version 0
    lib.write("t", _df(4))
    lost = sorted(lib._store.list_keys("gc/tindex/t/"))[0]
    lib._store.delete([lost])
    before = _data_keys(lib)
    with pytest.raises(adb.exceptions.CorruptDataError, match="nothing was deleted"):
        lib.gc(grace_period=0)
    assert _data_keys(lib) == before
    lib.write("t", _df(5))
    lib.delete("t", versions=[1])  # the clean-up cannot walk version 0: it deletes nothing
    assert _data_keys(lib) >= before
    pd.testing.assert_frame_equal(lib.read("s").data, pd.concat([_df(2, 5.0), _df(7).iloc[2:]]), check_freq=False)


def test_gc_keeps_a_first_version_whose_ref_was_never_written(s3_uri: str) -> None:
    # on S3 a writer killed after creating a new symbol's version key, before its ref, leaves a
    # live version (the ref is a hint, readers follow the chain): gc must keep its data
    lib = adb.Arctic(s3_uri).create_library("gc", adb.LibraryOptions(rows_per_segment=3))
    lib.write("other", _df(2))
    lib.write("s", _df(7))
    lib._store.delete([lib._keys.ref("s")])
    assert lib.read("s").version == 0
    report = lib.gc(grace_period=0)
    assert report.deleted == 0
    pd.testing.assert_frame_equal(lib.read("s").data, _df(7), check_freq=False)
    assert lib.read("s", as_of=0).version == 0
