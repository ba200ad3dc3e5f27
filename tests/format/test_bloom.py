"""Bloom filters of Fermion 1.1 files (docs/format.md §9) and the pruning ops readers judge by
statistics: false positives measured, never a false negative, 1.0 files unchanged, a ranged
read of only the filter, corrupt filters refused."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arcticlite import format as fermion
from arcticlite.exceptions import CorruptDataError, UserInputException
from arcticlite.format import _bloom as B


def encode(table: pa.Table, bloom: int | None = 100, **kw: object) -> bytes:
    kw.setdefault("bloom_max_fraction", 1.0)  # small files: filters whatever their share of the file
    w = fermion.FermionWriter(None, table.schema, bloom_min_distinct=bloom, **kw)  # type: ignore[arg-type]
    w.write(table)
    out = w.close()
    assert out is not None
    return out


def tickers(n: int, distinct: int, seed: int = 0) -> pa.Array:
    rng = np.random.default_rng(seed)
    return pa.array(np.char.add("T", rng.integers(0, distinct, n).astype(str)).astype(object))


def test_false_positive_rate_is_about_one_percent() -> None:
    rng = np.random.default_rng(1)
    n = 20_000
    t = pa.table({"s": tickers(n, 10_000), "k": rng.integers(0, 1 << 40, n)})
    r = fermion.FermionReader(encode(t))
    misses_s = [f"Z{i}" for i in range(20_000)]
    misses_k = [int(v) for v in rng.integers(1 << 41, 1 << 42, 20_000)]
    for col, misses in (("s", misses_s), ("k", misses_k)):
        kind, bits = r._bloom_bits(r.resolve([col])[0])  # type: ignore[misc]
        h = B.query_hashes(misses, t.schema.field(col).type, kind)
        assert h is not None
        fpr = B.contains(bits, h).mean()
        assert fpr < 0.015, (col, fpr)  # 10 bits and 7 probes per value: ~0.8 % expected
    # size: ~10 bits per distinct value
    sizes = r.bloom_columns()
    distinct = len(set(t.column("s").to_pylist()))
    assert sizes["s"] == pytest.approx(distinct * 10 / 8, rel=0.01)


def test_a_few_query_values_are_probed_as_many_at_once_are() -> None:
    # a query's few values are probed with Python integers, many with numpy: same answers
    t = pa.table({"s": tickers(5_000, 3_000)})
    r = fermion.FermionReader(encode(t))
    kind, bits = r._bloom_bits(r.resolve(["s"])[0])  # type: ignore[misc]
    h = B.query_hashes([f"T{i}" for i in range(0, 6_000, 3)], t.schema.field("s").type, kind)
    assert h is not None
    many = B.contains(bits, h)
    few = np.concatenate([B.contains(memoryview(bits), h[k : k + 5]) for k in range(0, len(h), 5)])
    assert few.tolist() == many.tolist() and many.any() and not many.all()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(max_size=12) | st.binary(max_size=12).map(lambda b: b.decode("latin-1")),
                min_size=1, max_size=200),
       st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=200))
def test_no_false_negatives(strings: list[str], ints: list[int]) -> None:
    n = max(len(strings), len(ints))
    t = pa.table({"s": pa.array((strings * n)[:n], pa.large_string()), "i": pa.array((ints * n)[:n], pa.int64()),
                  "u": pa.array([abs(v) for v in (ints * n)[:n]], pa.uint64())})
    r = fermion.FermionReader(encode(t, bloom=1))
    for v in strings:
        assert r.bloom_may_contain("s", [v]) is True
        assert r.candidate_rows([("s", "==", v)]) != []
    for v in ints:
        assert r.bloom_may_contain("i", [v]) in (True, None)  # None: the column is sorted
        assert r.bloom_may_contain("u", [abs(v)]) in (True, None)
        assert r.candidate_rows([("i", "in", [v])]) != []


def test_threshold_and_eligible_columns() -> None:
    n = 5_000
    rng = np.random.default_rng(2)
    t = pa.table({"few": tickers(n, 50), "many": tickers(n, 4_000), "sorted": np.arange(n),
                  "rand": rng.integers(0, 1 << 30, n), "f": rng.random(n),
                  "dict": tickers(n, 3_000).dictionary_encode()})
    r = fermion.FermionReader(encode(t, bloom=1_000))
    assert set(r.bloom_columns()) == {"many", "rand", "dict"}  # floats, sorted ints and few values: none
    assert r.bloom_may_contain("f", [0.5]) is None
    assert r.bloom_may_contain("many", ["nope"]) is False
    assert r.bloom_may_contain("dict", ["nope"]) is False
    assert r.bloom_may_contain("rand", [1.5]) is None  # not an integer: no verdict
    assert r.bloom_may_contain("rand", ["x"]) is None


def test_files_without_filters_are_unchanged_and_readers_ignore_the_section() -> None:
    t = pa.table({"s": tickers(3_000, 2_000), "x": np.arange(3_000) % 7})
    plain = fermion.encode(t)
    assert encode(t, bloom=None) == plain
    assert fermion.FermionReader(plain).version == (1, 0)
    with_bloom = encode(t, bloom=10)
    r = fermion.FermionReader(with_bloom)
    assert r.version == (1, 1) and r.footer["bloom_length"] > 0
    assert fermion.decode(with_bloom).equals(t)
    assert fermion.FermionReader(plain).bloom_columns() == {}
    assert fermion.FermionReader(plain).bloom_may_contain("s", ["T1"]) is None


def test_ranged_source_reads_only_the_filter() -> None:
    n = 200_000
    t = pa.table({"s": tickers(n, 10_000), "x": np.random.default_rng(3).random(n)})
    body = encode(t, bloom=1_000, page_size=1 << 16)
    asked: list[tuple[int, int]] = []

    def fetch(off: int, length: int) -> bytes:
        asked.append((off, length))
        return body[off : off + length]

    rr = fermion.RangeReader(fetch, size=len(body), prefetch=4096)
    r = fermion.FermionReader(rr)
    assert r.bloom_may_contain("s", ["absent"]) is False
    assert rr.bytes_requested < 4096 + 2 * 12_600  # the tail, the directory and one 12.5 KB filter
    data_end = r.footer.cmb_area_offset - r.footer["bloom_length"]
    assert all(off >= data_end for off, _ in asked)  # not one data page


def test_corrupt_filter_is_refused() -> None:
    t = pa.table({"s": tickers(3_000, 2_000)})
    body = bytearray(encode(t, bloom=10))
    r = fermion.FermionReader(bytes(body))
    _, _, off, _, _ = r._bloom_directory().entries[0]  # type: ignore[union-attr]
    body[off + 3] ^= 0xFF
    with pytest.raises(CorruptDataError):
        fermion.FermionReader(bytes(body)).bloom_may_contain("s", ["T1"])


def test_bad_threshold_is_refused() -> None:
    for bad in (0, -3, 1.5, True, "10"):
        with pytest.raises(UserInputException, match="bloom_min_distinct"):
            fermion.FermionWriter(None, bloom_min_distinct=bad)  # type: ignore[arg-type]


def test_candidate_rows_for_pushdown_ops() -> None:
    # 4 pages of 1,000 rows: constant 7, then 100..1099, then nulls, then NaN-bearing floats
    n = 4_000
    x = np.concatenate([np.full(1000, 7), np.arange(100, 1100), np.zeros(1000), np.arange(1000)]).astype(np.int64)
    valid = np.ones(n, bool)
    valid[2000:3000] = False
    f = np.where(np.arange(n) >= 3000, np.nan, 1.0)
    t = pa.table({"x": pa.array(x, mask=~valid), "f": f})
    r = fermion.FermionReader(fermion.encode(t, page_size=8_000))
    assert r.candidate_rows([("x", "!=", 7)]) == [(1000, 4000)]  # nulls differ from 7
    assert r.candidate_rows([("x", "isnull", None)]) == [(2000, 3000)]
    assert r.candidate_rows([("x", "notnull", None)]) == [(0, 2000), (3000, 4000)]
    assert r.candidate_rows([("f", "isnull", None)]) == [(3000, 4000)]  # NaN is null, as in pandas
    assert r.candidate_rows([("", "or", [[("x", "==", 7)], [("f", "isnull", None)]])]) == [(0, 1000), (3000, 4000)]
    got = r.read(["x"], rows=[(10, 12), (3998, 4000)])
    assert got.column("x").to_pylist() == [7, 7, 998, 999]
    expr_rows = fermion.decode(fermion.encode(t), filter=[("", "or", [[("x", "==", 7)], [("x", "isnull", None)]])])
    assert expr_rows.num_rows == 2001  # 7 in the first and last pages, and the nulls


def test_all_null_columns_and_stripes_match_isnull_and_not_equal() -> None:
    t = pa.table({"n": pa.nulls(1_000, pa.string()),
                  "h": pa.array([None] * 500 + ["a"] * 500, pa.string())})
    r = fermion.FermionReader(fermion.encode(t, stripe_rows=500))
    assert r.candidate_rows([("n", "isnull", None)]) == [(0, 1_000)]
    assert r.candidate_rows([("n", "!=", "a")]) == [(0, 1_000)]
    assert r.candidate_rows([("n", "==", "a")]) == []
    assert r.candidate_rows([("h", "isnull", None)]) == [(0, 500)]
    assert r.candidate_rows([("h", "!=", "a")]) == [(0, 1_000)]


def test_filters_take_at_most_their_share_of_the_file() -> None:
    # 100,000 rows: a 10,000-value ticker (12.5 KB filter), 1,000 labels (1.3 KB) and distinct
    # random integers (125 KB: more than 3 % of the file, so none)
    n = 100_000
    rng = np.random.default_rng(5)
    t = pa.table({"ticker": tickers(n, 10_000), "label": tickers(n, 1_000, seed=1),
                  "k": rng.integers(-(10**9), 10**9, n), "x": rng.random(n)})
    with_default = encode(t, bloom=16, bloom_max_fraction=B.MAX_FRACTION)
    r = fermion.FermionReader(with_default)
    assert set(r.bloom_columns()) == {"ticker", "label"}
    assert r.footer["bloom_length"] <= B.MAX_FRACTION * len(with_default)
    assert r.bloom_may_contain("ticker", ["absent"]) is False
    assert r.bloom_may_contain("k", [12345]) is None  # no filter: no verdict, nothing pruned
    everything = fermion.FermionReader(encode(t, bloom=16, bloom_max_fraction=1.0))
    assert set(everything.bloom_columns()) == {"ticker", "label", "k"}
    assert set(fermion.FermionReader(encode(t, bloom=16, bloom_max_fraction=0.0)).bloom_columns()) == set()
    for bad in (-0.1, 1.5, "3%", True):
        with pytest.raises(UserInputException, match="bloom_max_fraction"):
            fermion.FermionWriter(None, bloom_min_distinct=16, bloom_max_fraction=bad)  # type: ignore[arg-type]
