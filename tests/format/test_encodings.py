"""Fermion value encodings: bit-exact round trips, encoding choice, corruption handling."""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from arcticlite.exceptions import CorruptDataError
from arcticlite.format import _encodings as enc
from arcticlite.format._encodings import (
    ENCODING_NAMES,
    decode_binary,
    decode_fixed,
    describe,
    encode_binary,
    encode_fixed,
)

INT_DTYPES = [np.dtype(f"<{k}{s}") for k in "iu" for s in (1, 2, 4, 8)]
FLOAT_DTYPES = [np.dtype("<f4"), np.dtype("<f8")]
ALL_DTYPES = INT_DTYPES + FLOAT_DTYPES
HYPO = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


def roundtrip(x: np.ndarray, **kw: bool) -> bytes:
    """Encode, decode (fresh and into ``out``), assert bit-exact; return the blob."""
    blob = encode_fixed(x, **kw)
    assert isinstance(blob, bytes)
    assert blob[0] in ENCODING_NAMES
    y = decode_fixed(blob, x.dtype, len(x))
    assert y.dtype == x.dtype and y.shape == x.shape
    assert y.view(np.uint8).tobytes() == x.view(np.uint8).tobytes(), describe(blob)
    mv = decode_fixed(memoryview(blob), x.dtype, len(x))
    assert mv.tobytes() == x.tobytes()
    return blob


