"""Library: staged writes (``stage`` / ``finalize_staged_data``), also the connector API.

``stage`` writes data segments (under fresh names, like any segment) and one staged entry
``stage/{sym}/{token}`` describing them. Nothing is visible to readers until a finalize
commits one version whose index points at the staged segments: no data is copied.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from arcticlite import normalize as norm
from arcticlite._envelope import KIND_STAGED, seal, unseal
from arcticlite.exceptions import (
    AppendOrderException,
    ArcticInvalidApiUsageException,
    InternalException,
    SchemaException,
    UnsortedDataException,
    UserInputException,
)
from arcticlite.index import EMPTY_ROOT, ROW_DTYPE, shifted
from arcticlite.library._library import (
    LibraryCore,
    check_symbol,
)
from arcticlite.library._types import StagedDataFinalizeMethod, StageResult, VersionedItem
from arcticlite.table import merged_meta, read_segments, schema_bytes, schema_from, write_segments
from arcticlite.version import VersionRecord, unescape

#: one staged entry: (key, header, schema, leaf rows)
Staged = tuple[str, dict[str, Any], pa.Schema, np.ndarray]


def _mode(mode: Any) -> StagedDataFinalizeMethod:
    if isinstance(mode, StagedDataFinalizeMethod):
        return mode
    if isinstance(mode, str) and mode.lower() in ("write", "append"):
        return StagedDataFinalizeMethod[mode.upper()]
    raise ArcticInvalidApiUsageException(f"mode must be StagedDataFinalizeMethod.WRITE/APPEND or 'write'/'append', got {mode!r}")


class StageMixin(LibraryCore):
    def stage(self, symbol: str, data: Any, validate_index: bool = True, sort_on_index: bool = False,
              sort_columns: list[str] | None = None, index_column: Any = False) -> StageResult:
        """Write ``data`` as staged segments of ``symbol``, invisible until finalized.

        Many processes may stage the same symbol in parallel.
        """
        sym = check_symbol(symbol)
        table, meta = self._normalize(data, index_column)
        if sort_on_index or sort_columns:
            keys = ([(meta.index_columns[0], "ascending")] if sort_on_index and meta.index_columns else [])
            keys += [(meta.user_to_stored([c])[0], "ascending") for c in (sort_columns or [])]
            if keys:
                table = table.sort_by(keys)
        elif validate_index:
            self._check_sorted(table, meta, "stage")
        leaves = write_segments(self._store, self._keys, sym, table, self._layout(meta), start_row=0,
                                is_datetime=meta.index_kind == "datetime")
        first, last = self._index_bounds(table, meta)
        return self.stage_segments(sym, leaves, meta, table.schema, first, last, norm.sortedness(table, meta))

    def stage_segments(self, symbol: str, leaves: np.ndarray, meta: norm.NormMeta, schema: pa.Schema,
                       first: int | None, last: int | None, sorted_: str) -> StageResult:
        """Record already written segments as one staged entry (connector API)."""
        # time first: listing order is staging order, which orders RangeIndex frames on finalize
        token = f"{time.time_ns():020d}-{uuid.uuid4().hex[:16]}"
        key = self._keys.staged(symbol, token)
        header = {"norm": meta.to_json().decode(), "first": first, "last": last,
                  "sorted": sorted_, "schema_len": len(schema_bytes(schema)), "rows": len(leaves)}
        self._store.write(key, seal(KIND_STAGED, header, schema_bytes(schema) + leaves.tobytes()))
        return StageResult(symbol=symbol, staged_keys=(key,))

    def _staged_entries(self, sym: str, stage_results: list[StageResult] | None) -> list[Staged]:
        if stage_results is not None:
            keys = [k for r in stage_results for k in r.staged_keys if r.symbol == sym]
        else:
            keys = sorted(self._store.list_keys(self._keys.staged_prefix(sym)))
        out = []
        for k, raw in zip(keys, self._store.read_many(keys), strict=True):
            h, blob = unseal(raw, KIND_STAGED)
            n = int(h["schema_len"])
            schema = schema_from(bytes(blob[:n]))
            leaves = np.frombuffer(bytes(blob[n:]), dtype=ROW_DTYPE).copy()
            out.append((k, h, schema, leaves))
        return out

    def get_staged_symbols(self) -> list[str]:
        """Symbols with staged data waiting for a finalize."""
        prefix = self._keys.staged_prefix()
        return sorted({unescape(k[len(prefix):].split("/", 1)[0]) for k in self._store.list_keys(prefix)})

    def delete_staged_data(self, symbol: str | StageResult | list[StageResult]) -> None:
        """Forget staged data (its segments are left to ``gc`` unless unreferenced here)."""
        if isinstance(symbol, StageResult):
            keys = list(symbol.staged_keys)
        elif isinstance(symbol, list):
            keys = [k for r in symbol for k in r.staged_keys]
        else:
            keys = list(self._store.list_keys(self._keys.staged_prefix(check_symbol(symbol))))
        self._store.delete(keys)

    def finalize_staged_data(self, symbol: str, mode: Any = StagedDataFinalizeMethod.WRITE,
                             prune_previous_versions: bool | None = None, metadata: Any = None,
                             validate_index: bool = True, delete_staged_data_on_failure: bool = False,
                             stage_results: list[StageResult] | None = None) -> VersionedItem:
        """Commit staged data as one new version (``write``) or after the latest (``append``).

        Staged segments are referenced, not copied. They must be ordered and non-overlapping.
        """
        sym = check_symbol(symbol)
        m = _mode(mode)
        return self._consume_staged(
            sym, stage_results, delete_staged_data_on_failure,
            lambda sym, entries: self._finalize(sym, entries, m, metadata, prune_previous_versions),
        )

    def sort_and_finalize_staged_data(self, symbol: str, mode: Any = StagedDataFinalizeMethod.WRITE,
                                      prune_previous_versions: bool | None = None, metadata: Any = None,
                                      delete_staged_data_on_failure: bool = False,
                                      stage_results: list[StageResult] | None = None) -> VersionedItem:
        """Like :meth:`finalize_staged_data`, but staged data may interleave: it is merged and sorted."""
        sym = check_symbol(symbol)
        m = _mode(mode)

        def merge_sorted(sym: str, entries: list[Staged]) -> VersionedItem:
            meta = norm.NormMeta.from_json(entries[0][1]["norm"])
            tables = []
            for _k, _h, schema, leaves in entries:
                n_index = len(meta.index_columns)
                t = read_segments(self._store, self._keys, sym, leaves, schema, n_index, schema.names[n_index:], None)
                tables.append(t)
            table = pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]
            if meta.index_columns:
                table = table.sort_by([(meta.index_columns[0], "ascending")])
            leaves = write_segments(self._store, self._keys, sym, table, self._layout(meta), start_row=0,
                                    is_datetime=meta.index_kind == "datetime")
            first, last = self._index_bounds(table, meta)
            return self._finalize(sym, [("", {"norm": entries[0][1]["norm"], "first": first, "last": last,
                                              "sorted": norm.sortedness(table, meta)}, table.schema, leaves)],
                                  m, metadata, prune_previous_versions)

        return self._consume_staged(sym, stage_results, delete_staged_data_on_failure, merge_sorted)

    def _consume_staged(self, sym: str, stage_results: list[StageResult] | None, delete_on_failure: bool,
                        commit: Callable[[str, list[Staged]], VersionedItem]) -> VersionedItem:
        """Load the staged entries, ``commit`` them, then forget them (also on failure if asked)."""
        entries = self._staged_entries(sym, stage_results)
        if not entries:
            raise UserInputException(f"E_NO_STAGED_SEGMENTS: no staged data for symbol {sym!r}; stage() first")
        try:
            item = commit(sym, entries)
        except Exception:
            if delete_on_failure:
                self._store.delete([e[0] for e in entries])
            raise
        self._store.delete([e[0] for e in entries])
        return item

    def _finalize(self, sym: str, entries: list[Staged],
                  mode: StagedDataFinalizeMethod, metadata: Any, prune: bool | None) -> VersionedItem:
        meta = norm.NormMeta.from_json(entries[0][1]["norm"])
        is_dt = meta.index_kind == "datetime"
        if is_dt:
            entries = sorted(entries, key=lambda e: (e[1]["first"] is None, e[1]["first"] or 0))
        schema = entries[0][2]
        for _k, _h, s, _l in entries[1:]:
            if s != schema:
                if not self._options.dynamic_schema:
                    raise SchemaException(
                        f"staged data of {sym!r} has differing schemas ({schema} vs {s}); "
                        "stage frames with identical columns or use a dynamic-schema library"
                    )
                schema = pa.unify_schemas([schema, s], promote_options="permissive")
        if is_dt:
            prev_last = None
            for _k, h, _s, _l in entries:
                if h["first"] is None:
                    continue
                if prev_last is not None and h["first"] < prev_last:
                    raise UnsortedDataException(
                        f"E_UNSORTED_DATA: staged segments of {sym!r}: incomplete segment index values overlap; "
                        "use sort_and_finalize_staged_data"
                    )
                prev_last = h["last"]
        parts = []
        cursor = 0
        for _k, _h, _s, leaves in entries:
            lv = leaves
            if len(lv):
                lv = shifted(lv, cursor - int(lv["start_row"].min()), row_numbers_index=not is_dt)
                cursor = int(lv["end_row"].max())
            parts.append(lv)
        new_leaves = np.concatenate(parts) if parts else np.zeros(0, dtype=ROW_DTYPE)
        firsts = [h["first"] for _k, h, _s, _l in entries if h["first"] is not None]
        lasts = [h["last"] for _k, h, _s, _l in entries if h["last"] is not None]
        first = firsts[0] if firsts else None
        last = lasts[-1] if lasts else None
        sorted_ = "ASCENDING" if is_dt else "UNKNOWN"
        mbytes = self._pickle_meta(metadata)
        nodes: dict[str, bytes] = {}
        index = self._index_for(sym, nodes)

        def build(head: VersionRecord | None, seq: int) -> VersionRecord:
            nodes.clear()
            base = self._engine.live_from_head(sym, head)
            if mode is StagedDataFinalizeMethod.WRITE or base is None:
                return self._data_record("finalize", head, seq, index=index.build(new_leaves), meta=meta,
                                         schema=schema, first=first, last=last, sorted_=sorted_, metadata=mbytes)
            if base.pickled:
                raise InternalException(f"Cannot append to pickled data (symbol {sym!r})")
            bmeta, bschema = self._meta_of(base), self._schema_of(base)
            brows = base.index.rows if base.index else 0
            try:
                uschema = norm.common_schema(bmeta, bschema, meta, schema, dynamic=self._options.dynamic_schema,
                                             stored_rows=brows) or bschema
            except Exception as exc:
                raise SchemaException(str(exc)) from exc
            if is_dt and first is not None and base.last_index is not None and first < base.last_index:
                raise AppendOrderException(
                    f"E_UNSORTED_DATA: staged data of {sym!r} starts before the last stored row; "
                    "use finalize in write mode or stage later data"
                )
            lv = shifted(new_leaves, brows, row_numbers_index=not is_dt)
            return self._data_record("finalize", head, seq, index=index.append(base.index or EMPTY_ROOT, lv),
                                     meta=merged_meta(bmeta, meta, uschema), schema=uschema,
                                     first=base.first_index if base.first_index is not None else first,
                                     last=last if last is not None else base.last_index,
                                     sorted_=sorted_ if base.sorted == sorted_ else "UNSORTED", metadata=mbytes)

        rec = self._commit(sym, build, prune=self._prune_default(prune), extra=nodes)
        return self._item(sym, rec)
