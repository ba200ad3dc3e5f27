"""Named write operations: each turns the head of a symbol into its next version record.

An operation is built once per call (its new segments encoded and written before the commit
loop) and then asked, once per commit attempt, for the record to commit on the head that
attempt sees (:meth:`Operation.build`). :meth:`TableEngine.apply` is the one rebase loop:
when a concurrent writer wins, the operation is rebuilt on the new head and its segments are
reused. Index nodes and small segments an attempt produces go into :attr:`Operation.sink`
and are written in the commit transaction (LMDB) or just before the commit point (S3).
"""

from __future__ import annotations

import dataclasses
from collections.abc import MutableMapping
from typing import Any, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa

from arcticlite import format as fermion
from arcticlite import normalize as norm
from arcticlite._envelope import seal_pickled
from arcticlite.exceptions import (
    AppendOrderException,
    CommitConflictError,
    InternalException,
    NormalizationException,
    SchemaException,
    SortingException,
    UnsortedDataException,
)
from arcticlite.index import (
    EMPTY_ROOT,
    FLAG_OPEN_TAIL,
    ROW_DTYPE,
    IndexRoot,
    TableIndexIO,
    hex_digests,
    new_digest,
    shifted,
)
from arcticlite.storage import KVStore
from arcticlite.table._deltas import DELTAS, delta_info, split_flagged
from arcticlite.table._pools import Pools
from arcticlite.table._read import meta_of, schema_bytes, schema_of
from arcticlite.table._segments import (
    OPTIMIZE_FOR,
    Layout,
    col_slices,
    is_small_append,
    write_segments,
    write_tail,
)
from arcticlite.version import LibraryKeys, VersionEngine, VersionRecord


class TableEngine(Protocol):
    """What operations use of :class:`~arcticlite.table.TableEngine`."""

    store: KVStore
    keys: LibraryKeys
    options: Any
    versions: VersionEngine

    @property
    def pools(self) -> Pools: ...

    def index(self, sym: str, sink: dict[str, bytes] | None = None) -> TableIndexIO: ...

    def layout(self, meta: norm.NormMeta) -> Layout: ...


def timed_index(meta: norm.NormMeta) -> bool:
    """Whether the index is ordered by time: a DatetimeIndex, or a MultiIndex whose first level
    is one (ArcticDB orders, appends and describes it by that level)."""
    return meta.index_kind == "datetime" or (meta.index_kind == "multi" and tuple(meta.index_hints[:1]) == ("dt",))


def index_bounds(table: pa.Table, meta: norm.NormMeta) -> tuple[int | None, int | None]:
    """First and last values (int64 ns) of a datetime index (of the first level of a
    MultiIndex ordered by time); ``(None, None)`` otherwise."""
    if not timed_index(meta) or table.num_rows == 0:
        return None, None
    vals = table.column(0).cast(pa.int64())
    return vals[0].as_py(), vals[-1].as_py()


def combine_sorted(old: str, new: str, old_last: int | None, new_first: int | None,
                   old_rows: int, new_rows: int) -> str:
    """Sortedness of rows ``new`` appended after rows ``old``."""
    if old_rows == 0:
        return new
    if new_rows == 0:
        return old
    if old == "UNKNOWN" and new == "UNKNOWN":
        return "UNKNOWN"
    if old == "ASCENDING" and new == "ASCENDING" and (old_last is None or new_first is None or new_first >= old_last):
        return "ASCENDING"
    return "UNSORTED"


def data_record(kind: str, head: VersionRecord | None, seq: int, *, index: IndexRoot, meta: norm.NormMeta,
                schema: pa.Schema, first: int | None, last: int | None, sorted_: str,
                metadata: bytes | None, pickled: bool = False) -> VersionRecord:
    """The record of a new data version ``seq`` on ``head`` (its deleted ranges carried over)."""
    return VersionRecord(
        symbol="", seq=seq, kind=kind, created_ns=0, token="",
        dead=head.dead if head is not None else (), latest_live=seq, index=index,
        norm=meta.to_json().decode(), schema=schema_bytes(schema), first_index=first, last_index=last,
        sorted=sorted_, pickled=pickled, metadata=metadata,
    )


SLICES = "slices"
"""Key of a version record's ``extra``: rows where a row slice begins inside a segment. Small
appends join the symbol's open tail segment (one segment for many appends), but each append is
its own row slice for ``compact_data`` as in ArcticDB (which keeps a segment per append), so
that compaction plans, does work and takes version ids as ArcticDB does."""


def same_data(head: VersionRecord | None, base: VersionRecord, seq: int, kind: str,
              metadata: bytes | None) -> VersionRecord:
    """A new version of ``base``'s data with ``metadata``: what ArcticDB makes of an empty
    append or update, whatever the type of the empty object (a frame to a series, anything
    to pickled data), and of a merge that changes nothing."""
    return base.with_(kind=kind, dead=head.dead if head is not None else (), latest_live=seq, metadata=metadata)


def slice_cuts(rec: VersionRecord) -> tuple[int, ...]:
    """The rows of ``rec`` where a row slice begins inside a segment (see :data:`SLICES`)."""
    return tuple(int(x) for x in rec.extra.get(SLICES, ()))


CONSUMED = "staged"
"""Key of a version record's ``extra``: the staged entries (their key's last part) the version
was finalized from. The entries are deleted after the commit; if the process dies in between,
readers of the staging area see from this that they were used, and skip (then delete) them."""

