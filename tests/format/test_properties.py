"""Hypothesis: any table of the supported Arrow types survives a Fermion round trip exactly."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arcticlite.format import FermionReader, FermionWriter, decode, encode
from tests.format.conftest import assert_same

LEAVES = [
    pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(),
    pa.uint64(), pa.float32(), pa.float64(), pa.bool_(), pa.timestamp("s"), pa.timestamp("ms"),
    pa.timestamp("us", "UTC"), pa.timestamp("ns", "Asia/Tokyo"), pa.duration("ns"), pa.date32(),
    pa.date64(), pa.string(), pa.large_string(), pa.binary(), pa.large_binary(),
    pa.dictionary(pa.int32(), pa.string()), pa.dictionary(pa.int8(), pa.int64()),
    pa.decimal128(12, 3), pa.null(),
]
WORDS = ["", "a", "bb", "é", "日本", "x" * 40, "\x00", "zz"]


def types(depth: int = 2) -> st.SearchStrategy[pa.DataType]:
    leaf = st.sampled_from(LEAVES)
    if depth == 0:
        return leaf
    inner = types(depth - 1)
    return st.one_of(
        leaf, leaf, leaf,
        inner.map(pa.list_),
        inner.map(pa.large_list),
        st.lists(inner, min_size=1, max_size=3).map(
            lambda ts: pa.struct([pa.field(f"f{i}", t) for i, t in enumerate(ts)])),
        inner.map(lambda t: pa.map_(pa.string(), t)),
    )


def _mask(n: int, rng: np.random.Generator, p: float) -> np.ndarray | None:
    if p == 0:
        return None
    return rng.random(n) < p


def gen(t: pa.DataType, n: int, rng: np.random.Generator, p: float) -> pa.Array:
    """Random array of type ``t``: arbitrary bit patterns for numbers, nulls with prob. ``p``."""
    mask = _mask(n, rng, p)
    if pa.types.is_null(t):
        return pa.nulls(n)
    if pa.types.is_dictionary(t):
        size = int(rng.integers(1, 6))
        d = gen(t.value_type, size, rng, 0.0)
        idx = pa.array(rng.integers(0, size, n).astype(t.index_type.to_pandas_dtype()), mask=mask)
        return pa.DictionaryArray.from_arrays(idx, d)
    if pa.types.is_boolean(t):
        return pa.array(rng.random(n) < 0.5, mask=mask)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.array([WORDS[i] for i in rng.integers(0, len(WORDS), n)], t, mask=mask)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.array([rng.bytes(int(k)) for k in rng.integers(0, 9, n)], t, mask=mask)
    if pa.types.is_decimal(t):
        import decimal

        return pa.array([decimal.Decimal(int(v)) / 1000 for v in rng.integers(-10**9, 10**9, n)], t,
                        mask=mask)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        lens = rng.integers(0, 4, n)
        offs = np.concatenate([[0], np.cumsum(lens)]).astype(
            np.int64 if pa.types.is_large_list(t) else np.int32)
        pm = None if mask is None else pa.array(mask)
        if pa.types.is_map(t):
            keys = gen(pa.string(), int(offs[-1]), rng, 0.0)
            items = gen(t.item_type, int(offs[-1]), rng, p)
            return pa.MapArray.from_arrays(pa.array(offs), keys, items, mask=pm)
        values = gen(t.value_type, int(offs[-1]), rng, p)
        cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        return cls.from_arrays(pa.array(offs), values, mask=pm)
    if pa.types.is_struct(t):
        kids = [gen(t.field(i).type, n, rng, p) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(kids, fields=list(t), mask=None if mask is None else pa.array(mask))
    width = t.bit_width // 8
    raw = np.frombuffer(rng.bytes(n * width), dtype=f"<i{width}").copy()
    if pa.types.is_date64(t):
        raw = (raw % (10**6)) * 86_400_000
    validity = None if mask is None else pa.py_buffer(np.packbits(~mask, bitorder="little"))
    return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(raw)])


@st.composite
def tables(draw: st.DrawFn) -> pa.Table:
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = draw(st.sampled_from([0, 1, 2, 7, 64, 300]))
    ts = draw(st.lists(types(), min_size=0, max_size=4))
    p = draw(st.sampled_from([0.0, 0.0, 0.3, 1.0]))
    fields = []
    for i, t in enumerate(ts):
        meta = {b"m": f"{i}".encode()} if draw(st.booleans()) else None
        fields.append(pa.field(f"c{i}", t, metadata=meta))
    cols = [gen(f.type, n, rng, p) for f in fields]
    schema_meta = {b"k": b"v"} if draw(st.booleans()) else None
    t = pa.Table.from_arrays(cols, schema=pa.schema(fields, metadata=schema_meta)) if cols else \
        pa.table({"_": pa.nulls(n)}, metadata=schema_meta).select([])
    off = draw(st.sampled_from([0, 0, 1, 3]))
    if off and t.num_rows > off:
        t = t.slice(off, t.num_rows - off - 1)
    if draw(st.booleans()) and t.num_rows > 2:
        t = pa.concat_tables([t.slice(0, 1), t.slice(1)])  # chunked columns
    return t


SETTINGS = settings(max_examples=int(__import__("os").environ.get("FERMION_EXAMPLES", "40")), deadline=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(tables(), st.sampled_from([64, 512, 1 << 19]), st.sampled_from([5, 100, 1 << 20]))
def test_roundtrip(t: pa.Table, page_size: int, stripe_rows: int) -> None:
    data = encode(t, page_size=page_size, stripe_rows=stripe_rows)
    got = decode(data)
    if t.num_columns:
        assert_same(got, t)
    else:
        assert got.num_rows == t.num_rows and got.schema.metadata == t.schema.metadata
    r = FermionReader(data)
    if t.num_columns and t.num_rows:
        a = t.num_rows // 3
        assert_same(r.read(row_range=(a, a + 5)), t.slice(a, 5))
        name = t.column_names[-1]
        assert_same(r.read([name]), t.select([t.num_columns - 1]))


@SETTINGS
@given(tables(), st.lists(st.integers(0, 40), min_size=1, max_size=6))
def test_batches_roundtrip(t: pa.Table, sizes: list[int]) -> None:
    w = FermionWriter(page_size=256, stripe_rows=50)
    pos, parts = 0, []
    for k in sizes:
        part = t.slice(pos, k)
        pos += part.num_rows
        w.append_batch(part)
        parts.append(part)
    data = w.close()
    r = FermionReader(data)
    if t.num_columns:
        assert_same(r.read(), pa.concat_tables(parts))
        for i, part in enumerate(parts):
            assert_same(r.read_batch(i), part)


@pytest.mark.parametrize("n", [1 << 20, (1 << 20) + 13])
def test_huge_values(n: int) -> None:
    t = pa.table({"s": pa.array(["a" * n, None, "", "b" * 3], pa.string()),
                  "l": pa.array([list(range(10)), None, [], [1]], pa.list_(pa.int64()))})
    assert_same(decode(encode(t, page_size=4096)), t)
