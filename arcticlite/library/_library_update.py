"""Library: update and delete_data_in_range.

Both replace the stored rows of a closed date interval. Stored segments that straddle the
interval's ends are *trimmed* in the index (a leaf row may reference a slice of its segment),
never rewritten, so the cost is proportional to the new data plus the touched index rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from arcticlite import format as fermion
from arcticlite import normalize as norm
from arcticlite.exceptions import (
    ArcticInvalidApiUsageException,
    InternalException,
    NormalizationException,
    UnsortedDataException,
)
from arcticlite.index import EMPTY_ROOT, ROW_DTYPE, hex_digests, shifted
from arcticlite.library._library import LibraryCore, check_symbol
from arcticlite.library._types import VersionedItem
from arcticlite.normalize import to_ns_bound
from arcticlite.table import merged_meta, write_segments
from arcticlite.version import VersionRecord


class UpdateMixin(LibraryCore):
    def update(
        self,
        symbol: str,
        data: Any,
        metadata: Any = None,
        upsert: bool = False,
        date_range: tuple[Any, Any] | None = None,
        prune_previous_versions: bool | None = None,
        index_column: Any = False,
    ) -> VersionedItem:
        """Replace the stored rows in ``[data.index[0], data.index[-1]]`` (or ``date_range``)
        with ``data``.

        Safe with concurrent writers: on a lost race the update is re-applied to the new head.
        Untouched segments are reused; straddling segments are trimmed without rewriting.
        """
        sym = check_symbol(symbol)
        table, meta = self._normalize(data, index_column)
        if meta.index_kind != "datetime" and table.num_rows:
            raise InternalException(
                f"Update not supported for non-timeseries indexes (symbol {sym!r}); use write or append"
            )
        if norm.sortedness(table, meta) not in ("ASCENDING", "UNKNOWN"):
            raise UnsortedDataException("When calling update, input data must be sorted")
        idx = table.column(0).cast(pa.int64()).to_numpy() if table.num_rows and meta.index_columns else np.zeros(0, np.int64)
        if date_range is not None:
            lo, hi = to_ns_bound(date_range[0], low=True), to_ns_bound(date_range[1], low=False)
            a, b = np.searchsorted(idx, lo, "left"), np.searchsorted(idx, hi, "right")
            table = table.slice(int(a), max(0, int(b) - int(a)))
            idx = idx[a:b]
        elif len(idx):
            lo, hi = int(idx[0]), int(idx[-1])
        else:
            lo, hi = 1, 0  # empty: replaces nothing
        return self._replace_range(sym, table, meta, lo, hi, metadata, prune_previous_versions,
                                   upsert=upsert, op="update")

    def delete_data_in_range(
        self, symbol: str, date_range: tuple[Any, Any], prune_previous_versions: bool | None = None
    ) -> None:
        """Remove the stored rows in the closed ``date_range`` (a new version, even if none matched)."""
        sym = check_symbol(symbol)
        if date_range is None:
            raise ArcticInvalidApiUsageException("delete_data_in_range needs a date_range")
        lo, hi = to_ns_bound(date_range[0], low=True), to_ns_bound(date_range[1], low=False)
        self._replace_range(sym, None, None, lo, hi, None, prune_previous_versions, upsert=False,
                            op="delete_range")

    def _replace_range(
        self,
        sym: str,
        table: pa.Table | None,
        meta: norm.NormMeta | None,
        lo: int,
        hi: int,
        metadata: Any,
        prune: bool | None,
        *,
        upsert: bool,
        op: str,
    ) -> VersionedItem:
        mbytes = self._pickle_meta(metadata)
        new_leaves = None
        if table is not None and meta is not None:
            new_leaves = write_segments(self._store, self._keys, sym, table, self._layout(meta),
                                        start_row=0, is_datetime=True)
        nodes: dict[str, bytes] = {}
        index = self._index_for(sym, nodes)

        def build(head: VersionRecord | None, seq: int) -> VersionRecord:
            nodes.clear()
            base = self._engine.live_from_head(sym, head)
            if base is None:
                if op == "update" and upsert and table is not None and meta is not None:
                    first, last = self._index_bounds(table, meta)
                    assert new_leaves is not None
                    return self._data_record("write", head, seq, index=index.build(new_leaves),
                                             meta=meta, schema=table.schema, first=first, last=last,
                                             sorted_=norm.sortedness(table, meta), metadata=mbytes)
                what = "update" if op == "update" else "delete from"
                raise InternalException(
                    f"Cannot {what} non-existent symbol {sym!r}"
                    + (": use upsert=True to create it" if op == "update" else "")
                )
            if base.pickled:
                raise InternalException(f"Cannot update pickled data (symbol {sym!r})")
            bmeta = self._meta_of(base)
            bschema = self._schema_of(base)
            if bmeta.index_kind != "datetime":
                raise InternalException(f"Update not supported for non-timeseries indexes (symbol {sym!r})")
            if base.sorted not in ("ASCENDING", "UNKNOWN"):
                raise UnsortedDataException(f"Cannot update symbol {sym!r}: its stored index is not sorted")
            schema = bschema
            out_meta = bmeta
            if table is not None and meta is not None:
                if meta.kind != bmeta.kind:
                    raise NormalizationException(
                        f"E_INCOMPATIBLE_OBJECTS: cannot update a {bmeta.kind} with a {meta.kind}"
                    )
                if table.num_rows or not self._options.dynamic_schema:
                    schema = norm.common_schema(bmeta, bschema, meta, table.schema,
                                                dynamic=self._options.dynamic_schema,
                                                stored_rows=base.index.rows if base.index else 0,
                                                new_rows=table.num_rows) or bschema
                out_meta = merged_meta(bmeta, meta, schema)
            leaves = index.leaves(base.index or EMPTY_ROOT)
            before, after = self._split_leaves(sym, leaves, lo, hi, bmeta.index_columns[0])
            parts = [before]
            n_before = int(before["end_row"].max()) if len(before) else 0
            if new_leaves is not None and len(new_leaves):
                parts.append(shifted(new_leaves, n_before, row_numbers_index=False))
            rows = np.concatenate(parts)
            cursor = int(rows["end_row"].max()) if len(rows) else 0
            if len(after):
                a = shifted(after, cursor - int(after["start_row"].min()), row_numbers_index=False)
                rows = np.concatenate([rows, a])
            root = index.build(rows)
            first = int(rows["min_index"].min()) if len(rows) else None
            last = int(rows["max_index"].max()) if len(rows) else None
            return self._data_record(op, head, seq, index=root, meta=out_meta, schema=schema,
                                     first=first, last=last, sorted_=base.sorted if len(rows) else "ASCENDING",
                                     metadata=mbytes)

        rec = self._commit(sym, build, prune=self._prune_default(prune), extra=nodes)
        return self._item(sym, rec)

    def _split_leaves(
        self, sym: str, leaves: np.ndarray, lo: int, hi: int, index_col: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """Leaf rows strictly before ``lo`` and strictly after ``hi`` (trimmed copies)."""
        if len(leaves) == 0 or lo > hi:
            return leaves, np.zeros(0, dtype=ROW_DTYPE)
        before = leaves[leaves["max_index"] < lo]
        after = leaves[leaves["min_index"] > hi]
        straddle = leaves[(leaves["max_index"] >= lo) & (leaves["min_index"] <= hi)]
        if len(straddle) == 0:
            return before, after
        # trim each straddling row group using its index column (read once per row group)
        b_parts, a_parts = [before], [after]
        groups: dict[int, np.ndarray] = {}
        for start in np.unique(straddle["start_row"]):
            groups[int(start)] = straddle[straddle["start_row"] == start]
        for _start, grp in sorted(groups.items()):
            first = grp[0]
            digest = hex_digests(grp[:1])[0]
            buf = self._store.read(self._keys.tdata(sym, digest))
            t = fermion.decode(buf, columns=[index_col])
            off, n = int(first["seg_offset"]), int(first["end_row"] - first["start_row"])
            vals = t.column(0).cast(pa.int64()).to_numpy()[off : off + n]
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
