"""QueryBuilder details a user switching from ArcticDB relies on, found by replaying random
queries on both engines: each test states what ArcticDB 6.28 does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import arcticlite as adb
from arcticlite.exceptions import InternalException, SchemaException, UserInputException
from tests.query.conftest import in_output_order


@pytest.fixture
def lib(tmp_path: Path) -> adb.Library:
    return adb.Arctic(f"lmdb://{tmp_path}/db").get_library("l", create_if_missing=True)


# -- resample ------------------------------------------------------------------------------------

def test_resample_buckets_come_in_time_order(lib: adb.Library) -> None:
    """ArcticDB (and pandas) give the buckets in time order, whatever the hash of their labels:
    these three once came back 09:00, 21:00, 00:00."""
    df = pd.DataFrame({"x": [1, 2, 3]},
                      index=pd.DatetimeIndex(["2020-01-02 11:00", "2020-01-05 02:00", "2020-01-05 21:00"]))
    lib.write("x", df)
    got = lib.read("x", query_builder=adb.QueryBuilder().resample("3h").agg({"x": "sum"})).data
    exp = pd.DataFrame({"x": [1, 2, 3]},
                       index=pd.DatetimeIndex(["2020-01-02 09:00", "2020-01-05 00:00", "2020-01-05 21:00"]))
    pd.testing.assert_frame_equal(got, exp, check_freq=False)


def test_resample_of_irregular_times_matches_pandas_buckets(lib: adb.Library) -> None:
    """Buckets without rows are left out (ArcticDB); the others are pandas' buckets, in order."""
    rng = np.random.default_rng(3)
    ns = np.sort(rng.integers(0, 400 * 86_400, 300)) * 10**9 + pd.Timestamp("2020-01-01").value
    df = pd.DataFrame({"x": rng.integers(0, 100, 300)}, index=pd.DatetimeIndex(ns))
    lib.write("x", df)
    for rule in ("3h", "7h", "1D", "13min"):
        got = lib.read("x", query_builder=adb.QueryBuilder().resample(rule).agg({"x": "sum", "n": ("x", "count")})).data
        r = df.resample(rule, origin="epoch")["x"]  # ArcticDB's default origin
        exp = pd.DataFrame({"x": r.sum(), "n": r.count().astype(np.uint64)})
        exp = in_output_order(exp[exp["n"] > 0])
        pd.testing.assert_frame_equal(got, exp, check_freq=False)


def test_resample_of_a_series_gives_a_series_named_as_it(lib: adb.Library) -> None:
    """A symbol written as a Series resamples to a Series under the Series' name (ArcticDB),
    whatever the aggregation's output is called; later clauses use the output's name."""
    s = pd.Series([1.0, np.nan, 3.0], index=pd.date_range("2020", periods=3), name="v")
    lib.write("s", s)
    exp = pd.Series([1.0, 3.0], index=pd.DatetimeIndex(["2020-01-01", "2020-01-03"]), name="v")
    q = adb.QueryBuilder()
    for query in (q.resample("2D").agg({"v": "sum"}), adb.QueryBuilder().resample("2D").agg({"o": ("v", "sum")})):
        got = lib.read("s", query_builder=query).data
        pd.testing.assert_series_equal(got, exp, check_freq=False)
    q = adb.QueryBuilder()
    got = lib.read("s", query_builder=q.resample("2D").agg({"o": ("v", "mean")})[q["o"] > 2]).data
    pd.testing.assert_series_equal(got, exp.iloc[1:], check_freq=False)
    got = lib.read("s", query_builder=adb.QueryBuilder().resample("2D").agg({"v": "count"})).data
    pd.testing.assert_series_equal(got, exp.map(lambda _: 1).astype(np.uint64), check_freq=False)


