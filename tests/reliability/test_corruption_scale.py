"""Corruption at scale (issue 16's battery): stored values of every kind -- version records,
refs, table index nodes, data segments, symbol-list keys, snapshots, staged segments, the
library config and registry -- mutated by bit flips, byte overwrites, truncation and
extension; after each mutation a fresh client runs every kind of read. Each read returns exactly
what it returned before the mutation, or raises arcticlite's ``CorruptDataError`` naming the
mutated storage key; never another exception, never other data. (Mutations are undone between
cases.) 600 mutations by default, 10,000 with ``ARCTICLITE_BATTERY=full``.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from arcticlite import Arctic, Library, LibraryOptions
from arcticlite.exceptions import CorruptDataError
from arcticlite.storage import MemoryStore

FULL = os.environ.get("ARCTICLITE_BATTERY") == "full"
MUTATIONS = 10_000 if FULL else 600


def build() -> tuple[Arctic, MemoryStore]:
    store = MemoryStore()
    ac = Arctic("mem://", store=store)
    lib = ac.create_library("lib", LibraryOptions(rows_per_segment=8, columns_per_segment=2))
    idx = pd.date_range("2024-01-01", periods=30)
    rng = np.random.default_rng(0)
    lib.write("a", pd.DataFrame({"x": np.arange(30), "y": rng.random(30), "s": [f"s{i % 7}" for i in range(30)]},
                                index=idx), metadata={"src": "feed"})
    lib.append("a", pd.DataFrame({"x": [30, 31], "y": [0.5, 0.25], "s": ["t", "u"]},
                                 index=pd.date_range("2024-02-01", periods=2)))
    lib.write("b", pd.DataFrame({"v": np.arange(5.0)}, index=pd.date_range("2024-01-01", periods=5)))
    lib.snapshot("snap", metadata=[1, 2])
    lib.update("b", pd.DataFrame({"v": [9.0]}, index=pd.DatetimeIndex(["2024-01-03"])))
    lib.write_pickle("p", {"any": object.__name__})
    lib.compact_symbol_list()
    lib.write("c", pd.DataFrame({"z": np.arange(3)}, index=pd.date_range("2024-03-01", periods=3)))
    lib.stage("d", pd.DataFrame({"z": np.arange(2)}, index=pd.date_range("2024-04-01", periods=2)))
    return ac, store


READS: list[tuple[str, Callable[[Library], Any]]] = [
    ("list_symbols", lambda lib: sorted(lib.list_symbols())),
    ("list_snapshots", lambda lib: lib.list_snapshots()),
    ("list_versions", lambda lib: sorted((k.symbol, k.version, i.deleted) for k, i in lib.list_versions().items())),
    ("staged", lambda lib: lib.get_staged_symbols()),
    ("read a", lambda lib: lib.read("a")),
    ("read a v0", lambda lib: lib.read("a", as_of=0)),
    ("read a range", lambda lib: lib.read("a", date_range=(pd.Timestamp("2024-01-10"), pd.Timestamp("2024-01-20")),
                                          columns=["y"])),
    ("tail a", lambda lib: lib.tail("a", 3)),
    ("read b", lambda lib: lib.read("b")),
    ("read b snap", lambda lib: lib.read("b", as_of="snap")),
    ("read p", lambda lib: lib.read("p")),
    ("read c", lambda lib: lib.read("c")),
    ("describe a", lambda lib: lib.get_description("a").row_count),
    ("metadata a", lambda lib: lib.read_metadata("a").metadata),
    ("snapshot metadata", lambda lib: lib.list_snapshots(load_metadata=True)),
]


def outcome(value: Any) -> Any:
    """A comparable form of a read's result."""
    if hasattr(value, "data") and hasattr(value, "version"):
        data = value.data
        if isinstance(data, pd.DataFrame):
            data = (data.index.tolist(), {c: data[c].tolist() for c in data.columns})
        return (value.symbol, value.version, data, value.metadata)
    return value


def observe(store: MemoryStore) -> list[Any]:
    try:
        lib = Arctic("mem://", store=store)["lib"]
    except CorruptDataError as exc:  # the library's config: no read can start
        return [("corrupt", type(exc).__name__, str(exc))] * len(READS)
    out = []
    for _, fn in READS:
        try:
            out.append(("ok", outcome(fn(lib))))
        except CorruptDataError as exc:
            out.append(("corrupt", type(exc).__name__, str(exc)))
    return out


def kind_of(key: str) -> str:
    part = key.split("/")
    return part[1] if len(part) > 1 and part[0] == "lib" else part[0]


