"""Golden tests: the bytes of a tiny file match the struct layout documented in docs/format.md."""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa

from arcticlite.format import _encodings, decode, encode
from arcticlite.format import _layout as L
from arcticlite.format._types import deserialize_field


def _tiny() -> bytes:
    return encode(pa.table({"a": pa.array([1, 2, None], pa.int64())}))


def test_struct_sizes_match_the_spec() -> None:
    assert (L.FOOTER_DTYPE.itemsize, L.CIT_DTYPE.itemsize, L.NAME_SLOT_DTYPE.itemsize) == (128, 64, 16)
    assert (L.CMB_HEADER_DTYPE.itemsize, L.STRIPE_DTYPE.itemsize, L.STREAM_DTYPE.itemsize) == (32, 8, 16)
    assert (L.CHUNK_DTYPE.itemsize, L.PAGE_DTYPE.itemsize) == (64, 64)
    assert L.FOOTER_DTYPE.fields["magic"][1] == 124
    assert L.FOOTER_DTYPE.fields["version_major"][1] == 116
    assert L.FOOTER_DTYPE.fields["footer_checksum"][1] == 104
    assert L.CIT_DTYPE.fields["checksum"][1] == 56
    assert L.PAGE_DTYPE.fields["first_item"][1] == 56


def test_tiny_file_bytes() -> None:
    data = _tiny()
    size = len(data)
    assert data[:8] == b"FRMN\x01\x00\x00\x00"
    foot = data[-128:]
    (num_rows, cmb_off, cmb_len, schema_off, schema_len, meta_off, meta_len, ncols, name_off,
     slots, nstripes, cit_off, cit_n, page_size, settings, meta_ck, foot_ck, reserved, vmaj, vmin,
     fsize, magic) = struct.unpack("<QQQQQQIIQIIQIIQQQIHHI4s", foot)
    assert (num_rows, ncols, nstripes, cit_n, slots) == (3, 1, 1, 1, 2)
    assert (magic, vmaj, vmin, fsize, reserved, settings) == (b"FRMN", 1, 0, 128, 0, 0)
    assert page_size == 512 * 1024
    assert cit_off == size - 128 - 64
    assert name_off == cit_off - 2 * 16
    assert schema_off + schema_len == name_off
    assert cmb_off + cmb_len == schema_off
    zeroed = foot[:104] + b"\0" * 8 + foot[112:]
    assert foot_ck == L.checksum(zeroed)
    assert meta_ck == L.checksum(data[meta_off : meta_off + meta_len])
    # CIT entry
    (c_off, f_off, c_ck, f_ck, nulls, c_len, f_len, flags, _r, e_ck) = struct.unpack(
        "<QQQQQIIIIQ", data[cit_off : cit_off + 64])
    assert e_ck == L.checksum(data[cit_off : cit_off + 56])
    assert (nulls, flags, c_off, c_len) == (1, 0, cmb_off, 336)
    assert c_ck == L.checksum(data[c_off : c_off + c_len])
    assert f_ck == L.checksum(data[f_off : f_off + f_len])
    assert deserialize_field(data[f_off : f_off + f_len]) == pa.field("a", pa.int64())
    # name index slot for "a"
    h = L.name_hash("a")
    slot = name_off + (h & 1) * 16
    sh, scol, schk = struct.unpack("<QII", data[slot : slot + 16])
    assert (sh, scol, schk) == (h, 0, L.slot_check(h, 0))
    # CMB
    cmb = data[c_off : c_off + c_len]
    assert struct.unpack("<4sIIIIIQ", cmb[:32]) == (b"FCMB", 1, 2, 1, 2, 2, 0)
    assert struct.unpack("<Q", cmb[32:40]) == (3,)  # stripe rows
    assert struct.unpack("<Q", cmb[40:48]) == (3,)  # node 0 length
    streams = [struct.unpack("<BBHIBBHI", cmb[48 + 16 * i : 64 + 16 * i]) for i in range(2)]
    assert streams[0][:4] == (L.DESC_FULL, L.STREAM_VALIDITY, 0, 80)
    assert streams[1][:4] == (L.DESC_FULL, L.STREAM_DATA, 0, 144)
    assert streams[1][4:6] == (L.KIND_FIXED, 4)  # FIXED int64
    pages = []
    for k in range(2):
        chunk = struct.unpack("<QQqqQQIIII", cmb[80 + 64 * k : 144 + 64 * k])
        off, length, _mn, _mx, items, cnulls, npages, pmo, _fl, _ = chunk
        assert (items, cnulls, npages, pmo) == (3, 1, 1, 208 + 64 * k)
        page = struct.unpack("<QQqqIIIIIB3xQ", cmb[pmo : pmo + 64])
        assert page[0] == off and page[4] == length and page[-1] == 0
        assert page[1] == L.checksum(data[off : off + length])
        pages.append(page)
    # VALIDITY page: bits 1,1,0 -> 0x03; DATA page: [1, 2, 2] with min 1, max 2
    v = pages[0]
    raw = _encodings.decode_fixed(data[v[0] : v[0] + v[4]], np.dtype(np.uint8), 1)
    assert raw.tolist() == [0b011] and v[6] == 3 and v[7] == 1
    d = pages[1]
    assert _encodings.decode_fixed(data[d[0] : d[0] + d[4]], np.dtype(np.int64), 3).tolist() == [1, 2, 2]
    assert (d[2], d[3], d[8] & L.FLAG_HAS_STATS) == (1, 2, L.FLAG_HAS_STATS)
    assert v[0] == 8 and d[0] == v[0] + v[4]  # data area starts after the header, pages contiguous
    assert decode(data).column(0).to_pylist() == [1, 2, None]