def merged_meta(bmeta: norm.NormMeta, nmeta: norm.NormMeta, schema: pa.Schema, rows: int) -> norm.NormMeta:
    """The stored meta after adding ``rows`` rows of ``nmeta``'s data to ``bmeta``'s under
    ``schema``: new columns (dynamic schema) appended, the index tz of the newest write -- of
    the newest write that wrote a row: an empty frame keeps the stored tz and unit (ArcticDB)."""
    if not rows and nmeta.index_kind == bmeta.index_kind:
        nmeta = dataclasses.replace(nmeta, tz=bmeta.tz, tz_library=bmeta.tz_library, index_unit=bmeta.index_unit)
    return norm.common_meta(bmeta, nmeta, schema)


#: A NaT in an int64 index column (numpy's int64 view of it).
_NAT_NS = -(2**63)


def _ts(ns: int) -> str:
    return "NaT" if ns == _NAT_NS else str(pd.Timestamp(ns, unit="ns"))


class Operation:
    """A named write: :meth:`build` gives the record to commit on a head.

    Attributes
    ----------
    sink : dict
        Keys (index nodes, small segments) the current attempt wrote; cleared per attempt.
    written : list of str
        Keys the operation wrote before the commit loop (its new segments): nothing refers to
        them until its commit, so :meth:`discard` deletes them when the operation is refused.
    """

    def __init__(self, engine: TableEngine, sym: str) -> None:
        self.engine = engine
        self.sym = sym
        self.sink: dict[str, bytes] = {}
        self.written: list[str] = []

    def _wrote(self, leaves: np.ndarray) -> np.ndarray:
        """Remember the segments of ``leaves`` as written by this operation; return them."""
        self.written += [self.engine.keys.tdata(self.sym, d) for d in hex_digests(leaves)]
        return leaves

    def discard(self) -> None:
        """Delete what the operation wrote: it was refused (a refused write changes nothing)."""
        if self.written:
            self.engine.store.delete(self.written)
            self.written = []

    def extra(self) -> MutableMapping[str, bytes]:
        """Keys to write with the commit (a live view: filled by :meth:`build`)."""
        return self.sink

    def begin(self) -> None:
        """Start an attempt: forget what a lost attempt produced."""
        self.sink.clear()

    def reads_deltas(self, base: VersionRecord) -> bool:
        """Whether :meth:`build` takes a base with delta segments as it is; otherwise the
        engine folds them first (the operation works on plain row groups)."""
        return False

    def build(self, head: VersionRecord | None, base: VersionRecord | None, seq: int) -> VersionRecord:
        """The record for version ``seq`` on ``head`` (``base``: its latest live data version)."""
        raise NotImplementedError


