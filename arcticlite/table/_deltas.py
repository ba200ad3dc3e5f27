"""Delta segments: the changes of a merge kept beside the table instead of rewritten into it.

A merge on read (``merge`` / ``delete_rows``, :mod:`._merge`) writes one *delta table* per
commit and a version whose table index lists the base segments unchanged, then the delta
segments (leaf flag :data:`~arcticlite.index.FLAG_DELTA`, rows numbered past the base's last
row). Every row of the *logical* table (what a read returns) has an identity, an int64 *key*:
``layer << 40 | pos`` where layer 0 is the base (``pos`` its row number there) and layer
``k >= 1`` the rows the ``k``-th merge inserted (``pos`` their order in it). A delta table has
the stored columns followed by three hidden ones:

- :data:`LAYER`: the merge that wrote the row (int32);
- :data:`KEY`: the identity of the logical row it is about (int64);
- :data:`OP`: :data:`INSERT` (a new row: ``KEY`` is its own identity), :data:`UPDATE` (the row
  takes these values) or :data:`DELETE` (the row is gone; value columns are null).

Reading applies them (:func:`apply_deltas`) with array operations only: the last change of each
identity wins (``numpy.unique`` over the reversed keys), deleted base rows are masked, updated
ones replaced (``take`` from base + delta), and live inserted rows placed after the rows of
their index value (``searchsorted``; at the end for a row-numbered table), in merge then source
order, which is exactly where a copy-on-write merge would have put them. A merge never changes
the index value of a row (for a timeseries the index is part of every key), so the deltas of a
range of index values are self-contained: a date-range read, a scan task or a compaction task
needs only the delta segments whose index range overlaps its own.

:class:`Scope` says which changes a part of a read owns (the rows of its base row groups, and
the inserts of an index interval), so that the parts together apply every change exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from arcticlite.index import FLAG_DELTA, ROW_DTYPE
from arcticlite.storage import KVStore
from arcticlite.table._pools import Pools
from arcticlite.table._segments import read_segments
from arcticlite.version import LibraryKeys, VersionRecord

LAYER, KEY, OP = "__arcticlite_delta_layer", "__arcticlite_delta_key", "__arcticlite_delta_op"
HIDDEN = (LAYER, KEY, OP)
HIDDEN_FIELDS = (pa.field(LAYER, pa.int32()), pa.field(KEY, pa.int64()), pa.field(OP, pa.int8()))
INSERT, UPDATE, DELETE = 0, 1, 2
SHIFT = 40
POS_MASK = (1 << SHIFT) - 1

DELTAS = "deltas"
"""Key of a version record's ``extra`` for a version with delta segments: ``layers`` (merges
kept as deltas), ``base_rows`` (rows of the base segments), ``delta_rows`` (rows of the delta
segments) and ``delta_segments``. A version without it has none."""


def delta_info(rec: VersionRecord | None) -> dict[str, int] | None:
    """The delta bookkeeping of ``rec`` (see :data:`DELTAS`), or None when it has no deltas."""
    if rec is None:
        return None
    info = rec.extra.get(DELTAS)
    return dict(info) if info else None


def has_deltas(rec: VersionRecord | None) -> bool:
    return delta_info(rec) is not None


def delta_schema(schema: pa.Schema) -> pa.Schema:
    """The schema of the delta tables of a table stored as ``schema``."""
    return pa.schema(list(schema) + list(HIDDEN_FIELDS))


def split_flagged(leaves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``leaves`` as (base leaf rows, delta leaf rows)."""
    if not len(leaves):
        return leaves, leaves
    is_delta = (leaves["flags"] & FLAG_DELTA) != 0
    if not is_delta.any():
        return leaves, np.zeros(0, dtype=ROW_DTYPE)
    return leaves[~is_delta], leaves[is_delta]


@dataclass(frozen=True, slots=True)
class Scope:
    """The changes one part of a read owns: those of base rows ``[row_lo, row_hi)`` and the
    inserted rows whose index value lies in ``[ins_lo, ins_hi)`` (None: unbounded) — for a
    row-numbered table, all inserted rows when ``inserts`` (they follow the last base row)."""

    row_lo: int
    row_hi: int
    ins_lo: int | None = None
    ins_hi: int | None = None
    inserts: bool = True


