"""A few values of a fixed-width blob, without decoding the whole blob where its encoding allows.

Late materialisation (:mod:`arcticlite.format._late`) takes a handful of rows of each column
of a page: decoding the whole page for them (a delta blob is a prefix sum over all its values,
a bit-packed one an unpacking of all of them) costs as much as reading the page. Here:

- ``plain``: the values at the rows, straight from the bytes;
- ``constant``: the value, repeated;
- ``bitpack`` (frame of reference + bit-packing, lane layout of :mod:`._enc_bitpack`): each
  value's bits gathered from its one or two 64-bit words;
- ``delta`` over a ``constant`` (an arithmetic sequence: a regular index, a row id):
  ``first + row * step``;
- ``dict``: the codes at the rows (recursively), then the dictionary's values for them;
- ``zstd`` / ``lz4``: decompressed, then as the blob inside.

Anything else (``rle``, ``decimal``, other ``delta`` blobs, …) returns None and the caller
decodes the page whole. Values wrap exactly as the full decoder's (modular integer arithmetic),
so a gather equals the full decode at the same rows.
"""

from __future__ import annotations

import numpy as np

from arcticlite.exceptions import CorruptDataError, FormatEOFError, InvalidFileError
from arcticlite.format._enc_bitpack import packed_words
from arcticlite.format._enc_spec import (
    BITPACK,
    CODE_DTYPE,
    CODEC_HDR,
    CONSTANT,
    DELTA,
    DELTA_HDR,
    DICT,
    FOR_HDR,
    LZ4,
    MAX_NESTING,
    NARROW,
    NESTED_HDR,
    PLAIN,
    SPLIT,
    U64,
    ZSTD,
    signed_of,
    unsigned_of,
)
from arcticlite.format._enc_wrap import decompress

_U64 = np.dtype(np.uint64)


def gather_fixed(mv: memoryview, dtype: np.dtype, count: int, rows: np.ndarray) -> np.ndarray | None:
    """Values ``rows`` (int64, each in ``[0, count)``) of the fixed-width blob ``mv`` of
    ``count`` values of ``dtype`` (a numeric numpy dtype; datetimes as their int64 view), or
    None when the blob's encoding needs a whole decode (the caller then decodes the page).

    Raises
    ------
    CorruptDataError
        When the blob is truncated or inconsistent (as the full decoder would).
    """
    try:
        return _gather(mv, np.dtype(dtype), count, rows, 0)
    except CorruptDataError:
        raise
    except (ValueError, IndexError, TypeError, OverflowError) as exc:
        raise InvalidFileError(f"corrupt encoded block: {exc}") from exc


