"""Wrapper stores for testing and diagnosis: fault injection, latency, logging.

Each wraps any :class:`KVStore` and routes every operation through one hook, so a wrapper
passes the same conformance suite as the store it wraps.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TypeVar

from arcticlite.exceptions import StorageUnavailableError
from arcticlite.storage._base import Buffer, KVStore

__all__ = ["ALL_OPS", "FaultInjectingStore", "LatencyStore", "LoggingStore", "WrappingStore"]

T = TypeVar("T")

#: Names of the operations a wrapper sees (the ``ops`` of :class:`FaultInjectingStore`).
ALL_OPS = frozenset(
    {
        "read",
        "read_range",
        "read_many",
        "exists",
        "list_keys",
        "write",
        "write_many",
        "write_if_absent",
        "compare_and_swap",
        "delete",
        "commit",
    }
)


class WrappingStore(KVStore):
    """Delegate every operation to ``inner`` through :meth:`_op` (the one hook a wrapper
    overrides: fault injection, latency, logging, the crash battery's ``CrashingStore``)."""

    def __init__(self, inner: KVStore) -> None:
        self.inner = inner
        self.atomic_commit = inner.atomic_commit

    def _op(self, name: str, key: str, fn: Callable[[], T]) -> T:
        return fn()

    def read(self, key: str) -> Buffer:
        return self._op("read", key, lambda: self.inner.read(key))

    def read_range(self, key: str, offset: int, length: int) -> Buffer:
        return self._op("read_range", key, lambda: self.inner.read_range(key, offset, length))

    def read_many(self, keys: Sequence[str]) -> list[Buffer]:
        return self._op("read_many", f"{len(keys)} keys", lambda: self.inner.read_many(keys))

    def prefetch(self, keys: Sequence[str]) -> None:
        self.inner.prefetch(keys)

    def exists(self, key: str) -> bool:
        return self._op("exists", key, lambda: self.inner.exists(key))

    def list_keys(self, prefix: str = "") -> Iterator[str]:
        return iter(self._op("list_keys", prefix, lambda: list(self.inner.list_keys(prefix))))

    def list_sizes(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        return iter(self._op("list_keys", prefix, lambda: list(self.inner.list_sizes(prefix))))

    def write(self, key: str, data: Buffer) -> None:
        self._op("write", key, lambda: self.inner.write(key, data))

    def write_many(self, items: Mapping[str, Buffer]) -> None:
        self._op("write_many", f"{len(items)} keys", lambda: self.inner.write_many(items))

    def write_if_absent(self, key: str, data: Buffer) -> bool:
        return self._op("write_if_absent", key, lambda: self.inner.write_if_absent(key, data))

    def compare_and_swap(self, key: str, expected: Buffer | None, new: Buffer) -> bool:
        return self._op(
            "compare_and_swap", key, lambda: self.inner.compare_and_swap(key, expected, new)
        )

    def delete(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        self._op("delete", f"{len(keys)} keys", lambda: self.inner.delete(keys))

    def commit(self, create: Mapping[str, Buffer], put: Mapping[str, Buffer]) -> bool:
        if not self.atomic_commit:
            return super().commit(create, put)  # one conditional write per created key
        what = ",".join(create) or ",".join(put)
        return self._op("commit", what, lambda: self.inner.commit(create, put))

    def commit_many(self, commits: Sequence[tuple[Mapping[str, Buffer], Mapping[str, Buffer]]]) -> list[bool]:
        if not self.atomic_commit:
            return super().commit_many(commits)  # one commit after another
        what = ";".join(",".join(create) for create, _ in commits)
        return self._op("commit_many", what, lambda: self.inner.commit_many(commits))

    def probe_conditional_writes(self) -> bool:
        return self.inner.probe_conditional_writes()

    def key_count(self) -> int | None:
        return self.inner.key_count()

    def close(self) -> None:
        self.inner.close()


class FaultInjectingStore(WrappingStore):
    """Make a store fail at seeded rates, before or after an operation lands.

    Parameters
    ----------
    inner : KVStore
        The store to wrap.
    seed : int
        Seed of the fault schedule (a run replays from its seed when calls are sequential).
    error_rate : float, default 0.0
        Probability that an operation raises :class:`StorageUnavailableError` *before* it
        reaches ``inner`` (nothing happened).
    after_rate : float, default 0.0
        Probability that an operation reaches ``inner``, lands, and then raises
        :class:`StorageUnavailableError` (a lost response). For ``write_if_absent`` /
        ``compare_and_swap`` / ``commit`` the caller cannot know whether it won and must read
        back, exactly as with a real S3 5xx after apply.
    latency : float, default 0.0
        Sleep ``uniform(0, latency)`` seconds before each operation.
    ops : iterable of str, optional
        Operation names to affect (see :data:`ALL_OPS`); all by default.

    Attributes
    ----------
    injected : dict
        Faults injected so far: ``{"before": n, "after": m}``.
    """

    def __init__(
        self,
        inner: KVStore,
        *,
        seed: int,
        error_rate: float = 0.0,
        after_rate: float = 0.0,
        latency: float = 0.0,
        ops: Iterable[str] = ALL_OPS,
    ) -> None:
        super().__init__(inner)
        for name, rate in (("error_rate", error_rate), ("after_rate", after_rate)):
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {rate}")
        self.ops = frozenset(ops)
        unknown = self.ops - ALL_OPS
        if unknown:
            raise ValueError(f"unknown operations {sorted(unknown)}; known: {sorted(ALL_OPS)}")
        self.seed, self.error_rate, self.after_rate, self.latency = (
            seed,
            error_rate,
            after_rate,
            latency,
        )
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.injected = {"before": 0, "after": 0}

    def __repr__(self) -> str:
        return (
            f"FaultInjectingStore({self.inner!r}, seed={self.seed}, "
            f"error_rate={self.error_rate}, after_rate={self.after_rate})"
        )

    def _draw(self) -> tuple[float, float, float]:
        with self._lock:
            return self._rng.random(), self._rng.random(), self._rng.random()

    def _op(self, name: str, key: str, fn: Callable[[], T]) -> T:
        if name not in self.ops:
            return fn()
        before, after, lat = self._draw()
        if self.latency:
            time.sleep(lat * self.latency)
        if before < self.error_rate:
            with self._lock:
                self.injected["before"] += 1
            raise StorageUnavailableError(f"{name} {key!r}: injected fault (not applied)")
        result = fn()
        if after < self.after_rate:
            with self._lock:
                self.injected["after"] += 1
            raise StorageUnavailableError(
                f"{name} {key!r}: injected fault after the operation landed (response lost)"
            )
        return result


class LatencyStore(WrappingStore):
    """Add ``uniform(low, high)`` seconds of delay to every operation (for local experiments
    that imitate a remote store)."""

    def __init__(
        self, inner: KVStore, *, low: float = 0.0, high: float = 0.01, seed: int = 0
    ) -> None:
        super().__init__(inner)
        if not 0.0 <= low <= high:
            raise ValueError("need 0 <= low <= high")
        self.low, self.high = low, high
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LatencyStore({self.inner!r}, low={self.low}, high={self.high})"

    def _op(self, name: str, key: str, fn: Callable[[], T]) -> T:
        with self._lock:
            delay = self._rng.uniform(self.low, self.high)
        if delay:
            time.sleep(delay)
        return fn()


class LoggingStore(WrappingStore):
    """Log every operation (name, key, outcome, duration) at DEBUG; never values.

    Parameters
    ----------
    inner : KVStore
    logger : logging.Logger, optional
        Defaults to ``logging.getLogger("arcticlite.storage")``.
    """

    def __init__(self, inner: KVStore, logger: logging.Logger | None = None) -> None:
        super().__init__(inner)
        self.logger = logger or logging.getLogger("arcticlite.storage")

    def __repr__(self) -> str:
        return f"LoggingStore({self.inner!r})"

    def _op(self, name: str, key: str, fn: Callable[[], T]) -> T:
        start = time.perf_counter()
        try:
            result = fn()
        except Exception as exc:
            self.logger.debug(
                "%s %r failed after %.1f ms: %s",
                name,
                key,
                (time.perf_counter() - start) * 1e3,
                type(exc).__name__,
            )
            raise
        if isinstance(result, bool):
            self.logger.debug(
                "%s %r -> %s in %.1f ms", name, key, result, (time.perf_counter() - start) * 1e3
            )
        else:
            self.logger.debug("%s %r in %.1f ms", name, key, (time.perf_counter() - start) * 1e3)
        return result
