"""Bit flips inside a real LMDB data file (issue 16's battery).

LMDB does not checksum values (a flipped bit gave silently wrong values in 188 of 300 trials
of a bare LMDB store, ../shared/reference/reliability.md). arcticlite checksums every stored
value, so after flipping random bits of a copy of ``data.mdb``, every read of every version of
every symbol (and the listings and snapshots) must return exactly the original, or raise
``CorruptDataError`` or another arcticlite storage error naming the store; never other data,
never another exception, never a hang (a child that stops reporting is killed and counted). The
reads run in a child process, so that a crash of the interpreter is counted (a damaged length
field once made py-lmdb touch memory past the end of the file: SIGBUS; values are now checked
against the file before they are touched, docs/reliability.md).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd
import pytest
from bitflip_worker import reads

import arcticlite
from arcticlite import Arctic, LibraryOptions

pytestmark = [pytest.mark.lmdb, pytest.mark.timeout(1800)]

FULL = os.environ.get("ARCTICLITE_BATTERY") == "full"
TRIALS = int(os.environ.get("ARCTICLITE_BITFLIPS", 2000 if FULL else 150))  # trials; and the seed:
SEED = int(os.environ.get("ARCTICLITE_BITFLIP_SEED", 16))
HANG_SECONDS = 120  # a trial reads a few hundred kB: far below this even on a loaded machine
WORKER = os.path.join(os.path.dirname(__file__), "bitflip_worker.py")
ROOT = os.path.dirname(os.path.dirname(arcticlite.__file__))  # the children import this arcticlite


def populate(uri: str) -> None:
    rng = np.random.default_rng(7)
    lib = Arctic(uri).create_library("lib", LibraryOptions(rows_per_segment=500))

    def frame(n: int, start: str, base: int) -> pd.DataFrame:
        return pd.DataFrame({"px": rng.random(n), "qty": np.arange(base, base + n, dtype=np.int64),
                             "venue": rng.choice(["XLON", "XPAR", "XETR"], n)},
                            index=pd.date_range(start, periods=n, freq="s"))

    lib.write("prices", frame(2000, "2024-01-01", 0), metadata={"source": "feed"})
    lib.append("prices", frame(300, "2024-01-02", 5000))
    lib.update("prices", frame(100, "2024-01-01 00:10", 9000))
    lib.write("small", frame(10, "2024-01-01", 0), metadata="v0")
    lib.snapshot("eod", metadata={"day": 1})
    lib.write("small", frame(5, "2024-02-01", 100), metadata="v1")
    lib.merge("prices", frame(3, "2024-01-01 00:00:05", 70000))
    lib.write_pickle("obj", {"a": [1, 2, 3]})


def expected(uri: str) -> dict[str, Any]:
    lib = Arctic(uri)["lib"]
    truth: dict[str, Any] = {
        "library": "lib",
        "versions": {s: sorted(k.version for k, i in lib.list_versions(s).items() if not i.deleted)
                     for s in sorted(lib.list_symbols())},
        "snapshot_symbols": {n: sorted(lib.list_symbols(snapshot_name=n)) for n in lib.list_snapshots()},
    }
    truth["reads"] = {name: fn() for name, fn in reads(lib, truth)}
    lib._store.close()
    return truth


def run_trials(plan_path: str, plan: dict[str, Any]) -> tuple[list[dict[str, Any]], Counter[str]]:
    """Run every trial in child processes; a child that dies or hangs costs one trial."""
    results: list[dict[str, Any]] = []
    events: Counter[str] = Counter()
    start = 0
    while start < len(plan["trials"]):
        plan["start"] = start
        with open(plan_path, "w") as f:
            json.dump(plan, f)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
        proc = subprocess.Popen([sys.executable, WORKER, plan_path], stdout=subprocess.PIPE, text=True,
                                cwd=os.path.dirname(WORKER), env=env)
        current = start
        assert proc.stdout is not None
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        hung = False
        while True:
            if not sel.select(timeout=HANG_SECONDS):
                hung = True
                proc.kill()
                break
            line = proc.stdout.readline()
            if not line:
                break
            msg = json.loads(line)
            current = msg["trial"]
            if not msg.get("started"):
                results.append(msg)
                current += 1
        proc.wait()
        sel.close()
        if current >= len(plan["trials"]):
            break
        events["hang" if hung else f"crash (exit {proc.returncode})"] += 1  # trial `current` never reported
        results.append({"trial": current, "outcomes": {"hang" if hung else "crash": 1}, "notes": []})
        start = current + 1
    return results, events


def test_bit_flips_in_the_lmdb_file_never_give_other_data(tmp_path: Any) -> None:
    pristine = str(tmp_path / "pristine")
    populate(f"lmdb://{pristine}")
    truth = expected(f"lmdb://{pristine}")
    size = os.path.getsize(os.path.join(pristine, "data.mdb"))
    rng = random.Random(SEED)
    trials = [[[rng.randrange(size), rng.randrange(8)]] for _ in range(TRIALS)]
    plan = {"pristine": pristine, "truth": truth, "trials": trials}
    results, events = run_trials(str(tmp_path / "plan.json"), plan)
    assert len(results) == TRIALS
    reads_total: Counter[str] = Counter()
    trial_kinds: Counter[str] = Counter()
    failures = []
    for r in results:
        outcomes = Counter(r["outcomes"])
        reads_total += outcomes
        bad = set(outcomes) - {"same", "corrupt", "storage", "crash"}
        trial_kinds["failed" if bad else "crashed" if "crash" in outcomes
                    else "all same" if set(outcomes) == {"same"} else "detected"] += 1
        if bad:
            failures.append((r["trial"], trials[r["trial"]], dict(outcomes), r["notes"][:3]))
    print(f"\n{TRIALS} single-bit flips in a {size:,}-byte data.mdb ({len(truth['reads'])} reads each): "
          f"trials {dict(trial_kinds)}; reads {dict(reads_total)}; child deaths {dict(events)}; "
          f"failed trials {[(t, flips) for t, flips, *_ in failures]}; "
          f"crashed trials {[(r['trial'], trials[r['trial']]) for r in results if 'crash' in r['outcomes']]}")
    assert not failures, failures[:10]
    assert trial_kinds["detected"] > 0  # flips did reach stored values, and were caught
    assert "hang" not in events
    assert not reads_total["crash"], events  # no flip kills the interpreter (SIGBUS, docs/reliability.md)


def _rename(store: Any, key: str, new: str) -> None:
    """What a flipped bit in an LMDB key does: the value moves to another key."""
    value = bytes(store.read(key))
    store.write(new, value)
    store.delete([key])


def test_a_renamed_version_record_is_reported_as_corruption(tmp_path: Any) -> None:
    # found by the bit flips: a flip in the key of version record 0 hid it, and list_versions
    # silently listed fewer versions while reads of version 0 said it did not exist
    from arcticlite.exceptions import CorruptDataError

    lib = Arctic(f"lmdb://{tmp_path}/s").create_library("lib")
    for k in range(3):
        lib.write("s", pd.DataFrame({"a": [k]}))
    key = lib._engine.keys.version("s", 0)
    _rename(lib._store, key, key.replace("/00000000000000000000", "/00040000000000000000"))
    for call in (lambda: lib.read("s", as_of=0), lambda: lib.list_versions("s"),
                 lambda: lib.read("s", as_of=pd.Timestamp("2000-01-01", tz="UTC"))):
        with pytest.raises(CorruptDataError, match=f"version record 0 of symbol 's' is missing.*{key}"):
            call()
    assert lib.read("s").data["a"].tolist() == [2]  # what does not need it still reads


def test_a_missing_segment_of_a_live_version_is_reported_as_corruption(tmp_path: Any) -> None:
    from arcticlite.exceptions import CorruptDataError, KeyNotFoundException

    lib = Arctic(f"lmdb://{tmp_path}/s").create_library("lib")
    lib.write("s", pd.DataFrame({"a": [1, 2]}))
    data = next(iter(lib._store.list_keys("lib/tdata/")))
    _rename(lib._store, data, data + "x")
    with pytest.raises(CorruptDataError, match="symbol 's' version 0 of library 'lib': a key it needs is missing"):
        lib.read("s")
    assert not issubclass(CorruptDataError, KeyNotFoundException)


def test_a_renamed_version_ref_is_reported_as_corruption(tmp_path: Any) -> None:
    # found by the bit flips: a flip in the key of a symbol's ref hid every version of it --
    # list_versions said there were none, reads said the versions did not exist
    from arcticlite.exceptions import CorruptDataError

    lib = Arctic(f"lmdb://{tmp_path}/s").create_library("lib")
    for k in range(2):
        lib.write("s", pd.DataFrame({"a": [k]}))
    lib.write("t", pd.DataFrame({"a": [9]}))
    key = lib._engine.keys.ref("s")
    _rename(lib._store, key, key[:-1] + "u")
    for call in (lambda: lib.read("s"), lambda: lib.list_versions("s"), lambda: lib.read("s", as_of=0),
                 lambda: lib.write("s", pd.DataFrame({"a": [5]}))):
        with pytest.raises(CorruptDataError, match=f"version ref of symbol 's' is missing.*{key}"):
            call()
    assert lib.read("t").data["a"].tolist() == [9]  # other symbols still read
    assert not lib.has_symbol("never-written")  # an absent symbol is still just absent


def test_a_renamed_library_registry_entry_is_reported_as_corruption(tmp_path: Any) -> None:
    # found by the bit flips: a flip in the key of the library's registry entry made the
    # library look deleted (LibraryNotFound) while all its data was still there
    from arcticlite.exceptions import CorruptDataError, LibraryNotFound
    from arcticlite.version import registry_key

    ac = Arctic(f"lmdb://{tmp_path}/s")
    ac.create_library("lib", LibraryOptions(rows_per_segment=7)).write("s", pd.DataFrame({"a": [1, 2]}))
    key = registry_key("lib")
    _rename(ac._store, key, key[:-1] + "c")
    with pytest.raises(CorruptDataError, match=f"registry entry {key!r} is missing"):
        ac["lib"]
    with pytest.raises(LibraryNotFound):
        ac["never"]  # an absent library is still just absent
    ac.create_library("empty")
    ac.delete_library("empty")
    with pytest.raises(LibraryNotFound):
        ac["empty"]  # and a deleted one is deleted
    # what the message advises: create_library writes the entry again; data and options kept
    lib = ac.create_library("lib")
    assert lib.read("s").data["a"].tolist() == [1, 2]
    assert lib.options().rows_per_segment == 7


def test_a_damaged_symbol_list_key_is_rebuilt_from_the_refs(tmp_path: Any) -> None:
    # found by 20,000 bit flips: a journal key carries its content in its name, which LMDB does
    # not checksum -- a flip changed a symbol's name in list_symbols, or broke its parsing
    # (ValueError, UnicodeDecodeError)
    lib = Arctic(f"lmdb://{tmp_path}/s").create_library("lib")
    for s in ("prices", "small", "obj"):
        lib.write(s, pd.DataFrame({"a": [1]}))
    keys = sorted(lib._store.list_keys(lib._keys.sl_prefix + "j/"))
    assert all(k.rsplit(".", 1)[1].count("-") == 1 for k in keys)  # a checksum ends each token
    prices = next(k for k in keys if "/prices/" in k)
    _rename(lib._store, prices, prices.replace("/prices/", "/pricds/"))
    assert lib.list_symbols() == ["obj", "prices", "small"]
    lib.write("late", pd.DataFrame({"a": [1]}))  # (the listing above rebuilt and compacted the journal)
    (late,) = lib._store.list_keys(lib._keys.sl_prefix + "j/")
    _rename(lib._store, late, late.replace("/sl/j/", "/sl/J/"))  # no key of the list's own
    assert Arctic(f"lmdb://{tmp_path}/s")["lib"].list_symbols() == ["late", "obj", "prices", "small"]


def test_a_renamed_snapshot_key_is_reported_as_corruption(tmp_path: Any) -> None:
    from arcticlite.exceptions import CorruptDataError

    lib = Arctic(f"lmdb://{tmp_path}/s").create_library("lib")
    lib.write("s", pd.DataFrame({"a": [1]}))
    lib.snapshot("eod")
    key = lib._keys.snapshot("eod")
    _rename(lib._store, key, key[:-1] + "e")
    with pytest.raises(CorruptDataError, match="is snapshot 'eod', not 'eoe'"):
        lib.read("s", as_of="eoe")


def test_a_value_whose_length_runs_past_the_file_is_corruption_not_a_crash(tmp_path: Any) -> None:
    # found by 20,000 bit flips: a flip in the length field of an LMDB node made the value
    # reach past the end of the file, and touching it killed the interpreter (SIGBUS); the
    # value's bounds are now checked before anything touches it
    from arcticlite.storage import open_store

    path = tmp_path / "s"
    store = open_store(f"lmdb://{path}")
    store.write("small", b"x" * 100)
    store.write("big", b"y" * 20_000)  # an overflow value
    store.close()
    data = bytearray((path / "data.mdb").read_bytes())
    for key in (b"small", b"big"):
        at = data.rfind(key)
        while at >= 8 and int.from_bytes(data[at - 2:at], "little") != len(key):
            at = data.rfind(key, 0, at)  # the leaf node: its key size precedes the key
        assert at >= 8, key
        data[at - 6:at - 4] = b"\xff\x00"  # the value's size + 255 * 65,536 bytes
    (path / "data.mdb").write_bytes(bytes(data))
    code = ("import sys\nfrom arcticlite.storage import open_store\nfrom arcticlite.exceptions import CorruptDataError\n"
            f"st = open_store({f'lmdb://{path}'!r})\nfor k in ('small', 'big'):\n"
            "    try:\n        st.read(k)\n    except CorruptDataError as e:\n        print('corrupt', k)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": ROOT})
    assert out.returncode == 0, (out.returncode, out.stderr[-500:])  # no SIGBUS
    assert out.stdout.split("\n")[:2] == ["corrupt small", "corrupt big"], out.stdout
