"""An in-memory store (``mem://``): thread-safe, atomic commits, for tests and scratch work."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping

from arcticlite.exceptions import KeyNotFoundException
from arcticlite.storage._base import Buffer, KVStore


class MemoryStore(KVStore):
    """A dict behind one lock. Each instance is a separate, empty store."""

    atomic_commit = True

    def __init__(self) -> None:
        self._data: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "MemoryStore()"

    def read(self, key: str) -> Buffer:
        try:
            return self._data[key]
        except KeyError:
            raise KeyNotFoundException(f"key {key!r} not found") from None

    def exists(self, key: str) -> bool:
        return key in self._data

    def list_keys(self, prefix: str = "") -> Iterator[str]:
        with self._lock:
            keys = [k for k in self._data if k.startswith(prefix)]
        return iter(keys)

    def list_sizes(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        with self._lock:
            sizes = [(k, len(v)) for k, v in self._data.items() if k.startswith(prefix)]
        return iter(sizes)

    def write(self, key: str, data: Buffer) -> None:
        value = bytes(data)
        with self._lock:
            self._data[key] = value

    def write_if_absent(self, key: str, data: Buffer) -> bool:
        value = bytes(data)
        with self._lock:
            if key in self._data:
                return False
            self._data[key] = value
            return True

    def compare_and_swap(self, key: str, expected: Buffer | None, new: Buffer) -> bool:
        value = bytes(new)
        with self._lock:
            current = self._data.get(key)
            if expected is None:
                if current is not None:
                    return False
            elif current is None or current != bytes(expected):
                return False
            self._data[key] = value
            return True

    def delete(self, keys: Iterable[str]) -> None:
        with self._lock:
            for k in keys:
                self._data.pop(k, None)

    def commit(self, create: Mapping[str, Buffer], put: Mapping[str, Buffer]) -> bool:
        with self._lock:
            if any(k in self._data for k in create):
                return False
            for k, v in create.items():
                self._data[k] = bytes(v)
            for k, v in put.items():
                self._data[k] = bytes(v)
            return True