def test_resample_of_a_series_into_several_outputs_gives_a_frame(lib: adb.Library) -> None:
    """ArcticDB keeps only one of several outputs of a Series (and returns a Series): arcticlite
    keeps them all, so the result is a DataFrame."""
    s = pd.Series([1.0, np.nan, 3.0], index=pd.date_range("2020", periods=3), name="v")
    lib.write("s", s)
    got = lib.read("s", query_builder=adb.QueryBuilder().resample("2D").agg(
        {"a": ("v", "sum"), "b": ("v", "max")})).data
    exp = pd.DataFrame({"a": [1.0, 3.0], "b": [1.0, 3.0]}, index=pd.DatetimeIndex(["2020-01-01", "2020-01-03"]))
    pd.testing.assert_frame_equal(got, in_output_order(exp), check_freq=False)


def test_groupby_of_a_series_gives_a_frame(lib: adb.Library) -> None:
    """ArcticDB fails (InternalException) to group a Series by its own values and count them;
    arcticlite groups them, as a DataFrame indexed by the values."""
    s = pd.Series([1.0, np.nan, 3.0], index=pd.date_range("2020", periods=3), name="v")
    lib.write("s", s)
    got = lib.read("s", query_builder=adb.QueryBuilder().groupby("v").agg({"v": "count"})).data
    exp = pd.DataFrame({"v": np.array([1, 1], dtype=np.uint64)}, index=pd.Index([1.0, 3.0], name="v"))
    pd.testing.assert_frame_equal(got.sort_index(), exp)


@pytest.mark.parametrize("op", ["first", "last"])
@pytest.mark.parametrize("rows", [2, 0])
def test_resample_first_last_of_strings_without_values(lib: adb.Library, op: str, rows: int) -> None:
    """first / last of a string column holding only None is None (ArcticDB and pandas); of an
    empty frame, an empty object column."""
    df = pd.DataFrame({"s": [None, None], "i": [1, 2]}, index=pd.date_range("2020", periods=2, freq="s")).iloc[:rows]
    lib.write("x", df)
    got = lib.read("x", query_builder=adb.QueryBuilder().resample("1min").agg({"s": op})).data
    exp = pd.DataFrame({"s": np.array([None] * min(rows, 1), dtype=object)},
                       index=pd.DatetimeIndex(["2020-01-01"][:min(rows, 1)]))
    pd.testing.assert_frame_equal(got, exp, check_freq=False, check_index_type=rows > 0)


@pytest.mark.parametrize("op", ["sum", "mean", "min"])
def test_resample_sum_of_strings_without_values_is_refused(lib: adb.Library, op: str) -> None:
    """ArcticDB refuses numeric aggregations of a string column (SchemaException), values or not."""
    df = pd.DataFrame({"s": [None, None]}, index=pd.date_range("2020", periods=2, freq="s"))
    lib.write("x", df)
    with pytest.raises(SchemaException, match="UTF_DYNAMIC64"):
        lib.read("x", query_builder=adb.QueryBuilder().resample("1min").agg({"s": op}))


def test_resample_first_last_of_durations(lib: adb.Library) -> None:
    """ArcticDB cannot store timedeltas; arcticlite can, and takes their first / last as pandas
    does (NaT where a bucket has none)."""
    df = pd.DataFrame({"d": pd.to_timedelta([None, 2, None, 4, None], unit="s")},
                      index=pd.to_datetime(["2020-01-01 00:00:01", "2020-01-01 00:00:02", "2020-01-01 00:01:01",
                                            "2020-01-01 00:01:02", "2020-01-01 00:02:00"]))
    lib.write("x", df)
    got = lib.read("x", query_builder=adb.QueryBuilder().resample("1min").agg(
        {"d": "first", "e": ("d", "last")})).data
    r = df.resample("1min")["d"]
    pd.testing.assert_frame_equal(got, in_output_order(pd.DataFrame({"d": r.first(), "e": r.last()})), check_freq=False)


# -- isin / comparisons on strings ---------------------------------------------------------------

@pytest.fixture
def strings(lib: adb.Library) -> adb.Library:
    df = pd.DataFrame({"s": ["a", "b", None, np.nan, "é"], "i": [1, 2, 3, 4, 5]},
                      index=pd.date_range("2020", periods=5))
    lib.write("x", df)
    return lib


