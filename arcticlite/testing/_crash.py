"""A store that dies at its Nth call: the crash part of the reliability battery (test-only).

:class:`CrashingStore` counts the calls an operation makes on a store and, given ``crash_at=N``,
raises :class:`SimulatedCrash` instead of making call ``N`` -- and at every call after it, as a
dead process makes no more calls (no clean-up handler reaches the store). ``SimulatedCrash`` is
a ``BaseException``, so no ``except Exception`` of the library swallows it. Calls ``1 .. N-1``
landed; so trying ``N = 1 .. calls`` stops the operation at every step boundary. Not part of
the library's API.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from arcticlite.storage import Buffer, KVStore, WrappingStore

T = TypeVar("T")


class SimulatedCrash(BaseException):
    """The process died at a store call (raised by :class:`CrashingStore`)."""


class CrashingStore(WrappingStore):
    """Delegate to ``inner``; die at call ``crash_at`` (1-based; ``None``: count only).

    Attributes
    ----------
    calls : list of str
        ``"name key"`` of every call made (landed) so far.
    crashed : bool
        Whether the crash happened.
    """

    def __init__(self, inner: KVStore, crash_at: int | None = None) -> None:
        super().__init__(inner)
        self.crash_at = crash_at
        self.calls: list[str] = []
        self.crashed = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"CrashingStore({self.inner!r}, crash_at={self.crash_at})"

    def _op(self, name: str, key: str, fn: Callable[[], T]) -> T:
        with self._lock:
            if self.crashed or (self.crash_at is not None and len(self.calls) + 1 >= self.crash_at):
                self.crashed = True
                raise SimulatedCrash(f"died before call {len(self.calls) + 1} ({name} {key})")
            self.calls.append(f"{name} {key}")
        return fn()

    # where the calls name their keys (not counts) or go through the hook as well

    def read_if_exists(self, key: str) -> Buffer | None:
        return self._op("read", key, lambda: self.inner.read_if_exists(key))

    def write_many(self, items: Mapping[str, Buffer]) -> None:
        self._op("write_many", ",".join(sorted(items)), lambda: self.inner.write_many(items))

    def delete(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        self._op("delete", ",".join(sorted(keys)), lambda: self.inner.delete(keys))

    def commit(self, create: Mapping[str, Buffer], put: Mapping[str, Buffer]) -> bool:
        if not self.atomic_commit:
            return super().commit(create, put)  # one call per created key, then the puts
        return self._op("commit", ",".join(create), lambda: self.inner.commit(create, put))

    def probe_conditional_writes(self) -> bool:
        return self._op("probe", "", self.inner.probe_conditional_writes)
