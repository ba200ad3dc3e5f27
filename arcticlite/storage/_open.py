"""``open_store``: the store a URI names (the one place that knows every backend)."""

from __future__ import annotations

import os

from arcticlite.storage._base import KVStore
from arcticlite.storage._lmdb import LmdbStore
from arcticlite.storage._memory import MemoryStore
from arcticlite.storage._s3 import S3Store
from arcticlite.storage._uri import LmdbUri, MemoryUri, S3Uri, StoreUri, parse_uri


def open_store(uri: str | StoreUri, *, read_only: bool = False) -> KVStore:
    """Open the store a URI names (``mem://``, ``lmdb://``, ``s3://``, ``s3s://``).

    ``lmdb://`` creates the directory, unless ``read_only``: then the environment is opened
    read-only (it must exist; its writes raise ``PermissionException``). ``mem://`` returns a
    new empty store on every call. ``s3://`` needs the ``s3`` extra (boto3).
    """
    parsed = uri if isinstance(uri, LmdbUri | MemoryUri | S3Uri) else parse_uri(uri)  # a non-str: a clear error
    if isinstance(parsed, MemoryUri):
        return MemoryStore()
    if isinstance(parsed, LmdbUri):
        if read_only:
            store = LmdbStore(parsed.path, map_size=parsed.map_size, read_only=True)
            store.exists("_")  # opens the environment: a missing store is an error now, not later
            return store
        os.makedirs(parsed.path, exist_ok=True)
        return LmdbStore(parsed.path, map_size=parsed.map_size)
    return S3Store.from_uri(parsed)
