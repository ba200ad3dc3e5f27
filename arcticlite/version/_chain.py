"""Rules of a version chain: what a delete, a prune or a new data version does to the head.

Each rule is a builder for :meth:`VersionEngine.commit`: given the head a commit attempt
sees and the sequence number it would take, it returns the record to commit (or raises to
refuse). A builder is called again on the new head when a concurrent writer wins, so these
rules are pure functions of the head; ``killed`` collects the versions the winning attempt
made unreachable, for the caller to clean up after the commit.
"""

from __future__ import annotations

from collections.abc import Callable

from arcticlite.exceptions import NoSuchVersionException
from arcticlite.version._records import Ranges, VersionRecord, add_ranges

Builder = Callable[[VersionRecord | None, int], VersionRecord]


def max_live(dead: Ranges, upto: int) -> int | None:
    """The highest id ``<= upto`` not inside the closed ranges ``dead`` (None if none)."""
    v = upto
    for a, b in sorted(dead, reverse=True):
        if v > b:
            return v
        v = min(v, a - 1)
        if v < 0:
            return None
    return v if v >= 0 else None


def tombstone(sym: str, versions: list[int] | None, killed: set[int]) -> Builder:
    """Delete the version ids ``versions`` of ``sym`` (all versions when None): the record
    that marks them dead. It takes no version id (ArcticDB's numbering).

    Raises ``NoSuchVersionException`` (and commits nothing) for a symbol never written, an id
    above the highest ever written, or one already deleted.
    """

    def build(head: VersionRecord | None, seq: int) -> VersionRecord:
        if head is None:
            raise NoSuchVersionException(f"E_NO_SUCH_VERSION: symbol {sym!r} does not exist")
        killed.clear()
        if versions is None:
            killed.update(v for v in range(seq) if head.is_live(v))
            dead = add_ranges(head.dead, [(0, seq)])
            kind = "tombstone_all"
        else:
            seqs = []
            for v in versions:
                s = head.seq_of(v)
                if s is None:
                    raise NoSuchVersionException(
                        f"E_NO_SUCH_VERSION: Can't delete version {v} for symbol {sym!r}: it is higher "
                        f"than the latest version {head.top}"
                    )
                if not head.is_live(s):
                    raise NoSuchVersionException(f"E_NO_SUCH_VERSION: Version {v} for symbol {sym} is already deleted")
                seqs.append(s)
            killed.update(seqs)
            dead = add_ranges(head.dead, [(s, s) for s in seqs] + [(seq, seq)])
            kind = "tombstone"
        return VersionRecord(
            symbol=sym, seq=seq, kind=kind, created_ns=0, token="", dead=dead, latest_live=max_live(dead, seq),
            extra={"deleted": versions if versions is not None else "all"},
        )

    return build


def prune(sym: str, killed: set[int]) -> Builder:
    """Delete every version of ``sym`` older than its latest live one.

    Raises ``NoSuchVersionException`` when the symbol was deleted meanwhile.
    """

    def build(head: VersionRecord | None, seq: int) -> VersionRecord:
        if head is None or head.latest_live is None:
            raise NoSuchVersionException(f"symbol {sym!r} was deleted concurrently")
        keep = head.latest_live
        killed.clear()
        killed.update(v for v in range(keep) if head.is_live(v))
        dead = add_ranges(head.dead, [(0, keep - 1)] if keep > 0 else [])
        dead = add_ranges(dead, [(keep + 1, seq)])
        return VersionRecord(
            symbol=sym, seq=seq, kind="tombstone", created_ns=0, token="", dead=dead,
            latest_live=keep, extra={"deleted": "older", "below": keep},
        )

    return build


def older_live(head: VersionRecord | None) -> list[int]:
    """Live versions below the latest live one (what a prune would delete)."""
    if head is None or head.latest_live is None:
        return []
    return [v for v in range(head.latest_live) if head.is_live(v)]


def killed_by_prune(head: VersionRecord | None, rec: VersionRecord) -> set[int]:
    """Versions a data commit with ``prune_previous_versions`` made dead (they were live in
    the head it was built on)."""
    if head is None:
        return set()
    return {v for v in range(rec.seq) if head.is_live(v)}