class Append(Operation):
    """Rows after the latest version (a write when there is none); small appends join the
    symbol's open tail segment instead of adding one."""

    def __init__(self, engine: TableEngine, sym: str, table: pa.Table, meta: norm.NormMeta, *,
                 sorted_: str, metadata: bytes | None, validate_index: bool) -> None:
        super().__init__(engine, sym)
        table, self.nan_rows = norm.split_nan_rows(table)
        self.table, self.meta, self.sorted, self.metadata = table, meta, sorted_, metadata
        self.validate_index = validate_index
        self.layout = engine.layout(meta)
        self.is_dt = meta.index_kind == "datetime"
        self.small = is_small_append(table, self.layout)
        if self.small:  # the rows may join the open tail, which holds plain values
            table = self.table = norm.value_table(table)
        self.first, self.last = index_bounds(table, meta)
        self._fresh: dict[str, bytes] = {}
        self._fresh_rows: list[np.ndarray] = []
        self._segs: dict[str, bytes] = {}
        if not self.small:
            self._new_segments()  # encoded (and written, when large) before the commit loop

    def extra(self) -> MutableMapping[str, bytes]:
        from collections import ChainMap

        return ChainMap(self.sink, self._segs)

    def begin(self) -> None:
        super().begin()
        self._segs.clear()

    def _new_segments(self) -> np.ndarray:
        """Leaf rows of the new rows as segments of their own (encoded on first need: a small
        append that joins the open tail never needs them)."""
        e = self.engine
        if not self._fresh_rows:
            self._fresh_rows.append(self._wrote(write_segments(
                e.store, e.keys, self.sym, self.table, self.layout, start_row=0, is_datetime=self.is_dt,
                sink=self._fresh, optimize_for="write" if self.small else OPTIMIZE_FOR,
                flags=FLAG_OPEN_TAIL if self.small else 0, pools=e.pools, nan_rows=self.nan_rows)))
        self._segs.update(self._fresh)
        return self._fresh_rows[0]

    def reads_deltas(self, base: VersionRecord) -> bool:
        """A sorted timeseries append strictly after every row (inserted ones too) with the
        stored schema keeps the base's deltas pending: its rows are base rows after the last one,
        owning no change. Otherwise the deltas are folded first."""
        if not (self.is_dt and self.first is not None and base.last_index is not None
                and self.first > base.last_index and not base.pickled and self.sorted == "ASCENDING"
                and _same_columns(norm.value_schema(self.table.schema), schema_of(base))):
            return False
        # after every stored row too (a deleted last row keeps its segment): base rows stay sorted
        stored = self.engine.index(self.sym).leaves(base.index or EMPTY_ROOT)
        return not len(stored) or self.first > int(stored["max_index"].max())

    def _after_deltas(self, base: VersionRecord, index: TableIndexIO) -> tuple[IndexRoot, dict[str, Any]]:
        """The index of ``base`` (with deltas) and the new rows after its base rows, and the
        delta bookkeeping: the delta leaves move down by the rows appended."""
        info = delta_info(base) or {}
        base_lv, delta_lv = split_flagged(index.leaves(base.index or EMPTY_ROOT))
        nb, n = int(info["base_rows"]), self.table.num_rows
        new = shifted(self._new_segments(), nb, row_numbers_index=False)
        new["flags"] &= np.uint32(~FLAG_OPEN_TAIL & 0xFFFFFFFF)  # an open tail is the last row group only
        root = index.build(np.concatenate([base_lv, new, shifted(delta_lv, n, row_numbers_index=False)]))
        rows = (base.index.rows if base.index else 0) + n
        info["base_rows"] = nb + n
        return IndexRoot(root.digest, root.height, rows, root.segments), info

    def build(self, head: VersionRecord | None, base: VersionRecord | None, seq: int) -> VersionRecord:
        e, sym, table, meta = self.engine, self.sym, self.table, self.meta
        index = e.index(sym, self.sink)
        first, last = self.first, self.last
        def rows_alone(kind: str) -> VersionRecord:  # the new rows are the whole symbol
            return data_record(kind, head, seq, index=index.build(self._new_segments()), meta=meta,
                               schema=norm.value_schema(table.schema), first=first, last=last,
                               sorted_=self.sorted, metadata=self.metadata)

        if base is None:
            return rows_alone("write" if head is None else "append")
        if not table.num_rows and (base.pickled or meta_of(base).kind != meta.kind):
            return same_data(head, base, seq, "append", self.metadata)
        if base.pickled:
            raise InternalException(f"Cannot append to pickled data (symbol {sym!r})")
        bmeta, bschema = meta_of(base), schema_of(base)
        brows = base.index.rows if base.index is not None else 0
        start = first if first is not None or not table.num_rows else _NAT_NS  # a NaT start: before every row

        def refuse_order() -> None:
            if timed_index(meta) and start is not None and base.last_index is not None and start < base.last_index:
                raise AppendOrderException(
                    f"E_ASSERTION_FAILURE: Can't append dataframe with start index {_ts(start)} to existing "
                    f"sequence ending at {_ts(base.last_index)} (version {base.vid}); sort the frame or use update()"
                )

        # ArcticDB's order: under dynamic schema the rows' order after the object kinds and before
        # the columns' types; under static schema after the columns and the stored sortedness
        order_first = e.options.dynamic_schema and meta.kind == bmeta.kind
        if (order_first and not brows and table.num_rows and meta.kind == "series" and bmeta.written_empty
                and bmeta.index_kind != meta.index_kind):
            # a Series written with no row (a timestamp index of no value) takes the index of
            # the first rows appended under dynamic schema, as ArcticDB
            return rows_alone("append")
        if order_first:
            refuse_order()
        schema = norm.common_schema(bmeta, bschema, meta, norm.value_schema(table.schema), dynamic=e.options.dynamic_schema,
                                    stored_rows=brows, new_rows=table.num_rows) or bschema
        if self.is_dt and self.validate_index and base.sorted not in ("ASCENDING", "UNKNOWN") and brows:
            raise UnsortedDataException("When calling append with validate_index enabled, the existing data must be sorted")
        if not order_first:
            refuse_order()
        tail = None
        broot = base.index
        merged: dict[str, bytes] = {}
        deltas = None
        if delta_info(base) is not None:  # pending deltas kept (see reads_deltas)
            root, deltas = self._after_deltas(base, index)
        elif self.small and broot is not None and broot.digest is not None:
            # the rows join the symbol's open tail: one segment replaced, none added
            ncs = len(col_slices(len(table.column_names) - self.layout.n_index, self.layout))
            tail = write_tail(e.store, e.keys, sym, index.last_leaf_rows(broot, ncs), table, self.layout,
                              is_datetime=self.is_dt, sink=merged, pools=e.pools, nan_rows=self.nan_rows)
        if tail is not None and broot is not None:
            self._segs.update(merged)
            root = index.append(broot, tail, replace_last=len(tail))
        elif deltas is None:
            root = index.append(broot or EMPTY_ROOT, shifted(self._new_segments(), brows, row_numbers_index=not self.is_dt))
        rec = data_record(
            "append", head, seq, index=root, meta=merged_meta(bmeta, meta, schema, table.num_rows), schema=schema,
            first=base.first_index if base.first_index is not None else first,
            last=last if last is not None else base.last_index,
            sorted_=combine_sorted(base.sorted, self.sorted, base.last_index, first, brows, table.num_rows),
            metadata=self.metadata,
        )
        cuts = slice_cuts(base)
        if tail is not None and int(tail["start_row"][0]) < brows:
            cuts += (brows,)  # these rows joined the open tail: their own row slice all the same
        if cuts:
            rec.extra[SLICES] = list(cuts)
        if deltas is not None:
            rec.extra[DELTAS] = deltas
        return rec


def _same_columns(a: pa.Schema, b: pa.Schema) -> bool:
    return a.names == b.names and a.types == b.types


