"""User metadata is stored as JSON when it is plain values (dict of str keys, list, str,
finite numbers, bool, None), so it reads back without pickle; anything else is pickled, and
stores written with pickled metadata still read."""

from __future__ import annotations

import datetime
import pickle

import pandas as pd
import pytest

import arcticlite as adb
from arcticlite.storage import open_store

FRAME = pd.DataFrame({"x": [1, 2]})


def _stored_metadata(uri: str) -> list[bytes]:
    """The raw metadata blobs of every version record of the store (through the public records)."""
    from arcticlite.version import VersionRecord

    out = []
    with open_store(uri) as store:
        for key in store.list_keys(""):
            if "/ver/" in key:
                rec = VersionRecord.from_bytes(bytes(store.read(key)))
                if rec.metadata is not None:
                    out.append(bytes(rec.metadata))
    return out


@pytest.mark.parametrize("meta", [{"source": "feed", "rows": 3, "ok": True, "px": 1.5, "tags": ["a", "b"],
                                   "nested": {"n": None}}, "text", 42, [1, 2.0, "three"]])
def test_plain_metadata_is_json_and_reads_without_pickle(tmp_path: object, meta: object) -> None:
    uri = f"lmdb://{tmp_path}/db"
    adb.Arctic(uri).create_library("p").write("S", FRAME, metadata=meta)
    (blob,) = _stored_metadata(uri)
    assert blob.startswith(b"arcticlite-json\n")
    lib = adb.Arctic(uri).get_library("p", allow_pickle=False)
    got = lib.read_metadata("S").metadata
    assert got == meta and type(got) is type(meta)


@pytest.mark.parametrize("meta", [(1, 2), {1: "int key"}, {"t": datetime.date(2024, 1, 2)}, float("nan"),
                                  {"s": {1, 2}}, pd.Timestamp("2024-01-02")])
def test_other_metadata_is_pickled_and_round_trips(tmp_path: object, meta: object) -> None:
    uri = f"lmdb://{tmp_path}/db"
    lib = adb.Arctic(uri).create_library("p")
    lib.write("S", FRAME, metadata=meta)
    (blob,) = _stored_metadata(uri)
    assert blob[:1] == b"\x80"  # a pickle
    got = lib.read_metadata("S").metadata
    assert got == meta or (got != got and meta != meta)  # NaN


def test_snapshot_metadata_is_json_too() -> None:
    lib = adb.Arctic("mem://").create_library("p")
    lib.write("S", FRAME)
    lib.snapshot("eod", metadata={"note": "end of day", "n": 1})
    assert lib.list_snapshots() == {"eod": {"note": "end of day", "n": 1}}


def test_pickled_metadata_of_an_older_store_still_reads() -> None:
    from arcticlite.version import decode_metadata

    old = pickle.dumps({"source": "feed"})
    assert decode_metadata(old, allow_pickle=False, what="x") == {"source": "feed"}


#: 17 MiB of text: above the 16 MiB cap on stored metadata once encoded (JSON or pickle).
BIG = {"blob": "a" * (17 * 1024 * 1024)}
DAYS = pd.DataFrame({"x": [1, 2]}, index=pd.date_range("2024-01-01", periods=2))
LATER = pd.DataFrame({"x": [3]}, index=pd.date_range("2024-01-03", periods=1))


@pytest.mark.parametrize("call", [
    lambda lib: lib.write("S", FRAME, metadata=BIG),
    lambda lib: lib.write("new", FRAME, metadata=BIG),
    lambda lib: lib.append("S", LATER, metadata=BIG),
    lambda lib: lib.update("S", LATER, metadata=BIG),
    lambda lib: lib.write_metadata("S", BIG),
    lambda lib: lib.write_pickle("new", [1, 2], metadata=BIG),
    lambda lib: lib.write_metadata("S", {"k": (1, "b" * (17 * 1024 * 1024))}),  # pickled metadata too
    lambda lib: lib.merge("S", LATER, metadata=BIG),
    lambda lib: lib.finalize_staged_data("S", "append", metadata=BIG) if lib.stage("S", LATER) else None,
], ids=["write", "write-new", "append", "update", "write_metadata", "write_pickle", "pickled", "merge", "finalize"])
def test_metadata_above_16_mib_is_refused_naming_size_and_limit_and_changes_nothing(tmp_path: object,
                                                                                    call: object) -> None:
    lib = adb.Arctic(f"lmdb://{tmp_path}/db").create_library("p")
    lib.write("S", DAYS, metadata={"v": 0})
    with pytest.raises(adb.exceptions.ArcticDbNotYetImplemented, match=r"17\.0 MiB.*16,777,216 bytes"):
        call(lib)  # type: ignore[operator]
    assert lib.list_symbols() == ["S"]
    assert list(lib.list_versions("S")) == [adb.SymbolVersion("S", 0)]
    assert lib.read_metadata("S").metadata == {"v": 0}


def test_metadata_just_under_the_cap_is_stored() -> None:
    lib = adb.Arctic("mem://").create_library("p")
    meta = {"blob": "a" * (16 * 1024 * 1024 - 64)}
    lib.write("S", FRAME, metadata=meta)
    assert lib.read_metadata("S").metadata == meta


def test_a_batch_with_one_oversized_metadata_writes_none_of_it() -> None:
    lib = adb.Arctic("mem://").create_library("p")
    lib.write("S", DAYS)
    batches = [
        lambda: lib.write_batch([adb.WritePayload("A", FRAME), adb.WritePayload("B", FRAME, metadata=BIG)]),
        lambda: lib.write_pickle_batch([adb.WritePayload("A", 1), adb.WritePayload("B", 2, metadata=BIG)]),
        lambda: lib.append_batch([adb.WritePayload("S", LATER, metadata=BIG)]),
        lambda: lib.update_batch([adb.UpdatePayload("S", LATER, metadata=BIG)]),
        lambda: lib.write_metadata_batch([adb.WriteMetadataPayload("S", {"ok": 1}),
                                          adb.WriteMetadataPayload("A", BIG)]),
    ]
    for run in batches:
        with pytest.raises(adb.exceptions.ArcticDbNotYetImplemented, match="symbol '(A|B|S)'.*16 MiB"):
            run()
    assert lib.list_symbols() == ["S"]
    assert len(lib.list_versions("S")) == 1


def test_snapshot_metadata_above_the_cap_is_refused_and_no_snapshot_is_made() -> None:
    lib = adb.Arctic("mem://").create_library("p")
    lib.write("S", FRAME)
    with pytest.raises(adb.exceptions.ArcticDbNotYetImplemented, match="snapshot 'eod'.*16,777,216 bytes"):
        lib.snapshot("eod", metadata=BIG)
    assert lib.list_snapshots() == {}
