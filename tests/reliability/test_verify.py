"""``verify()``: the scrub that finds damage no read sees, and changes nothing.

A sound store verifies clean on every backend (with merges, snapshots of deleted versions,
pickled data, staged data and a deleted symbol); each kind of damage a flipped bit in an LMDB
file was seen to cause -- a key moved out of its prefix, a segment no one reads lately, a lost
index node, a library's lost registry entry -- is reported naming the key.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from storeimage import StoreImage

from arcticlite import Arctic, Library, LibraryOptions


def populate(lib: Library) -> None:
    idx = pd.date_range("2024-01-01", periods=60, freq="min")
    df = pd.DataFrame({"px": np.arange(60.0), "venue": ["A", "B", "C"] * 20}, index=idx)
    lib.write("prices", df)
    lib.snapshot("eod")
    lib.write("prices", df.assign(px=df.px * 2))
    lib.merge("prices", df.iloc[[3, 40]].assign(px=-1.0))
    lib.write_pickle("obj", {"a": [1, 2]})
    lib.write("gone", df.iloc[:5])
    lib.delete("gone")
    lib.stage("staged", df.iloc[:7])


def _move(store: Any, key: str, new: str) -> None:
    store.write(new, bytes(store.read(key)))
    store.delete([key])


def test_a_sound_store_verifies_clean_and_is_not_changed(uri: str, image: Callable[[str], StoreImage]) -> None:
    ac = Arctic(uri)
    populate(ac.create_library("lib", LibraryOptions(rows_per_segment=16)))
    ac.create_library("empty")
    before = image(uri)
    report = Arctic(uri, read_only=True).verify()
    assert report.ok, report.problems
    assert report.versions >= 6 and report.segments >= 6 and report.bytes > 0
    lib_report = Arctic(uri, read_only=True)["lib"].verify(data=False)
    assert lib_report.ok and lib_report.bytes == 0 and lib_report.segments == report.segments
    assert image(uri) == before  # verify changed nothing


@pytest.mark.lmdb
def test_each_kind_of_damage_is_reported_naming_its_key(tmp_path: Any) -> None:
    uri = f"lmdb://{tmp_path}/s"
    ac = Arctic(uri)
    lib = ac.create_library("lib", LibraryOptions(rows_per_segment=16))
    populate(lib)
    store, keys = lib._store, lib._keys
    assert ac.verify().ok

    # a segment only the snapshot still needs, with a flipped byte (no read of the head sees it)
    held = lib.read("prices", as_of="eod")
    assert held.version == 0
    seg = sorted(set(store.list_keys(keys.tdata_prefix("prices"))))[0]
    raw = bytearray(store.read(seg))
    raw[len(raw) // 2] ^= 0x10
    store.write(seg, bytes(raw))
    # a symbol-list journal key moved out of its library: list_symbols no longer sees 'obj'
    (journal,) = [k for k in store.list_keys(keys.sl_prefix + "j/") if "/obj/" in k]
    _move(store, journal, "lhb" + journal[3:])
    # a key of no kind arcticlite writes, inside the library
    store.write(keys.root + "snp/eod", b"x")
    report = ac.verify()
    text = "\n".join(report.problems)
    assert not report.ok
    assert "lhb/" in text and "belong to no library" in text
    assert "'lib/snp/eod' is of no kind arcticlite writes" in text
    assert "symbol 'obj' is live but missing from the symbol list" in text
    assert f"{seg}: ChecksumError" in text
    assert lib.verify(data=False).problems != report.problems  # without decoding, the flipped byte is not seen


@pytest.mark.lmdb
def test_a_missing_index_node_and_a_lost_registry_entry_are_reported(tmp_path: Any) -> None:
    from arcticlite.version import registry_key

    uri = f"lmdb://{tmp_path}/s"
    ac = Arctic(uri)
    lib = ac.create_library("lib", LibraryOptions(rows_per_segment=16))
    populate(lib)
    node = next(iter(lib._store.list_keys(lib._keys.tindex_prefix("prices"))))
    lib._store.delete([node])
    assert any("index node" in p and "is missing" in p for p in ac.verify().problems)
    _move(lib._store, registry_key("lib"), registry_key("lic"))
    problems = "\n".join(Arctic(uri).verify().problems)
    assert "under 'lib/' belong to no library" in problems
    assert "registry entry '_arctic/libs/lic' is that of library 'lib'" in problems


@pytest.mark.lmdb
def test_the_cli_exits_1_and_lists_the_problems(tmp_path: Any) -> None:
    uri = f"lmdb://{tmp_path}/s"
    lib = Arctic(uri).create_library("lib")
    populate(lib)

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "arcticlite", "verify", uri, *extra],
                              capture_output=True, text=True, timeout=120)

    ok = run()
    assert ok.returncode == 0 and "no damage found" in ok.stdout, ok.stderr
    lib._store.write(lib._keys.root + "junk", b"x")
    bad = run("--library", "lib", "--json")
    assert bad.returncode == 1
    got = json.loads(bad.stdout)
    assert not got["ok"] and any("'lib/junk' is of no kind" in p for p in got["problems"])