class Write(Operation):
    """A whole new table as the next version (its segments written before the loop)."""

    def __init__(self, engine: TableEngine, sym: str, table: pa.Table, meta: norm.NormMeta, *,
                 sorted_: str, metadata: bytes | None, kind: str = "write",
                 row_major: list[norm.RowMajorBlock] | None = None) -> None:
        super().__init__(engine, sym)
        # a table of one segment is written with the commit (one LMDB transaction, one sync)
        nodes: dict[str, bytes] = {}
        leaves = self._wrote(write_segments(engine.store, engine.keys, sym, table, engine.layout(meta), start_row=0,
                                            is_datetime=meta.index_kind == "datetime", pools=engine.pools,
                                            row_major=row_major, sink=nodes))
        table = norm.split_nan_rows(table)[0]
        self.root = engine.index(sym, nodes).build(leaves)
        self.nodes = nodes  # the index of a write does not depend on the head: built once
        self.meta, self.schema, self.sorted, self.metadata, self.kind = (meta, norm.value_schema(table.schema), sorted_,
                                                                          metadata, kind)
        self.first, self.last = index_bounds(table, meta)

    def extra(self) -> MutableMapping[str, bytes]:
        return self.nodes

    def reads_deltas(self, base: VersionRecord) -> bool:
        return True

    def build(self, head: VersionRecord | None, base: VersionRecord | None, seq: int) -> VersionRecord:
        return data_record(self.kind, head, seq, index=self.root, meta=self.meta, schema=self.schema,
                           first=self.first, last=self.last, sorted_=self.sorted, metadata=self.metadata)


class WriteMetadata(Operation):
    """The latest data with new user metadata (no data rewritten)."""

    def __init__(self, engine: TableEngine, sym: str, metadata: bytes | None) -> None:
        super().__init__(engine, sym)
        self.metadata = metadata

    def reads_deltas(self, base: VersionRecord) -> bool:
        return True

    def build(self, head: VersionRecord | None, base: VersionRecord | None, seq: int) -> VersionRecord:
        dead = head.dead if head else ()
        if base is None:
            return VersionRecord(symbol=self.sym, seq=seq, kind="pickle", created_ns=0, token="", dead=dead,
                                 latest_live=seq, index=None, pickled=True, metadata=self.metadata)
        return base.with_(kind="metadata", dead=dead, latest_live=seq, metadata=self.metadata)



class WritePickled(Operation):
    """Any Python object, pickled into one segment (``write_pickle``)."""

    def __init__(self, engine: TableEngine, sym: str, body: bytes, metadata: bytes | None) -> None:
        super().__init__(engine, sym)
        body = seal_pickled(body)  # checksummed: a corrupt pickle is never loaded
        digest = new_digest(body)
        engine.store.write(engine.keys.tdata(sym, digest), body)
        self.written.append(engine.keys.tdata(sym, digest))
        leaf = np.zeros(1, dtype=ROW_DTYPE)
        leaf["digest"] = np.frombuffer(bytes.fromhex(digest), dtype=np.uint8)
        leaf["nbytes"] = len(body)
        root = engine.index(sym).build(leaf)
        self.root = IndexRoot(digest=root.digest, height=root.height, rows=0, segments=1)
        self.metadata = metadata

    def reads_deltas(self, base: VersionRecord) -> bool:
        return True

    def build(self, head: VersionRecord | None, base: VersionRecord | None, seq: int) -> VersionRecord:
        return VersionRecord(symbol=self.sym, seq=seq, kind="pickle", created_ns=0, token="",
                             dead=head.dead if head is not None else (), latest_live=seq, index=self.root,
                             pickled=True, metadata=self.metadata)


