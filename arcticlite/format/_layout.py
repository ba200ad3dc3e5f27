"""Fermion on-disk structures: magic values, enums and POD structs (docs/format.md).

Every metadata struct is a fixed-size little-endian record described by a numpy structured
dtype, so a block of them is read with one ``np.frombuffer`` call and written with one
``ndarray.tobytes()``. Each dtype also has its ``struct`` twin (``*_STRUCT``, derived from the
dtype by :func:`record_struct`), for the few records of a small file, where a numpy call per
record would cost more than the record itself.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import xxhash

from arcticlite.exceptions import ChecksumError, FormatEOFError, InvalidFileError

# ----------------------------------------------------------------------------- constants
MAGIC = b"FRMN"
"""Magic at the start of the file (header) and in the last 4 bytes of the footer."""
CMB_MAGIC = b"FCMB"
VERSION_MAJOR = 1
"""Readers refuse files with a major version they do not know (UnsupportedVersionError)."""
VERSION_MINOR = 0
"""Minor versions add only what older readers of the same major can ignore."""
VERSION_MINOR_BLOOM = 1
"""Minor version of files written with Bloom filters enabled (1.1: the footer's
``bloom_length``, reserved and ignored in 1.0, sizes a bloom section; docs/format.md §9)."""
HEADER_SIZE = 8
FOOTER_SIZE = 128
DEFAULT_PAGE_SIZE = 512 * 1024
MAX_ROWS = 1 << 40
"""Sanity bound on row counts read from metadata (allocation guard)."""

# footer settings bits
SETTING_BATCH_MODE = 1

# CIT entry flags
CIT_ALL_NULL = 1  # no CMB: every row of the column is null
CIT_SYSTEM_BATCH_META = 2  # system column holding the BATCH_META streams

# descType (seed 003)
DESC_SIMPLE = 0
DESC_FULL = 1
DESC_USE_DEFAULT = 2
DESC_FORCE_NULL = 3

# StreamType (seed 003)
STREAM_VALIDITY = 0
STREAM_OFFSETS = 1
STREAM_DATA = 2
STREAM_BATCH_META = 3
STREAM_NAMES = {0: "VALIDITY", 1: "OFFSETS", 2: "DATA", 3: "BATCH_META"}

# value kinds: how a stream's page blobs are produced
KIND_FIXED = 0  # encode_fixed of a numeric array
KIND_BITMAP = 1  # encode_fixed of a little-endian packed bitmap (uint8)
KIND_BINARY = 2  # encode_binary of offsets + data
KIND_LENGTHS = 3  # encode_fixed of list lengths (int32/int64), offsets = cumsum

# chunk / page flags
FLAG_HAS_STATS = 1  # min/max hold valid statistics
FLAG_HAS_NAN = 2  # float data holds NaN (excluded from min/max)
FLAG_ALL_VALID = 4  # validity chunk: every item valid (no pages)
FLAG_ALL_NULL = 8  # validity chunk: every item null (no pages)
FLAG_PREFIX_STATS = 16  # min/max are 8-byte big-endian prefixes (strings/binary)

# numpy dtype codes used in StreamMeta.dtype_code
DTYPE_CODES: dict[str, int] = {
    "int8": 1, "int16": 2, "int32": 3, "int64": 4,
    "uint8": 5, "uint16": 6, "uint32": 7, "uint64": 8,
    "float32": 9, "float64": 10,
}  # fmt: skip
CODE_DTYPES: dict[int, np.dtype[Any]] = {v: np.dtype(k) for k, v in DTYPE_CODES.items()}

# ----------------------------------------------------------------------------- structs
FOOTER_DTYPE = np.dtype(
    {
        "names": [
            "num_rows", "cmb_area_offset", "cmb_area_length", "schema_offset", "schema_length",
            "schema_meta_offset", "schema_meta_length", "num_columns", "name_index_offset",
            "name_index_slots", "num_stripes", "cit_offset", "cit_entries", "page_size",
            "settings", "schema_meta_checksum", "footer_checksum", "bloom_length",
            "version_major", "version_minor", "footer_size", "magic",
        ],
        "formats": [
            "<u8", "<u8", "<u8", "<u8", "<u8",
            "<u8", "<u4", "<u4", "<u8",
            "<u4", "<u4", "<u8", "<u4", "<u4",
            "<u8", "<u8", "<u8", "<u4",
            "<u2", "<u2", "<u4", "S4",
        ],
        "offsets": [0, 8, 16, 24, 32, 40, 48, 52, 56, 64, 68, 72, 80, 84, 88, 96, 104, 112,
                    116, 118, 120, 124],
        "itemsize": FOOTER_SIZE,
    }
)  # fmt: skip
FOOTER_CHECKSUM_SPAN = (104, 112)

CIT_DTYPE = np.dtype(
    {
        "names": ["cmb_offset", "field_offset", "cmb_checksum", "field_checksum", "null_count",
                  "cmb_length", "field_length", "flags", "reserved", "checksum"],
        "formats": ["<u8", "<u8", "<u8", "<u8", "<u8", "<u4", "<u4", "<u4", "<u4", "<u8"],
        "offsets": [0, 8, 16, 24, 32, 40, 44, 48, 52, 56],
        "itemsize": 64,
    }
)  # fmt: skip

NAME_SLOT_DTYPE = np.dtype(
    {
        "names": ["hash", "column", "check"],
        "formats": ["<u8", "<u4", "<u4"],
        "offsets": [0, 8, 12],
        "itemsize": 16,
    }
)
EMPTY_SLOT = 0xFFFFFFFF

CMB_HEADER_DTYPE = np.dtype(
    {
        "names": ["magic", "num_stripes", "num_streams", "num_nodes", "num_chunks", "num_pages",
                  "reserved"],
        "formats": ["S4", "<u4", "<u4", "<u4", "<u4", "<u4", "<u8"],
        "offsets": [0, 4, 8, 12, 16, 20, 24],
        "itemsize": 32,
    }
)  # fmt: skip
STRIPE_DTYPE = np.dtype([("row_count", "<u8")])
NODE_LEN_DTYPE = np.dtype("<u8")
STREAM_DTYPE = np.dtype(
    {
        "names": ["desc_type", "stream_type", "node", "chunks_offset", "kind", "dtype_code",
                  "reserved0", "reserved1"],
        "formats": ["u1", "u1", "<u2", "<u4", "u1", "u1", "<u2", "<u4"],
        "offsets": [0, 1, 2, 4, 8, 9, 10, 12],
        "itemsize": 16,
    }
)  # fmt: skip
CHUNK_DTYPE = np.dtype(
    {
        "names": ["offset", "length", "min", "max", "item_count", "null_count", "num_pages",
                  "page_meta_offset", "flags", "reserved"],
        "formats": ["<u8", "<u8", "V8", "V8", "<u8", "<u8", "<u4", "<u4", "<u4", "<u4"],
        "offsets": [0, 8, 16, 24, 32, 40, 48, 52, 56, 60],
        "itemsize": 64,
    }
)  # fmt: skip
PAGE_DTYPE = np.dtype(
    {
        "names": ["offset", "checksum", "min", "max", "length", "raw_length", "item_count",
                  "null_count", "flags", "encoding", "reserved", "first_item"],
        "formats": ["<u8", "<u8", "V8", "V8", "<u4", "<u4", "<u4", "<u4", "<u4", "u1", "V3",
                    "<u8"],
        "offsets": [0, 8, 16, 24, 32, 36, 40, 44, 48, 52, 53, 56],
        "itemsize": 64,
    }
)  # fmt: skip


_STRUCT_CODES = {"<u8": "Q", "<u4": "I", "<u2": "H", "|u1": "B"}


def record_struct(dtype: np.dtype[Any], upto: int | None = None) -> struct.Struct:
    """The ``struct`` format of (the fields before byte ``upto`` of) a record dtype, so that
    ``pack(*fields)`` gives the same bytes as the record's ``tobytes()``."""
    assert dtype.names is not None and dtype.fields is not None
    fmt, pos = "<", 0
    for name in dtype.names:
        ft, off = dtype.fields[name][:2]
        if upto is not None and off >= upto:
            break
        assert off == pos, f"{dtype}: gap before {name}"  # no implicit padding
        fmt += _STRUCT_CODES.get(ft.str) or f"{ft.itemsize}s"  # S4 / V8 / V3: raw bytes
        pos += ft.itemsize
    assert pos == (dtype.itemsize if upto is None else upto), f"{dtype}: gap at the end"
    return struct.Struct(fmt)


