"""ArcticDB's documented examples (the ``Examples`` sections of its ``Arctic`` / ``Library``
docstrings), run against arcticlite on every backend: a user switching imports gets the same
results."""

from __future__ import annotations

import datetime

import pandas as pd
import pytest
from enginehelpers import assert_frame_equal

import arcticlite as adb
from arcticlite import Arctic, Library


def test_arctic_quickstart(ac: Arctic) -> None:
    ac.create_library("travel_data")
    assert ac.list_libraries() == ["travel_data"]
    lib = ac["travel_data"]
    df = pd.DataFrame({"column": [5, 6, 7]})
    lib.write("symbol", df, metadata={"my_dictionary": "is_great"})
    item = lib.read("symbol")
    assert_frame_equal(item.data, df)
    assert item.metadata == {"my_dictionary": "is_great"}
    ac.delete_library("travel_data")
    assert ac.list_libraries() == []


def test_write_pickle_example(lib: Library) -> None:
    lib.write_pickle("symbol", [1, 2, 3])
    assert lib.read("symbol").data == [1, 2, 3]


def test_write_batch_example(lib: Library) -> None:
    payload1 = adb.WritePayload("symbol_1", pd.DataFrame({"a": [1]}), metadata={"the": "metadata"})
    payload2 = adb.WritePayload("symbol_2", pd.DataFrame({"b": [2]}), metadata={"the": "metadata"})
    items = lib.write_batch([payload1, payload2])
    assert [i.symbol for i in items] == ["symbol_1", "symbol_2"]
    assert lib.read("symbol_1").metadata == {"the": "metadata"}
    assert_frame_equal(lib.read("symbol_2").data, pd.DataFrame({"b": [2]}))


def test_append_example(lib: Library) -> None:
    df = pd.DataFrame({"column": [1, 2, 3]}, index=pd.date_range(start="1/1/2018", end="1/03/2018"))
    lib.write("symbol", df)
    to_append_df = pd.DataFrame({"column": [4, 5, 6]}, index=pd.date_range(start="1/4/2018", end="1/06/2018"))
    lib.append("symbol", to_append_df)
    expected = pd.DataFrame({"column": [1, 2, 3, 4, 5, 6]}, index=pd.date_range("2018-01-01", "2018-01-06"))
    assert_frame_equal(lib.read("symbol").data, expected)


def test_update_example(lib: Library) -> None:
    df = pd.DataFrame({"column": [1, 2, 3, 4]}, index=pd.date_range(start="1/1/2018", end="1/4/2018"))
    lib.write("symbol", df)
    update_df = pd.DataFrame({"column": [400, 40]}, index=pd.date_range(start="1/1/2018", end="1/3/2018", freq="2D"))
    lib.update("symbol", update_df)
    expected = pd.DataFrame({"column": [400, 40, 4]},
                            index=pd.DatetimeIndex(["2018-01-01", "2018-01-03", "2018-01-04"]))
    assert_frame_equal(lib.read("symbol").data, expected)


def test_delete_data_in_range_example(lib: Library) -> None:
    df = pd.DataFrame({"column": [5, 6, 7, 8]}, index=pd.date_range(start="1/1/2018", end="1/4/2018"))
    lib.write("symbol", df)
    lib.delete_data_in_range("symbol", date_range=(datetime.datetime(2018, 1, 1), datetime.datetime(2018, 1, 2)))
    assert lib["symbol"].version == 1
    expected = pd.DataFrame({"column": [7, 8]}, index=pd.date_range("2018-01-03", "2018-01-04"))
    assert_frame_equal(lib["symbol"].data, expected)