def part_scopes(gstart: np.ndarray, gend: np.ndarray, gmin: np.ndarray, cuts: list[int], *,
                is_dt: bool) -> list[Scope]:
    """The scopes of the parts of a read cut before row groups ``cuts`` (ascending group
    numbers, the first 0) of row groups starting at ``gstart``: part ``i`` owns its base rows
    and, for a timeseries, the inserts from its first group's minimum up to the next part's
    (the first part from minus infinity, the last to plus infinity); for a row-numbered table
    the last part owns every insert."""
    out = []
    n = len(cuts)
    for i, g0 in enumerate(cuts):
        g1 = cuts[i + 1] if i + 1 < n else len(gstart)
        lo = None if i == 0 or not is_dt else int(gmin[g0])
        hi = None if i + 1 == n or not is_dt else int(gmin[g1])
        out.append(Scope(int(gstart[g0]), int(gend[g1 - 1]), lo, hi, inserts=is_dt or i + 1 == n))
    return out


def owners(deltas: pa.Table, gstart: np.ndarray, gmin: np.ndarray, *,
           is_dt: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The base row group each final change of ``deltas`` (rows in commit order, with the
    index and hidden columns) belongs to, for row groups starting at rows ``gstart`` with
    smallest index values ``gmin``: an update or delete of a base row, the group holding it;
    a live insert of a timeseries, the group whose ``[gmin[g], gmin[g + 1])`` holds its index
    value (the first open below, the last above). Returns (owner per final change, -1 for an
    insert after the last row or a deleted insert; its operation; whether it changes a base
    row; whether it is a live insert)."""
    uniq, last, ops = resolve(np.asarray(deltas.column(KEY).to_numpy(), dtype=np.int64),
                              np.asarray(deltas.column(OP).to_numpy(), dtype=np.int8))
    on_base = (uniq >> SHIFT) == 0
    owner = np.full(len(uniq), -1, dtype=np.int64)
    owner[on_base] = np.searchsorted(gstart, uniq[on_base] & POS_MASK, "right") - 1
    ins = ~on_base & (ops != DELETE)
    if is_dt and len(gstart):
        idx = _index_ns(deltas)[last[ins]]
        owner[ins] = np.clip(np.searchsorted(gmin, idx, "right") - 1, 0, len(gstart) - 1)
    return owner, ops, on_base, ins


def row_counts(deltas: pa.Table, gstart: np.ndarray, gend: np.ndarray, gmin: np.ndarray, *,
               is_dt: bool) -> tuple[np.ndarray, int]:
    """Rows each base row group gives a read once ``deltas`` are applied (its rows, less
    deletes, plus the inserts it owns), and the rows inserted after the last one."""
    g = len(gstart)
    owner, ops, on_base, ins = owners(deltas, gstart, gmin, is_dt=is_dt)
    dels = on_base & (ops == DELETE)
    counts = (gend - gstart).astype(np.int64)
    if g:
        counts -= np.bincount(owner[dels], minlength=g)[:g]
        counts += np.bincount(owner[ins & (owner >= 0)], minlength=g)[:g]
    return counts, int((ins & (owner < 0)).sum())


def take_rows(target: pa.ChunkedArray, source: pa.ChunkedArray, indices: np.ndarray) -> pa.ChunkedArray:
    """Rows ``indices`` of ``target`` followed by ``source`` (indices past ``len(target)``
    pick source rows): one contiguous array, one ``take`` (a take over many chunks is slow)."""
    both = pa.concat_arrays([target.combine_chunks(), source.cast(target.type).combine_chunks()])
    return pa.chunked_array([both.take(pa.array(indices, pa.int64()))], type=target.type)


def resolve(keys: np.ndarray, ops: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The final change per identity, the delta rows being in commit order: (identities
    ascending, the delta row of the last change of each, its operation)."""
    n = len(keys)
    uniq, first_rev = np.unique(keys[::-1], return_index=True)
    last = (n - 1 - first_rev).astype(np.int64)
    return uniq, last, ops[last]


def _index_ns(table: pa.Table) -> np.ndarray:
    col = table.column(0)
    if not len(col):
        return np.zeros(0, dtype=np.int64)
    return np.asarray(col.cast(pa.int64()).combine_chunks().to_numpy(zero_copy_only=False), dtype=np.int64)


def apply_deltas(base: pa.Table, p0: int | np.ndarray, deltas: pa.Table, *, is_dt: bool,
                 scope: Scope | None = None) -> pa.Table:
    """The logical rows of base rows ``[p0, p0 + len(base))`` (or, ``p0`` an array, of the
    ascending base rows it lists: row groups with gaps, those statistics pruned) with
    ``deltas`` (rows with the base's columns and :data:`HIDDEN`, in commit order) applied.
    Changes of other base rows are ignored; inserts are those of ``scope`` (all when None).
    Result: the base's columns."""
    nb = base.num_rows
    if deltas.num_rows == 0:
        return base
    dkeys = np.asarray(deltas.column(KEY).to_numpy(), dtype=np.int64)
    dops = np.asarray(deltas.column(OP).to_numpy(), dtype=np.int8)
    uniq, rows, ops = resolve(dkeys, dops)
    layer = uniq >> SHIFT
    pos = uniq & POS_MASK
    if isinstance(p0, np.ndarray):  # the base rows listed
        at = np.minimum(np.searchsorted(p0, pos), max(nb - 1, 0))
        on_base = (layer == 0) & (nb > 0) & (p0[at] == pos) if nb else np.zeros(len(pos), dtype=bool)
        local = at[on_base]
    else:
        on_base = (layer == 0) & (pos >= p0) & (pos < p0 + nb)
        local = pos[on_base] - p0
    bops, brows = ops[on_base], rows[on_base]
    keep = np.ones(nb, dtype=bool)
    keep[local[bops == DELETE]] = False
    pick = np.arange(nb, dtype=np.int64)
    upd = bops != DELETE
    pick[local[upd]] = nb + brows[upd]
    pick = pick[keep]
    ins = (layer > 0) & (ops != DELETE)
    ins_rows = rows[ins]
    if is_dt:
        didx = _index_ns(deltas)
        ins_idx = didx[ins_rows]
        if scope is not None:
            inside = np.ones(len(ins_rows), dtype=bool)
            if scope.ins_lo is not None:
                inside &= ins_idx >= scope.ins_lo
            if scope.ins_hi is not None:
                inside &= ins_idx < scope.ins_hi
            ins_rows, ins_idx = ins_rows[inside], ins_idx[inside]
        order = np.argsort(ins_idx, kind="stable")  # identities ascend: merge order, then source order
        ins_rows, ins_idx = ins_rows[order], ins_idx[order]
        bidx = _index_ns(base)[keep] if nb else np.zeros(0, dtype=np.int64)
        at = np.searchsorted(bidx, ins_idx, "right")
        pick = np.insert(pick, at, nb + ins_rows)
    else:
        if scope is not None and not scope.inserts:
            ins_rows = ins_rows[:0]
        pick = np.concatenate([pick, nb + ins_rows])
    if len(pick) == nb and np.array_equal(pick, np.arange(nb)):
        return base
    if not base.num_columns:  # nothing but a row count (an index-only read of a row-numbered table)
        return pa.table({"rows": pa.nulls(len(pick))}).select([])
    cols = [take_rows(base.column(i), deltas.column(name), pick) for i, name in enumerate(base.column_names)]
    return pa.Table.from_arrays(cols, schema=base.schema)


def read_delta_rows(store: KVStore, keys: LibraryKeys, sym: str, leaves: np.ndarray, schema: pa.Schema,
                    n_index: int, wanted: list[str], positions: list[int] | tuple[int, ...] | None = None, *,
                    pools: Pools | None = None) -> pa.Table:
    """The rows of delta segments ``leaves`` (in commit order): the index, ``wanted`` data
    columns of ``schema`` (the table's stored schema) and the hidden columns."""
    n_data = len(schema) - n_index
    pos = list(positions) if positions is not None else [schema.get_field_index(n) - n_index for n in wanted]
    if not len(leaves):
        return pa.schema([schema.field(i) for i in range(n_index)] + [schema.field(n_index + p) for p in pos]
                         + list(HIDDEN_FIELDS)).empty_table()
    leaves = np.sort(leaves, order=["start_row", "start_col"])
    return read_segments(store, keys, sym, leaves, delta_schema(schema), n_index, list(wanted) + list(HIDDEN),
                         None, positions=pos + [n_data, n_data + 1, n_data + 2], pools=pools)


def read_applied(store: KVStore, keys: LibraryKeys, sym: str, base_leaves: np.ndarray, delta_leaves: np.ndarray,
                 schema: pa.Schema, n_index: int, wanted: list[str], positions: Any = None, *, is_dt: bool,
                 scope: Scope | None = None, pools: Pools | None = None, stats: Any = None) -> pa.Table:
    """The logical rows of the base row groups ``base_leaves`` (consecutive) and, per
    ``scope``, the inserted rows, for the columns ``wanted``: base and deltas read, applied."""
    rows: int | np.ndarray
    if len(base_leaves):
        r0, r1 = int(base_leaves["start_row"].min()), int(base_leaves["end_row"].max())
        gstart, first = np.unique(base_leaves["start_row"], return_index=True)
        gend = base_leaves["end_row"][first]
        rows = r0
        if int((gend - gstart).sum()) != r1 - r0:  # row groups with gaps (pruned by statistics)
            rows = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in zip(gstart.tolist(), gend.tolist(),
                                                                                 strict=True)])
    else:
        r0 = r1 = rows = scope.row_lo if scope is not None else 0
    gapped = isinstance(rows, np.ndarray)
    base = read_segments(store, keys, sym, base_leaves, schema, n_index, wanted, None if gapped else (r0, r1),
                         positions=positions, pools=pools, stats=stats)
    count = len(rows) if isinstance(rows, np.ndarray) else r1 - r0
    if not base.num_columns and count:  # an index-only read of a row-numbered table: just the row count
        base = pa.table({"rows": pa.nulls(count)}).select([])
    deltas = read_delta_rows(store, keys, sym, delta_leaves, schema, n_index, wanted, positions, pools=pools)
    return apply_deltas(base, rows, deltas, is_dt=is_dt, scope=scope)


