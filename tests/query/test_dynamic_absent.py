"""Dynamic schema: a column absent from some rows (their segments were written before it
existed) reads back filled (0 / NaN / None), but inside a query those rows are *missing*:
comparisons are false on them (``!=`` and ``isnotin`` too), ``isna`` is true, arithmetic gives
a missing result (shown as the plain-read fill), aggregations skip them and groupby drops rows
whose key is absent."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest

from arcticlite import Arctic, Library, LibraryOptions, QueryBuilder


@pytest.fixture(params=[100_000, 2], ids=["one-segment-per-append", "2-row-segments"])
def dlib(uri: str, request: pytest.FixtureRequest) -> Iterator[Library]:
    yield Arctic(uri).create_library("dyn", LibraryOptions(dynamic_schema=True, rows_per_segment=request.param))


@pytest.fixture
def sym(dlib: Library) -> Library:
    """Rows 1-2 have ``a`` / ``s`` / ``f`` (with a stored None and NaN), rows 3-4 lack them
    (they have ``b`` only), row 5 has every column."""
    dlib.write("s", pd.DataFrame({"a": [1, 2], "s": ["x", None], "f": [1.0, np.nan]},
                                 index=pd.date_range("2024-01-01", periods=2)))
    dlib.append("s", pd.DataFrame({"b": [5, 6]}, index=pd.date_range("2024-01-03", periods=2)))
    dlib.append("s", pd.DataFrame({"a": [3], "b": [7], "s": ["y"], "f": [2.0]},
                                  index=pd.date_range("2024-01-05", periods=1)))
    return dlib


def _days(df: pd.DataFrame) -> list[int]:
    return [int(d) for d in df.index.day]


def test_plain_read_shows_the_fill(sym: Library) -> None:
    df = sym.read("s").data
    assert df["a"].tolist() == [1, 2, 0, 0, 3]
    assert df["b"].tolist() == [0, 0, 5, 6, 7]
    assert df["f"].isna().tolist() == [False, True, True, True, False]


@pytest.mark.parametrize("fmt", ["pyarrow", "polars"])
def test_arrow_output_shows_nulls(sym: Library, fmt: str) -> None:
    """As ArcticDB: in Arrow and polars output the rows of segments without a column are
    nulls (of every type), with or without a query; stored None / NaN stay what they are."""
    q = QueryBuilder()
    q = q[q["b"] != 6]  # (rows without ``b`` do not pass, as in pandas output)
    for got, days in ((sym.read("s", output_format=fmt).data, [1, 2, 3, 4, 5]),
                      (sym.read("s", output_format=fmt, query_builder=q).data, [3, 5])):
        cols = {c: list(got[c]) if fmt == "polars" else got.column(c).to_pylist() for c in ("a", "b", "s")}
        full = {"a": [1, 2, None, None, 3], "b": [None, None, 5, 6, 7], "s": ["x", None, None, None, "y"]}
        keep = [k for k, day in enumerate([1, 2, 3, 4, 5]) if day in days]
        assert cols == {c: [v[k] for k in keep] for c, v in full.items()}
    assert sym.read("s", output_format="pyarrow", columns=["b"]).data.column("b").to_pylist() == [
        None, None, 5, 6, 7]


@pytest.mark.parametrize(("column", "make", "days"), [
    ("a", lambda c: c != 1, [2, 5]),
    ("a", lambda c: c < 5, [1, 2, 5]),
    ("a", lambda c: c.isnotin([1]), [2, 5]),
    ("a", lambda c: c.isin([0, 1]), [1]),
    # a stored None / NaN differs from "x" / 1.0; an absent value differs from nothing
    ("s", lambda c: c != "x", [2, 5]),
    ("s", lambda c: c.isnotin(["x"]), [2, 5]),
    ("f", lambda c: c != 1.0, [2, 5]),
])
def test_comparisons_are_false_where_the_column_is_absent(sym: Library, column: str, make, days: list[int]) -> None:
    q = QueryBuilder()
    q = q[make(q[column])]
    out = sym.read("s", query_builder=q).data
    assert _days(out) == days


def test_isna_is_true_where_an_int_column_is_absent(sym: Library) -> None:
    q = QueryBuilder()
    assert _days(sym.read("s", query_builder=q[q["a"].isna()]).data) == [3, 4]
    q = QueryBuilder()
    assert _days(sym.read("s", query_builder=q[q["b"].notna()]).data) == [3, 4, 5]
    q = QueryBuilder()  # stored None and absent rows alike
    assert _days(sym.read("s", query_builder=q[q["s"].isna()]).data) == [2, 3, 4]


def test_projection_of_an_absent_value_is_missing(sym: Library) -> None:
    q = QueryBuilder()
    q = q.apply("c", q["a"] + 7)
    assert sym.read("s", query_builder=q).data["c"].tolist() == [8, 9, 0, 0, 10]
    q = QueryBuilder()
    q = q.apply("c", q["a"] + q["b"])
    assert sym.read("s", query_builder=q).data["c"].tolist() == [0, 0, 0, 0, 10]
    q = QueryBuilder()
    q = q.apply("c", q["a"] * 1.5)
    assert sym.read("s", query_builder=q).data["c"].isna().tolist() == [False, False, True, True, False]
    q = QueryBuilder()  # the projected column stays missing for a later filter
    q = q.apply("c", q["a"] + 7)
    assert _days(sym.read("s", query_builder=q[q["c"].isna()]).data) == [3, 4]
    q = QueryBuilder()
    q = q.apply("c", q["a"] + 7)
    assert sym.read("s", query_builder=q[q["c"] == 0]).data.empty


def test_resample_skips_absent_values(dlib: Library) -> None:
    ix = pd.to_datetime
    dlib.append("r", pd.DataFrame({"v": np.array([1, 2, 3], np.int32), "t": 0},
                                  index=ix([pd.Timestamp(0), pd.Timestamp(1), pd.Timestamp(30)])))
    dlib.append("r", pd.DataFrame({"w": np.array([4, 5], np.int32), "t": 0},
                                  index=ix([pd.Timestamp(50), pd.Timestamp(55)])))
    dlib.append("r", pd.DataFrame({"v": np.array([7, 8], np.int32), "t": 0},
                                  index=ix([pd.Timestamp(100), pd.Timestamp(101)])))
    ops = ["sum", "mean", "min", "max", "first", "last", "count"]
    out = dlib.read("r", query_builder=QueryBuilder().resample("10ns").agg({op: ("v", op) for op in ops})).data
    assert out.index.asi8.tolist() == [0, 30, 50, 100]
    assert out["count"].tolist() == [2, 1, 0, 2]
    assert out["sum"].tolist() == [3, 3, 0, 15]
    assert out["mean"].tolist()[:2] == [1.5, 3.0] and np.isnan(out["mean"].iloc[2])
    # an integer min / max / first / last of nothing is 0 and keeps the column's type
    assert out["min"].tolist() == [1, 3, 0, 7] and out["min"].dtype == np.int32
    assert out["first"].tolist() == [1, 3, 0, 7] and out["last"].tolist() == [2, 3, 0, 8]


def test_groupby_drops_rows_whose_key_is_absent(sym: Library) -> None:
    out = sym.read("s", query_builder=QueryBuilder().groupby("b").agg({"a": "sum"})).data
    assert out.index.tolist() == [5, 6, 7]  # rows 1-2 have no b: no group 0
    assert out["a"].tolist() == [0, 0, 3]


def test_static_schema_reads_are_unchanged(uri: str) -> None:
    lib = Arctic(uri).create_library("static")
    lib.write("s", pd.DataFrame({"a": [0, 1, 2]}))
    q = QueryBuilder()
    assert sym_rows(lib, q[q["a"] != 1]) == [0, 2]


def sym_rows(lib: Library, q: QueryBuilder) -> list[int]:
    return lib.read("s", query_builder=q).data["a"].tolist()


@pytest.mark.parametrize("op", ["first", "last", "min", "max", "count", "sum", "mean"])
def test_an_aggregate_of_only_absent_values_is_missing_to_later_clauses(dlib: Library, op: str) -> None:
    """As ArcticDB: a resample bucket whose rows all lack the column shows what a plain read
    shows (0, NaN), but a later filter sees no value there (``isna()`` keeps it, ``== 0`` and
    ``!= 1`` drop it)."""
    dlib.write("a", pd.DataFrame({"j": np.array([5, 6], dtype="int32"), "f": [1.0, 2.0]},
                                 index=pd.DatetimeIndex(["2024-01-01 09:00:00", "2024-01-01 09:00:10"])))
    dlib.append("a", pd.DataFrame({"f": [3.0]}, index=pd.DatetimeIndex(["2024-01-01 09:01:00"])))

    def read(make=None) -> pd.DataFrame:
        q = QueryBuilder().resample("30s").agg({"out": ("j", op)})
        return dlib.read("a", query_builder=q if make is None else q[make(q)]).data

    shown = read()["out"]
    assert len(shown) == 2 and (shown.iloc[1] == 0 or np.isnan(shown.iloc[1]))
    assert read(lambda q: q["out"].isna()).index.tolist() == [pd.Timestamp("2024-01-01 09:01:00")]
    assert read(lambda q: q["out"].notna()).index.tolist() == [pd.Timestamp("2024-01-01 09:00:00")]
    assert len(read(lambda q: q["out"] != 1)) == 1
    if op in ("first", "last"):  # (resample only)
        return
    q = QueryBuilder().groupby("f").agg({"out": ("j", op)})
    got = dlib.read("a", query_builder=q[q["out"].isna()]).data
    # (a group-by's sum of no value is 0, a value: only where no row read has the column)
    assert got.index.tolist() == ([] if op == "sum" else [3.0])