def _offset(dtype: np.dtype[Any], name: str) -> int:
    assert dtype.fields is not None
    return int(dtype.fields[name][1])


FOOTER_STRUCT = record_struct(FOOTER_DTYPE)
CIT_STRUCT = record_struct(CIT_DTYPE)
CIT_HEAD_STRUCT = record_struct(CIT_DTYPE, upto=_offset(CIT_DTYPE, "checksum"))
"""The fields of a CIT entry that its checksum covers."""
NAME_SLOT_STRUCT = record_struct(NAME_SLOT_DTYPE)
NAME_SLOT_HEAD_STRUCT = record_struct(NAME_SLOT_DTYPE, upto=_offset(NAME_SLOT_DTYPE, "check"))
"""The fields of a name index slot that its check covers (hash, column)."""
CMB_HEADER_STRUCT = record_struct(CMB_HEADER_DTYPE)
STREAM_STRUCT = record_struct(STREAM_DTYPE)
CHUNK_STRUCT = record_struct(CHUNK_DTYPE)
PAGE_STRUCT = record_struct(PAGE_DTYPE)


def cmb_sections(num_stripes: int, num_nodes: int, num_streams: int, num_chunks: int,
                 num_pages: int) -> dict[str, tuple[int, int]]:
    """Byte (offset, length) of each CMB section, relative to the CMB start."""
    out: dict[str, tuple[int, int]] = {}
    pos = CMB_HEADER_DTYPE.itemsize
    for name, count, size in (
        ("stripes", num_stripes, STRIPE_DTYPE.itemsize),
        ("node_lengths", num_stripes * num_nodes, NODE_LEN_DTYPE.itemsize),
        ("streams", num_streams, STREAM_DTYPE.itemsize),
        ("chunks", num_chunks, CHUNK_DTYPE.itemsize),
        ("pages", num_pages, PAGE_DTYPE.itemsize),
    ):
        out[name] = (pos, count * size)
        pos += count * size
    out["end"] = (pos, 0)
    return out


