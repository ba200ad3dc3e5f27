"""A group-by on a string key reduces its dictionary codes with numpy: the results are exactly
those of a hash group-by (pyarrow's, row by row), whether the key's rows come in blocks or
at random, with NaN, missing keys, groups without a value and integer or float columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from arcticlite import Library, QueryBuilder
from tests.query.conftest import in_output_order

OPS = ("sum", "mean", "min", "max", "count")


def _hash_groupby(df: pd.DataFrame, key: str, columns: list[str]) -> pd.DataFrame:
    """The reference: pyarrow's hash group-by in row order over the keys' codes in order of
    first appearance (NaN skipped, as every aggregation skips it), finished as arcticlite shows
    it (sum of nothing 0, count uint64, mean / min / max of nothing NaN for floats and 0 for
    integers)."""
    keep = df[key].notna().to_numpy()
    codes, names = pd.factorize(df[key].to_numpy()[keep])
    cols = {"k": pa.array(codes.astype(np.int32))}
    for c in columns:
        v = df[c].to_numpy()[keep]
        cols[c] = pa.array(v, from_pandas=True) if v.dtype.kind == "f" else pa.array(v)
    g = pa.table(cols).group_by("k", use_threads=False).aggregate([(c, op) for c in columns for op in OPS])
    out = {}
    for c in columns:
        for op in OPS:
            r = g.column(f"{c}_{op}")
            if op == "count":
                r = r.cast(pa.uint64())
            elif op == "sum" or pa.types.is_integer(r.type):
                r = r.fill_null(0)
            else:
                r = r.fill_null(float("nan"))
            out[f"{c}_{op}"] = r.to_numpy()
    return in_output_order(pd.DataFrame(out, index=pd.Index(names[g.column("k").to_numpy()], name=key)))


def _query(columns: list[str]) -> QueryBuilder:
    return QueryBuilder().groupby("k").agg({f"{c}_{op}": (c, op) for c in columns for op in OPS})


def _frame(n: int, layout: str, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    names = np.array([f"T{i:03d}" for i in range(60)] + [None], dtype=object)
    if layout == "blocks":  # each key's rows together, keys in random order
        codes = rng.permutation(61)[np.arange(n) * 61 // n]
    else:
        codes = rng.integers(0, 61, n)
    x = rng.normal(size=n) * 1e3
    x[rng.random(n) < 0.1] = np.nan
    x[codes == 7] = np.nan  # one group without a value
    f32 = x.astype(np.float32)
    zeros = rng.random(n) < 0.05
    z = np.where(zeros, np.where(rng.random(n) < 0.5, -0.0, 0.0), rng.random(n) + 1)
    return pd.DataFrame({
        "k": names[codes], "x": x, "f32": f32, "z": z,
        "i8": rng.integers(-120, 120, n).astype(np.int8),
        "i64": rng.integers(-2**40, 2**40, n),
        "u32": rng.integers(0, 2**32 - 1, n, dtype=np.uint64).astype(np.uint32),
    }, index=pd.date_range("2024-01-01", periods=n, freq="s"))


@pytest.mark.parametrize("layout", ["blocks", "random"])
def test_groupby_reductions_equal_a_hash_groupby_exactly(lib: Library, layout: str) -> None:
    df = _frame(3_000, layout, seed={"blocks": 1, "random": 2}[layout])
    lib.write("s", df.iloc[:1_000])
    lib.append("s", df.iloc[1_000:2_200])
    lib.append("s", df.iloc[2_200:])
    columns = ["x", "f32", "z", "i8", "i64", "u32"]
    got = lib.read("s", query_builder=_query(columns)).data
    exp = _hash_groupby(df, "k", columns)
    pd.testing.assert_frame_equal(got, exp, check_exact=True)  # same groups, order, values, dtypes
    # the signs of zero extremes are kept: the first zero of the group
    assert np.array_equal(np.signbit(got["z_min"].to_numpy()), np.signbit(exp["z_min"].to_numpy()))
    assert np.array_equal(np.signbit(got["z_max"].to_numpy()), np.signbit(exp["z_max"].to_numpy()))
    empty = got.loc["T007"]
    assert empty["x_sum"] == 0 and empty["x_count"] == 0 and np.isnan(empty["x_mean"]) and np.isnan(empty["x_min"])
    assert got["i64_sum"].dtype == np.int64 and got["u32_sum"].dtype == np.uint64
    assert got["i8_min"].dtype == np.int8 and got["f32_max"].dtype == np.float32


def test_float_sums_accumulate_in_row_order(lib: Library) -> None:
    # 0.1 + 0.2 + 0.3 in that order is 0.6000000000000001; any other order or a pairwise sum differs
    df = pd.DataFrame({"k": ["a", "b", "a", "a", "b"], "x": [0.1, 1e16, 0.2, 0.3, 1.0]},
                      index=pd.date_range("2024-01-01", periods=5, freq="s"))
    lib.write("s", df)
    got = lib.read("s", query_builder=QueryBuilder().groupby("k").agg({"x": "sum"})).data
    assert got["x"].tolist() == [0.1 + 0.2 + 0.3, 1e16 + 1.0]
    assert got.index.tolist() == ["a", "b"]


def test_all_values_missing_and_no_rows(lib: Library) -> None:
    df = pd.DataFrame({"k": ["a", None, "b", "a"], "x": [np.nan, 1.0, np.nan, np.nan],
                       "i": np.array([3, 4, 5, 6], dtype=np.int32)},
                      index=pd.date_range("2024-01-01", periods=4, freq="s"))
    lib.write("s", df)
    q = QueryBuilder().groupby("k").agg({"s": ("x", "sum"), "m": ("x", "mean"), "lo": ("x", "min"),
                                         "n": ("x", "count"), "isum": ("i", "sum"), "imax": ("i", "max")})
    got = lib.read("s", query_builder=q).data
    assert got.index.tolist() == ["a", "b"]  # the row without a key is in no group
    assert got["s"].tolist() == [0.0, 0.0] and got["n"].tolist() == [0, 0]
    assert got["m"].isna().all() and got["lo"].isna().all()
    assert got["isum"].tolist() == [9, 5] and got["imax"].tolist() == [6, 5]
    q = QueryBuilder()
    q = q.date_range((pd.Timestamp("2030-01-01"), None)).groupby("k").agg({"x": "sum"})
    assert len(lib.read("s", query_builder=q).data) == 0


def test_groupby_with_a_date_range_or_row_range_read(lib: Library) -> None:
    # the index is not decoded for a group-by of data columns, unless a date range needs it
    df = _frame(400, "random", seed=3)
    lib.write("s", df)
    q = QueryBuilder().groupby("k").agg({"x": "sum", "n": ("i64", "count")})
    lo, hi = df.index[37], df.index[311]
    got = lib.read("s", date_range=(lo, hi), query_builder=q).data
    part = df.loc[lo:hi]
    exp = part.groupby("k", sort=False).agg(x=("x", "sum"), n=("i64", "count")).astype({"n": np.uint64})
    pd.testing.assert_frame_equal(got, in_output_order(exp))
    got = lib.read("s", row_range=(13, 287), query_builder=q).data
    part = df.iloc[13:287]
    exp = part.groupby("k", sort=False).agg(x=("x", "sum"), n=("i64", "count")).astype({"n": np.uint64})
    pd.testing.assert_frame_equal(got, in_output_order(exp))
    q = QueryBuilder().groupby("k").agg({"x": "max"})
    q = q[q["x"] > 1_000]
    got = lib.read("s", query_builder=q).data
    exp = df.groupby("k", sort=False)[["x"]].max()
    pd.testing.assert_frame_equal(got, exp[exp.x > 1_000])
