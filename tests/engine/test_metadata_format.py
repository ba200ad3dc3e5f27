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
