"""FermionReader.read_into: decoding straight into caller-owned numpy arrays."""

from __future__ import annotations

import decimal
import os

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arcticlite.exceptions import CorruptDataError, SchemaException, UserInputException
from arcticlite.format import FermionReader, RangeReader, _range, decode_into, encode
from arcticlite.format import _layout as L
from arcticlite.format._types import build_nodes
from tests.format.conftest import arrays_equal

pytestmark = pytest.mark.timeout(300)

FIXED_TYPES = [
    pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(),
    pa.uint64(), pa.float16(), pa.float32(), pa.float64(), pa.timestamp("s"), pa.timestamp("ms"),
    pa.timestamp("us", "UTC"), pa.timestamp("ns", "Asia/Tokyo"), pa.duration("ns"),
    pa.duration("ms"), pa.date32(), pa.date64(), pa.time32("s"), pa.time32("ms"),
    pa.time64("us"), pa.time64("ns"),
]
STRING_TYPES = [pa.string(), pa.large_string(), pa.binary(), pa.large_binary()]
VENUES = ["XNYS", "XLON", "XPAR", "BATS", "XTKS", "XHKG", "XETR", "XSWX", "XASX", "XTSE"]


def _width(t: pa.DataType) -> int:
    return 2 if pa.types.is_float16(t) else t.bit_width // 8


def _fixed_values(t: pa.DataType, n: int, rng: np.random.Generator, style: str) -> np.ndarray:
    """Raw values in the storage width of ``t``: compressible, random or constant."""
    w = _width(t)
    if style == "random":  # arbitrary bit patterns: plain pages
        raw = np.frombuffer(rng.bytes(n * w), dtype=f"<i{w}").copy()
    elif style == "sorted":  # delta / bitpack cascades, often compressed
        raw = (np.cumsum(rng.integers(0, 3, n)) % 100).astype(f"<i{w}")
    else:
        raw = np.full(n, 7, dtype=f"<i{w}")
    if pa.types.is_date64(t):
        raw = (raw % 10**6) * 86_400_000
    if pa.types.is_time32(t) or pa.types.is_time64(t):
        raw = raw % (86_400 if t.unit == "s" else 86_400_000 if t.unit == "ms"
                     else 86_400_000_000 if t.unit == "us" else 86_400_000_000_000)
        raw = raw.astype(f"<i{w}")
    if pa.types.is_floating(t) and style != "random":
        raw = raw.astype(f"<f{w}").view(f"<i{w}")
    return raw


def _array(t: pa.DataType, raw: np.ndarray, mask: np.ndarray | None) -> pa.Array:
    validity = None if mask is None else pa.py_buffer(np.packbits(~mask, bitorder="little"))
    return pa.Array.from_buffers(t, len(raw), [validity, pa.py_buffer(raw)])


def _as_arrow(t: pa.DataType, out: np.ndarray, valid: np.ndarray | None) -> pa.Array:
    """The filled buffer + returned mask as an Arrow array (to compare with ``read``)."""
    vb = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(t, len(out), [vb, pa.py_buffer(out)])


def _fixed_out(t: pa.DataType, n: int) -> np.ndarray:
    """A numpy buffer for ``t``, poisoned; an int view of temporal types (as the engine does)."""
    w = _width(t)
    if pa.types.is_timestamp(t):
        buf = np.empty(n, dtype=f"datetime64[{t.unit}]")
        buf.view(np.uint8)[:] = 0xAB
        return buf.view(np.int64)
    if pa.types.is_floating(t):
        buf = np.empty(n, dtype=f"<f{w}")
    else:
        buf = np.empty(n, dtype=f"<i{w}")
    buf.view(np.uint8)[:] = 0xAB
    return buf


