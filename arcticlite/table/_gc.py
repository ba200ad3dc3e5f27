"""Removal of unreachable data: the clean-up after a delete or prune, and ``gc()``.

Keys are shared between versions by reference, so what may be deleted is computed by walking
the index trees of what must be kept: every live version, every version a snapshot holds,
and (for ``gc``) every staged entry.

What a crash, a lost commit race or an interrupted delete leaves behind is a set of data
segments and index nodes that nothing references. Their names are never reused (fresh random
digests), so once a key is unreachable it stays unreachable -- except while a writer that
wrote it is still committing. :func:`gc` therefore deletes a key only when it has been seen
unreachable by a previous ``gc`` at least ``grace_period`` seconds ago; the first sightings are
kept in a ledger key ``{lib}/_gc/ledger``. ``grace_period=0`` deletes at once (only safe when
no writer is running). Staged entries that a committed version was already finalized from
(a finalize that died after its commit) are deleted by any ``gc``, whatever the grace period:
no finalize will use them again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from arcticlite._envelope import KIND_CONFIG, seal, unseal
from arcticlite.exceptions import CorruptDataError
from arcticlite.index import IndexRoot, hex_digests
from arcticlite.progress import Progress
from arcticlite.table._ops import TableEngine
from arcticlite.table._stage import consumed_keys, entries, staged_symbols
from arcticlite.version import Snapshots, VersionEngine, VersionRecord, unescape

DEFAULT_GRACE_SECONDS = 3600.0
DELETE_CHUNK = 1000  # keys per store.delete call of gc (a progress step)


@dataclass(frozen=True, slots=True)
class GcReport:
    """What ``gc`` found and did.

    Attributes
    ----------
    keys_scanned : int
        Keys of the library listed.
    unreachable : int
        Data segments and index nodes nothing can reach (no live version, snapshot or
        staged entry).
    deleted : int
        Of those, the ones deleted (unreachable for longer than the grace period).
    deferred : int
        Unreachable, but first seen less than the grace period ago: a later ``gc`` deletes
        them if they are still unreachable.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("S", pd.DataFrame({"px": [1.0]}))
    >>> report = lib.gc(grace_period=0)
    >>> report.unreachable, report.deleted, report.deferred
    (0, 0, 0)
    """

    keys_scanned: int
    unreachable: int
    deleted: int
    deferred: int  # unreachable, but first seen less than the grace period ago


def _held(snapshots: Snapshots, sym: str | None = None) -> dict[str, set[int]]:
    held: dict[str, set[int]] = {}
    for s, v in snapshots.by_version(sym):
        held.setdefault(s, set()).add(v)
    return held


def cleanup(engine: TableEngine, versions: VersionEngine, snapshots: Snapshots, sym: str,
            killed: set[int] | None = None) -> None:
    """Delete the index nodes and data segments of ``sym`` that no live or snapshot-held
    version needs (only those of the versions ``killed``, when given)."""
    head = versions.head(sym)
    if head is None:
        return
    held = _held(snapshots, sym).get(sym, set())
    keep: list[VersionRecord] = []
    drop: list[VersionRecord] = []
    for rec in versions.history(sym, head):
        if not rec.is_data or rec.index is None:
            continue
        if head.is_live(rec.seq) or rec.seq in held:
            keep.append(rec)
        elif killed is None or rec.seq in killed:
            drop.append(rec)
    if not drop:
        return
    index = engine.index(sym)
    seen: set[str] = set()
    try:
        keep_nodes, keep_segs = index.node_digests([r.index for r in keep if r.index], seen, strict=True)
    except CorruptDataError:
        return  # what is kept cannot be walked: delete nothing (gc names the damage)
    drop_nodes, drop_segs = index.node_digests([r.index for r in drop if r.index], set(seen))
    doomed = [engine.keys.tindex(sym, d) for d in drop_nodes - keep_nodes]
    doomed += [engine.keys.tdata(sym, d) for d in drop_segs - keep_segs]
    if doomed:
        engine.store.delete(doomed)


def reachable(engine: TableEngine, versions: VersionEngine, snapshots: Snapshots,
              also: set[str] | frozenset[str] = frozenset()) -> set[str]:
    """Every tindex/tdata key reachable from a live version, a snapshot or a staged entry.
    The symbols looked at: those with a ref, those a snapshot holds, and ``also`` (those with
    data keys: a writer killed after creating a symbol's first version key, before writing
    its ref, leaves a live version that no ref names yet)."""
    keys = engine.keys
    reach: set[str] = set()
    prefix = keys.ref_prefix
    held = _held(snapshots)
    syms = {unescape(k[len(prefix):]) for k in engine.store.list_keys(prefix)} | set(held) | set(also)
    with Progress(len(syms), "gc: scan", unit="symbol") as bar:
        for sym in syms:
            _reach_symbol(engine, versions, sym, held.get(sym, set()), reach)
            bar.update(1)
    for sym in staged_symbols(engine):
        for e in entries(engine, sym):
            reach.update(keys.tdata(sym, d) for d in hex_digests(e.leaves))
    return reach


def _reach_symbol(engine: TableEngine, versions: VersionEngine, sym: str, held: set[int], reach: set[str]) -> None:
    """Add the keys reachable from ``sym``'s live versions and those ``held`` by snapshots."""
    keys = engine.keys
    head = versions.head(sym)
    roots: list[IndexRoot] = []
    if head is not None:
        for rec in versions.history(sym, head):
            if rec.is_data and rec.index is not None and (head.is_live(rec.seq) or rec.seq in held):
                roots.append(rec.index)
    nodes, segs = engine.index(sym).node_digests(roots, strict=True)  # a missing node stops gc
    reach.update(keys.tindex(sym, d) for d in nodes)
    reach.update(keys.tdata(sym, d) for d in segs)


