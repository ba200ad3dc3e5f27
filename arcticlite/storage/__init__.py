"""The storage layer: one small key-value interface and its backends (memory, LMDB, S3).

``open_store("lmdb:///data/arctic")`` opens a store from a URI; :mod:`arcticlite.testing`
holds the conformance suite every backend and wrapper passes.
"""

from arcticlite.storage._base import Buffer, KVStore
from arcticlite.storage._faults import (
    FaultInjectingStore,
    LatencyStore,
    LoggingStore,
    WrappingStore,
)
from arcticlite.storage._lmdb import LmdbStore
from arcticlite.storage._memory import MemoryStore
from arcticlite.storage._open import open_store
from arcticlite.storage._retry import RetryingStore, RetryPolicy
from arcticlite.storage._s3 import S3Store
from arcticlite.storage._uri import (
    LmdbUri,
    MemoryUri,
    S3Uri,
    StoreUri,
    parse_size,
    parse_uri,
    redact,
)

__all__ = [
    "Buffer",
    "FaultInjectingStore",
    "KVStore",
    "LatencyStore",
    "LmdbStore",
    "LmdbUri",
    "LoggingStore",
    "MemoryStore",
    "MemoryUri",
    "RetryPolicy",
    "RetryingStore",
    "S3Store",
    "S3Uri",
    "StoreUri",
    "WrappingStore",
    "open_store",
    "parse_size",
    "parse_uri",
    "redact",
]
