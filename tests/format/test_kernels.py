"""The native kernels give exactly the bytes and values of the numpy code they replace.

Each test runs the same call with the native module and with ``_kernels.NATIVE = None`` (the
numpy code every install has) and compares: a difference would make files written by one
install read differently, or not at all, by another.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from arcticlite import format as fermion
from arcticlite.format import _enc_bitpack as bp
from arcticlite.format import _enc_select as sel
from arcticlite.format import _kernels

pytestmark = pytest.mark.skipif(not _kernels.native_enabled(), reason="native kernels not built")


@pytest.fixture
def numpy_only(monkeypatch: pytest.MonkeyPatch):
    """A callable running ``f(*args)`` with the numpy code instead of the native kernels."""
    def run(f, *args):
        with monkeypatch.context() as m:
            m.setattr(_kernels, "NATIVE", None)
            if f is fermion.encode:  # (table, policy)
                return f(args[0], optimize_for=args[1], parallel=False)
            return f(*args)
    return run


@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000, 16_384, 100_001])
def test_pack_is_the_lane_layout_at_every_width(numpy_only, n: int) -> None:
    rng = np.random.default_rng(n)
    for width in range(1, 65):
        hi = (1 << width) - 1
        vals = rng.integers(0, hi, size=n, dtype=np.uint64, endpoint=True)
        vals[: min(n, 3)] = [hi, 0, hi][: min(n, 3)]
        got = bp.pack(vals, width)
        want = numpy_only(bp.pack, vals, width)
        assert got.shape == want.shape and np.array_equal(got, want), width
        out = np.empty(n, dtype=np.uint64)
        bp.unpack_into(got, n, width, out, 0, 1)
        assert np.array_equal(out, vals), width


@pytest.mark.parametrize("dtype", ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8"])
def test_frame_of_reference_packs_every_integer_width(numpy_only, dtype: str) -> None:
    rng = np.random.default_rng(7)
    info = np.iinfo(dtype)
    vals = rng.integers(info.min, info.max, size=5_000, dtype=dtype, endpoint=True)
    vals[0], vals[1] = info.min, info.max
    mn = int(vals.min())
    bits = 8 * vals.dtype.itemsize
    base = mn & ((1 << bits) - 1)
    for width in (bits, 64):
        got = bp.pack_offsets(vals, base, width)
        want = numpy_only(bp.pack_offsets, vals, base, width)
        assert np.array_equal(got, want)
    assert _kernels.min_max(vals) == (int(vals.min()), int(vals.max()))


@pytest.mark.parametrize("out_dtype", ["u1", "u2", "u4", "u8"])
def test_unpack_applies_base_and_factor_modulo_the_output_width(numpy_only, out_dtype: str) -> None:
    rng = np.random.default_rng(3)
    n = 10_007
    for width in (1, 3, 7, 13, 31, 33, 64):
        vals = rng.integers(0, (1 << width) - 1, size=n, dtype=np.uint64, endpoint=True)
        packed = bp.pack(vals, width)
        for base, factor in ((0, 1), (12345, 1), ((1 << 64) - 5, 3), (1 << 40, 1000)):
            got = np.empty(n, dtype=out_dtype)
            want = np.empty(n, dtype=out_dtype)
            bp.unpack_into(packed, n, width, got, base, factor)
            numpy_only(bp.unpack_into, packed, n, width, want, base, factor)
            assert np.array_equal(got, want), (width, base, factor)


@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_decimal_split_agrees_on_awkward_floats(numpy_only, dtype: str) -> None:
    rng = np.random.default_rng(11)
    x = np.round(rng.normal(100, 30, 20_000), 2).astype(dtype)
    x[:12] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 2.0**60, -(2.0**60), 1e-300, 5e-324,
              0.125, 2.5, -3.5]
    x[12:20] = rng.random(8)
    for e in (0, 1, 2, 6, 15, 22):
        ints, ok = sel.decimal_split(x, e)
        wints, wok = numpy_only(sel.decimal_split, x, e)
        assert np.array_equal(ok, wok), e
        assert np.array_equal(ints[ok], wints[wok]), e


def _frame(rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    return pd.DataFrame({
        "bid": np.round(100 + rng.normal(0, 1, rows).cumsum(), 2),
        "size": rng.integers(1, 50, rows) * 100,
        "small": rng.integers(-3, 3, rows).astype("int8"),
        "big": rng.integers(-(2**62), 2**62, rows),
        "ts": pd.date_range("2024-01-01", periods=rows, freq="ms").asi8,
        "flag": rng.random(rows) > 0.5,
        "f32": rng.random(rows).astype("float32"),
    })


def test_a_file_is_the_same_bytes_with_and_without_native_kernels(numpy_only) -> None:
    import pyarrow as pa

    table = pa.Table.from_pandas(_frame(300_000), preserve_index=False)
    for policy in ("read", "size"):
        got = fermion.encode(table, optimize_for=policy, parallel=False)
        want = numpy_only(fermion.encode, table, policy)
        assert got == want, policy
        back = numpy_only(fermion.decode, got)
        assert back.equals(table)
        assert fermion.decode(want).equals(table)


@pytest.mark.parametrize("dtype", ["i1", "u2", "i4", "u4", "i8", "u8"])
def test_frame_of_reference_blobs_match_in_every_layout(numpy_only, dtype: str) -> None:
    """Offsets divided by their common step (or not, when one value breaks the step), packed,
    narrowed or split into byte planes: the same blob either way, and it decodes back."""
    from arcticlite.format._encodings import decode_fixed

    rng = np.random.default_rng(9)
    info = np.iinfo(dtype)
    for step, breaker in ((1, False), (100, False), (48, True), (7, False)):
        hi = max(2, min(info.max // step, 1 << 40))
        lo = max(info.min // step, -(1 << 40)) if info.min < 0 else 0
        vals = (rng.integers(lo, hi, size=70_000) * step).astype(dtype)
        if breaker:
            vals[-5] += 1
        for mode in (sel.MODE_BITPACK, sel.MODE_NARROW, sel.MODE_SPLIT):
            got = sel._enc_for(vals, 0, mode)
            want = numpy_only(sel._enc_for, vals, 0, mode)
            assert got == want, (step, mode)
            assert np.array_equal(decode_fixed(got, vals.dtype, len(vals)), vals), (step, mode)
            assert np.array_equal(numpy_only(decode_fixed, got, vals.dtype, len(vals)), vals)


@pytest.mark.parametrize("dtype", ["i1", "u1", "i2", "i4", "u4", "i8", "u8"])
def test_small_range_dictionaries_match(numpy_only, dtype: str) -> None:
    """A small-range integer page's sorted distinct values and codes, and a Bloom filter's
    distinct values, are the same with the kernels and without; a value outside the range a
    caller gives is refused, not written past the table."""
    import pyarrow as pa

    from arcticlite.format import _bloom

    rng = np.random.default_rng(4)
    info = np.iinfo(dtype)
    lo = max(info.min, -300) if info.min < 0 else info.max - 300 if dtype == "u8" else 0
    vals = rng.integers(0, 250, 50_000).astype(dtype) + np.array(lo).astype(dtype)
    got, want = sel.dictionary(vals), numpy_only(sel.dictionary, vals)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert np.array_equal(got[0][got[1]], vals)
    col = pa.array(vals)
    assert _bloom._small_range_distinct(col).equals(numpy_only(_bloom._small_range_distinct, col))
    mn = int(vals.min())
    with pytest.raises(ValueError, match="outside"):
        _kernels.presence(vals, mn, 10)
    with pytest.raises(ValueError, match="outside"):
        _kernels.codes_in_range(vals, mn, np.zeros(10, dtype=np.uint32))


def test_word_factorization_matches_pandas(numpy_only) -> None:
    """Codes by first appearance and the distinct words, as pandas.factorize gives them; too
    many distinct words is None either way (the many-label path takes over)."""
    rng = np.random.default_rng(6)
    for words in (rng.choice(np.array([0, 7, 2**63 + 5, 2**64 - 1], dtype=np.uint64), 70_000),
                  rng.integers(0, 3_000, 200_000).astype(np.int64) * 16 + 140_000_000_000,
                  np.repeat(np.arange(50, dtype=np.int64), 1_000),
                  _late_newcomers(rng),
                  np.zeros(0, dtype=np.int64)):
        got = fermion.factorize_words(words, 5_000)
        want = numpy_only(fermion.factorize_words, words, 5_000)
        assert got is not None and want is not None
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
        assert np.array_equal(got[1][got[0]], words)
    many = np.arange(10_000, dtype=np.int64)
    assert fermion.factorize_words(many, 9_999) is None
    assert numpy_only(fermion.factorize_words, many, 9_999) is None


def _late_newcomers(rng: np.random.Generator) -> np.ndarray:
    """Three words for many blocks of rows, then new ones one by one: the few-word fast path
    meets a word it does not know, and later more words than it holds."""
    words = rng.choice(np.array([9, 0, 2**62], dtype=np.int64), 30_000)
    words[10_001] = 5
    words[15_000:15_008] = np.arange(100, 108)
    words[29_999] = -1
    return words


def test_pages_of_dictionary_codes_are_cut_where_the_bytes_say(numpy_only) -> None:
    """The native page cuts of a dictionary-coded string column are those of the cumulative
    byte lengths: every page within the byte and row limits (a longer value alone on its page),
    and a file written with them is the same bytes as one written without."""
    import pyarrow as pa

    from arcticlite.format._writer import _cuts

    rng = np.random.default_rng(2)
    lens = np.array([0, 1, 5, 700, 3000, 40], dtype=np.int64)
    codes = rng.choice(6, 20_000, p=[0.1, 0.3, 0.3, 0.2, 0.05, 0.05]).astype(np.int32)
    for ps, per_page in ((4096, 1000), (1 << 20, 50), (2000, 8), (100, 3)):
        cum = np.concatenate([[0], np.cumsum(lens[codes])])
        assert _kernels.byte_cuts(codes, lens, ps, per_page) == _cuts(len(codes), per_page, cum, ps)
    with pytest.raises(ValueError, match="beyond"):
        _kernels.byte_cuts(np.array([0, 9], dtype=np.int32), lens, 100, 10)
    words = np.array(["", "a", "abcde", "x" * 700, "y" * 3000, "z" * 40], dtype=object)
    col = pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(words, type=pa.string()))
    table = pa.table({"s": col})
    schema = pa.schema([pa.field("s", pa.string())])
    got = fermion.encode(table, schema=schema, page_size=1 << 16, parallel=False)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_kernels, "NATIVE", None)
        want = fermion.encode(table, schema=schema, page_size=1 << 16, parallel=False)
    assert got == want
    assert fermion.decode(got).column("s").to_pylist() == words[codes].tolist()


def test_code_counts_are_numpy_bincount(numpy_only) -> None:
    """Counts of dictionary codes, small tables (interleaved) and large ones, as bincount gives
    them; a code beyond the dictionary is an error either way."""
    rng = np.random.default_rng(8)
    for size, n in ((1, 5), (4, 100_003), (1024, 70_000), (1025, 70_000), (10_000, 3), (7, 0)):
        codes = rng.integers(0, size, n).astype(np.int32)
        want = np.bincount(codes, minlength=size)
        assert np.array_equal(_kernels.code_counts(codes, size), want)
        assert np.array_equal(numpy_only(_kernels.code_counts, codes, size), want)
    for f in (_kernels.code_counts, lambda c, s: numpy_only(_kernels.code_counts, c, s)):
        with pytest.raises(ValueError, match="beyond"):
            f(np.array([0, 3, 1], dtype=np.int32), 3)


def _fixed_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    n = 3_001
    out: list[np.ndarray] = []
    for dt in ("i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8"):
        info = np.iinfo(dt)
        out += [np.arange(n).astype(dt),  # a regular step: delta over a constant
                np.full(n, info.max, dtype=dt),  # constant
                rng.integers(0, 100, n).astype(dt),  # a few bits: bit-packed or narrow
                (rng.integers(0, 200, n) * 5).astype(dt),  # a common factor
                rng.integers(info.min, info.max, n, dtype=dt, endpoint=True),  # full width
                np.cumsum(rng.integers(-3, 4, n)).astype(dt)]  # small deltas
    out += [np.round(rng.random(n) * 100, 2), rng.random(n).astype("f4"), rng.random(n) < 0.3,
            (np.arange(n) * 1_000_000_000 + 1_600_000_000 * 10**9).astype("M8[ns]")]
    return out


def test_native_decoding_of_fixed_blobs_matches_the_python_decoder(numpy_only) -> None:
    """Every FIXED blob the writer makes (with and without a codec on top) decodes to the same
    values with the native decoder; a blob it does not handle is left to the Python one."""
    from arcticlite.format import _encodings as enc

    kinds = set()
    for values in _fixed_inputs():
        for compress in (False, True):
            blob = enc.encode_fixed(values, allow_compression=compress)
            kinds.add(enc.describe(blob))
            want = numpy_only(enc.decode_fixed, blob, values.dtype, len(values))
            got = enc.decode_fixed(blob, values.dtype, len(values))
            assert np.array_equal(want.view(np.uint8), values.view(np.uint8))
            assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), enc.describe(blob)
            # the same blob at an address that is not 8-byte aligned
            shifted = memoryview(bytearray(b"\0" + blob))[1:]
            got = enc.decode_fixed(shifted, values.dtype, len(values))
            assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), enc.describe(blob)
    assert {k for k in kinds if k.startswith(("delta", "for", "constant", "plain"))}, kinds


def test_native_decoding_never_accepts_a_blob_the_python_decoder_refuses(numpy_only) -> None:
    """Truncated, extended or rewritten headers: where the Python decoder raises, the native one
    declines (and the Python one then raises); where it decodes, both give the same values."""
    from arcticlite.exceptions import CorruptDataError
    from arcticlite.format import _encodings as enc

    rng = np.random.default_rng(5)
    checked = 0
    for values in _fixed_inputs()[::3]:
        blob = enc.encode_fixed(values, allow_compression=False)
        variants = [blob[:-1], blob + b"\0", blob[:1], b""]
        for _ in range(12):
            b = bytearray(blob)
            pos = int(rng.integers(0, min(len(b), 24)))
            b[pos] = int(rng.integers(0, 256))
            variants.append(bytes(b))
        for v in variants:
            try:
                want = numpy_only(enc.decode_fixed, v, values.dtype, len(values))
            except CorruptDataError:
                want = None
            out = np.empty(len(values), dtype=values.dtype)
            raw = out.view("u8" if values.dtype.kind == "M" else out.dtype)
            if enc.decode_native(memoryview(v), raw):
                assert want is not None, enc.describe(blob)
                assert np.array_equal(out.view(np.uint8), want.view(np.uint8))
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("eid_name", ["NARROW", "SPLIT", "BITPACK"])
def test_native_decoding_of_every_frame_of_reference_layout(numpy_only, eid_name: str) -> None:
    """Narrow values, byte planes and bit-packed lanes of every width into every output width,
    with a base and a factor that wrap: the values of the Python decoder."""
    from arcticlite.format import _enc_spec as spec
    from arcticlite.format import _encodings as enc

    rng = np.random.default_rng(3)
    eid = getattr(spec, eid_name)
    n = 1_000
    for out_dt in ("u1", "i2", "u4", "i8", "f8"):
        for width in ((1, 2, 4, 8) if eid != spec.BITPACK else (1, 5, 13, 33, 64)):
            if eid == spec.BITPACK:
                payload = rng.integers(0, 2**63, width * -(-n // 64),
                                       dtype=np.uint64).tobytes()
            else:
                payload = rng.integers(0, 256, n * width, dtype=np.uint8).tobytes()
            base, factor = int(rng.integers(0, 2**63)) * 2 + 1, int(rng.integers(1, 2**20))
            blob = spec.FOR_HDR.pack(eid, width, base, factor) + payload
            want = numpy_only(enc.decode_fixed, blob, np.dtype(out_dt), n)
            got = enc.decode_fixed(blob, np.dtype(out_dt), n)
            assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), (out_dt, width)
            delta = spec.DELTA_HDR.pack(spec.DELTA, base) + blob  # the same values as deltas
            want = numpy_only(enc.decode_fixed, delta, np.dtype(out_dt), n + 1)
            got = enc.decode_fixed(delta, np.dtype(out_dt), n + 1)
            assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), (out_dt, width)
