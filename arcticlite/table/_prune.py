"""Skipping what cannot match: row groups and pages a query's value filters rule out.

While a read is planned, the leading value filters of its query (``QueryPlan.value_filters``:
``(column, op, value)`` terms ANDed, an ``or`` term holding alternatives) are judged against
the metadata of the segments holding their columns, before any data page is fetched:

1. page min/max and null counts (Fermion statistics) give, per term, the rows of the segment
   whose pages may match;
2. for ``==`` / ``in`` terms, the segment's Bloom filter of that column (when it has one) may
   prove that no row holds any of the values.

Terms are evaluated in whichever column slice holds their column and combined per row group
in absolute rows, so an ``or`` across slices and the alignment of the slices' different page
boundaries come out right. A row group none of whose rows can match is dropped; a kept one
remembers its candidate row intervals, and every column slice of it then decodes only the
pages covering those rows (:func:`~arcticlite.table._segments.read_segments`). The query still
filters every fetched row exactly, so results never depend on any of this.

Only metadata is read: from the store's zero-copy views (LMDB) or memory, else (S3) by ranged
reads of the segments' tails and of the Bloom filter, several segments at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from arcticlite import format as fermion
from arcticlite.exceptions import ArcticException
from arcticlite.format import Intervals, intersect_intervals, merge_intervals
from arcticlite.index import hex_digests
from arcticlite.storage import KVStore, MemoryStore
from arcticlite.table._pools import Pools, shared
from arcticlite.version import LibraryKeys

Term = tuple[Any, str, Any]


@dataclass(slots=True)
class PruneStats:
    """What planning ruled out (filled by :func:`prune`, shown by ``QueryBuilder.explain``).

    Attributes
    ----------
    row_groups : int
        Row groups (rows of all their column slices) left after the index range.
    pruned_minmax, pruned_bloom : int
        Row groups dropped by page statistics, and (of the rest) by Bloom filters.
    segments_pruned : int
        Segments (column slices) of those row groups that are never fetched.
    metadata_bytes : int
        Bytes of segment metadata and filters read to decide (ranged reads; 0 on views).
    """

    row_groups: int = 0
    pruned_minmax: int = 0
    pruned_bloom: int = 0
    segments_pruned: int = 0
    metadata_bytes: int = 0
    candidates: dict[int, Intervals] = field(default_factory=dict)


def simple_terms(filters: Sequence[Term]) -> list[Term]:
    """Every ``(column, op, value)`` term of ``filters``, ``or`` alternatives included."""
    out: list[Term] = []
    for t in filters:
        if t[1] == "or":
            for alt in t[2]:
                out += simple_terms(alt)
        else:
            out.append(t)
    return out


def _combine(filters: Sequence[Term], judged: dict[int, tuple[Intervals | None, bool]], whole: Intervals,
             bloom: bool) -> Intervals:
    """Rows of ``whole`` that may pass the ANDed ``filters``, from each simple term's
    ``(candidate rows or None, excluded by its Bloom filter)`` in ``judged`` (by ``id``)."""
    ivs = whole
    for t in filters:
        if not ivs:
            return ivs
        if t[1] == "or":
            ivs = merge_intervals([iv for alt in t[2] for iv in _combine(alt, judged, ivs, bloom)])
            continue
        rows, excluded = judged.get(id(t), (None, False))
        if bloom and excluded:
            return []
        if rows is not None:
            ivs = intersect_intervals(ivs, rows)
    return ivs


def prune(store: KVStore, keys: LibraryKeys, sym: str, leaves: np.ndarray, schema: pa.Schema,
          n_index: int, filters: Sequence[Term], *, pools: Pools | None = None,
          stats: PruneStats | None = None) -> tuple[np.ndarray, dict[int, Intervals]]:
    """``leaves`` without the row groups in which no row can pass ``filters``, and the
    candidate rows (absolute, half-open intervals) of the kept row groups whose statistics
    rule out some of their pages (keyed by the row group's ``start_row``).

    Conservative: a segment without the column (dynamic schema), or whose statistics cannot
    be compared or read, keeps all its rows.
    """
    stats = stats if stats is not None else PruneStats()
    if not len(leaves) or not filters:
        return leaves, {}
    position = {name: i - n_index for i, name in enumerate(schema.names) if i >= n_index}
    terms = [t for t in simple_terms(filters) if t[0] in position]
    if not terms:
        return leaves, {}
    starts = leaves["start_row"].astype(np.int64)
    ends = leaves["end_row"].astype(np.int64)
    group_start = np.unique(starts)
    stats.row_groups = len(group_start)
    # one check per segment holding a filter column: (row group start, key, nbytes, terms, span)
    checks: list[tuple[int, str, int, list[Term], tuple[int, int]]] = []
    for row, digest, start, end in zip(leaves, hex_digests(leaves), starts.tolist(), ends.tolist(), strict=True):
        c0, c1 = int(row["start_col"]), int(row["end_col"])
        mine = [t for t in terms if c0 <= position[t[0]] < c1]
        if mine:
            lo = int(row["seg_offset"])
            checks.append((start, keys.tdata(sym, digest), int(row["nbytes"]), mine, (lo, lo + end - start)))
    local = _lends_views(store) or isinstance(store, MemoryStore)

    def judge(check: tuple[int, str, int, list[Term], tuple[int, int]]
              ) -> tuple[dict[int, tuple[Intervals | None, bool]], int]:
        start, key, nbytes, mine, (lo, hi) = check
        out: dict[int, tuple[Intervals | None, bool]] = {}
        try:
            if local:
                with store.read_view(key) as view:
                    return _judge_all(view, mine, lo, hi, start, out), 0
            ranged = fermion.RangeReader(lambda off, n: store.read_range(key, off, n), size=nbytes)
            _judge_all(ranged, mine, lo, hi, start, out)
            return out, ranged.bytes_requested
        except (ArcticException, KeyError, TypeError, ValueError, OverflowError, pa.ArrowException):
            return {}, 0  # unreadable metadata: no verdict, the row group is read (and fails there)

    results = map(judge, checks) if local else (pools or shared()).io.map(judge, checks)
    judged: dict[int, dict[int, tuple[Intervals | None, bool]]] = {}
    for check, (verdicts, nread) in zip(checks, results, strict=True):
        judged.setdefault(check[0], {}).update(verdicts)
        stats.metadata_bytes += nread
    group_end = dict(zip(starts.tolist(), ends.tolist(), strict=False))
    doomed: list[int] = []
    candidates: dict[int, Intervals] = {}
    for start, verdicts in judged.items():
        whole = [(start, group_end[start])]
        by_stats = _combine(filters, verdicts, whole, bloom=False)
        rows = _combine(filters, verdicts, by_stats, bloom=True) if by_stats else by_stats
        if not by_stats:
            stats.pruned_minmax += 1
            doomed.append(start)
        elif not rows:
            stats.pruned_bloom += 1
            doomed.append(start)
        elif rows != whole:
            candidates[start] = rows
    stats.candidates = candidates
    if not doomed:
        return leaves, candidates
    gone = np.isin(starts, np.asarray(doomed, dtype=np.int64))
    stats.segments_pruned = int(gone.sum())
    return leaves[~gone], candidates


def judged_when_decoded(store: KVStore, leaves: np.ndarray, n_data: int, filters: Sequence[Term],
                        stored: Sequence[str] | None) -> bool:
    """Whether a read of ``leaves`` may leave ``filters`` to be judged by each segment's reader
    as it decodes it, instead of while planning: on a store whose segments are local (LMDB
    views, memory), where every row group is one segment holding every data column and the
    read's columns (``stored``; None: all) include every filter column, a segment is then
    opened once, not twice, and its reader judges the same statistics and Bloom filters
    before decoding anything (late materialisation; ``read_segments`` with ``judged=False``).
    A segment they rule out costs its metadata alone, as while planning."""
    if not len(leaves) or not filters or not (_lends_views(store) or isinstance(store, MemoryStore)):
        return False
    if stored is not None and not {t[0] for t in simple_terms(filters)}.issubset(stored):
        return False
    starts = leaves["start_row"]
    return bool((leaves["start_col"] == 0).all() and (leaves["end_col"] >= n_data).all()
                and (len(starts) < 2 or (starts[1:] > starts[:-1]).all()))


def _judge_all(source: Any, mine: list[Term], lo: int, hi: int, start: int,
               out: dict[int, tuple[Intervals | None, bool]]) -> dict[int, tuple[Intervals | None, bool]]:
    """Judge each term of ``mine`` on one segment (file rows ``[lo, hi)`` = absolute rows from
    ``start``): its candidate rows in absolute rows, and whether its Bloom filter excludes it."""
    try:
        reader = fermion.FermionReader(source, parallel=False)
    except (ArcticException, ValueError, TypeError):
        return out
    try:
        for t in mine:
            try:
                rows = reader.candidate_rows([t], (lo, hi), bloom=False)
                ivs: Intervals | None = [(a - lo + start, b - lo + start) for a, b in rows]
                excluded = False
                if t[1] in ("==", "in") and ivs:
                    values = list(t[2]) if t[1] == "in" else [t[2]]
                    excluded = reader.bloom_may_contain(t[0], values) is False
                out[id(t)] = (ivs, excluded)
            except (ArcticException, KeyError, TypeError, ValueError, OverflowError, pa.ArrowException):
                out[id(t)] = (None, False)  # missing column (dynamic schema), incomparable value
    finally:
        reader.close()
    return out


def _lends_views(store: KVStore) -> bool:
    return type(store).read_view is not KVStore.read_view


def file_rows(candidates: Intervals, start: int, seg_offset: int, lo: int, hi: int) -> Intervals:
    """Absolute candidate rows of a row group starting at ``start`` as rows ``[lo, hi)`` of
    a segment file whose first row of the group is ``seg_offset``."""
    shift = seg_offset - start
    return intersect_intervals([(a + shift, b + shift) for a, b in candidates], [(lo, hi)] if lo < hi else [])


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadExplain:
    """What one read skipped and fetched (``QueryBuilder.explain``).

    Attributes
    ----------
    symbol : str
    version : int
    segments_total : int
        Segments (row x column tiles) of the version.
    segments_after_index_range : int
        Segments left after the table index was walked for the date range / row range / index
        comparisons (``segments_total`` minus these were *pruned by index range*).
    row_groups_considered : int
        Row groups among them judged by the value filters' statistics.
    row_groups_pruned_minmax, row_groups_pruned_bloom : int
        Row groups dropped by page min/max (and null counts), and of the rest by Bloom filters.
    segments_pruned_by_statistics : int
        Segments of those row groups, never fetched.
    segments_fetched : int
        Segments decoded (those holding a column the read needs).
    pages_considered, pages_skipped : int
        Data pages of the fetched columns in the rows fetched, and those of them not decoded
        because their row group's statistics proved that none of their rows passes.
    rows_skipped : int
        Rows of fetched segments not decoded for that reason.
    bytes_fetched : int
        Bytes read from the store for the data: whole segments where the store has no
        zero-copy view (S3, memory), else the bytes the segment readers touched (LMDB).
    metadata_bytes : int
        Bytes of segment tails and Bloom filters read by ranged requests to decide (S3).
    rows_returned : int
        Rows of the result.
    segments_ranged : int
        Segments of those fetched that were read by ranged requests of their metadata and the
        pages needed (S3, when page skipping leaves at most half their rows), not whole.
    rows_filtered_first, rows_materialised : int
        Late materialisation: rows whose filter columns were decoded and judged first, and
        the rows of them that may pass, the only ones of the other columns decoded.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo", adb.LibraryOptions(rows_per_segment=2))
    >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0, 3.0, 4.0]}, index=pd.date_range("2024-01-01", periods=4)))
    >>> q = adb.QueryBuilder()
    >>> print(q[q["px"] > 3.5].explain(lib, "S"))  # doctest: +ELLIPSIS
    read of 'S' v0
      segments: 2 in the version, 0 pruned by index range, 1 by statistics, 1 fetched
      row groups: 2 judged, 1 pruned by min/max, 0 by Bloom filter
    ...
      rows returned: 1
    """

    symbol: str
    version: int
    segments_total: int
    segments_after_index_range: int
    row_groups_considered: int
    row_groups_pruned_minmax: int
    row_groups_pruned_bloom: int
    segments_pruned_by_statistics: int
    segments_fetched: int
    pages_considered: int
    pages_skipped: int
    rows_skipped: int
    bytes_fetched: int
    metadata_bytes: int
    rows_returned: int
    rows_filtered_first: int = 0
    rows_materialised: int = 0
    segments_ranged: int = 0

    @property
    def segments_pruned_by_index_range(self) -> int:
        """Segments the date range / row range / index comparisons ruled out before any was read.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo", adb.LibraryOptions(rows_per_segment=2))
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0, 3.0, 4.0]}, index=pd.date_range("2024-01-01", periods=4)))
        >>> q = adb.QueryBuilder()
        >>> explain = q[q["px"] > 3.5].explain(lib, "S", date_range=(pd.Timestamp("2024-01-02"), None))
        >>> explain.segments_total, explain.segments_pruned_by_index_range
        (2, 0)
        """
        return self.segments_total - self.segments_after_index_range

    def to_dict(self) -> dict[str, Any]:
        """The figures as a plain dict (pruned-by-index-range included).

        Returns
        -------
        dict of str to int
            Every attribute, and ``segments_pruned_by_index_range``; JSON-ready.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo", adb.LibraryOptions(rows_per_segment=2))
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0, 3.0, 4.0]}, index=pd.date_range("2024-01-01", periods=4)))
        >>> q = adb.QueryBuilder()
        >>> explain = q[q["px"] > 3.5].explain(lib, "S", date_range=(pd.Timestamp("2024-01-02"), None))
        >>> d = explain.to_dict()
        >>> d["rows_returned"], d["segments_pruned_by_statistics"], d["segments_fetched"]
        (1, 1, 1)
        """
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["segments_pruned_by_index_range"] = self.segments_pruned_by_index_range
        return d

    def __str__(self) -> str:
        return "\n".join([
            f"read of {self.symbol!r} v{self.version}",
            f"  segments: {self.segments_total} in the version, {self.segments_pruned_by_index_range} pruned by "
            f"index range, {self.segments_pruned_by_statistics} by statistics, {self.segments_fetched} fetched",
            f"  row groups: {self.row_groups_considered} judged, {self.row_groups_pruned_minmax} pruned by min/max, "
            f"{self.row_groups_pruned_bloom} by Bloom filter",
            f"  pages: {self.pages_considered} considered, {self.pages_skipped} skipped "
            f"({self.rows_skipped} rows not decoded)",
            f"  late materialisation: {self.rows_filtered_first} rows filtered first, "
            f"{self.rows_materialised} rows of the other columns decoded",
            f"  bytes: {self.bytes_fetched} fetched ({self.segments_ranged} segments by ranged reads), "
            f"{self.metadata_bytes} of metadata read to prune",
            f"  rows returned: {self.rows_returned}",
        ])
