"""``as_of``: which version of a symbol a read names (ArcticDB's rules).

An int is a version id (negative counts back from the highest id ever written, deleted or
not); a str is a snapshot name; anything else is a time (the latest live version created at
or before it; naive means UTC). Version keys have deterministic names, so an id costs one
lookup and a time a binary search, never a walk of the chain.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from arcticlite.exceptions import ArcticException, NoSuchVersionException
from arcticlite.normalize import as_of_to_ns
from arcticlite.version import Snapshots, VersionEngine, VersionRecord


def resolve(versions: VersionEngine, snapshots: Snapshots, sym: str, as_of: Any, *,
            missing: type[Exception] = NoSuchVersionException) -> VersionRecord:
    """The version record ``as_of`` designates (live, or held by a snapshot); raises
    ``missing`` when there is none."""
    if as_of is None:
        rec = versions.latest_live(sym)
        if rec is None:
            raise missing(f"E_NO_SUCH_VERSION: version matching query 'latest' not found for symbol {sym!r}")
        return rec
    if isinstance(as_of, str):
        snap = snapshots.read(as_of)
        if sym not in snap["symbols"]:
            raise missing(f"E_NO_SUCH_VERSION: symbol {sym!r} is not in snapshot {as_of!r}")
        return versions.record(sym, int(snap["symbols"][sym]))  # a snapshot keeps its versions
    if isinstance(as_of, float | np.floating):  # (a bool is the int it is: True is version 1)
        raise ArcticException("Unexpected combination of read parameters: as_of must be int, str or datetime")
    if isinstance(as_of, int | np.integer) and not isinstance(as_of, np.datetime64):
        if isinstance(as_of, np.integer):
            raise ArcticException("Unexpected combination of read parameters: as_of must be a Python int")
        head = versions.head(sym)
        vid = int(as_of)
        if vid < 0 and head is not None:
            vid = head.top + 1 + vid  # counted back from the highest id ever written (ArcticDB's rule)
        try:
            return versions.by_id(sym, vid, head, asked=int(as_of))
        except NoSuchVersionException as exc:
            raise missing(str(exc)) from None
    when = as_of_to_ns(as_of)
    try:
        return versions.version_at(sym, when)
    except NoSuchVersionException as exc:
        raise missing(str(exc)) from None
