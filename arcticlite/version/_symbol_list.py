"""The symbol-list cache (DESIGN §4): list_symbols without walking version chains.

Writers add journal keys ``sl/j/{sym}/{seq}.{op}.{token}`` (op ``a`` = symbol became live,
``d`` = symbol deleted) in the commit transaction that caused them (LMDB, memory), or right
after the commit point (S3; a crash in between is repaired by ``reload_symbol_list``); the journal entry's content is in its
key name, so listing costs one prefix listing plus the compacted keys. Conflicts are resolved by
version seq per symbol -- the entry with the highest seq wins -- never by wall clock.
A client that finds more than ``threshold`` journal keys compacts them into one ``sl/c/…`` key
(tombstones included, so a late journal key cannot resurrect a deleted symbol) and only then
deletes what it merged.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import xxhash

from arcticlite import config
from arcticlite._envelope import KIND_SYMBOL_LIST, naming_key, seal, unseal
from arcticlite.exceptions import InvalidFileError, KeyNotFoundException
from arcticlite.storage import KVStore
from arcticlite.version._keys import LibraryKeys, unescape
from arcticlite.version._records import VersionRecord, parse_ref

State = dict[str, tuple[int, str]]

#: Keys per page of a backend listing (LMDB's read transactions, S3's ListObjectsV2): a listing
#: of fewer keys is one snapshot of the store.
LISTING_PAGE = 1000


def _merge(state: State, sym: str, seq: int, op: str) -> None:
    cur = state.get(sym)
    if cur is None or seq > cur[0] or (seq == cur[0] and op == "d"):
        state[sym] = (seq, op)


def _compacted_bytes(state: State) -> bytes:
    """A compacted symbol list: the names in the JSON header (a list parses several times
    faster than a dict of entries), their version ids (int64) and ops (``a`` / ``d``, one
    byte each) in the blob."""
    names = list(state)
    seqs = np.fromiter((v[0] for v in state.values()), dtype="<i8", count=len(names))
    ops = "".join(v[1] for v in state.values()).encode("ascii")
    return seal(KIND_SYMBOL_LIST, {"names": names}, seqs.tobytes() + ops)


def _read_compacted(raw: Any) -> State:
    header, blob = unseal(raw, KIND_SYMBOL_LIST)
    if "symbols" in header:  # the first layout: {"symbols": {name: [seq, op]}}
        return {sym: (int(seq), op) for sym, (seq, op) in header["symbols"].items()}
    names = header["names"]
    n = len(names)
    if len(blob) != 9 * n:
        raise InvalidFileError("compacted symbol list: the blob does not match its names")
    seqs = np.frombuffer(blob, dtype="<i8", count=n).tolist()
    ops = bytes(blob[8 * n :]).decode("ascii")
    if ops.strip("ad"):
        raise InvalidFileError("compacted symbol list: unknown operation")
    return dict(zip(names, zip(seqs, ops, strict=True), strict=True))


def _journal_check(body: str) -> str:
    """The checksum a journal key's token ends with: of ``{sym}/{seq}.{op}.{random}``."""
    return xxhash.xxh32_hexdigest(body.encode("utf-8"))


_LEGACY_TOKEN = re.compile(r"[0-9a-f]{12}")
_TOKEN = re.compile(r"([0-9a-f]{12})-([0-9a-f]{8})")


def _parse_journal(body: str) -> tuple[str, int, str] | None:
    """``(symbol, seq, op)`` of a journal key (``body``: the key after ``sl/j/``), or None when
    the key is damaged: its checksum fails, or it has no valid layout. Keys written before the
    checksum (a 12-character token) are taken as they are."""
    try:
        esc_sym, rest = body.rsplit("/", 1)
        seq_s, op, tok = rest.split(".", 2)
    except ValueError:
        return None
    if len(seq_s) != 20 or not seq_s.isdigit() or op not in ("a", "d"):
        return None
    m = _TOKEN.fullmatch(tok)
    if m is not None:
        if _journal_check(body[: len(body) - 9]) != m.group(2):
            return None
    elif _LEGACY_TOKEN.fullmatch(tok) is None:
        return None
    return unescape(esc_sym), int(seq_s), op


DEFAULT_THRESHOLD = 500
"""Journal entries before a listing compacts them (``SymbolList.MaxDelta`` in :mod:`arcticlite.config`)."""

