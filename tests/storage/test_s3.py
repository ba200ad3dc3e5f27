"""S3-specific behaviour against a real moto server on 127.0.0.1: conditional writes, the
ambiguity rule, our own retries, the endpoint probe, prefixes, credentials, errors."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from arcticlite.exceptions import (
    AmbiguousWriteError,
    ConditionalWritesUnsupportedError,
    KeyNotFoundException,
    MissingDependencyError,
    StorageException,
    StorageUnavailableError,
)
from arcticlite.storage import RetryingStore, RetryPolicy, S3Store, S3Uri, open_store, parse_uri
from arcticlite.testing import S3TestServer, race_threads

pytestmark = pytest.mark.s3

FAST = RetryPolicy(max_attempts=4, base_delay=0.001, max_delay=0.01)


@pytest.fixture
def s3(s3_server: S3TestServer, s3_uri: str) -> Iterator[S3Store]:
    """An S3Store on a fresh bucket, with a fast retry policy."""
    parsed = parse_uri(s3_uri)
    assert isinstance(parsed, S3Uri)
    store = S3Store.from_uri(parsed, retry=FAST)
    yield store
    store.close()


def test_uri_in_arcticdb_form_opens_over_http(s3_server: S3TestServer, s3_uri: str) -> None:
    assert s3_uri.startswith("s3://127.0.0.1:") and f"port={s3_server.port}" in s3_uri
    with open_store(s3_uri) as store:
        assert isinstance(store, S3Store)
        assert store.endpoint_url == s3_server.endpoint_url
        store.write("lib/sym", b"data")
        assert bytes(store.read("lib/sym")) == b"data"


def test_path_prefix_isolates_stores_in_one_bucket(s3_server: S3TestServer) -> None:
    bucket = s3_server.make_bucket()
    a = open_store(s3_server.uri(bucket, path_prefix="team-a"))
    b = open_store(s3_server.uri(bucket, path_prefix="team-b/nested"))
    a.write("lib/k", b"a")
    b.write("lib/k", b"b")
    assert list(a.list_keys("")) == ["lib/k"] and bytes(a.read("lib/k")) == b"a"
    assert list(b.list_keys("lib/")) == ["lib/k"] and bytes(b.read("lib/k")) == b"b"
    raw = s3_server.client().list_objects_v2(Bucket=bucket)
    assert sorted(o["Key"] for o in raw["Contents"]) == ["team-a/lib/k", "team-b/nested/lib/k"]
    b.delete(["lib/k"])
    assert bytes(a.read("lib/k")) == b"a"


def test_values_are_single_part_puts_whose_etag_is_md5(
    s3: S3Store, s3_server: S3TestServer
) -> None:
    import hashlib

    s3.write("ref", b"body")
    head = s3_server.client().head_object(Bucket=s3.bucket, Key="ref")
    assert head["ETag"] == '"' + hashlib.md5(b"body").hexdigest() + '"'


# -- the ambiguity rule --------------------------------------------------------------------------
def test_lost_response_then_412_is_ambiguous(s3: S3Store, s3_server: S3TestServer) -> None:
    s3_server.fail_next(1, when="after", methods={"PUT"})  # lands, but the client sees a 500
    with pytest.raises(AmbiguousWriteError) as info:
        s3.write_if_absent("ver/1", b"mine")
    assert info.value.key == "ver/1"
    assert bytes(s3.read("ver/1")) == b"mine"  # reading back tells the caller it won


def test_lost_response_on_compare_and_swap_is_ambiguous(
    s3: S3Store, s3_server: S3TestServer
) -> None:
    s3.write("ref", b"v1")
    s3_server.fail_next(1, when="after", methods={"PUT"})
    with pytest.raises(AmbiguousWriteError):
        s3.compare_and_swap("ref", b"v1", b"v2")
    assert bytes(s3.read("ref")) == b"v2"


def test_refused_before_apply_then_success_is_a_clean_win(
    s3: S3Store, s3_server: S3TestServer
) -> None:
    s3_server.fail_next(2, when="before", methods={"PUT"})  # 503 SlowDown twice
    assert s3.write_if_absent("ver/1", b"mine") is True
    assert s3_server.injected["before"] >= 2
    assert s3.write_if_absent("ver/1", b"again") is False  # a plain loss is not ambiguous


def test_conditional_request_conflict_409_is_retried_and_not_ambiguous(
    s3: S3Store, s3_server: S3TestServer
) -> None:
    # S3 answers 409 when a conflicting conditional write is in flight: nothing was applied
    s3_server.fail_next(1, when="before", status=409, methods={"PUT"})
    assert s3.write_if_absent("ver/1", b"mine") is True
    s3_server.fail_next(1, when="before", status=409, methods={"PUT"})
    assert s3.write_if_absent("ver/1", b"theirs") is False  # a clean loss, not ambiguous
    assert bytes(s3.read("ver/1")) == b"mine"


def test_a_plain_write_survives_a_lost_response(s3: S3Store, s3_server: S3TestServer) -> None:
    s3_server.fail_next(1, when="after", methods={"PUT"})
    s3.write("data", b"idempotent")
    assert bytes(s3.read("data")) == b"idempotent"


def test_reads_listing_and_deletes_are_retried(s3: S3Store, s3_server: S3TestServer) -> None:
    s3.write_many({f"k/{i}": b"v" for i in range(5)})
    s3_server.fail_next(2, when="before", methods={"GET"})
    assert bytes(s3.read("k/0")) == b"v"
    s3_server.fail_next(2, when="before", methods={"GET"})
    assert len(list(s3.list_keys("k/"))) == 5
    s3_server.fail_next(2, when="before", methods={"POST"})
    s3.delete([f"k/{i}" for i in range(5)])
    assert list(s3.list_keys("k/")) == []


def test_retry_budget_exhausted_is_storage_unavailable(
    s3: S3Store, s3_server: S3TestServer
) -> None:
    s3.write("k", b"v")
    s3_server.fail_next(FAST.max_attempts, when="before", status=500, methods={"GET"})
    with pytest.raises(StorageUnavailableError, match="4 attempts"):
        s3.read("k")
    assert bytes(s3.read("k")) == b"v"  # the next call has its own budget


def test_unreachable_endpoint_is_storage_unavailable(s3_server: S3TestServer) -> None:
    store = S3Store("bucket", endpoint_url="http://127.0.0.1:9", retry=FAST)  # discard port
    with pytest.raises(StorageUnavailableError) as info:
        store.read("k")
    assert "botocore" not in type(info.value).__module__


def test_many_faults_before_apply_all_operations_succeed(
    s3: S3Store, s3_server: S3TestServer
) -> None:
    store = S3Store(
        s3.bucket,
        endpoint_url=s3.endpoint_url,
        retry=RetryPolicy(max_attempts=12, base_delay=0.001, max_delay=0.01),
    )
    s3_server.set_fault_rates(before=0.2, seed=3)
    for i in range(60):
        store.write(f"k/{i}", str(i).encode())
        assert store.write_if_absent(f"v/{i}", b"x") is True
    assert [bytes(v) for v in store.read_many([f"k/{i}" for i in range(60)])] == [
        str(i).encode() for i in range(60)
    ]
    s3_server.clear_faults()
    assert s3_server.injected["before"] > 10


def test_racing_writers_with_lost_responses_still_have_one_winner(
    s3: S3Store, s3_server: S3TestServer
) -> None:
    """S3 5xx-after-apply at p=0.3 on PUTs: with read-back resolution of AmbiguousWriteError
    (each writer's value is unique), every round still has exactly one winner."""
    resolved = RetryingStore(s3, RetryPolicy(max_attempts=12, base_delay=0.001, max_delay=0.01))
    s3_server.set_fault_rates(after=0.3, seed=11, methods={"PUT"})
    counts = race_threads(resolved, threads=8, rounds=25)
    s3_server.clear_faults()
    assert s3_server.injected["after"] > 5
    assert counts == [1] * 25


# -- conditional-write probe ---------------------------------------------------------------------
def test_probe_accepts_an_honest_endpoint(s3: S3Store) -> None:
    assert s3.probe_conditional_writes() is True
    s3.require_conditional_writes()
    assert list(s3.list_keys("")) == []  # the probe cleans up


def test_probe_is_not_fooled_by_lost_answers(s3_server: S3TestServer, s3_uri: str) -> None:
    """PUTs that land and lose their answer (500 after moto applied them, p = 0.5) make the
    probe's conditional writes ambiguous on retry: the probe reads its key back instead of
    calling an honest endpoint one that ignores conditions (it did, and every commit under
    such faults then failed with ConditionalWritesUnsupportedError)."""
    store = S3Store.from_uri(parse_uri(s3_uri))  # type: ignore[arg-type]
    for seed in range(12):
        s3_server.set_fault_rates(after=0.5, seed=seed, methods={"PUT"})
        assert store.probe_conditional_writes() is True, seed
    assert s3_server.injected["after"] >= 12
    s3_server.clear_faults()
    store.close()


def test_probe_detects_an_endpoint_that_ignores_conditions() -> None:
    with S3TestServer(honour_conditions=False) as server:
        store = S3Store(server.make_bucket(), endpoint_url=server.endpoint_url, retry=FAST)
        # on such an endpoint both "conditional" writes report success: a lost commit
        assert store.write_if_absent("ver/1", b"a") is True
        assert store.write_if_absent("ver/1", b"b") is True
        assert store.probe_conditional_writes() is False
        with pytest.raises(ConditionalWritesUnsupportedError, match="If-None-Match"):
            store.require_conditional_writes()


# -- errors and credentials ----------------------------------------------------------------------
def test_missing_bucket_is_a_storage_exception(s3_server: S3TestServer) -> None:
    store = S3Store("no-such-bucket-here", endpoint_url=s3_server.endpoint_url, retry=FAST)
    with pytest.raises(StorageException) as info:
        store.write("k", b"v")
    assert "NoSuchBucket" in str(info.value)
    with pytest.raises(KeyNotFoundException):
        S3Store(s3_server.make_bucket(), endpoint_url=s3_server.endpoint_url).read("absent")


def test_injected_client_is_used_as_is(s3_server: S3TestServer) -> None:
    bucket = s3_server.make_bucket()
    store = S3Store(bucket, prefix="p", client=s3_server.client())
    store.write("k", b"v")
    assert s3_server.client().get_object(Bucket=bucket, Key="p/k")["Body"].read() == b"v"


def test_credentials_never_appear_in_repr(s3: S3Store) -> None:
    s3.write("k", b"v")  # the client (and its credentials) exist now
    text = repr(s3) + str(vars(s3).get("endpoint_url"))
    assert "testing" not in text
    assert "S3Store(bucket=" in repr(s3)


def test_missing_boto3_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    with pytest.raises(MissingDependencyError, match=r"arcticlite\[s3\]"):
        S3Store("bucket")


# -- why the test server serialises requests -------------------------------------------------------
def _race_raw(server: S3TestServer, rounds: int, threads: int) -> list[int]:
    store = S3Store(server.make_bucket(), endpoint_url=server.endpoint_url, max_workers=threads)
    try:
        return race_threads(store, threads=threads, rounds=rounds)
    finally:
        store.close()


@pytest.mark.slow
def test_serialised_moto_is_exact_where_raw_moto_may_not_be(
    s3_server: S3TestServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Informational: moto checks If-None-Match and writes without a lock, so raw moto *may*
    give two winners in a round (about 1 round in 600). Only the serialised server is asserted."""
    with S3TestServer(serialise=False) as raw:
        raw_counts = _race_raw(raw, rounds=20, threads=16)
    exact_counts = _race_raw(s3_server, rounds=20, threads=16)
    with capsys.disabled():
        print(
            f"\nraw moto: {sum(c != 1 for c in raw_counts)}/20 rounds without exactly one winner; "
            f"serialised: {sum(c != 1 for c in exact_counts)}/20"
        )
    assert exact_counts == [1] * 20
    assert all(c >= 1 for c in raw_counts)  # someone always wins, even on raw moto


def test_forked_child_gets_its_own_client(s3: S3Store) -> None:
    import multiprocessing

    s3.write_many({"a": b"1", "b": b"2"})  # client and thread pool exist before the fork

    def child() -> None:
        assert [bytes(v) for v in s3.read_many(["a", "b"])] == [b"1", b"2"]
        assert s3.write_if_absent("from-child", b"c") is True

    proc = multiprocessing.get_context("fork").Process(target=child)
    proc.start()
    proc.join(60)
    assert proc.exitcode == 0
    assert bytes(s3.read("from-child")) == b"c"


def test_store_is_usable_from_many_threads(s3: S3Store) -> None:
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        try:
            for i in range(10):
                s3.write(f"t{t}/{i}", bytes([t]) * 100)
                assert bytes(s3.read(f"t{t}/{i}")) == bytes([t]) * 100
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert len(list(s3.list_keys(""))) == 80


def test_opening_a_store_only_reads_and_commits_probe_first() -> None:
    """Arctic(uri) writes nothing (read-only credentials can open and read); the probe for
    conditional writes runs at the first commit, and refuses it on an endpoint that ignores them."""
    import pandas as pd

    from arcticlite import Arctic

    with S3TestServer(honour_conditions=False) as server:
        bucket = server.make_bucket()
        raw = S3Store(bucket, endpoint_url=server.endpoint_url, retry=FAST)
        ac = Arctic(server.uri(bucket))
        assert ac.list_libraries() == []
        assert list(raw.list_keys("")) == []  # opening wrote no probe
        lib = ac.create_library("lib")
        with pytest.raises(ConditionalWritesUnsupportedError, match="If-None-Match"):
            lib.write("s", pd.DataFrame({"a": [1]}))


@pytest.mark.parametrize("setting", [None, 1])
def test_transport_checksums_only_when_required_or_asked(s3_server: S3TestServer, setting: int | None) -> None:
    """By default values go to S3 without a CRC32 of their body (every value carries checksums
    of its own, checked on read: the CRC was a second pass over each body on both sides);
    ``S3Storage.TransportChecksums=1`` sends and checks it. Both round-trip, deletes (which S3
    requires a checksum for) included."""
    from arcticlite import config

    bucket = s3_server.make_bucket()
    if setting is not None:
        config.set_config_int("S3Storage.TransportChecksums", setting)
    try:
        with open_store(s3_server.uri(bucket)) as store:
            store.write_many({"lib/a": b"x" * 100_000, "lib/b": b"y"})
            assert bytes(store.read("lib/a")) == b"x" * 100_000
            assert [bytes(v) for v in store.read_many(["lib/a", "lib/b"])] == [b"x" * 100_000, b"y"]
            head = s3_server.client().head_object(Bucket=bucket, Key="lib/a", ChecksumMode="ENABLED")
            assert ("ChecksumCRC32" in head) == (setting == 1)
            store.delete(["lib/a", "lib/b"])
            assert list(store.list_keys("lib/")) == []
    finally:
        if setting is not None:
            config.set_config_int("S3Storage.TransportChecksums", 0)


def test_a_read_of_the_latest_version_fetches_its_index_with_the_newer_record_probe(
        s3_server: S3TestServer) -> None:
    """On S3 the ref is a hint, so a read looks for a record newer than it; the head's index
    root is fetched at the same time (prefetch), and the read takes that fetch. Values come back
    right; a read of an older version fetches nothing ahead; a prefetched key that is missing
    is reported missing; a fetch that was not kept is simply read again."""
    import pandas as pd

    import arcticlite

    bucket = s3_server.make_bucket()
    lib = arcticlite.Arctic(s3_server.uri(bucket)).create_library("lib")
    df0 = pd.DataFrame({"x": [1, 2, 3]})
    df1 = pd.DataFrame({"x": [4, 5]})
    lib.write("s", df0)
    lib.write("s", df1)
    store = lib._store
    seen: list[str] = []
    inner_prefetch = type(store).prefetch

    def spy(self: Any, keys: Any) -> None:
        seen.extend(keys)
        inner_prefetch(self, keys)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(type(store), "prefetch", spy)
        pd.testing.assert_frame_equal(lib.read("s").data, df1)
        assert len(seen) == 1 and "/tindex/" in seen[0]
        pd.testing.assert_frame_equal(lib.read("s", as_of=0).data, df0)
        assert len(seen) == 1  # an older version: nothing fetched ahead
        assert lib.tail("s", 1).data["x"].tolist() == [5]
        assert len(seen) == 2 and seen[1] == seen[0]  # head / tail read the latest index too
    with open_store(s3_server.uri(bucket)) as raw:
        raw.prefetch(["nowhere/a"])
        with pytest.raises(KeyNotFoundException):
            raw.read("nowhere/a")
        raw.write("lib/imm", b"v")
        raw.prefetch(["lib/imm"] + [f"lib/missing{i}" for i in range(40)])  # more than are kept
        assert bytes(raw.read("lib/imm")) == b"v"


def test_reads_do_not_parse_the_last_modified_date(s3_server: S3TestServer) -> None:
    """A GET's Last-Modified header is dropped before botocore parses it (arcticlite reads the
    body only; the date parsing was ~0.2 ms of CPU a request): values read as before, and the
    listing (which keeps its own fields) still gives keys and sizes."""
    import dateutil.parser

    bucket = s3_server.make_bucket()
    with open_store(s3_server.uri(bucket)) as store:
        store.write("lib/a", b"abc")
        with pytest.MonkeyPatch.context() as m:
            def refuse(*_a: Any, **_k: Any) -> Any:
                raise AssertionError("a read parsed a date")
            m.setattr(dateutil.parser, "parse", refuse)
            m.setattr(dateutil.parser.parser, "parse", refuse)
            assert bytes(store.read("lib/a")) == b"abc"
            assert store.read_if_exists("lib/none") is None
        assert list(store.list_sizes("lib/")) == [("lib/a", 3)]