def _rows(lib: adb.Library, cond: object) -> list[int]:
    q = adb.QueryBuilder()
    return lib.read("x", query_builder=q[cond]).data["i"].tolist()  # type: ignore[index]


def test_string_isin_ignores_nan_beside_strings(strings: adb.Library) -> None:
    """ArcticDB: isin(["a", nan]) is the rows equal to "a"; isnotin(["a", nan]) the others, missing
    ones included."""
    q = adb.QueryBuilder()
    assert _rows(strings, q["s"].isin(["a", np.nan])) == [1]
    assert _rows(strings, q["s"].isnotin(["a", np.nan])) == [2, 3, 4, 5]
    assert _rows(strings, q["s"].isin([b"a", float("nan")])) == [1]


def test_string_isin_of_nan_alone_is_refused(strings: adb.Library) -> None:
    """A set of NaN alone is a set of numbers, which a string column is not in (ArcticDB)."""
    q = adb.QueryBuilder()
    for cond in (q["s"].isin([np.nan]), q["s"].isnotin([np.nan])):
        with pytest.raises(UserInputException, match="membership"):
            _rows(strings, cond)


@pytest.mark.parametrize("values", [[None], ["a", None], ["a", pd.NA]])
def test_isin_with_a_missing_value_raises_internal_exception(strings: adb.Library, values: list[object]) -> None:
    """ArcticDB raises InternalException for a set holding None / NA, on any column."""
    q = adb.QueryBuilder()
    for cond in (q["s"].isin(values), q["s"].isnotin(values), q["i"].isin(values)):
        with pytest.raises(InternalException, match="isna"):
            _rows(strings, cond)


def test_bytes_literals_compare_as_utf8_strings(strings: adb.Library) -> None:
    """ArcticDB takes bytes in a query as the string they encode (UTF-8)."""
    q = adb.QueryBuilder()
    assert _rows(strings, q["s"] == b"a") == [1]
    assert _rows(strings, q["s"] != b"a") == [2, 3, 4, 5]
    assert _rows(strings, q["s"] == "é".encode()) == [5]
    assert _rows(strings, q["s"] == np.bytes_(b"b")) == [2]
    assert _rows(strings, q["s"].isin([b"a"])) == [1]
    assert _rows(strings, q["s"].isin(["b", b"a"])) == [1, 2]
    assert _rows(strings, q["s"].isin(["b", "é".encode()])) == [2, 5]  # ArcticDB: UnicodeDecodeError
    assert _rows(strings, q["s"].isnotin([b"a"])) == [2, 3, 4, 5]


def test_bytes_that_are_not_utf8_equal_no_string(strings: adb.Library) -> None:
    """ArcticDB: == b"\\xff" matches no row, != every row (missing ones too)."""
    q = adb.QueryBuilder()
    assert _rows(strings, q["s"] == b"\xff") == []
    assert _rows(strings, q["s"] != b"\xff") == [1, 2, 3, 4, 5]
    assert _rows(strings, q["s"].isin([b"\xff"])) == []
    assert _rows(strings, q["s"].isin(["a", b"\xff"])) == [1]
    assert _rows(strings, q["s"].isnotin([b"\xff"])) == [1, 2, 3, 4, 5]


def test_bytes_against_numbers_are_refused(strings: adb.Library) -> None:
    """A bytes literal is a string: a number column is not compared with it (ArcticDB)."""
    q = adb.QueryBuilder()
    with pytest.raises(UserInputException, match="Invalid comparison"):
        _rows(strings, q["i"] == b"1")
    with pytest.raises(UserInputException, match="membership"):
        _rows(strings, q["i"].isin([b"1"]))


# -- joins of row-numbered symbols ---------------------------------------------------------------

def _frame(index: pd.RangeIndex) -> pd.DataFrame:
    return pd.DataFrame({"x": np.arange(len(index))}, index=index)


