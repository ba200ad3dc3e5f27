"""A store that ignores conditions: the control of the concurrency battery (test-only).

:class:`UnconditionalStore` wraps a store and turns every conditional write into a plain
write that reports success: ``write_if_absent`` overwrites, ``compare_and_swap`` ignores
``expected`` and ``commit`` writes its ``create`` keys even when they exist. That is what an
S3 endpoint ignoring ``If-None-Match`` (or ArcticDB's unconditional ref overwrite) does, so
the same harness that finds 0 lost appends on a real store must find lost appends through it:
the test of the battery can fail. Not part of the library's API.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from arcticlite.storage import Buffer, KVStore


class UnconditionalStore(KVStore):
    """Delegate to ``inner``, with every condition switched off (last writer wins)."""

    def __init__(self, inner: KVStore) -> None:
        self.inner = inner
        self.atomic_commit = inner.atomic_commit

    def __repr__(self) -> str:
        return f"UnconditionalStore({self.inner!r})"

    def read(self, key: str) -> Buffer:
        return self.inner.read(key)

    def read_range(self, key: str, offset: int, length: int) -> Buffer:
        return self.inner.read_range(key, offset, length)

    def read_many(self, keys: Sequence[str]) -> list[Buffer]:
        return self.inner.read_many(keys)

    def read_if_exists(self, key: str) -> Buffer | None:
        return self.inner.read_if_exists(key)

    def exists(self, key: str) -> bool:
        return self.inner.exists(key)

    def list_keys(self, prefix: str = "") -> Iterator[str]:
        return self.inner.list_keys(prefix)

    def list_sizes(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        return self.inner.list_sizes(prefix)

    def write(self, key: str, data: Buffer) -> None:
        self.inner.write(key, data)

    def write_many(self, items: Mapping[str, Buffer]) -> None:
        self.inner.write_many(items)

    def write_if_absent(self, key: str, data: Buffer) -> bool:
        self.inner.write(key, data)
        return True

    def compare_and_swap(self, key: str, expected: Buffer | None, new: Buffer) -> bool:
        self.inner.write(key, new)
        return True

    def delete(self, keys: Iterable[str]) -> None:
        self.inner.delete(keys)

    def commit(self, create: Mapping[str, Buffer], put: Mapping[str, Buffer]) -> bool:
        if self.inner.atomic_commit:  # one transaction, as the real commit, minus its check
            return self.inner.commit({}, {**create, **put})
        self.inner.write_many({**create, **put})
        return True

    def probe_conditional_writes(self) -> bool:
        return True  # what an endpoint ignoring If-None-Match claims

    def close(self) -> None:
        self.inner.close()
