"""Bit-packing kernels for Fermion value encodings (lane layout).

Layout (see the byte-level spec in :mod:`arcticlite.format._encodings`): ``n`` values of ``w``
bits are split into ``L = ceil(n / 64)`` lanes. Value ``i = j * L + l`` is slot ``j`` of lane
``l``; slot ``j`` occupies bits ``j * w .. j * w + w - 1`` of the lane, counting from bit 0 of
the lane's first 64-bit word. The packed payload is a ``(w, L)`` little-endian ``uint64``
matrix stored row-major: word ``k`` of every lane, then word ``k + 1`` of every lane, and so on.
Padding slots (``i >= n``) are zero.

Packing and unpacking are 64 iterations of whole-row numpy shifts over contiguous length-``L``
rows, so one numpy call handles ``L`` values and the output comes out in natural order.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

__all__ = ["bit_width", "pack", "packed_words", "unpack_into"]

_U64 = np.dtype(np.uint64)
#: Up to this many lanes, unpacking works on the whole (64, L) matrix at once.
_SMALL_LANES = 2048
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
    n = len(values)
    lanes = -(-n // 64)
    if n != 64 * lanes:
        padded = np.zeros(64 * lanes, dtype=_U64)
        padded[:n] = values
        values = padded
    rows = values.reshape(64, lanes)
    if lanes <= _SMALL_PACK_LANES:
        return _pack_matrix(rows, width)
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


def _pack_matrix(rows: np.ndarray, width: int) -> np.ndarray:
    """Pack a ``(64, L)`` slot matrix with whole-matrix operations (few lanes)."""
    slot_bits = np.arange(64, dtype=np.int64) * width
    words, shifts = slot_bits >> 6, (slot_bits & 63).astype(_U64)
    shifted = np.left_shift(rows, shifts[:, None])
    # every word holds the start of at least one slot (width <= 64): OR-reduce per word
    firsts = np.searchsorted(words, np.arange(width))
    packed = np.bitwise_or.reduceat(shifted, firsts, axis=0)
    spill = np.flatnonzero(shifts + np.uint64(width) > 64)
    if len(spill):
        # at most one slot spills into each word, so the fancy-indexed OR is safe
        packed[words[spill] + 1] |= rows[spill] >> (np.uint64(64) - shifts[spill])[:, None]
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
    lanes = packed.shape[1]
    base_u = np.uint64(base)
    factor_u = np.uint64(factor)
    mask = np.uint64((1 << width) - 1)
    cast: Literal["same_kind", "unsafe"] = "same_kind" if out_u.dtype == _U64 else "unsafe"
    if lanes <= _SMALL_LANES:
        # few lanes: a handful of whole-matrix operations beat 64 rounds of tiny calls
        slot_bits = np.arange(64, dtype=np.int64) * width
        words, shifts = slot_bits >> 6, (slot_bits & 63).astype(_U64)
        vals = packed[words]
        np.right_shift(vals, shifts[:, None], out=vals)
        spill = np.flatnonzero(shifts + np.uint64(width) > 64)
        if len(spill):
            hi = packed[words[spill] + 1]
            np.left_shift(hi, (np.uint64(64) - shifts[spill])[:, None], out=hi)
            vals[spill] |= hi
        if width < 64:
            np.bitwise_and(vals, mask, out=vals)
        flat = vals.reshape(-1)[:n]
        if factor != 1:
            np.multiply(flat, factor_u, out=flat)
        np.add(flat, base_u, out=out_u, casting=cast)
        return
    tmp = np.empty(lanes, dtype=_U64)
    tmp2 = np.empty(lanes, dtype=_U64)
    for j in range(64):
        lo = j * lanes
        if lo >= n:
            break
        m = min(lanes, n - lo)
        word, shift = divmod(j * width, 64)
        t = tmp[:m]
        np.right_shift(packed[word, :m], shift, out=t)
        if shift + width > 64:
            t2 = tmp2[:m]
            np.left_shift(packed[word + 1, :m], 64 - shift, out=t2)
            np.bitwise_or(t, t2, out=t)
        if shift + width != 64:
            np.bitwise_and(t, mask, out=t)
        if factor != 1:
            np.multiply(t, factor_u, out=t)
        np.add(t, base_u, out=out_u[lo : lo + m], casting=cast)