class SymbolList:
    def __init__(
        self,
        store: KVStore,
        keys: LibraryKeys,
        threshold: int | None = None,
        head_of: Callable[[str], VersionRecord | None] | None = None,
        read_only: bool = False,
    ) -> None:
        self.head_of = head_of
        self.read_only = read_only  # list without compacting or healing the journal
        self.store = store
        self.keys = keys
        self.threshold = threshold

    def entry(self, sym: str, seq: int, op: str) -> tuple[str, bytes]:
        """The journal key (and its empty value) saying ``sym`` became live (``a``) or was
        deleted (``d``) at version ``seq``. Its token ends with a checksum of the key's own
        content (:func:`_journal_check`): LMDB checksums no key, and a flipped bit in this
        one would otherwise change a symbol's name, version or liveness unnoticed."""
        key = self.keys.sl_journal(sym, seq, op, uuid.uuid4().hex[:12])
        return f"{key}-{_journal_check(key[len(self.keys.sl_prefix) + 2:])}", b""

    def intent(self, sym: str, seq: int, op: str, token: str) -> tuple[str, bytes]:
        """An intent entry, written before a non-atomic commit point (S3) and carrying the
        version record's token: readers confirm it against the record, so a crash between
        the commit and the journal entry cannot hide or resurrect a symbol."""
        return self.keys.sl_intent(sym, seq, op, token), b""

    def _resolve_intents(self, intents: list[str], state: State) -> None:
        iprefix = self.keys.sl_prefix + "i/"
        for k in intents:
            esc_sym, rest = k[len(iprefix) :].rsplit("/", 1)
            seq_s, op, token = rest.split(".", 2)
            sym, seq = unescape(esc_sym), int(seq_s)
            raw = self.store.read_if_exists(self.keys.version(sym, seq))
            if raw is None:
                continue  # not committed (yet): ignore
            if VersionRecord.from_bytes(raw).token == token:
                _merge(state, sym, seq, op)
                if not self.read_only:
                    self.record(sym, seq, op)  # heal: the writer died before its journal entry
            if not self.read_only:
                self.store.delete([k])

    def record(self, sym: str, seq: int, op: str) -> None:
        self.store.write(*self.entry(sym, seq, op))

    def _list(self) -> tuple[list[str], list[str], list[str], list[Any]]:
        """Journal, compacted and intent keys, and the compacted keys' values. A concurrent
        compaction may delete a compacted key between the listing and the read; it writes
        its replacement first, so listing again finds it."""
        jprefix = self.keys.sl_prefix + "j/"
        cprefix = self.keys.sl_prefix + "c/"
        iprefix = self.keys.sl_prefix + "i/"
        for attempt in range(8):
            journal: list[str] = []
            compacted: list[str] = []
            intents: list[str] = []
            for k in self.store.list_keys(self.keys.sl_prefix):
                if k.startswith(jprefix):
                    journal.append(k)
                elif k.startswith(cprefix):
                    compacted.append(k)
                elif k.startswith(iprefix):
                    intents.append(k)
                else:  # no key of the list's own: a damaged key (below, it makes the list rebuild)
                    journal.append(k)
            if len(journal) + len(compacted) + len(intents) >= LISTING_PAGE and attempt < 7:
                # a listing of several pages is not one snapshot: a compaction between the pages
                # may have merged and deleted journal keys of a later page after its compacted
                # key sorted past us. It writes that key before deleting, so a new one shows.
                if set(self.store.list_keys(cprefix)) - set(compacted):
                    continue
            try:
                return journal, compacted, intents, list(self.store.read_many(compacted)) if compacted else []
            except KeyNotFoundException:
                if attempt == 7:
                    raise
        raise AssertionError("unreachable")

    def _scan(self) -> tuple[State, list[str], list[str], bool]:
        """The state of the journal and compacted keys, those keys, and whether a journal key
        is damaged (then the state cannot be trusted: :meth:`load` rebuilds it from the refs)."""
        jprefix = self.keys.sl_prefix + "j/"
        journal, compacted, intents, raws = self._list()
        damaged = False
        state: State = {}
        for key, raw in zip(compacted, raws, strict=True):
            with naming_key(key):
                entries = _read_compacted(raw)
            if not state:  # the first (usually only) compacted list: taken whole
                state = entries
                continue
            for sym, (seq, op) in entries.items():
                _merge(state, sym, seq, op)
        for k in journal:
            parsed = _parse_journal(k[len(jprefix) :]) if k.startswith(jprefix) else None
            if parsed is None:
                damaged = True
                continue
            _merge(state, *parsed)
        if intents:
            self._resolve_intents(intents, state)
        return state, journal, compacted, damaged

    def load(self) -> State:
        state, journal, compacted, damaged = self._scan()
        if damaged:  # a journal key failed its checksum: the refs say what is live
            return self.rebuild()
        if not journal and not compacted:
            if next(iter(self.store.list_keys(self.keys.ref_prefix)), None) is not None:
                return self.rebuild()
            return state
        threshold = self.threshold if self.threshold is not None else (
            config.get_config_int("SymbolList.MaxDelta") or DEFAULT_THRESHOLD)
        if len(journal) > threshold and not self.read_only:
            self._write_compacted(state, journal + compacted)
        return state

    def symbols(self) -> list[str]:
        return sorted(s for s, (_, op) in self.load().items() if op == "a")

    def _write_compacted(self, state: State, merged: Iterable[str]) -> None:
        key = self.keys.sl_compacted(uuid.uuid4().hex)
        self.store.write(key, _compacted_bytes(state))
        self.store.delete(list(merged))

    def compact(self) -> int:
        state, journal, compacted, damaged = self._scan()
        if damaged:  # rebuilt from the refs instead (which compacts the journal)
            self.rebuild()
            return len(journal) + len(compacted)
        n = len(journal) + len(compacted)
        self._write_compacted(state, journal + compacted)
        return n

    def rebuild(self) -> State:
        """Rebuild the cache from the refs (the source of truth for liveness)."""
        _state, journal, compacted, _damaged = self._scan()
        refs = list(self.store.list_keys(self.keys.ref_prefix))
        state: State = {}
        for k, raw in zip(refs, self.store.read_many(refs), strict=True):
            sym = unescape(k[len(self.keys.ref_prefix) :])
            head = parse_ref(raw)
            if self.head_of is not None and not self.store.atomic_commit:
                head = self.head_of(sym) or head  # a ref on S3 is a hint: follow it forward
            _merge(state, sym, head.seq, "a" if head.latest_live is not None else "d")
        if not self.read_only:
            self._write_compacted(state, journal + compacted)
        return state