class ReplaceRange(Operation):
    """Replace the stored rows of the closed index interval ``[lo, hi]`` by ``table`` (``update``),
    or by nothing (``delete_data_in_range``). Segments straddling the interval's ends are
    trimmed in the index (a leaf row may reference a slice of its segment), never rewritten,
    so the cost is the new data plus the touched index rows."""

    def __init__(self, engine: TableEngine, sym: str, table: pa.Table | None, meta: norm.NormMeta | None,
                 lo: int, hi: int, metadata: bytes | None, *, upsert: bool, kind: str) -> None:
        super().__init__(engine, sym)
        nan_rows = None
        if table is not None:
            table, nan_rows = norm.split_nan_rows(table)
        self.table, self.meta, self.lo, self.hi = table, meta, lo, hi
        self.metadata, self.upsert, self.kind = metadata, upsert, kind
        self.new_leaves = None
        self._segs: dict[str, bytes] = {}  # new rows of one segment: written with the commit
        if table is not None and meta is not None:
            self.new_leaves = self._wrote(write_segments(engine.store, engine.keys, sym, table, engine.layout(meta),
                                                         start_row=0, is_datetime=meta.index_kind == "datetime",
                                                         pools=engine.pools,
                                                         nan_rows=nan_rows, sink=self._segs))

    def extra(self) -> MutableMapping[str, bytes]:
        from collections import ChainMap

        return ChainMap(self.sink, self._segs)

    def build(self, head: VersionRecord | None, base: VersionRecord | None, seq: int) -> VersionRecord:
        e, sym, table, meta = self.engine, self.sym, self.table, self.meta
        index = e.index(sym, self.sink)
        if base is None:
            if self.kind == "update" and self.upsert and table is not None and meta is not None:
                assert self.new_leaves is not None
                first, last = index_bounds(table, meta)
                if not table.num_rows and meta.index_kind == "datetime":  # no row in its date_range
                    meta = dataclasses.replace(meta, written_empty=True)  # described as a 0-row write
                return data_record("write", head, seq, index=index.build(self.new_leaves), meta=meta,
                                   schema=norm.value_schema(table.schema), first=first, last=last,
                                   sorted_=norm.sortedness(table, meta), metadata=self.metadata)
            what = "update" if self.kind == "update" else "delete from"
            raise InternalException(f"Cannot {what} non-existent symbol {sym!r}"
                                    + (": use upsert=True to create it" if self.kind == "update" else ""))
        if self.kind == "update" and table is not None and meta is not None and not table.num_rows \
                and (base.pickled or meta_of(base).kind != meta.kind):
            return same_data(head, base, seq, "update", self.metadata)
        if base.pickled:
            raise InternalException(f"Cannot update pickled data (symbol {sym!r})")
        bmeta, bschema = meta_of(base), schema_of(base)
        multi = bmeta.index_kind == "multi" and bmeta.index_hints[:1] == ("dt",)
        if bmeta.index_kind != "datetime" and not multi:
            if self.kind == "update" and table is not None and not table.num_rows:
                return same_data(head, base, seq, "update", self.metadata)  # no row: a new version (ArcticDB)
            raise InternalException(f"Update not supported for non-timeseries indexes (symbol {sym!r})")
        if base.sorted not in ("ASCENDING", "UNKNOWN"):
            raise UnsortedDataException(f"Cannot update symbol {sym!r}: its stored index is not sorted")
        schema, out_meta = bschema, bmeta
        if table is not None and meta is not None:
            if meta.kind != bmeta.kind:
                raise NormalizationException(f"E_INCOMPATIBLE_OBJECTS: cannot update a {bmeta.kind} with a {meta.kind}")
            dynamic = e.options.dynamic_schema
            if table.num_rows or not dynamic:
                schema = norm.common_schema(bmeta, bschema, meta, norm.value_schema(table.schema), dynamic=dynamic,
                                            stored_rows=base.index.rows if base.index else 0,
                                            new_rows=table.num_rows) or bschema
            out_meta = merged_meta(bmeta, meta, schema, table.num_rows)
        leaves = index.leaves(base.index or EMPTY_ROOT)
        if multi:  # leaves of a MultiIndex carry row numbers: give them their first level's bounds
            leaves = _with_time_bounds(e, sym, leaves, bmeta.index_columns[0])
        before, after = split_leaves(e, sym, leaves, self.lo, self.hi, bmeta.index_columns[0])
        parts = [before]
        n_before = int(before["end_row"].max()) if len(before) else 0
        if self.new_leaves is not None and len(self.new_leaves):
            parts.append(shifted(self.new_leaves, n_before, row_numbers_index=False))
        rows = np.concatenate(parts)
        cursor = int(rows["end_row"].max()) if len(rows) else 0
        # row slices that began inside a segment keep beginning there, wherever their rows moved
        cuts = [c for c in slice_cuts(base) if 0 < c < n_before]
        if len(after):
            after_start = int(after["start_row"].min())
            rows = np.concatenate([rows, shifted(after, cursor - after_start, row_numbers_index=False)])
            cuts += [c + cursor - after_start for c in slice_cuts(base) if c > after_start]
        # update sets its metadata (None included); delete_data_in_range keeps the version's
        metadata = self.metadata if self.kind == "update" else base.metadata
        first = int(rows["min_index"].min()) if len(rows) else None
        last = int(rows["max_index"].max()) if len(rows) else None
        if multi:  # back to row numbers, as every MultiIndex leaf holds
            # the first level's bounds: the kept rows' (their leaves hold time bounds here) and
            # the new rows' (their leaves hold row numbers)
            kept = np.concatenate([before, after])
            ends = [(int(kept["min_index"].min()), int(kept["max_index"].max()))] if len(kept) else []
            if table is not None and meta is not None and table.num_rows:
                ends.append(index_bounds(table, meta))  # type: ignore[arg-type]
            first = min(f for f, _ in ends) if ends else None
            last = max(x for _, x in ends) if ends else None
            rows["min_index"] = rows["start_row"]
            rows["max_index"] = rows["end_row"].astype(np.int64) - 1
        rec = data_record(self.kind, head, seq, index=index.build(rows), meta=out_meta, schema=schema,
                          first=first, last=last,
                          sorted_=base.sorted if len(rows) else "ASCENDING", metadata=metadata)
        if cuts:
            rec.extra[SLICES] = cuts
        return rec


def concat_pieces(pieces: list[np.ndarray], is_dt: bool) -> np.ndarray:
    """Leaf rows of consecutive pieces, renumbered one after the other from row 0."""
    out, cursor = [], 0
    for p in pieces:
        if not len(p):
            continue
        out.append(shifted(p, cursor - int(p["start_row"].min()), row_numbers_index=not is_dt))
        cursor = int(out[-1]["end_row"].max())
    if not out:
        return np.zeros(0, dtype=ROW_DTYPE)
    return np.concatenate(out)


