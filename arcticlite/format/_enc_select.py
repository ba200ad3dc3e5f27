"""Encoders and the sampling-based cascade selection of Fermion value encodings.

Selection follows BtrBlocks: a sample of a few runs of 64 consecutive values, spread over the
array, is used to *estimate* the size of every applicable scheme (recursively for the children
of cascading schemes, up to :data:`MAX_DEPTH` levels); the best estimate is then encoded for
real, and kept only if it beats plain. The byte layout of every scheme is specified in
:mod:`arcticlite.format._encodings`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from arcticlite.format import _kernels
from arcticlite.format._enc_bitpack import bit_width, pack, packed_words
from arcticlite.format._enc_policy import current as _policy
from arcticlite.format._enc_spec import (
    BITPACK,
    CONSTANT,
    DECIMAL,
    DECIMAL_HDR,
    DELTA,
    DELTA_HDR,
    DICT,
    FOR_HDR,
    I64,
    MAX_DECIMAL_EXPONENT,
    NARROW,
    NESTED_HDR,
    PLAIN,
    RLE,
    SPLIT,
    U32,
    U64,
    signed_of,
    unsigned_of,
)

__all__ = [
    "MAX_DEPTH",
    "MODE_BITPACK",
    "MODE_NARROW",
    "MODE_SPLIT",
    "NO_DICT",
    "SCHEME_OF_ID",
    "Recipe",
    "decimal_split",
    "dictionary",
    "encode_array",
    "encode_candidates",
    "encode_plain",
    "encode_recipe",
    "encode_scheme",
    "estimate",
    "find_exponent",
    "is_constant",
    "rank_schemes",
    "recipe_of",
    "uniform_for",
]

MAX_DEPTH = 3
#: Cascade modes: bit-pack where it is smaller; byte-aligned widths only (zstd-friendly);
#: byte-aligned widths stored as byte planes (byte-stream-split, friendliest to zstd).
MODE_BITPACK = 0
MODE_NARROW = 1
MODE_SPLIT = 2
#: Flag or-ed into a mode: no dictionary below this point (dictionary values and codes).
NO_DICT = 4
_MODE_MASK = 3
SAMPLE_RUNS = 16
#: Size of the strided sample used to estimate the number of distinct values.
CARD_SAMPLE = 1024
RUN_LEN = 64
#: Below this many values bit-packing is not used (its per-call overhead dominates).
SMALL = 1024
_MASK64 = _kernels.MASK64
#: Runner-up schemes are encoded for real only if estimated within this factor of the best.
TOP_SPREAD = 4.0
#: RLE is considered only for an average run length of at least this (decode cost); the
#: ``read`` policy of :mod:`._enc_policy` sets its own.
MIN_AVG_RUN = 4
_U32_LIMIT = 1 << 32
_INF = math.inf

Estimator = Callable[[np.ndarray, int, int, int], float]


def encode_plain(x: np.ndarray) -> bytes:
    """Encode ``x`` as PLAIN (id byte, then the raw little-endian values)."""
    return bytes((PLAIN,)) + np.ascontiguousarray(x).data.cast("B")


def _sample(x: np.ndarray) -> np.ndarray:
    """Return a 2-D sample: rows are runs of consecutive values spread over ``x``."""
    n = len(x)
    if n <= 2 * SAMPLE_RUNS * RUN_LEN:
        return x.reshape(1, n)
    starts = np.arange(SAMPLE_RUNS) * (n - RUN_LEN) // (SAMPLE_RUNS - 1)
    return x[starts[:, None] + np.arange(RUN_LEN)]


def _narrow_bytes(width: int) -> int:
    for nb in (1, 2, 4, 8):
        if width <= 8 * nb:
            return nb
    return 8


def _for_stats(s: np.ndarray) -> tuple[int, int, int]:
    """Return (min, range, gcd of offsets) of ``s`` (signed or unsigned ints)."""
    mn = int(s.min())
    rng = int(s.max()) - mn
    if rng == 0:
        return mn, 0, 1
    ud = unsigned_of(s.dtype)
    r = s.reshape(-1).view(ud) - np.array(mn & ((1 << (8 * s.dtype.itemsize)) - 1), dtype=ud)
    g = int(np.gcd.reduce(r.astype(U64)))
    return mn, rng, max(g, 1)


def _for_size(n: int, width: int, mode: int) -> float:
    narrow = n * _narrow_bytes(width)
    if mode & _MODE_MASK == MODE_BITPACK and n >= SMALL:
        return FOR_HDR.size + min(narrow, 8 * packed_words(n, width))
    return FOR_HDR.size + narrow


# ----------------------------------------------------------------------------- estimation
def _est_plain(s: np.ndarray, n: int, depth: int, mode: int) -> float:
    return 1 + n * s.dtype.itemsize


def _est_constant(s: np.ndarray, n: int, depth: int, mode: int) -> float:
    return 1 + s.dtype.itemsize if (s == s.flat[0]).all() else _INF


def _est_for(s: np.ndarray, n: int, depth: int, mode: int) -> float:
    _, rng, g = _for_stats(s)
    return _for_size(n, bit_width(rng // g), mode)


def _est_delta(s: np.ndarray, n: int, depth: int, mode: int) -> float:
    if s.shape[1] < 2:
        return _INF
    sd = signed_of(s.dtype)
    v = s.view(sd)
    d = np.subtract(v[:, 1:], v[:, :-1])
    return DELTA_HDR.size + estimate(d, max(n - 1, 1), depth + 1, mode)


def _est_rle(s: np.ndarray, n: int, depth: int, mode: int) -> float:
    change = s[:, 1:] != s[:, :-1]
    starts_mask = np.ones(s.shape, dtype=bool)
    starts_mask[:, 1:] = change
    runs = int(starts_mask.sum())
    if runs * max(MIN_AVG_RUN, _policy().min_avg_run) > s.size:
        return _INF
    flat_starts = np.flatnonzero(starts_mask.reshape(-1))
    ends = np.append(flat_starts[1:], s.size)
    # runs never cross the sample's row boundaries
    row_ends = (flat_starts // s.shape[1] + 1) * s.shape[1]
    lengths = (np.minimum(ends, row_ends) - flat_starts).astype(U32)
    values = s.reshape(-1)[flat_starts]
    # row starts are not real run boundaries: scale the interior changes only
    n_runs = max(1, int(n * (int(change.sum()) + 1) / s.size))
    return (
        NESTED_HDR.size
        + estimate(values.reshape(1, -1), n_runs, depth + 1, mode)
        + estimate(lengths.reshape(1, -1), n_runs, depth + 1, mode)
    )


def _cardinality(x: np.ndarray) -> int:
    """Estimate the number of distinct values of ``x`` from a strided sample (GEE estimator).

    ``sqrt(n / m) * f1 + (d - f1)``: ``f1`` sample values seen once, ``d`` distinct in the
    sample of ``m``. Unlike the run sample, a strided sample is not fooled by clustering.
    """
    n = len(x)
    xs = x[:: max(1, n // CARD_SAMPLE)]
    _, counts = np.unique(xs, return_counts=True)
    f1 = int((counts == 1).sum())
    return min(n, int(math.sqrt(n / len(xs)) * f1) + len(counts) - f1)


def _est_dict(s: np.ndarray, n: int, depth: int, mode: int, card: int | None = None) -> float:
    m = s.size
    uniq, inv = np.unique(s.reshape(-1), return_inverse=True)
    nd = len(uniq)
    if nd * 2 > m:
        return _INF
    nd_full = min(n, max(nd, int(nd * (n / m) * (nd / m))))
    if card is not None:
        nd_full = max(nd, card)
    codes = inv.astype(U32).reshape(s.shape)
    codes_est = estimate(codes, n, depth + 1, mode | NO_DICT)
    if nd_full > nd:
        codes_est *= bit_width(nd_full - 1) / max(1, bit_width(nd - 1))
    dict_est = estimate(uniq.reshape(1, -1), nd_full, depth + 1, mode | NO_DICT)
    return NESTED_HDR.size + codes_est + dict_est


def find_exponent(xf: np.ndarray) -> tuple[int, float]:
    """Return the decimal exponent ``e`` with the fewest exceptions on ``xf``, and their rate.

    Parameters
    ----------
    xf : numpy.ndarray
        Float32 or float64 values (any shape).

    Returns
    -------
    tuple of (int, float)
        Exponent and exception rate (0 = every value round-trips).
    """
    flat = xf.reshape(-1)
    if len(flat) > 256:
        # a strided 64-value pre-check settles non-decimal data cheaply
        e, rate = _exponent_search(flat[:: len(flat) // 64][:64])
        if rate > 0.5:
            return e, rate
    return _exponent_search(flat)


def _exponent_search(flat: np.ndarray) -> tuple[int, float]:
    if len(flat) == 0:
        return 0, 0.0
    powers = np.array([10.0**e for e in range(MAX_DECIMAL_EXPONENT + 1)])[:, None]
    with np.errstate(all="ignore"):
        scaled = np.rint(flat.astype(np.float64)[None, :] * powers)
        valid = np.abs(scaled) <= 2.0**53
        dec = np.where(valid, scaled, 0.0).astype(I64) / powers
    if flat.dtype.itemsize == 4:
        dec = dec.astype(np.float32)
    ud = unsigned_of(flat.dtype)
    ok = (valid & (dec.view(ud) == flat.view(ud)[None, :])).sum(axis=1)
    e = int(np.argmax(ok))  # the smallest exponent among the best
    return e, 1.0 - int(ok[e]) / len(flat)


def decimal_split(xf: np.ndarray, e: int) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(ints, ok)``: ``rint(x * 10**e)`` as int64 and where it decodes bit-exactly.

    Decoding is ``float64(ints) / 10.0**e`` (then cast to float32 for float32 columns); ``ok``
    marks the positions where that reproduces the bits of ``xf``.
    """
    ints, ok, _ = decimal_split_counted(xf, e)
    return ints, ok


