"""Variable-length (string / binary) value encodings: plain lengths + data, and dictionary."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arcticlite.exceptions import FormatEOFError, InvalidFileError
from arcticlite.format import _kernels
from arcticlite.format._alloc import empty
from arcticlite.format._enc_bitpack import _temp, packed_words, unpack_into, unpack_u16
from arcticlite.format._enc_gather import gather_fixed
from arcticlite.format._enc_policy import REUSE, dictionary_key
from arcticlite.format._enc_policy import current as _policy
from arcticlite.format._enc_select import (
    MODE_BITPACK,
    MODE_NARROW,
    MODE_SPLIT,
    NO_DICT,
    encode_candidates,
    encode_plain,
    encode_recipe,
    recipe_of,
    uniform_for,
)
from arcticlite.format._enc_spec import (
    BINARY_DICT,
    BINARY_HDR,
    BINARY_PLAIN,
    BITPACK,
    CODE_DTYPE,
    CODEC_HDR,
    CONSTANT,
    FOR_HDR,
    LZ4,
    MAX_NESTING,
    NESTED_HDR,
    ZSTD,
)
from arcticlite.format._enc_wrap import (
    choose_codec_blob,
    compress_best,
    compress_if_it_pays,
    decompress,
    region,
)

__all__ = ["decode_binary", "describe_plain", "encode_binary", "encode_binary_dictionary"]

_U8 = np.dtype(np.uint8)
_I64 = np.dtype(np.int64)
#: Largest decompression ratio accepted for binary blobs (zstd tops out near 2**15).
_MAX_RATIO = 1 << 16
_DICT_SAMPLE = 1024
_DICT_SAMPLE_BYTES = 1 << 20

FixedDecoder = Callable[[memoryview, np.dtype, int, np.ndarray, int], None]
Describer = Callable[[memoryview, int], str]


def _as_bytes_array(data: bytes | memoryview | np.ndarray) -> np.ndarray:
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).reshape(-1).view(_U8)
    return np.frombuffer(region(data), _U8)


def _encode_plain(lengths: np.ndarray, payload: np.ndarray, mode: int,
                  cascades: bool = True) -> bytes:
    lw = 4 if len(lengths) == 0 or int(lengths.max()) < (1 << 32) else 8
    lengths = lengths.astype(f"<u{lw}")
    lblob = encode_candidates(lengths, 1, mode)[0] if cascades else encode_plain(lengths)
    header = BINARY_HDR.pack(BINARY_PLAIN, lw, len(payload), len(lblob))
    return b"".join((header, lblob, payload.data))


def encode_binary(offsets: np.ndarray, data: bytes | memoryview | np.ndarray) -> bytes:
    """Encode Arrow-style offsets + data; see :func:`arcticlite.format._encodings.encode_binary`."""
    offs = np.asarray(offsets)
    if offs.ndim != 1 or len(offs) < 1 or offs.dtype.kind not in "iu":
        raise ValueError("offsets must be a 1-D integer array of n + 1 entries")
    raw = _as_bytes_array(data)
    o64 = offs.astype(_I64)
    n = len(o64) - 1
    lengths = np.diff(o64)
    start, end = int(o64[0]), int(o64[-1])
    if start < 0 or end > len(raw) or (n and int(lengths.min()) < 0):
        raise ValueError("offsets are not non-decreasing within the data")
    payload = raw[start:end]
    if not _policy().cascades:
        return _encode_plain(lengths, payload, MODE_BITPACK, cascades=False)
    # a byte-plane variant of the lengths only matters when they are a sizeable part
    modes = (MODE_BITPACK, MODE_SPLIT) if len(payload) < 16 * max(1, n) else (MODE_BITPACK,)
    variants = [_encode_plain(lengths, payload, m) for m in modes]
    if n >= 16:
        arr = pa.Array.from_buffers(
            pa.large_binary(), n, [None, pa.py_buffer(o64 - start), pa.py_buffer(payload)]
        )
        # sample at most ~1 MiB of values (long values would make the sample itself costly)
        m = min(n, _DICT_SAMPLE, max(16, _DICT_SAMPLE_BYTES * n // max(1, len(payload))))
        idx = np.arange(m, dtype=np.int64) * (n - 1) // max(1, m - 1)
        distinct = arr.take(pa.array(idx)).value_counts()
        # a dictionary is tried when half the sample repeats, or when its repeats put the
        # distinct values at most at half the page (m samples of D values repeat ~m²/2D
        # times: a 10,000-value ticker in a 100,000-row page repeats ~50 times in 1,024)
        repeats = len(idx) - len(distinct)
        if len(distinct) * 2 <= len(idx) or (repeats >= 8 and len(idx) * len(idx) <= repeats * n):
            enc = arr.dictionary_encode()
            dictionary = enc.dictionary
            d_off = np.frombuffer(dictionary.buffers()[1], _I64, len(dictionary) + 1)
            dbuf = dictionary.buffers()[2]
            d_data = np.frombuffer(dbuf, _U8) if dbuf is not None else np.empty(0, _U8)
            d_data = d_data[int(d_off[0]) : int(d_off[-1])]
            dblob = _encode_plain(np.diff(d_off), d_data, MODE_BITPACK)
            codes = enc.indices.to_numpy().astype(CODE_DTYPE)
            # codes drawn evenly from the dictionary pack to their width, whatever the search
            uniform = uniform_for(codes) if len(codes) >= 1024 else None
            for cblob in [uniform] if uniform is not None else (
                    encode_candidates(codes, 1, mode | NO_DICT)[0] for mode in (MODE_BITPACK, MODE_NARROW, MODE_SPLIT)):
                variants.append(
                    NESTED_HDR.pack(BINARY_DICT, len(dictionary), len(dblob)) + dblob + cblob
                )
    return compress_best(variants)


#: A page's dictionary is the column's whole dictionary up to this many values; beyond, only
#: the values the page uses.
_WHOLE_DICTIONARY = 64
_CODE_MODES = (MODE_BITPACK, MODE_NARROW, MODE_SPLIT)


def encode_binary_dictionary(codes: np.ndarray, dictionary: pa.Array, key: Any = None,
                             counts: np.ndarray | None = None) -> bytes:
    """Encode values given as ``codes`` into a string / binary ``dictionary`` (no nulls among
    the codes): the same ``BINARY_DICT`` blob :func:`encode_binary` writes when it chooses a
    dictionary, without finding the distinct values again. ``counts``: the occurrences of
    each dictionary entry among ``codes``, when the caller has them.

    With a ``key`` and a bulk write's memo (see :func:`~._encodings.encode_fixed`), the codes'
    cascade mode and codec are chosen on the stream's first page and reused for the next
    :data:`~._enc_policy.REUSE` pages, and the encoded dictionary is reused by the pages that
    use all of it.
    """
    k = len(dictionary)
    codes = np.asarray(codes)
    whole = True
    if k > _WHOLE_DICTIONARY:
        used = np.flatnonzero(np.bincount(codes, minlength=k) if counts is None else counts)
        whole = len(used) == k
        if len(used) < k:
            remap = np.zeros(k, dtype=CODE_DTYPE)
            remap[used] = np.arange(len(used), dtype=CODE_DTYPE)
            codes = remap[codes]
            dictionary = dictionary.take(pa.array(used))
            k = len(used)
    codes = codes.astype(CODE_DTYPE, copy=False)
    t = dictionary.type
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    bufs = dictionary.buffers()
    offs = np.frombuffer(bufs[1], np.int64 if large else np.int32, k + 1, dictionary.offset * (8 if large else 4))
    data = np.frombuffer(bufs[2], _U8) if bufs[2] is not None else np.empty(0, _U8)
    data = data[int(offs[0]) : int(offs[-1])]
    if not _policy().cascades:  # plain values, as encode_binary writes them under this policy
        vals = dictionary.take(pa.array(codes))
        vo = np.frombuffer(vals.buffers()[1], np.int64 if large else np.int32, len(vals) + 1).astype(_I64)
        vdata = np.frombuffer(vals.buffers()[2], _U8) if vals.buffers()[2] is not None else np.empty(0, _U8)
        return _encode_plain(np.diff(vo), vdata[int(vo[0]) : int(vo[-1])], MODE_BITPACK, cascades=False)
    memo = _policy().memo if key is not None else None
    # pages that use every entry of one dictionary (labels) share its encoded form
    dkey = (key, "dictionary", dictionary_key(memo, dictionary)) if memo is not None and whole else None
    head = memo.get(dkey) if memo is not None and dkey is not None else None
    if head is None:
        dblob = _encode_plain(np.diff(offs.astype(_I64)), data, MODE_BITPACK)
        head = NESTED_HDR.pack(BINARY_DICT, k, len(dblob)) + dblob
        if memo is not None and dkey is not None:
            memo[dkey] = head
    entry = memo.get(key) if memo is not None else None
    if entry is not None and entry[4] > 0:
        _, mode, codec, level, left, recipe = entry
        assert memo is not None
        memo[key] = (entry[0], mode, codec, level, left - 1, recipe)
        cblob = (encode_recipe(codes, recipe, 1, mode | NO_DICT) if recipe is not None
                 else encode_candidates(codes, 1, mode | NO_DICT)[0])
        return compress_if_it_pays(head + cblob, codec, level)
    cblobs = [encode_candidates(codes, 1, mode | NO_DICT)[0] for mode in _CODE_MODES]
    i, codec, level, blob = choose_codec_blob([head + c for c in cblobs])
    if memo is not None:
        memo[key] = ("dictionary", _CODE_MODES[i], codec, level, REUSE, recipe_of(cblobs[i]))
    return blob


def _sub(mv: memoryview, start: int, length: int) -> memoryview:
    if start + length > len(mv):
        raise FormatEOFError("encoded child runs past the end of its blob")
    return mv[start : start + length]


def _head(mv: memoryview, hdr: struct.Struct) -> tuple[Any, ...]:
    if len(mv) < hdr.size:
        raise FormatEOFError("encoded block header is truncated")
    return hdr.unpack_from(mv, 0)


def _blob_id(mv: memoryview, depth: int) -> int:
    """The encoding id of a blob, refusing runaway nesting and empty blobs."""
    if depth > MAX_NESTING:
        raise InvalidFileError("encoded blob nests too deeply")
    if len(mv) < 1:
        raise FormatEOFError("empty encoded blob")
    return int(mv[0])


class RegularOffsets(np.ndarray):
    """Offsets ``0, w, 2w, ...`` of values of one length ``width`` (made by :meth:`of`): a
    reader may skip checking them. Any array derived from one (a slice, a sum) has no
    ``width``."""

    width: int | None = None

    @classmethod
    def of(cls, offsets: np.ndarray, width: int) -> RegularOffsets:
        out = offsets.view(cls)
        out.width = width
        return out

    def __array_finalize__(self, obj: Any) -> None:
        self.width = None


def regular_width(offsets: Any) -> int | None:
    """The common length of the values whose offsets are ``offsets`` when they are known to be
    regular (:class:`RegularOffsets`), else None."""
    return offsets.width if isinstance(offsets, RegularOffsets) else None


def decode_binary(
    mv: memoryview, count: int, depth: int, fixed: FixedDecoder, offsets_dtype: np.dtype = _I64
) -> tuple[np.ndarray, np.ndarray]:
    """Decode a binary blob into (int64 offsets from 0, uint8 data).

    With ``offsets_dtype`` int32 a dictionary blob may return int32 offsets directly (when
    they cannot overflow); the caller converts any others.

    Parameters
    ----------
    mv : memoryview
        The blob, exact bounds.
    count : int
        Number of values.
    depth : int
        Nesting depth (bounded by ``MAX_NESTING``).
    fixed : callable
        The fixed-width decoder ``(mv, dtype, count, out, depth)``.

    Returns
    -------
    tuple of numpy.ndarray
        ``(offsets, data)``.
    """
    eid = _blob_id(mv, depth)
    if eid == BINARY_PLAIN:
        (_, lw, data_len, llen) = _head(mv, BINARY_HDR)
        if lw not in (4, 8):
            raise InvalidFileError(f"bad length width {lw}")
        data_off = BINARY_HDR.size + llen
        if len(mv) != data_off + data_len:
            raise FormatEOFError("binary data length does not match the blob size")
        if llen == 1 + lw and count and mv[BINARY_HDR.size] == CONSTANT:
            # values of one length (a dictionary of tickers, codes...): offsets without lengths
            width = int(np.frombuffer(mv, dtype=f"<u{lw}", count=1, offset=BINARY_HDR.size + 1)[0])
            if width * count != data_len:
                raise InvalidFileError("value lengths do not add up to the data length")
            offsets = np.arange(count + 1, dtype=_I64)
            if width != 1:
                np.multiply(offsets, width, out=offsets)
            return RegularOffsets.of(offsets, width), np.frombuffer(mv, dtype=_U8, count=data_len, offset=data_off)
        lengths = empty(count, f"<u{lw}")
        fixed(_sub(mv, BINARY_HDR.size, llen), lengths.dtype, count, lengths, depth + 1)
        offsets = empty(count + 1, _I64)
        offsets[0] = 0
        if count:
            if int(lengths.max()) > data_len:
                raise InvalidFileError("value length exceeds the data")
            np.cumsum(lengths.astype(_I64), out=offsets[1:])
        if int(offsets[-1]) != data_len:
            raise InvalidFileError("value lengths do not add up to the data length")
        return offsets, np.frombuffer(mv, dtype=_U8, count=data_len, offset=data_off)
    if eid == BINARY_DICT:
        (_, size, dlen) = _head(mv, NESTED_HDR)
        if size > count or (size == 0) != (count == 0):
            raise InvalidFileError(f"dictionary of {size} entries for {count} values")
        d_off, d_data = decode_binary(_sub(mv, NESTED_HDR.size, dlen), size, depth + 1, fixed)
        # the codes are a temporary: a reused scratch buffer spares the page faults of a
        # fresh one (the dictionary above was decoded before, and _gather copies out of it)
        codes = _temp("codes", (count,), CODE_DTYPE)
        fixed(mv[NESTED_HDR.size + dlen :], CODE_DTYPE, count, codes, depth + 1)
        if count == 0:
            return np.zeros(1, dtype=_I64), np.empty(0, dtype=_U8)
        if int(codes.max()) >= size:
            raise InvalidFileError("dictionary code out of range")
        return _gather(d_off, d_data, codes, np.dtype(offsets_dtype))
    if eid in (ZSTD, LZ4):
        (_, raw_len) = _head(mv, CODEC_HDR)
        frame = mv[CODEC_HDR.size :]
        if raw_len > 64 + 16 * count + _MAX_RATIO * len(frame):
            raise InvalidFileError("compressed block claims an implausible size")
        return decode_binary(
            decompress(eid, frame, raw_len), count, depth + 1, fixed, offsets_dtype
        )
    raise InvalidFileError(f"unknown or misplaced binary encoding id {eid}")


def decode_binary_codes(
    mv: memoryview, count: int, depth: int, fixed: FixedDecoder
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """Decode a binary blob, keeping a ``binary-dict`` blob as codes + dictionary.

    Same checks as :func:`decode_binary`; a ZSTD/LZ4 wrapper is removed first.

    Returns
    -------
    tuple
        ``(codes, offsets, data)``: for a ``binary-dict`` blob, ``count`` uint32 codes (all
        below the dictionary size) and the dictionary's int64 offsets (from 0) and uint8 data;
        for any other blob, ``None`` and the values' offsets and data (as
        :func:`decode_binary`).
    """
    codes, offsets, data = decode_binary_lazy(mv, count, depth, fixed)
    return (None if codes is None else codes()), offsets, data


def decode_binary_lazy(
    mv: memoryview, count: int, depth: int, fixed: FixedDecoder
) -> tuple[Callable[..., np.ndarray] | None, np.ndarray, np.ndarray]:
    """As :func:`decode_binary_codes`, but the codes of a ``binary-dict`` blob are decoded only
    when the returned function is called (a filter whose value is not in the dictionary never
    needs them), all of them or, given ``rows`` (page rows, int64), only those. The function
    reads ``mv``: call it while ``mv`` is valid."""
    eid = _blob_id(mv, depth)
    if eid == BINARY_DICT:
        (_, size, dlen) = _head(mv, NESTED_HDR)
        if size > count or (size == 0) != (count == 0):
            raise InvalidFileError(f"dictionary of {size} entries for {count} values")
        d_off, d_data = decode_binary(_sub(mv, NESTED_HDR.size, dlen), size, depth + 1, fixed)
        rest = mv[NESTED_HDR.size + dlen :]

        def codes(rows: np.ndarray | None = None) -> np.ndarray:
            if rows is not None:  # only these codes, gathered where the encoding allows
                out = gather_fixed(rest, CODE_DTYPE, count, rows)
                if out is None:
                    return codes()[rows]
                if len(out) and int(out.max()) >= size:
                    raise InvalidFileError("dictionary code out of range")
                return out
            out = _narrow_codes(rest, count)
            if out is None:
                out = empty(count, CODE_DTYPE)
                fixed(rest, CODE_DTYPE, count, out, depth + 1)
            if count and int(out.max()) >= size:
                raise InvalidFileError("dictionary code out of range")
            return out
        return codes, d_off, d_data
    if eid in (ZSTD, LZ4):
        (_, raw_len) = _head(mv, CODEC_HDR)
        frame = mv[CODEC_HDR.size :]
        if raw_len > 64 + 16 * count + _MAX_RATIO * len(frame):
            raise InvalidFileError("compressed block claims an implausible size")
        return decode_binary_lazy(decompress(eid, frame, raw_len), count, depth + 1, fixed)
    offsets, data = decode_binary(mv, count, depth, fixed)
    return None, offsets, data


def _narrow_codes(mv: memoryview, count: int) -> np.ndarray | None:
    """Codes bit-packed in at most 16 bits (dictionaries of up to 65,536 values), unpacked
    straight into uint16 (half the bytes of the usual uint32, no widening pass); None for any
    other encoding of the codes."""
    if len(mv) < FOR_HDR.size or mv[0] != BITPACK:
        return None
    (_, width, base, factor) = FOR_HDR.unpack_from(mv, 0)
    if not 0 < width <= 16 or base != 0 or factor != 1:
        return None
    words = packed_words(count, width)
    if len(mv) != FOR_HDR.size + 8 * words:
        raise InvalidFileError("bit-packed block size does not match its value count")
    packed = np.frombuffer(mv, dtype=np.uint64, count=words, offset=FOR_HDR.size)
    if not packed.flags.aligned:
        packed = packed.copy()
    if width in (1, 2, 4, 8, 16) or not count or _kernels.NATIVE is not None:  # (native: any width, one pass)
        out = np.empty(count, dtype=np.uint16)
        unpack_into(packed.reshape(width, -1), count, width, out, 0, 1)
        return out
    return unpack_u16(packed.reshape(width, -1), count, width)


_I32_MAX = int(np.iinfo(np.int32).max)
#: Fixed-width gathers of these value lengths use a native integer dtype (others a void one).
_WORD: dict[int, np.dtype[Any]] = {
    1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)
}


def _gather(
    d_off: np.ndarray, d_data: np.ndarray, codes: np.ndarray, odt: np.dtype
) -> tuple[np.ndarray, np.ndarray]:
    """Values ``codes`` (all below the dictionary size) of a dictionary given as int64 offsets
    from 0 + data: ``(offsets from 0, data)``, the offsets in ``odt`` (int32 or int64) when
    they fit it (int64 otherwise).

    A dictionary of equal-length values (codes, tickers, ...) is one fixed-width numpy take;
    otherwise Arrow's ``take`` (the codes are in range, so without its bounds check)."""
    count = len(codes)
    if count * 16 <= len(d_off):
        # a few values of a large dictionary: their lengths only, not every entry's
        c = codes.astype(np.int64, copy=False)
        starts = d_off[c]
        sizes = d_off[c + 1] - starts
        offs = np.empty(count + 1, dtype=_I64)
        offs[0] = 0
        np.cumsum(sizes, out=offs[1:])
        total = int(offs[-1])
        at = np.repeat(starts - offs[:-1], sizes) + np.arange(total, dtype=np.int64)
        data = np.asarray(d_data)[at]
        return (offs.astype(odt) if odt.itemsize == 4 and total <= _I32_MAX else offs), data
    lens = np.diff(d_off)
    width = int(lens[0])
    narrow = odt.itemsize == 4 and count * int(lens.max()) <= _I32_MAX
    if (lens == width).all():
        if width == 0:
            return np.zeros(count + 1, dtype=odt if narrow else _I64), np.empty(0, dtype=_U8)
        offsets = np.arange(count + 1, dtype=odt if narrow else _I64)
        np.multiply(offsets, width, out=offsets)
        word = _WORD.get(width, np.dtype(f"V{width}"))
        out = empty(count, word)
        np.take(np.ascontiguousarray(d_data).view(word), codes, out=out, mode="clip")
        return offsets, out.view(_U8)
    ot: np.dtype[Any]
    if narrow:  # 32-bit offsets straight from Arrow: no conversion pass
        atype, ot, d_off = pa.binary(), np.dtype(np.int32), d_off.astype(np.int32)
    else:
        atype, ot = pa.large_binary(), _I64
    darr = pa.Array.from_buffers(
        atype, len(lens), [None, pa.py_buffer(d_off), pa.py_buffer(d_data)]
    )
    res = pc.take(darr, pa.array(codes), boundscheck=False)
    bufs = res.buffers()
    offsets = np.frombuffer(bufs[1], dtype=ot, count=count + 1, offset=ot.itemsize * res.offset)
    start = int(offsets[0])
    total = int(offsets[-1]) - start
    data = np.frombuffer(bufs[2], _U8) if bufs[2] is not None else np.empty(0, _U8)
    data = data[start : start + total]
    return (offsets - start if start else offsets), data


def describe_plain(mv: memoryview, depth: int, describe: Describer) -> str:
    """Describe a ``binary`` blob: ``"binary(lengths=...)"``."""
    (_, _lw, _data_len, llen) = _head(mv, BINARY_HDR)
    return f"binary(lengths={describe(_sub(mv, BINARY_HDR.size, llen), depth + 1)})"
