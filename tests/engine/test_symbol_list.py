"""The symbol-list cache (DESIGN §4, invariant 5): ``list_symbols`` agrees with ``has_symbol``
for one client, converges for many clients, and survives compaction and reloads."""

from __future__ import annotations

import random
from typing import Any

import pytest
from enginehelpers import frame

from arcticlite import Arctic, Library
from arcticlite.exceptions import NoSuchVersionException

SYMS = [f"sym{k}" for k in range(8)] + ["a/b", "é"]
OPS = {"memory": 80, "lmdb": 80, "s3": 36}  # random operations per history (S3 round trips are slow)


def journal_keys(lib: Library) -> int:
    return sum(1 for _ in lib._store.list_keys(lib._keys.sl_prefix + "j/"))


def random_ops(libs: list[Library], n: int, seed: int) -> set[str]:
    """Random writes / appends / deletes (all or some versions) through ``libs``; returns the
    symbols that should be live."""
    rng = random.Random(seed)
    live: dict[str, int] = {}  # symbol -> number of live versions
    for step in range(n):
        lib = rng.choice(libs)
        sym = rng.choice(SYMS)
        op = rng.random()
        if op < 0.45:
            lib.write(sym, frame(1, base=step))
            live[sym] = live.get(sym, 0) + 1
        elif op < 0.55:
            lib.write_metadata(sym, step) if sym in live else lib.write(sym, frame(1))
            live[sym] = live.get(sym, 0) + 1
        elif op < 0.8:
            lib.delete(sym)
            live.pop(sym, None)
        elif sym in live:
            versions = sorted(v.version for v in lib.list_versions(sym))
            lib.delete(sym, versions=[versions[-1]])  # may kill the last live version
            live[sym] -= 1
            if live[sym] == 0:
                del live[sym]
        else:
            with pytest.raises(NoSuchVersionException):
                lib.delete(sym, versions=[0, 10_000])
    return set(live)


def test_list_symbols_agrees_with_has_symbol(lib: Library, backend: str) -> None:
    rng = random.Random(1)
    expected: set[str] = set()
    for step in range(OPS[backend]):
        sym = rng.choice(SYMS)
        if rng.random() < 0.6:
            lib.write(sym, frame(1, base=step))
            expected.add(sym)
        else:
            lib.delete(sym)
            expected.discard(sym)
        if step % 6 == 0:
            listed = set(lib.list_symbols())
            assert listed == expected
            assert listed == {s for s in SYMS if lib.has_symbol(s)}


def test_list_symbols_random_histories(lib: Library, backend: str) -> None:
    expected = random_ops([lib], OPS[backend], seed=7)
    assert set(lib.list_symbols()) == expected
    assert {s for s in SYMS if lib.has_symbol(s)} == expected
    assert len(lib.list_symbols()) == len(set(lib.list_symbols()))  # no duplicates


def test_list_symbols_regex(lib: Library) -> None:
    for s in ("AAPL", "AMZN", "MSFT", "xAAPL"):
        lib.write(s, frame(1))
    assert set(lib.list_symbols(regex="^A")) == {"AAPL", "AMZN"}
    assert set(lib.list_symbols(regex="AAPL")) == {"AAPL", "xAAPL"}  # search semantics
    assert lib.list_symbols(regex="^Z") == []


@pytest.fixture
def two_clients(ac: Arctic, uri: str, backend: str) -> tuple[Library, Library]:
    """Two independent clients of one library (memory: a second Arctic over the same store)."""
    a = ac.create_library("lib")
    other = Arctic(uri) if backend != "memory" else Arctic("mem://", store=ac._store)
    return a, other["lib"]


def test_two_clients_converge(two_clients: tuple[Library, Library], backend: str) -> None:
    a, b = two_clients
    expected = random_ops([a, b], OPS[backend], seed=11)
    assert set(a.list_symbols()) == expected
    assert set(b.list_symbols()) == expected
    assert {s for s in SYMS if b.has_symbol(s)} == expected


def test_compaction_past_threshold_keeps_the_answer(two_clients: tuple[Library, Library], backend: str) -> None:
    a, b = two_clients
    a._symbol_list.threshold = 5
    expected = set()
    for step in range(40 if backend != "s3" else 24):
        sym = SYMS[step % len(SYMS)]
        if step % 3 == 2:
            a.delete(sym)
            expected.discard(sym)
        else:
            a.write(sym, frame(1))
            expected.add(sym)
        assert set(a.list_symbols()) == expected  # compacts whenever the journal passes 5
        assert journal_keys(a) <= 5 + 1
    assert set(b.list_symbols()) == expected  # another client reads the compacted cache
    # the other client keeps writing journal entries after the compaction
    b.delete(SYMS[0])
    b.write("late", frame(1))
    expected = (expected - {SYMS[0]}) | {"late"}
    assert set(a.list_symbols()) == expected
    assert set(b.list_symbols()) == expected