# ----------------------------------------------------------------------------- strategies
@st.composite
def shaped_ints(draw: st.DrawFn, dtype: np.dtype) -> np.ndarray:
    """Integer arrays from distributions that trigger each encoding."""
    kind = draw(
        st.sampled_from(["random", "constant", "runs", "lowcard", "sorted", "small", "extreme"])
    )
    n = draw(st.integers(0, 3000))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    if kind == "random":
        return rng.integers(lo, hi, n, dtype=dtype, endpoint=True)
    if kind == "constant":
        return np.full(n, rng.integers(lo, hi, dtype=dtype, endpoint=True), dtype=dtype)
    if kind == "runs":
        vals = rng.integers(lo, hi, max(1, n // 50 + 1), dtype=dtype, endpoint=True)
        return np.repeat(vals, rng.integers(1, 100, len(vals)))[:n].astype(dtype)
    if kind == "lowcard":
        vals = rng.integers(lo, hi, 7, dtype=dtype, endpoint=True)
        return vals[rng.integers(0, 7, n)]
    if kind == "sorted":
        return np.sort(rng.integers(lo, hi, n, dtype=dtype, endpoint=True))
    if kind == "small":
        span = min(1000, (hi - lo) // 4)
        base = lo + int(rng.integers(0, 2**62)) % (hi - span - lo + 1)
        return (base + rng.integers(0, span, n)).astype(dtype)
    return rng.choice(np.array([lo, hi, 0, lo + 1, hi - 1], dtype=object), n).astype(dtype)


@st.composite
def shaped_floats(draw: st.DrawFn, dtype: np.dtype) -> np.ndarray:
    """Float arrays: decimals (with specials), raw bit patterns, runs, low cardinality."""
    kind = draw(st.sampled_from(["decimal", "bits", "runs", "lowcard", "normal"]))
    n = draw(st.integers(0, 3000))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    ud = np.dtype(f"<u{dtype.itemsize}")
    if kind == "bits":
        return rng.integers(0, np.iinfo(ud).max, n, dtype=ud, endpoint=True).view(dtype)
    if kind == "decimal":
        e = draw(st.integers(0, 4))
        x = (rng.integers(-(10**6), 10**6, n) / 10.0**e).astype(dtype)
        specials = np.array([np.nan, -0.0, np.inf, -np.inf, 1e300, 5e-324], dtype=np.float64)
        k = draw(st.integers(0, 5))
        if n and k:
            with np.errstate(over="ignore"):
                x[rng.integers(0, n, k)] = specials[rng.integers(0, 6, k)].astype(dtype)
        return x
    if kind == "runs":
        return np.repeat(rng.standard_normal(n // 40 + 1), 40)[:n].astype(dtype)
    if kind == "lowcard":
        return rng.standard_normal(5).astype(dtype)[rng.integers(0, 5, n)]
    return rng.standard_normal(n).astype(dtype)


# ----------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
@HYPO
@given(data=st.data())
def test_int_roundtrip_shaped(dtype: np.dtype, data: st.DataObject) -> None:
    x = data.draw(shaped_ints(dtype))
    roundtrip(x)
    roundtrip(x, allow_compression=False)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@HYPO
@given(data=st.data())
def test_float_roundtrip_shaped(dtype: np.dtype, data: st.DataObject) -> None:
    x = data.draw(shaped_floats(dtype))
    roundtrip(x)
    roundtrip(x, allow_compression=False)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_roundtrip_arbitrary_elements(dtype: np.dtype, data: st.DataObject) -> None:
    elements = None
    if dtype.kind == "f":
        elements = st.floats(width=8 * dtype.itemsize, allow_nan=True, allow_infinity=True)
    x = data.draw(hnp.arrays(dtype, st.integers(0, 300), elements=elements))
    roundtrip(x)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_empty_and_single(dtype: np.dtype) -> None:
    for x in (np.empty(0, dtype), np.zeros(1, dtype), np.ones(1, dtype)):
        blob = roundtrip(x)
        assert describe(blob) == "plain"


def test_extreme_ints() -> None:
    i64 = np.iinfo(np.int64)
    for x in (
        np.array([i64.min, i64.max] * 2000, dtype=np.int64),
        np.array([i64.min] * 3 + [i64.max] * 3, dtype=np.int64),
        np.array([2**64 - 1, 0, 2**63] * 1000, dtype=np.uint64),
        np.arange(i64.max - 5000, i64.max, dtype=np.int64),
        np.arange(i64.min, i64.min + 5000, dtype=np.int64)[::-1].copy(),
        np.array([np.iinfo(np.int8).min, np.iinfo(np.int8).max] * 500, dtype=np.int8),
    ):
        roundtrip(x)
        roundtrip(x, allow_compression=False)


def test_float_specials_bit_exact() -> None:
    nan_payloads = np.array(
        [0x7FF8000000000001, 0xFFF0000000000002, 0x7FF4000000000000], dtype=np.uint64
    ).view(np.float64)
    x = np.round(np.linspace(90, 110, 4000), 2)
    x[[3, 50, 700]] = nan_payloads
    x[[4, 5]] = [-0.0, np.inf]
    x[6] = -np.inf
    blob = roundtrip(x)
    assert describe(blob).startswith("decimal(2)")
    assert "patches(6)" in describe(blob)
    with np.errstate(over="ignore", invalid="ignore"):
        x32 = x.astype(np.float32)
    x32.view(np.uint32)[10] = 0x7FC00123
    roundtrip(x32)


def test_bool_and_datetimes() -> None:
    b = np.random.default_rng(0).random(5000) < 0.1
    blob = encode_fixed(b)
    assert np.array_equal(decode_fixed(blob, np.dtype(bool), len(b)), b)
    ts = np.arange("2024-01-01", "2024-02-01", dtype="datetime64[m]").astype("datetime64[ns]")
    blob = encode_fixed(ts)
    assert np.array_equal(decode_fixed(blob, ts.dtype, len(ts)), ts)
    assert describe(blob).startswith("delta")


# ----------------------------------------------------------------------------- choice
def _rng() -> np.random.Generator:
    return np.random.default_rng(12345)


CRAFTED = {
    "constant": (lambda: np.full(10_000, -7, np.int64), r"^constant$"),
    "runs": (
        lambda: np.repeat(_rng().integers(-(2**60), 2**60, 200), 500),
        r"^rle\(",
    ),
    "lowcard": (
        lambda: _rng().integers(-(2**62), 2**62, 9)[_rng().integers(0, 9, 50_000)],
        r"^dict\(9;",
    ),
    "timestamps": (
        lambda: 1_700_000_000_000_000_000 + np.cumsum(_rng().integers(0, 5_000_000, 50_000)),
        r"^delta\+for\+bitpack\(\d+\)$",
    ),
    "small_range": (
        lambda: 1_000_000 + _rng().integers(0, 2000, 50_000),
        r"^for\+bitpack\(11\)$",
    ),
    "gcd": (lambda: _rng().integers(0, 1000, 50_000) * 100, r"bitpack\(10\)\*gcd\(100\)$"),
    "narrow_small_page": (
        lambda: 5_000 + _rng().integers(0, 200, 500),
        r"^for\+narrow\(8\)$",
    ),
    "random_int64": (
        lambda: _rng().integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, 50_000),
        r"^plain$",
    ),
    "random_float64": (lambda: _rng().standard_normal(50_000), r"^plain$"),
    "prices": (
        lambda: (10_000 + np.cumsum(_rng().integers(-3, 4, 50_000))) / 100.0,
        r"^decimal\(2\)\+",
    ),
}


@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_intended_encoding_selected(case: str) -> None:
    make, pattern = CRAFTED[case]
    x = make()
    blob = roundtrip(x, allow_compression=False)
    assert re.search(pattern, describe(blob)), describe(blob)
    roundtrip(x)


def test_decimal_with_exceptions_selected() -> None:
    rng = _rng()
    x = np.round(rng.uniform(10, 20, 20_000), 3)
    bad = rng.integers(0, len(x), 40)
    x[bad] = rng.standard_normal(40)
    blob = roundtrip(x, allow_compression=False)
    d = describe(blob)
    assert d.startswith("decimal(3)+") and "+patches(" in d, d


def test_compression_applied_only_when_it_pays() -> None:
    rng = _rng()
    compressible = rng.choice(np.array([1, 2, 3, 250, 1000, 70_000]), 100_000, p=[0.9] + [0.02] * 5)
    d = describe(roundtrip(compressible))
    assert d.endswith(("+zstd", "+lz4")), d
    assert not describe(roundtrip(rng.standard_normal(100_000))).endswith("zstd")
    assert "zstd" not in describe(roundtrip(compressible, allow_compression=False))


def test_no_blob_larger_than_plain() -> None:
    rng = _rng()
    for x in (rng.integers(0, 2**63, 77), rng.standard_normal(1500), np.arange(3, dtype=np.int8)):
        assert len(encode_fixed(x)) <= 1 + x.nbytes


def test_decode_into_out_slice() -> None:
    x = 1_700_000_000_000_000_000 + np.cumsum(_rng().integers(0, 10**6, 30_000))
    for kw in ({}, {"allow_compression": False}):
        blob = encode_fixed(x, **kw)
        buf = np.full(50_000, -1, dtype=np.int64)
        res = decode_fixed(blob, np.dtype(np.int64), len(x), out=buf[10_000:40_000])
        assert np.shares_memory(res, buf)
        assert np.array_equal(buf[10_000:40_000], x)
        assert (buf[:10_000] == -1).all() and (buf[40_000:] == -1).all()
    f = np.round(_rng().uniform(0, 50, 5000), 2)
    f[7] = np.nan
    out = np.zeros(9000)
    decode_fixed(encode_fixed(f), np.dtype(np.float64), 5000, out=out[1000:6000])
    assert out[1000:6000].tobytes() == f.tobytes()
    with pytest.raises(ValueError):
        decode_fixed(encode_fixed(f), np.dtype(np.float64), 5000, out=np.zeros(10))


def test_encoding_names_documented() -> None:
    doc = enc.__doc__ or ""
    for eid, name in ENCODING_NAMES.items():
        assert re.search(rf"^{eid}\s+{re.escape(name)}\s", doc, re.M), (eid, name)


# ----------------------------------------------------------------------------- binary
def _arrow_like(values: list[bytes], dtype: str = "int32", start: int = 0) -> tuple:
    lengths = [len(v) for v in values]
    offsets = np.concatenate([[start], start + np.cumsum(lengths, dtype=np.int64)]).astype(dtype)
    data = b"\x00" * start + b"".join(values) + b"tail"
    return offsets, data


def binary_roundtrip(values: list[bytes], dtype: str = "int32", start: int = 0) -> bytes:
    offsets, data = _arrow_like(values, dtype, start)
    blob = encode_binary(offsets, data)
    for odt in (np.dtype("int32"), np.dtype("int64")):
        o, d = decode_binary(blob, len(values), odt)
        assert o.dtype == odt and o[0] == 0
        assert np.array_equal(o, (offsets - start).astype(odt))
        assert d.dtype == np.uint8 and d.tobytes() == b"".join(values)
    return blob


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=200), st.integers(0, 9))
def test_binary_roundtrip_hypothesis(values: list[bytes], start: int) -> None:
    binary_roundtrip(values, "int64", start)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(max_size=12), max_size=300))
