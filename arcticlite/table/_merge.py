"""Keyed merge: update, insert or delete stored rows matched by key (``merge`` / ``delete_rows``).

A source row *matches* a stored row when their keys are equal: the datetime index (for a
timeseries) and the ``on`` columns. Matching is one vectorised join: the key columns of both
sides are factorised together into integer codes (:func:`key_codes`), and the codes are
matched with ``bincount`` / ``unique`` (:func:`match_codes`), never a loop over rows.

The operation is copy-on-write and touches only the row groups the source can reach:

- timeseries: the row groups whose ``[min_index, max_index]`` holds a source index value
  (read from the table index, no data read), grouped into runs of consecutive row groups
  (*chunks*); each chunk is read, merged with the source rows in its index range and written
  again; source rows that fall between row groups become new segments there;
- row-numbered (RangeIndex) symbols: only the key columns are read to find the matches;
  the row groups holding matched rows are rewritten, inserted rows are new segments at the end.

Every other row group is reused untouched. :func:`plan_chunks` (what is touched) is separate
from :func:`merge_rows` (what a chunk becomes), so a later merge-on-read can write the second
as delta segments instead of rewriting the chunk.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import MutableMapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from arcticlite import normalize as norm
from arcticlite.exceptions import (
    SchemaException,
    StorageException,
    UserInputException,
)
from arcticlite.index import EMPTY_ROOT, FLAG_DELTA, ROW_DTYPE, IndexRoot
from arcticlite.table._deltas import DELETE as OP_DELETE
from arcticlite.table._deltas import (
    DELTAS,
    KEY,
    OP,
    SHIFT,
    delta_info,
    delta_schema,
    edge_index,
    read_delta_rows,
    resolve,
    split_flagged,
    take_rows,
)
from arcticlite.table._deltas import INSERT as OP_INSERT
from arcticlite.table._deltas import UPDATE as OP_UPDATE
from arcticlite.table._lookup import found_rows, index_hits, rows_with_values, take_chunked
from arcticlite.table._ops import (
    Operation,
    TableEngine,
    _with_time_bounds,
    concat_pieces,
    data_record,
    describe_types,
    index_bounds,
    same_data,
)
from arcticlite.table._read import meta_of, schema_of
from arcticlite.table._segments import read_segments, write_segments
from arcticlite.version import VersionRecord

UPDATE, DO_NOTHING, DELETE = "update", "do_nothing", "delete"


@dataclass(frozen=True, slots=True, kw_only=True)
class MergeSpec:
    """What a keyed merge does.

    Attributes
    ----------
    on : tuple of str
        User labels of the key columns besides the datetime index (which always takes part).
    matched : str
        What happens to a stored row a source row matches: ``"update"`` (its non-key columns
        take the source's values), ``"do_nothing"`` or ``"delete"``.
    insert : bool
        Source rows that match no stored row are inserted (after the stored rows of the same
        index value, in source order; at the end for a row-numbered symbol).
    match_na : bool
        Missing key values (NaN, None, NaT) match each other; otherwise they match nothing.
    full_schema : bool
        The source must have the stored columns and types (merge); else only its key columns
        are checked (delete by key).
    """

    on: tuple[str, ...] = ()
    matched: str = UPDATE
    insert: bool = True
    match_na: bool = False
    full_schema: bool = True


# -- matching -----------------------------------------------------------------------------------
def _as_pandas(col: pa.ChunkedArray) -> pd.Series:
    if pa.types.is_timestamp(col.type) and col.type.tz is not None:
        col = col.cast(pa.timestamp(col.type.unit))
    return col.to_pandas()


def key_codes(target: list[pa.ChunkedArray], source: list[pa.ChunkedArray],
              match_na: bool) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of the key tuples of both sides (equal tuples, equal codes); ``-1``
    for a row that can match nothing (a missing key value, unless ``match_na``)."""
    nt = len(target[0]) if target else 0
    ns = len(source[0]) if source else 0
    combined = np.zeros(nt + ns, dtype=np.int64)
    missing = np.zeros(nt + ns, dtype=bool)
    for tcol, scol in zip(target, source, strict=True):
        both = pd.concat([_as_pandas(tcol), _as_pandas(scol)], ignore_index=True)
        codes, uniques = pd.factorize(both, use_na_sentinel=True)  # NaN, None and NaT -> -1
        codes = codes.astype(np.int64)
        missing |= codes < 0
        combined, _ = pd.factorize(combined * (len(uniques) + 1) + (codes + 1))
        combined = combined.astype(np.int64)
    if not match_na:
        combined[missing] = -1
    return combined[:nt], combined[nt:]


@dataclass(frozen=True, slots=True)
class Matches:
    """Who matches whom: per stored row the (first) matching source row or -1, how many
    source rows match it, and per source row whether it matches any stored row."""

    target_src: np.ndarray
    target_count: np.ndarray
    source_matched: np.ndarray


def match_codes(tcodes: np.ndarray, scodes: np.ndarray) -> Matches:
    size = int(max(tcodes.max(initial=0), scodes.max(initial=0))) + 1
    svalid = scodes >= 0
    count = np.bincount(scodes[svalid], minlength=size)
    first = np.full(size, -1, dtype=np.int64)
    uniq, pos = np.unique(scodes[svalid], return_index=True)
    first[uniq] = np.flatnonzero(svalid)[pos]
    in_target = np.zeros(size, dtype=bool)
    in_target[tcodes[tcodes >= 0]] = True
    tvalid = tcodes >= 0
    target_src = np.where(tvalid, first[np.where(tvalid, tcodes, 0)], -1)
    target_count = np.where(tvalid, count[np.where(tvalid, tcodes, 0)], 0)
    source_matched = svalid & in_target[np.where(svalid, scodes, 0)]
    return Matches(target_src, target_count, source_matched)


def match_table(target: pa.Table, source: pa.Table, keys: list[str], match_na: bool, *, is_dt: bool) -> Matches:
    """:func:`match_codes` of the key columns of ``target`` and ``source``. For a timeseries
    (both sorted by index) only the stored rows whose index value the source holds are
    factorised: a merge of a few rows into a large chunk costs two ``searchsorted``."""
    nt = target.num_rows
    cand = None
    if is_dt:
        tidx = target.column(keys[0]).cast(pa.int64()).to_numpy()
        sidx = source.column(keys[0]).cast(pa.int64()).to_numpy()
        cand = rows_with_values(tidx, sidx)
        if len(cand) == nt:
            cand = None
    sub = target if cand is None else target.select(keys).take(pa.array(cand, pa.int64()))
    m = match_codes(*key_codes([sub.column(k) for k in keys], [source.column(k) for k in keys], match_na))
    if cand is None:
        return m
    target_src = np.full(nt, -1, dtype=np.int64)
    target_count = np.zeros(nt, dtype=np.int64)
    target_src[cand] = m.target_src
    target_count[cand] = m.target_count
    return Matches(target_src, target_count, m.source_matched)


def _replace(target: pa.ChunkedArray, source: pa.ChunkedArray, mask: np.ndarray, src_rows: np.ndarray) -> pa.ChunkedArray:
    """``target`` with the rows of ``mask`` replaced by rows ``src_rows`` of ``source``."""
    values = source.cast(target.type).take(pa.array(src_rows, pa.int64()))
    try:
        out = pc.replace_with_mask(target.combine_chunks(), pa.array(mask), values.combine_chunks())
        return pa.chunked_array([out], type=target.type)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # types replace_with_mask lacks
        pick = np.arange(len(target), dtype=np.int64)
        pick[mask] = len(target) + np.arange(len(src_rows))
        return take_rows(target, pa.chunked_array([values.combine_chunks()], type=target.type), pick)


def merge_rows(target: pa.Table, source: pa.Table, spec: MergeSpec, keys: list[str], *, is_dt: bool,
               sym: str, row_offset: int = 0, insert: bool | None = None) -> pa.Table | None:
    """``target`` (stored rows, in order) after merging ``source`` into it; ``None`` when
    nothing changes. ``keys``: the stored names of the key columns (the index first for a
    timeseries). Raises when a stored row is matched by several source rows under update."""
    do_insert = spec.insert if insert is None else insert
    m = match_table(target, source, keys, spec.match_na, is_dt=is_dt)
    if spec.matched == UPDATE:
        multi = np.flatnonzero(m.target_count > 1)
        if len(multi):
            t = int(multi[0])
            raise UserInputException(
                f"E_INVALID_USER_ARGUMENT Multiple source rows match the same target row: stored row "
                f"{row_offset + t} of {sym!r} is matched by {int(m.target_count[t])} source rows (the first is "
                f"source row {int(m.target_src[t])}), so its final value is ambiguous; drop the duplicate keys "
                "from the source or use matched='do_nothing'")
    nt = target.num_rows
    matched_t = m.target_src >= 0
    rows = np.arange(nt, dtype=np.int64)
    changed = False
    if spec.matched == UPDATE and matched_t.any():
        changed = True
        src_rows = m.target_src[matched_t]
        cols = [target.column(i) if name in keys else _replace(target.column(i), source.column(name), matched_t, src_rows)
                for i, name in enumerate(target.column_names)]
        target = pa.Table.from_arrays(cols, schema=target.schema)
    if spec.matched == DELETE and matched_t.any():
        changed = True
        rows = rows[~matched_t]
    new = np.flatnonzero(~m.source_matched) if do_insert else np.zeros(0, np.int64)
    if not changed and not len(new):
        return None
    if len(new):
        if is_dt:  # after the stored rows of the same index value, in source order
            tidx = target.column(keys[0]).cast(pa.int64()).to_numpy()[rows]
            sidx = source.column(keys[0]).cast(pa.int64()).to_numpy()[new]
            at = np.searchsorted(tidx, sidx, "right").astype(np.float64) - 0.5
            order = np.argsort(np.concatenate([np.arange(len(rows), dtype=np.float64), at]), kind="stable")
        else:
            order = np.arange(len(rows) + len(new))
        pick = np.concatenate([rows, nt + new])[order]
    elif len(rows) == nt:
        return target
    else:
        return target.take(pa.array(rows, pa.int64()))
    cols = [take_rows(target.column(i), source.column(name), pick) for i, name in enumerate(target.column_names)]
    return pa.Table.from_arrays(cols, schema=target.schema)


# -- planning -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Chunk:
    """Row groups ``[g0, g1)`` to rewrite with source rows ``[s0, s1)`` (``g0 == g1``: source
    rows inserted before row group ``g0``)."""

    g0: int
    g1: int
    s0: int
    s1: int


def row_groups(leaves: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per row group, in row order: start row, end row, min and max index value."""
    starts, first = np.unique(leaves["start_row"], return_index=True)
    return (starts.astype(np.int64), leaves["end_row"][first].astype(np.int64),
            leaves["min_index"][first].astype(np.int64), leaves["max_index"][first].astype(np.int64))


def plan_chunks(gmin: np.ndarray, gmax: np.ndarray, sidx: np.ndarray) -> list[Chunk]:
    """The chunks a sorted source index ``sidx`` touches in row groups of index ranges
    ``[gmin, gmax]`` (sorted, non-overlapping but for ties): runs of consecutive row groups
    holding a source value, and the source rows between row groups."""
    g = len(gmin)
    a = np.searchsorted(gmax, sidx, "left")  # first row group that may hold the value
    b = np.searchsorted(gmin, sidx, "right") - 1  # last one
    hit = a <= b
    delta = np.zeros(g + 1, dtype=np.int64)
    np.add.at(delta, a[hit], 1)
    np.add.at(delta, b[hit] + 1, -1)
    touched = np.cumsum(delta)[:g] > 0
    edges = np.diff(np.concatenate([[0], touched.astype(np.int8), [0]]))
    run_starts, run_ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    chunks = []
    covered = np.zeros(len(sidx), dtype=bool)
    for g0, g1 in zip(run_starts.tolist(), run_ends.tolist(), strict=True):
        s0 = int(np.searchsorted(sidx, gmin[g0], "left"))
        s1 = int(np.searchsorted(sidx, gmax[g1 - 1], "right"))
        covered[s0:s1] = True
        chunks.append(Chunk(g0, g1, s0, s1))
    rest = np.flatnonzero(~covered)
    if len(rest):  # between row groups: grouped by the row group they precede
        at = np.searchsorted(gmin, sidx[rest], "right")
        cuts = np.flatnonzero(np.diff(at)) + 1
        for part in np.split(np.arange(len(rest)), cuts):
            k = int(at[part[0]])
            chunks.append(Chunk(k, k, int(rest[part[0]]), int(rest[part[-1]]) + 1))
    chunks.sort(key=lambda c: (c.g0, c.g1 != c.g0))
    return chunks


# -- the operation ------------------------------------------------------------------------------
def _plain(typ: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(typ):
        return pa.timestamp(typ.unit)
    if pa.types.is_large_string(typ):
        return pa.string()
    return typ


def _compatible(src: pa.DataType, dst: pa.DataType) -> bool:
    if _plain(src) == _plain(dst):
        return True
    return pa.types.is_null(src) and (pa.types.is_string(dst) or pa.types.is_large_string(dst))


class Merge(Operation):
    """Merge ``table`` into the latest version by key (:class:`MergeSpec`); a write of
    ``table`` when the symbol does not exist and ``upsert``. Rebases like an update: on a
    lost race the merge is computed again on the new head."""

    def __init__(self, engine: TableEngine, sym: str, table: pa.Table, meta: norm.NormMeta, spec: MergeSpec, *,
                 metadata: bytes | None, keep_metadata: bool = False, upsert: bool = False, what: str = "merge") -> None:
        super().__init__(engine, sym)
        self.table, self.meta, self.spec = table, meta, spec
        self.metadata, self.keep_metadata, self.upsert, self.what = metadata, keep_metadata, upsert, what
        self._upsert_leaves: np.ndarray | None = None
        self._built: dict[int, tuple[np.ndarray, int]] = {}
        self._deltas: dict[int, tuple[np.ndarray, int, int, int | None, int | None]] = {}
        # the delta segment of ``_deltas``' base when it is one segment: written with the commit
        # (one LMDB transaction, one sync), kept across attempts on the same base
        self._delta_bodies: dict[str, bytes] = {}

    def extra(self) -> MutableMapping[str, bytes]:
        return ChainMap(self.sink, self._delta_bodies)

    def reads_deltas(self, base: VersionRecord) -> bool:
        """Merged on read, the merge adds its deltas to the base's; copy-on-write, it works on
        the base with its deltas folded."""
        return bool(self.engine.options.merge_on_read)

    # the checks, in ArcticDB's order
    def _check(self, base: VersionRecord) -> tuple[norm.NormMeta, pa.Schema, list[str]]:
        sym, spec, table, meta = self.sym, self.spec, self.table, self.meta
        if self.engine.options.dynamic_schema:
            raise UserInputException(
                f"E_INVALID_USER_ARGUMENT Cannot {self.what} into {sym!r}: a keyed merge is not supported with "
                "dynamic schema; use a library with dynamic_schema=False, or update / append")
        if base.pickled:
            raise SchemaException(f"E_DESCRIPTOR_MISMATCH Cannot {self.what} into {sym!r}: it holds pickled data, "
                                  "not a table; write a DataFrame first")
        bmeta, bschema = meta_of(base), schema_of(base)
        if any(m.index_kind == "multi" and not by_time(m) for m in (bmeta, meta)):
            raise UserInputException(
                f"E_INVALID_USER_ARGUMENT Cannot {self.what} into {sym!r}: a MultiIndex is merged by its first level, "
                "which must be a DatetimeIndex; reset the index levels into columns and name them in 'on'")
        is_dt = by_time(bmeta)
        if is_dt and base.sorted not in ("ASCENDING",) and (base.index.rows if base.index else 0) > 1:
            raise UserInputException(
                f"E_INVALID_USER_ARGUMENT Cannot {self.what} into {sym!r}: its stored index is not sorted "
                "ascending (merge supports sorted timeseries and row-numbered data); rewrite it sorted first")
        n_index = len(bmeta.index_columns)
        if meta.index_kind != bmeta.index_kind or meta.kind != bmeta.kind or \
                (is_dt and table.schema.names[:n_index] != bschema.names[:n_index]):
            raise SchemaException(
                f"E_DESCRIPTOR_MISMATCH Cannot {self.what} into {sym!r}: the source is a {meta.kind} with a "
                f"{meta.index_kind} index {list(table.schema.names[:len(meta.index_columns)])}, the stored data a "
                f"{bmeta.kind} with a {bmeta.index_kind} index {list(bschema.names[:n_index])}")
        labels = list(bmeta.user_columns)
        on_names: list[str] = []
        if spec.full_schema:
            ok = table.schema.names == bschema.names and all(
                _compatible(s.type, t.type) for s, t in zip(table.schema, bschema, strict=True))
            if not ok:
                raise SchemaException(
                    f"E_DESCRIPTOR_MISMATCH Cannot {self.what} into {sym!r}: the source's columns must equal the "
                    f"stored ones, in order and type. Source: {describe_types(table.schema, n_index)}; stored: "
                    f"{describe_types(bschema, n_index)}; cast or reorder the source's columns")
        for label in spec.on:
            if is_dt and n_index and label in (bmeta.index_names[0], bschema.names[0]) and label not in labels:
                raise UserInputException(
                    f"E_INVALID_USER_ARGUMENT The 'on' parameter must not contain the datetime index column "
                    f"{label!r}: the index of a timeseries always takes part in the match; remove it from 'on'")
            if label not in labels:
                raise UserInputException(
                    f"E_COLUMN_NOT_FOUND Column {label!r} specified in the 'on' parameter does not exist in "
                    f"{sym!r} (its columns: {labels}); name existing columns")
            name = bmeta.columns[labels.index(label)]
            if name not in on_names:
                on_names.append(name)
        if not spec.full_schema:
            for name in on_names:
                if name not in table.schema.names:
                    raise UserInputException(f"E_COLUMN_NOT_FOUND the keys have no column {name!r} named in 'on'; "
                                             "give the keys every 'on' column")
                s, t = table.schema.field(name).type, bschema.field(name).type
                if not _compatible(s, t):
                    raise SchemaException(
                        f"E_DESCRIPTOR_MISMATCH Cannot {self.what} of {sym!r}: key column {name!r} is "
                        f"{norm.type_name(s)} in the keys and {norm.type_name(t)} in the stored data; cast it")
        if not is_dt and not on_names:
            raise UserInputException(
                f"E_INVALID_USER_ARGUMENT Cannot {self.what} into {sym!r}: a symbol without a DatetimeIndex "
                "needs at least one column in the 'on' parameter to match rows by")
        keys = ([bschema.names[0]] if is_dt else []) + on_names
        return bmeta, bschema, keys

    def build(self, head: VersionRecord | None, base: VersionRecord | None, seq: int) -> VersionRecord:
        e, sym = self.engine, self.sym
        index = e.index(sym, self.sink)
        if base is None:
            if not self.upsert:
                raise StorageException(f"E_SYMBOL_NOT_FOUND Cannot {self.what} into non-existent symbol {sym!r}"
                                       + ("; pass upsert=True to create it" if self.what == "merge" else ""))
            if not self.spec.insert:
                raise UserInputException(
                    f"E_INVALID_USER_ARGUMENT Error upserting non-existent symbol {sym!r}: a strategy with "
                    "not_matched_by_target='do_nothing' never inserts rows, so the new symbol would be empty; use "
                    "not_matched_by_target='insert' or write the symbol first")
            return self._write_source(head, seq, "write", self.metadata)
        metadata = base.metadata if self.keep_metadata else self.metadata
        stored = base.index.rows if base.index is not None and not base.pickled else -1
        if self.table.num_rows == 0 or (stored == 0 and not self.spec.insert):
            # nothing to match: the same data as a new version (ArcticDB checks nothing)
            return same_data(head, base, seq, "update", metadata)
        if stored == 0:  # nothing stored: every source row is inserted, the source's schema becomes the symbol's
            return self._write_source(head, seq, "update", metadata)
        bmeta, bschema, keys = self._check(base)
        if self.engine.options.merge_on_read and bmeta.index_kind in ("datetime", "range", "none"):
            return self._delta_version(head, base, seq, bmeta, bschema, keys, metadata)
        if base.seq not in self._built:
            self._built = {base.seq: self._rows(base, bmeta, bschema, keys)}
        rows, _ = self._built[base.seq]
        is_dt = bmeta.index_kind == "datetime"  # a MultiIndex keeps no first / last
        return data_record(
            "update", head, seq, index=index.build(rows), meta=bmeta, schema=bschema,
            first=int(rows["min_index"].min()) if is_dt and len(rows) else None,
            last=int(rows["max_index"].max()) if is_dt and len(rows) else None,
            sorted_=base.sorted, metadata=metadata)

    def _delta_version(self, head: VersionRecord | None, base: VersionRecord, seq: int, bmeta: norm.NormMeta,
                       bschema: pa.Schema, keys: list[str], metadata: bytes | None) -> VersionRecord:
        """The version with this merge's changes as delta segments after ``base``'s."""
        if base.seq not in self._deltas:
            self._delta_bodies.clear()  # (a live view: extra() handed it to the commit loop)
            self._deltas = {base.seq: self._delta_leaves(base, bmeta, bschema, keys)}
        new, inserted, deleted, lo, hi = self._deltas[base.seq]
        if not len(new):  # nothing changed: the same data as a new version
            return same_data(head, base, seq, "update", metadata)
        info = delta_info(base) or {"layers": 0, "base_rows": base.index.rows if base.index else 0,
                                    "delta_rows": 0, "delta_segments": 0}
        info["layers"] += 1
        info["delta_rows"] += int(new["end_row"].max() - new["start_row"].min())
        info["delta_segments"] += len(new)
        root = self.engine.index(self.sym, self.sink).append(base.index or EMPTY_ROOT, new)
        rows = (base.index.rows if base.index else 0) + inserted - deleted
        is_dt = bmeta.index_kind == "datetime"
        first = base.first_index if not is_dt or lo is None or base.first_index is None else min(base.first_index, lo)
        last = base.last_index if not is_dt or hi is None or base.last_index is None else max(base.last_index, hi)
        if is_dt and deleted:  # a deleted row may have been the first or the last
            if self._delta_bodies:  # read back below: in the store before the commit
                self.engine.store.write_many(dict(self._delta_bodies))
                self._delta_bodies.clear()
            first, last = self._edges(base, bmeta, new)
        rec = data_record("update", head, seq, index=IndexRoot(root.digest, root.height, rows, root.segments),
                          meta=bmeta, schema=bschema, first=first if is_dt else None, last=last if is_dt else None,
                          sorted_=base.sorted, metadata=metadata)
        rec.extra.update(base.extra)
        rec.extra[DELTAS] = info
        return rec

    def _edges(self, base: VersionRecord, bmeta: norm.NormMeta, new: np.ndarray) -> tuple[int | None, int | None]:
        """First and last index values of ``base`` with the deltas ``new`` added."""
        e = self.engine
        base_lv, delta_lv = split_flagged(e.index(self.sym).leaves(base.index or EMPTY_ROOT))
        delta_lv = np.concatenate([delta_lv, new]) if len(delta_lv) else new
        args = (e.store, e.keys, self.sym, base_lv, delta_lv, schema_of(base), len(bmeta.index_columns))
        return edge_index(*args, last=False, pools=e.pools), edge_index(*args, last=True, pools=e.pools)

    def _delta_leaves(self, base: VersionRecord, bmeta: norm.NormMeta, bschema: pa.Schema,
                      keys: list[str]) -> tuple[np.ndarray, int, int, int | None, int | None]:
        """Write this merge's delta table on ``base``: (its leaf rows, rows inserted, rows
        deleted, smallest and largest index value inserted)."""
        e, sym, spec = self.engine, self.sym, self.spec
        n_index = len(bmeta.index_columns)
        is_dt = bmeta.index_kind == "datetime"
        info = delta_info(base) or {"layers": 0, "base_rows": base.index.rows if base.index else 0, "delta_rows": 0}
        layer = int(info["layers"]) + 1
        source = self.table.select(keys) if not spec.full_schema else self.table
        source = source.cast(pa.schema([bschema.field(n) for n in source.column_names]))
        base_lv, delta_lv = split_flagged(e.index(sym).leaves(base.index or EMPTY_ROOT))
        key_data = keys[1:] if is_dt else keys
        sidx = source.column(0).cast(pa.int64()).to_numpy() if is_dt else None
        if sidx is not None and len(delta_lv):  # only the deltas of the source's index values matter
            delta_lv = delta_lv[(delta_lv["max_index"] >= sidx.min()) & (delta_lv["min_index"] <= sidx.max())]
        old = read_delta_rows(e.store, e.keys, sym, delta_lv, bschema, n_index, key_data, pools=e.pools)
        uniq, last, ops = resolve(old.column(KEY).to_numpy(), old.column(OP).to_numpy()) if old.num_rows else \
            (np.zeros(0, np.int64),) * 3
        layers = uniq >> SHIFT
        gone = uniq[(layers == 0) & (ops == OP_DELETE)]
        live = (layers > 0) & (ops != OP_DELETE)
        inserted = old.take(pa.array(last[live], pa.int64())).select(keys)
        inserted_ids = uniq[live]
        parts, ids = [], []
        gstart, gend, gmin, gmax = row_groups(base_lv) if len(base_lv) else (np.zeros(0, np.int64),) * 4
        if sidx is not None:
            g = len(gstart)
            a, b = np.searchsorted(gmax, sidx, "left"), np.searchsorted(gmin, sidx, "right") - 1
            hit = a <= b
            step = np.zeros(g + 1, dtype=np.int64)
            np.add.at(step, a[hit], 1)
            np.add.at(step, b[hit] + 1, -1)
            edges = np.diff(np.concatenate([[0], (np.cumsum(step)[:g] > 0).astype(np.int8), [0]]))
            runs = list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist(), strict=True))
        else:
            runs = [(0, len(gstart))] if len(gstart) else []
        for g0, g1 in runs:
            r0, r1 = int(gstart[g0]), int(gend[g1 - 1])
            lv = base_lv[(base_lv["start_row"] >= r0) & (base_lv["start_row"] < r1)]
            hits = index_hits(e.store, e.keys, sym, lv, sidx, bschema.field(0), e.pools) \
                if sidx is not None and not key_data else None
            if hits is not None:  # the index is the only key: searched in place, nothing decoded
                t, pos = hits
            elif sidx is not None:  # only the rows whose index value the source holds
                t = read_segments(e.store, e.keys, sym, lv, bschema, n_index, key_data, (r0, r1), pools=e.pools)
                found = found_rows(t.column(0), sidx)
                t, pos = take_chunked(t, found), r0 + found
            else:
                t = read_segments(e.store, e.keys, sym, lv, bschema, n_index, key_data, (r0, r1), pools=e.pools)
                pos = np.arange(r0, r1, dtype=np.int64)
            parts.append(t.select(keys))
            ids.append(pos)
        if len(gone) and ids:
            for i, (t, pos) in enumerate(zip(parts, ids, strict=True)):
                alive = ~np.isin(pos, gone)
                if not alive.all():
                    parts[i], ids[i] = t.filter(pa.array(alive)), pos[alive]
        updated = (layers == 0) & (ops == OP_UPDATE)
        if updated.any() and ids:  # an earlier merge may have updated a column this one matches on
            upos, urow = uniq[updated], last[updated]
            for i, (t, pos) in enumerate(zip(parts, ids, strict=True)):
                at = np.minimum(np.searchsorted(upos, pos), len(upos) - 1)
                hit = upos[at] == pos
                if hit.any():
                    pick = np.arange(t.num_rows, dtype=np.int64)
                    pick[hit] = t.num_rows + urow[at[hit]]
                    parts[i] = pa.Table.from_arrays([take_rows(t.column(k), old.column(k), pick) for k in keys],
                                                    schema=t.schema)
        if sidx is not None and len(inserted_ids):
            iidx = inserted.column(0).cast(pa.int64()).to_numpy()
            found = np.flatnonzero(np.searchsorted(sidx, iidx, "right") > np.searchsorted(sidx, iidx, "left"))
            inserted, inserted_ids = inserted.take(pa.array(found, pa.int64())), inserted_ids[found]
        key_schema = pa.schema([bschema.field(k) for k in keys])
        cand = pa.concat_tables([p.cast(key_schema) for p in parts] + [inserted.cast(key_schema)])
        cand_ids = np.concatenate(ids + [inserted_ids]).astype(np.int64)
        m = match_codes(*key_codes([cand.column(k) for k in keys], [source.column(k) for k in keys], spec.match_na))
        if spec.matched == UPDATE:
            multi = np.flatnonzero(m.target_count > 1)
            if len(multi):
                t = int(multi[0])
                which = (f"stored row {int(cand_ids[t])}" if not len(uniq) and cand_ids[t] >> SHIFT == 0 else
                         f"the stored row with key {[cand.column(k)[t].as_py() for k in keys]}")
                raise UserInputException(
                    f"E_INVALID_USER_ARGUMENT Multiple source rows match the same target row: {which} of {sym!r} "
                    f"is matched by {int(m.target_count[t])} "
                    f"source rows (the first is source row {int(m.target_src[t])}), so its final value is ambiguous; "
                    "drop the duplicate keys from the source or use matched='do_nothing'")
        names = bschema.names
        pieces: list[tuple[dict[str, pa.ChunkedArray], np.ndarray, int]] = []
        sel = np.flatnonzero(m.target_src >= 0)
        if len(sel) and spec.matched in (UPDATE, DELETE):
            take = pa.array(sel, pa.int64())
            if spec.matched == UPDATE:
                src = pa.array(m.target_src[sel], pa.int64())
                cols = {n: cand.column(n).take(take) if n in keys else source.column(n).take(src) for n in names}
            else:
                cols = {n: cand.column(n).take(take) if n in keys else
                        pa.chunked_array([pa.nulls(len(sel), bschema.field(n).type)]) for n in names}
            pieces.append((cols, cand_ids[sel], OP_UPDATE if spec.matched == UPDATE else OP_DELETE))
        new = np.flatnonzero(~m.source_matched) if spec.insert else np.zeros(0, np.int64)
        if len(new):
            take = pa.array(new, pa.int64())
            pieces.append(({n: source.column(n).take(take) for n in names},
                           (layer << SHIFT) | np.arange(len(new), dtype=np.int64), OP_INSERT))
        if not pieces:
            return np.zeros(0, dtype=ROW_DTYPE), 0, 0, None, None
        dschema = delta_schema(bschema)
        arrays = [pa.concat_arrays([p[0][n].combine_chunks().cast(bschema.field(n).type) for p in pieces])
                  for n in names]
        arrays.append(pa.array(np.full(sum(len(p[1]) for p in pieces), layer, dtype=np.int32)))
        arrays.append(pa.array(np.concatenate([p[1] for p in pieces])))
        arrays.append(pa.array(np.concatenate([np.full(len(p[1]), p[2], dtype=np.int8) for p in pieces])))
        table = pa.Table.from_arrays(arrays, schema=dschema)
        lo = hi = None
        if is_dt:
            tidx = table.column(0).cast(pa.int64()).to_numpy()
            order = np.argsort(tidx, kind="stable")
            if not np.array_equal(order, np.arange(len(order))):
                table = table.take(pa.array(order, pa.int64()))
            if len(new):
                ins_idx = sidx[new] if sidx is not None else tidx
                lo, hi = int(ins_idx.min()), int(ins_idx.max())
        start = int(info["base_rows"]) + int(info["delta_rows"])
        leaves = self._wrote(write_segments(e.store, e.keys, sym, table, e.layout(bmeta), start_row=start,
                                            is_datetime=is_dt, flags=FLAG_DELTA, pools=e.pools,
                                            sink=self._delta_bodies))
        n_del = len(sel) if spec.matched == DELETE else 0
        return leaves, len(new), n_del, lo, hi

    def _write_source(self, head: VersionRecord | None, seq: int, kind: str, metadata: bytes | None) -> VersionRecord:
        e = self.engine
        if self._upsert_leaves is None:
            self._upsert_leaves = self._wrote(write_segments(
                e.store, e.keys, self.sym, self.table, e.layout(self.meta), start_row=0,
                is_datetime=self.meta.index_kind == "datetime", pools=e.pools))
        first, last = index_bounds(self.table, self.meta)
        return data_record(kind, head, seq, index=e.index(self.sym, self.sink).build(self._upsert_leaves),
                           meta=self.meta, schema=self.table.schema, first=first, last=last,
                           sorted_=norm.sortedness(self.table, self.meta), metadata=metadata)

    def _rows(self, base: VersionRecord, bmeta: norm.NormMeta, bschema: pa.Schema,
              keys: list[str]) -> tuple[np.ndarray, int]:
        """The leaf rows of the merged version, and the number of row groups rewritten."""
        e, sym, spec = self.engine, self.sym, self.spec
        n_index = len(bmeta.index_columns)
        is_dt = by_time(bmeta)
        multi = bmeta.index_kind == "multi"
        source = self.table.select(keys) if not spec.full_schema else self.table
        source = source.cast(pa.schema([bschema.field(n) for n in source.column_names]))
        leaves = e.index(sym).leaves(base.index or EMPTY_ROOT)
        if multi:  # MultiIndex leaves carry row numbers: plan with their first level's bounds
            leaves = _with_time_bounds(e, sym, leaves, bmeta.index_columns[0])
        layout = e.layout(bmeta)
        gstart, gend, gmin, gmax = row_groups(leaves) if len(leaves) else (np.zeros(0, np.int64),) * 4
        data_names = bschema.names[n_index:]

        def read(g0: int, g1: int, wanted: list[str] = data_names) -> pa.Table:
            lv = leaves[(leaves["start_row"] >= gstart[g0]) & (leaves["start_row"] < gend[g1 - 1])]
            return read_segments(e.store, e.keys, sym, lv, bschema, n_index, wanted, (int(gstart[g0]), int(gend[g1 - 1])),
                                 pools=e.pools)

        def write(t: pa.Table) -> np.ndarray:
            return self._wrote(write_segments(e.store, e.keys, sym, t, layout, start_row=0, is_datetime=is_dt,
                                              pools=e.pools))

        def group_leaves(g0: int, g1: int) -> np.ndarray:
            if g0 >= g1:
                return np.zeros(0, dtype=ROW_DTYPE)
            return leaves[(leaves["start_row"] >= gstart[g0]) & (leaves["start_row"] < gend[g1 - 1])]

        replaced: dict[int, tuple[int, np.ndarray]] = {}  # first row group -> (end row group, new leaves)
        tail = np.zeros(0, dtype=ROW_DTYPE)
        if is_dt:
            sidx = source.column(0).cast(pa.int64()).to_numpy()
            for c in plan_chunks(gmin, gmax, sidx):
                src = source.slice(c.s0, c.s1 - c.s0)
                if c.g0 == c.g1:
                    if spec.insert and src.num_rows:
                        prev = replaced.get(c.g0, (c.g0, np.zeros(0, dtype=ROW_DTYPE)))
                        replaced[c.g0] = (prev[0], concat_pieces([write(src), prev[1]], is_dt))
                    continue
                out = merge_rows(read(c.g0, c.g1), src, spec, keys, is_dt=True, sym=sym,
                                 row_offset=int(gstart[c.g0]))
                if out is not None:
                    prev = replaced.get(c.g0, (c.g0, np.zeros(0, dtype=ROW_DTYPE)))
                    replaced[c.g0] = (c.g1, concat_pieces([prev[1], write(out)], is_dt))
        else:
            g = len(gstart)
            tkeys = read(0, g, [k for k in keys]) if g else pa.table({k: source.column(k).slice(0, 0) for k in keys})
            m = match_codes(*key_codes([tkeys.column(k) for k in keys], [source.column(k) for k in keys],
                                       spec.match_na))
            if spec.matched == UPDATE:  # checked on all stored rows before anything is written
                merge_rows(tkeys, source.select(keys), spec, keys, is_dt=False, sym=sym, insert=False)
            if spec.matched in (UPDATE, DELETE):
                hit_rows = np.flatnonzero(m.target_src >= 0)
                for gi in np.unique(np.searchsorted(gstart, hit_rows, "right") - 1).tolist():
                    out = merge_rows(read(gi, gi + 1), source, spec, keys, is_dt=False, sym=sym,
                                     row_offset=int(gstart[gi]), insert=False)
                    if out is not None:
                        replaced[gi] = (gi + 1, write(out))
            new = np.flatnonzero(~m.source_matched)
            if spec.insert and len(new):
                tail = write(source.take(pa.array(new, pa.int64())))
        pieces, cursor_g = [], 0
        for g0 in sorted(replaced):
            g1, lv = replaced[g0]
            pieces.append(group_leaves(cursor_g, g0))
            pieces.append(lv)
            cursor_g = max(cursor_g, g1)
        pieces.append(group_leaves(cursor_g, len(gstart)))
        pieces.append(tail)
        rows = concat_pieces(pieces, is_dt)
        if multi:  # back to row numbers, as every MultiIndex leaf holds
            rows["min_index"] = rows["start_row"]
            rows["max_index"] = rows["end_row"].astype(np.int64) - 1
        return rows, len(replaced)


def by_time(meta: norm.NormMeta) -> bool:
    """Whether rows of ``meta`` are ordered and matched by a datetime index (a DatetimeIndex,
    or a MultiIndex whose first level is one)."""
    return meta.index_kind == "datetime" or (meta.index_kind == "multi" and meta.index_hints[:1] == ("dt",))
