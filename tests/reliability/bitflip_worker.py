"""Child process of ``test_lmdb_bitflips.py``: flips bits in copies of an LMDB store and reads it.

``python bitflip_worker.py PLAN.json`` reads the plan (the pristine store, what each read must
return, the trials), and for each trial from ``start`` on: copies the store, flips the trial's
bits in ``data.mdb``, opens the copy from a fresh ``Arctic`` and makes every read. It prints one
JSON line per trial (flushed before the next trial starts), so that the parent can tell which
trial a crash (a signal) or a hang interrupted, count it, and start a new child at the next one.

Each read's outcome: ``same`` (exactly the original), ``corrupt`` (``CorruptDataError``),
``storage`` (another arcticlite ``StorageException`` naming the store), or a failure:
``wrong`` (other data), ``missing`` (a listed version or symbol reported as absent),
``unnamed`` (an arcticlite storage error that does not name the store), ``other`` (any other
exception).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections import Counter
from typing import Any


def digest(df: Any) -> str:
    """A digest of a frame's index and values (of a pickled object: of its repr)."""
    if not hasattr(df, "index"):
        return hashlib.sha256(repr(df).encode()).hexdigest()
    h = hashlib.sha256(df.index.asi8.tobytes())
    for c in df.columns:
        h.update(str(c).encode())
        col = df[c]
        h.update(col.astype(str).str.cat(sep="\x00").encode() if col.dtype == object else col.to_numpy().tobytes())
    return h.hexdigest()


def reads(lib: Any, expected: dict[str, Any]) -> list[tuple[str, Any]]:
    """``(name, thunk)`` of every read a user makes of the library: listings, every live version
    of every symbol with its metadata, every symbol of every snapshot."""
    out: list[tuple[str, Any]] = [("symbols", lambda: sorted(lib.list_symbols())),
                                  ("snapshots", lambda: sorted(lib.list_snapshots()))]
    for sym, versions in expected["versions"].items():
        out.append((f"versions {sym}", lambda s=sym: sorted(
            k.version for k, i in lib.list_versions(s).items() if not i.deleted)))
        for v in versions:
            def read(s: str = sym, v: int = v) -> list[str]:
                item = lib.read(s, as_of=v)
                return [digest(item.data), repr(item.metadata)]
            out.append((f"read {sym}@{v}", read))
    for snap, syms in expected["snapshot_symbols"].items():
        for sym in syms:
            out.append((f"snapshot {snap}/{sym}", lambda s=sym, n=snap: digest(lib.read(s, as_of=n).data)))
    return out


def classify(exc: BaseException, path: str) -> str:
    from arcticlite.exceptions import (
        CorruptDataError,
        KeyNotFoundException,
        NoDataFoundException,
        NoSuchVersionException,
        StorageException,
    )

    if isinstance(exc, CorruptDataError):
        return "corrupt"
    if isinstance(exc, NoSuchVersionException | NoDataFoundException | KeyNotFoundException):
        return "missing"
    if isinstance(exc, StorageException):
        return "storage" if path in str(exc) else "unnamed"
    return "other"


def trial(pristine: str, flips: list[list[int]], truth: dict[str, Any], copy: str) -> dict[str, Any]:
    """Copy ``pristine`` to ``copy`` (a new path each trial: LMDB keeps one environment per
    path and process), flip its bits and make every read."""
    from arcticlite import Arctic

    shutil.copytree(pristine, copy)
    with open(os.path.join(copy, "data.mdb"), "r+b") as f:
        for offset, bit in flips:
            f.seek(offset)
            byte = f.read(1)[0]
            f.seek(offset)
            f.write(bytes([byte ^ (1 << bit)]))
    outcomes: Counter[str] = Counter()
    notes: list[str] = []
    try:
        lib = Arctic(f"lmdb://{copy}")[truth["library"]]
    except Exception as exc:  # opening is a read too
        kind = classify(exc, copy)
        outcomes[kind] += 1
        if kind not in ("corrupt", "storage"):
            notes.append(f"open: {type(exc).__name__}: {str(exc)[:300]}")
        return {"outcomes": outcomes, "notes": notes}
    for name, fn in reads(lib, truth):
        try:
            got = fn()
        except Exception as exc:
            kind = classify(exc, copy)
            outcomes[kind] += 1
            if kind not in ("corrupt", "storage"):
                notes.append(f"{name}: {type(exc).__name__}: {str(exc)[:300]}")
            continue
        if got == truth["reads"][name]:
            outcomes["same"] += 1
        else:
            outcomes["wrong"] += 1
            notes.append(f"{name}: other data")
    lib._store.close()
    return {"outcomes": outcomes, "notes": notes}


def main() -> None:
    with open(sys.argv[1]) as f:
        plan = json.load(f)
    # beside the plan (the test's tmp_path): a worker killed by a trial leaves its copies where
    # pytest cleans up, not in the system's temporary folder
    scratch = tempfile.mkdtemp(prefix="bitflip-", dir=os.path.dirname(os.path.abspath(sys.argv[1])))
    try:
        for i in range(plan["start"], len(plan["trials"])):
            print(json.dumps({"trial": i, "started": True}), flush=True)
            copy = os.path.join(scratch, f"store{i}")
            result = trial(plan["pristine"], plan["trials"][i], plan["truth"], copy)
            print(json.dumps({"trial": i, **result}), flush=True)
            shutil.rmtree(copy, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