def test_unicode_roundtrip_hypothesis(values: list[str]) -> None:
    binary_roundtrip([v.encode() for v in values])


def test_binary_special_cases() -> None:
    assert describe(binary_roundtrip([])).startswith("binary")
    binary_roundtrip([b""] * 1000)
    binary_roundtrip([s.encode() for s in ["日本語", "", "émoji 🎉", "\x00"] * 300], start=5)
    rng = _rng()
    huge = [rng.bytes(1 << 20), b"", b"x" * (3 << 20), rng.bytes(10)]
    binary_roundtrip(huge, "int64")
    binary_roundtrip(huge, "int32", start=3)


def test_binary_dictionary_selected() -> None:
    rng = _rng()
    venues = [b"NYSE", b"NASDAQ", b"ARCA", b"BATS", b"IEX", b""]
    blob = binary_roundtrip([venues[i] for i in rng.integers(0, 6, 20_000)])
    assert "dict(6;" in describe(blob), describe(blob)
    uniq = [rng.bytes(int(k)) for k in rng.integers(5, 30, 3000)]
    assert describe(binary_roundtrip(uniq)).startswith("binary(")


def test_binary_bad_input() -> None:
    with pytest.raises(ValueError):
        encode_binary(np.array([0, 5, 3], dtype=np.int32), b"abcdef")
    with pytest.raises(ValueError):
        encode_binary(np.array([0, 50], dtype=np.int32), b"abc")


