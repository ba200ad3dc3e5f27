"""Grouping by a string column on its dictionary codes gives pandas' groups, in order of
first appearance, whatever mix of dictionary-encoded and plain string pages the segments hold."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from arcticlite import Library, QueryBuilder
from tests.query.conftest import in_output_order


def _expected(df: pd.DataFrame, key: str, aggs: dict[str, tuple[str, str]]) -> pd.DataFrame:
    g = df.groupby(key, sort=False)
    out = {}
    for name, (column, op) in aggs.items():
        out[name] = g[column].count().astype(np.uint64) if op == "count" else getattr(g[column], op)()
    return in_output_order(pd.DataFrame(out))


AGGS = {"xsum": ("x", "sum"), "xmean": ("x", "mean"), "imin": ("i", "min"), "imax": ("i", "max"),
        "n": ("i", "count")}


def test_groupby_a_string_key_across_dictionary_and_plain_pages(lib: Library) -> None:
    rng = np.random.default_rng(8)
    parts = []
    for n, labels in ((3_000, 40), (2_000, 1_000_000), (3_000, 7)):  # few values: dictionary pages; unique: plain
        keys = np.char.add("k", rng.integers(0, labels, n).astype(str)).astype(object)
        parts.append(pd.DataFrame({"k": keys, "x": rng.random(n), "i": rng.integers(-50, 50, n)}))
    df = pd.concat(parts, ignore_index=True)
    df.index = pd.date_range("2024-01-01", periods=len(df), freq="s")
    lib.write("s", df.iloc[:3_000])
    lib.append("s", df.iloc[3_000:5_000])
    lib.append("s", df.iloc[5_000:])
    q = QueryBuilder().groupby("k").agg(AGGS)
    got = lib.read("s", query_builder=q).data
    exp = _expected(df, "k", AGGS)
    pd.testing.assert_frame_equal(got, exp)  # same groups, same order (first appearance)
    assert got.index.name == "k" and got.index.dtype == object


def test_groupby_strings_with_missing_keys_and_a_categorical(lib: Library) -> None:
    rng = np.random.default_rng(9)
    n = 4_000
    keys = rng.choice(np.array(["a", "bb", None, "ccc", "d"], dtype=object), n)
    cat = pd.Categorical(rng.choice(np.array(["p", "q", "r"]), n), categories=["r", "q", "p", "unused"])
    df = pd.DataFrame({"k": keys, "c": cat, "x": rng.random(n)},
                      index=pd.date_range("2024-01-01", periods=n, freq="s"))
    lib.write("s", df)
    q = QueryBuilder().groupby("k").agg({"x": "sum"})
    got = lib.read("s", query_builder=q).data
    pd.testing.assert_frame_equal(got, df.groupby("k", sort=False)[["x"]].sum())  # None keys dropped
    q = QueryBuilder().groupby("c").agg({"x": "mean"})
    got = lib.read("s", query_builder=q).data.sort_index()
    exp = df.assign(c=df.c.astype(str)).groupby("c")[["x"]].mean()
    pd.testing.assert_frame_equal(got, exp)


@pytest.mark.parametrize("agg_key", [False, True])
def test_a_key_also_aggregated_or_filtered_first_still_groups_right(lib: Library, agg_key: bool) -> None:
    rng = np.random.default_rng(10)
    n = 3_000
    df = pd.DataFrame({"k": np.char.add("T", rng.integers(0, 30, n).astype(str)).astype(object),
                       "x": rng.random(n)}, index=pd.date_range("2024-01-01", periods=n, freq="s"))
    lib.write("s", df)
    if agg_key:
        q = QueryBuilder().groupby("k").agg({"x": "sum", "kc": ("k", "count")})
        exp = df.groupby("k", sort=False).agg(x=("x", "sum"), kc=("k", "count"))
        exp = in_output_order(exp.astype({"kc": np.uint64}))
    else:
        q = QueryBuilder()
        q = q[q["k"] != "T3"].groupby("k").agg({"x": "sum"})
        exp = df[df.k != "T3"].groupby("k", sort=False)[["x"]].sum()
    got = lib.read("s", query_builder=q).data
    pd.testing.assert_frame_equal(got, exp)
