"""``str(QueryBuilder)`` prints the query as ArcticDB does, so logs and notebooks read the
same after switching; ``q["new"] = expr`` adds a projection in place."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest

from arcticlite import Library, QueryBuilder, where


def test_clauses() -> None:
    assert str(QueryBuilder().row_range((1, 10))) == "ROWRANGE: RANGE, start=1, end=10"
    assert str(QueryBuilder().head(10)) == "ROWRANGE: HEAD, n=10"
    assert str(QueryBuilder().tail(9)) == "ROWRANGE: TAIL, n=9"
    assert str(QueryBuilder().date_range((pd.Timestamp(1000), None))) == f"DATE RANGE 1000 - {pd.Timestamp.max.value}"
    q = QueryBuilder()
    q = q[q["abc"] > 3]
    q = q[q["def"] > q["ghi"]]
    q.row_range((1, 10))
    assert str(q) == ('WHERE (Column["abc"] GT Val(UINT8:3)) | WHERE (Column["def"] GT Column["ghi"]) | '
                      "ROWRANGE: RANGE, start=1, end=10")
    q = QueryBuilder().groupby("g").agg({"o": ("a", "mean"), "b": "max"})
    assert str(q) == 'GROUPBY Column["g"] | AGGREGATE {b: (b, max), o: (a, mean), }'
    assert str(QueryBuilder().resample("1min").agg({"c": "sum"})) == "RESAMPLE(1min) | AGGREGATE {c: (c, sum), }"


@pytest.mark.parametrize(("value", "text"), [
    (True, "Val(BOOL8:true)"), (3, "Val(UINT8:3)"), (-3, "Val(INT8:-3)"), (300, "Val(UINT16:300)"),
    (2**40, "Val(UINT64:1099511627776)"), (np.int16(-3), "Val(INT8:-3)"), (np.float64(0.5), "Val(FLOAT64:0.5)"),
    (3.5, "Val(FLOAT32:3.5)"), (dt.date(2025, 1, 1), "Val(NANOSECONDS_UTC64:2025-01-01 00:00:00.000000000)"),
    (pd.Timestamp("2025-01-01 00:00:00.000000001"), "Val(NANOSECONDS_UTC64:2025-01-01 00:00:00.000000001)"),
    (pd.NaT, "Val(NANOSECONDS_UTC64:NaT)"), (pd.Timedelta("1 days"), "Val(INT64:86400000000000)")])
def test_values(value, text: str) -> None:
    q = QueryBuilder()
    assert str(q[q["c"] > value]) == f'WHERE (Column["c"] GT {text})'


def test_expressions() -> None:
    q = QueryBuilder()
    assert str(q[(q["a"] > 1) | ~(q["b"] < 2) ^ q["c"].isna()]) == (
        'WHERE ((Column["a"] GT Val(UINT8:1)) OR (NOT((Column["b"] LT Val(UINT8:2))) XOR ISNULL(Column["c"])))')
    assert str(q[q["c"].isnotin(np.arange(200))]) == 'WHERE (Column["c"] ISNOTIN ValueSet(INT64,n=200))'
    assert str(q[q["c"].isin(["a", "b"])]) == 'WHERE (Column["c"] ISIN ValueSet(UTF_DYNAMIC64,n=2))'
    assert str(q[q["c"].regex_match("^abc.*")]) == 'WHERE (Column["c"] REGEX_MATCH Regex(^abc.*))'
    assert str(q[q["flag"]]) == 'WHERE IDENTITY(Column["flag"])'
    assert str(q[q["s"] == "hello"]) == 'WHERE (Column["s"] EQ Val(UTF_DYNAMIC64:"hello"))'
    p = QueryBuilder()
    p = p.apply("d", where(p["c"] > 0, p["a"], p["b"]))
    assert str(p) == 'PROJECT Column["d"] = Column["a"] if (Column["c"] GT Val(UINT8:0)) else Column["b"]'


def test_setitem_adds_a_projection(lib: Library) -> None:
    lib.write("s", pd.DataFrame({"abc": [1, 2, 3]}))
    q = QueryBuilder()
    q["def"] = 2 * q["abc"]
    assert str(q) == 'PROJECT Column["def"] = (Val(UINT8:2) MUL Column["abc"])'
    assert lib.read("s", query_builder=q).data["def"].tolist() == [2, 4, 6]