def test_read_batch_example(lib: Library) -> None:
    lib.write("s1", pd.DataFrame({"x": [0]}))
    lib.write("s2", pd.DataFrame({"col": [1, 2, 3]}))
    lib.write("s2", pd.DataFrame({"x": [0]}), prune_previous_versions=False)
    lib.write("s3", pd.DataFrame({"x": [0]}))
    batch = lib.read_batch(["s1", adb.ReadRequest("s2", as_of=0), "s3", adb.ReadRequest("s2", as_of=1000)])
    assert_frame_equal(batch[1].data, pd.DataFrame({"col": [1, 2, 3]}))
    assert batch[0].symbol == "s1" and batch[2].symbol == "s3"
    err = batch[3]
    assert isinstance(err, adb.DataError)
    assert err.symbol == "s2"
    assert err.version_request_type == adb.VersionRequestType.SPECIFIC
    assert err.version_request_data == 1000
    assert err.error_code == adb.ErrorCode.E_NO_SUCH_VERSION
    assert err.error_category == adb.ErrorCategory.MISSING_DATA


def test_snapshot_example(lib: Library) -> None:
    lib.write("symbol", pd.DataFrame({"x": [1]}))
    lib.snapshot("test_snapshot")
    assert lib.list_snapshots() == {"test_snapshot": None}
    lib.write("symbol", pd.DataFrame({"x": [2]}))
    assert_frame_equal(lib.read("symbol", as_of="test_snapshot").data, pd.DataFrame({"x": [1]}))


def test_finalize_staged_data_example(lib: Library) -> None:
    lib.write("sym", pd.DataFrame({"col": [3, 4]}, index=pd.DatetimeIndex([pd.Timestamp(2024, 1, 3), pd.Timestamp(2024, 1, 4)])), staged=True)
    lib.write("sym", pd.DataFrame({"col": [1, 2]}, index=pd.DatetimeIndex([pd.Timestamp(2024, 1, 1), pd.Timestamp(2024, 1, 2)])), staged=True)
    lib.finalize_staged_data("sym")
    expected = pd.DataFrame({"col": [1, 2, 3, 4]}, index=pd.date_range("2024-01-01", periods=4))
    assert_frame_equal(lib.read("sym").data, expected)


def test_sort_and_finalize_staged_data_example(lib: Library) -> None:
    # ArcticDB's docstring stages an unsorted frame with write(staged=True); its own later tests
    # pass validate_index=False for that (a sorted index is validated by default), as here.
    lib.write("sym", pd.DataFrame({"col": [2, 4]}, index=pd.DatetimeIndex([pd.Timestamp(2024, 1, 2), pd.Timestamp(2024, 1, 4)])), staged=True)
    lib.write("sym", pd.DataFrame({"col": [3, 1]}, index=pd.DatetimeIndex([pd.Timestamp(2024, 1, 3), pd.Timestamp(2024, 1, 1)])), staged=True, validate_index=False)
    lib.sort_and_finalize_staged_data("sym")
    expected = pd.DataFrame({"col": [1, 2, 3, 4]}, index=pd.date_range("2024-01-01", periods=4))
    assert_frame_equal(lib.read("sym").data, expected)


def test_list_versions_example(lib: Library) -> None:
    lib.write("symbol", pd.DataFrame({"x": [1]}))
    lib.write("symbol", pd.DataFrame({"x": [2]}))
    versions = lib.list_versions("symbol")
    assert [(k.symbol, k.version) for k in versions] == [("symbol", 1), ("symbol", 0)]
    assert not any(v.deleted for v in versions.values())


def test_empty_frames(lib: Library) -> None:
    # ArcticDB: an empty frame is written with an empty DatetimeIndex; a later DatetimeIndex
    # append works and a RangeIndex append raises NormalizationException (reference §2, §3)
    from arcticlite.exceptions import NormalizationException

    lib.write("e", pd.DataFrame())
    got = lib.read("e").data
    assert len(got) == 0 and list(got.columns) == []
    assert isinstance(got.index, pd.DatetimeIndex)
    lib.write("e2", pd.DataFrame({"a": pd.Series([], dtype="int64")}))
    assert isinstance(lib.read("e2").data.index, pd.DatetimeIndex)
    with pytest.raises(NormalizationException):
        lib.append("e2", pd.DataFrame({"a": [1]}))
    lib.append("e2", pd.DataFrame({"a": [1]}, index=pd.DatetimeIndex(["2024-01-01"])))
    assert_frame_equal(lib.read("e2").data, pd.DataFrame({"a": [1]}, index=pd.DatetimeIndex(["2024-01-01"])))
