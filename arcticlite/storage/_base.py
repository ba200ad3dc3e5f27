"""The key-value store interface every backend implements.

Keys are ``str`` (``/``-separated, ASCII-safe: the engine escapes symbol names), values are
bytes in and a buffer (``bytes`` or ``memoryview``) out. Conditional writes *report* whether
they won, so that a version key can be created exactly once and a ref moved by
compare-and-swap.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import TracebackType

from arcticlite.exceptions import AmbiguousWriteError, KeyNotFoundException

Buffer = bytes | bytearray | memoryview


class KVStore(abc.ABC):
    """A synchronous key-value store: bytes in, buffer out.

    Every method is safe to call from many threads at once. Backends translate their own
    errors into :mod:`arcticlite.exceptions` (``raise ... from exc``).
    """

    #: True when :meth:`commit` is atomic (all of it lands or none of it does).
    atomic_commit: bool = False

    # -- reads -------------------------------------------------------------------------------
    @abc.abstractmethod
    def read(self, key: str) -> Buffer:
        """Return the whole value; raise :class:`KeyNotFoundException` if absent."""

    def read_range(self, key: str, offset: int, length: int) -> Buffer:
        """Return ``length`` bytes from ``offset`` (fewer at the end of the value)."""
        data = memoryview(self.read(key))
        return data[offset : offset + length]

    def read_many(self, keys: Sequence[str]) -> list[Buffer]:
        """Return the values of ``keys`` in order; parallel where the backend benefits.

        Raises :class:`KeyNotFoundException` naming the first missing key.
        """
        return [self.read(k) for k in keys]

    def prefetch(self, keys: Sequence[str]) -> None:
        """A hint that ``keys`` (immutable values: never overwritten) will be read soon: a
        backend with request latency starts fetching them, and the next :meth:`read` of one
        takes the fetched value. The default does nothing."""
        del keys  # a store without request latency reads them when asked

    def read_if_exists(self, key: str) -> Buffer | None:
        """Return the value, or ``None`` when the key is absent."""
        try:
            return self.read(key)
        except KeyNotFoundException:
            return None

    @contextlib.contextmanager
    def read_view(self, key: str, *, release: bool = False) -> Iterator[memoryview]:
        """Lend a read-only view of the value of ``key`` for the ``with`` block.

        Zero-copy where the backend can (LMDB maps the file); the view is valid only inside
        the block. The default reads the value. Raises :class:`KeyNotFoundException`.
        ``release=True`` tells a mapping backend that the caller is done with these bytes for
        now: their pages leave the process's resident set when the block ends (they stay in
        the OS page cache), so a large read does not hold the whole file in memory.
        """
        view = memoryview(self.read(key)).toreadonly()
        try:
            yield view
        finally:
            view.release()

    @abc.abstractmethod
    def exists(self, key: str) -> bool:
        """Whether ``key`` is present."""

    @abc.abstractmethod
    def list_keys(self, prefix: str = "") -> Iterator[str]:
        """Yield every key starting with ``prefix`` (lazily, page by page; order unspecified)."""

    def list_sizes(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        """Yield ``(key, stored bytes)`` of every key starting with ``prefix`` (order
        unspecified). The default reads each value through :meth:`read_view`; backends whose
        listing carries sizes override it. A key deleted meanwhile is skipped."""
        for key in self.list_keys(prefix):
            try:
                with self.read_view(key) as view:
                    n = len(view)
            except KeyNotFoundException:
                continue
            yield key, n

    # -- writes ------------------------------------------------------------------------------
    @abc.abstractmethod
    def write(self, key: str, data: Buffer) -> None:
        """Create or overwrite ``key``."""

    @abc.abstractmethod
    def write_if_absent(self, key: str, data: Buffer) -> bool:
        """Create ``key`` only if absent; return whether this call created it.

        May raise :class:`~arcticlite.exceptions.AmbiguousWriteError` when the backend cannot
        know (a retried request was refused after an earlier attempt lost its response); the
        caller then reads the key back and compares.
        """

    def create_unique(self, key: str, data: Buffer) -> bool:
        """:meth:`write_if_absent` of a value no other writer writes (it holds a unique token):
        when the store cannot tell whether the write landed (:class:`AmbiguousWriteError`, a
        lost answer), the key is read back and the write counts as won iff it holds ``data``."""
        try:
            return self.write_if_absent(key, data)
        except AmbiguousWriteError:
            current = self.read_if_exists(key)
            return current is not None and bytes(current) == bytes(data)

    @abc.abstractmethod
    def compare_and_swap(self, key: str, expected: Buffer | None, new: Buffer) -> bool:
        """Replace the value of ``key`` with ``new`` only if it currently equals ``expected``.

        ``expected=None`` means the key must not exist. Returns whether the swap happened.
        May raise :class:`~arcticlite.exceptions.AmbiguousWriteError` (see
        :meth:`write_if_absent`).
        """

    @abc.abstractmethod
    def delete(self, keys: Iterable[str]) -> None:
        """Delete ``keys``; absent keys are ignored."""

    def write_many(self, items: Mapping[str, Buffer]) -> None:
        """Write several keys (parallel where the backend benefits); not atomic."""
        for k, v in items.items():
            self.write(k, v)

    def commit(self, create: Mapping[str, Buffer], put: Mapping[str, Buffer]) -> bool:
        """Create every key of ``create`` (all must be absent) and write every key of ``put``.

        Returns ``False``, writing nothing, if any key of ``create`` exists. Atomic when
        :attr:`atomic_commit` is true (LMDB, memory: one transaction). The default (S3) is not
        atomic: it creates the keys of ``create`` one by one with :meth:`write_if_absent`
        (so give it one key when exactly-once matters) and then writes ``put``.
        """
        for k, v in create.items():
            if not self.write_if_absent(k, v):
                return False
        for k, v in put.items():
            self.write(k, v)
        return True

    def commit_many(self, commits: Sequence[tuple[Mapping[str, Buffer], Mapping[str, Buffer]]]) -> list[bool]:
        """:meth:`commit` of each ``(create, put)`` pair, in order; the list of their results.

        Each pair keeps its own rule (it writes nothing when a key of its ``create`` exists,
        one created by an earlier pair of the call included). Backends with transactions
        override it to make the whole call one transaction (LMDB: one sync for all).
        """
        return [self.commit(create, put) for create, put in commits]

    def probe_conditional_writes(self) -> bool:
        """Whether :meth:`write_if_absent` / :meth:`compare_and_swap` are really enforced.

        Always true for transactional backends (memory, LMDB). S3 overrides it with a probe of
        the endpoint, since some S3-compatible servers silently ignore ``If-None-Match``.
        """
        return True

    def key_count(self) -> int | None:
        """How many keys the backend's own bookkeeping says it holds (LMDB: the B-tree's entry
        count, kept apart from the pages a listing walks), or None when it keeps no such
        count. ``verify`` compares it with a listing: a damaged page can hide keys from one."""
        return None

    # -- lifecycle ---------------------------------------------------------------------------
    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources; the store must not be used afterwards."""

    def __enter__(self) -> KVStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
