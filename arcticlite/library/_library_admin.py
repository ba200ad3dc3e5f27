"""Library: listing, versions, snapshots, descriptions and data clean-up."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from arcticlite.exceptions import (
    InternalException,
    NoSuchVersionException,
    UserInputException,
)
from arcticlite.library._library import LibraryCore, check_symbol
from arcticlite.library._options import EnterpriseLibraryOptions
from arcticlite.library._types import NameWithDType, SymbolDescription, SymbolVersion, VersionInfo
from arcticlite.version import VersionRecord

MAX_SNAPSHOT_NAME = 254


class AdminMixin(LibraryCore):
    # -- symbols -----------------------------------------------------------------------------------
    def list_symbols(self, snapshot_name: str | None = None, regex: str | None = None) -> list[str]:
        """Symbols with a live version (or in ``snapshot_name``), filtered by ``regex``
        (search semantics). Served by the symbol-list cache: one prefix listing plus the
        compacted keys, never a walk of version chains."""
        if snapshot_name is not None:
            syms = list(self._snapshots.read(snapshot_name)["symbols"])
        else:
            syms = self._symbol_list.symbols()
        if regex is not None:
            pat = re.compile(regex)
            syms = [s for s in syms if pat.search(s)]
        return syms

    def reload_symbol_list(self) -> None:
        """Rebuild the symbol-list cache from the version refs."""
        self._symbol_list.rebuild()

    def compact_symbol_list(self) -> int:
        """Compact the symbol-list journal into one key; returns the number of keys merged."""
        return self._symbol_list.compact()

    # -- versions ------------------------------------------------------------------------------------
    def _snapshots_by_version(self, sym: str | None = None) -> dict[tuple[str, int], list[str]]:
        return self._snapshots.by_version(sym)

    def list_versions(
        self,
        symbol: str | None = None,
        snapshot: str | None = None,
        latest_only: bool = False,
        skip_snapshots: bool = False,
    ) -> dict[SymbolVersion, VersionInfo]:
        """Versions newest first: live ones, and deleted ones still held by a snapshot."""
        if snapshot is not None:
            snap = self._snapshots.read(snapshot)
            out: dict[SymbolVersion, VersionInfo] = {}
            for s, v in snap["symbols"].items():
                if symbol is not None and s != symbol:
                    continue
                rec = self._engine.read_record(s, int(v))
                if rec is not None:
                    out[SymbolVersion(s, rec.seq)] = VersionInfo(_utc(rec.created_ns), False, [snapshot])
            return out
        snaps = {} if skip_snapshots else self._snapshots_by_version(symbol)
        if symbol is not None:
            syms = [check_symbol(symbol)]
        else:  # deleted symbols whose versions a snapshot holds are listed too
            syms = list(dict.fromkeys([*self.list_symbols(), *sorted({s for s, _ in snaps})]))
        out = {}
        for s in syms:
            head = self._engine.head(s)
            if head is None:
                continue
            for rec in self._engine.history(s, head):
                if not rec.is_data:
                    continue
                live = head.is_live(rec.seq)
                held = snaps.get((s, rec.seq), [])
                if not live and not held:
                    continue
                out[SymbolVersion(s, rec.seq)] = VersionInfo(_utc(rec.created_ns), not live, held)
                if latest_only and live:
                    break
        return out

    def enterprise_options(self) -> EnterpriseLibraryOptions:
        """Enterprise options (accepted for compatibility; always the defaults)."""
        return EnterpriseLibraryOptions()

    # -- snapshots -----------------------------------------------------------------------------------
    def snapshot(
        self,
        snapshot_name: str,
        metadata: Any = None,
        skip_symbols: list[str] | None = None,
        versions: dict[str, int] | None = None,
    ) -> None:
        """Record the latest version of every symbol (or ``versions``) under a name.

        Versions held by a snapshot keep their data when deleted or pruned.
        """
        if not isinstance(snapshot_name, str) or not snapshot_name:
            raise UserInputException("snapshot name must be a non-empty string")
        if len(snapshot_name) > MAX_SNAPSHOT_NAME or any(c in snapshot_name for c in "*<>"):
            raise UserInputException(
                f"E_INVALID_CHAR_IN_NAME: snapshot name {snapshot_name!r} is too long or contains * < >"
            )
        if skip_symbols is not None and versions is not None:
            raise InternalException("E_INVALID_ARGUMENT: give skip_symbols or versions, not both")
        if self._snapshots.exists(snapshot_name):
            raise InternalException(f"Snapshot with name {snapshot_name} already exists")
        # a version deleted between its choice and the snapshot's write may have lost its data
        # to the deleter's clean-up (which did not see the snapshot yet): check after writing
        for attempt in range(4):
            chosen: dict[str, int] = {}
            if versions is not None:
                missing = []
                for s, v in versions.items():
                    head = self._engine.head(s)
                    if head is None or not head.is_live(int(v)):
                        missing.append((s, v))
                    else:
                        chosen[s] = int(v)
                if missing:
                    raise NoSuchVersionException(f"Specified symbol-version pairs do not exist: {missing}")
            else:
                skip = set(skip_symbols or ())
                for s in self.list_symbols():
                    if s in skip:
                        continue
                    rec = self._engine.latest_live(s)
                    if rec is not None:
                        chosen[s] = rec.seq
            if not chosen:
                raise NoSuchVersionException("No valid symbols in the library, skipping snapshot creation")
            if not self._snapshots.create(snapshot_name, chosen, metadata):
                raise InternalException(f"Snapshot with name {snapshot_name} already exists")
            dead = [(s, v) for s, v in chosen.items() if not self._is_live_version(s, v)]
            if not dead:
                return
            self._snapshots.delete(snapshot_name)
            if versions is not None or attempt == 3:
                raise NoSuchVersionException(
                    f"Specified symbol-version pairs were deleted while the snapshot was taken: {dead}"
                )

    def _is_live_version(self, sym: str, seq: int) -> bool:
        head = self._engine.head(sym)
        return head is not None and head.is_live(seq)

    def delete_snapshot(self, snapshot_name: str) -> None:
        """Delete a snapshot; data no live version or other snapshot needs is removed."""
        snap = self._snapshots.read(snapshot_name)
        self._snapshots.delete(snapshot_name)
        for s in snap["symbols"]:
            self._cleanup(s)

    def list_snapshots(self, load_metadata: bool = True) -> dict[str, Any] | list[str]:
        """Snapshot names, with their metadata unless ``load_metadata=False``."""
        names = self._snapshots.names()
        if not load_metadata:
            return names
        return {n: self._snapshots.read(n)["metadata"] for n in names}

    # -- description ---------------------------------------------------------------------------------
    def get_description(self, symbol: str, as_of: Any = None) -> SymbolDescription:
        """Columns, index, row count, date range and sortedness of a version (no data read)."""
        sym = check_symbol(symbol)
        rec = self._resolve(sym, as_of)
        return self._describe(rec)

    def _describe(self, rec: VersionRecord) -> SymbolDescription:
        when = _utc(rec.created_ns)
        nat = (np.datetime64("NaT"), np.datetime64("NaT"))
        if rec.pickled:
            return SymbolDescription(
                columns=(NameWithDType("bytes", "UINT64"),), index=(), index_type="NA",
                row_count=None, last_update_time=when, date_range=nat, sorted="UNKNOWN",
            )
        meta = self._meta_of(rec)
        schema = self._schema_of(rec)
        n_index = len(meta.index_columns)
        cols = tuple(
            NameWithDType(u, _type_name(schema.field(n_index + i).type))
            for i, u in enumerate(meta.user_columns)
        )
        if meta.index_kind in ("range", "none"):
            index: tuple[NameWithDType, ...] = (NameWithDType(_first(meta.index_names), "INT64"),)
            itype = "index"
        else:
            names = meta.index_names or tuple(meta.index_columns)
            index = tuple(NameWithDType(n, _type_name(schema.field(i).type)) for i, n in enumerate(names))
            itype = "multi_index" if meta.index_kind == "multi" else "index"
        if meta.kind in ("series", "ndarray"):
            index, itype = (), "NA"
        dr: tuple[Any, Any] = nat
        if meta.index_kind == "datetime" and rec.first_index is not None and rec.sorted != "UNSORTED":
            a, b = pd.Timestamp(rec.first_index, unit="ns"), pd.Timestamp(rec.last_index, unit="ns")
            if meta.tz:
                a, b = a.tz_localize("UTC").tz_convert(meta.tz), b.tz_localize("UTC").tz_convert(meta.tz)
            dr = (a, b)
        rows = rec.index.rows if rec.index is not None else 0
        return SymbolDescription(
            columns=cols, index=index, index_type=itype, row_count=rows,
            last_update_time=when, date_range=dr, sorted=rec.sorted,
        )

    # -- clean-up ------------------------------------------------------------------------------------
    def _cleanup(self, sym: str, killed: set[int] | None = None) -> None:
        """Delete index nodes and data segments of ``sym`` no live version or snapshot needs.

        Keys are shared between versions by reference, so the keys to keep are
        computed by walking the index trees of every live and snapshot-held version.
        """
        head = self._engine.head(sym)
        if head is None:
            return
        held = {v for (s, v) in self._snapshots_by_version(sym)}
        keep_recs: list[VersionRecord] = []
        drop_recs: list[VersionRecord] = []
        for rec in self._engine.history(sym, head):
            if not rec.is_data or rec.index is None:
                continue
            if head.is_live(rec.seq) or rec.seq in held:
                keep_recs.append(rec)
            elif killed is None or rec.seq in killed:
                drop_recs.append(rec)
        if not drop_recs:
            return
        index = self._index_for(sym)
        seen: set[str] = set()
        keep_nodes, keep_segs = index.node_digests([r.index for r in keep_recs if r.index], seen)
        drop_nodes, drop_segs = index.node_digests([r.index for r in drop_recs if r.index], set(seen))
        doomed = [self._keys.tindex(sym, d) for d in drop_nodes - keep_nodes]
        doomed += [self._keys.tdata(sym, d) for d in drop_segs - keep_segs]
        if doomed:
            self._store.delete(doomed)


def _utc(ns: int) -> pd.Timestamp:
    return pd.Timestamp(ns, unit="ns", tz="UTC")


def _first(t: tuple[Any, ...]) -> Any:
    return t[0] if t else None


_TYPE_NAMES = {
    pa.int8(): "INT8", pa.int16(): "INT16", pa.int32(): "INT32", pa.int64(): "INT64",
    pa.uint8(): "UINT8", pa.uint16(): "UINT16", pa.uint32(): "UINT32", pa.uint64(): "UINT64",
    pa.float32(): "FLOAT32", pa.float64(): "FLOAT64", pa.bool_(): "BOOL8",
    pa.string(): "UTF_DYNAMIC64", pa.large_string(): "UTF_DYNAMIC64",
    pa.binary(): "ASCII_DYNAMIC64", pa.large_binary(): "ASCII_DYNAMIC64",
}


def _type_name(t: pa.DataType) -> str:
    if t in _TYPE_NAMES:
        return _TYPE_NAMES[t]
    if pa.types.is_timestamp(t):
        return "NANOSECONDS_UTC64"
    return str(t).upper()
