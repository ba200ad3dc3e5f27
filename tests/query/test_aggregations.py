"""groupby(...).agg(...) and resample(...).agg(...) against pandas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from arcticlite import Library, QueryBuilder
from arcticlite.exceptions import (
    ArcticDbNotYetImplemented,
    ArcticException,
    SchemaException,
    UserInputException,
)
from tests.query.conftest import in_output_order, sample_frame


@pytest.fixture
def df(lib: Library) -> pd.DataFrame:
    d = sample_frame(60)
    lib.write("s", d)
    return d


def _pandas_agg(grouped: object, aggs: dict[str, tuple[str, str]]) -> pd.DataFrame:
    out = {}
    for name, (column, op) in aggs.items():
        series = grouped[column]  # type: ignore[index]
        res = series.count().astype(np.uint64) if op == "count" else getattr(series, op)()
        out[name] = res
    return in_output_order(pd.DataFrame(out))


AGGS = {
    "isum": ("i", "sum"), "imean": ("i", "mean"), "imin": ("i", "min"), "imax": ("i", "max"),
    "icount": ("i", "count"), "fsum": ("f", "sum"), "fmean": ("f", "mean"), "fmin": ("f", "min"),
    "fmax": ("f", "max"), "fcount": ("f", "count"), "umax": ("u", "max"), "scount": ("s", "count"),
}


def test_groupby_all_aggregations(lib: Library, df: pd.DataFrame) -> None:
    q = QueryBuilder().groupby("g").agg(AGGS)
    out = lib.read("s", query_builder=q).data.sort_index()
    exp = _pandas_agg(df.groupby("g"), AGGS)
    pd.testing.assert_frame_equal(out, exp, check_dtype=True)
    assert out.index.name == "g"
    assert out["icount"].dtype == np.uint64 and out["umax"].dtype == np.uint8


def test_groupby_short_form_filter_then_groupby_and_after(lib: Library, df: pd.DataFrame) -> None:
    q = QueryBuilder()
    q = q[q["i"] > -10].groupby("s").agg({"f": "mean", "i": "sum"})
    out = lib.read("s", query_builder=q).data.sort_index()
    sub = df[df.i > -10]
    exp = in_output_order(sub.groupby("s")[["f", "i"]].agg({"f": "mean", "i": "sum"}))  # None keys dropped
    pd.testing.assert_frame_equal(out, exp)
    q2 = QueryBuilder().groupby("g").agg({"i": "sum"})
    q2 = q2[q2["i"] > 0].apply("twice", q2["i"] * 2)
    out2 = lib.read("s", query_builder=q2).data.sort_index()
    e2 = df.groupby("g")[["i"]].sum()
    e2 = e2[e2.i > 0]
    e2["twice"] = e2.i * 2
    pd.testing.assert_frame_equal(out2, e2)


def test_groupby_numeric_key_and_empty(lib: Library, df: pd.DataFrame) -> None:
    q = QueryBuilder().groupby("u").agg({"i": "sum"})
    out = lib.read("s", query_builder=q).data.sort_index()
    pd.testing.assert_frame_equal(out, df.groupby("u")[["i"]].sum())
    q = QueryBuilder()
    q = q[q["i"] > 1000].groupby("g").agg({"i": "sum", "f": "mean"})
    out = lib.read("s", query_builder=q).data
    assert len(out) == 0 and list(out.columns) == ["f", "i"]  # as ArcticDB: the order of agg's hash map


def test_groupby_all_nan_group(lib: Library) -> None:
    d = pd.DataFrame({"g": ["a", "a", "b"], "f": [np.nan, np.nan, 1.0]})
    lib.write("n", d)
    q = QueryBuilder().groupby("g").agg({"s": ("f", "sum"), "m": ("f", "mean"), "lo": ("f", "min"),
                                         "c": ("f", "count")})
    out = lib.read("n", query_builder=q).data.sort_index()
    assert out.loc["a"].tolist()[0] == 0.0 and np.isnan(out.loc["a", "m"]) and np.isnan(out.loc["a", "lo"])
    assert out.loc["a", "c"] == 0 and out.loc["b"].tolist() == [1.0, 1.0, 1.0, 1]


RS = {"i": ("i", "sum"), "fm": ("f", "mean"), "ff": ("f", "first"), "fl": ("f", "last"),
      "imin": ("i", "min"), "imax": ("i", "max"), "c": ("f", "count")}


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"closed": "right"},
        {"closed": "right", "label": "right"},
        {"label": "right"},
        {"offset": "5min"},
        {"origin": "start"},
        {"origin": "start_day"},
        {"origin": "end"},
        {"origin": "end_day"},
        {"origin": pd.Timestamp("2024-01-01 00:01")},
    ],
)
def test_resample_matches_pandas(lib: Library, df: pd.DataFrame, kwargs: dict[str, object]) -> None:
    q = QueryBuilder().resample("25min", **kwargs).agg(RS)  # type: ignore[arg-type]
    out = lib.read("s", query_builder=q).data
    kwargs = {"origin": "epoch", **kwargs}  # ArcticDB's default origin; pandas' is "start_day"
    r = df.resample("25min", **kwargs)  # type: ignore[arg-type]
    exp = _pandas_agg(r, RS)
    exp = exp[df["i"].resample("25min", **kwargs).count() > 0]  # type: ignore[arg-type]  # empty buckets dropped
    exp["i"] = exp["i"].astype(np.int64)
    pd.testing.assert_frame_equal(out, exp, check_freq=False)


def test_resample_after_filter_and_date_range(lib: Library, df: pd.DataFrame) -> None:
    q = QueryBuilder()
    q = q[q["i"] > 0].date_range((pd.Timestamp("2024-01-01 01:00"), pd.Timestamp("2024-01-01 05:00")))
    q = q.resample("1h").agg({"i": "sum", "s": ("s", "last")})
    out = lib.read("s", query_builder=q).data
    sub = df[df.i > 0].loc["2024-01-01 01:00":"2024-01-01 05:00"]
    exp = in_output_order(sub.resample("1h").agg({"i": "sum", "s": "last"}))
    exp = exp[sub.i.resample("1h").count() > 0]
    pd.testing.assert_frame_equal(out, exp, check_freq=False)


def test_resample_tz_index(lib: Library) -> None:
    d = pd.DataFrame({"v": np.arange(10.0)}, index=pd.date_range("2024-03-01", periods=10, freq="20min", tz="US/Eastern"))
    lib.write("tz", d)
    out = lib.read("tz", query_builder=QueryBuilder().resample("1h").agg({"v": "sum"})).data
    pd.testing.assert_frame_equal(out, d.resample("1h").agg({"v": "sum"}), check_freq=False)


@pytest.mark.parametrize(
    ("make", "exc", "match"),
    [
        (lambda q: q.groupby("zz").agg({"i": "sum"}), SchemaException, "E_COLUMN_DOESNT_EXIST"),
        (lambda q: q.groupby("g").agg({"zz": "sum"}), SchemaException, "E_COLUMN_DOESNT_EXIST"),
        (lambda q: q.groupby("g").agg({"s": "sum"}), SchemaException, "E_UNSUPPORTED_COLUMN_TYPE"),
        (lambda q: q.groupby("g").agg({"s": "min"}), SchemaException, "E_UNSUPPORTED_COLUMN_TYPE"),
        (lambda q: q.resample("1h").agg({"zz": "sum"}), SchemaException, "E_COLUMN_DOESNT_EXIST"),
        (lambda q: q.resample("1h").agg({"s": "sum"}), SchemaException, "E_UNSUPPORTED_COLUMN_TYPE"),
    ],
)
def test_aggregation_errors(lib: Library, df: pd.DataFrame, make: object, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        lib.read("s", query_builder=make(QueryBuilder()))  # type: ignore[operator]


@pytest.mark.parametrize("make", [lambda q: q.groupby("g").agg({"i": "first"}),
                                  lambda q: q.groupby("g").agg({"o": ("i", "last")}),
                                  lambda q: q.resample("1h").agg({"i": "median"}),
                                  lambda q: q.groupby("g").agg({"i": ("i", "sum", "x")})])
def test_an_operator_the_grouping_lacks_is_refused_when_the_query_is_built(make: object) -> None:
    """As ArcticDB: ``agg`` itself raises, so a ``read_batch`` never gets to read with it."""
    with pytest.raises(UserInputException, match="aggregation"):
        make(QueryBuilder())  # type: ignore[operator]


def test_aggregation_usage_errors(lib: Library, df: pd.DataFrame) -> None:
    with pytest.raises(ArcticException, match="after groupby or resample"):
        QueryBuilder().agg({"i": "sum"})
    with pytest.raises(ArcticDbNotYetImplemented, match="Frequency string"):
        QueryBuilder().resample("ME")
    with pytest.raises(ArcticException, match="closed"):
        QueryBuilder().resample("1h", closed="middle")
    with pytest.raises(UserInputException, match="column selection"):
        lib.read("s", columns=["i"], query_builder=QueryBuilder().groupby("g").agg({"i": "sum"}))
    lib.write("r", sample_frame(dt_index=False))
    with pytest.raises(SchemaException, match="E_UNSUPPORTED_INDEX_TYPE"):
        lib.read("r", query_builder=QueryBuilder().resample("1h").agg({"i": "sum"}))


@pytest.mark.parametrize(("names", "expected"), [
    (["f", "i"], ["i", "f"]),
    (["i", "f"], ["f", "i"]),
    (["zz", "f", "i", "a"], ["a", "i", "f", "zz"]),  # "zz" and "i" share a bucket
    (["b", "q", "a", "i"], ["i", "a", "q", "b"]),
    (list(AGGS), ["scount", "umax", "fcount", "fmax", "icount", "fmin", "imin", "imean", "fmean", "fsum",
                  "imax", "isum"]),
])
def test_output_columns_come_in_arcticdbs_order(lib: Library, names: list[str], expected: list[str]) -> None:
    # the orders ArcticDB 6.28 gives these aggregations (observed side by side): code that
    # switches reads the same data.columns, groupby and resample alike
    d = pd.DataFrame({"g": ["a", "b", "a"], "v": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
    lib.write("order", d)
    aggs = {n: ("v", "sum") for n in names}
    by_group = lib.read("order", query_builder=QueryBuilder().groupby("g").agg(aggs)).data
    by_time = lib.read("order", query_builder=QueryBuilder().resample("1D").agg(aggs)).data
    assert list(by_group.columns) == expected and list(by_time.columns) == expected
    assert by_group.loc["a", expected[0]] == 4.0
