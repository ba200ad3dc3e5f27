"""Filters and projections against the same query evaluated by pandas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from arcticlite import Library, QueryBuilder, col, where
from arcticlite.exceptions import SchemaException, UserInputException
from tests.query.conftest import sample_frame


@pytest.fixture
def df(lib: Library) -> pd.DataFrame:
    d = sample_frame()
    lib.write("s", d)
    return d


def read(lib: Library, q: QueryBuilder, **kw: object) -> pd.DataFrame:
    return lib.read("s", query_builder=q, **kw).data  # type: ignore[no-any-return]


def check(lib: Library, q: QueryBuilder, expected: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(read(lib, q), expected, check_freq=False)


def test_comparisons_with_scalars(lib: Library, df: pd.DataFrame) -> None:
    q = QueryBuilder()
    check(lib, q[q["i"] > 10], df[df.i > 10])
    check(lib, q[q["i"] >= 10], df[df.i >= 10])
    check(lib, q[q["f"] < 0.1], df[df.f < 0.1])
    check(lib, q[q["f"] <= 0], df[df.f <= 0])
    check(lib, q[q["u"] == 7], df[df.u == 7])
    check(lib, q[q["f"] != 0.5], df[df.f != 0.5])  # NaN != 0.5 holds, as in pandas
    check(lib, q[q["s"] == "apple"], df[df.s == "apple"])
    check(lib, q[q["s"] != "apple"], df[df.s != "apple"])  # None rows kept
    check(lib, q[q["b"]], df[df.b])
    check(lib, q[q["b"] == True], df[df.b])  # noqa: E712
    check(lib, q[10 < q["i"]], df[df.i > 10])
    check(lib, q[q["t"] > pd.Timestamp("2023-06-04")], df[df.t > pd.Timestamp("2023-06-04")])


@pytest.mark.parametrize("true, false", [(True, False), (np.bool_(True), np.bool_(False))])
def test_bool_operands_fold_when_the_query_is_built(lib: Library, df: pd.DataFrame, true: object,
                                                    false: object) -> None:
    q = QueryBuilder()
    cond = q["i"] > 0
    for folded in (cond & true, true & cond, cond | false, false | cond, cond ^ false, false ^ cond):
        assert str(q[folded]) == str(q[cond])
        check(lib, q[folded], df[df.i > 0])
    for negated in (cond ^ true, true ^ cond):
        assert str(q[negated]) == str(q[~cond])
        check(lib, q[negated], df[~(df.i > 0)])
    check(lib, q[((q["i"] > 0) & true) | (q["f"] < -1)], df[(df.i > 0) | (df.f < -1)])
    # a filter that would keep every row or none is refused, as a bare bool is
    for constant in (cond & false, false & cond, cond | true, true | cond):
        assert isinstance(constant, bool)
        with pytest.raises(UserInputException, match="would produce a column"):
            q[constant]
    # as a projection, the constant is a column of that value
    q2 = QueryBuilder()
    q2.apply("c", (q2["i"] > 0) | true)
    assert read(lib, q2)["c"].tolist() == [True] * len(df)


def test_clauses_can_be_cleared_through_either_name() -> None:
    q = QueryBuilder()
    q = q[q["i"] > 0]
    q.clauses.clear()
    q._python_clauses.clear()
    assert q == QueryBuilder()


def test_comparisons_between_columns_and_arithmetic(lib: Library, df: pd.DataFrame) -> None:
    q = QueryBuilder()
    check(lib, q[q["i"] > q["f"]], df[df.i > df.f])
    check(lib, q[q["i"] * 2 + 1 > q["u"] - 100], df[df.i * 2 + 1 > df.u.astype(np.int64) - 100])
    check(lib, q[q["i"] / 4 > 2.5], df[df.i / 4 > 2.5])
    check(lib, q[abs(q["i"]) < 10], df[df.i.abs() < 10])
    check(lib, q[-q["i"] > 10], df[-df.i > 10])
    check(lib, q[col("i") > 0], df[df.i > 0])


def test_boolean_operators(lib: Library, df: pd.DataFrame) -> None:
    q = QueryBuilder()
    check(lib, q[(q["i"] > 0) & (q["s"] == "banana")], df[(df.i > 0) & (df.s == "banana")])
    check(lib, q[(q["i"] > 30) | (q["f"] < -1)], df[(df.i > 30) | (df.f < -1)])
    check(lib, q[(q["i"] > 0) ^ q["b"]], df[(df.i > 0) ^ df.b])
    check(lib, q[~(q["i"] > 0)], df[~(df.i > 0)])
    check(lib, q[~q["b"]], df[~df.b])


def test_membership_and_missing(lib: Library, df: pd.DataFrame) -> None:
    q = QueryBuilder()
    check(lib, q[q["s"].isin(["apple", "date"])], df[df.s.isin(["apple", "date"])])
    check(lib, q[q["s"].isin("apple", "date")], df[df.s.isin(["apple", "date"])])
    check(lib, q[q["s"].isnotin(["apple"])], df[~df.s.isin(["apple"])])
    check(lib, q[q["i"].isin([1, 2, 3, -7])], df[df.i.isin([1, 2, 3, -7])])
    check(lib, q[q["i"].isin([])], df.iloc[:0])
    check(lib, q[q["i"].isnotin([])], df)
    check(lib, q[q["f"].isin([0.5, 1.5])], df[df.f.isin([0.5, 1.5])])
    check(lib, q[q["f"].isna()], df[df.f.isna()])
    check(lib, q[q["f"].isnull()], df[df.f.isna()])
    check(lib, q[q["s"].notna()], df[df.s.notna()])
    check(lib, q[q["s"].notnull()], df[df.s.notna()])
    check(lib, q[q["i"].isna()], df.iloc[:0])
    check(lib, q[q["s"].regex_match("an")], df[df.s.str.contains("an", na=False)])
    check(lib, q[q["s"].regex_match("^[ab]")], df[df.s.str.contains("^[ab]", na=False)])


def test_multiple_filters_and_filter_on_index(lib: Library, df: pd.DataFrame) -> None:
    q = QueryBuilder()
    q = q[q["i"] > -20]
    q = q[q["f"] > 0]
    check(lib, q, df[(df.i > -20) & (df.f > 0)])
    t = pd.Timestamp("2024-01-01 01:30")
    q = QueryBuilder()
    check(lib, q[(q["ts"] >= t) & (q["i"] > 0)], df[(df.index >= t) & (df.i > 0)])
    check(lib, q[q["ts"] == df.index[3]], df.iloc[3:4])
    check(lib, q[(q["ts"] > t) | (q["i"] > 40)], df[(df.index > t) | (df.i > 40)])


def test_apply_projections(lib: Library, df: pd.DataFrame) -> None:
    q = QueryBuilder()
    out = read(lib, q.apply("n", q["i"] * q["f"] + 1))
    pd.testing.assert_series_equal(out["n"], (df.i * df.f + 1).rename("n"), check_freq=False)
    q = QueryBuilder()
    out = read(lib, q.apply("n", where(q["i"] > 0, q["i"], 0)))
    pd.testing.assert_series_equal(out["n"], df.i.where(df.i > 0, 0).rename("n"), check_freq=False)
    q = QueryBuilder()
    out = read(lib, q.apply("n", where(q["b"], q["s"], "none")))
    pd.testing.assert_series_equal(out["n"], df.s.where(df.b, "none").rename("n"), check_freq=False)
    q = QueryBuilder()
    q = q.apply("n", col("u") + col("u"))
    q = q[q["n"] > 250]
    out = read(lib, q)
    assert out["n"].dtype == np.uint16  # widened like ArcticDB: no uint8 overflow
    expected = df.u.astype(np.uint16) * 2
    pd.testing.assert_series_equal(out["n"], expected[expected > 250].rename("n"), check_freq=False)
    q = QueryBuilder()
    out = read(lib, q.apply("i", q["i"] * 10))
    assert list(out.columns) == list(df.columns)
    pd.testing.assert_series_equal(out["i"], df.i * 10, check_freq=False)


def test_filter_on_range_index_renumbers(lib: Library) -> None:
    d = sample_frame(dt_index=False)
    d.index = pd.RangeIndex(100, 100 + 2 * len(d), 2)
    lib.write("r", d)
    q = QueryBuilder()
    out = lib.read("r", query_builder=q[q["i"] > 0]).data
    exp = d[d.i > 0]
    exp.index = pd.RangeIndex(100, 100 + 2 * len(exp), 2)
    pd.testing.assert_frame_equal(out, exp)


def test_series_symbol(lib: Library) -> None:
    s = pd.Series(np.arange(20.0), name="v", index=pd.date_range("2024", periods=20))
    lib.write("ser", s)
    q = QueryBuilder()
    pd.testing.assert_series_equal(lib.read("ser", query_builder=q[q["v"] > 12]).data, s[s > 12], check_freq=False)


def test_columns_with_query(lib: Library, df: pd.DataFrame) -> None:
    q = QueryBuilder()
    out = read(lib, q[q["i"] > 0].apply("n", q["i"] + 1), columns=["f"])
    pd.testing.assert_frame_equal(out, df.loc[df.i > 0, ["f"]])
    out = read(lib, q[q["i"] > 0], columns=[])
    assert out.shape == ((df.i > 0).sum(), 0)


def test_output_formats(lib: Library, df: pd.DataFrame) -> None:
    q = QueryBuilder()
    q = q[q["i"] > 0]
    t = lib.read("s", query_builder=q, output_format="pyarrow").data
    assert t.num_rows == (df.i > 0).sum()
    assert t.column("i").to_pylist() == df.i[df.i > 0].tolist()


@pytest.mark.parametrize(
    ("make", "exc", "match"),
    [
        (lambda q: q[q["zz"] > 1], SchemaException, "E_COLUMN_DOESNT_EXIST"),
        (lambda q: q.apply("n", q["zz"] + 1), SchemaException, "E_COLUMN_DOESNT_EXIST"),
        (lambda q: q[q["s"] < "b"], UserInputException, "E_INVALID_USER_ARGUMENT"),
        (lambda q: q[q["s"] > "b"], UserInputException, "E_INVALID_USER_ARGUMENT"),
        (lambda q: q[q["s"] == 1], UserInputException, "Invalid comparison"),
        (lambda q: q[q["i"] == "1"], UserInputException, "Invalid comparison"),
        (lambda q: q[q["i"] + 1], UserInputException, "not a bitset"),
        (lambda q: q.apply("n", q["i"] > 1), UserInputException, "bitset, not a column"),
        (lambda q: q.apply("n", q["s"] + "x"), UserInputException, "Non-numeric"),
        (lambda q: q.apply("n", abs(q["s"])), UserInputException, "unary"),
        (lambda q: q[q["i"].regex_match("1")], UserInputException, "REGEX_MATCH"),
        (lambda q: q[q["u"].isin(["a"])], UserInputException, "membership"),
        (lambda q: q[q["u"] & (q["f"] > 1)], UserInputException, "AND"),
        (lambda q: q.date_range((pd.Timestamp(0), None))[q["zz"].isna()], SchemaException, "zz"),
    ],
)
def test_errors_like_arcticdb(lib: Library, df: pd.DataFrame, make: object, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        read(lib, make(QueryBuilder()))  # type: ignore[operator]


def test_builder_errors() -> None:
    q = QueryBuilder()
    with pytest.raises(UserInputException):
        q[5]
    with pytest.raises(TypeError):
        q.date_range(("2024-01-01", None))
    with pytest.raises(TypeError):
        q.head(2.5)  # type: ignore[arg-type]


def test_arcticdb_refusals_at_build_time_and_nan_in_sets() -> None:
    import math

    import arcticlite as adb
    from arcticlite.exceptions import ArcticException, InternalException, UserInputException

    q = adb.QueryBuilder()
    with pytest.raises(UserInputException, match="'and', 'or', 'not'"):
        _ = q["a"] and q["b"]
    with pytest.raises(UserInputException, match="'and', 'or', 'not'"):
        _ = not q["a"]
    with pytest.raises(ArcticException, match="Infinite"):
        _ = q["a"] < math.inf
    with pytest.raises(InternalException, match="regex"):
        q["a"].regex_match("[")
    lib = adb.Arctic("mem://").create_library("nan")
    lib.write("s", pd.DataFrame({"a": [1.0, float("nan"), 3.0]}, index=pd.date_range("2024", periods=3)))
    q = adb.QueryBuilder()
    assert lib.read("s", query_builder=q[q["a"].isin([float("nan"), 3.0])]).data["a"].tolist() == [3.0]
    q = adb.QueryBuilder()
    got = lib.read("s", query_builder=q[q["a"].isnotin([float("nan"), 3.0])]).data["a"].tolist()
    assert got[0] == 1.0 and math.isnan(got[1]) and len(got) == 2
    resample = adb.QueryBuilder().resample("2D", origin="start").agg({"a": "sum"})
    with pytest.raises(UserInputException, match="origins"):
        lib.read("s", date_range=(pd.Timestamp("2024-01-01"), pd.Timestamp("2024-01-03")), query_builder=resample)


def test_resample_from_the_first_row_with_a_date_range_after_another_clause() -> None:
    """As ArcticDB: ``origin="start"`` (or ``end``, ``*_day``) with a date range is refused only
    when the resample is the first clause; after a filter the buckets start at the first row it
    keeps; a reversed (empty) date range gives an empty result."""
    import arcticlite as adb

    lib = adb.Arctic("mem://").create_library("origins")
    df = pd.DataFrame({"f": np.arange(20.0)},
                      index=pd.date_range("2024-01-01 09:00:00", periods=20, freq="17s"))
    lib.write("s", df)
    dr = (pd.Timestamp("2024-01-01 09:01:40"), pd.Timestamp("2024-01-01 09:08:20"))
    q = adb.QueryBuilder()
    q = q[q["f"] > 0].resample("30s", origin="start").agg({"f": "sum"})
    got = lib.read("s", query_builder=q, date_range=dr).data
    kept = df.loc[dr[0]:dr[1]]
    assert got.equals(kept.resample("30s", origin="start").agg({"f": "sum"}).loc[lambda d: d.f != 0])
    first = adb.QueryBuilder().resample("30s", origin="start").agg({"f": "sum"})
    with pytest.raises(UserInputException, match="origins"):
        lib.read("s", query_builder=first, date_range=dr)
    assert lib.read("s", query_builder=first, date_range=(dr[1], dr[0])).data.empty


def test_a_projection_named_like_the_index_is_a_column_of_that_name() -> None:
    """As ArcticDB: ``apply("ts", ...)`` where the index is named ``ts`` adds a column ``ts``
    beside the index (a later clause by that name takes the column)."""
    import arcticlite as adb

    lib = adb.Arctic("mem://").create_library("proj")
    idx = pd.DatetimeIndex(pd.date_range("2024-01-01", periods=3), name="ts")
    lib.write("s", pd.DataFrame({"i": [1, 2, 3]}, index=idx))
    q = adb.QueryBuilder()
    got = lib.read("s", query_builder=q.apply("ts", q["i"] * 2)).data
    assert got.index.name == "ts" and list(got.columns) == ["i", "ts"] and got["ts"].tolist() == [2, 4, 6]
    q = adb.QueryBuilder()
    q = q.apply("ts", q["i"] * 2)
    assert lib.read("s", query_builder=q[q["ts"] > 2]).data["i"].tolist() == [2, 3]