# ----------------------------------------------------------------------------- corruption
def _corpus() -> list[tuple[bytes, np.dtype, int]]:
    rng = np.random.default_rng(7)
    cases = [
        np.arange(100, dtype=np.int32),
        np.full(50, 3, np.int16),
        np.repeat(rng.integers(0, 9, 10), 20),
        rng.integers(0, 9, 200).astype(np.uint8),
        rng.integers(0, 2000, 1500),
        1_700_000_000_000_000_000 + np.cumsum(rng.integers(0, 10**6, 1200)),
        rng.integers(-(2**40), 2**40, 9)[rng.integers(0, 9, 300)],
        np.round(rng.uniform(0, 100, 300), 2),
        rng.standard_normal(40),
        np.where(rng.random(300) < 0.1, np.nan, np.round(rng.uniform(0, 5, 300), 1)),
    ]
    out = []
    for x in cases:
        for kw in ({}, {"allow_compression": False}):
            out.append((encode_fixed(x, **kw), x.dtype, len(x)))
    return out


def _must_fail_cleanly(blob: bytes, dtype: np.dtype, count: int) -> None:
    try:
        y = decode_fixed(blob, dtype, count)
    except CorruptDataError:
        return
    assert y.dtype == dtype and len(y) == count


def test_truncation_raises_corrupt_data() -> None:
    for blob, dtype, count in _corpus():
        for cut in range(len(blob)):
            with pytest.raises(CorruptDataError):
                decode_fixed(blob[:cut], dtype, count)
        with pytest.raises(CorruptDataError):
            decode_fixed(blob + b"\x00", dtype, count)


def test_bit_flips_and_header_fields() -> None:
    rng = np.random.default_rng(3)
    for blob, dtype, count in _corpus():
        for _ in range(150):
            b = bytearray(blob)
            b[int(rng.integers(0, len(b)))] ^= 1 << int(rng.integers(0, 8))
            _must_fail_cleanly(bytes(b), dtype, count)
        for pos in range(min(len(blob), 48)):
            for v in (0x00, 0xFF, 0x7F, 0x80):
                b = bytearray(blob)
                b[pos] = v
                _must_fail_cleanly(bytes(b), dtype, count)
        for width in (4, 8):
            for pos in range(0, min(len(blob), 40) - width + 1):
                for v in (b"\x00" * width, b"\xff" * width):
                    _must_fail_cleanly(blob[:pos] + v + blob[pos + width :], dtype, count)


