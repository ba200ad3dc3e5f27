"""write / write_pickle / read / head / tail / metadata / description, on every backend
(reference §2 "write", "write_pickle", "read", "get_description")."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from enginehelpers import all_options, assert_frame_equal, effective_options, frame, versions_of

from arcticlite import Library, QueryBuilder, VersionedItem
from arcticlite.exceptions import (
    ArcticDbNotYetImplemented,
    ArcticException,
    ArcticUnsupportedDataTypeException,
    InternalException,
    NoDataFoundException,
    NoSuchVersionException,
    UnsortedDataException,
    UserInputException,
)


def wide(n: int = 6) -> pd.DataFrame:
    """Five columns of mixed types: three column slices and several row slices at 2 × 2."""
    idx = pd.date_range("2024-01-01", periods=n, freq="h", name="ts")
    return pd.DataFrame(
        {
            "i": np.arange(n, dtype=np.int32),
            "f": np.linspace(0, 1, n),
            "s": [f"s{k}" for k in range(n)],
            "b": np.arange(n) % 2 == 0,
            "t": pd.date_range("2020-01-01", periods=n, freq="min"),
        },
        index=idx,
    )


# -- write ----------------------------------------------------------------------------------------
@all_options
def test_write_read_round_trip(lib: Library) -> None:
    df = wide(7)
    item = lib.write("s", df, metadata={"source": "test"})
    assert isinstance(item, VersionedItem)
    assert (item.symbol, item.library, item.version, item.metadata) == ("s", "lib", 0, {"source": "test"})
    got = lib.read("s")
    assert_frame_equal(got.data, df)
    assert (got.symbol, got.version, got.metadata) == ("s", 0, {"source": "test"})
    assert_frame_equal(lib["s"].data, df)
    assert "s" in lib and "t" not in lib


@all_options
@pytest.mark.parametrize(
    "data",
    [
        pd.DataFrame({"x": np.arange(5), "y": list("abcde")}),  # RangeIndex
        pd.DataFrame({"x": [1.5, 2.5]}, index=pd.RangeIndex(10, 14, 2, name="r")),
        pd.DataFrame({"x": [1, 2, 3]}, index=pd.date_range("2024-01-01", periods=3, tz="America/New_York")),
        pd.DataFrame({"x": [1, 2, 3]}, index=pd.Index([5, 1, 3], name="k")),  # Int64 index, unvalidated
        pd.DataFrame({"x": [1, 2, 3]}, index=pd.Index(["a", "b", "c"])),  # string index
        pd.DataFrame({0: [1, 2], 1: [3, 4]}),  # int column names
    ],
    ids=["range", "range-step-name", "tz", "int-index", "str-index", "int-colnames"],
)
def test_write_round_trips_frames(lib: Library, data: pd.DataFrame) -> None:
    lib.write("s", data)
    assert_frame_equal(lib.read("s").data, data)


@all_options
def test_write_series_and_ndarray(lib: Library) -> None:
    s = pd.Series([1.0, 2.0, 3.0], index=pd.date_range("2024-01-01", periods=3), name="px")
    lib.write("ser", s)
    pd.testing.assert_series_equal(lib.read("ser").data, s, check_freq=False)
    arr = np.arange(12, dtype=np.float64).reshape(4, 3)
    lib.write("arr", arr)
    np.testing.assert_array_equal(lib.read("arr").data, arr)


def test_write_creates_next_version_and_never_reuses_ids(lib: Library) -> None:
    assert [lib.write("s", frame(2, base=k)).version for k in range(3)] == [0, 1, 2]
    assert_frame_equal(lib.read("s").data, frame(2, base=2))
    lib.delete("s")
    # as in ArcticDB: the next write after deleting every version continues the numbering
    v = lib.write("s", frame(2, base=9)).version
    assert v == 3
    assert versions_of(lib, "s") == [3]
    assert_frame_equal(lib.read("s").data, frame(2, base=9))


def test_write_metadata_types_round_trip(lib: Library) -> None:
    meta = {"t": (1, 2), "set": {3}, "ts": pd.Timestamp("2024-01-01"), "b": b"x", "n": np.int64(5),
            "df": pd.DataFrame({"a": [1]})}
    lib.write("s", frame(1), metadata=meta)
    got = lib.read("s").metadata
    assert got["t"] == (1, 2) and got["set"] == {3} and got["b"] == b"x" and got["n"] == 5
    assert got["ts"] == pd.Timestamp("2024-01-01")
    assert_frame_equal(got["df"], meta["df"])


def test_write_unsorted_index_raises_and_changes_nothing(lib: Library) -> None:
    lib.write("s", frame(3))
    bad = frame(3).iloc[::-1]
    with pytest.raises(UnsortedDataException):
        lib.write("s", bad)
    with pytest.raises(UnsortedDataException):
        lib.write("new", bad)
    assert versions_of(lib, "s") == [0]
    assert not lib.has_symbol("new")
    assert lib.list_symbols() == ["s"]
    assert_frame_equal(lib.read("s").data, frame(3))


def test_write_nat_in_index_counts_as_unsorted(lib: Library) -> None:
    df = pd.DataFrame({"a": [1, 2]}, index=pd.DatetimeIndex(["2024-01-01", pd.NaT]))
    with pytest.raises(UnsortedDataException):
        lib.write("s", df)
    assert not lib.has_symbol("s")


def test_write_unvalidated_unsorted_then_description_and_date_range(lib: Library) -> None:
    bad = frame(4).iloc[[1, 0, 3, 2]]
    lib.write("s", bad, validate_index=False)
    assert_frame_equal(lib.read("s").data, bad)
    assert lib.get_description("s").sorted == "UNSORTED"
    lib.write("d", frame(4).iloc[::-1], validate_index=False)
    assert lib.get_description("d").sorted == "DESCENDING"
    with pytest.raises(UnsortedDataException):
        lib.read("s", date_range=(None, pd.Timestamp("2024-01-02")))


def test_duplicate_index_values_are_ascending(lib: Library) -> None:
    idx = pd.DatetimeIndex(["2024-01-01", "2024-01-01", "2024-01-02"])
    df = pd.DataFrame({"a": [1, 2, 3]}, index=idx)
    lib.write("s", df)
    assert lib.get_description("s").sorted == "ASCENDING"
    assert_frame_equal(lib.read("s").data, df)


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ([1, 2, 3], ArcticUnsupportedDataTypeException),
        ({"a": 1}, ArcticUnsupportedDataTypeException),
        (pd.DataFrame({"a": [1, "a", 2.5]}), ArcticDbNotYetImplemented),  # mixed object column
        (pd.DataFrame({"a": np.zeros(3, dtype=np.float16)}), ArcticDbNotYetImplemented),
        (pd.DataFrame({"a": np.zeros(3, dtype=np.complex128)}), ArcticDbNotYetImplemented),
        (pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("a", "b"), ("a", "c")])),
         ArcticDbNotYetImplemented),
    ],
    ids=["list", "dict", "mixed-object", "float16", "complex", "multiindex-columns"],
)
def test_unsupported_data_raises_and_changes_nothing(lib: Library, data: object, error: type) -> None:
    lib.write("s", frame(3))
    with pytest.raises(error):
        lib.write("s", data)
    with pytest.raises(error):
        lib.write("new", data)
    assert versions_of(lib, "s") == [0]
    assert_frame_equal(lib.read("s").data, frame(3))
    assert lib.list_symbols() == ["s"]
    # every rejected value can be stored with write_pickle (reference §3)
    lib.write_pickle("p", data)
    got = lib.read("p").data
    if isinstance(data, pd.DataFrame):
        assert_frame_equal(got, data)
    else:
        assert got == data


@pytest.mark.parametrize("name", ["", "x" * 255, None], ids=["empty", "too-long", "none"])
def test_bad_symbol_name_raises_and_changes_nothing(lib: Library, name: object) -> None:
    lib.write("s", frame(2))
    with pytest.raises(UserInputException):
        lib.write(name, frame(3))  # type: ignore[arg-type]
    with pytest.raises(UserInputException):
        lib.append(name, frame(3))  # type: ignore[arg-type]
    assert lib.list_symbols() == ["s"]
    assert versions_of(lib, "s") == [0]


def test_symbol_names(lib: Library) -> None:
    # ArcticDB limits names to 254 ASCII characters without * < >; arcticlite accepts any
    # Unicode (documented), still up to 254 characters; non-str names are coerced to str.
    names = ["x" * 254, "a/b", "a:b c", "&", "é🚀", "../escape", "*<>", "sl/j/x"]
    for k, n in enumerate(names):
        lib.write(n, frame(2, base=k))
    assert lib.write(123, frame(1)).symbol == "123"  # type: ignore[arg-type]
    assert set(lib.list_symbols()) == set(names) | {"123"}
    for k, n in enumerate(names):
        assert lib.has_symbol(n)
        assert_frame_equal(lib.read(n).data, frame(2, base=k))


def test_write_staged_returns_none_and_stays_invisible(lib: Library) -> None:
    assert lib.write("s", frame(3), staged=True) is None
    assert not lib.has_symbol("s")
    assert lib.list_symbols() == []
    assert lib.get_staged_symbols() == ["s"]


def test_prune_previous_versions_on_write(lib: Library) -> None:
    for k in range(3):
        lib.write("s", frame(2, base=k))
    lib.write("s", frame(2, base=7), prune_previous_versions=True)
    assert versions_of(lib, "s") == [3]
    with pytest.raises(NoSuchVersionException):
        lib.read("s", as_of=0)
    assert_frame_equal(lib.read("s").data, frame(2, base=7))


# -- write_pickle ---------------------------------------------------------------------------------
def test_write_pickle_round_trips_anything(lib: Library) -> None:
    obj = {"a": [1, 2, {"b": (3, 4)}], "x": dt.date(2024, 1, 1)}
    item = lib.write_pickle("p", obj, metadata="m")
    assert item.version == 0
    got = lib.read("p")
    assert got.data == obj and got.metadata == "m"
    lib.write_pickle("p", 42)
    assert lib.read("p").data == 42
    assert lib.read("p", as_of=0).data == obj
    desc = lib.get_description("p")
    assert desc.row_count is None and desc.index_type == "NA"


def test_pickled_symbol_refuses_processing_append_update(lib: Library) -> None:
    lib.write_pickle("p", [1, 2, 3])
    for kw in ({"columns": ["a"]}, {"row_range": (0, 1)}, {"date_range": (None, None)}):
        with pytest.raises(InternalException):
            lib.read("p", **kw)
    with pytest.raises(InternalException, match="(?i)append"):
        lib.append("p", frame(2))
    with pytest.raises(InternalException, match="(?i)update"):
        lib.update("p", frame(2))
    assert versions_of(lib, "p") == [0]
    assert lib.read("p").data == [1, 2, 3]


# -- read -----------------------------------------------------------------------------------------
def test_read_missing_symbol(lib: Library) -> None:
    with pytest.raises(NoSuchVersionException, match="latest"):
        lib.read("nope")
    with pytest.raises(NoSuchVersionException):
        lib["nope"]


def test_read_as_of(lib: Library) -> None:
    times = []
    for k in range(3):
        times.append(pd.Timestamp.now(tz="UTC"))
        lib.write("s", frame(2, base=10 * k))
    lib.snapshot("snap1")
    lib.write("s", frame(2, base=30))
    for k in range(3):
        assert_frame_equal(lib.read("s", as_of=k).data, frame(2, base=10 * k))
        assert lib.read("s", as_of=k).version == k
    assert lib.read("s", as_of=-1).version == 3
    assert lib.read("s", as_of=-4).version == 0
    assert lib.read("s", as_of="snap1").version == 2
    assert_frame_equal(lib.read("s", as_of="snap1").data, frame(2, base=20))
    # datetime: the latest version created at or before it (naive = UTC)
    created = {v.version: v for v in (lib.read("s", as_of=k) for k in range(4))}
    for k in range(4):
        ts = pd.Timestamp(created[k].timestamp, unit="ns", tz="UTC")
        assert lib.read("s", as_of=ts).version == k
        assert lib.read("s", as_of=ts.ceil("us").tz_localize(None).to_pydatetime()).version == k  # naive = UTC
        assert lib.read("s", as_of=ts.tz_convert("Asia/Tokyo")).version == k
    assert lib.read("s", as_of=pd.Timestamp.now(tz="UTC")).version == 3
    with pytest.raises(NoSuchVersionException):
        lib.read("s", as_of=times[0] - pd.Timedelta("1D"))
    with pytest.raises(NoSuchVersionException):
        lib.read("s", as_of=4)
    with pytest.raises(NoSuchVersionException):
        lib.read("s", as_of=-5)
    with pytest.raises(NoDataFoundException):
        lib.read("s", as_of="nosnap")
    lib.write("other", frame(1))
    with pytest.raises(NoSuchVersionException):
        lib.read("other", as_of="snap1")  # the snapshot does not hold the symbol


@pytest.mark.parametrize("as_of", [1.0, np.int64(0)], ids=["float", "np-int64"])
def test_read_as_of_bad_type(lib: Library, as_of: object) -> None:
    lib.write("s", frame(2))
    with pytest.raises(ArcticException):
        lib.read("s", as_of=as_of)


def test_read_as_of_a_bool_is_that_version_number(lib: Library) -> None:
    """As ArcticDB: ``True`` is version 1 and ``False`` version 0 (a bool is an int)."""
    lib.write("s", frame(2))
    assert lib.read("s", as_of=False).version == 0
    with pytest.raises(NoSuchVersionException):
        lib.read("s", as_of=True)
    lib.write("s", frame(3))
    assert lib.read("s", as_of=True).version == 1 and lib.has_symbol("s", as_of=True)


def test_negative_as_of_counts_deleted_versions(lib: Library) -> None:
    for k in range(3):
        lib.write("s", frame(2, base=k))
    lib.delete("s", versions=[2])
    # as in ArcticDB: as_of=-1 is the highest version id written (deleted ones included) = 2,
    # deleted -> NoSuchVersionException; the delete's own commit (id 3 in arcticlite) is not counted
    with pytest.raises(NoSuchVersionException):
        lib.read("s", as_of=-1)
    assert lib.read("s", as_of=-2).version == 1
    assert lib.read("s").version == 1


def test_negative_as_of_after_prune_and_older_deletes(lib: Library) -> None:
    for k in range(3):
        lib.write("s", frame(2, base=k))
    lib.prune_previous_versions("s")
    assert lib.read("s", as_of=-1).version == 2  # the prune's commit does not shift -1
    lib.write("s", frame(2, base=7))
    lib.delete("s", versions=[2])
    item = lib.read("s", as_of=-1)
    assert item.version == lib.read("s").version
    assert_frame_equal(item.data, frame(2, base=7))
    with pytest.raises(NoSuchVersionException):
        lib.read("s", as_of=-2)


@all_options
def test_read_date_range(lib: Library) -> None:
    df = wide(10)
    lib.write("s", df)
    t = df.index
    assert_frame_equal(lib.read("s", date_range=(t[2], t[6])).data, df.iloc[2:7])
    assert_frame_equal(lib.read("s", date_range=(None, t[3])).data, df.iloc[:4])
    assert_frame_equal(lib.read("s", date_range=(t[8], None)).data, df.iloc[8:])
    assert_frame_equal(lib.read("s", date_range=(None, None)).data, df)
    between = t[2] + pd.Timedelta("30min")
    assert_frame_equal(lib.read("s", date_range=(between, t[5].to_pydatetime())).data, df.iloc[3:6])
    assert len(lib.read("s", date_range=(t[6], t[2])).data) == 0  # reversed
    assert len(lib.read("s", date_range=(t[-1] + pd.Timedelta("1h"), None)).data) == 0
    # tz-aware bounds are converted to UTC
    tz_lo = t[4].tz_localize("UTC").tz_convert("Europe/Paris")
    assert_frame_equal(lib.read("s", date_range=(tz_lo, None)).data, df.iloc[4:])
    with pytest.raises(TypeError):
        lib.read("s", date_range=("2024-01-01", None))


@pytest.mark.parametrize("bounds", [(1, 3), (None, 3), (1.5, None), ("2024-01-01", None)])
def test_date_range_bounds_that_are_not_times_are_refused_everywhere(lib: Library, bounds: tuple) -> None:
    # as ArcticDB: an integer is not taken as nanoseconds, a string is not parsed; refused
    # before the symbol is looked up, and nothing is written
    df = frame(6)
    lib.write("s", df)
    which = "start" if bounds[0] is not None else "end"
    for call in (lambda: lib.read("s", date_range=bounds), lambda: lib.read("absent", date_range=bounds),
                 lambda: lib.update("s", df.iloc[:2], date_range=bounds),
                 lambda: lib.delete_data_in_range("s", bounds),
                 lambda: lib.read("s", query_builder=QueryBuilder().date_range(bounds))):
        with pytest.raises(TypeError, match=f"DateRange.{which}="):
            call()
    assert len(lib.list_versions("s")) == 1
    assert_frame_equal(lib.read("s").data, df)


def test_read_date_range_with_dates(lib: Library) -> None:
    df = frame(6)
    lib.write("s", df)
    got = lib.read("s", date_range=(dt.date(2024, 1, 2), dt.date(2024, 1, 4))).data
    assert_frame_equal(got, df.iloc[1:4])


def test_read_date_range_on_non_timeseries(lib: Library) -> None:
    lib.write("r", pd.DataFrame({"x": range(4)}))
    with pytest.raises(InternalException):
        lib.read("r", date_range=(None, pd.Timestamp("2024-01-01")))


@all_options
def test_read_row_range(lib: Library) -> None:
    df = wide(9)
    lib.write("s", df)
    for rr in [(0, 3), (2, 7), (-3, None), (-4, -1), (5, 100), (7, 3), (None, 2)]:
        assert_frame_equal(lib.read("s", row_range=rr).data, df.iloc[slice(*rr)])
    with pytest.raises(ArcticException, match="both"):
        lib.read("s", row_range=(0, 1), date_range=(None, None))


@all_options
def test_read_columns(lib: Library) -> None:
    df = wide(5)
    lib.write("s", df)
    assert_frame_equal(lib.read("s", columns=["f", "s"]).data, df[["f", "s"]])
    # storage order, not request order; unknown names are dropped (as in ArcticDB)
    assert_frame_equal(lib.read("s", columns=["t", "zz", "i"]).data, df[["i", "t"]])
    # no column: the columns are an empty RangeIndex, as ArcticDB gives (pandas: an empty object Index)
    assert_frame_equal(lib.read("s", columns=[]).data, df[[]].set_axis(pd.RangeIndex(0), axis=1))
    assert_frame_equal(lib.read("s", columns=["b"], row_range=(1, 4)).data, df[["b"]].iloc[1:4])
    assert_frame_equal(lib.read("s", columns=["s"], date_range=(df.index[3], None)).data, df[["s"]].iloc[3:])


@all_options
def test_read_output_formats(lib: Library) -> None:
    df = wide(4)
    lib.write("s", df)
    tbl = lib.read("s", output_format="pyarrow").data
    assert isinstance(tbl, pa.Table)
    assert tbl.num_rows == 4
    for c in df.columns:
        assert tbl.column(c).to_pylist() == pa.Table.from_pandas(df[[c]]).column(c).to_pylist()
    pl = pytest.importorskip("polars")
    pdf = lib.read("s", output_format="polars").data
    assert isinstance(pdf, pl.DataFrame)
    assert pdf.height == 4
    assert pdf["s"].to_list() == list(df["s"])
    assert pdf["i"].to_list() == list(df["i"])
    assert isinstance(lib.read("s", output_format="PYARROW").data, pa.Table)  # case-insensitive


def test_write_arrow_and_polars_input(lib: Library) -> None:
    tbl = pa.table({"a": [1, 2, 3], "b": ["x", "y", None]})
    lib.write("t", tbl)
    assert lib.read("t", output_format="pyarrow").data.select(["a", "b"]).equals(tbl)
    pl = pytest.importorskip("polars")
    pdf = pl.DataFrame({"a": [1, 2], "b": [0.5, 1.5]})
    lib.write("p", pdf)
    assert lib.read("p", output_format="polars").data.select(["a", "b"]).equals(pdf)


def test_query_builder_filter_or_clear_not_implemented(lib: Library) -> None:
    """QueryBuilder exists with ArcticDB's API; a read with one either raises a clear
    ArcticDbNotYetImplemented (nothing else) or returns exactly the filtered rows."""
    df = pd.DataFrame({"a": np.arange(5), "b": [0.0, 1.0, 0.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=5))
    lib.write("s", df)
    q = QueryBuilder()
    q = q[(q["a"] > 1) & (q["b"] != 0)]
    try:
        got = lib.read("s", query_builder=q).data
    except ArcticDbNotYetImplemented as exc:
        assert "QueryBuilder" in str(exc)
    else:
        assert_frame_equal(got, df[(df["a"] > 1) & (df["b"] != 0)])


# -- head / tail ----------------------------------------------------------------------------------
@all_options
def test_head_tail(lib: Library) -> None:
    df = wide(7)
    lib.write("s", df)
    assert_frame_equal(lib.head("s").data, df.head(5))
    assert_frame_equal(lib.head("s", 2).data, df.head(2))
    assert_frame_equal(lib.tail("s", 3).data, df.tail(3))
    assert_frame_equal(lib.head("s", -2).data, df.iloc[:-2])  # all but the last 2
    assert_frame_equal(lib.tail("s", -2).data, df.iloc[2:])  # all but the first 2
    assert_frame_equal(lib.head("s", 100).data, df)
    assert_frame_equal(lib.tail("s", 0).data, df.iloc[:0])
    assert_frame_equal(lib.head("s", 2, columns=["f"]).data, df[["f"]].head(2))
    lib.write("s", df.iloc[:3])
    assert_frame_equal(lib.tail("s", 2, as_of=0).data, df.tail(2))


def test_head_tail_range_index_is_renumbered(lib: Library) -> None:
    # ArcticDB: head/tail/row_range of a RangeIndex symbol renumber from the stored start
    df = pd.DataFrame({"x": np.arange(10)})
    lib.write("r", df)
    assert_frame_equal(lib.tail("r", 2).data, df.tail(2).reset_index(drop=True))
    assert_frame_equal(lib.read("r", row_range=(3, 5)).data, df.iloc[3:5].reset_index(drop=True))
    assert_frame_equal(lib.head("r", 3).data, df.head(3))


# -- metadata -------------------------------------------------------------------------------------
def test_read_metadata(lib: Library) -> None:
    lib.write("s", frame(2), metadata={"v": 0})
    lib.write("s", frame(3), metadata={"v": 1})
    lib.snapshot("snap")
    item = lib.read_metadata("s")
    assert item.data is None and item.metadata == {"v": 1} and item.version == 1
    assert lib.read_metadata("s", as_of=0).metadata == {"v": 0}
    assert lib.read_metadata("s", as_of="snap").version == 1
    for as_of in (None, 5):
        with pytest.raises(NoDataFoundException):
            lib.read_metadata("nope" if as_of is None else "s", as_of=as_of)
    lib.write("other", frame(1))
    with pytest.raises(NoDataFoundException):
        lib.read_metadata("other", as_of="snap")


def test_write_metadata(lib: Library) -> None:
    lib.write("s", frame(4), metadata={"v": 0})
    item = lib.write_metadata("s", {"v": "new"})
    assert item.version == 1
    got = lib.read("s")
    assert got.version == 1 and got.metadata == {"v": "new"}
    assert_frame_equal(got.data, frame(4))
    assert lib.read("s", as_of=0).metadata == {"v": 0}
    # on a missing symbol: v0 with data None; appending to it then fails (as in ArcticDB)
    assert lib.write_metadata("m", [1, 2]).version == 0
    assert lib.read("m").data is None
    assert lib.read_metadata("m").metadata == [1, 2]
    with pytest.raises(InternalException):
        lib.append("m", frame(2))


def test_write_metadata_with_prune(lib: Library) -> None:
    lib.write("s", frame(3))
    lib.write("s", frame(4))
    lib.write_metadata("s", "m", prune_previous_versions=True)
    assert versions_of(lib, "s") == [2]
    assert_frame_equal(lib.read("s").data, frame(4))


# -- get_description ------------------------------------------------------------------------------
@all_options
def test_get_description(lib: Library) -> None:
    df = wide(6)
    lib.write("s", df)
    d = lib.get_description("s")
    assert [c.name for c in d.columns] == ["i", "f", "s", "b", "t"]
    assert [c.dtype.name for c in d.columns] == ["INT32", "FLOAT64", "UTF_DYNAMIC64", "BOOL8", "NANOSECONDS_UTC64"]
    assert d.index[0].name == "ts"
    assert d.index_type == "index"
    assert d.row_count == 6
    assert d.date_range == (df.index[0], df.index[-1])
    assert d.sorted == "ASCENDING"
    assert d.last_update_time.tz is not None
    lib.append("s", wide(8).iloc[6:])
    d2 = lib.get_description("s")
    assert d2.row_count == 8 and d2.date_range[1] == wide(8).index[-1]
    assert lib.get_description("s", as_of=0) == d


def test_get_description_kinds(lib: Library) -> None:
    lib.write("r", pd.DataFrame({"x": range(3)}))
    d = lib.get_description("r")
    assert d.sorted == "UNKNOWN" and d.row_count == 3
    assert all(pd.isna(x) for x in d.date_range)
    lib.write("tz", pd.DataFrame({"x": [1, 2]}, index=pd.date_range("2024-01-01", periods=2, tz="Asia/Tokyo")))
    assert lib.get_description("tz").date_range[0] == pd.Timestamp("2024-01-01", tz="Asia/Tokyo")
    lib.write("ser", pd.Series([1, 2, 3]))
    assert lib.get_description("ser").index_type == "NA"
    mi = pd.MultiIndex.from_arrays([pd.date_range("2024-01-01", periods=2), ["a", "b"]])
    lib.write("mi", pd.DataFrame({"x": [1, 2]}, index=mi))
    assert lib.get_description("mi").index_type == "multi_index"
    with pytest.raises(NoSuchVersionException):
        lib.get_description("nope")


def test_description_of_a_symbol_begun_by_a_zero_row_write(lib: Library) -> None:
    # described as ArcticDB describes it: the index also listed as a timestamp column, kept
    # through appends and updates; a later non-empty write describes normally again
    empty = pd.DataFrame({"a": np.array([], dtype=np.int64)}, index=pd.DatetimeIndex([], name="ts"))
    lib.write("e", empty)
    d = lib.get_description("e")
    assert [c.name for c in d.columns] == ["ts", "a"] and d.index[0].name == "ts" and d.row_count == 0
    lib.append("e", pd.DataFrame({"a": [1]}, index=pd.DatetimeIndex(["2024-01-01"], name="ts")))
    assert [c.name for c in lib.get_description("e").columns] == ["ts", "a"]
    assert lib.read("e").data["a"].tolist() == [1]  # the data itself is as written
    lib.write("r", pd.DataFrame({"a": np.array([], dtype=np.int64)}))  # unnamed RangeIndex
    assert [c.name for c in lib.get_description("r").columns] == ["index", "a"]
    lib.write("s", pd.Series(np.array([], dtype=np.float64), name="s"))
    ds = lib.get_description("s")
    assert [c.name for c in ds.columns] == ["index", "s"] and ds.index == () and ds.index_type == "NA"
    lib.write("e", pd.DataFrame({"a": [2]}, index=pd.DatetimeIndex(["2024-01-02"], name="ts")))
    assert [c.name for c in lib.get_description("e").columns] == ["a"]
    lib.update("e", empty)  # an update with no rows changes nothing of the description
    assert [c.name for c in lib.get_description("e").columns] == ["a"]


def test_options_and_name(lib: Library, library_options: object) -> None:
    assert lib.name == "lib"
    assert lib.options() == effective_options(library_options)


def test_clear_errors_for_bad_metadata_and_nat_indexes() -> None:
    import threading
    import warnings

    import arcticlite as adb
    from arcticlite.exceptions import StorageUriError, UnsortedDataException, UserInputException

    lib = adb.Arctic("mem://").create_library("bad")
    with pytest.raises(UserInputException, match="does not pickle"):
        lib.write("s", frame(2), metadata=threading.Lock())
    with pytest.raises(StorageUriError, match="expected a str"):
        adb.Arctic(123)  # type: ignore[arg-type]
    nat = pd.DataFrame({"a": [1, 2]}, index=pd.DatetimeIndex(["2024-01-01", None]))
    with pytest.raises(UnsortedDataException, match="NaT"):
        lib.write("n", nat)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning on the way
        lib.write("n", nat, validate_index=False)
    assert lib.read("n").data.index[1] is pd.NaT
    assert lib.list_symbols() == ["n"]  # the refused writes left no symbol


def test_big_endian_values_are_stored_in_the_machines_order(lib: Library) -> None:
    """Big-endian numpy values (read from a file written elsewhere) are stored and read back
    as the same numbers (Arrow refused them: an ArrowNotImplementedError reached the user)."""
    lib.write("a", np.arange(3, dtype=">i4"))
    np.testing.assert_array_equal(lib.read("a").data, np.arange(3, dtype="int32"))
    df = pd.DataFrame({"x": np.arange(3, dtype=">f8")}, index=pd.date_range("2024-01-01", periods=3))
    lib.write("f", df)
    pd.testing.assert_frame_equal(lib.read("f").data, df.astype({"x": "float64"}), check_freq=False)


def test_an_int_column_label_is_found_by_its_text_too(lib: Library) -> None:
    """As ArcticDB (which stores int labels as text): ``columns=["0"]`` reads column ``0``."""
    df = pd.DataFrame({0: [1, 2], 1: [1.5, 2.5]}, index=pd.date_range("2024-01-01", periods=2))
    lib.write("s", df)
    pd.testing.assert_frame_equal(lib.read("s", columns=["0"]).data, df[[0]], check_freq=False)
    pd.testing.assert_frame_equal(lib.read("s", columns=[1]).data, df[[1]], check_freq=False)
