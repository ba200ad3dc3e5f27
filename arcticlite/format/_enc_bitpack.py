"""Bit-packing kernels for Fermion value encodings (lane layout).

Layout (see the byte-level spec in :mod:`arcticlite.format._encodings`): ``n`` values of ``w``
bits are split into ``L = ceil(n / 64)`` lanes. Value ``i = j * L + l`` is slot ``j`` of lane
``l``; slot ``j`` occupies bits ``j * w .. j * w + w - 1`` of the lane, counting from bit 0 of
the lane's first 64-bit word. The packed payload is a ``(w, L)`` little-endian ``uint64``
matrix stored row-major: word ``k`` of every lane, then word ``k + 1`` of every lane, and so on.
Padding slots (``i >= n``) are zero.

Packing and unpacking are whole-row numpy shifts over contiguous length-``L`` rows, so one
numpy call handles ``L`` values and the output comes out in natural order. Unpacking works in
the narrowest sub-word that keeps the shifts simple (bytes for widths 1/2/4, strided views for
8/16/32/64, 16-bit sub-words below 16 bits), then casts into the output once.
"""

from __future__ import annotations

import functools
import math
import threading
from typing import Any

import numpy as np

from arcticlite.format import _kernels

__all__ = ["bit_width", "pack", "packed_words", "unpack_into"]

_U8 = np.dtype(np.uint8)
_U64 = np.dtype(np.uint64)
#: Up to this many lanes, packing works on the whole (64, L) matrix at once.
_SMALL_PACK_LANES = 256


def bit_width(max_value: int) -> int:
    """Return the number of bits needed to store unsigned values up to ``max_value``.

    Parameters
    ----------
    max_value : int
        Largest value (non-negative Python int).

    Returns
    -------
    int
        ``max_value.bit_length()``, 0 for 0.
    """
    return int(max_value).bit_length()