def test_random_bytes_and_wrong_count() -> None:
    rng = np.random.default_rng(11)
    for _ in range(600):
        blob = bytes([int(rng.integers(0, 13))]) + rng.bytes(int(rng.integers(0, 120)))
        dtype = ALL_DTYPES[int(rng.integers(0, len(ALL_DTYPES)))]
        _must_fail_cleanly(blob, dtype, int(rng.integers(0, 40)))
    for blob, dtype, count in _corpus()[:8]:
        for wrong in (0, 1, count - 1, count + 1, count * 2):
            _must_fail_cleanly(blob, dtype, wrong)


def test_huge_claims_do_not_allocate() -> None:
    claims = [
        struct.pack("<B3xIQ", 5, 2**32 - 1, 2**63) + b"\x00" * 8,  # rle
        struct.pack("<B3xIQ", 6, 10, 2**64 - 1),  # dict
        struct.pack("<B7xQ", 8, 2**62) + b"\x28\xb5\x2f\xfd" + b"\x00" * 12,  # zstd
        struct.pack("<BB6xQQ", 2, 64, 0, 1),  # bitpack without payload
        struct.pack("<BB2xIQQ", 7, 2, 2**32 - 1, 2**60, 2**60),  # decimal
    ]
    for blob in claims:
        with pytest.raises(CorruptDataError):
            decode_fixed(blob, np.dtype(np.float64), 10)
    with pytest.raises(CorruptDataError):
        decode_binary(struct.pack("<BB6xQQ", 10, 4, 2**62, 1) + b"\x00", 3, np.dtype(np.int64))
    with pytest.raises(CorruptDataError):
        decode_binary(struct.pack("<B7xQ", 8, 2**50) + b"\x00" * 8, 3, np.dtype(np.int64))


def test_binary_corruption() -> None:
    rng = np.random.default_rng(5)
    venues = [b"NYSE", b"NASDAQ", b"", "é".encode()]
    sources = [
        [venues[i] for i in rng.integers(0, 4, 200)],
        [rng.bytes(int(k)) for k in rng.integers(0, 9, 60)],
    ]
    for values in sources:
        offsets, data = _arrow_like(values)
        blob = encode_binary(offsets, data)
        for cut in range(len(blob)):
            with pytest.raises(CorruptDataError):
                decode_binary(blob[:cut], len(values), np.dtype(np.int32))
        for _ in range(300):
            b = bytearray(blob)
            b[int(rng.integers(0, len(b)))] ^= 1 << int(rng.integers(0, 8))
            try:
                o, d = decode_binary(bytes(b), len(values), np.dtype(np.int32))
            except CorruptDataError:
                continue
            assert len(o) == len(values) + 1 and o[0] == 0 and o[-1] == len(d)


def test_describe_rejects_garbage() -> None:
    for blob in (b"", b"\xee", b"\x02\x05"):
        with pytest.raises(CorruptDataError):
            describe(blob)


@pytest.mark.parametrize("dtype", [np.dtype("<i8"), np.dtype("<u2"), np.dtype("<f8")], ids=str)
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_sampled_choice_roundtrip(
    dtype: np.dtype, data: st.DataObject, monkeypatch: pytest.MonkeyPatch
) -> None:
    # large arrays choose the cascade on a chunk; shrink the limits to exercise that path
    monkeypatch.setattr(enc, "WHOLE_CHOICE_LIMIT", 64)
    monkeypatch.setattr(enc, "SAMPLE_LEN", 256)
    x = data.draw(shaped_floats(dtype) if dtype.kind == "f" else shaped_ints(dtype))
    roundtrip(x)


def test_large_arrays_use_sampled_choice() -> None:
    rng = _rng()
    n = enc.WHOLE_CHOICE_LIMIT + 1000
    ts = 1_700_000_000_000_000_000 + np.cumsum(rng.integers(0, 5_000, n)) * 1000
    assert describe(roundtrip(ts)).startswith("delta+")
    prices = (10_000 + np.cumsum(rng.integers(-1, 2, n))) / 100.0
    prices[[5, n - 3]] = [np.nan, -0.0]
    d = describe(roundtrip(prices))
    assert d.startswith("decimal(2)+") and "patches(2)" in d, d
    assert describe(roundtrip(rng.standard_normal(n))) == "plain"


