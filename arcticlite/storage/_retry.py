"""Bounded retries with exponential backoff and full jitter, and a retrying store wrapper.

botocore's own retries share one budget per client (a burst of faults starves unrelated
calls), so the S3 backend disables them and retries here, per call. :class:`RetryingStore`
applies the same policy to any store (e.g. over :class:`FaultInjectingStore` in tests).
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TypeVar

from arcticlite.exceptions import AmbiguousWriteError, StorageUnavailableError
from arcticlite.storage._base import Buffer, KVStore

__all__ = ["RetryPolicy", "RetryingStore"]

T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How often and how patiently to retry a failed storage request.

    Attributes
    ----------
    max_attempts : int
        Attempts per call, the first included (default 8).
    base_delay : float
        Seconds; attempt ``n`` (from 0) sleeps ``uniform(0, min(max_delay, base_delay * 2**n))``.
    max_delay : float
        Cap of one sleep, seconds.
    """

    max_attempts: int = 8
    base_delay: float = 0.05
    max_delay: float = 2.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("delays must be >= 0")

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """The full-jitter sleep before retry number ``attempt + 1``."""
        cap = min(self.max_delay, self.base_delay * (2**attempt))
        return (rng or random).uniform(0.0, cap)

    def sleep(self, attempt: int) -> None:
        """Sleep :meth:`delay` seconds."""
        d = self.delay(attempt)
        if d > 0:
            time.sleep(d)


class RetryingStore(KVStore):
    """Retry :class:`StorageUnavailableError` on any store, under a :class:`RetryPolicy`.

    Idempotent operations (reads, ``write``, ``delete``, listing a page) are simply retried.
    A conditional write that failed and then, on retry, reports that it lost
    (``False``) may have landed on the first attempt; the wrapper then reads the key back and
    counts the write as won if the stored value equals the one it wrote. That is sound only
    when concurrent writers never write byte-identical values (the engine puts a unique token
    in every conditional value); otherwise expect :class:`AmbiguousWriteError` to be resolved
    by the caller. An :class:`AmbiguousWriteError` from the inner store is resolved the same way.
    """

    def __init__(self, inner: KVStore, policy: RetryPolicy | None = None) -> None:
        self.inner = inner
        self.policy = policy or RetryPolicy(base_delay=0.001, max_delay=0.02, max_attempts=12)
        self.atomic_commit = inner.atomic_commit

    def __repr__(self) -> str:
        return f"RetryingStore({self.inner!r})"

    def _retry(self, fn: Callable[[], T]) -> T:
        for attempt in range(self.policy.max_attempts):
            try:
                return fn()
            except StorageUnavailableError:
                if attempt + 1 == self.policy.max_attempts:
                    raise
                self.policy.sleep(attempt)
        raise AssertionError("unreachable")

    def _conditional(self, key: str, new: Buffer, fn: Callable[[], bool]) -> bool:
        uncertain = False
        for attempt in range(self.policy.max_attempts):
            try:
                won = fn()
            except AmbiguousWriteError:
                uncertain, won = True, False
            except StorageUnavailableError:
                uncertain = True
                if attempt + 1 == self.policy.max_attempts:
                    raise
                self.policy.sleep(attempt)
                continue
            if won or not uncertain:
                return won
            current = self._retry(lambda: self.inner.read_if_exists(key))
            return current is not None and bytes(current) == bytes(new)
        raise AssertionError("unreachable")

    def read(self, key: str) -> Buffer:
        return self._retry(lambda: self.inner.read(key))

    def read_range(self, key: str, offset: int, length: int) -> Buffer:
        return self._retry(lambda: self.inner.read_range(key, offset, length))

    def read_many(self, keys: Sequence[str]) -> list[Buffer]:
        return self._retry(lambda: self.inner.read_many(keys))

    def prefetch(self, keys: Sequence[str]) -> None:
        self.inner.prefetch(keys)

    def exists(self, key: str) -> bool:
        return self._retry(lambda: self.inner.exists(key))

    def list_keys(self, prefix: str = "") -> Iterator[str]:
        return iter(self._retry(lambda: list(self.inner.list_keys(prefix))))

    def list_sizes(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        return iter(self._retry(lambda: list(self.inner.list_sizes(prefix))))

    def write(self, key: str, data: Buffer) -> None:
        self._retry(lambda: self.inner.write(key, data))

    def write_many(self, items: Mapping[str, Buffer]) -> None:
        self._retry(lambda: self.inner.write_many(items))

    def write_if_absent(self, key: str, data: Buffer) -> bool:
        return self._conditional(key, data, lambda: self.inner.write_if_absent(key, data))

    def compare_and_swap(self, key: str, expected: Buffer | None, new: Buffer) -> bool:
        return self._conditional(key, new, lambda: self.inner.compare_and_swap(key, expected, new))

    def delete(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        self._retry(lambda: self.inner.delete(keys))

    def commit(self, create: Mapping[str, Buffer], put: Mapping[str, Buffer]) -> bool:
        if not self.atomic_commit:
            return super().commit(create, put)
        if not create:
            return self._retry(lambda: self.inner.commit(create, put))
        # Atomic: the whole commit landed iff its first created key holds our value.
        key, value = next(iter(create.items()))
        return self._conditional(key, value, lambda: self.inner.commit(create, put))

    def probe_conditional_writes(self) -> bool:
        return self._retry(self.inner.probe_conditional_writes)

    def key_count(self) -> int | None:
        return self.inner.key_count()

    def close(self) -> None:
        self.inner.close()
