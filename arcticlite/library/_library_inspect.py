"""Library: introspection of what is stored (versions, index rows, segments and encodings),
in the spirit of Databend's ``fuse_snapshot`` / ``fuse_segment`` / ``fuse_block``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import pandas as pd

from arcticlite import format as fermion
from arcticlite.index import EMPTY_ROOT, FLAG_OPEN_TAIL, hex_digests
from arcticlite.library._library import LibraryCore, check_symbol
from arcticlite.library._types import KeyType
from arcticlite.version import unescape


class Size(NamedTuple):
    """Stored bytes and number of keys (``AdminTools`` results)."""

    bytes_compressed: int
    count: int  # type: ignore[assignment]  # ArcticDB's field name (shadows tuple.count)


#: Key types that belong to one symbol (always present in per-symbol results).
SYMBOL_KEY_TYPES = (KeyType.VERSION_REF, KeyType.VERSION, KeyType.TABLE_INDEX, KeyType.TABLE_DATA,
                    KeyType.APPEND_DATA)
_BY_PREFIX = {k.value: k for k in KeyType}


class AdminTools:
    """What a library stores, by key type and by symbol (``Library.admin_tools()``, as in
    ArcticDB). Sizes are the stored bytes of each key (compressed data plus arcticlite's
    envelope); S3 and memory take them from their listing, LMDB from each value."""

    def __init__(self, lib: LibraryCore) -> None:
        self._lib = lib

    def _scan(self, prefixes: list[str]) -> Iterator[tuple[KeyType, str | None, int]]:
        root = self._lib._keys.root
        for prefix in prefixes:
            for key, n in self._lib._store.list_sizes(prefix):
                kind, _, rest = key[len(root):].partition("/")
                kt = _BY_PREFIX.get(kind)
                if kt is None:
                    continue
                sym = None
                if kt in SYMBOL_KEY_TYPES and rest:
                    sym = unescape(rest if kt is KeyType.VERSION_REF else rest.split("/", 1)[0])
                yield kt, sym, n

    @staticmethod
    def _add(out: dict[KeyType, Size], kt: KeyType, n: int) -> None:
        s = out[kt]
        out[kt] = Size(s.bytes_compressed + n, s.count + 1)

    def get_sizes(self) -> dict[KeyType, Size]:
        """Stored bytes and key count of every key type in the library (every type present)."""
        out = {kt: Size(0, 0) for kt in KeyType}
        for kt, _, n in self._scan([self._lib._keys.root]):
            self._add(out, kt, n)
        return out

    def get_sizes_by_symbol(self) -> dict[str, dict[KeyType, Size]]:
        """Per symbol, the stored bytes and key count of its version refs, versions, index
        nodes, data segments and staged data."""
        out: dict[str, dict[KeyType, Size]] = {}
        for kt, sym, n in self._scan([self._lib._keys.root]):
            if sym is not None:
                self._add(out.setdefault(sym, {k: Size(0, 0) for k in SYMBOL_KEY_TYPES}), kt, n)
        return out

    def get_sizes_for_symbol(self, symbol: str) -> dict[KeyType, Size]:
        """:meth:`get_sizes_by_symbol` for one symbol (only its keys are listed)."""
        sym = check_symbol(symbol)
        keys = self._lib._keys
        out = {k: Size(0, 0) for k in SYMBOL_KEY_TYPES}
        prefixes = [keys.ref(sym), keys.version_prefix(sym), keys.tindex_prefix(sym), keys.tdata_prefix(sym),
                    keys.staged_prefix(sym)]
        for kt, found, n in self._scan(prefixes):
            if found == sym:  # the ref key is a prefix of longer symbols' refs
                self._add(out, kt, n)
        return out


class InspectMixin(LibraryCore):
    def admin_tools(self) -> AdminTools:
        """Storage statistics of this library (ArcticDB's ``Library.admin_tools()``)."""
        return AdminTools(self)

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
                        "encodings": ",".join(sorted({fermion.ENCODING_NAMES.get(int(p["encoding"]), str(p["encoding"]))
                                                      for p in pages})),
                        "compressed": sum(p["compressed"] for p in pages),
                        "raw": sum(p["raw"] for p in pages),
                    })
            finally:
                reader.close()
        return pd.DataFrame(rows)