def _check_fixed(r: FermionReader, name: str, row_range: tuple[int, int] | None) -> None:
    exp = r.read([name], row_range=row_range).column(0).combine_chunks()
    t = exp.type
    out = _fixed_out(t, len(exp))
    (valid,) = r.read_into([name], [out], row_range=row_range)
    if exp.null_count == 0:
        assert valid is None
    else:
        assert valid is not None and valid.dtype == np.bool_ and len(valid) == len(exp)
        assert np.array_equal(valid, exp.is_valid().to_numpy(zero_copy_only=False))
    assert arrays_equal(_as_arrow(t, out, valid), exp), (name, row_range)


def _ranges(n: int, page_rows: int) -> list[tuple[int, int] | None]:
    """Row ranges at, inside and across page edges (and clipped ones)."""
    p = page_rows
    out: list[tuple[int, int] | None] = [None, (0, n), (-5, n + 5), (p, 2 * p), (p - 1, 2 * p + 1),
                                         (p + 1, 2 * p - 1), (1, n - 1), (3, 4), (n - 1, n + 3)]
    return [r for r in out if r is None or r[0] < min(r[1], n)]


@pytest.mark.parametrize("t", FIXED_TYPES, ids=str)
@pytest.mark.parametrize("style", ["random", "sorted", "constant"])
def test_fixed_types_match_read(t: pa.DataType, style: str) -> None:
    rng = np.random.default_rng(7)
    n = 1000
    mask = rng.random(n) < 0.1
    raw = _fixed_values(t, n, rng, style)
    table = pa.table({"plain": _array(t, raw, None), "nulls": _array(t, raw, mask),
                      "allnull": pa.nulls(n, t)})
    page_size = 256 * _width(t)  # 256 rows a page: encoded pages (plain below 129 values)
    for stripe_rows in (n, 300):
        r = FermionReader(encode(table, page_size=page_size, stripe_rows=stripe_rows))
        for rr in _ranges(n, 256):
            for name in table.column_names:
                _check_fixed(r, name, rr)


