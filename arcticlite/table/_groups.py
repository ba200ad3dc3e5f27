"""File groups of a compaction of deltas: segments whose key ranges overlap (seed 004).

Every base row group and every delta segment of a version has a *key range*, a closed
interval of the key that orders the table:

- a timeseries orders by its index (part of every merge's key): a delta segment's range is
  its ``[min_index, max_index]`` from the table index (no data read); a base row group's is
  the index interval it holds or owns — ``[its minimum, max(its maximum, the next group's
  minimum - 1)]``, the first one open below and the last one open above, since an insert
  belongs to the group whose interval holds its index value;
- a row-numbered table orders by row identity: a base row group holds rows
  ``[start_row, end_row - 1]``, the rows inserted after the last base row are one more vertex,
  the *tail* ``[base rows, +inf)``, and a delta segment's range spans the base rows its
  changes name (an insert, or a change of an inserted row, counts as the tail).

The ``on`` columns are not part of the range: a merge's change names the row it changes by
identity, and another merge's update may have changed the values of the columns a later merge
matches on, so a base segment's min/max of those columns no longer bounds the keys of the rows
its deltas name; the index (or the row identity) never changes.

:func:`components` joins every two vertices whose ranges overlap (union-find: the connected
components of the overlap graph); a component holding at least one delta segment is a *group*
(one task, split by key range when its base bytes exceed the memory budget); the others are
untouched and reused as they are.
"""

from __future__ import annotations

import numpy as np

LOWEST = np.iinfo(np.int64).min
HIGHEST = np.iinfo(np.int64).max


def overlapping_pairs(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edges ``(i, j)`` joining intervals ``[lo, hi]`` that overlap: each interval to the one,
    earlier in ``lo`` order, that reaches furthest up to it (enough for the components)."""
    n = len(lo)
    if n < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.lexsort((hi, lo))
    shi = hi[order]
    # the interval before each (in lo order) whose hi is largest so far
    reach = np.maximum.accumulate(shi)
    best = np.zeros(n, dtype=np.int64)
    is_new_max = np.concatenate([[True], shi[1:] > reach[:-1]])
    best[is_new_max] = np.flatnonzero(is_new_max)
    best = np.maximum.accumulate(best)
    touches = lo[order][1:] <= reach[:-1]
    i = order[1:][touches]
    j = order[best[:-1][touches]]
    return i.astype(np.int64), j.astype(np.int64)


def union_find(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Component label per vertex ``0 .. n-1`` of the graph with edges ``(i, j)``: the
    smallest vertex of its component (vectorised union-find: hook roots to the smaller root,
    then compress paths, until no edge joins two roots)."""
    parent = np.arange(n, dtype=np.int64)
    if not len(i):
        return parent
    while True:
        ri, rj = parent[i], parent[j]
        differ = ri != rj
        if not differ.any():
            return parent
        low = np.minimum(ri[differ], rj[differ])
        np.minimum.at(parent, ri[differ], low)
        np.minimum.at(parent, rj[differ], low)
        while True:  # path compression: every vertex points at its root
            up = parent[parent]
            if np.array_equal(up, parent):
                break
            parent = up


def components(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Component label (smallest member) per interval ``[lo[k], hi[k]]``: intervals that
    overlap, directly or through others, share one."""
    i, j = overlapping_pairs(np.asarray(lo, np.int64), np.asarray(hi, np.int64))
    return union_find(len(lo), i, j)


def base_ranges_by_time(gmin: np.ndarray, gmax: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Key ranges of a timeseries' base row groups (smallest / largest index value each)."""
    n = len(gmin)
    lo = gmin.astype(np.int64).copy()
    hi = gmax.astype(np.int64).copy()
    if n:
        lo[0] = LOWEST
        hi[:-1] = np.maximum(hi[:-1], gmin[1:].astype(np.int64) - 1)
        hi[-1] = HIGHEST
    return lo, hi


def split_by_budget(groups: np.ndarray, nbytes: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Consecutive base row groups ``groups`` (ascending) cut into runs of at most ``budget``
    stored bytes (a row group larger than that is a run of its own): ``(first, end)`` pairs."""
    runs: list[tuple[int, int]] = []
    if not len(groups):
        return runs
    g0, acc = int(groups[0]), 0
    for g in groups.tolist():
        if g > g0 and acc + int(nbytes[g]) > budget:
            runs.append((g0, g))
            g0, acc = g, 0
        acc += int(nbytes[g])
    runs.append((g0, int(groups[-1]) + 1))
    return runs
