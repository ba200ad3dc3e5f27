"""Row intervals: sorted, disjoint, half-open ``(start, end)`` pairs, as readers and planners
describe the rows that may pass a filter."""

from __future__ import annotations

Intervals = list[tuple[int, int]]

__all__ = ["Intervals", "intersect_intervals", "merge_intervals"]


def intersect_intervals(a: Intervals, b: Intervals) -> Intervals:
    """The rows in both ``a`` and ``b`` (each sorted and disjoint)."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo < hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def merge_intervals(iv: Intervals) -> Intervals:
    """``iv`` (any order, overlapping, empty pairs allowed) as sorted disjoint intervals."""
    out: Intervals = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        elif a < b:
            out.append((a, b))
    return out
