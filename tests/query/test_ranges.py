"""date_range / head / tail / row_range clauses, chaining, pushdown exactness, batch reads."""

from __future__ import annotations

import pandas as pd
import pytest

from arcticlite import Arctic, Library, QueryBuilder, ReadRequest
from arcticlite.exceptions import InternalException, SchemaException
from arcticlite.query import plan_query
from arcticlite.table import meta_of
from tests.query.conftest import in_output_order, sample_frame


@pytest.fixture
def df(lib: Library) -> pd.DataFrame:
    d = sample_frame(53)
    lib.write("s", d)
    return d


def read(lib: Library, q: QueryBuilder, **kw: object) -> pd.DataFrame:
    return lib.read("s", query_builder=q, **kw).data  # type: ignore[no-any-return]


def check(lib: Library, q: QueryBuilder, expected: pd.DataFrame, **kw: object) -> None:
    pd.testing.assert_frame_equal(read(lib, q, **kw), expected, check_freq=False)


T1, T2 = pd.Timestamp("2024-01-01 01:10"), pd.Timestamp("2024-01-01 03:31")


@pytest.mark.parametrize("n", [0, 3, 52, 53, 100, -1, -50, -53, -60])
def test_head_tail(lib: Library, df: pd.DataFrame, n: int) -> None:
    check(lib, QueryBuilder().head(n), df.head(n))
    check(lib, QueryBuilder().tail(n), df.tail(n))


@pytest.mark.parametrize("rr", [(2, 9), (-5, None), (None, 4), (10, 3), (-100, 100), (7, -7)])
def test_row_range(lib: Library, df: pd.DataFrame, rr: tuple[int | None, int | None]) -> None:
    check(lib, QueryBuilder().row_range(rr), df.iloc[rr[0]:rr[1]])


def test_date_range_clause(lib: Library, df: pd.DataFrame) -> None:
    check(lib, QueryBuilder().date_range((T1, T2)), df.loc[T1:T2])
    check(lib, QueryBuilder().date_range((None, T1)), df.loc[:T1])
    check(lib, QueryBuilder().date_range((T2, None)), df.loc[T2:])
    check(lib, QueryBuilder().date_range((T2, T1)), df.iloc[:0])
    check(lib, QueryBuilder().date_range((T1.tz_localize("UTC"), T2.tz_localize("UTC"))), df.loc[T1:T2])


def test_chains(lib: Library, df: pd.DataFrame) -> None:
    q = QueryBuilder()
    check(lib, q[q["i"] > 0].head(4), df[df.i > 0].head(4))
    q = QueryBuilder().head(20)
    check(lib, q[q["i"] > 0], df.head(20)[lambda d: d.i > 0])
    check(lib, QueryBuilder().head(30).tail(10).row_range((2, 5)), df.head(30).tail(10).iloc[2:5])
    q = QueryBuilder().date_range((T1, T2)).tail(3)
    check(lib, q, df.loc[T1:T2].tail(3))
    q = QueryBuilder().tail(20).date_range((T1, T2))
    check(lib, q, df.tail(20).loc[T1:T2])
    a = QueryBuilder()
    a = a[a["i"] > -30]
    b = QueryBuilder().head(5)
    check(lib, a.then(b), df[df.i > -30].head(5))
    c = QueryBuilder().tail(10)
    d = QueryBuilder()
    d = d[d["f"] > 0]
    check(lib, d.prepend(c), df.tail(10)[lambda x: x.f > 0])


def test_read_arguments_apply_before_query(lib: Library, df: pd.DataFrame) -> None:
    q = QueryBuilder()
    check(lib, q[q["i"] > 0].head(3), df.loc[T1:][lambda d: d.i > 0].head(3), date_range=(T1, None))
    check(lib, QueryBuilder().head(2), df.iloc[5:20].head(2), row_range=(5, 20))
    check(lib, QueryBuilder().tail(2).head(1), df.iloc[5:20].tail(2).head(1), row_range=(5, 20))


def test_index_pushdown_is_exact_and_narrows(lib: Library, df: pd.DataFrame) -> None:
    q = QueryBuilder()
    q = q[(q["ts"] > T1) & (q["ts"] <= T2) & (q["i"] > 0)]
    check(lib, q, df[(df.index > T1) & (df.index <= T2) & (df.i > 0)])
    rec = lib._resolve("s", None)  # type: ignore[attr-defined]
    meta = meta_of(rec)
    plan = plan_query(q, meta, total_rows=53, row_range=None, index_range=None, sorted_index=True, columns=["f"])
    assert plan.index_range == (T1.value + 1, T2.value)
    assert set(plan.columns or []) == {"f", "ts", "i"}
    plan = plan_query(QueryBuilder().head(30).tail(10), meta, total_rows=53, row_range=None, index_range=None,
                      sorted_index=True, columns=None)
    assert plan.row_range == (20, 30) and plan.clauses == []
    # a disjunction on the index is not pushed down
    q2 = QueryBuilder()
    q2 = q2[(q2["ts"] < T1) | (q2["i"] > 0)]
    plan = plan_query(q2, meta, total_rows=53, row_range=None, index_range=None, sorted_index=True, columns=None)
    assert plan.index_range is None


