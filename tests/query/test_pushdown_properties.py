"""Property test of query pushdown (issue 15): over random frames and random filters (``==``,
``!=``, ranges, ``isin``, ``isna`` / ``notna``, ``&`` and ``|``), a read with Bloom filters
written, one without, one with pruning switched off, and one whose row groups are single
segments read by late materialisation (filter columns first, then only the rows that may pass,
whatever their number) all equal pandas on the full frame. Segments are tiny (37 rows x 2
columns, 512-byte pages), so row groups, column slices and pages are pruned and skipped all the
time."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arcticlite import Arctic, Library, LibraryOptions, QueryBuilder
from arcticlite.table import _segments

Pair = tuple[Callable[[Any], Any], Callable[[pd.DataFrame], pd.Series]]

STRS = ["a", "b", "c", "d"]


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Library, Library, Library]]:
    path = os.path.join(os.fspath(tmp_path_factory.mktemp("pushdown")), "lmdb")
    ac = Arctic(f"lmdb://{path}")
    opts = {"rows_per_segment": 37, "columns_per_segment": 2}
    yield (ac.create_library("bloom", LibraryOptions(bloom_min_distinct=1, **opts)),
           ac.create_library("plain", LibraryOptions(bloom_min_distinct=None, **opts)),
           ac.create_library("late", LibraryOptions(bloom_min_distinct=1, rows_per_segment=37)))


@st.composite
def frames(draw: st.DrawFn) -> pd.DataFrame:
    n = draw(st.integers(1, 300))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    sorted_i = draw(st.booleans())
    i = rng.integers(-5, 20, n)
    f = rng.normal(size=n).round(1)
    f[rng.random(n) < 0.2] = np.nan
    s = rng.choice(np.array([*STRS, None], dtype=object), n)
    c = np.sort(rng.integers(1, 4, n)).astype(float)  # long runs: constant pages (min == max)
    c[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame({
        "c": c,
        "i": np.sort(i) if sorted_i else i,
        "k": rng.integers(0, 10 * n, n) * 3,
        "f": f,
        "s": s,
        "u": np.char.add("u", rng.integers(0, 3 * n, n).astype(str)).astype(object),
        "t": rng.choice(np.array(["x", "yy", "zzz"], dtype=object), n),  # dictionary-encoded pages
    }, index=pd.date_range("2024-01-01", periods=n, freq="min"))


def atoms(df: pd.DataFrame) -> st.SearchStrategy[Pair]:
    def value(col: str) -> st.SearchStrategy[Any]:
        present = df[col].dropna().tolist()
        other: st.SearchStrategy[Any]
        if col in ("i", "k"):
            other = st.integers(-10, 40 * len(df))
        elif col in ("f", "c"):
            other = st.sampled_from([-1.0, 0.0, 0.5, 3.0])
        else:
            other = st.sampled_from(["zz", "u-1", "a", "yy"])
        return (st.sampled_from(present) | other) if present else other

    def cmp(col: str, op: str) -> st.SearchStrategy[Pair]:
        fns = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
               ">=": lambda a, b: a >= b}
        return value(col).map(lambda v: (lambda q: fns[op](q[col], v), lambda d: fns[op](d[col], v)))

    def isin(col: str) -> st.SearchStrategy[Pair]:
        return st.lists(value(col), min_size=1, max_size=4).map(
            lambda vs: (lambda q: q[col].isin(vs), lambda d: d[col].isin(vs)))

    def nulls(col: str, neg: bool) -> st.SearchStrategy[Pair]:
        if neg:
            return st.just((lambda q: q[col].notna(), lambda d: d[col].notna()))
        return st.just((lambda q: q[col].isna(), lambda d: d[col].isna()))

    return st.one_of(
        *[cmp(c, op) for c in ("i", "k", "f", "c") for op in ("==", "!=", "<", ">=")],
        *[cmp(c, op) for c in ("s", "u", "t") for op in ("==", "!=")],
        *[isin(c) for c in ("i", "k", "s", "u", "t")],
        *[nulls(c, neg) for c in ("f", "s", "c") for neg in (False, True)],
    )


def combine(a: Pair, b: Pair, op: str) -> Pair:
    if op == "&":
        return (lambda q: a[0](q) & b[0](q), lambda d: a[1](d) & b[1](d))
    return (lambda q: a[0](q) | b[0](q), lambda d: a[1](d) | b[1](d))


@st.composite
def cases(draw: st.DrawFn) -> tuple[pd.DataFrame, Pair]:
    df = draw(frames())
    pair = draw(atoms(df))
    for _ in range(draw(st.integers(0, 3))):
        pair = combine(pair, draw(atoms(df)), draw(st.sampled_from(["&", "|"])))
    return df, pair


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(cases())
def test_pushdown_reads_equal_pandas(libs: tuple[Library, Library, Library], monkeypatch: pytest.MonkeyPatch,
                                     case: tuple[pd.DataFrame, Pair]) -> None:
    monkeypatch.setattr(_segments, "PAGE_SIZE", 512)  # 64 int64 values a page
    monkeypatch.setattr(_segments, "LATE_MAX_FRACTION", 0)  # late materialisation whatever passes
    df, (query, mask) = case
    expected = df[mask(df)]
    for lib in libs:
        lib.write("s", df)
        q = QueryBuilder()
        q = q[query(q)]
        got = lib.read("s", query_builder=q).data
        pd.testing.assert_frame_equal(got, expected, check_freq=False)
    bloom = libs[0]
    with monkeypatch.context() as m:  # the same read with pruning off
        m.setattr(bloom._table, "options", dataclasses.replace(bloom._table.options, prune_by_statistics=False))
        q = QueryBuilder()
        q = q[query(q)]
        pd.testing.assert_frame_equal(bloom.read("s", query_builder=q).data, expected, check_freq=False)
