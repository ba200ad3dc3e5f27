"""The conformance suite every :class:`~arcticlite.storage.KVStore` must pass.

Subclass :class:`StoreConformance` in a test module and provide a ``store`` fixture (a fresh,
empty store per test); provide a ``store_uri`` fixture too (a URI that re-opens *the same*
store, e.g. from another process; the default is ``None``) to run the multi-process race. zarr-python's store test kit
works the same way::

    class TestMyStore(StoreConformance):
        @pytest.fixture
        def store(self, tmp_path):
            with MyStore(tmp_path) as s:
                yield s

Class attributes tune the suite for stores where a check is not meaningful:
``exact_conditional_results = False`` (a wrapper that resolves lost responses by reading back
cannot count CAS increments exactly), ``large_value_size``, ``listing_size``.
"""

from __future__ import annotations

import collections.abc
import multiprocessing
import os
import threading
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from arcticlite.exceptions import (
    ArcticException,
    KeyNotFoundException,
    StorageException,
    StorageUnavailableError,
)
from arcticlite.storage import KVStore
from arcticlite.testing import _race

__all__ = ["StoreConformance", "process_context", "race_processes", "race_threads"]


def process_context() -> multiprocessing.context.BaseContext:
    """A multiprocessing context for tests whose processes re-open stores by URI.

    ``forkserver`` where available (children fork from a clean server that has already
    imported arcticlite, so no LMDB environment or boto3 client is inherited and each child
    starts fast); ``spawn`` elsewhere.
    """
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["arcticlite.storage", "arcticlite.testing._race"])
        return ctx
    return multiprocessing.get_context("spawn")


def race_threads(
    make_store: Callable[[], KVStore] | KVStore, *, threads: int = 8, rounds: int = 100
) -> list[int]:
    """Race ``threads`` threads on ``write_if_absent`` of one key per round.

    Returns the number of winners of each round (exactly 1 for a correct store).
    """
    store = make_store if isinstance(make_store, KVStore) else make_store()
    run = uuid.uuid4().hex[:8]
    barrier = threading.Barrier(threads)
    wins = [[False] * threads for _ in range(rounds)]
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        try:
            for r in range(rounds):
                barrier.wait()
                wins[r][t] = store.write_if_absent(f"race-{run}/{r:04d}", f"t{t}".encode())
        except BaseException as exc:  # reported to the test, not swallowed
            errors.append(exc)
            barrier.abort()

    pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    if errors:
        raise errors[0]
    # the stored value names the winner: it must be the one thread that reported a win
    for r in range(rounds):
        winners = [t for t in range(threads) if wins[r][t]]
        if len(winners) == 1:
            assert bytes(store.read(f"race-{run}/{r:04d}")) == f"t{winners[0]}".encode()
    return [sum(row) for row in wins]