def _with_time_bounds(engine: TableEngine, sym: str, leaves: np.ndarray, index_col: str) -> np.ndarray:
    """``leaves`` with ``min_index`` / ``max_index`` set from the timestamps of ``index_col``
    (one index-column decode per row group)."""
    out = leaves.copy()
    for start in np.unique(leaves["start_row"]):
        in_group = leaves["start_row"] == start
        first = leaves[in_group][0]
        buf = engine.store.read(engine.keys.tdata(sym, hex_digests(leaves[in_group][:1])[0]))
        off, n = int(first["seg_offset"]), int(first["end_row"] - first["start_row"])
        vals = fermion.decode(buf, columns=[index_col]).column(0).cast(pa.int64()).to_numpy()[off : off + n]
        if n:
            out["min_index"][in_group] = vals.min()
            out["max_index"][in_group] = vals.max()
    return out


def group_index_values(engine: TableEngine, sym: str, grp: np.ndarray, index_col: str) -> np.ndarray:
    """The int64 index values of the rows of row group ``grp`` (its leaf rows): one read of the
    index column of its first segment."""
    buf = engine.store.read(engine.keys.tdata(sym, hex_digests(grp[:1])[0]))
    off, n = int(grp["seg_offset"][0]), int(grp["end_row"][0] - grp["start_row"][0])
    return fermion.decode(buf, columns=[index_col]).column(0).cast(pa.int64()).to_numpy()[off : off + n]


def split_leaves(engine: TableEngine, sym: str, leaves: np.ndarray, lo: int, hi: int,
                 index_col: str) -> tuple[np.ndarray, np.ndarray]:
    """Leaf rows strictly before ``lo`` and strictly after ``hi`` (trimmed copies); the index
    column of each straddling row group is read once."""
    if len(leaves) == 0 or lo > hi:
        return leaves, np.zeros(0, dtype=ROW_DTYPE)
    before = leaves[leaves["max_index"] < lo]
    after = leaves[leaves["min_index"] > hi]
    straddle = leaves[(leaves["max_index"] >= lo) & (leaves["min_index"] <= hi)]
    if len(straddle) == 0:
        return before, after
    b_parts, a_parts = [before], [after]
    for start in np.unique(straddle["start_row"]):
        grp = straddle[straddle["start_row"] == start]
        vals = group_index_values(engine, sym, grp, index_col)
        n = int(grp["end_row"][0] - grp["start_row"][0])
        k_lo = int(np.searchsorted(vals, lo, "left"))
        k_hi = int(np.searchsorted(vals, hi, "right"))
        if k_lo > 0:
            piece = grp.copy()
            piece["end_row"] = piece["start_row"] + k_lo
            piece["max_index"] = vals[k_lo - 1]
            piece["min_index"] = vals[0]
            b_parts.append(piece)
        if k_hi < n:
            piece = grp.copy()
            piece["seg_offset"] += k_hi
            piece["start_row"] += k_hi
            piece["min_index"] = vals[k_hi]
            piece["max_index"] = vals[-1]
            a_parts.append(piece)
    before = np.concatenate(b_parts)
    after = np.concatenate(a_parts)
    before = before[np.lexsort((before["start_col"], before["start_row"]))]
    after = after[np.lexsort((after["start_col"], after["start_row"]))]
    return before, after


