"""The commit protocol and version resolution (DESIGN §2).

Writes go data -> index -> version -> ref. The commit point is the creation of the version
key ``ver/{sym}/{seq}`` with create-if-absent. On stores with atomic multi-key commits (LMDB,
memory) the ref moves in the same transaction; elsewhere (S3) the ref is then moved forward by
compare-and-swap and readers probe forward from it. A writer that loses the race re-reads the
head and rebuilds its record (appends and updates rebase; their data segments are reused).
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import os
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from arcticlite._envelope import naming_key
from arcticlite.exceptions import (
    AmbiguousWriteError,
    CommitConflictError,
    CommitStateUnknownError,
    ConditionalWritesUnsupportedError,
    CorruptDataError,
    KeyNotFoundException,
    NoSuchVersionException,
    StorageException,
)
from arcticlite.storage import KVStore
from arcticlite.version._chain import Builder
from arcticlite.version._group import hold_commit
from arcticlite.version._keys import LibraryKeys
from arcticlite.version._records import VersionRecord, add_ranges, parse_ref, ref_bytes, seq_of_vid

#: True while a read resolves the version it reads (``Library.read``): the head's index root is
#: then fetched alongside the probe for a newer record on stores whose refs are hints (S3).
READING: contextvars.ContextVar[bool] = contextvars.ContextVar("arcticlite_reading", default=False)

MAX_COMMIT_ATTEMPTS = 64


def new_token() -> str:
    return uuid.uuid4().hex


class VersionEngine:
    """Version chains of one library on one store."""

    def __init__(self, store: KVStore, keys: LibraryKeys) -> None:
        self.store = store
        self.keys = keys
        #: whether the store honours conditional writes (a callable is asked at the first commit)
        self.conditional_ok: bool | Callable[[], bool] = True
        #: keys to write with a commit (the symbol-list journal): ``journal(sym, head, rec)``
        self.journal: Callable[[str, VersionRecord | None, VersionRecord], dict[str, bytes]] | None = None
        #: intent keys written before a non-atomic commit point (confirmed by readers)
        self.journal_intent: Callable[[str, VersionRecord | None, VersionRecord], dict[str, bytes]] | None = None

    # -- reading the chain ---------------------------------------------------------------------
    def _read_ref(self, sym: str) -> tuple[bytes | None, VersionRecord | None]:
        raw = self.store.read_if_exists(self.keys.ref(sym))
        if raw is None:
            return None, None
        raw = bytes(raw)
        with naming_key(self.keys.ref(sym)):
            return raw, parse_ref(raw)

    def read_record(self, sym: str, seq: int) -> VersionRecord | None:
        key = self.keys.version(sym, seq)
        raw = self.store.read_if_exists(key)
        if raw is None:
            return None
        with naming_key(key):
            return VersionRecord.from_bytes(raw)

    def record(self, sym: str, seq: int) -> VersionRecord:
        """The record ``seq`` of ``sym``, known to exist (at or below a head's seq: records are
        never deleted, and a commit creates seq only after every lower one); its absence means
        the store lost or renamed the key (a flipped bit in an LMDB key): ``CorruptDataError``."""
        rec = self.read_record(sym, seq)
        if rec is None:
            raise self.missing_record(sym, seq)
        return rec

    def missing_record(self, sym: str, seq: int) -> CorruptDataError:
        key = self.keys.version(sym, seq)
        return CorruptDataError(
            f"version record {seq} of symbol {sym!r} is missing although later records of the symbol "
            f"exist; the store is corrupt (storage key {key!r} in {self.store!r}); restore it from a backup")

    def head(self, sym: str) -> VersionRecord | None:
        """The newest record of ``sym`` (live or tombstone), or ``None`` if never written."""
        return self._head(sym)[1]

    def _head(self, sym: str) -> tuple[bytes | None, VersionRecord | None]:
        raw, rec = self._read_ref(sym)
        if self.store.atomic_commit:
            if raw is None and self.store.exists(self.keys.version(sym, 0)):
                # refs are never deleted and move in the commit transaction: a symbol with a
                # version record but no ref lost its ref (a flipped bit in the LMDB key) --
                # unless the first commit landed between the two reads: read the ref again
                raw, rec = self._read_ref(sym)
                if raw is not None:
                    return raw, rec
                raise CorruptDataError(
                    f"the version ref of symbol {sym!r} is missing although its version records exist; the "
                    f"store is corrupt (storage key {self.keys.ref(sym)!r} in {self.store!r}); restore it from a backup")
            return raw, rec  # the ref moved in the commit transaction: it is exact
        seq = -1 if rec is None else rec.seq
        if rec is not None and READING.get() and rec.index is not None and rec.index.digest is not None:
            # a read will want the head's index root next: fetch it while the probe below
            # looks for a newer record (one round trip instead of two when there is none)
            self.store.prefetch([self.keys.tindex(sym, rec.index.digest)])
        while True:  # the ref is a hint: follow it forward
            nxt = self.read_record(sym, seq + 1)
            if nxt is None:
                break
            rec, seq = nxt, seq + 1
        return raw, rec

    def latest_live(self, sym: str) -> VersionRecord | None:
        head = self.head(sym)
        return self.live_from_head(sym, head)

    def live_from_head(self, sym: str, head: VersionRecord | None) -> VersionRecord | None:
        if head is None or head.latest_live is None:
            return None
        if head.latest_live == head.seq:
            return head
        return self.record(sym, head.latest_live)

    def version(self, sym: str, seq: int, head: VersionRecord | None = None) -> VersionRecord:
        """The live data version ``seq`` of ``sym``; raise ``NoSuchVersionException``."""
        head = self.head(sym) if head is None else head
        if head is None or not head.is_live(seq):
            raise NoSuchVersionException(
                f"E_NO_SUCH_VERSION: version {seq} of symbol {sym!r} does not exist or was deleted"
            )
        rec = head if head.seq == seq else self.record(sym, seq)
        if not rec.is_data:
            raise NoSuchVersionException(f"E_NO_SUCH_VERSION: version {seq} of symbol {sym!r} not found")
        return rec

    def by_id(self, sym: str, vid: int, head: VersionRecord | None = None, *, asked: Any = None) -> VersionRecord:
        """The live data version whose id (ArcticDB's numbering) is ``vid``: one lookup.
        ``asked`` is what the user gave (a negative id), for the error message."""
        head = self.head(sym) if head is None else head
        seq = head.seq_of(vid) if head is not None else None
        if seq is None or head is None or not head.is_live(seq):
            what = vid if asked is None else asked
            raise NoSuchVersionException(
                f"E_NO_SUCH_VERSION: version matching query 'version {what}' not found for symbol {sym!r}"
                + ("" if head is None or seq is None else ": it was deleted")
            )
        rec = head if head.seq == seq else self.record(sym, seq)
        if not rec.is_data:
            raise NoSuchVersionException(f"E_NO_SUCH_VERSION: version {vid} of symbol {sym!r} not found")
        return rec

    def version_at(self, sym: str, when_ns: int, head: VersionRecord | None = None) -> VersionRecord:
        """The latest live version created at or before ``when_ns`` (binary search on seq)."""
        head = self.head(sym) if head is None else head
        if head is None:
            raise NoSuchVersionException(f"E_NO_SUCH_VERSION: symbol {sym!r} has no versions")
        lo, hi, best = 0, head.seq, -1
        cache: dict[int, VersionRecord] = {head.seq: head}
        while lo <= hi:  # creation times strictly increase with seq
            mid = (lo + hi) // 2
            rec = cache.get(mid) or self.record(sym, mid)
            cache[mid] = rec
            if rec.created_ns <= when_ns:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        for seq in range(best, -1, -1):
            if head.is_live(seq):
                rec = cache.get(seq) or self.record(sym, seq)
                if rec.is_data:
                    return rec
        raise NoSuchVersionException(
            f"E_NO_SUCH_VERSION: symbol {sym!r} has no live version created at or before {_utc(when_ns)} "
            f"({when_ns} ns)"
        )

    def history(self, sym: str, head: VersionRecord | None = None) -> Iterator[VersionRecord]:
        """Every record newest first (live, deleted and tombstones), read in batches."""
        head = self.head(sym) if head is None else head
        if head is None:
            return
        yield head
        seq = head.seq - 1
        while seq >= 0:
            lo = max(0, seq - 255)
            keys = [self.keys.version(sym, s) for s in range(seq, lo - 1, -1)]
            for s, (key, raw) in zip(range(seq, lo - 1, -1), zip(keys, self._read_many_present(keys), strict=True),
                                     strict=True):
                if raw is None:
                    raise self.missing_record(sym, s)
                with naming_key(key):
                    rec = VersionRecord.from_bytes(raw)
                yield rec
            seq = lo - 1

    def _read_many_present(self, keys: list[str]) -> list[Any]:
        try:
            return list(self.store.read_many(keys))
        except KeyNotFoundException:
            return [self.store.read_if_exists(k) for k in keys]

    # -- committing ---------------------------------------------------------------------------
    def commit(
        self, sym: str, build: Builder, *, prune: bool = False, extra: Mapping[str, bytes] | None = None
    ) -> VersionRecord:
        """Commit the record ``build(head, seq)`` as the next version of ``sym``.

        ``build`` is called again with the new head whenever another writer wins the race;
        it may raise to abort (nothing is then committed; on a store without atomic commits the
        keys ``extra`` held before the call may already be written, unreferenced, like the
        segments written before it: garbage collection removes them). Safe with any number of concurrent
        writers: each successful call lands in exactly one version. With ``prune``, the new
        (data) version also marks every earlier version dead, in the same commit. ``extra``
        holds keys the record refers to (e.g. index nodes ``build`` wrote into it): they are
        written in the commit transaction on atomic stores (one LMDB sync per commit), and
        before the commit point elsewhere.
        """
        if not (self.conditional_ok() if callable(self.conditional_ok) else self.conditional_ok):
            raise ConditionalWritesUnsupportedError(
                "this S3 endpoint ignores If-None-Match, so concurrent commits could overwrite each "
                "other; use an endpoint with conditional writes (AWS S3, recent MinIO)"
            )
        # on a store without atomic commits the keys the record refers to are written before
        # the commit point: start them now, while the head is read (they do not depend on it)
        # (``build`` may add more: those are written at the commit point)
        early_keys = dict(extra) if extra and not self.store.atomic_commit else {}
        early = _side().submit(self.store.write_many, early_keys) if early_keys else None
        for attempt in range(MAX_COMMIT_ATTEMPTS):
            raw_ref, head = self._head(sym)
            seq = 0 if head is None else head.seq + 1
            try:
                rec = build(head, seq)
            except KeyNotFoundException:
                # a key of the head vanished while ``build`` read it: a concurrent commit pruned
                # that version (its index path, its open tail); build again on the new head
                if self._head(sym)[1] == head:
                    raise
                continue
            created = time.time_ns()
            if head is not None and created <= head.created_ns:
                created = head.created_ns + 1  # creation times strictly increase per symbol
            rec = rec.with_(seq=seq, created_ns=created, token=new_token(), symbol=sym, **_ids(head, rec, seq))
            if prune and seq > 0 and rec.is_data:
                rec = rec.with_(dead=add_ranges(rec.dead, [(0, seq - 1)]))
            body = rec.to_bytes()
            vkey = self.keys.version(sym, seq)
            journal = self.journal(sym, head, rec) if self.journal is not None else {}
            if self.store.atomic_commit:
                puts = dict(extra) if extra else {}
                puts.update(journal)
                puts[self.keys.ref(sym)] = ref_bytes(rec, new_token())
                if hold_commit(self.store, vkey, body, puts):
                    return rec  # a batch's group commit: lands (or is redone) at its flush
                if self._commit_atomic(vkey, body, puts):
                    return rec
            else:
                intents = self.journal_intent(sym, head, rec) if journal and self.journal_intent else {}
                if early is not None:
                    rest = {k: v for k, v in (extra or {}).items() if k not in early_keys}
                    if rest or intents:
                        self.store.write_many({**rest, **intents})
                    early.result()  # the record's keys are in place before the commit point
                    early = None
                elif extra or intents:
                    self.store.write_many({**(extra or {}), **intents})
                if self._create_version(vkey, body):
                    # committed: what follows only tidies up, and must not make the caller
                    # believe the commit failed (a stale ref is a hint; an intent left behind
                    # stands for its journal entry, readers confirm it). The ref moves while
                    # the journal entry is written; the intent goes once the entry is there.
                    ref = _side().submit(self._advance_ref, sym, raw_ref, rec)
                    try:
                        if journal:
                            self.store.write_many(journal)
                        if intents:
                            self.store.delete(list(intents))
                    except StorageException:
                        pass
                    ref.result()
                    return rec
                if intents:
                    self.store.delete(list(intents))
            time.sleep(random.uniform(0, min(0.2, 0.002 * (2 ** min(attempt, 7)))))
        raise CommitConflictError(
            f"gave up committing to symbol {sym!r} after {MAX_COMMIT_ATTEMPTS} attempts: "
            "other writers kept winning; retry later"
        )

    def _commit_atomic(self, vkey: str, body: bytes, puts: dict[str, bytes]) -> bool:
        """One transaction creating ``vkey`` and writing ``puts``; when the store fails around
        it, the version key read back says whether it landed (our token makes the body ours)."""
        try:
            return self.store.commit({vkey: body}, puts)
        except (AmbiguousWriteError, StorageException) as exc:
            back = self._read_back(vkey)
            if back is not None and bytes(back) == body:
                return True  # it landed: only the answer was lost
            raise exc

    def _create_version(self, vkey: str, body: bytes) -> bool:
        try:
            return self.store.write_if_absent(vkey, body)
        except (AmbiguousWriteError, StorageException) as exc:
            # the first attempt may have landed: our token makes our body unique
            back = self._read_back(vkey)
            if back is None:
                if isinstance(exc, AmbiguousWriteError):
                    return False
                raise CommitStateUnknownError(
                    f"the store failed at the commit point of {vkey!r}; nothing was committed"
                ) from exc
            return bytes(back) == body

    def _read_back(self, vkey: str) -> Any:
        """The version key after a failure at the commit point (None: absent); a store that
        cannot answer leaves the outcome unknown."""
        try:
            return self.store.read_if_exists(vkey)
        except StorageException as exc:
            raise CommitStateUnknownError(
                f"the store failed at the commit point of {vkey!r} and could not be read "
                "back; the version may or may not exist (nothing was deleted)"
            ) from exc

    def _advance_ref(self, sym: str, raw_ref: bytes | None, rec: VersionRecord) -> None:
        """Move the ref forward by compare-and-swap; a failure only leaves a stale hint."""
        key = self.keys.ref(sym)
        for _ in range(8):
            try:
                if self.store.compare_and_swap(key, raw_ref, ref_bytes(rec, new_token())):
                    return
                raw_ref, cur = self._read_ref(sym)
            except StorageException:
                return
            if cur is not None and cur.seq >= rec.seq:
                return

    def write_ref_exact(self, sym: str) -> None:
        """Repair the ref of ``sym`` to its true head (used by maintenance)."""
        raw, head = self._head(sym)
        if head is not None:
            self._advance_ref(sym, raw, head)


_SIDE: tuple[int, concurrent.futures.ThreadPoolExecutor] | None = None
_SIDE_LOCK = threading.Lock()


def _side() -> concurrent.futures.ThreadPoolExecutor:
    """Threads for the requests of a commit that run beside the committing thread (S3: the
    index nodes while the head is read, the ref while the journal entry is written); one pool
    per process (a forked child makes its own)."""
    global _SIDE
    side = _SIDE
    if side is None or side[0] != os.getpid():
        with _SIDE_LOCK:
            side = _SIDE
            if side is None or side[0] != os.getpid():
                side = _SIDE = (os.getpid(), concurrent.futures.ThreadPoolExecutor(
                    max_workers=4, thread_name_prefix="arcticlite-commit"))
    return side[1]


def _ids(head: VersionRecord | None, rec: VersionRecord, seq: int) -> dict[str, Any]:
    """Version id fields of the record committed as ``seq`` on ``head``: a data commit takes
    the next id after the highest ever written; a tombstone takes none."""
    top = head.top if head is not None else -1
    vmap = head.vmap if head is not None else ()
    if not rec.is_data:
        return {"vid": -1, "top": top, "vmap": vmap}
    vid = top + 1
    if seq_of_vid(vmap, vid) != seq:
        vmap = (*vmap, (vid, seq))
    return {"vid": vid, "top": vid, "vmap": vmap}


def pid_token() -> str:
    return f"{os.getpid():x}-{new_token()}"


def _utc(ns: int) -> str:
    """``ns`` since the epoch as an ISO time in UTC, to the microsecond."""
    import datetime

    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    return (epoch + datetime.timedelta(microseconds=ns // 1000)).isoformat()
