"""``verify()``: a scrub of a library (and of a store) that reads everything once.

Reads check what they read: every stored value carries a checksum, and a key that must exist
and does not is reported as corruption. What a read cannot see is damage to what it does not
read -- a key that a flipped bit moved out of its prefix (LMDB checksums no key), a version no
one has read lately, a segment of an old snapshot, or an LMDB B-tree page that hides keys from
a lookup. ``verify`` walks the whole library: every key is of a kind arcticlite writes, every
ref, version record, index node, snapshot, staged entry and symbol-list entry opens with a
valid checksum and agrees with the others, every segment a live or snapshot-held version needs
is present (and, with ``data=True``, decodes with valid page checksums). It changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from arcticlite import format as fermion
from arcticlite._envelope import KIND_CONFIG, naming_key, unseal, unseal_pickled
from arcticlite.exceptions import ArcticException
from arcticlite.index import IndexRoot, hex_digests
from arcticlite.storage import KVStore
from arcticlite.table._ops import TableEngine
from arcticlite.table._stage import entries, staged_symbols
from arcticlite.version import Snapshots, SymbolList, VersionEngine, unescape

#: The kinds of key under a library's prefix (``{lib}/``), by what follows it.
T = TypeVar("T")

_KINDS = re.compile(r"_config|_gc/ledger|vref/[^/]+|ver/[^/]+/\d{20}|tindex/[^/]+/[0-9a-f]{32}"
                    r"|tdata/[^/]+/[0-9a-f]{32}|sl/[jic]/.+|snap/[^/]+|stage/[^/]+/.+")


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """What ``verify`` checked and found.

    Attributes
    ----------
    keys : int
        Keys listed.
    versions : int
        Version records read.
    segments : int
        Data segments checked (present; decoded when ``data=True``).
    bytes : int
        Bytes of data segments decoded.
    unreachable : int
        Data segments and index nodes nothing reaches (``gc`` removes them): not damage.
    problems : tuple of str
        Each piece of damage found, naming its key. Empty when the library is sound.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("S", pd.DataFrame({"px": [1.0]}))
    >>> report = lib.verify()
    >>> report.ok, report.versions, report.segments
    (True, 1, 1)
    """

    keys: int
    versions: int
    segments: int
    bytes: int
    unreachable: int
    problems: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """Whether no damage was found."""
        return not self.problems


def verify(engine: TableEngine, versions: VersionEngine, snapshots: Snapshots, symbol_list: SymbolList,
           *, data: bool = True) -> VerifyReport:
    """Check every key of the library (see the module docstring)."""
    store, keys = engine.store, engine.keys
    problems: list[str] = []
    listed = list(store.list_keys(keys.root))
    for k in listed:
        if not _KINDS.fullmatch(k[len(keys.root):]):
            problems.append(f"key {k!r} is of no kind arcticlite writes: a damaged key (its value is lost to its "
                            "owner), or a key someone else wrote")
    present = set(listed)
    if keys.config in present:
        _check(problems, keys.config, lambda: unseal(store.read(keys.config), KIND_CONFIG))
    # versions: every record of every symbol with a ref, the roots of what is kept
    held: dict[str, set[int]] = {}
    for name in _try(problems, "snapshots", snapshots.names) or []:
        snap = _check(problems, keys.snapshot(name), snapshots.read, name)
        for sym, v in (snap or {}).get("symbols", {}).items():
            held.setdefault(sym, set()).add(int(v))
    syms = sorted({unescape(k[len(keys.ref_prefix):]) for k in listed if k.startswith(keys.ref_prefix)})
    live: set[str] = set()
    n_versions = 0
    reach: set[str] = set()
    pickled: set[str] = set()  # segments of write_pickle versions: a sealed pickle, not a Fermion file
    for sym in syms:
        roots: list[IndexRoot] = []
        proots: list[IndexRoot] = []
        seqs: set[int] = set()

        def walk(sym: str = sym, roots: list[IndexRoot] = roots, proots: list[IndexRoot] = proots,
                 seqs: set[int] = seqs) -> None:
            head = versions.head(sym)
            if head is None:
                return
            if head.latest_live is not None:
                live.add(sym)
            for rec in versions.history(sym, head):
                seqs.add(rec.seq)
                if rec.is_data and rec.index is not None and (head.is_live(rec.seq) or rec.seq in held.get(sym, ())):
                    (proots if rec.pickled else roots).append(rec.index)

        _check(problems, keys.ref(sym), walk)
        n_versions += len(seqs)
        for v in sorted(held.get(sym, set()) - seqs):
            problems.append(f"a snapshot holds version {v} of symbol {sym!r}, which has no version record")
        for rs, is_pickled in ((roots, False), (proots, True)):
            got = _check(problems, keys.tindex_prefix(sym), _digests, engine, sym, rs) if rs else None
            if got is not None:
                reach.update(keys.tindex(sym, d) for d in got[0])
                reach.update(keys.tdata(sym, d) for d in got[1])
                if is_pickled:
                    pickled.update(keys.tdata(sym, d) for d in got[1])
    for sym in held.keys() - set(syms):
        problems.append(f"a snapshot holds symbol {sym!r}, which has no version ref {keys.ref(sym)!r}")
    # staged entries
    for sym in _try(problems, "staged entries", lambda: staged_symbols(engine)) or []:
        for e in _check(problems, keys.staged_prefix(sym), entries, engine, sym) or []:
            reach.update(keys.tdata(sym, d) for d in _hex(e.leaves))
    # segments and nodes: present, and (data) whole
    segs = sorted(k for k in reach if k.startswith(keys.tdata_prefix()))
    nbytes = 0
    for k in segs:
        if k not in present:
            problems.append(f"data segment {k!r} of a live, snapshot-held or staged version is missing")
        elif data:
            got_bytes = _check(problems, k, _decode, store, k, k in pickled)
            nbytes += got_bytes or 0
    for k in reach:
        if k.startswith(keys.tindex_prefix()) and k not in present:
            problems.append(f"index node {k!r} is missing")
    # the symbol-list cache against the refs
    reader = SymbolList(store, keys, head_of=symbol_list.head_of, read_only=True)  # heals nothing
    state = _check(problems, keys.sl_prefix, reader._scan)
    if state is not None:
        cached, journal, compacted, damaged = state
        if damaged:
            problems.append(f"a symbol-list key under {keys.sl_prefix!r} is damaged (list_symbols rebuilds the list "
                            "from the refs; reload_symbol_list() rewrites it)")
        listed_live = {s for s, (_, op) in cached.items() if op == "a"}
        if journal or compacted:  # (no list at all: list_symbols builds it from the refs)
            for s in sorted(listed_live - live):
                problems.append(f"the symbol list says {s!r} is live; its refs say otherwise")
            for s in sorted(live - listed_live):
                problems.append(f"symbol {s!r} is live but missing from the symbol list (its journal key was lost); "
                                "reload_symbol_list() rebuilds it")
    unreachable = sum(1 for k in listed if k.startswith((keys.tindex_prefix(), keys.tdata_prefix())) and k not in reach)
    return VerifyReport(keys=len(listed), versions=n_versions, segments=len(segs), bytes=nbytes,
                        unreachable=unreachable, problems=tuple(problems))


def _decode(store: KVStore, key: str, pickled: bool) -> int:
    """Decode every page of a segment (each checks its checksum), or open a sealed pickle
    (its checksum; a bare pickle of an older arcticlite has none); its size."""
    raw = store.read(key)
    if pickled:
        unseal_pickled(raw)
    else:
        fermion.FermionReader(raw, parallel=False).read()
    return len(raw)


def _digests(engine: TableEngine, sym: str, roots: list[IndexRoot]) -> tuple[set[str], set[str]]:
    return engine.index(sym).node_digests(roots, strict=True)


def _hex(leaves: np.ndarray) -> list[str]:
    return hex_digests(leaves)


def _check(problems: list[str], key: str, fn: Callable[..., T], *args: Any) -> T | None:
    """``fn(*args)``, or None with the arcticlite error it raised recorded as a problem of ``key``."""
    try:
        with naming_key(key):
            return fn(*args)
    except ArcticException as exc:
        problems.append(f"{key}: {type(exc).__name__}: {exc}")
        return None


def _try(problems: list[str], what: str, fn: Callable[[], T]) -> T | None:
    try:
        return fn()
    except ArcticException as exc:
        problems.append(f"{what}: {type(exc).__name__}: {exc}")
        return None