class Finalize(Operation):
    """Staged entries committed as one version (``write``), or after the latest (``append``).

    The entries' segments are referenced, not copied; they must be ordered by index and not
    overlap (``sort_and_finalize_staged_data`` merges them first when they do).
    """

    def __init__(self, engine: TableEngine, sym: str, staged: list[Any], *, append: bool,
                 metadata: bytes | None, validate_index: bool = True) -> None:
        super().__init__(engine, sym)
        refuse_nat(sym, staged)
        meta = norm.NormMeta.from_json(first_with_rows(staged).header["norm"])
        is_dt = meta.index_kind == "datetime"
        if is_dt:
            staged = sorted(staged, key=lambda s: (s.header["first"] is None, s.header["first"] or 0))
        # refusals are raised when the version is built, in ArcticDB's order: an append's
        # columns against the stored ones first, then the order of the staged rows, then the
        # staged frames' columns against each other (under dynamic schema these before the order)
        refusals: list[Exception] = []  # the order of the staged rows
        in_order = True
        if is_dt and any(s.header.get("sorted") not in ("ASCENDING", "UNKNOWN", None) for s in staged):
            refusals.append(UnsortedDataException(
                f"E_UNSORTED_DATA: Cannot compact unordered segment: staged data of {sym!r} holds a frame whose "
                "index is not sorted; use sort_and_finalize_staged_data"))
        if is_dt:
            prev_last = None
            for s in staged:
                if s.header["first"] is None:
                    continue
                if prev_last is not None and s.header["first"] < prev_last:
                    in_order = False
                    if validate_index:
                        refusals.append(UnsortedDataException(
                            f"E_UNSORTED_DATA: staged segments of {sym!r}: incomplete segment index values overlap; "
                            "use sort_and_finalize_staged_data"))
                        break
                prev_last = s.header["last"]
        mismatch: list[Exception] = []  # the staged frames' columns
        schema = staged[0].schema
        for s in staged[1:]:
            if s.schema != schema:
                if not engine.options.dynamic_schema and not same_columns(schema, s.schema):
                    mismatch.append(SchemaException(
                        f"E_DESCRIPTOR_MISMATCH staged data of {sym!r} has differing schemas "
                        f"({describe_types(schema)} vs {describe_types(s.schema)}); "
                        "stage frames with identical columns or use a dynamic-schema library"))
                    break
                try:
                    schema = unified(sym, schema, s.schema)
                except SchemaException as exc:
                    mismatch.append(exc)
                    break
        # under dynamic schema ArcticDB finds columns without a common type first
        self.refusals = mismatch + refusals if engine.options.dynamic_schema else refusals + mismatch
        if not mismatch and engine.options.dynamic_schema:
            meta = staged_meta(meta, staged, schema)
        parts, cursor = [], 0
        for s in staged:
            lv = s.leaves
            if len(lv):
                lv = shifted(lv, cursor - int(lv["start_row"].min()), row_numbers_index=not is_dt)
                cursor = int(lv["end_row"].max())
            parts.append(lv)
        self.new_leaves = np.concatenate(parts) if parts else np.zeros(0, dtype=ROW_DTYPE)
        firsts = [s.header["first"] for s in staged if s.header["first"] is not None]
        lasts = [s.header["last"] for s in staged if s.header["last"] is not None]
        self.first = firsts[0] if firsts else None
        self.last = lasts[-1] if lasts else None
        self.sorted = ("ASCENDING" if in_order else "UNSORTED") if is_dt else "UNKNOWN"
        self.meta, self.schema, self.is_dt = meta, schema, is_dt
        self.validate_index = validate_index
        self.append, self.metadata = append, metadata
        #: the staged entries (keys) this version is finalized from, named in its record
        self.consumed: list[str] = []

    def build(self, head: VersionRecord | None, base: VersionRecord | None, seq: int) -> VersionRecord:
        rec = self._build(head, base, seq)
        if self.consumed:
            rec.extra[CONSUMED] = [k.rsplit("/", 1)[-1] for k in self.consumed]
        return rec

    def _build(self, head: VersionRecord | None, base: VersionRecord | None, seq: int) -> VersionRecord:
        e, sym, meta, schema = self.engine, self.sym, self.meta, self.schema
        index = e.index(sym, self.sink)
        if not self.append or base is None:
            if self.refusals:
                raise self.refusals[0]
            return data_record("finalize", head, seq, index=index.build(self.new_leaves), meta=meta, schema=schema,
                               first=self.first, last=self.last, sorted_=self.sorted, metadata=self.metadata)
        if base.pickled:
            raise staged_onto_pickled(sym)
        bmeta, bschema = meta_of(base), schema_of(base)
        brows = base.index.rows if base.index else 0
        if meta.index_kind == "range" and bmeta.index_kind == "range" and meta.range_step == bmeta.range_step:
            # staged rows are numbered on from the stored ones, wherever their RangeIndex began
            # (as ArcticDB finalizes them)
            meta = dataclasses.replace(meta, range_start=bmeta.range_start + brows * bmeta.range_step)
        if e.options.dynamic_schema and bmeta.index_kind == "datetime" and meta.index_kind == "range" \
                and bmeta.kind == meta.kind:
            raise InternalException(  # ArcticDB's class here (static schema: SchemaException, below)
                f"E_INVALID_ARGUMENT the staged data of {sym!r} has a row-count index but the stored data a "
                "timestamp index: stage frames indexed by timestamps, or finalize in write mode")
        try:
            uschema = norm.common_schema(bmeta, bschema, meta, schema, dynamic=e.options.dynamic_schema,
                                         stored_rows=brows) or bschema
        except Exception as exc:
            raise SchemaException(str(exc)) from exc
        if self.refusals:
            raise self.refusals[0]
        sorted_ = self.sorted if base.sorted == self.sorted else "UNSORTED"
        if timed_index(meta) and self.first is not None and base.last_index is not None and self.first < base.last_index:
            if self.validate_index or not self.is_dt:  # (a MultiIndex is refused, as ArcticDB refuses it)
                raise AppendOrderException(
                    f"E_UNSORTED_DATA: cannot append staged data of {sym!r}: it starts before the last stored row; "
                    "use finalize in write mode, stage later data, or pass validate_index=False to store an "
                    "unsorted index"
                )
            sorted_ = "UNSORTED"
        lv = shifted(self.new_leaves, brows, row_numbers_index=not self.is_dt)
        rec = data_record(
            "finalize", head, seq, index=index.append(base.index or EMPTY_ROOT, lv),
            meta=merged_meta(bmeta, meta, uschema, int(self.new_leaves["end_row"].max(initial=0))), schema=uschema,
            first=base.first_index if base.first_index is not None else self.first,
            last=self.last if self.last is not None else base.last_index,
            sorted_=sorted_, metadata=self.metadata,
        )
        cuts = slice_cuts(base)
        if cuts:  # the stored rows keep their row slices
            rec.extra[SLICES] = list(cuts)
        return rec


def describe_types(schema: pa.Schema, n_index: int = 0) -> str:
    """``name: TYPE`` of the columns of ``schema`` after the first ``n_index``, for errors."""
    return ", ".join(f"{f.name}: {norm.type_name(f.type)}" for f in list(schema)[n_index:])


def first_with_rows(staged: list[Any]) -> Any:
    """The first staged entry holding rows (else the first): the one whose normalization a
    finalized version takes, so that a 0-row frame staged first does not describe the rows
    staged after it."""
    return next((e for e in staged if e.header.get("first") is not None or len(e.leaves)), staged[0])