def test_input_forms() -> None:
    rng = _rng()
    base = rng.integers(0, 1000, 20_000)
    strided = base[::3]
    blob = encode_fixed(strided)
    assert np.array_equal(decode_fixed(blob, strided.dtype, len(strided)), strided)
    big_endian = base.astype(">i8")
    blob = encode_fixed(big_endian)
    assert np.array_equal(decode_fixed(blob, np.dtype("<i8"), len(base)), base)
    dates = np.arange("2020-01-01", "2021-01-01", dtype="datetime64[D]")
    blob = encode_fixed(dates)
    assert np.array_equal(decode_fixed(blob, dates.dtype, len(dates)), dates)
    for bad in (np.zeros((3, 3)), np.array(["a"], dtype=object), np.zeros(3, np.float16)):
        with pytest.raises(ValueError):
            encode_fixed(bad)
    with pytest.raises(ValueError):
        decode_fixed(blob, np.dtype(object), 3)
    with pytest.raises(ValueError):
        decode_binary(encode_binary(np.array([0], np.int32), b""), 0, np.dtype(np.float64))


def test_concurrent_use_from_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    def work(seed: int) -> bool:
        rng = np.random.default_rng(seed)
        x = (10_000 + np.cumsum(rng.integers(-2, 3, 40_000))) / 100.0
        values = [b"A", b"BB", b""]
        strs = [values[i] for i in rng.integers(0, 3, 5000)]
        offs = np.concatenate([[0], np.cumsum([len(s) for s in strs])]).astype(np.int32)
        ok = True
        for _ in range(5):
            ok &= decode_fixed(encode_fixed(x), x.dtype, len(x)).tobytes() == x.tobytes()
            o, d = decode_binary(encode_binary(offs, b"".join(strs)), len(strs), np.int32)
            ok &= bool(np.array_equal(o, offs)) and d.tobytes() == b"".join(strs)
        return ok

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(8)))


def test_byte_planes_chosen_for_zstd() -> None:
    x = np.random.default_rng(2).lognormal(5, 2, 200_000).astype(np.int64)
    d = describe(roundtrip(x))
    assert re.search(r"split\(\d+\)\+(zstd|lz4)$", d), d
    assert "split" not in describe(roundtrip(x, allow_compression=False))


