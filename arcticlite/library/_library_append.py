"""Library: append, and the open tail that small appends share (docs/engine.md, "Small
appends")."""

from __future__ import annotations

from typing import Any

from arcticlite import normalize as norm
from arcticlite.library._library import LibraryCore, check_symbol
from arcticlite.library._types import VersionedItem
from arcticlite.table import Append


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
        op = Append(self._table, sym, table, meta, sorted_=sorted_new, metadata=self._pickle_meta(metadata),
                    validate_index=validate_index)
        rec = self._apply(sym, op, prune_previous_versions)
        if compact_data:
            return self.compact_data(sym)  # type: ignore[attr-defined]
        return self._item(sym, rec)
