"""Hypothesis: random frames and random filter expressions, compared with pandas.

Expressions combine comparisons (with values, between columns, on the timestamp index, so
index-range pushdown is exercised), ``isin`` / ``isnotin``, ``isna`` / ``notna``, bool
columns and arithmetic with ``& | ^ ~``. Segments are tiny (7 rows x 2 columns) so the
pushdown crosses segment boundaries.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arcticlite import Arctic, LibraryOptions, QueryBuilder
from tests.query.conftest import in_output_order

STRS = ["a", "b", "cc", None]
OPS: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
}
START = pd.Timestamp("2024-01-01")

# An expression is (build(q) -> ExpressionNode, evaluate(df) -> boolean Series).
Expr = tuple[Callable[[QueryBuilder], Any], Callable[[pd.DataFrame], pd.Series]]


@st.composite
def frames(draw: st.DrawFn) -> pd.DataFrame:
    n = draw(st.integers(0, 40))
    ints = draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n))
    floats = draw(st.lists(st.one_of(st.just(np.nan), st.integers(-5, 5).map(float)), min_size=n, max_size=n))
    strs = draw(st.lists(st.sampled_from(STRS), min_size=n, max_size=n))
    bools = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return pd.DataFrame(
        {"i": np.array(ints, dtype=np.int64), "f": np.array(floats, dtype=np.float64),
         "s": np.array(strs, dtype=object), "b": np.array(bools, dtype=bool)},
        index=pd.date_range(START, periods=n, freq="1min", name="ts"),
    )


def _leaf(draw: st.DrawFn) -> Expr:
    kind = draw(st.sampled_from(["num", "colcol", "str", "isin", "isna", "bool", "arith", "index"]))
    op = draw(st.sampled_from(sorted(OPS)))
    fn = OPS[op]
    if kind == "num":
        c, v = draw(st.sampled_from(["i", "f"])), draw(st.integers(-6, 6))
        return (lambda q: fn(q[c], v)), (lambda d: fn(d[c], v))
    if kind == "colcol":
        return (lambda q: fn(q["i"], q["f"])), (lambda d: fn(d["i"], d["f"]))
    if kind == "str":
        sop = draw(st.sampled_from(["==", "!="]))
        v = draw(st.sampled_from(["a", "b", "cc", "zz"]))
        return (lambda q: OPS[sop](q["s"], v)), (lambda d: OPS[sop](d["s"], v))
    if kind == "isin":
        vals = draw(st.lists(st.sampled_from(["a", "b", "cc"]), max_size=3))
        if draw(st.booleans()):
            return (lambda q: q["s"].isin(vals)), (lambda d: d["s"].isin(vals))
        return (lambda q: q["s"].isnotin(vals)), (lambda d: ~d["s"].isin(vals))
    if kind == "isna":
        c = draw(st.sampled_from(["f", "s"]))
        if draw(st.booleans()):
            return (lambda q: q[c].isna()), (lambda d: d[c].isna())
        return (lambda q: q[c].notna()), (lambda d: d[c].notna())
    if kind == "bool":
        return (lambda q: q["b"]), (lambda d: d["b"])
    if kind == "arith":
        k, v = draw(st.integers(-3, 3)), draw(st.integers(-10, 10))
        return (lambda q: fn(q["i"] * k - q["f"], v)), (lambda d: fn(d["i"] * k - d["f"], v))
    t = START + pd.Timedelta(minutes=draw(st.integers(-2, 42)))
    return (lambda q: fn(q["ts"], t)), (lambda d: pd.Series(fn(d.index, t), index=d.index))


@st.composite
def exprs(draw: st.DrawFn, depth: int = 3) -> Expr:
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return _leaf(draw)
    how = draw(st.sampled_from(["&", "|", "^", "~"]))
    a = draw(exprs(depth - 1))
    if how == "~":
        return (lambda q: ~a[0](q)), (lambda d: ~a[1](d))
    b = draw(exprs(depth - 1))
    fn = {"&": operator.and_, "|": operator.or_, "^": operator.xor}[how]
    return (lambda q: fn(a[0](q), b[0](q))), (lambda d: fn(a[1](d), b[1](d)))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=frames(), expr=exprs(), tail=st.one_of(st.none(), st.integers(-5, 8)))
def test_random_filters_match_pandas(df: pd.DataFrame, expr: Expr, tail: int | None) -> None:
    lib = Arctic("mem://").create_library("p", LibraryOptions(rows_per_segment=7, columns_per_segment=2))
    lib.write("s", df)
    build, evaluate = expr
    q = QueryBuilder()
    q = q[build(q)]
    expected = df[evaluate(df).astype(bool)]
    if tail is not None:
        q = q.tail(tail)
        expected = expected.tail(tail)
    got = lib.read("s", query_builder=q).data
    pd.testing.assert_frame_equal(got, expected, check_freq=False)


AGG_OPS = ["sum", "mean", "min", "max", "count"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=frames(), ops=st.lists(st.tuples(st.sampled_from(["i", "f"]), st.sampled_from(AGG_OPS)), min_size=1,
                                 max_size=4, unique=True),
       key=st.sampled_from(["s", "i", "b"]), rule=st.sampled_from(["3min", "7min", "1h"]))
def test_random_aggregations_match_pandas(df: pd.DataFrame, ops: list[tuple[str, str]], key: str, rule: str) -> None:
    lib = Arctic("mem://").create_library("p", LibraryOptions(rows_per_segment=7, columns_per_segment=2))
    lib.write("s", df)
    aggs = {f"{c}_{op}": (c, op) for c, op in ops if c != key}
    if not aggs:
        return

    def expected(grouped: Any) -> pd.DataFrame:
        out = {}
        for name, (c, op) in aggs.items():
            res = getattr(grouped[c], op)()
            out[name] = res.astype(np.uint64) if op == "count" else res
        return in_output_order(pd.DataFrame(out))

    got = lib.read("s", query_builder=QueryBuilder().groupby(key).agg(aggs)).data.sort_index()
    exp = expected(df.groupby(key))
    if len(exp) == 0:
        assert len(got) == 0
    else:
        pd.testing.assert_frame_equal(got, exp, check_dtype=False, check_index_type=False)
    got = lib.read("s", query_builder=QueryBuilder().resample(rule).agg(aggs)).data
    r = df.resample(rule, origin="epoch")
    exp = expected(r)[r["i"].count() > 0] if len(df) else expected(r)
    if len(exp) == 0:
        assert len(got) == 0
    else:
        pd.testing.assert_frame_equal(got, exp, check_dtype=False, check_freq=False)
