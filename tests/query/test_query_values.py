"""QueryBuilder values as ArcticDB takes them: ``col == [..]`` is ``isin``, equal value sets
make equal queries however they are written, sets mixing negative numbers with uint64 values are
refused when the query is built, timestamps shift by durations, a regex must be a string, and a
categorical column cannot be filtered."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest

from arcticlite import Library, QueryBuilder
from arcticlite.exceptions import UserInputException


def _filtered(lib: Library, make) -> pd.DataFrame:
    q = QueryBuilder()
    return lib.read("s", query_builder=q[make(q)]).data


@pytest.mark.parametrize("ts", [pd.Timestamp("2000-01-05"), dt.datetime(2000, 1, 5)])
def test_equal_to_a_list_is_isin(lib: Library, ts) -> None:
    df = pd.DataFrame({"a": pd.date_range("2000-01-01", periods=10)})
    lib.write("s", df)
    got = _filtered(lib, lambda q: q["a"] == [ts])
    assert got["a"].tolist() == [pd.Timestamp("2000-01-05")]
    got = _filtered(lib, lambda q: q["a"] != [ts, pd.Timestamp("2000-01-01")])
    assert len(got) == 8


def test_equal_value_sets_make_equal_queries() -> None:
    values = [1, 2, 3, 1]
    base = QueryBuilder()
    base = base[base["a"].isin(values)]
    for make in (lambda q: q["a"].isin(set(values)), lambda q: q["a"].isin(tuple(values)),
                 lambda q: q["a"].isin(np.array(values)), lambda q: q["a"].isin(3, 2, 1),
                 lambda q: q["a"] == values, lambda q: q["a"] == frozenset(values)):
        q = QueryBuilder()
        assert q[make(q)] == base
    q1, q2 = QueryBuilder(), QueryBuilder()
    assert q1[q1["a"].isnotin(values)] == q2[q2["a"] != values]
    q3 = QueryBuilder()
    assert q3[q3["a"].isin([1, 2])] != base


@pytest.mark.parametrize("values", [[np.int64(-1), np.uint64(2**32)], [-1, 2**63], [-1.5, np.uint64(1)]])
def test_negative_and_uint64_values_are_refused_when_built(values) -> None:
    q = QueryBuilder()
    with pytest.raises(UserInputException, match="uint64"):
        q["a"].isnotin(values)


def test_uint64_values_beyond_int64_still_match(lib: Library) -> None:
    lib.write("s", pd.DataFrame({"a": np.array([1, 2**63 + 5], dtype=np.uint64)}))
    assert _filtered(lib, lambda q: q["a"].isin([np.uint64(2**63 + 5), 7]))["a"].tolist() == [2**63 + 5]


@pytest.mark.parametrize("td", [pd.Timedelta(1, "d"), dt.timedelta(days=1)])
def test_timestamp_plus_duration(lib: Library, td) -> None:
    df = pd.DataFrame({"a": pd.date_range("2000-01-01", periods=10)})
    lib.write("s", df)
    got = _filtered(lib, lambda q: (q["a"] + td) < pd.Timestamp("2000-01-05"))
    assert got["a"].tolist() == list(pd.date_range("2000-01-01", periods=3))
    got = _filtered(lib, lambda q: (q["a"] - td) >= dt.datetime(2000, 1, 9))
    assert len(got) == 1
    q = QueryBuilder()
    q = q.apply("b", q["a"] + td)
    assert lib.read("s", query_builder=q).data["b"].tolist() == list(pd.date_range("2000-01-02", periods=10))


def test_regex_pattern_must_be_a_string() -> None:
    q = QueryBuilder()
    with pytest.raises(UserInputException, match="string pattern"):
        q["b"].regex_match(1)


def test_filtering_a_categorical_column_is_refused(lib: Library) -> None:
    df = pd.DataFrame({"a": pd.Categorical(["hello", "hi", "hello"])})
    lib.write("s", df)
    with pytest.raises(UserInputException, match="categorical"):
        _filtered(lib, lambda q: q["a"] == "hi")
    assert lib.read("s").data["a"].tolist() == ["hello", "hi", "hello"]


def test_integers_beyond_float_precision_meet_floats_and_signed_ints(lib: Library) -> None:
    """As ArcticDB and pandas: an int64 beyond 2**53 compares with (and divides by) a float
    as its nearest float64, a uint64 beyond int64 compares exactly with signed integers, and a
    float32 column compares with an int literal no float32 holds exactly; no Arrow error."""
    df = pd.DataFrame({"ns": np.array([1_700_000_000_000_000_001, 5], "int64"),
                       "u64": np.array([2**64 - 1, 1], "uint64"), "i32": np.array([-1, 1], "int32"),
                       "f32": np.array([1.5, 3e7], "float32")}, index=pd.date_range("2020", periods=2))
    lib.write("s", df)
    assert _filtered(lib, lambda q: q["ns"] > 1.5e18)["ns"].tolist() == [1_700_000_000_000_000_001]
    assert _filtered(lib, lambda q: q["u64"] >= q["i32"]).index.tolist() == df.index.tolist()
    assert _filtered(lib, lambda q: q["u64"] != q["i32"]).index.tolist() == [df.index[0]]
    assert _filtered(lib, lambda q: q["u64"].isin([0.5, 1.0]))["u64"].tolist() == [1]
    assert _filtered(lib, lambda q: q["f32"] > 16_777_217)["f32"].tolist() == [3e7]
    q = QueryBuilder()
    got = lib.read("s", query_builder=q.apply("p", q["ns"] / 1e9)).data["p"]
    np.testing.assert_allclose(got.to_numpy(), df["ns"].to_numpy() / 1e9)


def test_timestamp_arithmetic_is_int64_nanoseconds_with_nat_as_numpy_views_it(lib: Library) -> None:
    """As ArcticDB: ``t + 1`` of a timestamp column is int64 nanoseconds, exact (a NaT is the
    smallest int64, as numpy's int64 view of it)."""
    df = pd.DataFrame({"t": pd.to_datetime(["2001-01-01", None])}, index=pd.date_range("2020", periods=2))
    lib.write("s", df)
    q = QueryBuilder()
    got = lib.read("s", query_builder=q.apply("p", q["t"] + 1)).data["p"]
    assert got.dtype == np.int64 and got.tolist() == [978_307_200_000_000_001, -(2**63) + 1]


def test_negative_zero_is_zero_in_sets_and_groups(lib: Library) -> None:
    """-0.0 equals 0.0: ``isin`` / ``isnotin`` match both (also where pages are judged before
    decoding), an int column's ``isin([-0.0])`` matches 0, and a group-by puts both in group 0.0."""
    f = [1.0, -0.0, 2.0, 0.0, 3.0, -0.0]
    df = pd.DataFrame({"f": f, "i": [0, 1, 2, 0, 4, 5]}, index=pd.date_range("2000-01-01", periods=6))
    lib.write("s", df)
    for value in (0, 0.0, -0.0):
        assert _filtered(lib, lambda q, value=value: q["f"].isin([value, 9.5]))["i"].tolist() == [1, 0, 5]
        assert _filtered(lib, lambda q, value=value: q["f"].isnotin([value]))["i"].tolist() == [0, 2, 4]
        assert _filtered(lib, lambda q, value=value: (q["f"] * -1).isin([value]))["i"].tolist() == [1, 0, 5]
    assert _filtered(lib, lambda q: q["i"].isin([-0.0, 1.5]))["f"].tolist() == [1.0, 0.0]
    q = QueryBuilder().groupby("f").agg({"i": "sum"})
    got = lib.read("s", query_builder=q).data.sort_index()
    assert got.index.tolist() == [0.0, 1.0, 2.0, 3.0] and got["i"].tolist() == [6, 0, 2, 4]
    assert not np.signbit(got.index[0])
