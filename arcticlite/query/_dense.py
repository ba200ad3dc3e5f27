"""Group-by reductions over dense int32 group codes, with numpy instead of a hash table.

A group-by on a dictionary-encoded string key (``_aggregate._global_codes``) groups on codes
``0 .. size - 1`` into one dictionary. There a reduction needs no hashing: ``np.add.at``
sums, ``np.minimum.at`` / ``np.maximum.at`` take extremes and ``np.bincount`` counts, one
decoded chunk (segment) at a time so that no column is copied whole, and
``pyarrow.compute.unique`` over the chunks' runs of equal codes gives the groups in order of
first appearance (a key stored in blocks has few runs).

The results are those of ``pyarrow.Table.group_by`` (single-threaded), value for value and
type for type, before ``_aggregate._finish``: nulls (and NaN of floats) are skipped, a group
without values is null, sums accumulate row by row in float64 (floats) or wrap-around int64 /
uint64 (integers), a mean is that sum over the count, and ``min`` / ``max`` keep the first of
equal values (so the sign of a zero result is that of the group's first zero).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def supported(data_type: pa.DataType, op: str) -> bool:
    """Whether :func:`reduce` handles ``op`` over (prepared) values of ``data_type``."""
    if op == "count":
        return True
    number = pa.types.is_integer(data_type) or pa.types.is_float32(data_type) or pa.types.is_float64(data_type)
    return op in ("sum", "mean", "min", "max") and number


@dataclass(frozen=True, slots=True)
class Codes:
    """Group codes chunk by chunk: ``codes[i]`` (int32) of the rows of chunk ``i`` that have a
    key (``keep[i]``, None: all of them), chunks of ``lengths[i]`` rows, codes below ``size``."""

    codes: list[np.ndarray]
    keep: list[np.ndarray | None]
    lengths: list[int]
    size: int


def split(codes: pa.ChunkedArray, size: int) -> Codes:
    """:class:`Codes` of int32 ``codes`` (null: no key, the row is in no group)."""
    out: list[np.ndarray] = []
    keep: list[np.ndarray | None] = []
    lengths: list[int] = []
    for chunk in codes.chunks:
        lengths.append(len(chunk))
        if chunk.null_count:
            k = np.asarray(chunk.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            out.append(np.asarray(chunk.filter(pa.array(k)).to_numpy(), dtype=np.int32))
            keep.append(k)
        else:
            out.append(np.asarray(chunk.to_numpy(), dtype=np.int32))
            keep.append(None)
    return Codes(out, keep, lengths, size)


def group_order(codes: Codes) -> np.ndarray:
    """The codes present, in order of first appearance."""
    heads = []
    for c in codes.codes:
        if len(c) > 1:
            step = np.flatnonzero(c[1:] != c[:-1])
            if 4 * len(step) < len(c):  # long runs: the first code of each run is enough
                c = c[np.concatenate(([0], step + 1))]
        heads.append(c)
    if not heads:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(pc.unique(pa.chunked_array(heads, pa.int32())).to_numpy(), dtype=np.int64)


def _pieces(data: pa.ChunkedArray | pa.Array, lengths: list[int]) -> list[pa.Array]:
    """``data`` cut as the codes are (the chunks themselves where they line up)."""
    chunked = data if isinstance(data, pa.ChunkedArray) else pa.chunked_array([data])
    if [len(c) for c in chunked.chunks] == lengths:
        return list(chunked.chunks)
    out, at = [], 0
    for n in lengths:
        s = chunked.slice(at, n)
        out.append(s.chunk(0) if s.num_chunks == 1 else s.combine_chunks())
        at += n
    return out


def _values(codes: Codes, data: pa.ChunkedArray | pa.Array) -> tuple[list[tuple[np.ndarray, np.ndarray]], bool]:
    """Per chunk ``(codes, values)`` of the rows with a key and a value (not null, not NaN), and
    whether any row with a key had no value."""
    out, missing = [], False
    for c, keep, piece in zip(codes.codes, codes.keep, _pieces(data, codes.lengths), strict=True):
        if keep is not None:
            piece = piece.filter(pa.array(keep))
        if pa.types.is_floating(piece.type):
            v = np.asarray(piece.to_numpy(zero_copy_only=False))  # nulls come out as NaN
            bad = np.isnan(v)
            valid = ~bad if bad.any() else None
        elif pa.types.is_integer(piece.type):
            valid = None
            if piece.null_count:
                valid = np.asarray(piece.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
                piece = piece.fill_null(0)
            v = np.asarray(piece.to_numpy())
        else:  # counted only: the values themselves are not needed
            v = np.zeros(len(piece), dtype=np.int8)
            valid = np.asarray(piece.is_valid().to_numpy(zero_copy_only=False), dtype=bool) \
                if piece.null_count else None
        if valid is not None:
            c, v, missing = c[valid], v[valid], True
        out.append((c, v))
    return out, missing


def reduce(codes: Codes, order: np.ndarray, data: pa.ChunkedArray | pa.Array, op: str) -> pa.Array:
    """``op`` of ``data`` per code, for the groups ``order``, typed as ``pyarrow``'s hash
    aggregation types it (``count``: int64; ``sum``: int64, uint64 or float64; ``mean``:
    float64; ``min`` / ``max``: the type of ``data``); null for a group without values."""
    size = codes.size
    pieces, missing = _values(codes, data)
    counts = None
    if op in ("count", "mean") or missing:
        counts = np.zeros(size, dtype=np.int64)
        for c, _ in pieces:
            counts += np.bincount(c, minlength=size)
    if op == "count":
        assert counts is not None
        return pa.array(counts[order])
    empty = None if counts is None or not (counts[order] == 0).any() else counts[order] == 0
    typ = data.type
    if op in ("sum", "mean"):
        dtype = np.float64 if pa.types.is_floating(typ) else \
            np.uint64 if pa.types.is_unsigned_integer(typ) else np.int64
        acc = np.zeros(size, dtype=dtype)
        for c, v in pieces:
            np.add.at(acc, c, v if v.dtype == dtype else v.astype(dtype))
        if op == "sum":
            return pa.array(acc[order], mask=empty)
        assert counts is not None
        with np.errstate(invalid="ignore", divide="ignore"):
            return pa.array(acc[order].astype(np.float64) / counts[order], mask=empty)
    return _extreme(pieces, order, size, typ, op, empty)


def _extreme(pieces: list[tuple[np.ndarray, np.ndarray]], order: np.ndarray, size: int, typ: pa.DataType,
             op: str, empty: np.ndarray | None) -> pa.Array:
    dtype = np.dtype(typ.to_pandas_dtype())
    floating = dtype.kind == "f"
    start: Any = (np.inf if op == "min" else -np.inf) if floating else \
        (np.iinfo(dtype).max if op == "min" else np.iinfo(dtype).min)
    acc = np.full(size, start, dtype=dtype)
    ufunc = np.minimum if op == "min" else np.maximum
    sign = np.zeros(size, dtype=np.int8) if floating else None  # of each group's first zero
    for c, v in pieces:
        ufunc.at(acc, c, v)
        if sign is not None:
            zeros = np.flatnonzero(v == 0)
            if zeros.size:
                zc = c[zeros]
                _, first = np.unique(zc, return_index=True)
                groups = zc[first]
                new = sign[groups] == 0
                sign[groups[new]] = np.where(np.signbit(v[zeros[first[new]]]), -1, 1)
    if sign is not None:  # 0.0 == -0.0: a zero extreme is the group's first zero
        acc[(acc == 0) & (sign == -1)] = -0.0
        acc[(acc == 0) & (sign == 1)] = 0.0
    return pa.array(acc[order], type=typ, mask=empty)