# ----------------------------------------------------------------------------- helpers
checksum = xxhash.xxh3_64_intdigest
"""``checksum(data) -> int``: xxh3_64 of ``data`` (the checksum used everywhere in Fermion)."""


def verify(data: bytes | memoryview, expected: int, what: str) -> None:
    """Raise ChecksumError unless ``checksum(data) == expected``."""
    got = xxhash.xxh3_64_intdigest(data)
    if got != int(expected):
        raise ChecksumError(f"checksum mismatch in {what}: stored {int(expected):#018x}, "
                            f"computed {got:#018x}; the segment is corrupt")


def footer_checksum(raw: bytes | memoryview) -> int:
    """Checksum of a footer: xxh3_64 of its 128 bytes with the checksum field zeroed."""
    lo, hi = FOOTER_CHECKSUM_SPAN
    return xxhash.xxh3_64_intdigest(b"".join((raw[:lo], _ZEROS[: hi - lo], raw[hi:])))


_ZEROS = bytes(8)


def name_hash(name: str) -> int:
    """64-bit hash of a column name used by the name index (xxh3_64 of its UTF-8 bytes)."""
    return xxhash.xxh3_64_intdigest(name.encode("utf-8", "surrogatepass"))


def slot_check(h: int, column: int) -> int:
    """Per-slot check value of the name index: low 32 bits of xxh3_64(hash || column)."""
    return xxhash.xxh3_64_intdigest(int(h).to_bytes(8, "little") + int(column).to_bytes(4, "little")) & 0xFFFFFFFF


def cit_entry_checksums(entries: np.ndarray) -> np.ndarray:
    """Checksum of each CIT entry: xxh3_64 over its first 56 bytes."""
    raw = entries.view(np.uint8).reshape(len(entries), CIT_DTYPE.itemsize)[:, :56]
    return np.fromiter((checksum(r.tobytes()) for r in raw), dtype=np.uint64, count=len(entries))


def frombuffer(dtype: np.dtype[Any], buf: bytes | memoryview, count: int, what: str) -> np.ndarray:
    """``np.frombuffer`` of ``count`` structs with bounds checking (FormatEOFError)."""
    need = dtype.itemsize * count
    if count < 0 or len(buf) < need:
        raise FormatEOFError(f"{what}: need {need} bytes, have {len(buf)}")
    return np.frombuffer(buf, dtype=dtype, count=count)


def check_range(offset: int, length: int, lo: int, hi: int, what: str) -> None:
    """Raise FormatEOFError unless ``[offset, offset + length)`` lies inside ``[lo, hi)``."""
    if offset < lo or length < 0 or offset + length > hi:
        raise FormatEOFError(f"{what}: range [{offset}, {offset + length}) outside [{lo}, {hi})")


def check_magic(raw: bytes, what: str) -> None:
    if raw != MAGIC:
        raise InvalidFileError(f"{what}: bad magic {raw!r}, expected {MAGIC!r}; not a Fermion file")