@pytest.mark.parametrize("count", [1, 63, 64, 65, 4097, 100_000])
def test_dictionary_codes_of_every_narrow_width_decode_exactly(count: int) -> None:
    # the codes of dictionary pages (up to 65,536 entries) unpack straight into uint16, for
    # a filter judged on them and for a column read as codes
    import pyarrow as pa

    from arcticlite import format as fermion

    rng = np.random.default_rng(count)
    for width in (1, 3, 7, 8, 9, 14, 15, 16):
        size = min(1 << width, 70_000, max(2, count // 2))
        words = np.array([f"w{i}" for i in range(size)], dtype=object)
        codes = rng.integers(0, size, count)
        col = pa.array(words[codes], pa.large_string())
        blob = fermion.encode(pa.table({"s": col}))
        reader = fermion.FermionReader(blob)
        coded = reader.read_dictionary("s")
        if coded is not None:
            assert coded.cast(pa.large_string()).to_pylist() == col.to_pylist(), width
        for probe in (words[codes[0]], words[codes[-1]]):
            rows = fermion.FermionReader(blob).match_rows([("s", "==", probe)])
            assert rows.tolist() == np.flatnonzero(words[codes] == probe).tolist(), width


@pytest.mark.parametrize("width", [3, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15])
def test_narrow_bit_widths_unpack_into_uint16_exactly(width: int) -> None:
    from arcticlite.format._enc_bitpack import pack, unpack_u16

    rng = np.random.default_rng(width)
    for n in (1, 63, 64, 65, 1000, 99_999, 100_000):
        values = rng.integers(0, 1 << width, n).astype(np.uint64)
        values[-1] = (1 << width) - 1
        got = unpack_u16(np.asarray(pack(values, width)).reshape(width, -1), n, width)
        assert got.dtype == np.uint16 and got.tolist() == values.tolist()


@pytest.mark.parametrize("n", [100_000, 64 * 300, 64 * 257 + 5, 64 * 2_000])
def test_every_packing_path_gives_the_lane_layout(n: int) -> None:
    """Bit-packing takes a different path by width and length (bytes for widths 1, 2 and 4,
    one operation per word, per slot, or the whole matrix for short pages): every one lays the
    values out exactly as the whole-matrix reference does, unpacks to the values, and leaves
    its input as it was."""
    from arcticlite.format import _enc_bitpack as bp

    rng = np.random.default_rng(n)
    lanes = -(-n // 64)
    for width in range(1, 65):
        if width == 64:
            values = rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
        else:
            values = rng.integers(0, 2**width, n, dtype=np.uint64)
        before = values.copy()
        packed = bp.pack(values, width)
        padded = np.zeros(64 * lanes, dtype=np.uint64)
        padded[:n] = values
        assert np.array_equal(packed, bp._pack_matrix(padded.reshape(64, lanes), width)), width
        assert np.array_equal(values, before)
        out = np.zeros(n, dtype=np.uint64)
        bp.unpack_into(packed, n, width, out, 0, 1)
        assert np.array_equal(out, values), width


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_arithmetic_sequences_are_deltas_over_a_constant(dtype: np.dtype) -> None:
    """A regular index or a row id (one constant step, wrapping at the type's width as the
    deltas do) is stored as deltas over a constant, whatever its length, and reads back exactly."""
    info = np.iinfo(dtype)
    for n, step in ((1_000, 1), (5_000, 3), (200_000, 1)):
        with np.errstate(over="ignore"):
            x = (np.arange(n, dtype=np.uint64) * np.uint64(step) + np.uint64(info.max - 7)).astype(dtype)
        blob = encode_fixed(x)
        assert describe(blob) == "delta+constant" and len(blob) <= 32
        np.testing.assert_array_equal(decode_fixed(blob, dtype, n), x)
    x = (np.arange(1_000) % 100).astype(dtype)
    x[500] += 1  # one step off: not a sequence, and still exact
    np.testing.assert_array_equal(decode_fixed(encode_fixed(x), x.dtype, len(x)), x)


_RNG = np.random.default_rng(11)
_N = 20_000


@pytest.mark.parametrize("values", [
    _RNG.integers(0, 10**6, _N), _RNG.integers(-100, 100, _N), (_RNG.random(_N) < 0.5).astype(np.uint8),
    _RNG.integers(0, 8, _N), _RNG.integers(0, 60_000, _N).astype(np.int32), _RNG.integers(0, 2**40, _N),
], ids=["ids", "small-signed", "flags", "3-bit", "int32", "40-bit"])
def test_evenly_spread_integers_skip_the_search_for_the_same_blob(values: np.ndarray) -> None:
    from arcticlite.format._enc_select import uniform_for
    from arcticlite.format._enc_wrap import choose_codec_blob

    searched = choose_codec_blob([b for b, _ in enc._variants(values, None)])[3]
    fast = uniform_for(values)
    assert fast is not None and len(fast) == len(searched)
    np.testing.assert_array_equal(enc.decode_fixed(fast, values.dtype, len(values)), values)
    assert enc.encode_fixed(values) == fast


@pytest.mark.parametrize("values", [
    (_RNG.random(_N) < 0.05).astype(np.uint8),  # skewed: a codec or runs may win
    np.maximum(1, _RNG.lognormal(1, 1, _N).astype(np.int64)) * 100,  # few values, a dictionary
    np.sort(_RNG.integers(0, 10**9, _N)),  # sorted: deltas
    10_000 + np.cumsum(_RNG.integers(-1, 2, _N)),  # a walk: deltas
    np.repeat(_RNG.integers(0, 50, _N // 100), 100),  # runs
    _RNG.choice([3, 1000, 77777, 123456789], _N),  # four values spread wide
    _RNG.normal(0, 1000, _N).astype(np.int64),  # bell-shaped
], ids=["skewed-flags", "sizes", "sorted", "walk", "runs", "four-values", "normal"])
def test_integers_with_structure_are_searched(values: np.ndarray) -> None:
    from arcticlite.format._enc_select import uniform_for

    assert uniform_for(values) is None