@pytest.mark.parametrize(("a", "b", "exp"), [
    (pd.RangeIndex(3, 5), pd.RangeIndex(7, 8), pd.RangeIndex(3, 6)),            # on from the first start
    (pd.RangeIndex(-3, 0), pd.RangeIndex(0, 2), pd.RangeIndex(-3, 2)),
    (pd.RangeIndex(3, 9, 2), pd.RangeIndex(1, 5, 2), pd.RangeIndex(3, 13, 2)),  # by the common step
    (pd.RangeIndex(5, 3, -1), pd.RangeIndex(7, 5, -1), pd.RangeIndex(5, 1, -1)),
    (pd.RangeIndex(3, 9, 2), pd.RangeIndex(0, 2), pd.RangeIndex(0, 5)),         # steps differ: from 0
    (pd.RangeIndex(3, 5), pd.RangeIndex(10, 20, 5), pd.RangeIndex(0, 4)),
])
def test_concat_numbers_rows_from_the_first_symbols_start(lib: adb.Library, a: pd.RangeIndex, b: pd.RangeIndex,
                                                          exp: pd.RangeIndex) -> None:
    """ArcticDB numbers joined rows on from the first symbol's start by the step all symbols
    share, and 0, 1, 2, ... when their steps differ."""
    lib.write("a", _frame(a))
    lib.write("b", _frame(b))
    got = adb.concat([lib.read("a", lazy=True), lib.read("b", lazy=True)]).collect().data
    pd.testing.assert_index_equal(got.index, exp, exact=True)
    assert got["x"].tolist() == list(range(len(a))) + list(range(len(b)))


def test_concat_numbering_survives_clauses_on_both_sides(lib: adb.Library) -> None:
    """A symbol's own clauses keep its start (a read numbers from the stored start), and the
    clauses after the join number on from the joined start (ArcticDB); a shared index name stays."""
    a, b = _frame(pd.RangeIndex(3, 9, name="n")), _frame(pd.RangeIndex(0, 2, name="n"))
    lib.write("a", a)
    lib.write("b", b)
    la = lib.read("a", lazy=True)
    la = la[la["x"] > 2]
    got = adb.concat([la, lib.read("b", lazy=True)]).collect().data
    pd.testing.assert_index_equal(got.index, pd.RangeIndex(3, 8, name="n"), exact=True)
    joined = adb.concat([lib.read("a", lazy=True), lib.read("b", lazy=True)])
    got = joined[joined["x"] > 0].collect().data
    pd.testing.assert_index_equal(got.index, pd.RangeIndex(3, 9, name="n"), exact=True)
    assert got["x"].tolist() == [1, 2, 3, 4, 5, 1]
    got = adb.concat([lib.read("a", lazy=True), lib.read("b", lazy=True)]).tail(2).collect().data
    pd.testing.assert_index_equal(got.index, pd.RangeIndex(3, 5, name="n"), exact=True)


def test_read_batch_and_join_of_row_ranges_numbers_from_the_first(lib: adb.Library) -> None:
    """Two row ranges of one symbol whose rows are numbered from 3: joined rows 3, 4, 5, 6."""
    lib.write("a", _frame(pd.RangeIndex(3, 9)))
    got = lib.read_batch_and_join([adb.ReadRequest("a", row_range=(0, 2)), adb.ReadRequest("a", row_range=(3, 5))],
                                  adb.QueryBuilder().concat("outer").head(10)).data
    pd.testing.assert_index_equal(got.index, pd.RangeIndex(3, 7), exact=True)
    assert got["x"].tolist() == [0, 1, 3, 4]


def test_concat_of_series_numbers_from_the_first(lib: adb.Library) -> None:
    lib.write("a", _frame(pd.RangeIndex(3, 5))["x"])
    lib.write("b", _frame(pd.RangeIndex(7, 9))["x"])
    got = adb.concat([lib.read("a", lazy=True), lib.read("b", lazy=True)]).collect().data
    pd.testing.assert_series_equal(got, pd.Series([0, 1, 0, 1], index=pd.RangeIndex(3, 7), name="x"))


# -- values of mixed kinds -------------------------------------------------------------------------

