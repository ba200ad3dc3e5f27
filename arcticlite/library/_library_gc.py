"""Library: ``gc()``, removal of keys no version, snapshot or staged entry can reach.

What a crash, a lost commit race or an interrupted delete leaves behind is a set of data
segments and index nodes that nothing references. Their names are never reused (fresh random
digests), so once a key is unreachable it stays unreachable -- except while a writer that
wrote it is still committing. ``gc`` therefore deletes a key only when it has been seen
unreachable by a previous ``gc`` at least ``grace_period`` seconds ago; the first sightings are
kept in a ledger key ``{lib}/_gc/ledger``. ``grace_period=0`` deletes at once (only safe when
no writer is running).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from arcticlite._envelope import KIND_CONFIG, seal, unseal
from arcticlite.exceptions import CorruptDataError
from arcticlite.index import IndexRoot, hex_digests
from arcticlite.library._library import LibraryCore
from arcticlite.version import unescape

DEFAULT_GRACE_SECONDS = 3600.0


@dataclass(frozen=True, slots=True)
class GcReport:
    """What ``gc`` found and did."""

    keys_scanned: int
    unreachable: int
    deleted: int
    deferred: int  # unreachable, but first seen less than the grace period ago


class GcMixin(LibraryCore):
    def _ledger_key(self) -> str:
        return self._keys.root + "_gc/ledger"

    def _reachable(self) -> set[str]:
        """Every tindex/tdata key reachable from a live version, a snapshot or a staged entry."""
        keys = self._keys
        reach: set[str] = set()
        prefix = keys.ref_prefix
        held: dict[str, set[int]] = {}
        for name in self.list_snapshots(load_metadata=False):  # type: ignore[attr-defined]
            snap = self._snapshots.read(name)
            for s, v in snap["symbols"].items():
                held.setdefault(s, set()).add(int(v))
        syms = {unescape(k[len(prefix):]) for k in self._store.list_keys(prefix)} | set(held)
        for sym in syms:
            head = self._engine.head(sym)
            roots: list[IndexRoot] = []
            if head is not None:
                for rec in self._engine.history(sym, head):
                    if rec.is_data and rec.index is not None and (
                        head.is_live(rec.seq) or rec.seq in held.get(sym, ())
                    ):
                        roots.append(rec.index)
            nodes, segs = self._index_for(sym).node_digests(roots)
            reach.update(keys.tindex(sym, d) for d in nodes)
            reach.update(keys.tdata(sym, d) for d in segs)
        for sym in self.get_staged_symbols():  # type: ignore[attr-defined]
            for _k, _h, _s, leaves in self._staged_entries(sym, None):  # type: ignore[attr-defined]
                reach.update(keys.tdata(sym, d) for d in hex_digests(leaves))
        return reach

    def gc(self, grace_period: float = DEFAULT_GRACE_SECONDS, dry_run: bool = False) -> GcReport:
        """Delete data segments and index nodes that nothing can reach.

        Parameters
        ----------
        grace_period : float
            Seconds a key must have been seen unreachable (by an earlier ``gc``) before it is
            deleted, so that writers still committing are never robbed. ``0`` deletes now:
            use it only when no writer is running.
        dry_run : bool
            Report without deleting or updating the ledger.

        Safe while readers and writers run (with a grace period longer than any commit).
        """
        now = time.time_ns()
        candidates = list(self._store.list_keys(self._keys.tindex_prefix()))
        candidates += list(self._store.list_keys(self._keys.tdata_prefix()))
        reach = self._reachable()
        unreachable = [k for k in candidates if k not in reach]
        ledger: dict[str, int] = {}
        raw = self._store.read_if_exists(self._ledger_key())
        if raw is not None:
            try:
                ledger = {k: int(v) for k, v in unseal(raw, KIND_CONFIG)[0]["seen"].items()}
            except (CorruptDataError, KeyError, TypeError, ValueError):
                ledger = {}  # a broken ledger only delays deletion
        limit = now - int(grace_period * 1e9)
        doomed = [k for k in unreachable if grace_period <= 0 or ledger.get(k, now) <= limit]
        new_ledger = {k: ledger.get(k, now) for k in unreachable if k not in set(doomed)}
        if not dry_run:
            if doomed:
                self._store.delete(doomed)
            self._store.write(self._ledger_key(), seal(KIND_CONFIG, {"seen": new_ledger}))
        return GcReport(
            keys_scanned=len(candidates),
            unreachable=len(unreachable),
            deleted=0 if dry_run else len(doomed),
            deferred=len(unreachable) - len(doomed),
        )