def packed_words(n: int, width: int) -> int:
    """Return the number of ``uint64`` words of a packed block of ``n`` values.

    Parameters
    ----------
    n : int
        Value count.
    width : int
        Bit width, 0..64.

    Returns
    -------
    int
        ``width * ceil(n / 64)``.
    """
    return width * (-(-n // 64))


def pack(values: np.ndarray, width: int) -> np.ndarray:
    """Pack unsigned values into the lane layout.

    Parameters
    ----------
    values : numpy.ndarray
        1-D ``uint64`` array; every value must be below ``2 ** width``.
    width : int
        Bit width, 1..64.

    Returns
    -------
    numpy.ndarray
        ``(width, L)`` ``uint64`` matrix (C order).
    """
    if _kernels.NATIVE is not None and values.flags.c_contiguous:
        return pack_offsets(values, 0, width)
    return _pack_numpy(values, width)


def _pack_numpy(values: np.ndarray, width: int) -> np.ndarray:
    """:func:`pack` in numpy calls."""
    n = len(values)
    lanes = -(-n // 64)
    if width in (1, 2, 4) and lanes > _SMALL_PACK_LANES:  # narrowed to bytes while padded: one pass
        small = np.zeros(64 * lanes, dtype=_U8) if n != 64 * lanes else np.empty(n, dtype=_U8)
        small[:n] = values
        return _pack_bytes(small.reshape(64, lanes), width)
    if n != 64 * lanes:
        padded = np.zeros(64 * lanes, dtype=_U64)
        padded[:n] = values
        values = padded
    rows = values.reshape(64, lanes)
    if lanes <= _SMALL_PACK_LANES:
        return _pack_matrix(rows, width)
    if width <= 32 or width == 64:
        return _pack_words(rows, width)
    packed = np.zeros((width, lanes), dtype=_U64)
    tmp = np.empty(lanes, dtype=_U64)
    for j in range(64):
        word, shift = divmod(j * width, 64)
        if shift:
            np.left_shift(rows[j], shift, out=tmp)
            packed[word] |= tmp
        else:
            packed[word] |= rows[j]
        if shift + width > 64:
            np.right_shift(rows[j], 64 - shift, out=tmp)
            packed[word + 1] |= tmp
    return packed


def pack_offsets(values: np.ndarray, base: int, width: int) -> np.ndarray:
    """Pack ``(values - base)`` (modulo ``2 ** (8 * itemsize)``) into the lane layout: the
    frame of reference applied while packing, in one pass when the native kernels are built.

    Parameters
    ----------
    values : numpy.ndarray
        1-D C-contiguous integer array (any width, signed or not).
    base : int
        Frame of reference, as an unsigned pattern of the values' width.
    width : int
        Bit width, 1..64; every offset must be below ``2 ** width``.

    Returns
    -------
    numpy.ndarray
        ``(width, L)`` ``uint64`` matrix (C order).
    """
    native = _kernels.NATIVE
    lanes = -(-len(values) // 64)
    if native is not None and values.flags.c_contiguous:
        out = np.empty((width, lanes), dtype=_U64)
        native.encode_for(values, values.dtype.itemsize, base & _MASK64, 1, 0, width, out)
        return out
    ud = np.dtype(f"<u{values.dtype.itemsize}")
    bits = 8 * values.dtype.itemsize
    r = values.view(ud) - np.array(base & ((1 << bits) - 1), dtype=ud) if base else values.view(ud)
    return _pack_numpy(np.ascontiguousarray(r, dtype=_U64), width)


_MASK64 = _kernels.MASK64


def _pack_bytes(rows: np.ndarray, width: int) -> np.ndarray:
    """Pack a ``(64, L)`` ``uint8`` slot matrix of widths 1, 2 or 4 a byte at a time: byte ``b`` of word
    ``k`` holds slots ``k * 64 / width + b * 8 / width + t`` at bit ``t * width``, so the
    values are narrowed to bytes, OR-ed ``8 / width`` at a time, and the bytes laid out
    little-endian into the words (a few operations on byte arrays an eighth of the size)."""
    per = 8 // width
    lanes = rows.shape[1]
    slots = rows.reshape(width, 8, per, lanes)  # [word, byte, slot in byte, lane]
    out = slots[:, :, 0].copy()
    for t in range(1, per):
        out |= slots[:, :, t] << np.uint8(t * width)
    # [word, byte, lane] -> [word, lane, byte]: each lane's word, its bytes in order
    return np.ascontiguousarray(out.transpose(0, 2, 1)).view(_U64).reshape(width, lanes)


def _pack_words(rows: np.ndarray, width: int) -> np.ndarray:
    """Pack a ``(64, L)`` slot matrix word by word: the slots starting in each word are
    shifted in one operation and OR-reduced in one, then the spilled high bits are added (one
    operation per word instead of two or three per slot: fewer, larger numpy calls)."""
    words, shifts = _slots(width)
    shifted = np.left_shift(rows, shifts[:, None]) if width < 64 else rows
    firsts = np.searchsorted(words, np.arange(width + 1)).tolist()
    packed = np.empty((width, rows.shape[1]), dtype=_U64)
    for k in range(width):
        a, b = firsts[k], firsts[k + 1]
        if b - a == 1:
            packed[k] = shifted[a]
        else:
            np.bitwise_or.reduce(shifted[a:b], axis=0, out=packed[k])
    _add_spills(packed, rows, words, shifts, width)
    return packed


def _slots(width: int) -> tuple[np.ndarray, np.ndarray]:
    """For each of the 64 slots of a lane: the word it starts in and its shift there."""
    slot_bits = np.arange(64, dtype=np.int64) * width
    return slot_bits >> 6, (slot_bits & 63).astype(_U64)


def _add_spills(packed: np.ndarray, rows: np.ndarray, words: np.ndarray, shifts: np.ndarray, width: int) -> None:
    """OR into ``packed`` the high bits of the slots that run past the end of their word."""
    spill = np.flatnonzero(shifts + np.uint64(width) > 64)
    if len(spill):
        # at most one slot spills into each word, so the fancy-indexed OR is safe
        packed[words[spill] + 1] |= rows[spill] >> (np.uint64(64) - shifts[spill])[:, None]


def _pack_matrix(rows: np.ndarray, width: int) -> np.ndarray:
    """Pack a ``(64, L)`` slot matrix with whole-matrix operations (few lanes)."""
    words, shifts = _slots(width)
    shifted = np.left_shift(rows, shifts[:, None])
    # every word holds the start of at least one slot (width <= 64): OR-reduce per word
    firsts = np.searchsorted(words, np.arange(width))
    packed = np.bitwise_or.reduceat(shifted, firsts, axis=0)
    _add_spills(packed, rows, words, shifts, width)
    return packed


def unpack_into(
    packed: np.ndarray,
    n: int,
    width: int,
    out_u: np.ndarray,
    base: int,
    factor: int,
) -> None:
    """Unpack a lane-layout block, computing ``out_u = base + factor * value`` (modular).

    The values are extracted in the narrowest unsigned dtype that holds ``width`` bits (a
    strided view for widths 8/16/32/64; in-byte shifts for widths 1/2/4; for other widths,
    whole-row shifts over 16-bit sub-words when ``width < 16`` and 64-bit words otherwise),
    then written into ``out_u`` by one cast copy plus in-place multiply/add in the output
    dtype.

    Parameters
    ----------
    packed : numpy.ndarray
        ``(width, L)`` ``uint64`` matrix with ``L = ceil(n / 64)``.
    n : int
        Number of values to produce.
    width : int
        Bit width, 1..64.
    out_u : numpy.ndarray
        Unsigned integer output of length ``n`` (any unsigned width; results wrap).
    base : int
        Frame of reference, as an unsigned 64-bit pattern.
    factor : int
        Multiplier (1 for none), as an unsigned 64-bit pattern.
    """
    if n == 0:
        return
    native = _kernels.NATIVE
    if (native is not None and out_u.flags.c_contiguous and packed.flags.c_contiguous
            and packed.flags.aligned):
        native.unpack(packed, n, width, out_u, out_u.dtype.itemsize, base & _MASK64, factor & _MASK64)
        return
    if not out_u.flags.c_contiguous:
        tmp = np.empty(n, dtype=out_u.dtype)
        unpack_into(packed, n, width, tmp, base, factor)
        out_u[...] = tmp
        return
    lanes = packed.shape[1]
    if width in (8, 16, 32, 64):
        # whole bytes: slot j is element j % per of word j // per, a strided view
        per = 64 // width
        vals = packed.view(_UINT[width // 8]).reshape(width, lanes, per).transpose(0, 2, 1)
        _emit(vals, n, out_u, base, factor)
        return
    if width in (1, 2, 4):
        per = 8 // width
        # byte b of word k of every lane as contiguous rows, then one shift per in-byte slot
        planes = _temp("sub", (width, 8, lanes), _U8)
        np.copyto(planes, packed.view(_U8).reshape(width, lanes, 8).transpose(0, 2, 1))
        small = _temp("vals", (width, 8, per, lanes), _U8)
        for t in range(per):
            np.right_shift(planes, t * width, out=small[:, :, t, :])
        np.bitwise_and(small, (1 << width) - 1, out=small)
        small, base, factor = _fold(small, width, base, factor, out_u.dtype)
        _emit(small.reshape(64, 1, lanes), n, out_u, base, factor)
        return
    if width < 16:
        # 16-bit sub-words: 4x less data per pass than 64-bit words
        sub = _temp("sub", (width, 4, lanes), _U16)
        np.copyto(sub, packed.view(_U16).reshape(width, lanes, 4).transpose(0, 2, 1))
        vals = _shift_rows(sub.reshape(4 * width, lanes), width, 16, _temp("vals", (64, lanes), _U16))
        vals, base, factor = _fold(vals, width, base, factor, out_u.dtype)
        _emit(vals.reshape(64, 1, lanes), n, out_u, base, factor)
        return
    full = n // lanes
    if out_u.dtype == _U64 and full:
        # 64-bit words straight into the output rows, then the last (partial) row
        head = out_u[: full * lanes]
        _shift_rows(packed, width, 64, head.reshape(full, lanes), rows=(0, full))
        _affine(head, head, base, factor)
        if full * lanes < n:
            last = _shift_rows(packed, width, 64, _temp("vals", (1, lanes), _U64), rows=(full, full + 1))
            _affine(last[0, : n - full * lanes], out_u[full * lanes :], base, factor)
        return
    vals = _shift_rows(packed, width, 64, _temp("vals", (64, lanes), _U64))
    _emit(vals.reshape(64, 1, lanes), n, out_u, base, factor)


def unpack_u16(packed: np.ndarray, n: int, width: int) -> np.ndarray:
    """The first ``n`` values of a lane-layout block of ``width`` bits (below 16, not 1, 2, 4
    or 8), without frame of reference, as a fresh ``uint16`` array: the slots are unpacked
    straight into the array's memory (one ``(64, L)`` block in slot order, which is the
    values' order), saving :func:`unpack_into`'s copy into an output of exactly ``n``."""
    lanes = packed.shape[1]
    sub = _temp("sub", (width, 4, lanes), _U16)
    np.copyto(sub, packed.view(_U16).reshape(width, lanes, 4).transpose(0, 2, 1))
    out = np.empty((64, lanes), dtype=_U16)
    _shift_rows(sub.reshape(4 * width, lanes), width, 16, out)
    return out.reshape(-1)[:n]


_U16 = np.dtype(np.uint16)
_UINT: dict[int, np.dtype[Any]] = {1: _U8, 2: _U16, 4: np.dtype(np.uint32), 8: _U64}

#: Per-thread scratch buffers of the unpacking temporaries, reused from call to call: freshly
#: allocated ones of this size are often returned to the OS by ``free`` and page-faulted in
#: again, which can cost more than the unpacking itself.
_SCRATCH = threading.local()
#: Temporaries larger than this are allocated per call instead.
_SCRATCH_MAX = 1 << 22


def _temp(key: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A C-contiguous array of ``shape``/``dtype`` over this thread's scratch buffer ``key``
    (contents undefined; valid until the next ``_temp`` call with the same key)."""
    nbytes = dtype.itemsize * math.prod(shape)  # (numpy.prod of a tuple costs a few µs)
    if nbytes > _SCRATCH_MAX:
        return np.empty(shape, dtype=dtype)
    buf = getattr(_SCRATCH, key, None)
    if buf is None or len(buf) < nbytes:
        buf = np.empty(max(nbytes, 1 << 16), dtype=_U8)
        setattr(_SCRATCH, key, buf)
    return buf[:nbytes].view(dtype).reshape(shape)


#: Up to this many lanes, the per-slot shift counts are cached as whole (64, L) matrices
#: (numpy shifts by a broadcast column are several times slower than by a full matrix).
_PLAN_LANES = 1024


@functools.lru_cache(maxsize=8)
def _shift_plan(
    width: int, bits: int, lanes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sub-word, right shift, next sub-word, left shift and spill flag of each of the 64 slots
    (the shifts as read-only ``(64, lanes)`` matrices, or ``(64, 1)`` columns beyond
    ``_PLAN_LANES``)."""
    dt = _UINT[bits // 8]
    slot_bits = np.arange(64, dtype=np.int64) * width
    words, shifts = slot_bits // bits, slot_bits % bits
    nxt = np.minimum(words + 1, width * 64 // bits - 1)
    # a slot that does not spill gets only bits at or above ``width`` from the next sub-word
    lshifts = np.minimum(bits - shifts, bits - 1)
    cols = lanes if lanes <= _PLAN_LANES else 1
    rsh = np.empty((64, cols), dtype=dt)
    rsh[...] = shifts.astype(dt)[:, None]
    lsh = np.empty((64, cols), dtype=dt)
    lsh[...] = lshifts.astype(dt)[:, None]
    spill = shifts + width > bits
    for a in (words, nxt, rsh, lsh, spill):
        a.flags.writeable = False
    return words, rsh, nxt, lsh, spill


def _shift_rows(
    sub: np.ndarray,
    width: int,
    bits: int,
    out: np.ndarray,
    rows: tuple[int, int] = (0, 64),
) -> np.ndarray:
    """Slots ``rows`` of a lane layout stored as ``bits``-bit sub-words (``sub`` is the
    ``(width * 64 // bits, L)`` matrix of sub-word ``k`` of every lane), in ``sub``'s dtype."""
    words, rsh, nxt, lsh, spill = _shift_plan(width, bits, sub.shape[1])
    r0, r1 = rows
    vals = np.take(sub, words[r0:r1], axis=0, out=out, mode="clip")
    np.right_shift(vals, rsh[r0:r1], out=vals)
    if spill[r0:r1].any():
        # OR in the next sub-word of every row; the mask clears what does not belong
        hi = np.take(sub, nxt[r0:r1], axis=0, out=_temp("hi", vals.shape, sub.dtype), mode="clip")
        np.left_shift(hi, lsh[r0:r1], out=hi)
        np.bitwise_or(vals, hi, out=vals)
    if width < bits:
        np.bitwise_and(vals, sub.dtype.type((1 << width) - 1), out=vals)
    return vals


def _fold(
    vals: np.ndarray, width: int, base: int, factor: int, out_dtype: np.dtype
) -> tuple[np.ndarray, int, int]:
    """Apply ``base`` and ``factor`` to the narrow scratch ``vals`` in place when every
    result, as a signed or unsigned integer of the output width, fits ``vals``' width: the
    cast into the output (sign-extending a signed view) then yields the same bit patterns, and
    the wide add/multiply passes are saved. Returns the values to emit and what is left of
    ``base`` / ``factor``."""
    bits = 8 * out_dtype.itemsize
    small = 8 * vals.dtype.itemsize
    if small >= bits:
        return vals, base, factor
    mask = (1 << bits) - 1
    b, f = base & mask, factor & mask
    if f >> (bits - 1):
        return vals, base, factor
    if b >> (bits - 1):
        b -= 1 << bits
    lo, hi = b, b + f * ((1 << width) - 1)
    if 0 <= lo and hi < 1 << small:
        kind = vals.dtype
    elif -(1 << (small - 1)) <= lo and hi < 1 << (small - 1):
        kind = np.dtype(f"<i{vals.dtype.itemsize}")
    else:
        return vals, base, factor
    v = vals.view(kind)
    # modular arithmetic in the narrow type: exact, since every final value fits it
    if f != 1:
        np.multiply(v, vals.dtype.type(f).astype(kind), out=v)
    if b:
        np.add(v, np.array(b).astype(kind), out=v)
    return v, 0, 1


def _affine(src: np.ndarray, dst: np.ndarray, base: int, factor: int) -> None:
    """``dst = base + factor * src`` modulo ``2 ** (8 * dst.itemsize)`` (``src`` may be
    ``dst`` itself, or narrower)."""
    if src is not dst:
        np.copyto(dst, src, casting="unsafe")
    kind = dst.dtype.type
    bits = 8 * dst.dtype.itemsize
    mask = (1 << bits) - 1
    if factor & mask != 1:
        np.multiply(dst, kind(factor & mask), out=dst)
    if base & mask:
        np.add(dst, kind(base & mask), out=dst)


def _emit(vals: np.ndarray, n: int, out_u: np.ndarray, base: int, factor: int) -> None:
    """Write the first ``n`` slots of ``vals`` (``(K, per, L)``, slot ``j = k * per + s``)
    into the contiguous ``out_u`` as ``base + factor * value``."""
    blocks, per, lanes = vals.shape
    block = per * lanes
    full = min(blocks, n // block)
    if full:
        _affine(vals[:full], out_u[: full * block].reshape(full, per, lanes), base, factor)
    pos = full * block
    s = 0
    while pos < n:
        m = min(lanes, n - pos)
        _affine(vals[full, s, :m], out_u[pos : pos + m], base, factor)
        pos += m
        s += 1
