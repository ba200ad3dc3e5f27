"""Every key and value of a store, to assert that an operation changed nothing."""

from __future__ import annotations

import dataclasses
import hashlib
import os

from arcticlite.storage import LmdbUri, open_store, parse_uri


@dataclasses.dataclass(frozen=True)
class StoreImage:
    """The store's keys and values (and, for LMDB, the SHA-256 of ``data.mdb``, which any
    committed write transaction changes, even one that writes the same bytes)."""

    values: dict[str, bytes]
    data_file: str | None

    @classmethod
    def of(cls, uri: str) -> StoreImage:
        parsed = parse_uri(uri)
        digest = None
        if isinstance(parsed, LmdbUri):
            with open(os.path.join(parsed.path, "data.mdb"), "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
        with open_store(uri, read_only=True) as store:
            keys = sorted(store.list_keys(""))
            values = {k: bytes(v) for k, v in zip(keys, store.read_many(keys), strict=True)}
        return cls(values, digest)

    def assert_same(self, before: StoreImage, *, untouched: bool = False) -> None:
        """``after.assert_same(before)``: same keys and values; with ``untouched``, also no committed LMDB write transaction
        (a refused operation that wrote segments and removed them again fails that)."""
        added = sorted(self.values.keys() - before.values.keys())
        removed = sorted(before.values.keys() - self.values.keys())
        changed = sorted(k for k in self.values.keys() & before.values.keys() if self.values[k] != before.values[k])
        assert not (added or removed or changed), f"store changed: added {added}, removed {removed}, changed {changed}"
        if untouched:
            assert self.data_file == before.data_file, "LMDB data file changed (a write transaction was committed)"
