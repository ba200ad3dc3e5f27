"""Page jobs of the Fermion writer: each encodes one page (``_encodings``), checksums it and
computes its statistics, on the writer's thread or in the shared pool, and returns what the
writer records in the page's PageMeta."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from arcticlite.format import _codec, _kernels
from arcticlite.format import _layout as L
from arcticlite.format._enc_policy import current as _policy
from arcticlite.format._enc_policy import dictionary_key
from arcticlite.format._encodings import plain_parts

__all__ = ["BinaryPage", "BitmapPage", "DictBinaryPage", "FixedPage", "PageOut"]

_MINMAX_FORMATS = {"i": struct.Struct("<2q"), "u": struct.Struct("<2Q"), "f": struct.Struct("<2d")}
"""Packs a page's (min, max) of each statistics kind as the 8-byte type it is stored as
(int64, uint64, float64; docs/format.md, Statistics). Numpy scalars of any width convert
exactly."""
_KIND_CODES = {"": 0, "i": 1, "u": 2, "f": 3}


def prefix64(b: bytes) -> int:
    """First 8 bytes of ``b`` (zero padded) as a big-endian integer: monotone in ``b``."""
    return int.from_bytes(b[:8].ljust(8, b"\0"), "big")


def _prefix_minmax(values: pa.Array) -> bytes:
    """The 16-byte (min, max) statistics of string / binary ``values`` (some not null): the
    :func:`prefix64` of each, as uint64."""
    mm = pc.min_max(values)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if isinstance(lo, str):
        lo, hi = lo.encode("utf-8", "surrogatepass"), hi.encode("utf-8", "surrogatepass")
    return np.array((prefix64(lo), prefix64(hi)), dtype=np.uint64).tobytes()


def _entry_prefixes(dictionary: pa.Array, d_offs: np.ndarray) -> np.ndarray:
    """:func:`prefix64` of every entry of a string / binary ``dictionary`` (``d_offs``: its int64
    value offsets from its first value), as uint64, in one vectorised pass."""
    t = dictionary.type
    odt = np.dtype(np.int64 if pa.types.is_large_string(t) or pa.types.is_large_binary(t) else np.int32)
    bufs = dictionary.buffers()
    start = int(np.frombuffer(bufs[1], dtype=odt, count=1, offset=dictionary.offset * odt.itemsize)[0])
    raw = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    padded = np.zeros(int(d_offs[-1]) + 8, dtype=np.uint8)
    padded[: int(d_offs[-1])] = raw[start : start + int(d_offs[-1])]
    k = np.arange(8)
    lens = np.diff(d_offs)
    heads = np.where(k < lens[:, None], padded[d_offs[:-1, None] + k], 0).astype(np.uint8)
    return np.ascontiguousarray(heads).view(">u8").reshape(-1).astype(np.uint64)


PageOut = tuple[tuple[Any, ...], int, int, int, int, int, int, int, bytes, int]
"""A page job's result: (blob buffers, length, checksum, encoding id, raw_length, item_count,
null_count, flags, min and max (16 bytes), statistics kind code)."""
_ZERO16 = bytes(16)


def _blob(blob: bytes) -> tuple[tuple[bytes], int, int, int]:
    """(buffers, length, checksum, encoding id) of a page blob."""
    return (blob,), len(blob), L.checksum(blob), blob[0] if blob else 0


def _nulls(count: int, valid: np.ndarray | None) -> int:
    return 0 if valid is None else count - int(np.count_nonzero(valid))


class BitmapPage:
    """Page job: a bitmap (validity or bool values) packed LSB-first and encoded as uint8."""

    __slots__ = ("bools", "valid", "key")

    def __init__(self, bools: np.ndarray | None, valid: np.ndarray | None, key: Any = None) -> None:
        self.bools, self.valid = bools, valid
        self.key = key  # the stream, for a bulk write's memo of encoding choices

    def __call__(self) -> PageOut:
        assert self.bools is not None
        n = len(self.bools)
        packed = np.packbits(self.bools, bitorder="little")
        return (*_blob(_codec.encode_fixed(packed, key=self.key)), len(packed), n, _nulls(n, self.valid), 0,
                _ZERO16, 0)


class FixedPage:
    """Page job: fixed-width values (``count`` items) and, for ``stats`` "i"/"u"/"f", their
    min/max over the valid values (NaN excluded, with HAS_NAN).

    ``plain`` is set when the bulk incompressibility test marked the page: its blob is then the
    id byte and the values' own buffer (checksummed as one); otherwise ``encode_fixed`` runs
    without that test.
    """

    __slots__ = ("vals", "stats", "valid", "count", "plain", "key")

    def __init__(self, vals: np.ndarray, stats: str, valid: np.ndarray | None, count: int,
                 key: Any = None) -> None:
        self.vals, self.stats, self.valid, self.count = vals, stats, valid, count
        self.plain = False
        self.key = key  # the stream, for a bulk write's memo of encoding choices

    def __call__(self) -> PageOut:
        v = self.vals
        if self.plain:
            head, body = plain_parts(v)
            h = xxhash.xxh3_64(head)
            h.update(body)
            blob: tuple[tuple[Any, ...], int, int, int] = ((head, body), 1 + body.nbytes,
                                                           h.intdigest(), head[0])
        else:
            blob = _blob(_codec.encode_fixed(np.ascontiguousarray(v), gate=False, key=self.key))
        count, valid, stats = self.count, self.valid, self.stats
        nulls = _nulls(count, valid)
        if stats and count:
            sv = v if valid is None else v[valid]
            if len(sv):
                if stats != "f" and sv.dtype.kind in "iu":
                    lo, hi = _kernels.min_max(sv)  # one pass with the native kernels
                else:
                    lo, hi = np.minimum.reduce(sv), np.maximum.reduce(sv)
                flags = 0
                if stats == "f" and (lo != lo or hi != hi):  # NaN
                    flags = L.FLAG_HAS_NAN
                    lo, hi = np.fmin.reduce(sv), np.fmax.reduce(sv)
                if lo == lo:  # not all NaN
                    minmax = _MINMAX_FORMATS[stats].pack(lo, hi)
                    return (*blob, v.nbytes, count, nulls, flags | L.FLAG_HAS_STATS, minmax,
                            _KIND_CODES[stats])
                return (*blob, v.nbytes, count, nulls, flags, _ZERO16, 0)
        return (*blob, v.nbytes, count, nulls, 0, _ZERO16, 0)


class BinaryPage:
    """Page job: variable-length values, with 8-byte prefix statistics."""

    __slots__ = ("offs", "data", "arr", "valid")

    def __init__(self, offs: np.ndarray, data: pa.Buffer, arr: pa.Array,
                 valid: np.ndarray | None) -> None:
        self.offs, self.data, self.arr, self.valid = offs, data, arr, valid

    def __call__(self) -> PageOut:
        offs, arr = self.offs, self.arr
        blob = _blob(_codec.encode_binary(offs, self.data))
        n = len(arr)
        raw = int(offs[-1] - offs[0]) + 4 * len(offs)
        nulls = _nulls(n, self.valid)
        if arr.null_count < n:
            return (*blob, raw, n, nulls, L.FLAG_HAS_STATS | L.FLAG_PREFIX_STATS, _prefix_minmax(arr),
                    _KIND_CODES["u"])
        return (*blob, raw, n, nulls, 0, _ZERO16, 0)


class DictBinaryPage:
    """Page job: string / binary values carried as ``codes`` into ``dictionary`` (``d_offs``:
    its int64 value offsets), with the same blob, statistics and raw length as a
    :class:`BinaryPage` of the values would have."""

    __slots__ = ("codes", "dictionary", "d_offs", "valid", "key", "counts")

    def __init__(self, codes: np.ndarray, dictionary: pa.Array, d_offs: np.ndarray,
                 valid: np.ndarray | None, key: Any = None, counts: np.ndarray | None = None) -> None:
        self.codes, self.dictionary, self.d_offs, self.valid, self.key = codes, dictionary, d_offs, valid, key
        self.counts = counts  # occurrences of each dictionary value among the page's (valid) codes

    def __call__(self) -> PageOut:
        codes, valid = self.codes, self.valid
        n = len(codes)
        counts = self.counts
        if counts is None:
            present = codes if valid is None else codes[valid]
            counts = _kernels.code_counts(np.ascontiguousarray(present), len(self.dictionary))
        # (with nulls, their placeholder codes are among ``codes`` but not in ``counts``)
        blob = _blob(_codec.encode_binary_dictionary(codes, self.dictionary, key=self.key,
                                                     counts=counts if valid is None else None))
        raw = int(counts @ np.diff(self.d_offs)) + 4 * (n + 1)
        nulls = _nulls(n, valid)
        if nulls < n:
            memo = _policy().memo
            if memo is not None and not self.dictionary.null_count:
                # the files of a bulk write share the dictionary: its entries' prefixes once,
                # each page's statistics from those of the entries it uses
                key = ("prefixes", dictionary_key(memo, self.dictionary))
                prefixes = memo.get(key)
                if prefixes is None:
                    prefixes = memo[key] = _entry_prefixes(self.dictionary, self.d_offs)
                used_prefixes = prefixes[counts > 0]
                minmax = np.array((used_prefixes.min(), used_prefixes.max()), dtype=np.uint64).tobytes()
            else:
                minmax = _prefix_minmax(self.dictionary.take(pa.array(np.flatnonzero(counts))))
            return (*blob, raw, n, nulls, L.FLAG_HAS_STATS | L.FLAG_PREFIX_STATS, minmax, _KIND_CODES["u"])
        return (*blob, raw, n, nulls, 0, _ZERO16, 0)