def edge_index(store: KVStore, keys: LibraryKeys, sym: str, base_lv: np.ndarray, delta_lv: np.ndarray,
               schema: pa.Schema, n_index: int, *, last: bool, pools: Pools | None = None) -> int | None:
    """The index value (int64 ns) of the first (``last``: the last) row a timeseries with
    deltas reads as, None when it has none: its base row groups are read from that end, index
    column only, each with the deltas of its index interval applied, until one gives a row."""
    gstart, first = np.unique(base_lv["start_row"], return_index=True)
    gend, gmin = base_lv["end_row"][first], base_lv["min_index"][first]
    ng = len(gstart)
    if not ng:
        t = read_applied(store, keys, sym, base_lv, delta_lv, schema, n_index, [], is_dt=True, pools=pools)
        idx = _index_ns(t)
        return (int(idx[-1]) if last else int(idx[0])) if len(idx) else None
    for g in (range(ng - 1, -1, -1) if last else range(ng)):
        lv = base_lv[base_lv["start_row"] == gstart[g]]
        lo = None if g == 0 else int(gmin[g])
        hi = None if g == ng - 1 else int(gmin[g + 1])
        dl = delta_lv
        if len(dl):  # the deltas of the group's rows and index interval
            top = int(lv["max_index"].max()) if hi is None else max(hi, int(lv["max_index"].max()))
            dl = dl[(dl["max_index"] >= (int(gmin[g]) if lo is not None else np.iinfo(np.int64).min))
                    & (dl["min_index"] <= (top if hi is not None else np.iinfo(np.int64).max))]
        t = read_applied(store, keys, sym, lv, dl, schema, n_index, [], is_dt=True,
                         scope=Scope(int(gstart[g]), int(gend[g]), lo, hi), pools=pools)
        idx = _index_ns(t)
        if len(idx):
            return int(idx[-1]) if last else int(idx[0])
    return None
