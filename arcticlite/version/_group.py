"""Group commit: the commits of a batch of writes in few store transactions.

A ``write_batch`` on LMDB spent a quarter of its time in commits: one write transaction per
symbol, each with its two syncs, one after another under LMDB's writer lock. Inside a
:class:`CommitGroup` the commit of each item (its version key, ref, index and segments: the
``create`` / ``put`` of :meth:`KVStore.commit`) is held instead, and the held commits go to the
store together (:meth:`KVStore.commit_many`: one transaction on LMDB) when they reach
:data:`GROUP_BYTES` or the batch ends. Each keeps its own rule: it lands only if its version key
is still absent. One that finds it taken (another writer committed that version meanwhile) is
reported by :meth:`CommitGroup.flush` and its item is done again from the start, as an
ordinary write: exactly what a lost race does, one item at a time.

Nothing is visible before the flush, and the batch call returns only after it: a crash loses
the held items, as it loses an unfinished write.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from arcticlite.exceptions import StorageException
from arcticlite.storage import KVStore

#: held bytes (segments, index nodes, records) that make a flush: bounds a batch's memory
GROUP_BYTES = 16 << 20

_FLUSHER: tuple[int, concurrent.futures.ThreadPoolExecutor] | None = None
_FLUSHER_LOCK = threading.Lock()


def _flusher() -> concurrent.futures.ThreadPoolExecutor:
    """The thread that commits full groups while a batch goes on (one per process: a forked
    child makes its own)."""
    global _FLUSHER
    with _FLUSHER_LOCK:
        if _FLUSHER is None or _FLUSHER[0] != os.getpid():
            _FLUSHER = (os.getpid(), concurrent.futures.ThreadPoolExecutor(
                1, thread_name_prefix="arcticlite-group-commit"))
        return _FLUSHER[1]


@dataclass(eq=False)
class _Held:
    """The commit of one batch item, held until the flush."""

    index: int
    vkey: str = ""
    body: bytes = b""
    puts: Mapping[str, bytes] = field(default_factory=dict)
    held: bool = False
    #: the operation whose commit this is: its early-written segments go if it must be redone
    op: Any = None


_CURRENT: contextvars.ContextVar[tuple[CommitGroup, _Held] | None] = contextvars.ContextVar(
    "arcticlite_commit_group", default=None
)


class CommitGroup:
    """The held commits of one batch on ``store`` (see the module's docstring).

    Attributes
    ----------
    redo : dict of int to Exception or None
        Items whose commit did not land, by index in the batch: ``None`` when its version key
        was taken (do the item again), else the error that stopped it.
    """

    def __init__(self, store: KVStore, limit: int | None = None) -> None:
        self.store = store
        self.limit = GROUP_BYTES if limit is None else limit
        self.redo: dict[int, Exception | None] = {}
        self._lock = threading.Lock()
        self._held: list[_Held] = []
        self._bytes = 0
        self._flushing: list[concurrent.futures.Future[None]] = []

    @contextlib.contextmanager
    def item(self, index: int) -> Iterator[None]:
        """Hold the commit made in this block (by this thread) as item ``index``'s."""
        held = _Held(index)
        token = _CURRENT.set((self, held))
        try:
            yield
        except BaseException:
            with self._lock:  # the item failed after its commit was held: it must not land
                if held in self._held:
                    self._held.remove(held)
            raise
        finally:
            _CURRENT.reset(token)

    def _hold(self, held: _Held) -> None:
        size = len(held.body) + sum(len(v) for v in held.puts.values())
        with self._lock:
            self._held.append(held)
            self._bytes += size
            if self._bytes < self.limit:
                return
            batch, self._held, self._bytes = self._held, [], 0
            previous = self._flushing[-1] if self._flushing else None
            # the store copies the values with the GIL released: on a thread of its own (one
            # flush at a time, in order) that overlaps the items still being encoded
            self._flushing.append(_flusher().submit(self._commit, batch))
        if previous is not None:
            previous.result()  # a holder waits for the flush before: held memory stays bounded

    def flush(self) -> None:
        """Commit every held item and wait for the flushes under way; record in :attr:`redo`
        the items that did not land."""
        with self._lock:
            held, self._held, self._bytes = self._held, [], 0
            flushing, self._flushing = self._flushing, []
        for future in flushing:
            future.result()
        self._commit(held)

    def _commit(self, held: list[_Held]) -> None:
        """One :meth:`KVStore.commit_many` of ``held``."""
        if not held:
            return
        won: list[bool | Exception]
        try:
            won = list(self.store.commit_many([({h.vkey: h.body}, h.puts) for h in held]))
        except StorageException:
            won = [self._one(h) for h in held]  # the group failed: each on its own
        with self._lock:
            for h, ok in zip(held, won, strict=True):
                if ok is not True:
                    self.redo[h.index] = ok if isinstance(ok, Exception) else None
                    if ok is False and h.op is not None:
                        h.op.discard()  # its segments are unreferenced: the redo writes its own

    def _one(self, h: _Held) -> bool | Exception:
        try:
            back = self.store.read_if_exists(h.vkey)
            if back is not None:
                return bytes(back) == h.body  # ours (it landed after all) or another writer's
            return self.store.commit({h.vkey: h.body}, h.puts)
        except StorageException as exc:
            return exc


def hold_commit(store: KVStore, vkey: str, body: bytes, puts: Mapping[str, bytes]) -> bool:
    """Hold this commit in the thread's :class:`CommitGroup` (True), or False when there is
    none for ``store`` (commit now)."""
    current = _CURRENT.get()
    if current is None or current[0].store is not store or current[1].held:
        return False
    group, held = current
    held.vkey, held.body, held.puts, held.held = vkey, body, puts, True
    group._hold(held)
    return True


def note_operation(op: Any) -> None:
    """Tell the thread's group which operation its held commit belongs to."""
    current = _CURRENT.get()
    if current is not None and current[1].held:
        current[1].op = op