def gc(engine: TableEngine, versions: VersionEngine, snapshots: Snapshots,
       grace_period: float = DEFAULT_GRACE_SECONDS, dry_run: bool = False) -> GcReport:
    """Delete data segments and index nodes nothing can reach (see the module docstring)."""
    store, keys = engine.store, engine.keys
    ledger_key = keys.root + "_gc/ledger"
    now = time.time_ns()
    candidates = list(store.list_keys(keys.tindex_prefix()))
    n_index = len(candidates)
    candidates += list(store.list_keys(keys.tdata_prefix()))
    # every symbol that has data keys is judged by its version chain, ref or not
    owners = {unescape(k[len(p):].rsplit("/", 1)[0])
              for p, ks in ((keys.tindex_prefix(), candidates[:n_index]), (keys.tdata_prefix(), candidates[n_index:]))
              for k in ks}
    reach = reachable(engine, versions, snapshots, also=owners)
    unreachable = [k for k in candidates if k not in reach]
    ledger: dict[str, int] = {}
    raw = store.read_if_exists(ledger_key)
    if raw is not None:
        try:
            ledger = {k: int(v) for k, v in unseal(raw, KIND_CONFIG)[0]["seen"].items()}
        except (CorruptDataError, KeyError, TypeError, ValueError):
            ledger = {}  # a broken ledger only delays deletion
    limit = now - int(grace_period * 1e9)
    doomed = [k for k in unreachable if grace_period <= 0 or ledger.get(k, now) <= limit]
    gone = set(doomed)
    new_ledger = {k: ledger.get(k, now) for k in unreachable if k not in gone}
    used = consumed_keys(engine)  # staged entries already finalized: dead at once
    unreachable += used
    doomed += used
    if not dry_run:
        with Progress(len(doomed), "gc: delete", unit="key") as bar:
            for i in range(0, len(doomed), DELETE_CHUNK):
                store.delete(doomed[i:i + DELETE_CHUNK])
                bar.update(len(doomed[i:i + DELETE_CHUNK]))
        store.write(ledger_key, seal(KIND_CONFIG, {"seen": new_ledger}))
    return GcReport(keys_scanned=len(candidates) + len(used), unreachable=len(unreachable),
                    deleted=0 if dry_run else len(doomed), deferred=len(unreachable) - len(doomed))
