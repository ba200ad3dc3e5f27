"""Library: introspection of what is stored (versions, index rows, segments and encodings),
in the spirit of Databend's ``fuse_snapshot`` / ``fuse_segment`` / ``fuse_block``."""

from __future__ import annotations

from typing import Any

import pandas as pd

from arcticlite import format as fermion
from arcticlite.format._encodings import ENCODING_NAMES as _ENC
from arcticlite.index._tindex import EMPTY_ROOT, FLAG_OPEN_TAIL, hex_digests
from arcticlite.library._library import LibraryCore, check_symbol


class InspectMixin(LibraryCore):
    def inspect_versions(self, symbol: str) -> pd.DataFrame:
        """Every commit of ``symbol`` newest first: kind, live, rows, segments, created."""
        sym = check_symbol(symbol)
        head = self._engine.head(sym)
        rows = []
        for rec in self._engine.history(sym, head) if head is not None else []:
            rows.append({
                "version": rec.seq,
                "kind": rec.kind,
                "live": head.is_live(rec.seq) if head is not None else False,
                "rows": rec.index.rows if rec.index is not None else None,
                "segments": rec.index.segments if rec.index is not None else None,
                "index_height": rec.index.height if rec.index is not None else None,
                "created": pd.Timestamp(rec.created_ns, unit="ns", tz="UTC"),
            })
        return pd.DataFrame(rows)

    def inspect_index(self, symbol: str, as_of: Any = None) -> pd.DataFrame:
        """The table-index rows of a version: one per segment (row range, column range,
        index range, key, bytes, and whether it is the symbol's open tail: written plain by a
        small append, to be replaced by the next one with its rows added)."""
        sym = check_symbol(symbol)
        rec = self._resolve(sym, as_of)
        leaves = self._index_for(sym).leaves(rec.index or EMPTY_ROOT)
        df = pd.DataFrame({
            "start_row": leaves["start_row"], "end_row": leaves["end_row"],
            "start_col": leaves["start_col"], "end_col": leaves["end_col"],
            "min_index": leaves["min_index"], "max_index": leaves["max_index"],
            "seg_offset": leaves["seg_offset"], "seg_rows": leaves["seg_rows"],
            "bytes": leaves["nbytes"],
            "open_tail": (leaves["flags"] & FLAG_OPEN_TAIL) != 0,
        })
        df["key"] = [self._keys.tdata(sym, d) for d in hex_digests(leaves)]
        return df

    def inspect_segments(self, symbol: str, as_of: Any = None) -> pd.DataFrame:
        """Per segment and column: rows, pages, encodings and compressed / raw bytes
        (reads segment metadata only)."""
        idx = self.inspect_index(symbol, as_of)
        if self._resolve(check_symbol(symbol), as_of).pickled:
            return idx
        rows = []
        for key, nbytes in zip(idx["key"], idx["bytes"], strict=True):
            reader = fermion.FermionReader(self._store.read(key))
            try:
                for name in reader.column_names:
                    pages = [p for p in reader.page_stats(name) if p["stream"] == "DATA"] or reader.page_stats(name)
                    rows.append({
                        "key": key.rsplit("/", 1)[-1], "segment_bytes": int(nbytes), "column": name,
                        "rows": reader.num_rows, "pages": len(pages),
                        "encodings": ",".join(sorted({_ENC.get(int(p["encoding"]), str(p["encoding"]))
                                                      for p in pages})),
                        "compressed": sum(p["compressed"] for p in pages),
                        "raw": sum(p["raw"] for p in pages),
                    })
            finally:
                reader.close()
        return pd.DataFrame(rows)