def staged_onto_pickled(sym: str) -> SchemaException:
    """The refusal of staged data finalized in append mode onto pickled data (a
    ``SchemaException``, as ArcticDB's: the stored data has no columns to match)."""
    return SchemaException(f"E_DESCRIPTOR_MISMATCH Cannot append the staged data of {sym!r} to its pickled data "
                           "(written by write_pickle or write_metadata): finalize in write mode")


def staged_meta(meta: norm.NormMeta, staged: list[Any], schema: pa.Schema) -> norm.NormMeta:
    """``meta`` (of the first staged entry with rows) with the columns of ``schema`` that only
    other entries hold, their labels and dtype hints from the first entry holding each (dynamic
    schema); the index, its tz and unit stay ``meta``'s."""
    for s in staged:
        if not set(s.schema.names) <= set(meta.columns) | set(meta.index_columns):
            smeta = norm.NormMeta.from_json(s.header["norm"])
            if smeta.index_kind == meta.index_kind and smeta.kind == meta.kind:
                meta = norm.common_meta(meta, dataclasses.replace(
                    smeta, tz=meta.tz, tz_library=meta.tz_library, index_unit=meta.index_unit), schema)
    return meta


def same_columns(a: pa.Schema, b: pa.Schema) -> bool:
    """Whether staged entries of schemas ``a`` and ``b`` combine under static schema: the same
    columns with the same types, where a column of None only (Arrow's null type) matches a
    string or binary column (ArcticDB types it as strings) and no other type."""
    return a.names == b.names and all(
        x.type == y.type or ((pa.types.is_null(x.type) or pa.types.is_null(y.type))
                             and norm.text_like(x.type) and norm.text_like(y.type))
        for x, y in zip(a, b, strict=True))


def unified(sym: str, a: pa.Schema, b: pa.Schema) -> pa.Schema:
    """The schema of staged entries of schemas ``a`` and ``b`` combined under dynamic schema;
    types with no common type raise ``SchemaException`` naming the column."""
    for f in b:
        if f.name in a.names:
            norm.refuse_none_with_values(f.name, a.field(f.name).type, f.type, f" of the staged data of {sym!r}")
    try:
        return pa.unify_schemas([a, b], promote_options="permissive")
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        for f in b:
            if f.name in a.names and a.field(f.name).type != f.type:
                try:
                    pa.unify_schemas([pa.schema([a.field(f.name)]), pa.schema([f])], promote_options="permissive")
                except (pa.ArrowTypeError, pa.ArrowInvalid):
                    raise SchemaException(
                        f"E_DESCRIPTOR_MISMATCH No valid common type between TD<type={norm.type_name(a.field(f.name).type)}, "
                        f"dim=0> and TD<type={norm.type_name(f.type)}, dim=0> for column {f.name} of the staged data of "
                        f"{sym!r}; stage the column with one type") from None
        raise


def refuse_nat(sym: str, staged: list[Any]) -> None:
    """A NaT in a staged index cannot be ordered: finalizing it is refused (as ArcticDB does)."""
    if any(e.header.get("nat") for e in staged):
        raise SortingException(
            f"E_UNSORTED_DATA staged data of {sym!r} has NaT in its index: a NaT cannot be ordered; "
            "delete the staged data (delete_staged_data) and stage it without those rows")


class Compact(Operation):
    """The index of ``base`` with runs of small row groups replaced by rewritten segments
    (``compacted``); rows appended since ``base`` are carried over. A symbol rewritten or
    deleted meanwhile makes the compaction give up (``CommitConflictError``), never lose data."""

    def __init__(self, engine: TableEngine, sym: str, *, base: VersionRecord, leaves: np.ndarray,
                 compacted: np.ndarray) -> None:
        super().__init__(engine, sym)
        self.base, self.leaves, self.compacted = base, leaves, compacted
        self.covered = int(leaves["end_row"].max()) if len(leaves) else 0

    def reads_deltas(self, base: VersionRecord) -> bool:
        return True

    def build(self, head: VersionRecord | None, base: VersionRecord | None, seq: int) -> VersionRecord:
        sym = self.sym
        index = self.engine.index(sym, self.sink)
        if base is None:
            raise CommitConflictError(f"symbol {sym!r} was deleted while compacting")
        rows = self.compacted
        if base.seq != self.base.seq:
            cur = index.leaves(base.index or EMPTY_ROOT)
            prefix = cur[cur["start_row"] < self.covered]
            if len(prefix) != len(self.leaves) or not np.array_equal(prefix, self.leaves):
                raise CommitConflictError(f"symbol {sym!r} was rewritten while compacting (version {self.base.vid} was "
                                          f"compacted, version {base.vid} is the latest now); run compact_data again")
            rows = np.concatenate([rows, cur[cur["start_row"] >= self.covered]])
        # the cuts inside compacted rows are segment boundaries now; appended rows keep theirs
        cuts = [c for c in slice_cuts(base) if c > self.covered]
        extra = {k: v for k, v in base.extra.items() if k != SLICES} | ({SLICES: cuts} if cuts else {})
        return base.with_(kind="compact", dead=head.dead if head else (), latest_live=seq, index=index.build(rows),
                          extra=extra)