def test_plain_and_compressed_pages_are_both_covered() -> None:
    rng = np.random.default_rng(1)
    n = 4096
    t = pa.table({"r": rng.random(n), "s": np.arange(n, dtype=np.int64) * 3,
                  "z": np.tile(rng.random(64), n // 64)})  # repeats: only a codec helps
    r = FermionReader(encode(t, page_size=8192))
    kinds = {c: {r.describe_page(p["offset"], p["compressed"]) for p in r.page_stats(c)
                 if p["stream"] == "DATA"} for c in t.column_names}
    assert "plain" in kinds["r"]
    assert any("plain" not in k for k in kinds["s"])
    assert any(k.endswith(("zstd", "lz4")) for c in kinds for k in kinds[c]), kinds
    for c in t.column_names:
        for rr in _ranges(n, 1024):
            _check_fixed(r, c, rr)


def _strings(t: pa.DataType, n: int, rng: np.random.Generator, mask: np.ndarray | None,
             distinct: int | None) -> pa.Array:
    if distinct is None:
        vals = [f"v{i}-" + "x" * int(k) for i, k in enumerate(rng.integers(0, 20, n))]
    else:
        vals = [VENUES[i % len(VENUES)][: 1 + i % 4] if distinct > len(VENUES) else VENUES[i]
                for i in rng.integers(0, distinct, n)]
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.array([v.encode() + b"\xff" for v in vals], t, mask=mask)
    return pa.array([v + "é" for v in vals], t, mask=mask)


def _check_objects(r: FermionReader, name: str, row_range: tuple[int, int] | None) -> np.ndarray:
    exp = r.read([name], row_range=row_range).column(0).combine_chunks()
    out = np.full(len(exp), "poison", dtype=object)
    (valid,) = r.read_into([name], [out], row_range=row_range)
    assert out.tolist() == exp.to_pylist(), (name, row_range)
    if exp.null_count == 0:
        assert valid is None
    else:
        assert np.array_equal(valid, exp.is_valid().to_numpy(zero_copy_only=False))
    return out


@pytest.mark.parametrize("t", STRING_TYPES, ids=str)
def test_strings_match_read(t: pa.DataType) -> None:
    rng = np.random.default_rng(3)
    n = 700
    mask = rng.random(n) < 0.2
    table = pa.table({"u": _strings(t, n, rng, None, None), "un": _strings(t, n, rng, mask, None),
                      "d": _strings(t, n, rng, None, 10), "dn": _strings(t, n, rng, mask, 10),
                      "all": pa.nulls(n, t), "e": pa.array([b""] * n if pa.types.is_binary(t) or pa.types.is_large_binary(t) else [""] * n, t)})
    for page_size, stripe_rows in ((64, n), (1024, 250), (1 << 19, n)):
        r = FermionReader(encode(table, page_size=page_size, stripe_rows=stripe_rows))
        for rr in _ranges(n, 37):
            for name in table.column_names:
                out = _check_objects(r, name, rr)
                if name == "all":
                    assert all(v is None for v in out)
                kind = str if pa.types.is_string(t) or pa.types.is_large_string(t) else bytes
                assert all(v is None or type(v) is kind for v in out)


def test_dictionary_pages_share_objects() -> None:
    n = 100_000
    rng = np.random.default_rng(5)
    venues = pa.array([VENUES[i] for i in rng.integers(0, 10, n)],
                      mask=rng.random(n) < 0.05)
    r = FermionReader(encode(pa.table({"venue": venues})))
    descs = [r.describe_page(p["offset"], p["compressed"]) for p in r.page_stats("venue")
             if p["stream"] == "DATA"]
    assert descs and all(d.startswith("dict(") for d in descs), descs
    out = np.empty(n, dtype=object)
    (valid,) = r.read_into(["venue"], [out])
    assert out.tolist() == venues.to_pylist()
    assert np.array_equal(valid, venues.is_valid().to_numpy(zero_copy_only=False))
    first: dict[str, object] = {}
    for i in np.flatnonzero(valid)[:5000]:
        v = out[i]
        assert first.setdefault(v, v) is v  # equal values: one object
    assert len({id(v) for v in out if v is not None}) <= 10
    # a range starting and ending inside pages
    part = np.empty(n - 2001, dtype=object)
    r.read_into(["venue"], [part], row_range=(1000, n - 1001))
    assert part.tolist() == venues.to_pylist()[1000 : n - 1001]


def test_dictionary_typed_columns() -> None:
    rng = np.random.default_rng(9)
    n = 500
    idx = pa.array(rng.integers(0, 4, n).astype(np.int16), mask=rng.random(n) < 0.2)
    d = pa.DictionaryArray.from_arrays(idx, pa.array(["a", "bb", None, "dd"]))
    db = pa.DictionaryArray.from_arrays(idx, pa.array([b"a", b"bb", b"c", b"dd"]))
    t = pa.table({"d": d, "db": db, "dn": pa.nulls(n, pa.dictionary(pa.int8(), pa.string()))})
    for stripe_rows in (n, 120):
        r = FermionReader(encode(t, page_size=64, stripe_rows=stripe_rows))
        for rr in _ranges(n, 32):
            for name in t.column_names:
                exp = r.read([name], row_range=rr).column(0).combine_chunks().dictionary_decode()
                out = np.empty(len(exp), dtype=object)
                (valid,) = r.read_into([name], [out], row_range=rr)
                assert out.tolist() == exp.to_pylist()
                if exp.null_count:
                    assert np.array_equal(valid, exp.is_valid().to_numpy(zero_copy_only=False))
                else:
                    assert valid is None
    with pytest.raises(UserInputException, match="read()"):
        FermionReader(encode(pa.table({"x": pa.array([1, 2]).dictionary_encode()}))).read_into(
            ["x"], [np.empty(2, dtype=object)])


def test_other_kinds_as_objects_and_bools() -> None:
    n = 300
    rng = np.random.default_rng(2)
    mask = rng.random(n) < 0.3
    t = pa.table({
        "b": pa.array(rng.random(n) < 0.5, mask=mask),
        "dec": pa.array([decimal.Decimal(int(v)) / 100 for v in rng.integers(-10**6, 10**6, n)],
                        pa.decimal128(12, 2), mask=mask),
        "fsb": pa.array([bytes([i % 256] * 3) for i in range(n)], pa.binary(3)),
        "l": pa.array([[i, i + 1] if i % 5 else None for i in range(n)], pa.list_(pa.int64())),
        "st": pa.array([{"x": i, "y": str(i)} for i in range(n)]),
        "nul": pa.nulls(n),
    })
    r = FermionReader(encode(t, page_size=64, stripe_rows=128))
    for rr in _ranges(n, 64):
        for name in t.column_names:
            exp = r.read([name], row_range=rr).column(0).combine_chunks()
            out = np.empty(len(exp), dtype=object)
            (valid,) = r.read_into([name], [out], row_range=rr)
            want = exp.to_numpy(zero_copy_only=False)
            for x, y in zip(out, want, strict=True):
                assert (x is None and y is None) or np.array_equal(x, y) or x == y
            if exp.null_count:
                assert np.array_equal(valid, exp.is_valid().to_numpy(zero_copy_only=False))
            else:
                assert valid is None
        exp = r.read(["b"], row_range=rr).column(0).combine_chunks()
        bools = np.empty(len(exp), dtype=bool)
        (valid,) = r.read_into(["b"], [bools], row_range=rr)
        ok = exp.is_valid().to_numpy(zero_copy_only=False)
        assert (valid is None and ok.all()) or np.array_equal(valid, ok)
        assert np.array_equal(bools[ok], exp.drop_null().to_numpy(zero_copy_only=False))
    (valid,) = r.read_into(["nul"], [np.empty(n)])  # null type: any dtype, no valid row
    assert valid is not None and not valid.any()


def test_several_columns_one_call_and_module_function(tmp_path: object) -> None:
    n = 5000
    rng = np.random.default_rng(4)
    t = pa.table({"ts": pa.array(np.arange(n, dtype=np.int64) * 1000, pa.timestamp("ns")),
                  "px": rng.random(n), "q": rng.integers(0, 100, n),
                  "venue": pa.array([VENUES[i] for i in rng.integers(0, 10, n)])})
    data = encode(t, page_size=4096)
    block = np.empty((2, n - 100), dtype=np.float64)  # a pandas-like 2-D block
    ts = np.empty(n - 100, dtype="datetime64[ns]")
    q = np.empty(n - 100, dtype=np.int64)
    venue = np.empty(n - 100, dtype=object)
    masks = decode_into(data, ["ts", 1, "q", "venue"], [ts.view(np.int64), block[0], q, venue],
                        row_range=(50, n - 50))
    assert masks == [None] * 4
    sl = t.slice(50, n - 100)
    assert np.array_equal(ts.view(np.int64), sl["ts"].to_numpy().view(np.int64))
    assert np.array_equal(block[0], sl["px"].to_numpy())
    assert np.array_equal(q, sl["q"].to_numpy())
    assert venue.tolist() == sl["venue"].to_pylist()


@pytest.mark.parametrize("source", ["path", "callback", "memoryview"])
def test_sources_and_direct_page_reads(source: str, tmp_path: object,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    n = 20_000
    rng = np.random.default_rng(6)
    t = pa.table({"r": rng.random(n), "s": np.arange(n, dtype=np.int64)})
    data = encode(t, page_size=16384)  # 2048 rows a page
    path = os.path.join(str(tmp_path), "f.fermion")
    with open(path, "wb") as f:
        f.write(data)
    calls: list[int] = []
    orig = _range.RangeReader.read_into

    def counting(self: RangeReader, offset: int, bufs: list[np.ndarray]) -> None:
        calls.append(sum(b.nbytes for b in bufs))
        orig(self, offset, bufs)

    monkeypatch.setattr(_range.RangeReader, "read_into", counting)
    src = {"path": path, "callback": RangeReader(lambda o, k: data[o : o + k], size=len(data)),
           "memoryview": memoryview(data)}[source]
    with FermionReader(src) as r:
        for rr in [(0, n), (1000, 9000), (2048, 4096), (3, 5)]:
            a, b = rr
            out = [np.full(b - a, np.nan), np.zeros(b - a, np.int64)]
            assert r.read_into(["r", "s"], out, row_range=rr) == [None, None]
            assert np.array_equal(out[0], t["r"].to_numpy()[a:b])
            assert np.array_equal(out[1], np.arange(a, b))
    if source == "path":
        # plain pages fully inside the range were read straight into ``out`` (one 16 KiB
        # preadv each, plus the encoding byte); edge pages went through the page cache
        # (0, n): 10 pages; (1000, 9000): the 3 inside; (2048, 4096): 1; (3, 5): none
        assert len(calls) == 10 + 3 + 1
        assert sum(calls) == 14 + 8 * (n + 3 * 2048 + 2048)
    else:
        assert not calls


def test_parallel_reader_large_read() -> None:
    n = 400_000
    rng = np.random.default_rng(8)
    t = pa.table({"r": rng.random(n), "s": np.cumsum(rng.integers(0, 5, n)),
                  "v": pa.array([VENUES[i] for i in rng.integers(0, 10, n)])})
    data = encode(t, page_size=64 * 1024)
    for parallel in (True, False):
        r = FermionReader(data, parallel=parallel)
        a, b = 12_345, n - 6_789
        out = [np.empty(b - a), np.empty(b - a, np.int64), np.empty(b - a, object)]
        assert r.read_into(["r", "s", "v"], out, row_range=(a, b)) == [None] * 3
        assert np.array_equal(out[0], t["r"].to_numpy()[a:b])
        assert np.array_equal(out[1], t["s"].to_numpy()[a:b])
        assert out[2].tolist() == t["v"].to_pylist()[a:b]


def test_empty_ranges_and_files() -> None:
    t = pa.table({"a": np.arange(10.0), "s": [str(i) for i in range(10)]})
    r = FermionReader(encode(t))
    for rr in [(5, 5), (7, 3), (10, 20), (-10, 0)]:
        assert r.read_into(["a", "s"], [np.empty(0), np.empty(0, object)], row_range=rr) == [None, None]
    e = FermionReader(encode(t.slice(0, 0)))
    assert e.read_into(["a", "s"], [np.empty(0), np.empty(0, object)]) == [None, None]


# ---------------------------------------------------------------------------- bad arguments
BAD_TABLE = pa.table({"i": pa.array([1, 2, 3, None], pa.int64()), "f": pa.array([1.0, 2, 3, 4], pa.float32()),
                      "s": ["a", "b", None, "d"], "ts": pa.array([1, 2, 3, 4], pa.timestamp("ns")),
                      "l": pa.array([[1], [2], [], None])})


@pytest.mark.parametrize("cols,outs,match", [
    (["i"], [np.empty(4, np.int32)], "itemsize 8"),
    (["i"], [np.empty(4, object)], "itemsize 8"),
    (["f"], [np.empty(4, np.float64)], "itemsize 4"),
    (["s"], [np.empty(4, np.int64)], "dtype object"),
    (["l"], [np.empty(4, np.int64)], "dtype object"),
    (["i"], [np.empty(3, np.int64)], "length 4"),
    (["i"], [np.empty(5, np.int64)], "length 4"),
    (["i"], [np.empty((2, 2), np.int64)], "1-D"),
    (["i"], [np.empty(8, np.int64)[::2]], "C-contiguous"),
    (["i"], [np.frombuffer(b"\0" * 32, np.int64)], "read-only"),
    (["i"], [[0, 0, 0, 0]], "numpy array"),
    (["i", "f"], [np.empty(4, np.int64)], "one array per column"),
    (["i"], np.empty(4, np.int64), "list of numpy arrays"),
    (["ts"], [np.empty(4, ">i8")], "little-endian"),
    (["s"], [np.empty(4, [("a", "O")])], "dtype object"),
])
def test_bad_arguments_raise_before_writing(cols: list[str], outs: object, match: str) -> None:
    r = FermionReader(encode(BAD_TABLE))
    good = np.full(4, 99, np.int64)
    arrays = [o for o in outs if isinstance(o, np.ndarray)] if isinstance(outs, list) else []
    before = [a.copy() for a in arrays]
    with pytest.raises(UserInputException, match=match):
        r.read_into(["ts", *cols], [good, *outs] if isinstance(outs, list) else outs)
    assert (good == 99).all()  # the valid first column was not written either
    for a, b in zip(arrays, before, strict=True):
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f") or a.dtype == object


def test_unknown_column() -> None:
    r = FermionReader(encode(BAD_TABLE))
    with pytest.raises(SchemaException):
        r.read_into(["nope"], [np.empty(4)])


# ---------------------------------------------------------------------------- corrupt input
def _corruption_file() -> tuple[bytes, pa.Table]:
    n = 40
    t = pa.table({"i": pa.array([None if i % 7 == 3 else i * 3 for i in range(n)], pa.int64()),
                  "f": np.linspace(0, 1, n), "s": [VENUES[i % 3] if i % 5 else None for i in range(n)],
                  "d": pa.array([VENUES[i % 2] for i in range(n)]).dictionary_encode()})
    return encode(t, page_size=64, stripe_rows=25), t


def _outs(n: int) -> list[np.ndarray]:
    return [np.empty(n, np.int64), np.empty(n), np.empty(n, object), np.empty(n, object)]


def _same(t: pa.Table, outs: list[np.ndarray], masks: list[np.ndarray | None], a: int, b: int) -> None:
    sl = t.slice(a, b - a)
    i = sl["i"].combine_chunks()
    assert np.array_equal(masks[0], i.is_valid().to_numpy(zero_copy_only=False))
    assert np.array_equal(outs[0][masks[0]], i.drop_null().to_numpy())
    assert masks[1] is None and np.array_equal(outs[1], sl["f"].to_numpy())
    assert outs[2].tolist() == sl["s"].to_pylist()
    assert outs[3].tolist() == sl["d"].combine_chunks().dictionary_decode().to_pylist()


def test_corrupt_bytes_raise_corrupt_data_error_only() -> None:
    data, t = _corruption_file()
    cols = ["i", "f", "s", "d"]
    data_end = int(np.frombuffer(data[len(data) - L.FOOTER_SIZE :], L.FOOTER_DTYPE)[0]["cmb_area_offset"])
    for pos in [*range(0, data_end, 2), *range(data_end, len(data))]:
        b = bytearray(data)
        b[pos] ^= 1 << (pos % 8)
        for a, z in ((0, 40), (5, 31)):
            outs = _outs(z - a)
            try:
                masks = FermionReader(bytes(b)).read_into(cols, outs, row_range=(a, z))
            except CorruptDataError:
                continue
            _same(t, outs, masks, a, z)


def test_truncated_and_garbage_files() -> None:
    data, _ = _corruption_file()
    for k in range(0, len(data), 7):
        with pytest.raises(CorruptDataError):
            FermionReader(data[:k]).read_into(["i"], [np.empty(40, np.int64)])
    with pytest.raises(CorruptDataError):
        decode_into(b"junk" + data, ["i"], [np.empty(40, np.int64)])


def test_corrupt_page_contents_behind_valid_checksums(monkeypatch: pytest.MonkeyPatch) -> None:
    """Page bytes that pass their checksum but decode inconsistently still fail cleanly."""
    n = 300
    t = pa.table({"i": pa.array(np.cumsum(np.arange(n)) % 1000, pa.int64()),
                  "f": np.linspace(0, 1, n),
                  "v": pa.array([VENUES[i % 4] for i in range(n)], mask=np.arange(n) % 9 == 0),
                  "u": [f"u{i}" for i in range(n)]})
    data = encode(t, page_size=1024)
    r = FermionReader(data)
    pages = [p for c in t.column_names for p in r.page_stats(c)]
    assert any(r.describe_page(p["offset"], p["compressed"]).startswith("dict(") for p in pages)
    monkeypatch.setattr(L, "verify", lambda *a, **k: None)
    rng = np.random.default_rng(0)
    for p in pages:
        for pos in {0, 1, 2, 8, 9, 16, 17, p["compressed"] - 1, *rng.integers(0, p["compressed"], 6)}:
            for val in (0, 1, 0xFF, 0x7F, 11):
                b = bytearray(data)
                b[p["offset"] + int(pos)] = val
                outs = [np.empty(n - 20, np.int64), np.empty(n - 20), np.empty(n - 20, object),
                        np.empty(n - 20, object)]
                try:
                    FermionReader(bytes(b)).read_into(t.column_names, outs, row_range=(10, n - 10))
                except CorruptDataError:
                    pass


def test_corrupt_pages_through_the_job_list() -> None:
    """Sources that fetch pages in one batch (callback, large in-memory files) verify every
    page checksum too, for ``read`` and ``read_into`` alike."""
    data, _ = _corruption_file()
    data_end = int(np.frombuffer(data[len(data) - L.FOOTER_SIZE :], L.FOOTER_DTYPE)[0]["cmb_area_offset"])
    for pos in range(L.HEADER_SIZE, data_end, 5):
        b = bytearray(data)
        b[pos] ^= 0x10
        blob = bytes(b)
        for parallel in (True, False):
            src = RangeReader(lambda o, k, blob=blob: blob[o : o + k], size=len(blob))
            with pytest.raises(CorruptDataError):
                FermionReader(src, parallel=parallel).read()
            src = RangeReader(lambda o, k, blob=blob: blob[o : o + k], size=len(blob))
            with pytest.raises(CorruptDataError):
                FermionReader(src, parallel=parallel).read_into(["i", "f", "s", "d"], _outs(40))


def test_many_page_cmb_fields_with_valid_checksums() -> None:
    """A CMB of more than 64 pages (the vectorised checks): page fields set to neighbours of
    their value, with the CMB and CIT checksums recomputed, fail cleanly or read exactly."""
    t = pa.table({"x": pa.array(np.arange(800) * 3, pa.int64())})
    data = encode(t, page_size=64)  # 100 pages
    foot = np.frombuffer(data[len(data) - L.FOOTER_SIZE :], L.FOOTER_DTYPE)[0]
    cit_off = int(foot["cit_offset"])
    e = np.frombuffer(data, L.CIT_DTYPE, 1, cit_off)[0]
    co, cl = int(e["cmb_offset"]), int(e["cmb_length"])
    h = np.frombuffer(data, L.CMB_HEADER_DTYPE, 1, co)[0]
    assert int(h["num_pages"]) > 64
    sec = L.cmb_sections(int(h["num_stripes"]), int(h["num_nodes"]), int(h["num_streams"]),
                         int(h["num_chunks"]), int(h["num_pages"]))
    p_off = co + sec["pages"][0]
    fields = [(name, off, dt.itemsize) for name, (dt, off) in L.PAGE_DTYPE.fields.items()
              if dt.kind in "ui" and name != "checksum"]
    for k in (0, 1, 50, int(h["num_pages"]) - 1):
        for name, off, size in fields:
            pos = p_off + k * L.PAGE_DTYPE.itemsize + off
            cur = int.from_bytes(data[pos : pos + size], "little")
            for v in {cur + 1, max(cur - 1, 0), 0}:
                if v == cur:
                    continue
                b = bytearray(data)
                b[pos : pos + size] = (v % (1 << (8 * size))).to_bytes(size, "little")
                b[cit_off + 16 : cit_off + 24] = L.checksum(bytes(b[co : co + cl])).to_bytes(8, "little")
                entry = np.frombuffer(bytes(b[cit_off : cit_off + 64]), L.CIT_DTYPE)
                b[cit_off + 56 : cit_off + 64] = int(L.cit_entry_checksums(entry)[0]).to_bytes(8, "little")
                out = np.empty(790, np.int64)
                try:
                    valid = FermionReader(bytes(b)).read_into(["x"], [out], row_range=(5, 795))
                except CorruptDataError:
                    continue
                assert valid == [None] and np.array_equal(out, np.arange(5, 795) * 3), (name, k, v)


# ---------------------------------------------------------------------------- property
_HYP_TYPES = [pa.int8(), pa.uint16(), pa.int32(), pa.int64(), pa.float32(), pa.float64(),
              pa.timestamp("ns"), pa.date32(), pa.duration("us"), pa.string(), pa.large_binary()]


@settings(max_examples=int(os.environ.get("FERMION_EXAMPLES", "40")), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(st.sampled_from(_HYP_TYPES), st.integers(0, 2**32 - 1), st.sampled_from([1, 9, 130, 700]),
       st.sampled_from([0.0, 0.3, 1.0]), st.sampled_from([64, 1024, 1 << 19]),
       st.sampled_from([7, 100, 1 << 20]), st.integers(-3, 750), st.integers(0, 760))
def test_property_read_into_equals_read(t: pa.DataType, seed: int, n: int, p: float, page_size: int,
                                        stripe_rows: int, a: int, length: int) -> None:
    rng = np.random.default_rng(seed)
    mask = rng.random(n) < p if p else None
    if pa.types.is_string(t) or pa.types.is_large_binary(t):
        col = _strings(t, n, rng, mask, int(rng.integers(1, 20)) if rng.random() < 0.5 else None)
    else:
        col = _array(t, _fixed_values(t, n, rng, str(rng.choice(["random", "sorted", "constant"]))), mask)
    r = FermionReader(encode(pa.table({"c": col}), page_size=page_size, stripe_rows=stripe_rows))
    rr = (a, a + length)
    if build_nodes(t)[0][0].kind == "binary":
        _check_objects(r, "c", rr)
    else:
        _check_fixed(r, "c", rr)


@pytest.mark.parametrize("source", ["bytes", "file"])
def test_populate_fills_the_same_values(source: str, tmp_path: object) -> None:
    """populate=True (fresh output memory mapped page by page before each page decodes) fills
    exactly what populate=False fills: plain, coded and compressed pages, pages cut by the row
    range, bools and validity masks."""
    rng = np.random.default_rng(5)
    n = 20_000
    mask = rng.random(n) < 0.05
    t = pa.table({"r": rng.random(n), "s": np.arange(n, dtype=np.int64) * 3,
                  "z": np.tile(rng.random(64), n // 64 + 1)[:n],
                  "ts": pa.array(np.arange(n, dtype=np.int64) * 10**9, pa.timestamp("ns")),
                  "b": pa.array(rng.random(n) < 0.5), "nul": pa.array(rng.random(n), mask=mask)})
    data = encode(t, page_size=16_384, stripe_rows=7_000)
    path = os.path.join(str(tmp_path), "f.fermion")
    with open(path, "wb") as f:
        f.write(data)
    for rr in [None, (0, n), (5, n - 7), (7_001, 13_999), (16_383 // 8, 16_383 // 8 + 1)]:
        got, want = [], []
        for pop, acc in ((True, got), (False, want)):
            r = FermionReader(path if source == "file" else data)
            try:
                a, b = rr or (0, n)
                outs = [np.full(b - a, -1.0), np.empty(b - a, np.int64), np.empty(b - a),
                        np.empty(b - a, np.int64), np.empty(b - a, bool), np.empty(b - a)]
                valid = r.read_into(t.column_names, outs, row_range=rr, populate=pop)
                acc.append((outs, valid))
            finally:
                r.close()
        for (go, gv), (wo, wv) in zip(got, want, strict=True):
            for g, w in zip(go, wo, strict=True):
                assert g.tobytes() == w.tobytes() or np.array_equal(g, w, equal_nan=True)
            for g, w in zip(gv, wv, strict=True):
                assert (g is None and w is None) or np.array_equal(g, w)
        outs, valid = got[0]
        a, b = rr or (0, n)
        np.testing.assert_array_equal(outs[0], t.column("r").to_numpy()[a:b])
        np.testing.assert_array_equal(outs[1], t.column("s").to_numpy()[a:b])
        assert (valid[5] is None) if not mask[a:b].any() else np.array_equal(valid[5], ~mask[a:b])
