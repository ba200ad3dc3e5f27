"""append / update / delete_data_in_range, and "bad input changes nothing" (DESIGN §2 invariant 4;
reference §2 "append", "update", "delete_data_in_range")."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
from enginehelpers import all_options, assert_frame_equal, frame, versions_of

from arcticlite import (
    Arctic,
    EnterpriseLibraryOptions,
    Library,
    LibraryOptions,
    ModifiableEnterpriseLibraryOption,
    QueryBuilder,
)
from arcticlite.exceptions import (
    AppendOrderException,
    ArcticInvalidApiUsageException,
    InternalException,
    NormalizationException,
    SchemaException,
    StreamDescriptorMismatch,
    UnsortedDataException,
    UnsupportedLibraryOptionValue,
)

dynamic = pytest.mark.parametrize("library_options", [LibraryOptions(dynamic_schema=True)], ids=["dynamic"],
                                  indirect=True)


def ts(s: str) -> pd.Timestamp:
    return pd.Timestamp(s)


def one(day: str, **cols: object) -> pd.DataFrame:
    return pd.DataFrame({k: [v] for k, v in cols.items()}, index=pd.DatetimeIndex([day]))


def assert_unchanged(lib: Library, sym: str, versions: list[int], data: pd.DataFrame) -> None:
    assert versions_of(lib, sym) == versions
    assert_frame_equal(lib.read(sym).data, data)


# -- append ---------------------------------------------------------------------------------------
@all_options
def test_append(lib: Library) -> None:
    df = frame(9, cols=("a", "b", "c"))
    assert lib.write("s", df.iloc[:4]).version == 0
    assert lib.append("s", df.iloc[4:7], metadata="m1").version == 1
    assert lib.append("s", df.iloc[7:]).version == 2
    assert_frame_equal(lib.read("s").data, df)
    assert_frame_equal(lib.read("s", as_of=1).data, df.iloc[:7])
    assert lib.read("s", as_of=1).metadata == "m1"
    assert lib.read("s").metadata is None
    assert_frame_equal(lib.read("s", row_range=(3, 8)).data, df.iloc[3:8])
    assert_frame_equal(lib.read("s", date_range=(df.index[3], df.index[7])).data, df.iloc[3:8])
    assert_frame_equal(lib.tail("s", 3).data, df.iloc[-3:])


@all_options
def test_many_small_appends(lib: Library) -> None:
    df = frame(30, freq="min")
    lib.write("s", df.iloc[:1])
    for k in range(1, 30):
        lib.append("s", df.iloc[k : k + 1])
    assert_frame_equal(lib.read("s").data, df)
    assert_frame_equal(lib.read("s", as_of=14).data, df.iloc[:15])
    assert_frame_equal(lib.read("s", row_range=(10, 20)).data, df.iloc[10:20])
    assert lib.get_description("s").row_count == 30


def test_append_to_missing_symbol_creates_it(lib: Library) -> None:
    assert lib.append("s", frame(3)).version == 0
    assert lib.list_symbols() == ["s"]
    assert_frame_equal(lib.read("s").data, frame(3))


def test_append_equal_first_index_is_allowed(lib: Library) -> None:
    lib.write("s", frame(3))
    extra = frame(2, start="2024-01-03", base=100)
    lib.append("s", extra)
    assert_frame_equal(lib.read("s").data, pd.concat([frame(3), extra]))


@pytest.mark.parametrize("validate_index", [True, False])
def test_append_before_last_row_raises_and_changes_nothing(lib: Library, validate_index: bool) -> None:
    lib.write("s", frame(3))
    early = frame(2, start="2023-12-31", base=50)
    with pytest.raises(AppendOrderException) as info:
        lib.append("s", early, validate_index=validate_index)
    assert isinstance(info.value, InternalException)  # what ArcticDB raises here
    assert isinstance(info.value, UnsortedDataException)
    assert_unchanged(lib, "s", [0], frame(3))


def test_append_unsorted_raises_and_changes_nothing(lib: Library) -> None:
    lib.write("s", frame(3))
    bad = frame(3, start="2024-02-01").iloc[::-1]
    with pytest.raises(UnsortedDataException):
        lib.append("s", bad)
    assert_unchanged(lib, "s", [0], frame(3))


def test_append_unvalidated_makes_symbol_unsorted(lib: Library) -> None:
    lib.write("s", frame(3))
    lib.append("s", frame(3, start="2024-02-01").iloc[[2, 0, 1]], validate_index=False)
    assert lib.get_description("s").sorted == "UNSORTED"
    with pytest.raises(UnsortedDataException):
        lib.update("s", one("2024-01-02", a=1, b=1.0))
    with pytest.raises(UnsortedDataException):
        lib.read("s", date_range=(None, None))
    with pytest.raises(UnsortedDataException):  # the existing data must be sorted
        lib.append("s", frame(1, start="2025-01-01"))
    assert versions_of(lib, "s") == [0, 1]


STATIC_MISMATCHES: list[tuple[str, Callable[[], object]]] = [
    ("new-column", lambda: one("2024-02-01", a=1, b=1.0, c=2)),
    ("missing-column", lambda: one("2024-02-01", a=1)),
    ("int32-vs-int64", lambda: pd.DataFrame({"a": np.array([1], np.int32), "b": [1.0]},
                                            index=pd.DatetimeIndex(["2024-02-01"]))),
    ("float-vs-int", lambda: one("2024-02-01", a=1.5, b=1.0)),
    ("order", lambda: pd.DataFrame({"b": [1.0], "a": [1]}, index=pd.DatetimeIndex(["2024-02-01"]))),
    ("str-vs-int", lambda: one("2024-02-01", a="x", b=1.0)),
    ("index-name", lambda: pd.DataFrame({"a": [1], "b": [1.0]}, index=pd.DatetimeIndex(["2024-02-01"], name="t"))),
]


@pytest.mark.parametrize("make", [m for _, m in STATIC_MISMATCHES], ids=[n for n, _ in STATIC_MISMATCHES])
def test_static_schema_mismatch_raises_and_changes_nothing(lib: Library, make: Callable[[], pd.DataFrame]) -> None:
    df = frame(3)
    lib.write("s", df)
    with pytest.raises(StreamDescriptorMismatch):
        lib.append("s", make())
    with pytest.raises(StreamDescriptorMismatch):
        lib.update("s", make().set_axis(pd.DatetimeIndex(["2024-01-02"], name=make().index.name)))
    assert_unchanged(lib, "s", [0], df)


def test_series_name_must_match(lib: Library) -> None:
    s = pd.Series([1.0, 2.0], index=pd.date_range("2024-01-01", periods=2), name="px")
    lib.write("s", s)
    with pytest.raises(StreamDescriptorMismatch):
        lib.append("s", pd.Series([3.0], index=pd.DatetimeIndex(["2024-01-05"]), name="other"))
    lib.append("s", pd.Series([3.0], index=pd.DatetimeIndex(["2024-01-05"]), name="px"))
    assert versions_of(lib, "s") == [0, 1]
    assert list(lib.read("s").data) == [1.0, 2.0, 3.0]


def test_index_kind_mismatch_raises_and_changes_nothing(lib: Library) -> None:
    lib.write("s", frame(3))
    with pytest.raises(NormalizationException):
        lib.append("s", pd.DataFrame({"a": [1], "b": [2.0]}))
    lib.write("r", pd.DataFrame({"x": [1, 2]}))
    with pytest.raises(NormalizationException):
        lib.append("r", pd.DataFrame({"x": [1]}, index=pd.DatetimeIndex(["2024-01-01"])))
    assert_unchanged(lib, "s", [0], frame(3))
    assert_unchanged(lib, "r", [0], pd.DataFrame({"x": [1, 2]}))


def test_range_index_append(lib: Library) -> None:
    lib.write("r", pd.DataFrame({"x": [1, 2, 3]}))
    lib.append("r", pd.DataFrame({"x": [4, 5]}, index=pd.RangeIndex(3, 5)))
    assert_frame_equal(lib.read("r").data, pd.DataFrame({"x": [1, 2, 3, 4, 5]}))
    with pytest.raises(NormalizationException):  # not contiguous
        lib.append("r", pd.DataFrame({"x": [9]}, index=pd.RangeIndex(10, 11)))
    # a frame's default index (from 0) means "no index": its rows continue the stored range
    lib.append("r", pd.DataFrame({"x": [6, 7]}))
    assert_frame_equal(lib.read("r").data, pd.DataFrame({"x": [1, 2, 3, 4, 5, 6, 7]}))
    with pytest.raises(NormalizationException):  # different step
        lib.append("r", pd.DataFrame({"x": [9, 9]}, index=pd.RangeIndex(5, 9, 2)))
    assert versions_of(lib, "r") == [0, 1, 2]


def test_append_empty_frame_creates_a_version(lib: Library) -> None:
    lib.write("s", frame(3))
    assert lib.append("s", frame(0)).version == 1
    assert_frame_equal(lib.read("s").data, frame(3))


def test_append_tz_of_latest_write_wins(lib: Library) -> None:
    lib.write("s", frame(2))
    lib.append("s", pd.DataFrame({"a": [9], "b": [0.5]},
                                 index=pd.DatetimeIndex(["2024-01-05"]).tz_localize("UTC")))
    idx = lib.read("s").data.index
    assert str(idx.tz) == "UTC"
    assert list(idx.tz_convert(None)) == [ts("2024-01-01"), ts("2024-01-02"), ts("2024-01-05")]


def test_append_prune_previous_versions(lib: Library) -> None:
    lib.write("s", frame(2))
    lib.append("s", frame(2, start="2024-02-01"))
    lib.append("s", frame(2, start="2024-03-01"), prune_previous_versions=True)
    assert versions_of(lib, "s") == [2]
    assert len(lib.read("s").data) == 6


@dynamic
def test_dynamic_schema_append(lib: Library) -> None:
    lib.write("s", pd.DataFrame({"a": [1, 2], "b": [1.0, 2.0], "c": ["x", "y"]},
                                index=pd.date_range("2024-01-01", periods=2)))
    lib.append("s", one("2024-01-05", a=3, d=7))
    got = lib.read("s").data
    assert list(got.columns) == ["a", "b", "c", "d"]
    assert list(got["d"]) == [0, 0, 7]  # ints backfill with 0 (as in ArcticDB)
    assert got["b"].isna().tolist() == [False, False, True]  # floats with NaN
    assert got["c"].tolist()[2] is None  # strings with None
    lib.append("s", one("2024-01-06", a=3.5))  # int promotes to float
    got = lib.read("s").data
    assert got["a"].dtype == np.float64 and got["a"].tolist() == [1.0, 2.0, 3.0, 3.5]
    with pytest.raises(SchemaException):
        lib.append("s", one("2024-01-07", c=1))  # str vs numeric: no common type
    with pytest.raises(StreamDescriptorMismatch):
        lib.append("s", pd.DataFrame({"a": [1]}, index=pd.DatetimeIndex(["2024-01-08"], name="t")))
    assert versions_of(lib, "s") == [0, 1, 2]


# -- update ---------------------------------------------------------------------------------------
@all_options
def test_update_replaces_the_span(lib: Library) -> None:
    df = frame(10, cols=("a", "b", "c"))
    lib.write("s", df)
    new = frame(3, start="2024-01-04", base=100, cols=("a", "b", "c"), seed=3)
    new = new.iloc[[0, 2]]  # 01-04 and 01-06: 01-05 is inside the span and disappears
    assert lib.update("s", new).version == 1
    expected = pd.concat([df.iloc[:3], new, df.iloc[6:]])
    assert_frame_equal(lib.read("s").data, expected)
    assert_frame_equal(lib.read("s", as_of=0).data, df)
    assert_frame_equal(lib.read("s", date_range=(ts("2024-01-03"), ts("2024-01-07"))).data,
                       expected.loc["2024-01-03":"2024-01-07"])


@all_options
def test_update_with_date_range(lib: Library) -> None:
    df = frame(10)
    lib.write("s", df)
    new = frame(10, base=100, seed=5)
    lib.update("s", new, date_range=(ts("2024-01-03"), ts("2024-01-05")))
    expected = pd.concat([df.iloc[:2], new.iloc[2:5], df.iloc[5:]])
    assert_frame_equal(lib.read("s").data, expected)
    lib.update("s", new, date_range=(ts("2024-01-09"), None))  # open end
    expected = pd.concat([expected.iloc[:8], new.iloc[8:]])
    assert_frame_equal(lib.read("s").data, expected)


@all_options
def test_update_before_after_and_across_everything(lib: Library) -> None:
    df = frame(5, start="2024-01-10")
    lib.write("s", df)
    before = frame(2, start="2024-01-01", base=50)
    lib.update("s", before)
    assert_frame_equal(lib.read("s").data, pd.concat([before, df]))
    after = frame(2, start="2024-02-01", base=60)
    lib.update("s", after)
    assert_frame_equal(lib.read("s").data, pd.concat([before, df, after]))
    everything = frame(3, start="2023-12-01", freq="30D", base=70)  # up to 2024-01-30
    lib.update("s", everything)
    assert_frame_equal(lib.read("s").data, pd.concat([everything, after]))


def test_update_metadata_is_not_carried_over(lib: Library) -> None:
    lib.write("s", frame(3), metadata="m0")
    lib.update("s", frame(1, start="2024-01-02", base=9))
    assert lib.read("s").metadata is None
    lib.update("s", frame(1, start="2024-01-02", base=8), metadata="m2")
    assert lib.read("s").metadata == "m2"


def test_update_missing_symbol_and_upsert(lib: Library) -> None:
    with pytest.raises(InternalException, match="upsert"):
        lib.update("s", frame(2))
    assert not lib.has_symbol("s")
    assert lib.update("s", frame(2), upsert=True).version == 0
    assert_frame_equal(lib.read("s").data, frame(2))


def test_update_errors_change_nothing(lib: Library) -> None:
    df = frame(4)
    lib.write("s", df)
    lib.write("r", pd.DataFrame({"a": [1, 2], "b": [1.0, 2.0]}))
    with pytest.raises(InternalException):  # non-timeseries stored symbol
        lib.update("r", frame(1))
    with pytest.raises(InternalException):  # RangeIndex data over timeseries
        lib.update("s", pd.DataFrame({"a": [1], "b": [2.0]}))
    with pytest.raises(UnsortedDataException):
        lib.update("s", frame(3, base=7).iloc[::-1])
    with pytest.raises(NormalizationException):  # a Series over a DataFrame
        lib.update("s", pd.Series([1], index=pd.DatetimeIndex(["2024-01-02"]), name="a"))
    assert_unchanged(lib, "s", [0], df)
    assert versions_of(lib, "r") == [0]


def test_update_with_empty_frame_creates_a_version(lib: Library) -> None:
    lib.write("s", frame(3))
    assert lib.update("s", frame(0)).version == 1
    assert_frame_equal(lib.read("s").data, frame(3))


@dynamic
def test_dynamic_schema_update_missing_columns(lib: Library) -> None:
    lib.write("s", frame(4))
    lib.update("s", one("2024-01-02", a=9))
    got = lib.read("s").data
    assert got["a"].tolist() == [0, 9, 2, 3]
    assert np.isnan(got["b"].iloc[1]) and not got["b"].drop(got.index[1]).isna().any()


# -- delete_data_in_range -------------------------------------------------------------------------
@all_options
def test_delete_data_in_range(lib: Library) -> None:
    df = frame(10, cols=("a", "b", "c"))
    lib.write("s", df)
    lib.delete_data_in_range("s", (ts("2024-01-03"), ts("2024-01-05")))
    expected = df.drop(df.index[2:5])
    assert_frame_equal(lib.read("s").data, expected)
    assert versions_of(lib, "s") == [0, 1]
    lib.delete_data_in_range("s", (ts("2030-01-01"), ts("2030-02-01")))  # nothing matched: new version
    assert versions_of(lib, "s") == [0, 1, 2]
    assert_frame_equal(lib.read("s").data, expected)
    lib.delete_data_in_range("s", (None, ts("2024-01-06 12:00")))
    assert_frame_equal(lib.read("s").data, df.iloc[6:])
    lib.delete_data_in_range("s", (None, None))  # everything: empty frame, still listed
    assert len(lib.read("s").data) == 0
    assert lib.has_symbol("s") and lib.list_symbols() == ["s"]
    assert_frame_equal(lib.read("s", as_of=0).data, df)


def test_delete_data_in_range_errors(lib: Library) -> None:
    with pytest.raises(InternalException):
        lib.delete_data_in_range("missing", (ts("2024-01-01"), ts("2024-01-02")))
    lib.write("r", pd.DataFrame({"x": [1, 2]}))
    with pytest.raises(InternalException):
        lib.delete_data_in_range("r", (ts("2024-01-01"), ts("2024-01-02")))
    lib.write("s", frame(3))
    with pytest.raises(ArcticInvalidApiUsageException):
        lib.delete_data_in_range("s", None)  # type: ignore[arg-type]
    assert_unchanged(lib, "s", [0], frame(3))
    assert not lib.has_symbol("missing")


def test_delete_data_in_range_with_prune(lib: Library) -> None:
    lib.write("s", frame(5))
    lib.delete_data_in_range("s", (ts("2024-01-02"), ts("2024-01-02")), prune_previous_versions=True)
    assert versions_of(lib, "s") == [1]
    assert_frame_equal(lib.read("s").data, frame(5).drop(ts("2024-01-02")))


@dynamic
def test_dynamic_schema_new_columns_survive_update_and_compaction(lib: Library) -> None:
    # a column added by a later write sits past the column range of the segment holding it
    lib.write("s", pd.DataFrame({"a": [1, 2], "b": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2)))
    lib.append("s", pd.DataFrame({"d": [7], "a": [3]}, index=pd.DatetimeIndex(["2024-01-05"])))
    lib.update("s", one("2024-01-02", e="x"))
    got = lib.read("s").data
    assert list(got.columns) == ["a", "b", "d", "e"]
    assert got["d"].tolist() == [0, 0, 7]
    assert got["a"].tolist() == [1, 0, 3]
    assert got["e"].tolist() == [None, "x", None]
    assert lib.read("s", columns=["d"]).data["d"].tolist() == [0, 0, 7]
    if hasattr(lib, "compact_data"):
        lib.compact_data("s")
        assert_frame_equal(lib.read("s").data, got)


def test_unsupported_data_on_append_update_changes_nothing(lib: Library) -> None:
    from arcticlite.exceptions import ArcticDbNotYetImplemented, ArcticUnsupportedDataTypeException

    df = frame(3)
    lib.write("s", df)
    bad = pd.DataFrame({"a": np.zeros(1, dtype=np.float16), "b": [1.0]}, index=pd.DatetimeIndex(["2024-02-01"]))
    for call in (lib.append, lib.update):
        with pytest.raises(ArcticDbNotYetImplemented):
            call("s", bad)
        with pytest.raises(ArcticUnsupportedDataTypeException):
            call("s", [1, 2, 3])
    with pytest.raises(ArcticDbNotYetImplemented):
        lib.stage("s", bad)
    assert_unchanged(lib, "s", [0], df)
    assert lib.get_staged_symbols() == []


@dynamic
@pytest.mark.parametrize(("first", "more", "expected"), [
    (np.arange(3), np.array([0.5, 1.5]), np.array([0.0, 1.0, 2.0, 0.5, 1.5])),
    (np.arange(2, dtype="int32"), np.array([2**40]), np.array([0, 1, 2**40], dtype="int64")),
])
def test_a_numpy_array_reads_back_in_the_type_appends_widened_it_to(lib: Library, first: np.ndarray,
                                                                    more: np.ndarray, expected: np.ndarray) -> None:
    """As ArcticDB: int64 then floats appended read back as float64 (were cut back to int64)."""
    lib.write("s", first)
    lib.append("s", more)
    got = lib.read("s").data
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("op", ["update_outside", "update_empty", "append_empty"])
def test_a_write_of_no_row_keeps_the_stored_time_zone(lib: Library, op: str) -> None:
    """As ArcticDB: an update or append that writes no row (a tz-naive frame outside the
    update's date_range, or an empty one) leaves the index's time zone as it was."""
    stored = pd.DataFrame({"a": [1.0]}, index=pd.date_range("2024-01-08", periods=1, tz="US/Eastern"))
    naive = pd.DataFrame({"a": [2.0, 3.0]}, index=pd.date_range("2024-01-08", periods=2))
    lib.write("s", stored)
    if op == "update_outside":
        lib.update("s", naive, date_range=(ts("2024-01-12"), ts("2024-01-13")))
    elif op == "update_empty":
        lib.update("s", naive.iloc[:0])
    else:
        lib.append("s", naive.iloc[:0])
    assert_frame_equal(lib.read("s").data, stored)
    assert lib.get_description("s").date_range[0] == stored.index[0]


@pytest.mark.parametrize("validate_index", [False, True])
def test_an_append_starting_with_nat_is_refused(lib: Library, validate_index: bool) -> None:
    """As ArcticDB: a NaT first index value comes before every stored row, so the append is
    refused whatever ``validate_index`` says (with it: as unsorted); nothing is written."""
    lib.write("s", pd.DataFrame({"a": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2)))
    nat = pd.DataFrame({"a": [3.0, 4.0]}, index=pd.DatetimeIndex([pd.NaT, "2024-01-05"]))
    with pytest.raises(UnsortedDataException if validate_index else AppendOrderException, match="NaT"):
        lib.append("s", nat, validate_index=validate_index)
    assert [v.version for v in lib.list_versions("s")] == [0]


@pytest.mark.parametrize("index", [pd.Index([1.5, 2.5]), pd.Index(["a", "b"]),
                                   pd.MultiIndex.from_arrays([["p", "q"], [1, 2]])])
def test_update_upsert_of_another_index_writes_the_new_symbol(lib: Library, index: pd.Index) -> None:
    """As ArcticDB: ``update(upsert=True)`` of a symbol that does not exist writes the frame,
    whatever its index (a float, string or non-time MultiIndex: was an Arrow error)."""
    df = pd.DataFrame({"a": [1.0, 2.0]}, index=index)
    assert lib.update("s", df, upsert=True).version == 0
    assert_frame_equal(lib.read("s").data, df)


@dynamic
def test_uint64_beyond_int64_meets_floats_as_floats(lib: Library) -> None:
    """As ArcticDB: under a dynamic schema a float column that takes uint64 values beyond int64
    reads them as their nearest floats (was an Arrow error on read)."""
    lib.write("s", pd.DataFrame({"c": [0.5, 1.5]}, index=pd.date_range("2024-01-01", periods=2)))
    lib.append("s", pd.DataFrame({"c": np.array([2**63 + 5], "uint64")}, index=pd.date_range("2024-01-03", periods=1)))
    assert lib.read("s").data["c"].tolist() == [0.5, 1.5, float(2**63 + 5)]


@pytest.mark.parametrize("library_options", [LibraryOptions(), LibraryOptions(dynamic_schema=True)],
                         ids=["static", "dynamic"], indirect=True)
def test_a_rangeindex_symbol_read_without_columns_keeps_its_rows(lib: Library) -> None:
    """``columns=[]`` of a RangeIndex symbol gives its rows without columns, under either schema
    and after a head / tail / row_range clause (was 0 rows: a RangeIndex stores no index column)."""
    lib.write("s", pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0]}, index=pd.RangeIndex(0, 8, 2)))
    assert lib.read("s", columns=[]).data.index.equals(pd.RangeIndex(0, 8, 2))
    for q in (QueryBuilder().head(2), QueryBuilder().tail(2), QueryBuilder().row_range((1, 3))):
        assert len(lib.read("s", columns=[], query_builder=q).data) == 2


@dynamic
@pytest.mark.parametrize("op", ["append", "update"])
def test_rows_added_to_a_version_of_no_row_bring_their_own_columns_and_types(lib: Library, op: str) -> None:
    """As ArcticDB, under a dynamic schema: a version without rows (an empty write, or every
    row deleted) holds no value, so the next rows' columns and types make the schema: float
    then int reads as int64, int then str is accepted, columns only the empty version had go."""
    lib.write("s", pd.DataFrame({"a": np.array([], float), "c": np.array([], "int64")},
                                index=pd.date_range("2024-01-01", periods=0)))
    rows = pd.DataFrame({"a": np.array([1, 2], "int64")}, index=pd.date_range("2024-01-04", periods=2))
    getattr(lib, op)("s", rows)
    assert_frame_equal(lib.read("s").data, rows)
    lib.write("t", pd.DataFrame({"a": [1.0, 2.0], "b": ["p", "q"]}, index=pd.date_range("2024-01-01", periods=2)))
    lib.delete_data_in_range("t", (ts("2024-01-01"), ts("2024-01-05")))
    strings = pd.DataFrame({"b": ["z"]}, index=pd.date_range("2024-01-03", periods=1))
    getattr(lib, op)("t", strings)
    assert_frame_equal(lib.read("t").data, strings)


@pytest.mark.parametrize("validate_index", [False, True])
def test_a_time_ordered_multiindex_refuses_rows_before_its_last(lib: Library, validate_index: bool) -> None:
    """As ArcticDB: a MultiIndex whose first level is time is appended (and staged rows are
    finalized) in time order only, whatever ``validate_index`` says."""
    def rows(day: int, n: int) -> pd.DataFrame:
        level = pd.date_range(ts("2024-01-01") + pd.Timedelta(days=day), periods=n)
        return pd.DataFrame({"a": np.arange(n, dtype=float)},
                            index=pd.MultiIndex.from_arrays([level, ["x"] * n], names=["d", "k"]))
    lib.write("s", rows(1, 2))
    with pytest.raises(AppendOrderException):
        lib.append("s", rows(0, 2), validate_index=validate_index)
    lib.stage("s", rows(0, 1))
    with pytest.raises(UnsortedDataException):
        lib.finalize_staged_data("s", mode="append", validate_index=validate_index)
    assert [v.version for v in lib.list_versions("s")] == [0]
    assert lib.append("s", rows(3, 1)).version == 1


def test_enterprise_options_are_kept_and_modifiable(tmp_path) -> None:
    """As ArcticDB: the enterprise options given to create_library are kept with the library
    (another handle sees them) and modify_library_option sets them (bools only)."""
    ac = Arctic(f"lmdb://{tmp_path}/e")
    lib = ac.create_library("e", LibraryOptions(rows_per_segment=10),
                            enterprise_library_options=EnterpriseLibraryOptions(replication=True, background_deletion=True))
    assert Arctic(f"lmdb://{tmp_path}/e")["e"].enterprise_options() == EnterpriseLibraryOptions(
        replication=True, background_deletion=True)
    ac.modify_library_option(lib, ModifiableEnterpriseLibraryOption.BACKGROUND_DELETION, False)
    assert ac["e"].enterprise_options() == EnterpriseLibraryOptions(replication=True, background_deletion=False)
    with pytest.raises(UnsupportedLibraryOptionValue):
        ac.modify_library_option(lib, ModifiableEnterpriseLibraryOption.REPLICATION, 1)
    assert ac["e"].options().rows_per_segment == 10  # the other options stay
    assert ac.create_library("f").enterprise_options() == EnterpriseLibraryOptions()


@pytest.mark.parametrize("library_options", [LibraryOptions(), LibraryOptions(dynamic_schema=True)],
                         ids=["static", "dynamic"], indirect=True)
def test_a_2d_array_appends_only_rows_of_its_width(lib: Library) -> None:
    """As ArcticDB: an append of another width (or dimension) is refused, nothing written; the
    description counts the array's values."""
    lib.write("s", np.arange(6, dtype=float).reshape(3, 2))
    assert lib.get_description("s").row_count == 6
    for bad in (np.arange(3, dtype=float).reshape(1, 3), np.arange(2, dtype=float)):
        with pytest.raises(NormalizationException, match="E_WRONG_SHAPE"):
            lib.append("s", bad)
    assert versions_of(lib, "s") == [0]
    lib.append("s", np.arange(4, dtype=float).reshape(2, 2))
    np.testing.assert_array_equal(lib.read("s").data, np.concatenate([np.arange(6.0), np.arange(4.0)]).reshape(5, 2))
    assert lib.get_description("s").row_count == 10


@pytest.mark.parametrize("library_options", [LibraryOptions(), LibraryOptions(dynamic_schema=True)],
                         ids=["static", "dynamic"], indirect=True)
@pytest.mark.parametrize("series", [False, True], ids=["frame", "series"])
def test_a_range_index_takes_the_name_of_the_newest_append(lib: Library, series: bool) -> None:
    """As ArcticDB: a RangeIndex is no stored column, its name is not checked on append and the
    newest write's name is the one read back."""
    def data(values: list[int], start: int, name: str | None) -> pd.DataFrame | pd.Series:
        idx = pd.RangeIndex(start, start + len(values), name=name)
        return pd.Series(values, index=idx, name="x") if series else pd.DataFrame({"x": values}, index=idx)

    lib.write("s", data([1, 2, 3], 0, "ts"))
    lib.append("s", data([4, 5], 3, None))
    assert lib.read("s").data.index.equals(pd.RangeIndex(0, 5)) and lib.read("s").data.index.name is None
    lib.append("s", data([6], 5, "n"))
    assert lib.read("s").data.index.name == "n"
    assert list(lib.read("s").data.to_numpy().ravel()) == [1, 2, 3, 4, 5, 6]


def test_a_series_written_empty_takes_the_index_of_its_first_rows() -> None:
    """As ArcticDB: a 0-row Series (described with a timestamp index of no value) appended to
    under dynamic schema takes the appended rows' RangeIndex; under static schema the append
    is refused (StreamDescriptorMismatch) and changes nothing."""
    empty = pd.Series(np.array([], dtype=np.int64), index=pd.RangeIndex(0, 0), name="x")
    rows = pd.Series([1, 2], name="x")
    static = Arctic("mem://").create_library("st")
    static.write("s", empty)
    with pytest.raises(StreamDescriptorMismatch):
        static.append("s", rows)
    assert versions_of(static, "s") == [0]
    dyn = Arctic("mem://").create_library("dy", LibraryOptions(dynamic_schema=True))
    dyn.write("s", empty)
    assert dyn.append("s", rows).version == 1
    pd.testing.assert_series_equal(dyn.read("s").data, rows)
