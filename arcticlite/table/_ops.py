"""Named write operations: each turns the head of a symbol into its next version record.

An operation is built once per call (its new segments encoded and written before the commit
loop) and then asked, once per commit attempt, for the record to commit on the head that
attempt sees (:meth:`Operation.build`). :meth:`TableEngine.apply` is the one rebase loop:
when a concurrent writer wins, the operation is rebuilt on the new head and its segments are
reused. Index nodes and small segments an attempt produces go into :attr:`Operation.sink`
and are written in the commit transaction (LMDB) or just before the commit point (S3).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa

from arcticlite import normalize as norm
from arcticlite.exceptions import AppendOrderException, InternalException, UnsortedDataException
from arcticlite.index import EMPTY_ROOT, FLAG_OPEN_TAIL, IndexRoot, TableIndexIO, shifted
from arcticlite.storage import KVStore
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
from arcticlite.version import LibraryKeys, VersionRecord


class TableEngine(Protocol):
    """What operations use of :class:`~arcticlite.table.TableEngine`."""

    store: KVStore
    keys: LibraryKeys
    options: Any
    pools: Pools

    def index(self, sym: str, sink: dict[str, bytes] | None = None) -> TableIndexIO: ...

    def layout(self, meta: norm.NormMeta) -> Layout: ...


def index_bounds(table: pa.Table, meta: norm.NormMeta) -> tuple[int | None, int | None]:
    """First and last values (int64 ns) of a datetime index; ``(None, None)`` otherwise."""
    if meta.index_kind != "datetime" or table.num_rows == 0:
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


def merged_meta(bmeta: norm.NormMeta, nmeta: norm.NormMeta, schema: pa.Schema) -> norm.NormMeta:
    """The stored meta after adding ``nmeta``'s data to ``bmeta``'s under ``schema``:
    new columns (dynamic schema) appended, the index tz of the newest write."""
    return norm.common_meta(bmeta, nmeta, schema)


def _ts(ns: int) -> str:
    return str(pd.Timestamp(ns, unit="ns"))


class Operation:
    """A named write: :meth:`build` gives the record to commit on a head.

    Attributes
    ----------
    sink : dict
        Keys (index nodes, small segments) the current attempt wrote; cleared per attempt.
    """

    def __init__(self, engine: TableEngine, sym: str) -> None:
        self.engine = engine
        self.sym = sym
        self.sink: dict[str, bytes] = {}

    def extra(self) -> MutableMapping[str, bytes]:
        """Keys to write with the commit (a live view: filled by :meth:`build`)."""
        return self.sink

    def begin(self) -> None:
        """Start an attempt: forget what a lost attempt produced."""
        self.sink.clear()

    def build(self, head: VersionRecord | None, base: VersionRecord | None, seq: int) -> VersionRecord:
        """The record for version ``seq`` on ``head`` (``base``: its latest live data version)."""
        raise NotImplementedError


class Append(Operation):
    """Rows after the latest version (a write when there is none); small appends join the
    symbol's open tail segment instead of adding one."""

    def __init__(self, engine: TableEngine, sym: str, table: pa.Table, meta: norm.NormMeta, *,
                 sorted_: str, metadata: bytes | None, validate_index: bool) -> None:
        super().__init__(engine, sym)
        self.table, self.meta, self.sorted, self.metadata = table, meta, sorted_, metadata
        self.validate_index = validate_index
        self.layout = engine.layout(meta)
        self.is_dt = meta.index_kind == "datetime"
        self.small = is_small_append(table, self.layout)
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
            self._fresh_rows.append(write_segments(
                e.store, e.keys, self.sym, self.table, self.layout, start_row=0, is_datetime=self.is_dt,
                sink=self._fresh, optimize_for="write" if self.small else OPTIMIZE_FOR,
                flags=FLAG_OPEN_TAIL if self.small else 0, pools=e.pools))
        self._segs.update(self._fresh)
        return self._fresh_rows[0]

    def build(self, head: VersionRecord | None, base: VersionRecord | None, seq: int) -> VersionRecord:
        e, sym, table, meta = self.engine, self.sym, self.table, self.meta
        index = e.index(sym, self.sink)
        first, last = self.first, self.last
        if base is None:
            return data_record("write" if head is None else "append", head, seq, index=index.build(self._new_segments()),
                               meta=meta, schema=table.schema, first=first, last=last, sorted_=self.sorted,
                               metadata=self.metadata)
        if base.pickled:
            raise InternalException(f"Cannot append to pickled data (symbol {sym!r})")
        bmeta, bschema = meta_of(base), schema_of(base)
        brows = base.index.rows if base.index is not None else 0
        schema = norm.common_schema(bmeta, bschema, meta, table.schema, dynamic=e.options.dynamic_schema,
                                    stored_rows=brows, new_rows=table.num_rows) or bschema
        if self.is_dt and self.validate_index and base.sorted not in ("ASCENDING", "UNKNOWN") and brows:
            raise UnsortedDataException("When calling append with validate_index enabled, the existing data must be sorted")
        if self.is_dt and first is not None and base.last_index is not None and first < base.last_index:
            raise AppendOrderException(
                f"E_ASSERTION_FAILURE: Can't append dataframe with start index {_ts(first)} to existing "
                f"sequence ending at {_ts(base.last_index)} (version {base.seq}); sort the frame or use update()"
            )
        tail = None
        broot = base.index
        merged: dict[str, bytes] = {}
        if self.small and broot is not None and broot.digest is not None:
            # the rows join the symbol's open tail: one segment replaced, none added
            ncs = len(col_slices(len(table.column_names) - self.layout.n_index, self.layout))
            tail = write_tail(e.store, e.keys, sym, index.last_leaf_rows(broot, ncs), table, self.layout,
                              is_datetime=self.is_dt, sink=merged, pools=e.pools)
        if tail is not None and broot is not None:
            self._segs.update(merged)
            root = index.append(broot, tail, replace_last=len(tail))
        else:
            root = index.append(broot or EMPTY_ROOT, shifted(self._new_segments(), brows, row_numbers_index=not self.is_dt))
        return data_record(
            "append", head, seq, index=root, meta=merged_meta(bmeta, meta, schema), schema=schema,
            first=base.first_index if base.first_index is not None else first,
            last=last if last is not None else base.last_index,
            sorted_=combine_sorted(base.sorted, self.sorted, base.last_index, first, brows, table.num_rows),
            metadata=self.metadata,
        )


