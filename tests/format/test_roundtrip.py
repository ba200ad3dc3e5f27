"""Round trips of every supported Arrow type through Fermion."""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pytest

from arcticlite.format import FermionReader, decode, encode
from tests.format.conftest import assert_same

N = 5003


def _all_types(n: int = N) -> pa.Table:
    rng = np.random.default_rng(0)
    mask = rng.random(n) < 0.1
    q = n // 4 + 1
    cols = {
        "i8": pa.array(rng.integers(-128, 128, n).astype(np.int8), mask=mask),
        "i16": pa.array(rng.integers(-(2**15), 2**15, n).astype(np.int16)),
        "i32": pa.array(rng.integers(-(2**31), 2**31, n).astype(np.int32)),
        "i64": pa.array(rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)),
        "u8": pa.array(rng.integers(0, 256, n).astype(np.uint8)),
        "u16": pa.array(rng.integers(0, 2**16, n).astype(np.uint16)),
        "u32": pa.array(rng.integers(0, 2**32, n).astype(np.uint32), mask=mask),
        "u64": pa.array(rng.integers(0, 2**64 - 1, n, dtype=np.uint64)),
        "f32": pa.array(rng.standard_normal(n).astype(np.float32)),
        "f64": pa.array(np.array([np.nan, -0.0, np.inf, -np.inf, 1.5] * (n // 5 + 1))[:n], mask=mask),
        "nanbits": pa.array(np.array([0x7FF8000000000001, 0xFFF0000000000001] * (n // 2 + 1),
                                     dtype=np.uint64)[:n].view(np.float64)),
        "bool": pa.array(rng.random(n) < 0.5, mask=mask),
        "ts_s": pa.array(np.arange(n).astype("datetime64[s]")),
        "ts_ms": pa.array(np.arange(n).astype("datetime64[ms]"), mask=mask),
        "ts_us_tz": pa.array(np.arange(n).astype("datetime64[us]")).cast(pa.timestamp("us", "Europe/London")),
        "ts_ns_tz": pa.array(np.arange(n).astype("datetime64[ns]")).cast(pa.timestamp("ns", "UTC")),
        "dur": pa.array(np.arange(n).astype("timedelta64[ns]"), mask=mask),
        "d32": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=i % 1000) for i in range(n)], pa.date32()),
        "d64": pa.array(np.arange(n, dtype=np.int64) * 86_400_000, pa.int64()).cast(pa.date64()),
        "str": pa.array([None if i % 7 == 0 else f"v{i % 13}é" for i in range(n)]),
        "lstr": pa.array([f"{i}" * (i % 5) for i in range(n)], pa.large_string()),
        "bin": pa.array([bytes([i % 256]) * (i % 3) for i in range(n)], pa.binary()),
        "lbin": pa.array([None, b"\x00\xff"] * (n // 2) + [b""] * (n % 2), pa.large_binary()),
        "dict": pa.array((["a", "b", None, "c"] * q)[:n]).dictionary_encode(),
        "dict_i": pa.DictionaryArray.from_arrays(pa.array(([0, 1, None, 2] * q)[:n], pa.int8()),
                                                 pa.array([10.5, 20.5, 30.5])),
        "list": pa.array(([[1, 2], None, [3], []] * q)[:n], pa.list_(pa.int64())),
        "llist": pa.array(([[[1, None]], None, [[3], []], []] * q)[:n], pa.large_list(pa.list_(pa.int32()))),
        "struct": pa.array(([{"a": 1, "b": "x"}, None, {"a": None, "b": "y"}, {"a": 4, "b": None}] * q)[:n]),
        "map": pa.array(([[("k", 1)], None, [("a", 2), ("b", None)], []] * q)[:n],
                        pa.map_(pa.string(), pa.int64())),
        "dec": pa.array(([decimal.Decimal("1.23"), None] * (n // 2 + 1))[:n], pa.decimal128(10, 2)),
        "fsl": pa.array(([[1.0, 2.0], None, [3.0, np.nan]] * (n // 3 + 1))[:n], pa.list_(pa.float64(), 2)),
        "allnull": pa.nulls(n, pa.int32()),
        "allnull_s": pa.nulls(n, pa.struct([("x", pa.int8())])),
        "null": pa.nulls(n),
        "list_str": pa.array(([["a", None], None, []] * (n // 3 + 1))[:n], pa.list_(pa.string())),
    }
    t = pa.table(cols)
    s = t.schema.set(0, t.schema.field(0).with_metadata({"unit": "bp"}))
    return t.cast(s).replace_schema_metadata({"pandas": "{}", "k": "v"})


@pytest.mark.parametrize("page_size", [64, 4096, 512 * 1024])
def test_all_types(page_size: int) -> None:
    t = _all_types()
    assert_same(decode(encode(t, page_size=page_size)), t)


def test_sliced_and_chunked_input() -> None:
    t = _all_types()
    sl = t.slice(17, 3001)
    assert_same(decode(encode(sl, page_size=1024)), sl)
    chunked = pa.concat_tables([t.slice(0, 100), t.slice(100, 2000), t.slice(2100)])
    assert_same(decode(encode(chunked, page_size=2048)), t)


def test_stripes() -> None:
    t = _all_types()
    assert_same(decode(encode(t, page_size=512, stripe_rows=1000)), t)


def test_empty_tables() -> None:
    t = _all_types().slice(0, 0)
    assert_same(decode(encode(t)), t)
    e = pa.table({})
    assert_same(decode(encode(e)), e)
    rows_no_cols = _all_types().select([])
    out = decode(encode(rows_no_cols))
    assert out.num_rows == rows_no_cols.num_rows and out.num_columns == 0


def test_row_ranges_and_columns() -> None:
    t = _all_types()
    b = encode(t, page_size=256, stripe_rows=1500)
    for a, z in [(0, 1), (5, 9), (1499, 1501), (100, 4000), (4990, 9999), (3000, 3000)]:
        exp = t.slice(a, max(0, min(z, N) - a))
        assert_same(decode(b, row_range=(a, z)), exp)
    got = decode(b, columns=["map", "i8", "str"], row_range=(10, 2000))
    assert_same(got, t.select(["map", "i8", "str"]).slice(10, 1990))


def test_huge_strings() -> None:
    big = "x" * (3 << 20)
    t = pa.table({"s": [big, None, "y", big + "z"], "b": pa.array([b"\0" * (1 << 20)] * 4, pa.large_binary())})
    assert_same(decode(encode(t)), t)


def test_all_null_column_has_no_cmb() -> None:
    t = pa.table({"a": pa.nulls(100, pa.int64()), "b": list(range(100))})
    r = FermionReader(encode(t))
    assert r.column_meta("a").all_null
    assert r.column_meta("a").cmb_length == 0
    assert not r.column_meta("b").all_null
