"""Corrupt input: every case raises a CorruptDataError subclass (or, when the damaged bytes are
never read, returns the original table) — never another exception, a crash or a hang."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pyarrow as pa
import pytest

from arcticlite.exceptions import CorruptDataError, FormatEOFError, InvalidFileError
from arcticlite.format import FermionReader, FermionWriter, decode, encode
from arcticlite.format import _layout as L
from tests.format.conftest import assert_same

pytestmark = pytest.mark.timeout(120)


def _small_table() -> pa.Table:
    return pa.table({
        "i": pa.array([1, None, 3, 4, 5, 6], pa.int64()),
        "f": [1.5, np.nan, -0.0, 2.0, None, 3.0],
        "s": ["a", None, "ccc", "", "é", "zz"],
        "l": pa.array([[1, 2], None, [], [3], [4, 5, 6], None], pa.list_(pa.int32())),
        "st": pa.array([{"x": 1}, None, {"x": None}, {"x": 2}, {"x": 3}, {"x": 4}]),
        "d": pa.array(["u", "v", "u", None, "v", "u"]).dictionary_encode(),
        "n": pa.nulls(6, pa.float32()),
    }).replace_schema_metadata({"k": "v"})


def _batch_file() -> bytes:
    w = FermionWriter(page_size=64)
    t = _small_table()
    w.append_batch(t.slice(0, 2), batch_id=7)
    w.append_batch(t.slice(2), batch_id=9)
    out = w.close()
    assert out is not None
    return out


SMALL = _small_table()
FILES = {"plain": (encode(SMALL), SMALL), "batch": (_batch_file(), SMALL)}


ALL_WAYS = ({}, {"columns": ["s", "l", "d"]}, {"row_range": (1, 4)}, {"filter": [("i", ">", 2)]})


def _check(data: bytes, expected: pa.Table, batch: bool = False,
           ways: tuple[dict, ...] = ALL_WAYS) -> None:
    """Decode the ways the engine does; accept only CorruptDataError or the exact table."""
    for kwargs in ways:
        try:
            got = decode(data, **kwargs)
        except CorruptDataError:
            continue
        exp = expected
        if "columns" in kwargs:
            exp = exp.select(kwargs["columns"])
        if "row_range" in kwargs:
            exp = exp.slice(1, 3)
        if "filter" in kwargs:
            exp = exp.filter(pa.compute.field("i") > 2)
        assert_same(got, exp)
    if batch:
        try:
            r = FermionReader(data)
            r.read_batch(9)
            r.read(with_batch_ids=True)
        except CorruptDataError:
            pass


@pytest.mark.parametrize("name", FILES)
def test_truncation_at_every_length(name: str) -> None:
    data, _ = FILES[name]
    for n in range(len(data)):
        with pytest.raises(CorruptDataError):
            decode(data[:n])
    with pytest.raises((InvalidFileError, FormatEOFError)):
        decode(data[: L.FOOTER_SIZE])


@pytest.mark.parametrize("name", FILES)
def test_bit_flips_everywhere(name: str) -> None:
    data, table = FILES[name]
    data_end = int(np.frombuffer(data[len(data) - L.FOOTER_SIZE :], L.FOOTER_DTYPE)[0]["cmb_area_offset"])
    # every metadata byte; every 3rd byte of pages (each is checksummed as a whole)
    positions = [*range(0, data_end, 3), *range(data_end, len(data))]
    for pos in positions:
        b = bytearray(data)
        b[pos] ^= 1 << (pos % 8)
        _check(bytes(b), table, batch=name == "batch", ways=ALL_WAYS[:2])


def test_prefix_and_garbage() -> None:
    data, table = FILES["plain"]
    for junk in (b"", b"\0" * 200, b"FRMN" * 100, np.random.default_rng(0).bytes(5000)):
        with pytest.raises(CorruptDataError):
            decode(junk)
    with pytest.raises(CorruptDataError):
        decode(b"junk" + data)  # every offset is now off by four


def _mutations(value: int, bits: int) -> list[int]:
    top = (1 << bits) - 1
    return sorted({0, top, (value + 1) & top, (value - 1) & top, top >> 1, (top >> 1) + 1})


def _set(buf: bytearray, off: int, fmt: str, v: int) -> None:
    size = int(fmt[-1])
    buf[off : off + size] = int(v).to_bytes(size, "little")


def _refresh_footer(buf: bytearray) -> None:
    foot = len(buf) - L.FOOTER_SIZE
    raw = bytes(buf[foot:])
    buf[foot + 104 : foot + 112] = L.footer_checksum(raw).to_bytes(8, "little")


def _struct_fields(dtype: np.dtype) -> list[tuple[str, int, int]]:
    out = []
    for name, (dt, off) in dtype.fields.items():
        if dt.kind in "ui":
            out.append((name, off, dt.itemsize))
    return out


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("recompute", [False, True])
def test_footer_fields(name: str, recompute: bool) -> None:
    data, table = FILES[name]
    foot = len(data) - L.FOOTER_SIZE
    f = np.frombuffer(data[foot:], L.FOOTER_DTYPE)[0]
    tracemalloc.start()
    try:
        for field, off, size in _struct_fields(L.FOOTER_DTYPE):
            if field == "footer_checksum" and recompute:
                continue
            for v in _mutations(int(f[field]), 8 * size):
                if v == int(f[field]):
                    continue
                b = bytearray(data)
                _set(b, foot + off, f"u{size}", v)
                if recompute:
                    _refresh_footer(b)
                _check(bytes(b), table, batch=name == "batch")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20


def _cit(data: bytes) -> tuple[int, np.ndarray]:
    f = np.frombuffer(data[len(data) - L.FOOTER_SIZE :], L.FOOTER_DTYPE)[0]
    off = int(f["cit_offset"])
    return off, np.frombuffer(data, L.CIT_DTYPE, count=int(f["cit_entries"]), offset=off)


@pytest.mark.parametrize("name", FILES)
def test_cit_fields_with_valid_checksums(name: str) -> None:
    data, table = FILES[name]
    off, cit = _cit(data)
    for i in range(len(cit)):
        base = off + i * L.CIT_DTYPE.itemsize
        for field, foff, size in _struct_fields(L.CIT_DTYPE):
            if field == "checksum":
                continue
            for v in _mutations(int(cit[i][field]), 8 * size):
                if v == int(cit[i][field]):
                    continue
                b = bytearray(data)
                _set(b, base + foff, f"u{size}", v)
                entry = np.frombuffer(bytes(b[base : base + 64]), L.CIT_DTYPE)
                _set(b, base + 56, "u8", int(L.cit_entry_checksums(entry)[0]))
                _check(bytes(b), table, batch=name == "batch")


@pytest.mark.parametrize("name", FILES)
def test_cmb_fields_with_valid_checksums(name: str) -> None:
    """Every integer field of every CMB struct, with the CMB and CIT checksums recomputed."""
    data, table = FILES[name]
    off, cit = _cit(data)
    for i, e in enumerate(cit):
        co, cl = int(e["cmb_offset"]), int(e["cmb_length"])
        if not cl:
            continue
        h = np.frombuffer(data, L.CMB_HEADER_DTYPE, 1, co)[0]
        sec = L.cmb_sections(int(h["num_stripes"]), int(h["num_nodes"]), int(h["num_streams"]),
                             int(h["num_chunks"]), int(h["num_pages"]))
        targets: list[tuple[int, int, int]] = []
        for name_, dtype in (("header", L.CMB_HEADER_DTYPE), ("stripes", L.STRIPE_DTYPE),
                             ("streams", L.STREAM_DTYPE), ("chunks", L.CHUNK_DTYPE),
                             ("pages", L.PAGE_DTYPE)):
            so, sl = (0, dtype.itemsize) if name_ == "header" else sec[name_]
            for k in range(sl // dtype.itemsize):
                for fname, foff, size in _struct_fields(dtype):
                    if fname == "checksum" and name_ == "pages":
                        continue
                    pos = co + so + k * dtype.itemsize + foff
                    targets.append((pos, size, int.from_bytes(data[pos : pos + size], "little")))
        so, sl = sec["node_lengths"]
        targets += [(co + so + k, 8, int.from_bytes(data[co + so + k : co + so + k + 8], "little"))
                    for k in range(0, sl, 8)]
        for pos, size, cur in targets:
            for v in _mutations(cur, 8 * size):
                if v == cur:
                    continue
                b = bytearray(data)
                _set(b, pos, f"u{size}", v)
                base = off + i * L.CIT_DTYPE.itemsize
                _set(b, base + 16, "u8", L.checksum(bytes(b[co : co + cl])))
                entry = np.frombuffer(bytes(b[base : base + 64]), L.CIT_DTYPE)
                _set(b, base + 56, "u8", int(L.cit_entry_checksums(entry)[0]))
                _check(bytes(b), table, ways=(ALL_WAYS[0], ALL_WAYS[3]))


def test_checksum_errors_are_reported_as_such() -> None:
    from arcticlite.exceptions import ChecksumError, UnsupportedVersionError

    data, _ = FILES["plain"]
    r = FermionReader(data)
    p = r.page_stats("s")[0]
    b = bytearray(data)
    b[p["offset"]] ^= 0xFF
    with pytest.raises(ChecksumError):
        decode(bytes(b))
    v = bytearray(data)
    v[len(v) - 12] = 99  # version_major
    with pytest.raises(UnsupportedVersionError):
        decode(bytes(v))
    m = bytearray(data)
    m[-1] ^= 1
    with pytest.raises(InvalidFileError):
        decode(bytes(m))
    assert_same(decode(data), SMALL)


def test_implausible_expansion_is_refused_before_allocating() -> None:
    data = encode(pa.table({"x": np.zeros(1000, dtype=np.int64)}))  # compresses to a few bytes
    r = FermionReader(data)
    r.max_decoded_bytes = 4000  # the table needs 8000 bytes of values
    with pytest.raises(InvalidFileError):
        r.read()
    assert FermionReader(data).read().num_rows == 1000