def test_date_range_clause_on_range_index(lib: Library) -> None:
    lib.write("r", sample_frame(dt_index=False))
    with pytest.raises(SchemaException, match="E_UNSUPPORTED_INDEX_TYPE"):
        lib.read("r", query_builder=QueryBuilder().date_range((T1, T2)))


def test_pickled_symbol_with_query(lib: Library) -> None:
    lib.write_pickle("p", {"a": 1})
    q = QueryBuilder()
    with pytest.raises(InternalException, match="pickled"):
        lib.read("p", query_builder=q[q["a"] > 1])


def test_read_batch_with_query(lib: Library, df: pd.DataFrame) -> None:
    lib.write("s2", df.iloc[:10])
    q = QueryBuilder()
    q = q[q["i"] > 0]
    out = lib.read_batch(["s", "s2"], query_builder=q)
    pd.testing.assert_frame_equal(out[0].data, df[df.i > 0], check_freq=False)
    pd.testing.assert_frame_equal(out[1].data, df.iloc[:10][lambda d: d.i > 0], check_freq=False)
    q2 = QueryBuilder().head(2)
    out = lib.read_batch([ReadRequest("s", query_builder=q2), "s2"])
    pd.testing.assert_frame_equal(out[0].data, df.head(2), check_freq=False)
    pd.testing.assert_frame_equal(out[1].data, df.iloc[:10], check_freq=False)


def test_query_is_reusable_and_not_mutated_by_filters(lib: Library, df: pd.DataFrame) -> None:
    q = QueryBuilder()
    q2 = q[q["i"] > 0]
    assert q.clauses == [] and len(q2.clauses) == 1
    first = read(lib, q2)
    pd.testing.assert_frame_equal(read(lib, q2), first)


@pytest.mark.s3
def test_s3_smoke(s3_uri: str) -> None:
    lib = Arctic(s3_uri).create_library("q")
    d = sample_frame(30)
    lib.write("s", d)
    q = QueryBuilder()
    q = q[(q["i"] > 0) & (q["ts"] >= T1)].groupby("g").agg({"f": "mean", "n": ("i", "count")})
    out = lib.read("s", query_builder=q).data.sort_index()
    sub = d[(d.i > 0) & (d.index >= T1)]
    exp = pd.DataFrame({"f": sub.groupby("g").f.mean(), "n": sub.groupby("g").i.count().astype("uint64")})
    pd.testing.assert_frame_equal(out, in_output_order(exp))


def test_optimisation_hints_are_accepted(lib: Library, df: pd.DataFrame) -> None:
    q = QueryBuilder()
    q = q[q["i"] > 0]
    assert q.optimise_for_speed() is None and q.optimise_for_memory() is None
    check(lib, q, df[df.i > 0])


def test_plan_value_filters_for_page_skipping(lib: Library, df: pd.DataFrame) -> None:
    rec = lib._resolve("s", None)  # type: ignore[attr-defined]
    meta = meta_of(rec)
    q = QueryBuilder()
    q = q[(q["i"] > 3) & (q["s"] == "apple") & q["u"].isin([1, 2]) & (q["f"] != 0.5)]
    q = q[q["i"] <= 40].head(3)
    q = q[q["f"] > 0]  # after a slice: not a page filter
    plan = plan_query(q, meta, total_rows=53, row_range=None, index_range=None, sorted_index=True, columns=None)
    assert plan.value_filters == (("i", ">", 3), ("s", "==", "apple"), ("u", "in", [1, 2]), ("f", "!=", 0.5),
                                  ("i", "<=", 40))
    assert ("f", ">", 0) not in plan.value_filters
    q2 = QueryBuilder()
    q2 = q2[(q2["i"] > 3) | (q2["f"] > 0)]  # an OR of prunable terms is one 'or' term
    assert plan_query(q2, meta, total_rows=53, row_range=None, index_range=None, sorted_index=True,
                      columns=None).value_filters == (("", "or", [[("i", ">", 3)], [("f", ">", 0)]]),)
    q3 = QueryBuilder()
    q3 = q3[(q3["i"] > 3) | (q3["f"] * 2 > 0)]  # one side nothing can rule out: no pruning
    assert plan_query(q3, meta, total_rows=53, row_range=None, index_range=None, sorted_index=True,
                      columns=None).value_filters == ()
