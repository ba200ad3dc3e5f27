"""The defects found by trying arcticlite as a new user would (issue 16), each a test.

Already covered elsewhere: reserved library names (tests/engine/test_arctic.py,
``test_names_of_the_stores_own_records_are_refused``); unpicklable metadata, ``Arctic(123)`` and
NaT indexes (tests/engine/test_write_read.py, ``test_clear_errors_for_bad_metadata_and_nat_indexes``);
a reading CLI command never creates the store (tests/test_cli.py); opening an S3 store only
reads (test_credentials.py: credentials that may only read open and read it)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from storeimage import StoreImage

from arcticlite import Arctic
from arcticlite.exceptions import (
    ArcticException,
    CorruptDataError,
    InvalidSymbolName,
    StorageException,
    UserInputException,
)
from arcticlite.storage import open_store, parse_uri


def frame(n: int = 5, start: str = "2024-01-01") -> pd.DataFrame:
    return pd.DataFrame({"x": range(n)}, index=pd.date_range(start, periods=n))


def test_refused_update_writes_nothing(ac: Arctic, uri: str) -> None:
    lib = ac.create_library("lib")
    lib.write("s", frame())
    before = StoreImage.of(uri)
    with pytest.raises(ArcticException, match="differ from the stored ones"):
        lib.update("s", pd.DataFrame({"y": ["a"]}, index=[pd.Timestamp("2024-01-02")]))
    StoreImage.of(uri).assert_same(before)  # no segment left for gc() to find
    assert lib.gc(grace_period=0, dry_run=True).unreachable == 0


@pytest.mark.parametrize("op", ["update", "delete_data_in_range"])
def test_a_reversed_date_range_is_refused_and_writes_nothing(ac: Arctic, uri: str, op: str) -> None:
    """ArcticDB 6.28.2 commits a new version that changes nothing; arcticlite refuses."""
    lib = ac.create_library("lib")
    lib.write("s", frame())
    before = StoreImage.of(uri)
    reversed_ = (pd.Timestamp("2024-01-04"), pd.Timestamp("2024-01-02"))
    call = (lambda: lib.update("s", frame(2, "2024-01-02"), date_range=reversed_)) if op == "update" \
        else (lambda: lib.delete_data_in_range("s", reversed_))
    with pytest.raises(UserInputException, match=rf"^{op}: date_range .* ends before it starts; give \(start, end\)"):
        call()
    StoreImage.of(uri).assert_same(before, untouched=True)  # refused before anything was written
    assert [v.version for v in lib.list_versions("s")] == [0]


@pytest.mark.parametrize("backend", ["memory", "lmdb", "s3"], indirect=True)
def test_the_s3_key_limit_is_checked_on_every_backend_before_writing(uri: str) -> None:
    ac = Arctic(uri)
    lib = ac.create_library("lib")
    store_keys = sorted(ac._store.list_keys(""))
    too_long = "\U0001d518" * 254  # 254 characters, 12 bytes each once escaped: 3,048 bytes
    for call in (lambda: lib.write(too_long, frame()), lambda: lib.stage(too_long, frame()),
                 lambda: lib.write_pickle(too_long, 1), lambda: lib.append(too_long, frame())):
        with pytest.raises(InvalidSymbolName, match=r"3048 bytes in storage keys.*1,024 bytes \(S3's limit, applied on every backend\)"):
            call()
    assert sorted(ac._store.list_keys("")) == store_keys  # nothing written
    lib.write("s", frame())
    with pytest.raises(InvalidSymbolName, match="snapshot name"):
        lib.snapshot("\u00e9" * 200)
    assert lib.list_symbols() == ["s"] and lib.list_snapshots() == {}
    # the longest name allowed is accepted by S3 itself (the budget is not too strict)
    budget = 1024 - 160 - len("lib/")
    longest = "a" * min(budget, 254)
    lib.write(longest, frame())
    assert lib.read(longest).data.equals(frame())


@pytest.mark.s3
def test_a_path_prefix_that_leaves_no_room_is_refused(s3_server: Any) -> None:
    uri = s3_server.new_bucket_uri(path_prefix="p" * 1015)
    with pytest.raises(UserInputException, match="S3 allows 1024 .*path_prefix"):
        Arctic(uri).create_library("lib")


@pytest.mark.lmdb
def test_corrupt_data_errors_name_symbol_version_and_key(tmp_path: Any) -> None:
    uri = f"lmdb://{tmp_path / 'store'}"
    lib = Arctic(uri).create_library("lib")
    lib.write("s", pd.DataFrame({"x": range(1000)}, index=pd.date_range("2024-01-01", periods=1000, freq="min")))
    with open_store(uri) as store:
        for prefix in ("lib/tdata/s/", "lib/tindex/s/", "lib/vref/s"):
            [key] = list(store.list_keys(prefix))
            good = bytes(store.read(key))
            bad = bytearray(good)
            bad[len(bad) // 2] ^= 1
            store.write(key, bytes(bad))
            with pytest.raises(CorruptDataError) as err:
                Arctic(uri)["lib"].read("s")
            store.write(key, good)
            assert f"storage key '{key}'" in str(err.value), err.value
            if prefix == "lib/tdata/s/":
                assert "symbol 's' version 0 of library 'lib'" in str(err.value)
    assert Arctic(uri)["lib"].read("s").data["x"].tolist() == list(range(1000))


def test_a_missing_bucket_is_named(s3_uri: str) -> None:
    bucket = parse_uri(s3_uri).bucket  # type: ignore[union-attr]
    with pytest.raises(StorageException, match="bucket 'no-such-bucket' does not exist"):
        Arctic(s3_uri.replace(bucket, "no-such-bucket")).list_libraries()