def test_compact_and_reload_symbol_list(lib: Library) -> None:
    for s in SYMS[:5]:
        lib.write(s, frame(1))
    lib.delete(SYMS[0])
    expected = set(SYMS[1:5])
    n = lib.compact_symbol_list()
    assert isinstance(n, int) and n >= 6
    assert journal_keys(lib) == 0
    assert set(lib.list_symbols()) == expected
    assert lib.reload_symbol_list() is None
    assert set(lib.list_symbols()) == expected
    # a lost cache is rebuilt from the version refs
    lib._store.delete(list(lib._store.list_keys(lib._keys.sl_prefix)))
    assert set(lib.list_symbols()) == expected
    lib.write(SYMS[0], frame(1))
    assert set(lib.list_symbols()) == expected | {SYMS[0]}


def test_staged_and_pickled_symbols(lib: Library) -> None:
    lib.stage("staged", frame(2))
    lib.write_pickle("pickled", {"x": 1})
    lib.write_metadata("meta_only", 1)
    assert set(lib.list_symbols()) == {"pickled", "meta_only"}
    lib.finalize_staged_data("staged")
    assert set(lib.list_symbols()) == {"pickled", "meta_only", "staged"}  # ArcticDB #1324: listed
    lib.compact_symbol_list()
    assert set(lib.list_symbols()) == {"pickled", "meta_only", "staged"}


def test_racing_clients_converge_with_compaction(ac: Arctic, uri: str, backend: str) -> None:
    """Several clients create and delete the same symbols at once while compacting often:
    once they stop, every client's list_symbols() agrees with has_symbol()."""
    import threading

    ac.create_library("lib")
    n_threads, steps = 4, (12 if backend == "s3" else 30)
    clients = [(Arctic(uri) if backend != "memory" else Arctic("mem://", store=ac._store))["lib"]
               for _ in range(n_threads)]
    for c in clients:
        c._symbol_list.threshold = 4
    errors: list[BaseException] = []
    start = threading.Barrier(n_threads)

    def worker(k: int) -> None:
        rng = random.Random(k)
        try:
            start.wait()
            for step in range(steps):
                sym = rng.choice(SYMS[:5])
                if rng.random() < 0.6:
                    clients[k].write(sym, frame(1, base=step))
                else:
                    clients[k].delete(sym)
                if step % 5 == 0:
                    clients[k].list_symbols()  # may compact
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    truth = {s for s in SYMS[:5] if clients[0].has_symbol(s)}
    for c in clients:
        assert set(c.list_symbols()) == truth
    clients[0].compact_symbol_list()
    assert set(clients[1].list_symbols()) == truth


def test_compacted_lists_of_the_first_layout_are_still_read(lib: Library) -> None:
    from arcticlite._envelope import KIND_SYMBOL_LIST, seal
    from arcticlite.exceptions import CorruptDataError

    lib.write("kept", frame(2))
    lib.write("gone", frame(2))
    lib.delete("gone")
    lib.compact_symbol_list()
    keys = lib._keys
    (compacted,) = [k for k in lib._store.list_keys(keys.sl_prefix + "c/")]
    # the layout of earlier releases: {"symbols": {name: [seq, op]}} in the header
    lib._store.write(compacted, seal(KIND_SYMBOL_LIST, {"symbols": {"kept": [0, "a"], "gone": [1, "d"],
                                                                    "old": [3, "a"]}}))
    assert lib.list_symbols() == ["kept", "old"]
    lib.compact_symbol_list()  # rewritten in the current layout, same answer
    assert lib.list_symbols() == ["kept", "old"]
    (compacted,) = [k for k in lib._store.list_keys(keys.sl_prefix + "c/")]
    lib._store.write(compacted, seal(KIND_SYMBOL_LIST, {"names": ["kept"]}, b"\x00" * 3))
    with pytest.raises(CorruptDataError):
        lib.list_symbols()


def test_a_compaction_between_listing_pages_hides_no_symbol() -> None:
    """Listing the symbol list takes several pages (one LMDB read transaction or one S3
    ListObjectsV2 call each) once it holds 1,000 keys or more. A compaction that runs between
    two pages writes its compacted key (sorting before the journal) and deletes the journal
    keys of later pages: the listing must notice and list again, or the symbols of those
    journal keys vanish from list_symbols."""
    from collections.abc import Iterator

    from arcticlite.storage import MemoryStore, WrappingStore

    class PagedStore(WrappingStore):
        """Lists in key order, in pages of 1,000 keys each read afresh after the last key of the
        previous page (as LMDB and S3 do), running ``between`` once between the first two."""

        between: Any = None

        def list_keys(self, prefix: str = "") -> Iterator[str]:
            last = ""
            while True:
                page = sorted(k for k in self.inner.list_keys(prefix) if k > last)[:1000]
                yield from page
                if len(page) < 1000:
                    return
                last = page[-1]
                if self.between is not None:
                    hook, self.between = self.between, None
                    hook()

    inner = MemoryStore()
    store = PagedStore(inner)
    ac = Arctic("mem://", store=store)
    lib = ac.create_library("lib")
    other = Arctic("mem://", store=inner)["lib"]
    lib._symbol_list.threshold = other._symbol_list.threshold = 10**6  # no automatic compaction
    names = [f"s{i:04d}" for i in range(1100)]
    for name in names:
        lib._symbol_list.record(name, 0, "a")  # the journal entries of 1,100 first writes
    store.between = other.compact_symbol_list
    assert lib.list_symbols() == names