def race_processes(uri: str, *, processes: int = 4, rounds: int = 30) -> list[int]:
    """Race ``processes`` fresh processes, each opening ``uri`` itself, on
    ``write_if_absent`` of one key per round. Returns the winners per round."""
    ctx: Any = process_context()
    barrier = ctx.Barrier(processes)
    queue = ctx.Queue()
    run = uuid.uuid4().hex[:8]
    procs = [
        ctx.Process(target=_race.process_worker, args=(uri, run, p, rounds, barrier, queue))
        for p in range(processes)
    ]
    for p in procs:
        p.start()
    results = [queue.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    failures = [r for r in results if isinstance(r, str)]
    if failures:
        raise AssertionError(f"a racing process failed: {failures[0]}")
    counts = [0] * rounds
    for wins in results:
        for r, won in enumerate(wins):
            counts[r] += bool(won)
    return counts


class StoreConformance:
    """Tests every store must pass. Subclasses provide a ``store`` fixture."""

    #: False when conditional results may be resolved by read-back (retrying wrappers).
    exact_conditional_results: bool = True
    #: Size of the "large value" test.
    large_value_size: int = 20 * 1024 * 1024
    #: Keys in the pagination test (more than one page of 1000).
    listing_size: int = 1100
    #: Rounds of the thread race.
    thread_race_rounds: int = 100
    #: Rounds of the process race (needs a ``store_uri`` fixture).
    process_race_rounds: int = 30

    @pytest.fixture
    def store_uri(self) -> str | None:
        """A URI that re-opens ``store`` (override to enable the multi-process race)."""
        return None

    # -- reads and writes --------------------------------------------------------------------
    def test_read_missing_raises_key_not_found(self, store: KVStore) -> None:
        with pytest.raises(KeyNotFoundException, match="nope"):
            store.read("nope")
        # callers may catch it as any of these
        with pytest.raises(KeyError):
            store.read("nope")
        with pytest.raises(StorageException):
            store.read("nope")

    def test_write_then_read_round_trips(self, store: KVStore) -> None:
        store.write("lib/a", b"hello")
        assert bytes(store.read("lib/a")) == b"hello"

    def test_write_accepts_any_buffer(self, store: KVStore) -> None:
        store.write("k1", bytearray(b"abc"))
        store.write("k2", memoryview(b"xdefx")[1:4])
        assert bytes(store.read("k1")) == b"abc"
        assert bytes(store.read("k2")) == b"def"

    def test_empty_value(self, store: KVStore) -> None:
        store.write("empty", b"")
        assert store.exists("empty")
        assert bytes(store.read("empty")) == b""
        assert bytes(store.read_range("empty", 0, 10)) == b""
        assert store.read_if_exists("empty") is not None

    def test_overwrite_replaces_value(self, store: KVStore) -> None:
        store.write("k", b"first")
        store.write("k", b"second, longer")
        assert bytes(store.read("k")) == b"second, longer"
        store.write("k", b"3")
        assert bytes(store.read("k")) == b"3"

    def test_large_value(self, store: KVStore) -> None:
        n = self.large_value_size
        value = os.urandom(1 << 16) * (n >> 16) + b"tail"
        store.write("big", value)
        got = store.read("big")
        assert len(got) == len(value)
        assert bytes(got) == value
        assert bytes(store.read_range("big", n - 10, 100)) == value[n - 10 :]

    def test_values_are_binary_safe(self, store: KVStore) -> None:
        value = bytes(range(256)) * 4
        store.write("bin", value)
        assert bytes(store.read("bin")) == value

    def test_read_returns_a_snapshot_not_a_live_view(self, store: KVStore) -> None:
        store.write("k", b"before")
        got = store.read("k")
        store.write("k", b"after!")
        assert bytes(got) == b"before"

    def test_read_view(self, store: KVStore) -> None:
        store.write("k", b"viewed")
        with store.read_view("k") as view:
            assert isinstance(view, memoryview)
            assert bytes(view) == b"viewed"
        with pytest.raises(KeyNotFoundException), store.read_view("missing"):
            pass

    # -- keys ---------------------------------------------------------------------------------
    @pytest.mark.parametrize(
        "key",
        [
            "lib/sym with spaces/0",
            "lib/ünïcødé/€/😀",
            "lib/%2F escaped~!@$^&*()[]{};',.=+",
            "lib/" + "x" * 390,  # engine keys approach 400 bytes
            "lib/" + "é" * 300,  # 600 UTF-8 bytes: beyond LMDB's 511-byte key limit
        ],
        ids=["spaces", "unicode", "punctuation", "400-bytes", "600-bytes"],
    )
    def test_unusual_keys_round_trip_and_list(self, store: KVStore, key: str) -> None:
        store.write(key, b"v")
        assert store.exists(key)
        assert bytes(store.read(key)) == b"v"
        assert list(store.list_keys("lib/")) == [key]
        assert store.write_if_absent(key, b"w") is False
        assert store.compare_and_swap(key, b"v", b"w") is True
        assert bytes(store.read(key)) == b"w"
        store.delete([key])
        assert not store.exists(key)
        assert list(store.list_keys("lib/")) == []

    def test_long_keys_sharing_a_long_prefix_stay_distinct(self, store: KVStore) -> None:
        stem = "lib/" + "p" * 500
        keys = [stem + f"/{i}" for i in range(5)]
        for i, k in enumerate(keys):
            store.write(k, str(i).encode())
        for i, k in enumerate(keys):
            assert bytes(store.read(k)) == str(i).encode()
        assert sorted(store.list_keys(stem + "/")) == sorted(keys)
        assert list(store.list_keys(stem + "/3")) == [keys[3]]

    def test_list_sizes(self, store: KVStore) -> None:
        values = {"sz/a": b"abc", "sz/b": b"b" * 1000, "sz/c/d": bytes(range(256)) * 300}
        for k, v in values.items():
            store.write(k, v)
        store.write("other/x", b"x")
        assert sorted(store.list_sizes("sz/")) == sorted((k, len(v)) for k, v in values.items())
        store.delete(["sz/b"])
        assert sorted(store.list_sizes("sz/")) == [("sz/a", 3), ("sz/c/d", 76_800)]

    # -- read_range / read_many ---------------------------------------------------------------
    def test_read_range(self, store: KVStore) -> None:
        store.write("r", b"0123456789")
        assert bytes(store.read_range("r", 0, 4)) == b"0123"
        assert bytes(store.read_range("r", 3, 4)) == b"3456"
        assert bytes(store.read_range("r", 8, 10)) == b"89"  # fewer at the end
        assert bytes(store.read_range("r", 10, 5)) == b""  # exactly at the end
        assert bytes(store.read_range("r", 50, 5)) == b""  # past the end
        assert bytes(store.read_range("r", 2, 0)) == b""

    def test_read_range_missing_key(self, store: KVStore) -> None:
        with pytest.raises(KeyNotFoundException):
            store.read_range("missing", 0, 1)

    def test_read_many_keeps_order(self, store: KVStore) -> None:
        items = {f"m/{i}": f"value {i}".encode() for i in range(40)}
        store.write_many(items)
        keys = list(reversed(items))
        assert [bytes(v) for v in store.read_many(keys)] == [items[k] for k in keys]
        assert store.read_many([]) == []

    def test_read_many_missing_key_names_it(self, store: KVStore) -> None:
        store.write_many({"m/a": b"a", "m/c": b"c"})
        with pytest.raises(KeyNotFoundException, match="m/b"):
            store.read_many(["m/a", "m/b", "m/c"])

    def test_read_if_exists(self, store: KVStore) -> None:
        assert store.read_if_exists("x") is None
        store.write("x", b"1")
        assert bytes(store.read_if_exists("x") or b"") == b"1"

    # -- exists / delete ----------------------------------------------------------------------
    def test_exists(self, store: KVStore) -> None:
        assert store.exists("e") is False
        store.write("e", b"")
        assert store.exists("e") is True
        assert store.exists("e/") is False  # no prefix semantics

    def test_delete(self, store: KVStore) -> None:
        store.write_many({"d/1": b"1", "d/2": b"2", "d/3": b"3"})
        store.delete(["d/1", "d/3"])
        assert sorted(store.list_keys("d/")) == ["d/2"]
        with pytest.raises(KeyNotFoundException):
            store.read("d/1")

    def test_delete_missing_and_empty_is_a_no_op(self, store: KVStore) -> None:
        store.write("keep", b"k")
        store.delete(["never-existed", "also/not"])
        store.delete([])
        store.delete(iter(()))
        assert bytes(store.read("keep")) == b"k"

    # -- listing ------------------------------------------------------------------------------
    def test_list_keys_by_prefix(self, store: KVStore) -> None:
        for k in ["a/b", "a/bc", "a/b/c", "a/", "ab", "b/a", "a"]:
            store.write(k, b"")
        assert sorted(store.list_keys("a/b")) == ["a/b", "a/b/c", "a/bc"]
        assert sorted(store.list_keys("a/")) == ["a/", "a/b", "a/b/c", "a/bc"]
        assert sorted(store.list_keys("a")) == ["a", "a/", "a/b", "a/b/c", "a/bc", "ab"]
        assert sorted(store.list_keys("")) == sorted(
            ["a/b", "a/bc", "a/b/c", "a/", "ab", "b/a", "a"]
        )
        assert list(store.list_keys("zzz")) == []

    def test_list_keys_is_an_iterator(self, store: KVStore) -> None:
        store.write("i/1", b"")
        keys = store.list_keys("i/")
        assert isinstance(keys, collections.abc.Iterator)
        assert list(keys) == ["i/1"]

    def test_list_keys_pages_through_many_keys(self, store: KVStore) -> None:
        n = self.listing_size
        store.write_many({f"p/{i:05d}": b"" for i in range(n)})
        store.write_many({"p": b"", "q/00001": b"", "o/00001": b""})
        keys = list(store.list_keys("p/"))
        assert len(keys) == n == len(set(keys))
        assert set(keys) == {f"p/{i:05d}" for i in range(n)}
        # any iterable, more than one S3 DeleteObjects batch of 1000
        store.delete(k for k in keys)
        assert list(store.list_keys("p/")) == []
        assert sorted(store.list_keys("")) == ["o/00001", "p", "q/00001"]

    def test_list_keys_sees_unicode_prefixes(self, store: KVStore) -> None:
        store.write_many({"ü/1": b"", "ü/2": b"", "u/3": b"", "üx": b""})
        assert sorted(store.list_keys("ü/")) == ["ü/1", "ü/2"]

    # -- conditional writes -------------------------------------------------------------------
    def test_write_if_absent(self, store: KVStore) -> None:
        assert store.write_if_absent("v/1", b"first") is True
        assert store.write_if_absent("v/1", b"second") is False
        assert bytes(store.read("v/1")) == b"first"

    def test_write_if_absent_after_delete(self, store: KVStore) -> None:
        assert store.write_if_absent("v/1", b"a") is True
        store.delete(["v/1"])
        assert store.write_if_absent("v/1", b"b") is True
        assert bytes(store.read("v/1")) == b"b"

    def test_write_if_absent_with_empty_value(self, store: KVStore) -> None:
        assert store.write_if_absent("v/e", b"") is True
        assert store.write_if_absent("v/e", b"x") is False
        assert bytes(store.read("v/e")) == b""

    def test_compare_and_swap(self, store: KVStore) -> None:
        assert store.compare_and_swap("ref", None, b"v1") is True  # create
        assert store.compare_and_swap("ref", None, b"v1b") is False  # exists already
        assert bytes(store.read("ref")) == b"v1"
        assert store.compare_and_swap("ref", b"v1", b"v2") is True
        assert store.compare_and_swap("ref", b"v1", b"v3") is False  # stale
        assert bytes(store.read("ref")) == b"v2"
        assert store.compare_and_swap("ref", bytearray(b"v2"), memoryview(b"v3")) is True
        assert bytes(store.read("ref")) == b"v3"

    def test_compare_and_swap_on_missing_key_with_expected_value(self, store: KVStore) -> None:
        assert store.compare_and_swap("missing", b"anything", b"new") is False
        assert not store.exists("missing")

    def test_compare_and_swap_empty_values(self, store: KVStore) -> None:
        store.write("ref", b"")
        assert store.compare_and_swap("ref", b"x", b"y") is False
        assert store.compare_and_swap("ref", b"", b"y") is True
        assert store.compare_and_swap("ref", b"y", b"") is True
        assert bytes(store.read("ref")) == b""

    # -- commit -------------------------------------------------------------------------------
    def test_commit_creates_and_puts(self, store: KVStore) -> None:
        store.write("ref", b"old")
        assert store.commit({"ver/1": b"version 1"}, {"ref": b"new", "other": b"o"}) is True
        assert bytes(store.read("ver/1")) == b"version 1"
        assert bytes(store.read("ref")) == b"new"
        assert bytes(store.read("other")) == b"o"

    def test_commit_refuses_when_the_created_key_exists(self, store: KVStore) -> None:
        store.write("ver/1", b"theirs")
        store.write("ref", b"old")
        assert store.commit({"ver/1": b"mine"}, {"ref": b"new"}) is False
        assert bytes(store.read("ver/1")) == b"theirs"
        assert bytes(store.read("ref")) == b"old"

    def test_commit_is_all_or_nothing_when_atomic(self, store: KVStore) -> None:
        if not store.atomic_commit:
            pytest.skip("this store's commit is not atomic (S3): one created key per commit")
        store.write("ver/2", b"theirs")
        ok = store.commit({"ver/1": b"mine", "ver/2": b"mine"}, {"ref": b"new"})
        assert ok is False
        assert not store.exists("ver/1")
        assert not store.exists("ref")

    def test_commit_with_no_creates_just_puts(self, store: KVStore) -> None:
        assert store.commit({}, {"a": b"1"}) is True
        assert bytes(store.read("a")) == b"1"

    # -- concurrency --------------------------------------------------------------------------
    def test_write_if_absent_race_threads_has_one_winner(self, store: KVStore) -> None:
        counts = race_threads(store, threads=8, rounds=self.thread_race_rounds)
        bad = [(r, c) for r, c in enumerate(counts) if c != 1]
        assert bad == [], f"rounds without exactly one winner: {bad[:10]}"

    def test_commit_race_threads_has_one_winner(self, store: KVStore) -> None:
        rounds, threads = 20, 8
        won = [[False] * threads for _ in range(rounds)]
        barrier = threading.Barrier(threads)

        def worker(t: int) -> None:
            for r in range(rounds):
                barrier.wait()
                won[r][t] = store.commit(
                    {f"c/{r}": f"{t}".encode()}, {f"c-ref/{r}": f"{t}".encode()}
                )

        pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
        for th in pool:
            th.start()
        for th in pool:
            th.join()
        for r in range(rounds):
            winners = [t for t in range(threads) if won[r][t]]
            assert len(winners) == 1, f"round {r}: winners {winners}"
            assert bytes(store.read(f"c/{r}")) == str(winners[0]).encode()
            assert bytes(store.read(f"c-ref/{r}")) == str(winners[0]).encode()

    def test_compare_and_swap_counter_loses_no_increment(self, store: KVStore) -> None:
        if not self.exact_conditional_results:
            pytest.skip("read-back resolution cannot count increments exactly")
        threads, per_thread = 6, 15
        store.write("counter", b"0:init")

        def worker(t: int) -> None:
            done = 0
            while done < per_thread:
                current = bytes(store.read("counter"))
                n = int(current.split(b":")[0])
                # a unique token per write avoids ABA on ETag-compared stores
                if store.compare_and_swap("counter", current, f"{n + 1}:{t}-{done}".encode()):
                    done += 1

        pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
        for th in pool:
            th.start()
        for th in pool:
            th.join()
        assert int(bytes(store.read("counter")).split(b":")[0]) == threads * per_thread

    def test_concurrent_readers_and_writers(self, store: KVStore) -> None:
        errors: list[BaseException] = []
        stop = threading.Event()

        def writer(t: int) -> None:
            try:
                for i in range(60):
                    store.write(f"cw/{t}/{i % 7}", bytes([t]) * (1000 + i))
            except BaseException as exc:
                errors.append(exc)

        def reader() -> None:
            try:
                while not stop.is_set():
                    for k in list(store.list_keys("cw/")):
                        value = bytes(store.read(k))
                        t = int(k.split("/")[1])
                        assert value == bytes([t]) * len(value)  # never torn
            except BaseException as exc:
                errors.append(exc)

        writers = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
        readers = [threading.Thread(target=reader) for _ in range(2)]
        for th in writers + readers:
            th.start()
        for th in writers:
            th.join()
        stop.set()
        for th in readers:
            th.join()
        assert errors == []
        assert len(list(store.list_keys("cw/"))) == 4 * 7

    def test_write_if_absent_race_processes_has_one_winner(
        self, store: KVStore, store_uri: str | None
    ) -> None:
        uri = store_uri
        if uri is None:
            pytest.skip("no store_uri: this store cannot be re-opened by another process")
        if uri.startswith("mem://"):
            pytest.skip("an in-memory store is private to its process")
        counts = race_processes(uri, processes=4, rounds=self.process_race_rounds)
        bad = [(r, c) for r, c in enumerate(counts) if c != 1]
        assert bad == [], f"rounds without exactly one winner: {bad[:10]}"

    # -- errors and lifecycle -----------------------------------------------------------------
    def test_errors_are_arcticlite_exceptions(self, store: KVStore) -> None:
        with pytest.raises(ArcticException):
            store.read("missing")
        with pytest.raises(ArcticException):
            store.read_many(["missing"])

    def test_context_manager_returns_the_store(self, store: KVStore) -> None:
        with store as s:
            assert s is store
            s.write("cm", b"1")

    def test_probe_conditional_writes(self, store: KVStore) -> None:
        try:
            assert store.probe_conditional_writes() is True
        except StorageUnavailableError:
            pytest.skip("the probe met an injected fault")