def take_values(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``values[rows]`` (1-D): a view of a plain page's bytes is rarely aligned (its values
    follow a one-byte header), and numpy copies a whole unaligned array to take from it; its
    bytes are gathered instead (a few rows of an 800 KB page: 1.5 µs instead of 27 µs)."""
    if values.flags.aligned or not values.flags.c_contiguous or not len(rows):
        return values.take(rows)
    raw = values.view(np.uint8).reshape(len(values), values.dtype.itemsize)
    return raw[rows].view(values.dtype).reshape(len(rows))


def _plain(mv: memoryview, dtype: np.dtype, count: int) -> np.ndarray:
    """The values of a ``plain`` blob, a view of its bytes."""
    if len(mv) != 1 + count * dtype.itemsize:
        raise InvalidFileError("plain block size does not match its value count")
    return np.frombuffer(mv, dtype=dtype, count=count, offset=1)


def _inflate(mv: memoryview, eid: int, nbytes: int) -> memoryview:
    """The blob inside a ``zstd`` / ``lz4`` blob of values taking ``nbytes``."""
    (_, raw_len) = CODEC_HDR.unpack_from(mv, 0)
    if raw_len > 1 + nbytes:
        raise InvalidFileError("compressed block claims more bytes than its values need")
    return decompress(eid, mv[CODEC_HDR.size :], raw_len)


def _gather(mv: memoryview, dtype: np.dtype, count: int, rows: np.ndarray, depth: int) -> np.ndarray | None:
    if depth > 8 or depth > MAX_NESTING:
        return None
    if len(mv) < 1:
        raise FormatEOFError("empty encoded blob")
    eid = mv[0]
    isz = dtype.itemsize
    if eid == PLAIN:
        return take_values(_plain(mv, dtype, count), rows)
    if eid in (ZSTD, LZ4):
        return _gather(_inflate(mv, eid, count * isz), dtype, count, rows, depth + 1)
    work = unsigned_of(dtype) if dtype.kind == "f" else dtype
    if eid == CONSTANT:
        if len(mv) != 1 + isz:
            raise InvalidFileError("constant block size does not match its value width")
        v = np.frombuffer(mv, dtype=work, count=1, offset=1)[0]
        return np.full(len(rows), v, dtype=work).view(dtype)
    if eid == BITPACK:
        return _gather_bitpack(mv, work, count, rows).view(dtype)
    if eid in (NARROW, SPLIT):
        return _gather_narrow(mv, eid, work, count, rows).view(dtype)
    if eid == DELTA:
        if count < 1:
            raise InvalidFileError("delta block of zero values")
        (_, first) = DELTA_HDR.unpack_from(mv, 0)
        child = mv[DELTA_HDR.size :]
        if len(child) < 1 or child[0] != CONSTANT or count < 2:
            return None
        sd = signed_of(work)
        if len(child) != 1 + isz:
            raise InvalidFileError("constant block size does not match its value width")
        step = np.frombuffer(child, dtype=sd, count=1, offset=1)[0]
        f0 = np.array([first], dtype=U64).view(np.int64).astype(sd)[0]
        with np.errstate(over="ignore"):
            vals = rows.astype(sd) * step + f0  # wraps as the prefix sum does
        return vals.astype(sd, copy=False).view(work).view(dtype)
    if eid == DICT:
        (_, size, first_len) = NESTED_HDR.unpack_from(mv, 0)
        if size > count or (size == 0) != (count == 0):
            raise InvalidFileError(f"dict block of {size} entries for {count} values")
        if NESTED_HDR.size + first_len > len(mv):
            raise FormatEOFError("encoded child runs past the end of its blob")
        # the dictionary itself: every entry, gathered the same way (small)
        values = _gather(mv[NESTED_HDR.size : NESTED_HDR.size + first_len], work, size,
                         np.arange(size, dtype=np.int64), depth + 1)
        if values is None:
            return None
        codes = _gather(mv[NESTED_HDR.size + first_len :], np.dtype(CODE_DTYPE), count, rows, depth + 1)
        if codes is None:
            return None
        if len(codes) and int(codes.max()) >= size:
            raise InvalidFileError("dictionary code out of range")
        return values.take(codes.astype(np.int64)).view(dtype)
    return None


def _gather_bitpack(mv: memoryview, work: np.dtype, count: int, rows: np.ndarray) -> np.ndarray:
    (_, width, base, factor) = FOR_HDR.unpack_from(mv, 0)
    if width > 64:
        raise InvalidFileError(f"bit width {width} > 64")
    words = packed_words(count, width)
    if len(mv) != FOR_HDR.size + 8 * words:
        raise InvalidFileError("bit-packed block size does not match its value count")
    ud = unsigned_of(work)
    if width == 0:
        return np.full(len(rows), np.uint64(base), dtype=_U64).astype(ud).view(work)
    lanes = -(-count // 64)
    packed = np.frombuffer(mv, dtype=_U64, count=words, offset=FOR_HDR.size)
    r = rows.astype(np.int64, copy=False)
    bit = (r // lanes) * width
    lane = r % lanes
    word = bit >> 6
    shift = (bit & 63).astype(_U64)
    lo = packed[word * lanes + lane] >> shift
    spill = (shift + np.uint64(width)) > np.uint64(64)
    if spill.any():
        nxt = np.minimum(word + 1, width - 1) * lanes + lane
        hi = np.where(spill, packed[nxt] << (np.uint64(64) - np.where(spill, shift, np.uint64(1))), np.uint64(0))
        lo = lo | hi
    if width < 64:
        lo &= np.uint64((1 << width) - 1)
    with np.errstate(over="ignore"):
        vals = lo * np.uint64(factor) + np.uint64(base)  # modular, as unpack_into
    return vals.astype(ud).view(work)


def _gather_narrow(mv: memoryview, eid: int, work: np.dtype, count: int, rows: np.ndarray) -> np.ndarray:
    (_, width, base, factor) = FOR_HDR.unpack_from(mv, 0)
    if width not in (1, 2, 4, 8):
        raise InvalidFileError(f"narrow width {width} bytes")
    if len(mv) != FOR_HDR.size + count * width:
        raise InvalidFileError("narrow block size does not match its value count")
    if eid == SPLIT:  # byte planes: byte k of every value, then byte k + 1 ...
        planes = np.frombuffer(mv, np.uint8, count * width, FOR_HDR.size).reshape(width, count)
        v = planes[0].take(rows).astype(_U64)
        for k in range(1, width):
            v |= planes[k].take(rows).astype(_U64) << np.uint64(8 * k)
    else:
        v = np.frombuffer(mv, np.dtype(f"<u{width}"), count, FOR_HDR.size).take(rows).astype(_U64)
    with np.errstate(over="ignore"):
        vals = v * np.uint64(factor) + np.uint64(base)
    return vals.astype(unsigned_of(work)).view(work)


def search_fixed(mv: memoryview, dtype: np.dtype, count: int, values: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray] | None:
    """How many of the ``count`` values of the fixed-width blob ``mv`` are less than, and how
    many at most, each of ``values`` (``np.searchsorted(blob, values, "left")`` and
    ``"right"``), for a blob whose values are sorted ascending: a signed integer ``dtype``
    (datetimes as their int64 view). None when the encoding needs a whole decode (the caller
    then decodes the page and searches it). Without a decode: a plain blob is searched in
    place, an arithmetic sequence (``delta`` over a ``constant``: a regular index) by
    arithmetic, and a blob whose values can be gathered one by one by a vectorised bisection
    (a few gathers of ``len(values)`` values each).

    Raises
    ------
    CorruptDataError
        When the blob is truncated or inconsistent (as the full decoder would).
    """
    if dtype.kind != "i" or count < 1:
        return None
    try:
        return _search(mv, dtype, count, np.asarray(values, dtype=dtype), 0)
    except (IndexError, ValueError) as exc:
        raise InvalidFileError(f"encoded blob is inconsistent: {exc}") from exc


def _search(mv: memoryview, dtype: np.dtype, count: int, values: np.ndarray, depth: int
            ) -> tuple[np.ndarray, np.ndarray] | None:
    if depth > 8 or depth > MAX_NESTING:
        return None
    if len(mv) < 1:
        raise FormatEOFError("empty encoded blob")
    eid = mv[0]
    isz = dtype.itemsize
    if eid == PLAIN:
        v = _plain(mv, dtype, count)
        return np.searchsorted(v, values, "left"), np.searchsorted(v, values, "right")
    if eid in (ZSTD, LZ4):
        return _search(_inflate(mv, eid, count * isz), dtype, count, values, depth + 1)
    if eid == DELTA:
        (_, first) = DELTA_HDR.unpack_from(mv, 0)
        child = mv[DELTA_HDR.size :]
        if len(child) < 1 or child[0] != CONSTANT:
            return None  # an irregular sequence: its values are a prefix sum
        if len(child) != 1 + isz:
            raise InvalidFileError("constant block size does not match its value width")
        step = int(np.frombuffer(child, dtype=dtype, count=1, offset=1)[0])
        f0 = int(np.array([first], dtype=U64).view(np.int64).astype(dtype)[0])
        last = f0 + (count - 1) * step
        info = np.iinfo(dtype)
        if step < 0 or last > info.max:
            return None  # not ascending, or wrapping: the decoder's modular values
        return search_arithmetic(f0, step, count, values)
    if eid in (CONSTANT, BITPACK, NARROW, SPLIT, DICT):
        left = _bisect(mv, dtype, count, values, "left", depth)
        if left is None:
            return None
        right = _bisect(mv, dtype, count, values, "right", depth)
        return None if right is None else (left, right)
    return None


def search_arithmetic(first: int, step: int, count: int, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.searchsorted`` "left" and "right" of int64 ``values`` in the ``count`` values
    ``first + k * step`` (``step >= 0``, the last one within int64), by arithmetic."""
    last = first + (count - 1) * step
    n = np.int64(count)
    below, above = values < first, values > last
    d = np.clip(values, first, last).astype(np.int64) - np.int64(first)  # in [0, last - first]: no overflow
    if step == 0:
        lo, hi = np.zeros(len(values), np.int64), np.full(len(values), n)
    else:
        lo, hi = (d + (step - 1)) // step, d // step + 1
    lo = np.where(below, 0, np.where(above, n, lo))
    hi = np.where(below, 0, np.where(above, n, hi))
    return lo.astype(np.int64), hi.astype(np.int64)


def _bisect(mv: memoryview, dtype: np.dtype, count: int, values: np.ndarray, side: str, depth: int
            ) -> np.ndarray | None:
    """``np.searchsorted`` over a sorted blob whose values gather one by one."""
    lo = np.zeros(len(values), dtype=np.int64)
    hi = np.full(len(values), count, dtype=np.int64)
    while True:
        active = np.flatnonzero(lo < hi)
        if not len(active):
            return lo
        mid = (lo[active] + hi[active]) // 2
        got = _gather(mv, dtype, count, mid, depth)
        if got is None:
            return None
        go_right = got < values[active] if side == "left" else got <= values[active]
        lo[active] = np.where(go_right, mid + 1, lo[active])
        hi[active] = np.where(go_right, hi[active], mid)