class Write(Operation):
    """A whole new table as the next version (its segments written before the loop)."""

    def __init__(self, engine: TableEngine, sym: str, table: pa.Table, meta: norm.NormMeta, *,
                 sorted_: str, metadata: bytes | None, kind: str = "write") -> None:
        super().__init__(engine, sym)
        leaves = write_segments(engine.store, engine.keys, sym, table, engine.layout(meta), start_row=0,
                                is_datetime=meta.index_kind == "datetime", pools=engine.pools)
        nodes: dict[str, bytes] = {}
        self.root = engine.index(sym, nodes).build(leaves)
        self.nodes = nodes  # the index of a write does not depend on the head: built once
        self.meta, self.schema, self.sorted, self.metadata, self.kind = meta, table.schema, sorted_, metadata, kind
        self.first, self.last = index_bounds(table, meta)

    def extra(self) -> MutableMapping[str, bytes]:
        return self.nodes

    def build(self, head: VersionRecord | None, base: VersionRecord | None, seq: int) -> VersionRecord:
        return data_record(self.kind, head, seq, index=self.root, meta=self.meta, schema=self.schema,
                           first=self.first, last=self.last, sorted_=self.sorted, metadata=self.metadata)


class WriteMetadata(Operation):
    """The latest data with new user metadata (no data rewritten)."""

    def __init__(self, engine: TableEngine, sym: str, metadata: bytes | None) -> None:
        super().__init__(engine, sym)
        self.metadata = metadata

    def build(self, head: VersionRecord | None, base: VersionRecord | None, seq: int) -> VersionRecord:
        dead = head.dead if head else ()
        if base is None:
            return VersionRecord(symbol=self.sym, seq=seq, kind="pickle", created_ns=0, token="", dead=dead,
                                 latest_live=seq, index=None, pickled=True, metadata=self.metadata)
        return base.with_(kind="metadata", dead=dead, latest_live=seq, metadata=self.metadata)

