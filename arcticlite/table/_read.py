"""The scan pipeline: plan a read of one version, then fetch, decode and assemble it.

Every read of a symbol's data goes through here — plain reads, ``date_range``, ``columns``,
``row_range``, head / tail, ``QueryBuilder`` queries, lazy frames, batch reads, joins and the
public :class:`~arcticlite.table.ScanPlan` — in the same steps:

1. *plan* (:func:`plan_read`): the rows and index range asked for, the query's own ranges and
   value filters, the leaf rows of the segments that overlap them (one walk of the table
   index), and then, by page statistics, the row groups no row of which can pass the filters;
2. *fetch and decode* (:mod:`~arcticlite.table._segments`: zero-copy views on LMDB, parallel
   GETs on S3, only the pages of the rows wanted);
3. *assemble*: an Arrow table (:func:`read_arrow`), or pandas blocks filled straight by the
   decoders (:func:`read_pandas`, :mod:`~arcticlite.table._direct`), then the query's
   remaining clauses.

A :class:`ReadPlan` is a plain value: it pickles, and the tasks of a scan are slices of it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from arcticlite import normalize as norm
from arcticlite.exceptions import InternalException, UnsortedDataException
from arcticlite.index import EMPTY_ROOT, ROW_DTYPE, TableIndexIO
from arcticlite.query import QueryBuilder, QueryPlan, plan_query, run_query
from arcticlite.storage import KVStore
from arcticlite.table import _direct as direct
from arcticlite.table._deltas import (
    Scope,
    has_deltas,
    owners,
    read_applied,
    read_delta_rows,
    row_counts,
    split_flagged,
)
from arcticlite.table._pools import Pools
from arcticlite.table._prune import Intervals, PruneStats, judged_when_decoded, prune
from arcticlite.table._segments import FetchStats, read_segments, wanted_positions, with_columns
from arcticlite.version import LibraryKeys, VersionRecord


def schema_bytes(schema: pa.Schema) -> bytes:
    return schema.serialize().to_pybytes()


def schema_from(b: bytes) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(b))


@functools.lru_cache(maxsize=64)
def _parsed_meta(text: str | bytes) -> norm.NormMeta:
    return norm.NormMeta.from_json(text)


@functools.lru_cache(maxsize=64)
def _parsed_schema(b: bytes) -> pa.Schema:
    return schema_from(b)


def meta_of(rec: VersionRecord) -> norm.NormMeta:
    """The normalization metadata of a data version (parsed once per distinct text: symbols
    written alike share it; it is not to be modified)."""
    assert rec.norm is not None, "a data version always has its normalization metadata"
    return _parsed_meta(rec.norm)


def schema_of(rec: VersionRecord) -> pa.Schema:
    """The stored Arrow schema of a data version (index columns first; parsed once per distinct
    serialisation)."""
    if not rec.schema:
        return pa.schema([])
    return _parsed_schema(rec.schema)


def iloc_range(row_range: tuple[Any, Any], total: int) -> tuple[int, int]:
    """``row_range`` (pandas ``iloc`` rules: negatives count from the end, None is open)
    as absolute half-open rows of ``total``."""
    start, stop = row_range
    start = 0 if start is None else int(start)
    stop = total if stop is None else int(stop)
    if start < 0:
        start = max(0, total + start)
    if stop < 0:
        stop = max(0, total + stop)
    start, stop = min(start, total), min(stop, total)
    return start, max(start, stop)


def widen_dynamic_leaves(leaves: np.ndarray, n_data: int) -> np.ndarray:
    """Under dynamic schema a segment's column range counts its own columns, not their
    positions in the grown stored schema (a column added by a later append sits past the
    range of the segment that holds it): let every segment offer every stored column, the
    reader picks the ones the segment has and backfills the rest."""
    if len(leaves) == 0:
        return leaves
    out = leaves.copy()
    out["start_col"] = 0
    out["end_col"] = np.maximum(out["end_col"], n_data)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadPlan:
    """What one read of one version fetches, and what it still does after fetching.

    Attributes
    ----------
    symbol : str
    version : int
        The version id read.
    meta : NormMeta
        How the stored table maps back to what was written.
    schema : pyarrow.Schema
        The stored schema (index columns first, storage names).
    columns : tuple of str
        Stored names of the data columns fetched, in storage order.
    positions : tuple of int
        Their positions among the data columns.
    row_range : tuple of int or None
        Absolute half-open rows fetched.
    index_range : tuple of int or None
        Closed int64-ns bounds of a sorted datetime index fetched.
    leaves : numpy.ndarray
        Leaf rows (``index.ROW_DTYPE``) of the segments to fetch, after pruning.
    query : QueryPlan or None
        The query's clauses left to run on the fetched rows.
    dynamic : bool
        Dynamic schema: segments may lack columns (backfilled).
    sorted : str
        Sortedness of the stored index.
    total_rows : int
        Rows of the version.
    segments_considered : int
        Segments the index range selected before pruning by statistics.
    candidates : dict
        Per kept row group (by its first row) whose statistics rule out some of its pages:
        the absolute row intervals that may match; only their pages are decoded.
    deltas : numpy.ndarray or None
        A version with delta segments (merge on read): their leaf rows, applied to the rows
        of ``leaves`` (then ``leaves`` are whole base row groups, consecutive, and
        ``row_range`` counts rows of the result); None for a version without deltas.
    scope : Scope or None
        Which changes of ``deltas`` this read applies (a scan task's share); None: all.
    delta_offset : int
        With deltas and a row range: the row of the result the first row group read gives.
    judged : bool
        The query's value filters were judged on the statistics and Bloom filters of
        ``leaves`` while planning: reading them does not judge again.
    arrow_out : bool
        For Arrow / polars output: a column a segment lacks (dynamic schema) reads as nulls
        there, where pandas output shows 0 / False / NaN (ArcticDB's two outputs).
    """

    symbol: str
    version: int
    meta: norm.NormMeta
    schema: pa.Schema
    columns: tuple[str, ...]
    positions: tuple[int, ...]
    row_range: tuple[int, int] | None
    index_range: tuple[int, int] | None
    leaves: np.ndarray
    query: QueryPlan | None
    dynamic: bool
    sorted: str
    total_rows: int = 0
    segments_considered: int = 0
    candidates: dict[int, Intervals] | None = None
    deltas: np.ndarray | None = None
    scope: Scope | None = None
    delta_offset: int = 0
    judged: bool = False
    arrow_out: bool = False

    @property
    def n_index(self) -> int:
        return len(self.meta.index_columns)

    def with_leaves(self, leaves: np.ndarray, scope: Scope | None = None) -> ReadPlan:
        """The same read restricted to ``leaves`` (a scan task; ``scope``: its share of the
        deltas)."""
        return replace(self, leaves=leaves, scope=scope if scope is not None else self.scope)


def plan_read(
    index: TableIndexIO,
    store: KVStore,
    keys: LibraryKeys,
    rec: VersionRecord,
    *,
    date_range: tuple[int, int] | None = None,
    row_range: tuple[Any, Any] | None = None,
    columns: list[Any] | None = None,
    query_builder: Any = None,
    dynamic: bool = False,
    prune_by_statistics: bool = True,
    pools: Pools | None = None,
    stats: PruneStats | None = None,
    judge_when_decoding: bool = False,
) -> ReadPlan:
    """Plan the read of data version ``rec`` (``date_range`` already in closed int64 ns);
    ``stats`` collects what pruning ruled out (``QueryBuilder.explain``).
    ``judge_when_decoding``: a plan executed at once by :func:`read_arrow` (not handed to
    scan tasks) leaves the query's value filters to each segment's reader where that opens
    each segment once instead of twice (``_prune.judged_when_decoded``)."""
    sym = rec.symbol
    meta = meta_of(rec)
    schema = schema_of(rec)
    n_index = len(meta.index_columns)
    root = rec.index or EMPTY_ROOT
    total = root.rows
    rr = iloc_range(row_range, total) if row_range is not None else None
    ir: tuple[int, int] | None = None
    if date_range is not None and meta.index_kind == "multi" and meta.index_hints[:1] == ("dt",):
        # the leaves of a MultiIndex hold row numbers: filter by its first level after reading
        dated = QueryBuilder()
        dated.clauses = [("date_range", date_range)]
        if isinstance(query_builder, QueryBuilder):
            dated.clauses += list(query_builder.clauses)
        if query_builder is None or isinstance(query_builder, QueryBuilder):
            query_builder, date_range = dated, None
    if date_range is not None:
        if meta.index_kind != "datetime":
            raise InternalException(f"Cannot apply date range filter to symbol {sym!r} with non-timestamp index")
        if rec.sorted not in ("ASCENDING", "UNKNOWN"):
            raise UnsortedDataException(f"Cannot apply date range filter to symbol {sym!r}: its index is not sorted")
        ir = date_range
    query = None
    if query_builder is not None:
        query = plan_query(query_builder, meta, total_rows=total, row_range=rr, index_range=ir,
                           sorted_index=rec.sorted in ("ASCENDING", "UNKNOWN"), columns=columns)
        rr, ir = query.row_range, query.index_range
    deltas = None
    scope, offset = None, 0
    considered = -1  # segments after the index range (before statistics), when known early
    if has_deltas(rec):
        # rows of the result are not rows of the base: select by index range only (a merge
        # never moves a row to another index value), apply the deltas, then slice
        leaves, deltas = split_flagged(index.leaves(root, index_range=ir if rr is None else None))
        if rr is not None:  # only the row groups that give the rows asked for
            leaves, scope, offset = _rows_of(store, keys, rec, leaves, deltas, schema, n_index, rr,
                                             is_dt=meta.index_kind == "datetime", pools=pools)
        elif query is not None and query.value_filters and prune_by_statistics and len(leaves):
            considered = len(leaves)
            leaves = _prune_untouched(store, keys, rec, leaves, deltas, schema, n_index, query.value_filters,
                                      is_dt=meta.index_kind == "datetime", pools=pools, stats=stats)
        prune_by_statistics = False
    elif rr is not None and rr[0] >= rr[1]:
        leaves = np.zeros(0, dtype=ROW_DTYPE)
    else:
        leaves = index.leaves(root, row_range=rr, index_range=ir)
    considered = considered if considered >= 0 else len(leaves)
    candidates = None
    n_data = len(schema) - n_index
    if query is not None and query.value_filters and prune_by_statistics and judge_when_decoding \
            and not dynamic and judged_when_decoded(
                store, leaves, n_data, query.value_filters,
                None if query.columns is None else meta.user_to_stored(list(query.columns))):
        prune_by_statistics = False
    if query is not None and query.value_filters and prune_by_statistics:
        leaves, candidates = prune(store, keys, sym, leaves, schema, n_index, query.value_filters,
                                   pools=pools, stats=stats)
    if dynamic:
        leaves = widen_dynamic_leaves(leaves, n_data)
    chosen = columns if query is None else query.columns
    if chosen is None:  # every column: no name lookups
        pos: Sequence[int] = range(n_data)
        stored = tuple(schema.names[n_index:])
    else:
        pos = wanted_positions(schema, n_index, meta.user_to_stored(list(chosen)))
        if 8 * len(pos) < len(schema):  # a few columns of a wide schema: no list of every name
            stored = tuple(schema.field(n_index + p).name for p in pos)
        else:
            names = schema.names
            stored = tuple(names[n_index + p] for p in pos)
    if len(pos) < n_data:
        leaves = with_columns(leaves, pos)
    return ReadPlan(
        symbol=sym, version=rec.vid, meta=meta, schema=schema,
        columns=stored, positions=tuple(pos), row_range=rr, index_range=ir,
        leaves=leaves, query=query, dynamic=dynamic, sorted=rec.sorted or "UNKNOWN",
        total_rows=total, segments_considered=considered, candidates=candidates or None, deltas=deltas,
        scope=scope, delta_offset=offset, judged=candidates is not None,
    )


def _prune_untouched(store: KVStore, keys: LibraryKeys, rec: VersionRecord, leaves: np.ndarray, deltas: np.ndarray,
                     schema: pa.Schema, n_index: int, filters: Any, *, is_dt: bool, pools: Pools | None,
                     stats: PruneStats | None) -> np.ndarray:
    """``leaves`` (base row groups of a version with deltas) without the row groups that own
    no change of the deltas and whose statistics prove no row passes ``filters``: their rows
    are the base's as stored. A row group a change belongs to (an update or delete of one of
    its rows, an insert in its index interval) is kept whole: a change may make a row pass."""
    d = read_delta_rows(store, keys, rec.symbol, deltas, schema, n_index, [], pools=pools)
    gstart, first = np.unique(leaves["start_row"], return_index=True)
    owner = owners(d, gstart.astype(np.int64), leaves["min_index"][first].astype(np.int64), is_dt=is_dt)[0]
    touched = np.isin(leaves["start_row"], gstart[np.unique(owner[owner >= 0])])
    if touched.all():
        return leaves
    kept, _ = prune(store, keys, rec.symbol, leaves[~touched], schema, n_index, filters, pools=pools, stats=stats)
    out = np.concatenate([leaves[touched], kept])
    return out[np.lexsort((out["start_col"], out["start_row"]))]


def _rows_of(store: KVStore, keys: LibraryKeys, rec: VersionRecord, leaves: np.ndarray, deltas: np.ndarray,
             schema: pa.Schema, n_index: int, rr: tuple[int, int], *, is_dt: bool,
             pools: Pools | None) -> tuple[np.ndarray, Scope, int]:
    """The base leaves, the share of the deltas and the first row (of the result) of the row
    groups that give the rows ``rr`` of a version with deltas: each group's row count once the
    deltas are applied comes from their key, operation and index columns alone."""
    d = read_delta_rows(store, keys, rec.symbol, deltas, schema, n_index, [], pools=pools)
    if len(leaves):
        gstart, first = np.unique(leaves["start_row"], return_index=True)
        gend, gmin = leaves["end_row"][first].astype(np.int64), leaves["min_index"][first].astype(np.int64)
    else:
        gstart = gend = gmin = np.zeros(0, dtype=np.int64)
    counts, tail = row_counts(d, gstart.astype(np.int64), gend, gmin, is_dt=is_dt)
    ng = len(gstart)
    starts = np.concatenate([[0], np.cumsum(np.append(counts, tail))])  # the tail: a group after the last
    g0 = min(int(np.searchsorted(starts, rr[0], "right")) - 1, ng)
    g1 = max(g0 + 1, int(np.searchsorted(starts, rr[1], "left")))
    g0, g1 = max(g0, 0), min(g1, ng + 1)
    end_base = int(gend[-1]) if ng else 0
    lo_row = int(gstart[g0]) if g0 < ng else end_base
    hi_row = int(gend[min(g1, ng) - 1]) if min(g1, ng) > g0 else lo_row
    scope = Scope(lo_row, hi_row,
                  None if g0 == 0 or not is_dt or g0 >= ng else int(gmin[g0]),
                  None if g1 >= ng or not is_dt else int(gmin[g1]),
                  inserts=is_dt or g1 > ng)
    chosen = leaves[(leaves["start_row"] >= lo_row) & (leaves["start_row"] < hi_row)] if len(leaves) else leaves
    return chosen, scope, int(starts[g0])


def read_arrow(store: KVStore, keys: LibraryKeys, plan: ReadPlan, *,
               pools: Pools | None = None, stats: FetchStats | None = None) -> tuple[pa.Table, norm.NormMeta]:
    """Fetch, decode and assemble ``plan`` as a stored-layout Arrow table, its query run;
    returns the table and the metadata that describes it (new after an aggregation).
    ``stats`` counts the pages and bytes fetched (``QueryBuilder.explain``)."""
    if plan.deltas is not None:
        table = read_applied(store, keys, plan.symbol, plan.leaves, plan.deltas, plan.schema, plan.n_index,
                             list(plan.columns), plan.positions, is_dt=plan.meta.index_kind == "datetime",
                             scope=plan.scope, pools=pools, stats=stats)
        if plan.row_range is not None:
            table = table.slice(plan.row_range[0] - plan.delta_offset, max(0, plan.row_range[1] - plan.row_range[0]))
    else:
        table = read_segments(store, keys, plan.symbol, plan.leaves, plan.schema, plan.n_index,
                              list(plan.columns), plan.row_range, dynamic=plan.dynamic,
                              index_range=plan.index_range, pools=pools, positions=plan.positions,
                              mark_absent=plan.dynamic and plan.query is not None, candidates=plan.candidates,
                              absent_null=plan.arrow_out and plan.query is None,  # (a query nulls its output)
                              stats=stats, filters=plan.query.value_filters if plan.query is not None else (),
                              nan_rows=True, judged=plan.judged,
                              code_keys=plan.query.code_keys if plan.query is not None else (),
                              with_index=plan.query is None or not plan.query.index_unused
                              or plan.index_range is not None)  # (the index slices a date range below)
    ir = plan.index_range
    if ir is not None and table.num_rows:
        idx = table.column(0).cast(pa.int64()).to_numpy()
        a, b = np.searchsorted(idx, ir[0], "left"), np.searchsorted(idx, ir[1], "right")
        table = table.slice(int(a), max(0, int(b) - int(a)))
    meta = plan.meta
    if plan.query is not None:
        table, meta = run_query(table, meta, plan.query, backfill=not plan.arrow_out)
    return table, meta


_TIMESTAMP_NS = pa.timestamp("ns")


def read_pandas(store: KVStore, keys: LibraryKeys, plan: ReadPlan, *,
                pools: Pools | None = None) -> pd.DataFrame | None:
    """``plan`` read straight into the blocks of a DataFrame (:mod:`._direct`); None when the
    read needs the general path (:func:`read_arrow`, then ``normalize.denormalize``)."""
    meta, schema = plan.meta, plan.schema
    n_index = plan.n_index
    if plan.query is not None or plan.dynamic or meta.kind != "dataframe" or plan.deltas is not None:
        return None
    if meta.index_kind == "datetime":
        if n_index != 1 or meta.index_hints[:1] != ("dt",) or schema.field(0).type != _TIMESTAMP_NS:
            return None
    elif meta.index_kind not in ("range", "none") or n_index:
        return None
    wanted_pos = list(plan.positions)
    data_names = list(plan.columns)
    labels, hints = meta.describe(data_names)
    if any(hints):
        return None
    fields = [schema.field(n_index + p) for p in wanted_pos]
    if any(direct.block_dtype(f.type) is None for f in fields):
        return None
    leaves, rr, ir, sym = plan.leaves, plan.row_range, plan.index_range, plan.symbol
    known: dict[str, tuple[int, np.ndarray]] = {}  # segment index columns already decoded
    try:
        if ir is not None:
            if plan.sorted != "ASCENDING":
                return None
            if len(leaves):
                first = leaves[np.unique(leaves["start_row"], return_index=True)[1]]
                rows = direct.index_bounds(store, keys, sym, first, schema.field(0).name, ir, known)
            else:
                rows = (0, 0)
        else:
            rows = rr if rr is not None else (0, plan.total_rows)
        nrows = rows[1] - rows[0]
        blocks = direct.allocate(fields, schema.field(0) if n_index else None, nrows)
        jobs = direct.plan(keys, sym, leaves, schema, n_index, wanted_pos, rows) if nrows else []
        if n_index:
            jobs = direct.use_known(jobs, known, schema.field(0).name, blocks)
        direct.fill(store, jobs, blocks, pools)
    except direct.NotDirect:
        return None
    if blocks.index is not None:
        index: pd.Index = norm.datetime_index(blocks.index, meta, meta.index_names[0])
    else:
        index = norm.index_from_table(pa.table({}), meta, nrows)
    return direct.frame(blocks, index, norm.column_labels(meta, labels))
