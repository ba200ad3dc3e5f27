"""The storage layer: one small key-value interface and its backends (memory, LMDB, S3)."""

from arcticlite.storage._base import Buffer, KVStore
from arcticlite.storage._memory import MemoryStore

__all__ = ["Buffer", "KVStore", "MemoryStore"]
