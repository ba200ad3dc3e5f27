"""Encoding ids and header structs of Fermion value encodings (spec in ``_encodings``)."""

from __future__ import annotations

import struct

import numpy as np

PLAIN = 0
CONSTANT = 1
BITPACK = 2
NARROW = 3
DELTA = 4
RLE = 5
DICT = 6
DECIMAL = 7
ZSTD = 8
LZ4 = 9
BINARY_PLAIN = 10
BINARY_DICT = 11
SPLIT = 12

ENCODING_NAMES: dict[int, str] = {
    PLAIN: "plain",
    CONSTANT: "constant",
    BITPACK: "bitpack",
    NARROW: "narrow",
    DELTA: "delta",
    RLE: "rle",
    DICT: "dict",
    DECIMAL: "decimal",
    ZSTD: "zstd",
    LZ4: "lz4",
    BINARY_PLAIN: "binary",
    BINARY_DICT: "binary-dict",
    SPLIT: "split",
}

#: id u8, width u8, 6 pad, base u64, factor u64
FOR_HDR = struct.Struct("<BB6xQQ")
#: id u8, 7 pad, first value u64
DELTA_HDR = struct.Struct("<B7xQ")
#: id u8, 3 pad, n u32, first child length u64  (RLE, DICT, BINARY_DICT)
NESTED_HDR = struct.Struct("<B3xIQ")
#: id u8, exponent u8, 2 pad, exceptions u32, ints child length u64, positions child length u64
DECIMAL_HDR = struct.Struct("<BB2xIQQ")
#: id u8, 7 pad, uncompressed length u64
CODEC_HDR = struct.Struct("<B7xQ")
#: id u8, length width u8 (4 or 8), 6 pad, data length u64, lengths child length u64
BINARY_HDR = struct.Struct("<BB6xQQ")

U32 = np.dtype(np.uint32)
U64 = np.dtype(np.uint64)
I64 = np.dtype(np.int64)
CODE_DTYPE = U32
MAX_DECIMAL_EXPONENT = 18
MAX_NESTING = 8


_UNSIGNED = {n: np.dtype(f"<u{n}") for n in (1, 2, 4, 8)}
_SIGNED = {n: np.dtype(f"<i{n}") for n in (1, 2, 4, 8)}


def unsigned_of(dtype: np.dtype) -> np.dtype:
    """Return the unsigned integer dtype with the itemsize of ``dtype``."""
    return _UNSIGNED[dtype.itemsize]


def signed_of(dtype: np.dtype) -> np.dtype:
    """Return the signed integer dtype with the itemsize of ``dtype``."""
    return _SIGNED[dtype.itemsize]
