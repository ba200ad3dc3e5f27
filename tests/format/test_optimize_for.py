"""``FermionWriter(optimize_for=...)``: the ``read`` policy trades bytes for decode speed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings

from arcticlite.exceptions import UserInputException
from arcticlite.format import FermionReader, FermionWriter, decode, encode
from tests.format.conftest import assert_same
from tests.format.test_properties import tables


def quote_table(n: int = 200_000, seed: int = 3) -> pa.Table:
    """Quote-like columns: every encoding family the cascades choose from."""
    rng = np.random.default_rng(seed)
    ts = np.cumsum(rng.exponential(5_000, n).astype(np.int64) * 1_000)
    ticks = 10_000 + np.cumsum(rng.integers(-1, 2, n) * (rng.random(n) < 0.3))
    venues = np.array(["NYSE", "NASDAQ", "ARCA", "BATS", "IEX"])
    return pa.table({
        "ts": pa.array(ts.astype("datetime64[ns]")),
        "bid": ticks / 100.0,
        "runs": np.repeat(rng.integers(0, 1_000, n // 8), 8),  # short runs: RLE by size only
        "size": np.maximum(1, rng.lognormal(1.0, 1.0, n).astype(np.int64)) * 100,
        "noise": rng.standard_normal(n),
        "venue": venues[rng.integers(0, len(venues), n)],
        "text": [f"order-{i % 5_000}-{'x' * (i % 7)}" for i in range(n)],
    })


def encodings(blob: bytes) -> list[str]:
    with FermionReader(blob) as r:
        return [r.describe_page(s["offset"], s["compressed"])
                for i in range(r.num_columns) for s in r.page_stats(i)]


def test_read_policy_has_no_zstd_and_no_short_runs() -> None:
    t = quote_table()
    small, fast = encode(t), encode(t, optimize_for="read")
    assert_same(decode(fast), t)
    assert any("zstd" in e for e in encodings(small))  # the data does compress with ZSTD
    fast_encs = encodings(fast)
    assert not any("zstd" in e for e in fast_encs), fast_encs
    assert not any("rle" in e for e in fast_encs), fast_encs
    assert not any("split" in e for e in fast_encs), fast_encs
    assert any("lz4" in e for e in fast_encs), fast_encs
    # still far smaller than the raw values, though larger than the size-optimised file
    assert len(small) < len(fast) < t.nbytes / 3


def test_size_is_the_default_and_unchanged() -> None:
    t = quote_table(50_000)
    assert encode(t) == encode(t, optimize_for="size")


def test_read_policy_decodes_into_buffers() -> None:
    t = quote_table(120_000).select(["ts", "bid", "size", "venue"])
    blob = encode(t, optimize_for="read", page_size=1 << 16)
    for a, b in [(0, t.num_rows), (1_000, 61_000)]:
        n = b - a
        out = [np.empty(n, "datetime64[ns]"), np.empty(n), np.empty(n, np.int64),
               np.empty(n, object)]
        with FermionReader(blob) as r:
            assert r.read_into(t.column_names, out, row_range=(a, b)) == [None] * 4
        for name, arr in zip(t.column_names, out, strict=True):
            np.testing.assert_array_equal(arr, t.column(name).to_numpy()[a:b])


def test_policy_does_not_leak_into_other_writers() -> None:
    t = quote_table(50_000)
    before = encode(t)
    w = FermionWriter(None, t.schema, optimize_for="read", parallel=True)
    w.write(t)
    w.close()
    assert encode(t) == before  # the pool threads are back to the default policy


def test_unknown_policy_is_refused() -> None:
    with pytest.raises(UserInputException, match="optimize_for='speed'.*read.*size"):
        FermionWriter(None, pa.schema([("a", pa.int64())]), optimize_for="speed")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_read_policy_roundtrip(t: pa.Table) -> None:
    assert_same(decode(encode(t, optimize_for="read", page_size=512)), t)


def test_write_policy_stores_every_page_plain() -> None:
    t = quote_table(30_000)
    blob = encode(t, optimize_for="write")
    assert set(encodings(blob)) <= {"plain", "constant", "binary(lengths=plain)"}, set(encodings(blob))
    assert_same(decode(blob), t)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_write_policy_roundtrip(t: pa.Table) -> None:
    assert_same(decode(encode(t, optimize_for="write", page_size=512)), t)


def test_files_of_one_bulk_write_share_encoding_choices() -> None:
    """``choices=``: the segments of one write reuse each stream's scheme and codec (chosen on
    the first file, searched again every few pages): same values back, about the same size."""

    import pyarrow as pa

    from arcticlite import format as fermion

    rng = np.random.default_rng(3)
    n = 20_000
    bid = np.round(100 + np.cumsum(rng.integers(-1, 2, 10 * n)) / 100, 2)
    size = rng.integers(1, 50, 10 * n) * 100
    parts = [pa.table({"bid": bid[k * n:(k + 1) * n], "size": size[k * n:(k + 1) * n]}) for k in range(10)]
    choices: dict = {}
    shared = [fermion.encode(t, optimize_for="read", parallel=False, choices=choices) for t in parts]
    alone = [fermion.encode(t, optimize_for="read", parallel=False) for t in parts]
    for blob, t in zip(shared, parts, strict=True):
        assert fermion.decode(blob).equals(t)
    assert choices  # the choices were remembered ...
    assert sum(map(len, shared)) <= 1.05 * sum(map(len, alone))  # ... at about the same size
    # a remembered scheme that does not fit later values falls back to plain, never to wrong data
    odd = pa.table({"bid": rng.random(n), "size": rng.integers(-2**62, 2**62, n)})
    assert fermion.decode(fermion.encode(odd, optimize_for="read", parallel=False, choices=choices)).equals(odd)


def _shapes() -> dict[str, Any]:


    rng = np.random.default_rng(11)
    n = 4_096
    return {
        "decimals": np.round(100 + np.cumsum(rng.integers(-1, 2, n)) / 100, 2),
        "sizes": rng.integers(1, 50, n).astype(np.int64) * 100,
        "constant": np.full(n, 7, dtype=np.int64),
        "runs": np.repeat(rng.integers(0, 5, n // 64), 64).astype(np.int64),
        "timestamps": np.cumsum(rng.integers(0, 5_000, n)).astype(np.int64) * 1_000,
        "noise": rng.standard_normal(n),
        "wide ints": rng.integers(-2**62, 2**62, n),
        "few codes": rng.integers(0, 3, n).astype(np.int64) * 1_000_003,
    }


@pytest.mark.parametrize("first", list(_shapes()))
def test_a_remembered_cascade_encodes_any_later_values_correctly(first: str) -> None:
    """A bulk write remembers each stream's whole cascade (schemes, decimal exponent) from
    one page and replays it on the next pages; where it no longer fits the values, that part
    is chosen again. Whatever comes next, the values come back bit-exact and no page is
    larger than plain."""
    import dataclasses

    from arcticlite.format import _encodings as E
    from arcticlite.format._enc_policy import READ, run_with

    shapes = _shapes()
    x0 = shapes[first]
    for later, x in shapes.items():
        if x.dtype != x0.dtype:
            continue
        policy = dataclasses.replace(READ, memo={})
        run_with(policy, lambda x0=x0: E.encode_fixed(x0, gate=False, key="s"))
        if first != "constant":  # a constant page is never remembered
            assert policy.memo["s"][5] is not None  # the recipe is remembered
        blob = run_with(policy, lambda x=x: E.encode_fixed(x, gate=False, key="s"))
        back = E.decode_fixed(memoryview(blob), x.dtype, len(x))
        assert np.array_equal(back.view(np.uint8), x.view(np.uint8)), (first, later)
        assert len(blob) <= 1 + x.nbytes + 16, (first, later)


def test_a_stream_whose_data_changes_is_searched_again_however_long_its_choice_held() -> None:
    """A bulk write trusts a stream's choice for longer and longer while searches gain
    nothing; when the values change so that the choice no longer pays, the next page is
    searched again: the stored size follows the data, it does not stay with the old choice."""
    import dataclasses

    from arcticlite.format import _encodings as E
    from arcticlite.format._enc_policy import READ, run_with

    rng = np.random.default_rng(3)
    smooth = [np.cumsum(rng.integers(0, 3, 100_000)).astype(np.int64) + 10**9 * i for i in range(100)]
    jumpy = [rng.integers(0, 1 << 20, 100_000).astype(np.int64) for _ in range(4)]
    policy = dataclasses.replace(READ, memo={})
    for x in smooth:  # a long stationary stretch: the choice is trusted for many pages
        run_with(policy, lambda x=x: E.encode_fixed(x, gate=False, key="s"))
    sizes = [len(run_with(policy, lambda x=x: E.encode_fixed(x, gate=False, key="s"))) for x in jumpy]
    fresh = len(run_with(dataclasses.replace(READ, memo={}), lambda: E.encode_fixed(jumpy[-1], gate=False, key="s")))
    assert sizes[-1] <= 1.05 * fresh  # searched again after the change
    for x in jumpy:
        back = E.decode_fixed(memoryview(run_with(policy, lambda x=x: E.encode_fixed(x, gate=False, key="s"))),
                              x.dtype, len(x))
        assert np.array_equal(back, x)


def test_a_bulk_write_shares_dictionaries_and_filters_across_its_files() -> None:
    """The files of one bulk write with a many-label string column (carried dictionary-encoded
    from normalization, as a library write does) and a small-range integer column: encoded
    with shared choices (searched on a sample of each long page, the labels' dictionary and
    Bloom filter encoded once), they hold the same values and the same Bloom filters as files
    encoded alone, at about the same size."""
    import pandas as pd
    import pyarrow as pa

    from arcticlite import format as fermion
    from arcticlite import normalize as norm

    rng = np.random.default_rng(8)
    n = 80_000  # pages long enough to be searched on a sample
    labels = np.array([f"venue_{i:04d}" for i in range(700)], dtype=object)
    df = pd.DataFrame({"venue": labels[rng.integers(0, 700, 4 * n)],
                       "size": rng.integers(1, 300, 4 * n) * 100,
                       "bid": np.round(100 + np.cumsum(rng.integers(-1, 2, 4 * n)) / 100, 2)})
    table, _ = norm.normalize(df, dictionary_strings=True)
    assert pa.types.is_dictionary(table.schema.field("venue").type)  # carried as in a library write
    schema = norm.value_schema(table.schema)
    parts = [table.slice(k * n, n) for k in range(4)]
    choices: dict = {}
    opts = dict(schema=schema, optimize_for="read", parallel=False, bloom_min_distinct=16)
    shared = [fermion.encode(t, choices=choices, **opts) for t in parts]
    alone = [fermion.encode(t, **opts) for t in parts]
    kept = [k for k in choices if isinstance(k, tuple) and len(k) > 1 and k[0] == "bloom"
            or isinstance(k, tuple) and len(k) > 1 and k[1] == "dictionary"]
    assert len(kept) == 2  # the labels' filter and their encoded dictionary, made once
    for blob, single, t in zip(shared, alone, parts, strict=True):
        got = fermion.decode(blob)
        assert got.equals(norm.value_table(t))
        assert got.equals(fermion.decode(single))
        r, s = fermion.FermionReader(blob), fermion.FermionReader(single)
        assert r.bloom_columns() == s.bloom_columns() and "venue" in r.bloom_columns()
        assert r._bloom_bits(r.bloom_columns()["venue"]) == s._bloom_bits(s.bloom_columns()["venue"])
        assert r.bloom_may_contain("venue", ["venue_0003"]) is True
        assert r.bloom_may_contain("venue", ["nowhere"]) is False
        assert r.bloom_may_contain("size", [150]) is False and r.bloom_may_contain("size", [200]) is True
    assert sum(map(len, shared)) <= 1.05 * sum(map(len, alone))
