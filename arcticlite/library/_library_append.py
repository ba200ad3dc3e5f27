"""Library: append, and the open tail that small appends share (docs/engine.md, "Small
appends")."""

from __future__ import annotations

from collections import ChainMap
from typing import Any

import numpy as np

from arcticlite import normalize as norm
from arcticlite.exceptions import AppendOrderException, InternalException, UnsortedDataException
from arcticlite.index import EMPTY_ROOT, FLAG_OPEN_TAIL, shifted
from arcticlite.library._library import LibraryCore, _ts, check_symbol, merged_meta
from arcticlite.library._types import VersionedItem
from arcticlite.table import (
    OPTIMIZE_FOR,
    col_slices,
    is_small_append,
    write_segments,
    write_tail,
)
from arcticlite.version import VersionRecord


class AppendMixin(LibraryCore):
    def append(
        self,
        symbol: str,
        data: Any,
        metadata: Any = None,
        prune_previous_versions: bool | None = None,
        validate_index: bool = True,
        index_column: Any = False,
        compact_data: bool = False,
    ) -> VersionedItem:
        """Append rows after the last version of ``symbol`` (creating it if missing).

        The new rows' first index value must not be before the last stored one. Safe with
        concurrent writers: if another writer commits first, the append rebases on the new
        head (its data segments are reused) and retries, so no acknowledged append is lost.
        Cost does not grow with the number of earlier appends.
        """
        sym = check_symbol(symbol)
        table, meta = self._normalize(data, index_column)
        sorted_new = self._check_sorted(table, meta, "append") if validate_index else norm.sortedness(table, meta)
        layout = self._layout(meta)
        is_dt = meta.index_kind == "datetime"
        segs: dict[str, bytes] = {}  # the segments of the attempt being committed
        small = is_small_append(table, layout)
        fresh: dict[str, bytes] = {}
        fresh_rows: list[np.ndarray] = []

        def new_segments() -> np.ndarray:
            """Leaf rows of the new rows as segments of their own (encoded on first need: a small
            append that joins the open tail never needs them)."""
            if not fresh_rows:
                fresh_rows.append(write_segments(
                    self._store, self._keys, sym, table, layout, start_row=0, is_datetime=is_dt, sink=fresh,
                    optimize_for="write" if small else OPTIMIZE_FOR, flags=FLAG_OPEN_TAIL if small else 0))
            segs.update(fresh)
            return fresh_rows[0]

        if not small:
            new_segments()  # encoded (and written, when large) before the commit loop
        first, last = self._index_bounds(table, meta)
        mbytes = self._pickle_meta(metadata)
        nodes: dict[str, bytes] = {}
        index = self._index_for(sym, nodes)

        def build(head: VersionRecord | None, seq: int) -> VersionRecord:
            nodes.clear()  # nodes and tail segments of a lost attempt are not needed
            segs.clear()
            base = self._engine.live_from_head(sym, head)
            if base is None:
                root = index.build(new_segments())
                return self._data_record(
                    "write" if head is None else "append", head, seq, index=root, meta=meta,
                    schema=table.schema, first=first, last=last, sorted_=sorted_new, metadata=mbytes,
                )
            if base.pickled:
                raise InternalException(f"Cannot append to pickled data (symbol {sym!r})")
            bmeta = self._meta_of(base)
            bschema = self._schema_of(base)
            brows = base.index.rows if base.index is not None else 0
            schema = norm.common_schema(
                bmeta, bschema, meta, table.schema, dynamic=self._options.dynamic_schema, stored_rows=brows,
                new_rows=table.num_rows,
            ) or bschema
            if is_dt and validate_index and base.sorted not in ("ASCENDING", "UNKNOWN") and brows:
                raise UnsortedDataException(
                    "When calling append with validate_index enabled, the existing data must be sorted"
                )
            if is_dt and first is not None and base.last_index is not None and first < base.last_index:
                raise AppendOrderException(
                    f"E_ASSERTION_FAILURE: Can't append dataframe with start index {_ts(first)} to existing "
                    f"sequence ending at {_ts(base.last_index)} (version {base.seq}); sort the frame or use update()"
                )
            tail = None
            broot = base.index
            merged: dict[str, bytes] = {}
            if small and broot is not None and broot.digest is not None:
                # the rows join the symbol's open tail: one segment replaced, none added
                ncs = len(col_slices(len(table.column_names) - layout.n_index, layout))
                tail = write_tail(self._store, self._keys, sym, index.last_leaf_rows(broot, ncs), table,
                                  layout, is_datetime=is_dt, sink=merged)
            if tail is not None and broot is not None:
                segs.update(merged)
                root = index.append(broot, tail, replace_last=len(tail))
            else:
                root = index.append(base.index or EMPTY_ROOT,
                                    shifted(new_segments(), brows, row_numbers_index=not is_dt))
            out_meta = merged_meta(bmeta, meta, schema)
            s = _combine_sorted(base.sorted, sorted_new, base.last_index, first, brows, table.num_rows)
            return self._data_record(
                "append", head, seq, index=root, meta=out_meta, schema=schema,
                first=base.first_index if base.first_index is not None else first,
                last=last if last is not None else base.last_index,
                sorted_=s, metadata=mbytes,
            )

        rec = self._commit(sym, build, prune=self._prune_default(prune_previous_versions), extra=ChainMap(nodes, segs))
        if compact_data and hasattr(self, "compact_data"):
            rec2 = self.compact_data(sym)
            return rec2
        return self._item(sym, rec)


def _combine_sorted(old: str, new: str, old_last: int | None, new_first: int | None, old_rows: int, new_rows: int) -> str:
    if old_rows == 0:
        return new
    if new_rows == 0:
        return old
    if old == "UNKNOWN" and new == "UNKNOWN":
        return "UNKNOWN"
    if old == "ASCENDING" and new == "ASCENDING" and (old_last is None or new_first is None or new_first >= old_last):
        return "ASCENDING"
    return "UNSORTED"
