"""Snapshots: named, immutable maps of symbol -> version id (seed 000's snapshot keys).

A snapshot is one key written once with create-if-absent; the versions it names keep their
data when they are deleted or pruned (clean-up and ``gc`` treat them as reachable).
"""

from __future__ import annotations

import uuid
from typing import Any

from arcticlite._envelope import KIND_SNAPSHOT, naming_key, seal, unseal
from arcticlite.exceptions import CorruptDataError, NoDataFoundException
from arcticlite.storage import KVStore
from arcticlite.version._keys import LibraryKeys, unescape
from arcticlite.version._records import decode_metadata, encode_metadata


class Snapshots:
    """The snapshots of one library."""

    def __init__(self, store: KVStore, keys: LibraryKeys) -> None:
        self.store = store
        self.keys = keys

    def names(self) -> list[str]:
        """Snapshot names, sorted."""
        prefix = self.keys.snapshot_prefix
        return sorted(unescape(k[len(prefix) :]) for k in self.store.list_keys(prefix))

    def exists(self, name: str) -> bool:
        return self.store.exists(self.keys.snapshot(name))

    def read(self, name: str) -> dict[str, Any]:
        """``{"name", "symbols": {symbol: version}, "metadata_bytes"}`` (the pickled metadata,
        or ``None``: see :meth:`metadata`); ``NoDataFoundException`` when there is no such
        snapshot."""
        key = self.keys.snapshot(name)
        raw = self.store.read_if_exists(key)
        if raw is None and name in self.names():  # created since (read again), or a damaged key index
            raw = self.store.read_if_exists(key)
            if raw is None:  # listed, yet not found: the store's key index is damaged
                raise CorruptDataError(f"snapshot {name!r} is listed under {key!r} but its value cannot be read "
                                       "(the store's key index is damaged); restore the store from a backup")
        if raw is None:
            raise NoDataFoundException(f"Snapshot {name} not found")
        with naming_key(key):
            header, blob = unseal(raw, KIND_SNAPSHOT)
            if header.get("name", name) != name:  # a flipped bit in the key moved another snapshot's value
                raise CorruptDataError(f"the value stored under {key!r} is snapshot {header.get('name')!r}, "
                                       f"not {name!r}: the key is corrupt")
        header["metadata_bytes"] = bytes(blob) if header.get("has_meta") else None
        return header

    @staticmethod
    def metadata(snap: dict[str, Any], allow_pickle: bool = True) -> Any:
        """The metadata of a snapshot :meth:`read` returned (see :func:`unpickle`)."""
        blob = snap["metadata_bytes"]
        if blob is None:
            return None
        return decode_metadata(blob, allow_pickle=allow_pickle, what=f"the metadata of snapshot {snap['name']!r}")

    def create(self, name: str, chosen: dict[str, int], metadata: Any = None) -> bool:
        """Write the snapshot ``name`` holding ``chosen``; False if the name is taken."""
        blob = encode_metadata(metadata, f"the metadata of snapshot {name!r}") or b""
        body = seal(
            KIND_SNAPSHOT,
            {"name": name, "symbols": chosen, "has_meta": metadata is not None, "token": uuid.uuid4().hex},
            blob,
        )
        return self.store.create_unique(self.keys.snapshot(name), body)

    def delete(self, name: str) -> None:
        self.store.delete([self.keys.snapshot(name)])

    def by_version(self, sym: str | None = None) -> dict[tuple[str, int], list[str]]:
        """``(symbol, version) -> [snapshot names]`` of every snapshot (of ``sym`` only if given)."""
        out: dict[tuple[str, int], list[str]] = {}
        for name in self.names():
            try:
                snap = self.read(name)
            except NoDataFoundException:
                continue  # deleted while listed
            for s, v in snap["symbols"].items():
                if sym is None or s == sym:
                    out.setdefault((s, int(v)), []).append(name)
        return out