def _times(lib: adb.Library) -> pd.Timestamp:
    ts = pd.Timestamp("2024-01-02")
    lib.write("t", pd.DataFrame({"i": np.array([1, 2, ts.value], np.int64), "f": [1.0, np.nan, 2.0],
                                 "t": pd.to_datetime(["2024-01-01", "2024-01-02", None]),
                                 "u": np.array([4, 2**63 + 5, 0], np.uint64)},
                                index=pd.date_range("2024-01-01", periods=3, freq="h")))
    return ts


def test_a_timestamp_against_a_number_is_its_nanoseconds(lib: adb.Library) -> None:
    ts = _times(lib)

    def rows(build) -> list[int]:
        q = adb.QueryBuilder()
        return [int(h) for h in lib.read("t", query_builder=q[build(q)]).data.index.hour]

    assert rows(lambda q: q["i"] == ts) == [2]
    assert rows(lambda q: q["t"] == ts.value) == [1]
    assert rows(lambda q: q["t"] != 5) == [0, 1, 2]  # NaT is missing: not equal to anything
    assert rows(lambda q: q["t"] < 5) == []
    assert rows(lambda q: ts > q["i"]) == [0, 1]
    assert rows(lambda q: q["i"].isin([ts, 1])) == [0, 2]
    assert rows(lambda q: q["t"].isin([ts.value, 5])) == [1]


def test_negating_a_uint64_column_wraps_into_int64(lib: adb.Library) -> None:
    _times(lib)
    q = adb.QueryBuilder()
    got = lib.read("t", query_builder=q.apply("n", -q["u"])).data["n"]
    assert got.dtype == np.int64 and got.tolist() == [-4, 2**63 - 5, 0]


def test_a_projection_named_in_columns_is_returned(lib: adb.Library) -> None:
    _times(lib)
    q = adb.QueryBuilder()
    got = lib.read("t", columns=["n"], query_builder=q.apply("n", q["i"] * 2)).data
    assert list(got.columns) == ["n"] and got["n"].tolist()[:2] == [2, 4]
    q = adb.QueryBuilder()
    assert list(lib.read("t", columns=["f", "n"], query_builder=q.apply("n", q["i"] * 2)).data.columns) == ["f", "n"]


@pytest.mark.parametrize(("left", "right", "dtype"), [
    ("g", "g", "float32"), ("g", 0.1, "float32"), (1.5, "g", "float32"), ("g", 3, "float64"), ("g", "k", "float64"),
    ("k", 0, "int16"), ("k", -1, "int8"), ("k", 300, "int32"), ("i", 2**40, "float64"), ("k", 1.5, "float64"),
])
def test_where_gives_arcticdbs_result_type(lib: adb.Library, left, right, dtype: str) -> None:
    lib.write("w", pd.DataFrame({"g": np.array([0.5, np.nan, 2], np.float32), "k": np.array([-1, 2, 3], np.int8),
                                 "i": [1, 2, 3], "c": [1, -1, 1]}))
    q = adb.QueryBuilder()

    def side(x):
        return q[x] if isinstance(x, str) else x

    got = lib.read("w", query_builder=q.apply("n", adb.where(q["c"] > 0, side(left), side(right)))).data["n"]
    assert str(got.dtype) == dtype


def test_uint64_columns_beyond_int64_compare_with_timestamps_and_average_as_doubles(lib: adb.Library) -> None:
    ts = _times(lib)  # u: 4, 2**63 + 5, 0
    lib.write("v", pd.DataFrame({"u": np.array([2**63 + 5, ts.value, 2**64 - 1, 7], np.uint64), "k": [1, 2, 3, 3]}))
    q = adb.QueryBuilder()
    assert lib.read("v", query_builder=q[q["u"] == ts]).data["u"].tolist() == [ts.value]
    q = adb.QueryBuilder()
    assert lib.read("v", query_builder=q[q["u"] < ts]).data["u"].tolist() == [7]
    q = adb.QueryBuilder()
    means = lib.read("v", query_builder=q.groupby("k").agg({"u": "mean"})).data.sort_index()["u"]
    assert means.loc[3] == pytest.approx((2**64 - 1 + 7) / 2)  # not wrapped around 2**64
