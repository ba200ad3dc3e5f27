"""Details a user switching from ArcticDB relies on, found by replaying random operation
sequences on both engines: each test states what ArcticDB 6.28 does."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import arcticlite as adb
from arcticlite.exceptions import (
    InternalException,
    NormalizationException,
    NoSuchVersionException,
    SchemaException,
    StorageException,
    UnsortedDataException,
    UnsupportedLibraryOptionValue,
    UserInputException,
)


@pytest.fixture
def lib(tmp_path) -> adb.Library:
    return adb.Arctic(f"lmdb://{tmp_path}/db").get_library("l", create_if_missing=True)


def _df(n: int = 3, start: str = "2024-01-01", **cols: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"a": np.arange(n), **cols}, index=pd.date_range(start, periods=n))


@pytest.mark.parametrize("rows", [2, 0])
def test_update_with_no_new_row_in_its_date_range_keeps_the_stored_rows(lib: adb.Library, rows: int) -> None:
    lib.write("s", _df(6, "2024-01-08"))
    item = lib.update("s", _df(rows, "2024-01-09"), date_range=(pd.Timestamp("2024-01-12"), pd.Timestamp("2024-01-13")))
    assert item.version == 1  # a new version, as ArcticDB makes
    pd.testing.assert_frame_equal(lib.read("s").data, _df(6, "2024-01-08"), check_freq=False)


def test_write_pickle_stores_a_frame_as_write_does(lib: adb.Library) -> None:
    lib.write_pickle("s", _df())
    assert [c.name for c in lib.get_description("s").columns] == ["a"]
    assert lib.append("s", _df(1, "2024-02-01")).version == 1  # appendable: not a pickle
    pd.testing.assert_frame_equal(lib.read("s").data, pd.concat([_df(), _df(1, "2024-02-01")]), check_freq=False)
    lib.write_pickle("u", _df().iloc[::-1])  # as ArcticDB: no index validation
    assert lib.get_description("u").sorted == "DESCENDING"
    lib.write_pickle("p", pd.DataFrame({"a": [{"x": 1}]}))  # does not normalise: pickled
    assert lib.read("p").data["a"].tolist() == [{"x": 1}]


def test_a_failed_finalize_deletes_the_staged_data_when_asked(lib: adb.Library) -> None:
    lib.stage("s", _df(2))
    lib.stage("s", _df(2, "2024-02-01", b=[1.0, 2.0]))
    with pytest.raises(SchemaException):
        lib.finalize_staged_data("s", delete_staged_data_on_failure=True)
    assert lib.get_staged_symbols() == [] and not lib.has_symbol("s")


def test_stage_results_of_another_symbol_are_refused(lib: adb.Library) -> None:
    lib.stage("a", _df(2))
    mine, theirs = lib.stage("a", _df(2, "2024-02-01")), lib.stage("b", _df(2))
    with pytest.raises(UserInputException, match="E_STAGE_RESULT_WITH_INCORRECT_SYMBOL"):
        lib.finalize_staged_data("a", stage_results=[mine, theirs])
    assert lib.list_symbols() == [] and sorted(lib.get_staged_symbols()) == ["a", "b"]


def test_finalizing_a_staged_frame_that_is_not_sorted_is_refused(lib: adb.Library) -> None:
    unsorted = _df(4).iloc[[2, 0, 3, 1]]
    lib.stage("s", unsorted, validate_index=False)
    for mode in ("write", "append"):
        with pytest.raises(UnsortedDataException, match="unordered segment"):
            lib.finalize_staged_data("s", mode=mode)
    assert not lib.has_symbol("s")
    assert lib.sort_and_finalize_staged_data("s").version == 0  # sorting it is the way
    assert lib.read("s").data.index.is_monotonic_increasing


def test_pickled_data_counts_as_compact(lib: adb.Library) -> None:
    lib.write_pickle("p", [1])
    assert lib.compact_data("p").version == 0 and lib.is_symbol_fragmented("p") is False
    with pytest.raises(InternalException):
        lib.is_symbol_fragmented("missing")
    with pytest.raises(InternalException):
        lib.defragment_symbol_data("missing")


def test_list_versions_of_a_snapshot_names_every_snapshot_holding_them(lib: adb.Library) -> None:
    lib.write("s", _df())
    lib.snapshot("B")
    lib.write("s", _df())
    lib.snapshot("A")
    lib.snapshot("C")
    got = lib.list_versions("s", snapshot="A")
    assert [(k.version, v.snapshots) for k, v in got.items()] == [(1, ["A", "C"])]
    assert [v.snapshots for v in lib.list_versions(snapshot="A", skip_snapshots=True).values()] == [[]]


def test_update_with_upsert_writes_a_range_indexed_frame_to_a_new_symbol(lib: adb.Library) -> None:
    frame = pd.DataFrame({"a": [1, 2]}, index=pd.RangeIndex(5, 7))
    assert lib.update("r", frame, upsert=True).version == 0
    pd.testing.assert_frame_equal(lib.read("r").data, frame)
    with pytest.raises(InternalException, match="non-timeseries"):
        lib.update("r", frame, upsert=True)  # it exists now: a RangeIndex is not updated


def test_reads_without_any_column(lib: adb.Library) -> None:
    lib.write("s", _df())
    assert isinstance(lib.read("s", columns=[]).data.columns, pd.RangeIndex)
    lib.write("v", pd.Series([1.5, 2.5], index=pd.date_range("2024", periods=2), name="v"))
    got = lib.read("v", columns=["x"]).data
    assert len(got) == 0 and got.name == "v" and got.dtype == object


def test_an_empty_append_or_update_of_another_kind_is_a_new_version_of_the_same_data(lib: adb.Library) -> None:
    lib.write_pickle("p", [1], metadata={"m": 1})
    assert lib.append("p", _df(0), metadata={"m": 2}).version == 1
    assert lib.read("p").data == [1] and lib.read_metadata("p").metadata == {"m": 2}
    series = pd.Series([1.0], index=pd.date_range("2024", periods=1), name="v")
    lib.write("v", series)
    assert lib.update("v", _df(0)).version == 1
    pd.testing.assert_series_equal(lib.read("v").data, series, check_freq=False)
    with pytest.raises(NormalizationException):
        lib.append("v", _df(1, "2025-01-01"))  # with rows, the kinds must match


def test_finalize_appends_staged_rows_after_the_stored_row_numbers(lib: adb.Library) -> None:
    lib.write("r", pd.DataFrame({"a": [0, 1, 2]}))
    lib.write("r", pd.DataFrame({"a": [3, 4]}, index=pd.RangeIndex(10, 12)), staged=True)
    assert lib.finalize_staged_data("r", mode="append").version == 1
    pd.testing.assert_frame_equal(lib.read("r").data, pd.DataFrame({"a": [0, 1, 2, 3, 4]}))


def test_batches_report_a_missing_symbol_as_missing_data(lib: adb.Library) -> None:
    got = lib.compact_data_batch(["nope"]) + lib.update_batch([adb.UpdatePayload("nope", _df())])
    assert [(e.error_code, e.error_category) for e in got] == \
        [(adb.ErrorCode.E_NO_SUCH_VERSION, adb.ErrorCategory.MISSING_DATA)] * 2


def test_pickled_data_errors_come_in_arcticdbs_order(lib: adb.Library) -> None:
    lib.write_pickle("p", [1])
    with pytest.raises(UserInputException):
        lib.read("p", columns=[])
    with pytest.raises(InternalException, match="pickled"):
        lib.read("p", columns=["x"])
    with pytest.raises(InternalException, match="pickled") as info:
        lib.append("p", _df(4).iloc[[2, 0, 3, 1]])  # pickled before unsorted, as ArcticDB
    assert not isinstance(info.value, UnsortedDataException)


def test_appending_longer_strings_to_a_numpy_string_array_keeps_them(lib: adb.Library) -> None:
    lib.write("s", np.array(["a"]))
    lib.append("s", np.array(["", "bcd"]))
    got = lib.read("s").data
    assert got.tolist() == ["a", "", "bcd"] and got.dtype == np.dtype("<U3")


def test_negation_and_abs_widen_small_signed_ints(lib: adb.Library) -> None:
    lib.write("s", pd.DataFrame({"i8": np.array([-128, 5], "int8")}, index=pd.date_range("2020", periods=2)))
    q = adb.QueryBuilder()
    got = lib.read("s", query_builder=q.apply("p", -q["i8"])).data["p"]
    assert got.dtype == np.int16 and got.tolist() == [128, -5]
    q = adb.QueryBuilder()
    assert len(lib.read("s", query_builder=q[abs(q["i8"]) > 100]).data) == 1


def test_numpy_integer_constants_are_typed_by_value(lib: adb.Library) -> None:
    lib.write("s", pd.DataFrame({"u8": np.array([1, 250], "uint8")}, index=pd.date_range("2020", periods=2)))
    for k, dtype in [(np.int64(7), np.int16), (np.int64(300), np.int32), (np.uint64(7), np.uint16), (7, np.uint16)]:
        q = adb.QueryBuilder()
        assert lib.read("s", query_builder=q.apply("p", q["u8"] + k)).data["p"].dtype == dtype


def test_bool_min_max_of_a_group_without_values_is_false(tmp_path) -> None:
    lib = adb.Arctic(f"lmdb://{tmp_path}/dyn").get_library(
        "d", create_if_missing=True, library_options=adb.LibraryOptions(dynamic_schema=True))
    lib.write("s", pd.DataFrame({"k": [1, 2], "v": [True, False]}, index=pd.date_range("2020", periods=2, freq="h")))
    lib.append("s", pd.DataFrame({"k": [3]}, index=pd.date_range("2020-01-02", periods=1, freq="h")))
    got = lib.read("s", query_builder=adb.QueryBuilder().groupby("k").agg({"v": "max"})).data
    assert got["v"].dtype == bool and got["v"].tolist() == [True, False, False]


def test_an_empty_multiindex_frame_takes_the_types_of_later_rows(lib: adb.Library) -> None:
    empty = pd.MultiIndex.from_arrays([pd.DatetimeIndex([]), pd.Index([], dtype=object)], names=["d", "k"])
    lib.write("s", pd.DataFrame({"x": pd.Series([], dtype="float64")}, index=empty))
    rows = pd.DataFrame({"x": [1.0, 2.0]},
                        index=pd.MultiIndex.from_arrays([pd.date_range("2020", periods=2), ["a", "b"]], names=["d", "k"]))
    assert lib.append("s", rows).version == 1
    pd.testing.assert_frame_equal(lib.read("s").data, rows, check_freq=False)


def test_options_module_and_option_value_errors(tmp_path) -> None:
    assert adb.options.ModifiableLibraryOption.DEDUP is adb.ModifiableLibraryOption.DEDUP
    ac = adb.Arctic(f"lmdb://{tmp_path}/o")
    lib = ac.get_library("l", create_if_missing=True)
    with pytest.raises(UnsupportedLibraryOptionValue):
        ac.modify_library_option(lib, adb.options.ModifiableLibraryOption.DEDUP, 5)
    assert lib.options().dedup is False


def test_description_types_are_type_descriptors(lib: adb.Library) -> None:
    lib.write("s", pd.DataFrame({"i": [1, 2], "f": [0.5, 1.0], "s": ["x", "y"], "n": [None, None]},
                                index=pd.date_range("2024-01-01", periods=2, tz="UTC")))
    d = lib.get_description("s")
    tds = [c.dtype for c in d.columns]
    assert [td.data_type() for td in tds] == [adb.library.DataType.INT64, adb.library.DataType.FLOAT64,
                                              adb.library.DataType.UTF_DYNAMIC64, adb.library.DataType.UTF_DYNAMIC64]
    assert repr(tds[0]) == "TD<type=INT64, dim=0>" and tds[0].dimension == 0
    assert tds[0].value_type == adb.library.ValueType.INT and tds[2].value_type == adb.library.ValueType.UTF_DYNAMIC
    assert d.index[0].dtype.data_type() == adb.library.DataType.NANOSECONDS_UTC64
    assert tds[0] == "INT64" and tds[0] != tds[1]  # arcticlite also compares a descriptor with its type's name


def test_get_library_of_a_name_no_library_may_have_is_not_found(tmp_path) -> None:
    ac = adb.Arctic(f"lmdb://{tmp_path}/n")
    with pytest.raises(adb.exceptions.LibraryNotFound):
        ac.get_library("a*b")
    with pytest.raises(adb.exceptions.LibraryNotFound):
        ac["a*b"]
    with pytest.raises(UserInputException):
        ac.get_library("a*b", create_if_missing=True)
    assert ac.list_libraries() == []


def test_snapshot_of_a_deleted_version_another_snapshot_holds(lib: adb.Library) -> None:
    # ArcticDB: a version a snapshot keeps alive may be named in snapshot(versions=)
    lib.write("s", _df())
    lib.write("s", _df(4))
    lib.snapshot("a")
    lib.delete("s")
    lib.snapshot("b", versions={"s": 1})
    lib.delete_snapshot("a")  # b alone keeps version 1 now
    assert sorted(lib.list_snapshots()) == ["b"] and lib.list_symbols(snapshot_name="b") == ["s"]
    pd.testing.assert_frame_equal(lib.read("s", as_of="b").data, _df(4), check_freq=False)
    with pytest.raises(NoSuchVersionException):  # deleted and held by no snapshot: refused
        lib.snapshot("c", versions={"s": 0})
    assert sorted(lib.list_snapshots()) == ["b"]


def test_snapshot_with_empty_versions_takes_every_symbol(lib: adb.Library) -> None:
    # ArcticDB: versions={} (like skip_symbols=[]) is "not given"; only two non-empty ones clash
    lib.write("s", _df())
    lib.snapshot("e", versions={})
    lib.snapshot("f", versions={"s": 0}, skip_symbols=[])
    assert lib.list_symbols(snapshot_name="e") == ["s"] and lib.list_symbols(snapshot_name="f") == ["s"]
    with pytest.raises(NoSuchVersionException):  # every symbol skipped: nothing to snapshot
        lib.snapshot("g", versions={}, skip_symbols=["s"])
    with pytest.raises(InternalException):
        lib.snapshot("h", versions={"s": 0}, skip_symbols=["s"])
    assert sorted(lib.list_snapshots()) == ["e", "f"]


def test_write_pickle_stores_a_numpy_array_as_write_does(lib: adb.Library) -> None:
    # ArcticDB: an array (or series) that normalises is stored natively, so it can be appended to
    lib.write_pickle("s", np.arange(3))
    assert [c.name for c in lib.get_description("s").columns] == ["ndarray"]  # not "bytes": not pickled
    assert lib.append("s", np.arange(2)).version == 1
    np.testing.assert_array_equal(lib.read("s").data, np.array([0, 1, 2, 0, 1]))
    lib.write_pickle("t", pd.Series([1, 2], name="x"))
    assert lib.append("t", pd.Series([3], name="x", index=pd.RangeIndex(2, 3))).version == 1
    assert lib.read("t").data.tolist() == [1, 2, 3]
    masked = np.ma.masked_array([1, 2], mask=[False, True])  # write would lose the mask: pickled
    lib.write_pickle("m", masked)
    assert lib.read("m").data.mask.tolist() == [False, True]
    lib.write_pickle("c", np.array([1 + 2j]))  # does not normalise: pickled
    assert lib.read("c").data.tolist() == [1 + 2j]


def test_a_library_handle_cannot_write_once_its_library_is_deleted(tmp_path) -> None:
    # ArcticDB (LMDB): the handle's environment is gone, writes raise StorageException
    ac = adb.Arctic(f"lmdb://{tmp_path}/d")
    lib = ac.create_library("x")
    lib.write("s", _df())
    opened = ac.get_library("x")
    ac.delete_library("x")
    for handle in (lib, opened):
        with pytest.raises(StorageException, match="'x' was deleted"):
            handle.write("t", _df())
    with pytest.raises(StorageException, match="'x' was deleted"):
        lib.snapshot("snap")
    assert ac.list_libraries() == [] and list(ac._store.list_keys("x/")) == []  # nothing left behind
    again = ac.create_library("x")
    with pytest.raises(StorageException, match="created again"):  # the old handle stays dead
        lib.write("t", _df())
    assert again.list_symbols() == [] and again.write("t", _df()).version == 0


def test_a_numpy_array_symbol_refuses_processing(lib: adb.Library) -> None:
    # ArcticDB: SchemaException E_OPERATION_NOT_SUPPORTED_WITH_NUMPY_ARRAY for any row or column selection
    lib.write("s", np.arange(6))
    for op, call in [("head", lambda: lib.head("s", 2)), ("tail", lambda: lib.tail("s", 2)),
                     ("row_range", lambda: lib.read("s", row_range=(0, 2))),
                     ("columns", lambda: lib.read("s", columns=[])),
                     ("query_builder", lambda: lib.read("s", query_builder=adb.QueryBuilder().head(2)))]:
        with pytest.raises(SchemaException, match=f"E_OPERATION_NOT_SUPPORTED_WITH_NUMPY_ARRAY.*{op}.*numpy array"):
            call()
    np.testing.assert_array_equal(lib.read("s", query_builder=adb.QueryBuilder()).data, np.arange(6))
    np.testing.assert_array_equal(lib.read("s").data, np.arange(6))


def _timed_multiindex_frame() -> pd.DataFrame:
    mi = pd.MultiIndex.from_arrays([pd.date_range("2024-01-05", periods=3), ["a", "b", "c"]], names=["d", "k"])
    return pd.DataFrame({"a": [1, 2, 3]}, index=mi)


def test_description_date_range_of_a_multiindex_is_its_first_level(lib: adb.Library) -> None:
    # ArcticDB: the first and last value of the timestamp level
    lib.write("s", _timed_multiindex_frame())
    assert lib.get_description("s").date_range == (pd.Timestamp("2024-01-05"), pd.Timestamp("2024-01-07"))


def test_read_of_no_column_of_a_multiindex_frame_has_empty_object_columns(lib: adb.Library) -> None:
    # ArcticDB: Index([], dtype=object) for a MultiIndex frame (a RangeIndex for other frames)
    lib.write("s", _timed_multiindex_frame())
    pd.testing.assert_index_equal(lib.read("s", columns=[]).data.columns, pd.Index([], dtype=object))


def test_description_of_a_series_lists_its_timestamp_index_as_a_column(lib: adb.Library) -> None:
    """ArcticDB describes a Series with its timestamp index as the first column (named as the
    index, else "index"), no index, an unnamed Series' values as column "0", and the date range
    in naive UTC even when the index has a zone; a Series on a RangeIndex has only its values."""
    days = pd.date_range("2024-01-01", periods=3, tz="America/New_York")
    lib.write("tz", pd.Series([1.0, 2.0, 3.0], index=days, name="px"))
    lib.write("named", pd.Series([1.0, 2.0], index=pd.date_range("2024-01-01", periods=2, name="ts")))
    lib.write("plain", pd.Series([1.0, 2.0], name="px"))
    d = lib.get_description("tz")
    assert [(c.name, str(c.dtype)) for c in d.columns] == [("index", "TD<type=NANOSECONDS_UTC64, dim=0>"),
                                                            ("px", "TD<type=FLOAT64, dim=0>")]
    assert d.index == () and d.index_type == "NA" and d.row_count == 3
    assert d.date_range == (pd.Timestamp("2024-01-01 05:00"), pd.Timestamp("2024-01-03 05:00"))
    assert [c.name for c in lib.get_description("named").columns] == ["ts", "0"]
    assert [c.name for c in lib.get_description("plain").columns] == ["px"]
    assert lib.read("tz").data.index.equals(days)  # the read is unchanged


def test_tail_of_no_columns_of_a_range_index_keeps_the_rows_labels(lib: adb.Library) -> None:
    """ArcticDB numbers a row slice of a RangeIndex from the stored start (``tail(2)`` of
    10, 12, ..., 26 is labelled 10, 12), but ``tail(n, columns=[])`` keeps the labels of the
    rows it is."""
    lib.write("r", pd.DataFrame({"a": np.arange(9)}, index=pd.RangeIndex(10, 28, 2)))
    assert list(lib.tail("r", 3, columns=[]).data.index) == [22, 24, 26]
    assert list(lib.tail("r", 2).data.index) == [10, 12]
    assert list(lib.head("r", 2, columns=[]).data.index) == [10, 12]


def test_columns_none_of_which_is_stored_give_no_rows_without_an_index_column(lib: adb.Library) -> None:
    """A frame on a RangeIndex stores no index column: asked only for columns it does not hold,
    ArcticDB returns an empty frame (RangeIndex(0)); a timestamp index keeps its rows, and
    ``columns=[]`` keeps the rows of either."""
    lib.write("r", pd.DataFrame({"f": np.arange(6.0)}, index=pd.RangeIndex(1, 7, name="rn")))
    lib.write("t", pd.DataFrame({"f": np.arange(6.0)}, index=pd.date_range("2024-01-01", periods=6)))
    for got in (lib.read("r", columns=["zz"]).data, lib.head("r", 2, columns=["zz"]).data,
                lib.read("r", columns=["zz"], lazy=True).collect().data):
        assert got.shape == (0, 0) and got.index.equals(pd.RangeIndex(0))
    assert lib.read("r", columns=[]).data.shape == (6, 0)
    assert lib.read("t", columns=["zz"]).data.shape == (6, 0)
    assert list(lib.read("r", columns=["zz", "f"]).data.columns) == ["f"]


def test_the_index_of_a_range_indexed_frame_is_described_as_a_row_count(lib: adb.Library) -> None:
    """ArcticDB describes a RangeIndex (and a timestamp index begun by a 0-row write) with a
    protobuf type printed ``value_type: INT``: arcticlite prints and compares the same."""
    lib.write("r", pd.DataFrame({"a": [1, 2]}))
    lib.write("e", pd.DataFrame({"a": np.array([], np.int64)}, index=pd.DatetimeIndex([])))
    for sym in ("r", "e"):
        dtype = lib.get_description(sym).index[0].dtype
        assert str(dtype) == "value_type: INT\n" and dtype.value_type == 2 and dtype.size_bits == 0
    assert lib.get_description("r").index[0].dtype == lib.get_description("e").index[0].dtype


def test_an_update_without_rows_of_a_range_indexed_symbol_is_a_new_version(lib: adb.Library) -> None:
    """ArcticDB refuses to update a symbol on a RangeIndex, except with no rows: then, as on a
    timestamp index, a new version of the same rows."""
    lib.write("r", pd.DataFrame({"a": np.arange(3)}))
    assert lib.update("r", pd.DataFrame({"a": np.array([], np.int64)})).version == 1
    assert lib.read("r").data["a"].tolist() == [0, 1, 2]
    with pytest.raises(adb.exceptions.InternalException, match="non-timeseries"):
        lib.update("r", pd.DataFrame({"a": [9]}, index=pd.RangeIndex(1, 2)))
    assert len(lib.list_versions("r")) == 2


def test_a_read_request_with_both_ranges_refuses_the_whole_batch(lib: adb.Library) -> None:
    from arcticlite.exceptions import ArcticException

    lib.write("x", _df())
    both = adb.ReadRequest("x", date_range=(pd.Timestamp("2024-01-01"), None), row_range=(0, 1))
    with pytest.raises(ArcticException, match="Date range and row range both specified"):
        lib.read_batch(["x", both])


def test_index_columns_of_pickled_data_are_refused_as_user_input_first(lib: adb.Library) -> None:
    lib.write_metadata("p", {"m": 1})  # a version of pickled None
    for call in (lambda: lib.head("p", 1, columns=[]), lambda: lib.tail("p", 1, columns=[]),
                 lambda: lib.read("p", columns=[], row_range=(0, 1)),
                 lambda: lib.read("p", columns=[], query_builder=adb.QueryBuilder().head(1))):
        with pytest.raises(UserInputException, match="Reading index columns is not supported with pickled data"):
            call()
    with pytest.raises(InternalException):
        lib.head("p", 1, columns=["a"])


@pytest.mark.parametrize("sort", [False, True])
def test_finalizing_staged_data_onto_pickled_data_is_a_schema_mismatch(lib: adb.Library, sort: bool) -> None:
    lib.write_metadata("p", {"m": 1})
    lib.stage("p", _df())
    with pytest.raises(SchemaException, match="pickled data"):
        (lib.sort_and_finalize_staged_data if sort else lib.finalize_staged_data)("p", mode="append")
    assert len(lib.list_versions("p")) == 1
    with pytest.raises(InternalException, match="Cannot append to pickled data"):
        lib.append("p", _df())


def test_an_upsert_with_no_row_in_its_date_range_is_described_as_a_write_of_no_rows(lib: adb.Library) -> None:
    one = _df(1, "2024-01-02")
    lib.update("u", one, upsert=True, date_range=(pd.Timestamp("2024-02-01"), None))
    lib.write("w", one.iloc[:0])
    du, dw = lib.get_description("u"), lib.get_description("w")
    assert du.row_count == dw.row_count == 0 and lib.read("u").data.empty
    assert [c.name for c in du.columns] == [c.name for c in dw.columns] == ["index", "a"]
    assert [i.name for i in du.index] == ["index"] and str(du.index[0].dtype) == str(dw.index[0].dtype)


def test_dynamic_schema_appends_check_the_order_before_the_types(tmp_path) -> None:
    from arcticlite.exceptions import AppendOrderException, StreamDescriptorMismatch

    ac = adb.Arctic(f"lmdb://{tmp_path}/db")
    dyn = ac.create_library("dyn", adb.LibraryOptions(dynamic_schema=True))
    static = ac.create_library("static")
    stored = pd.DataFrame({"b": [True, False]}, index=pd.date_range("2024-01-01", periods=2))
    both_wrong = pd.DataFrame({"b": ["x", "y"]}, index=pd.date_range("2024-01-01", periods=2))  # overlaps, and strings
    for lib, expected in ((dyn, AppendOrderException), (static, StreamDescriptorMismatch)):
        lib.write("s", stored)
        with pytest.raises(expected):
            lib.append("s", both_wrong)
        assert len(lib.list_versions("s")) == 1


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("op", ["append", "update"])
def test_multiindex_level_names_must_match_as_in_arcticdb(dynamic: bool, op: str) -> None:
    import arcticlite as adb
    from arcticlite.exceptions import NormalizationException

    def frame(names: list, start: int) -> pd.DataFrame:
        levels = [pd.date_range("2024", periods=2) + pd.Timedelta(days=start), [1, 2]]
        return pd.DataFrame({"v": [1.0, 2.0]}, index=pd.MultiIndex.from_arrays(levels, names=names))

    lib = adb.Arctic("mem://").create_library("mi", adb.LibraryOptions(dynamic_schema=dynamic))
    lib.write("s", frame(["t", "k"], 0))
    with pytest.raises(NormalizationException, match="level names"):
        getattr(lib, op)("s", frame(["t", "j"], 5 if op == "append" else 1))
    assert len(lib.list_versions("s")) == 1


def test_an_unnamed_series_is_read_by_its_column_0(lib: adb.Library) -> None:
    s = pd.Series([1.5, 2.5, 3.5], index=pd.RangeIndex(0, 3, name="idx"))
    lib.write("s", s)
    for cols in (["0"], ["x", "0"]):
        pd.testing.assert_series_equal(lib.read("s", columns=cols).data, s)
    assert lib.read("s", columns=["x"]).data.empty


@pytest.mark.parametrize(("data", "want"), [
    (pd.Series([1.0, 2.0], index=pd.Index([5, 7], name="k"), name="x"), [("k", "INT64"), ("x", "FLOAT64")]),
    (pd.Series([1.0, 2.0], index=pd.Index(["a", "b"]), name="x"), [("index", "UTF_DYNAMIC64"), ("x", "FLOAT64")]),
    (pd.Series([1.0, 2.0], index=pd.MultiIndex.from_arrays([pd.to_datetime(["2024", "2025"]), ["a", "b"]],
                                                             names=["t", "k"]), name="x"),
     [("t", "NANOSECONDS_UTC64"), ("__idx__k", "UTF_DYNAMIC64"), ("x", "FLOAT64")]),
    (pd.Series([1.0, 2.0], index=pd.MultiIndex.from_arrays([pd.to_datetime(["2024", "2025"]), ["a", "b"]]),
               name="x"),
     [("index", "NANOSECONDS_UTC64"), ("__fkidx__1", "UTF_DYNAMIC64"), ("x", "FLOAT64")]),
])
def test_a_series_describes_its_index_among_its_columns(lib: adb.Library, data: pd.Series,
                                                        want: list[tuple[str, str]]) -> None:
    lib.write("s", data)
    d = lib.get_description("s")
    assert [(c.name, c.dtype.data_type().name) for c in d.columns] == want
    assert d.index == () and d.index_type == "NA"


def test_pyarrow_output_carries_arcticdbs_pandas_metadata(lib: adb.Library) -> None:
    import json

    df = pd.DataFrame({"i": np.array([1, 2], dtype="int32"), "f": [1.5, 2.5], "s": ["a", None], "b": [True, False]},
                      index=pd.date_range("2024", periods=2, name="ts"))
    lib.write("df", df)
    lib.write("ser", pd.Series(np.array([1, 2], dtype="int32"), name="v"))
    lib.write("none", pd.DataFrame(index=pd.RangeIndex(0, 3)))
    md = json.loads(lib.read("df", output_format="pyarrow").data.schema.metadata[b"pandas"])
    assert sorted(md) == ["column_indexes", "columns", "index_columns"]
    assert [(c["name"], c["pandas_type"], c["numpy_type"]) for c in md["columns"]] == [
        ("ts", "datetime", "datetime64[ns]"), ("i", "int32", "int32"), ("f", "double", "double"),
        ("s", "unicode", "object"), ("b", "bool", "bool")]
    assert md["column_indexes"][0]["pandas_type"] == "mixed"
    ser = lib.read("ser", output_format="pyarrow").data
    assert [c["pandas_type"] for c in json.loads(ser.schema.metadata[b"pandas"])["columns"]] == ["int32"]
    assert ser.to_pandas()["v"].dtype == np.int32
    none = lib.read("none", output_format="pyarrow").data.to_pandas()
    assert none.columns.dtype == np.int64 and len(none.columns) == 0