def decimal_split_counted(xf: np.ndarray, e: int) -> tuple[np.ndarray, np.ndarray, int]:
    """:func:`decimal_split` and the number of positions that are not ok (counted by the
    native kernel as it goes)."""
    p = 10.0**e
    native = _kernels.NATIVE
    if native is not None and xf.flags.c_contiguous and xf.ndim == 1:
        ints = np.empty(len(xf), dtype=I64)
        ok = np.empty(len(xf), dtype=bool)
        bad = native.decimal_split(xf, xf.dtype.itemsize, p, ints, ok)
        return ints, ok, int(bad)
    ints, ok = _decimal_split_numpy(xf, p)
    return ints, ok, len(ok) - int(np.count_nonzero(ok))


def _decimal_split_numpy(xf: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(all="ignore"):
        scaled = np.multiply(xf, p, dtype=np.float64)
        np.rint(scaled, out=scaled)
        lim = 2.0**53
        # NaN or a value beyond 2**53 fails both tests: then find which (the rare case)
        valid = None if len(scaled) and scaled.min() >= -lim and scaled.max() <= lim else np.abs(scaled) <= lim
        ints = (scaled if valid is None else np.where(valid, scaled, 0.0)).astype(I64)
        dec = np.divide(ints, p, out=scaled)
    if xf.dtype.itemsize == 4:
        dec = dec.astype(np.float32)
    ud = unsigned_of(xf.dtype)
    ok = dec.view(ud) == xf.view(ud)
    if valid is not None:
        ok &= valid
    return ints, ok


def _est_decimal(s: np.ndarray, n: int, depth: int, mode: int) -> float:
    e, rate = find_exponent(s)
    if rate > 0.5:
        return _INF
    ints, ok = decimal_split(s.reshape(-1), e)
    ints = _ffill(ints, ok).reshape(s.shape)
    exc = n * rate * (s.dtype.itemsize + 4)
    return DECIMAL_HDR.size + estimate(ints, n, depth + 1, mode) + exc


_INT_SCHEMES: dict[str, Estimator] = {
    "for": _est_for,
    "delta": _est_delta,
    "rle": _est_rle,
    "dict": _est_dict,
}
_FLOAT_SCHEMES: dict[str, Estimator] = {"rle": _est_rle, "dict": _est_dict}
_NO_DICT_SCHEMES = {k: v for k, v in _INT_SCHEMES.items() if k != "dict"}
_LAST_LEVEL: dict[str, Estimator] = {"for": _est_for}


def _schemes(depth: int, mode: int) -> dict[str, Estimator]:
    if depth >= MAX_DEPTH:
        return _LAST_LEVEL
    if mode & NO_DICT or depth >= 2:
        return _NO_DICT_SCHEMES
    return _INT_SCHEMES


def estimate(s: np.ndarray, n: int, depth: int, mode: int) -> float:
    """Estimate the encoded size of ``n`` values whose 2-D sample is ``s`` (integer dtype)."""
    if s.size == 0:
        return 1.0
    best = min(_est_plain(s, n, depth, mode), _est_constant(s, n, depth, mode))
    # nested estimates look one cascade level deep; deeper levels are estimated as FOR
    for est in (_schemes(depth, mode) if depth <= 1 else _LAST_LEVEL).values():
        best = min(best, est(s, n, depth, mode))
    return best


def rank_schemes(
    x: np.ndarray, depth: int, mode: int, floats: np.ndarray | None = None
) -> list[tuple[float, str]]:
    """Rank candidate schemes for ``x`` by estimated size, best first.

    Parameters
    ----------
    x : numpy.ndarray
        Integer values (for floats: their unsigned bit view).
    depth : int
        Cascade depth of ``x`` (0 = top level).
    mode : int
        Cascade mode: ``MODE_BITPACK``, ``MODE_NARROW`` or ``MODE_SPLIT``.
    floats : numpy.ndarray, optional
        The float values when ``x`` is their bit view (enables decimal, disables FOR/delta).

    Returns
    -------
    list of (float, str)
        ``(estimated bytes, scheme name)`` pairs, best first.
    """
    n = len(x)
    s = _sample(x)
    if floats is not None:
        ranked = [(_est_decimal(_sample(floats), n, depth, mode), "decimal")]
        schemes = _FLOAT_SCHEMES
    else:
        ranked = []
        schemes = _schemes(depth, mode)
    for name, est in schemes.items():
        if name == "dict":
            card = _cardinality(x)
            ranked.append((_est_dict(s, n, depth, mode, card) if 2 * card <= n else _INF, name))
        else:
            ranked.append((est(s, n, depth, mode), name))
    ranked.append((_est_plain(s, n, depth, mode), "plain"))
    ranked = [r for r in ranked if r[0] < _INF]
    if n >= _U32_LIMIT:  # run lengths, codes and patch positions are uint32
        ranked = [r for r in ranked if r[1] in ("for", "delta", "plain")]
    ranked.sort(key=lambda r: r[0])
    return ranked


# ----------------------------------------------------------------------------- encoders
def _ffill(ints: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Replace ``ints`` at ``~ok`` by the previous ok value (keeps deltas and ranges small)."""
    if ok.all():
        return ints
    idx = np.where(ok, np.arange(len(ints)), 0)
    np.maximum.accumulate(idx, out=idx)
    return ints[idx]


def _enc_for(x: np.ndarray, depth: int, mode: int) -> bytes:
    n = len(x)
    bits = 8 * x.dtype.itemsize
    mn, mx = _kernels.min_max(x)
    rng = mx - mn
    ud = unsigned_of(x.dtype)
    base = mn & _MASK64
    g = 1
    if rng:
        step = max(1, n // 4096)
        sample = x[::step].view(ud) - np.array(mn & ((1 << bits) - 1), dtype=ud)
        g = max(1, int(np.gcd.reduce(sample.astype(U64))))
    native = _kernels.NATIVE
    if native is not None and x.flags.c_contiguous:
        return _enc_for_native(native, x, n, base, g, rng, mode)
    r = x.view(ud) - np.array(mn & ((1 << bits) - 1), dtype=ud)
    if rng:
        if g > 1:
            gd = np.array(g, dtype=ud)
            q = r // gd  # numpy divides by a scalar fast; its remainder is ~10x slower
            if np.array_equal(q * gd, r):
                r = q
            else:
                g = 1
    width = bit_width(rng // g)
    nb = _narrow_bytes(width)
    if (
        mode & _MODE_MASK == MODE_BITPACK
        and n >= SMALL
        and width
        and 8 * packed_words(n, width) < n * nb
    ):
        payload = pack(r if r.dtype == U64 else r.astype(U64), width)  # pack does not write to it
        return FOR_HDR.pack(BITPACK, width, base, g) + payload.tobytes()
    narrow = r.astype(f"<u{nb}")
    if mode & _MODE_MASK == MODE_SPLIT and nb > 1:
        planes = narrow.view(np.uint8).reshape(n, nb).T
        return FOR_HDR.pack(SPLIT, nb, base, g) + planes.tobytes()
    return FOR_HDR.pack(NARROW, nb, base, g) + narrow.tobytes()


def _enc_for_native(native: Any, x: np.ndarray, n: int, base: int, g: int, rng: int,
                    mode: int) -> bytes:
    """:func:`_enc_for`'s layouts written by the native kernel in one pass over ``x`` (offsets,
    division by ``g``, packing or narrowing together); with step 1 when an offset is not a
    multiple of ``g`` (the sample's gcd)."""
    for g_try in (g, 1) if g > 1 else (1,):
        width = bit_width(rng // g_try)
        nb = _narrow_bytes(width)
        if mode & _MODE_MASK == MODE_BITPACK and n >= SMALL and width and 8 * packed_words(n, width) < n * nb:
            out = np.empty(packed_words(n, width), dtype=U64)
            if native.encode_for(x, x.dtype.itemsize, base, g_try, 0, width, out):
                return FOR_HDR.pack(BITPACK, width, base, g_try) + out.tobytes()
            continue
        split = mode & _MODE_MASK == MODE_SPLIT and nb > 1
        body = bytearray(FOR_HDR.size + n * nb)
        if native.encode_for(x, x.dtype.itemsize, base, g_try, 2 if split else 1, nb,
                             memoryview(body)[FOR_HDR.size:]):
            FOR_HDR.pack_into(body, 0, SPLIT if split else NARROW, nb, base, g_try)
            return bytes(body)
    raise AssertionError("a step of 1 divides every offset")


def _enc_delta(x: np.ndarray, depth: int, mode: int) -> bytes:
    sd = signed_of(x.dtype)
    v = x.view(sd)
    d = np.subtract(v[1:], v[:-1])
    return DELTA_HDR.pack(DELTA, int(v[0]) & _MASK64) + encode_array(d, depth + 1, mode)


def _enc_rle(x: np.ndarray, depth: int, mode: int) -> bytes:
    starts = np.flatnonzero(x[1:] != x[:-1]) + 1
    starts = np.concatenate(([0], starts))
    lengths = np.diff(np.append(starts, len(x))).astype(U32)
    values = np.ascontiguousarray(x[starts])
    vblob = encode_array(values, depth + 1, mode)
    return (
        NESTED_HDR.pack(RLE, len(starts), len(vblob))
        + vblob
        + encode_array(lengths, depth + 1, mode)
    )


def dictionary(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(sorted distinct values, uint32 codes)`` of integer array ``x``.

    Small value ranges use a lookup table (O(n)); others hash with Arrow's
    ``dictionary_encode`` and sort the (small) dictionary afterwards.
    """
    n = len(x)
    mn, mx = _kernels.min_max(x)
    rng = mx - mn
    ud = unsigned_of(x.dtype)
    if rng < max(4 * n, 1 << 16) and rng < (1 << 26):
        x = np.ascontiguousarray(x)
        present = _kernels.presence(x, mn, rng + 1)
        lut = np.cumsum(present, dtype=U32)
        lut -= np.uint32(1)  # (entries of absent values wrap: never looked up)
        base = np.array(mn & ((1 << (8 * x.dtype.itemsize)) - 1), dtype=ud)
        uniq = (np.flatnonzero(present).astype(ud) + base).view(x.dtype)
        return uniq, _kernels.codes_in_range(x, mn, lut)
    enc = pa.array(x).dictionary_encode()
    values = enc.dictionary.to_numpy()
    order = np.argsort(values, kind="stable")
    rank = np.empty(len(order), dtype=U32)
    rank[order] = np.arange(len(order), dtype=U32)
    return values[order].astype(x.dtype), rank[enc.indices.to_numpy()]


def _enc_dict(x: np.ndarray, depth: int, mode: int) -> bytes:
    uniq, inv = dictionary(x)
    dblob = encode_array(uniq, depth + 1, mode | NO_DICT)
    codes = inv.astype(U32).reshape(-1)
    return (
        NESTED_HDR.pack(DICT, len(uniq), len(dblob))
        + dblob
        + encode_array(codes, depth + 1, mode | NO_DICT)
    )


def _enc_decimal(xf: np.ndarray, depth: int, mode: int) -> bytes:
    node = _replaying()
    if node is not None and node.scheme == "decimal":
        e = node.exponent
        ints, ok, bad = decimal_split_counted(xf, e)
        if 8 * bad > len(xf):  # the data changed: choose again
            with _searching():
                return _enc_decimal(xf, depth, mode)
    else:
        e, _ = find_exponent(_sample(xf))
        ints, ok, bad = decimal_split_counted(xf, e)
    if not bad:  # every value a short decimal (the common case): no exceptions
        pos = np.zeros(0, dtype=U32)
    else:
        ints = _ffill(ints, ok)
        pos = np.flatnonzero(~ok).astype(U32)
    exc = xf.view(unsigned_of(xf.dtype))[pos]
    iblob = encode_array(ints, depth + 1, mode)
    pblob = encode_array(pos, depth + 1, mode)
    return (
        DECIMAL_HDR.pack(DECIMAL, e, len(pos), len(iblob), len(pblob))
        + iblob
        + pblob
        + exc.tobytes()
    )


_ENCODERS: dict[str, Callable[[np.ndarray, int, int], bytes]] = {
    "for": _enc_for,
    "delta": _enc_delta,
    "rle": _enc_rle,
    "dict": _enc_dict,
}


def is_constant(x: np.ndarray) -> bool:
    """Return whether every value of the non-empty array ``x`` equals the first (a strided
    sample first: most arrays are told not constant without a pass over all their values)."""
    first = x[0]
    if len(x) > 4096 and not bool((x[:: len(x) // 64] == first).all()):
        return False
    return bool((x == first).all())


def encode_candidates(
    x: np.ndarray, depth: int, mode: int, floats: np.ndarray | None = None, top: int = 1
) -> list[bytes]:
    """Encode ``x`` with its ``top`` best-estimated schemes (each no larger than plain).

    Parameters
    ----------
    x : numpy.ndarray
        1-D contiguous integer values (floats: their unsigned bit view).
    depth : int
        Cascade depth.
    mode : int
        Cascade mode: ``MODE_BITPACK``, ``MODE_NARROW`` or ``MODE_SPLIT``.
    floats : numpy.ndarray, optional
        The float values when ``x`` is their bit view.
    top : int
        How many of the best-ranked schemes to encode for real: those estimated within
        :data:`TOP_SPREAD` of the best (in the byte-aligned modes, ``top + 1`` schemes
        estimated within 1.5x of the best).

    Returns
    -------
    list of bytes
        Blobs, smallest first; always contains at least one.
    """
    n = len(x)
    plain_len = 1 + n * x.dtype.itemsize
    if n == 0 or n == 1:
        return [encode_plain(x)]
    if is_constant(x):
        return [bytes((CONSTANT,)) + x[:1].tobytes()]
    out: list[bytes] = []
    ranked = rank_schemes(x, depth, mode, floats)
    chosen = [r for r in ranked[:top] if r[0] <= TOP_SPREAD * ranked[0][0]]
    if top > 1 and mode & _MODE_MASK != MODE_BITPACK:
        # estimates ignore the general-purpose compressor that follows: be generous
        chosen = [r for r in ranked[: top + 1] if r[0] <= 1.5 * ranked[0][0]] or chosen
    for est, name in chosen:
        if name == "plain" or est >= plain_len:
            continue
        if name == "decimal":
            assert floats is not None
            blob = _enc_decimal(floats, depth, mode)
        else:
            blob = _ENCODERS[name](x, depth, mode)
        if len(blob) < plain_len:
            out.append(blob)
    if not out:
        out.append(encode_plain(x))
    out.sort(key=len)
    return out


#: Top-level scheme name of each encoding id (``for`` covers its three layouts).
SCHEME_OF_ID = {
    PLAIN: "plain",
    BITPACK: "for",
    NARROW: "for",
    SPLIT: "for",
    DELTA: "delta",
    RLE: "rle",
    DICT: "dict",
    DECIMAL: "decimal",
}


#: Values :func:`uniform_for` judges a page on.
UNIFORM_SAMPLE = 1024


def uniform_for(xi: np.ndarray) -> bytes | None:
    """The page of integers ``xi`` as frame of reference and bit-packing when its values look
    independent and spread evenly over their range (random ids, sizes, codes, 0/1 flags drawn
    at random), else None. Such values hold about as many bits of information each as the
    range is wide, so no cascade or codec beats the packed width, and the full search ends
    with this blob: its tests are that a strided sample covers most of the range's values, no
    value much more often than chance allows (not skewed: a dictionary or a codec could win),
    consecutive values differ about as often as independent ones (no runs), and the
    differences of neighbours are not narrower than the values (not sorted or smooth: deltas
    could win)."""
    n = len(xi)
    lo, hi = int(xi.min()), int(xi.max())
    width = (hi - lo).bit_length()
    if not 0 < width <= 62:
        return None
    sample = xi[:: max(1, n // UNIFORM_SAMPLE)]
    _, counts = np.unique(sample, return_counts=True)
    k = min(len(sample), hi - lo + 1)  # values the sample could hold
    mean = len(sample) / k
    if len(counts) < 0.9 * k or int(counts.max()) > mean + 4 * mean ** 0.5 + 2:
        return None
    mid = xi[max(0, n // 2 - UNIFORM_SAMPLE // 2): n // 2 + UNIFORM_SAMPLE // 2]
    changes = int(np.count_nonzero(mid[1:] != mid[:-1])) / max(1, len(mid) - 1)
    if changes < 0.9 * (1 - 1 / k):
        return None
    steps = np.diff(mid.astype(np.int64))
    if (int(steps.max()) - int(steps.min())).bit_length() < width:
        return None
    return encode_scheme(xi, "for", 0, MODE_BITPACK, None)


def encode_scheme(
    x: np.ndarray, name: str, depth: int, mode: int, floats: np.ndarray | None = None
) -> bytes:
    """Encode ``x`` with the named scheme (children chosen as usual); plain if not smaller.

    Parameters
    ----------
    x : numpy.ndarray
        1-D contiguous integer values (floats: their unsigned bit view), at least 2.
    name : str
        A value of :data:`SCHEME_OF_ID`.
    depth : int
        Cascade depth.
    mode : int
        Cascade mode (``MODE_*``).
    floats : numpy.ndarray, optional
        The float values when ``x`` is their bit view (required for ``decimal``).

    Returns
    -------
    bytes
        The blob.
    """
    plain_len = 1 + len(x) * x.dtype.itemsize
    if name == "plain":
        return encode_plain(x)
    if name == "decimal":
        assert floats is not None
        blob = _enc_decimal(floats, depth, mode)
    else:
        blob = _ENCODERS[name](x, depth, mode)
    return blob if len(blob) < plain_len else encode_plain(x)


def encode_array(x: np.ndarray, depth: int, mode: int) -> bytes:
    """Encode integer values ``x`` (a cascade child) with the best-estimated scheme (while a
    recipe is replayed: with the scheme it names for this child)."""
    x = np.ascontiguousarray(x)
    node = _next_child()
    if node is not None:
        return encode_recipe(x, node, depth, mode)
    return encode_candidates(x, depth, mode)[0]


# ----------------------------------------------------------------------------- recipes
class Recipe(NamedTuple):
    """The schemes of an encoded blob's cascade, to encode similar values the same way
    without searching (the pages of one column in a bulk write): a scheme name of
    :data:`SCHEME_OF_ID` (or ``"constant"``), the decimal exponent, and the children's
    recipes in the order the encoder produces them. Parameters that depend on the values
    (frame of reference, bit width, run lengths) are computed afresh."""

    scheme: str
    exponent: int
    children: tuple[Recipe, ...]


def recipe_of(blob: bytes | memoryview) -> Recipe | None:
    """The recipe of a fixed-width blob (not codec-wrapped); None if it has none."""
    mv = memoryview(blob)
    eid = mv[0] if len(mv) else -1
    if eid == PLAIN:
        return Recipe("plain", 0, ())
    if eid == CONSTANT:
        return Recipe("constant", 0, ())
    if eid in (BITPACK, NARROW, SPLIT):
        return Recipe("for", 0, ())
    if eid == DELTA:
        child = recipe_of(mv[DELTA_HDR.size :])
        return None if child is None else Recipe("delta", 0, (child,))
    if eid in (RLE, DICT):
        _, _, first_len = NESTED_HDR.unpack_from(mv, 0)
        a = recipe_of(mv[NESTED_HDR.size : NESTED_HDR.size + first_len])
        b = recipe_of(mv[NESTED_HDR.size + first_len :])
        if a is None or b is None:
            return None
        return Recipe("rle" if eid == RLE else "dict", 0, (a, b))
    if eid == DECIMAL:
        _, e, _, ints_len, pos_len = DECIMAL_HDR.unpack_from(mv, 0)
        start = DECIMAL_HDR.size
        a = recipe_of(mv[start : start + ints_len])
        b = recipe_of(mv[start + ints_len : start + ints_len + pos_len])
        if a is None or b is None:
            return None
        return Recipe("decimal", e, (a, b))
    return None


_REPLAY = threading.local()


def _stack() -> list[tuple[Recipe | None, Iterator[Recipe] | None]]:
    st: list[tuple[Recipe | None, Iterator[Recipe] | None]] | None = getattr(_REPLAY, "stack", None)
    if st is None:
        st = _REPLAY.stack = []
    return st


def _replaying() -> Recipe | None:
    """The recipe node being replayed by the innermost encoder call, if any."""
    st = getattr(_REPLAY, "stack", None)
    return st[-1][0] if st else None


def _next_child() -> Recipe | None:
    st = getattr(_REPLAY, "stack", None)
    if not st or st[-1][1] is None:
        return None
    return next(st[-1][1], None)


class _searching:
    """Context: encoders below search as usual (a replay that does not fit)."""

    def __enter__(self) -> None:
        _stack().append((None, None))

    def __exit__(self, *exc: object) -> None:
        _stack().pop()


def encode_recipe(x: np.ndarray, recipe: Recipe, depth: int, mode: int,
                  floats: np.ndarray | None = None) -> bytes:
    """Encode ``x`` (as for :func:`encode_scheme`) with the schemes of ``recipe``; where a
    scheme no longer fits the values (not constant any more, a decimal exponent that misses
    many values), that part is searched as usual. Never larger than plain."""
    name = recipe.scheme
    if name == "constant":
        if len(x) and is_constant(x):
            return bytes((CONSTANT,)) + x[:1].tobytes()
        with _searching():
            return encode_candidates(x, depth, mode, floats)[0]
    if len(x) < 2 or (name == "decimal" and floats is None) or (name != "decimal" and floats is not None
                                                                and name not in ("plain", "rle", "dict")):
        with _searching():
            return encode_candidates(x, depth, mode, floats)[0]
    if name == "dict" and (mode & NO_DICT or depth >= 2):
        name = "for"
    st = _stack()
    st.append((recipe, iter(recipe.children)))
    try:
        return encode_scheme(x, name, depth, mode, floats)
    finally:
        st.pop()