def mutate(value: bytes, rng: random.Random) -> tuple[str, bytes]:
    n = len(value)
    how = rng.choice(["flip", "flip", "byte", "truncate", "extend", "zero-field"])
    if n == 0 or how == "extend":
        return "extend", value + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
    if how == "flip":
        pos = rng.randrange(n * 8)
        buf = bytearray(value)
        buf[pos // 8] ^= 1 << (pos % 8)
        return how, bytes(buf)
    if how == "byte":
        pos = rng.randrange(n)
        buf = bytearray(value)
        buf[pos] = (buf[pos] + rng.randrange(1, 256)) % 256
        return how, bytes(buf)
    if how == "truncate":
        return how, value[: rng.randrange(n)]
    # a length / offset field set to 0, all ones or off by one (4 or 8 bytes at a random place)
    width = rng.choice([4, 8])
    pos = rng.randrange(max(1, n - width + 1))
    old = int.from_bytes(value[pos : pos + width].ljust(width, b"\0"), "little")
    new = rng.choice([0, (1 << (8 * width)) - 1, (old + 1) % (1 << (8 * width)), max(0, old - 1)])
    return how, value[:pos] + new.to_bytes(width, "little")[: n - pos] + value[pos + width :]


def test_corrupted_values_of_every_kind_never_read_as_other_data() -> None:
    """Battery: every mutated value makes each read either return exactly what it returned
    before or raise ``CorruptDataError`` naming the mutated key."""
    _, store = build()
    baseline = observe(store)
    assert all(o[0] == "ok" for o in baseline), baseline
    keys = sorted(k for k in store.list_keys("") if store.read(k) or True)
    rng = random.Random(16)
    by_kind: Counter[str] = Counter()
    detected: Counter[str] = Counter()
    problems: list[str] = []
    for i in range(MUTATIONS):
        key = keys[i % len(keys)]
        original = bytes(store.read(key))
        how, bad = mutate(original, rng)
        if bad == original:
            continue
        store.write(key, bad)
        try:
            got = observe(store)
        except Exception as exc:  # anything but CorruptDataError escaping a read
            problems.append(f"{key} {how}: {type(exc).__name__}: {exc}")
            got = []
        finally:
            store.write(key, original)
        by_kind[kind_of(key)] += 1
        for (name, _), want, have in zip(READS, baseline, got, strict=False):
            if have == want:
                continue
            if have[0] == "corrupt":
                detected[kind_of(key)] += 1
                if key not in have[2]:
                    problems.append(f"{key} {how}: {name}: the error does not name the key: {have[2]}")
            else:
                problems.append(f"{key} {how}: {name}: returned other data")
    print(f"\n{sum(by_kind.values())} mutations of {len(keys)} keys by kind {dict(by_kind)}; "
          f"reads that raised CorruptDataError by kind {dict(detected)}")
    assert problems == [], "\n".join(problems[:20])
    assert set(by_kind) >= {"ver", "vref", "tindex", "tdata", "sl", "snap", "stage"}


def pickle_key(store: MemoryStore) -> str:
    (key,) = [k for k in store.list_keys("lib/tdata/p/")]
    return key


def test_a_corrupt_pickle_is_never_loaded() -> None:
    """``write_pickle`` data is checksummed: a flipped bit inside the pickle raises
    ``CorruptDataError`` naming the key, instead of loading other data or raising pickle's own
    errors (it did both: a bare pickle had no checksum)."""
    store = MemoryStore()
    lib = Arctic("mem://", store=store).create_library("lib")
    lib.write_pickle("p", {"price": 101.5, "name": "abc"})
    key = pickle_key(store)
    good = bytes(store.read(key))
    for pos in range(len(good)):
        bad = bytearray(good)
        bad[pos] ^= 0x10
        store.write(key, bytes(bad))
        with pytest.raises(CorruptDataError, match=key):
            lib.read("p")
    store.write(key, good)
    assert lib.read("p").data == {"price": 101.5, "name": "abc"}


def test_pickles_written_bare_by_earlier_versions_still_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stores written before pickles were sealed hold bare pickles: they read as before, and
    a truncated one raises ``CorruptDataError`` (not pickle's ``UnpicklingError``)."""
    import arcticlite.table._ops as ops

    store = MemoryStore()
    lib = Arctic("mem://", store=store).create_library("lib")
    monkeypatch.setattr(ops, "seal_pickled", lambda body: body)  # the earlier writer
    lib.write_pickle("p", [1, 2, 3])
    monkeypatch.undo()
    key = pickle_key(store)
    assert bytes(store.read(key))[:1] == b"\x80"  # a bare pickle
    assert lib.read("p").data == [1, 2, 3]
    store.write(key, bytes(store.read(key))[:-3])
    with pytest.raises(CorruptDataError, match=key):
        lib.read("p")
