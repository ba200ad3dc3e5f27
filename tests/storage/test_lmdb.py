"""LMDB-specific behaviour: map growth, one environment per path, fork/spawn, zero-copy reads."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from pathlib import Path
from typing import Any

import lmdb
import pytest
from lmdb.verify import verify as lmdb_verify

from arcticlite.exceptions import (
    KeyNotFoundException,
    LmdbMapFullError,
    StorageException,
    UserInputException,
)
from arcticlite.storage import LmdbStore, open_store
from arcticlite.testing import process_context

pytestmark = pytest.mark.lmdb


def _grow_in_child(path: str, n: int) -> None:
    with LmdbStore(path, map_size=64 * 1024) as s:
        for i in range(n):
            s.write(f"child/{i:04d}", bytes([i % 251]) * 20_000)


def _cas_increments(path: str, n: int) -> None:
    with LmdbStore(path) as s:
        done = 0
        while done < n:
            current = bytes(s.read("counter"))
            if s.compare_and_swap("counter", current, str(int(current) + 1).encode()):
                done += 1


def _write_and_ack(path: str, run: int, conn: Any) -> None:
    with LmdbStore(path, map_size=256 * 1024) as s:  # small map: kills also land mid-growth
        i = 0
        while True:
            value = f"v{i}".encode() * 50
            assert s.commit({f"ver/{run}/{i:06d}": value}, {f"ref/{run}": str(i).encode()})
            conn.send(i)  # acknowledged only after the commit returned
            i += 1


def test_kill_9_loses_no_acknowledged_commit(tmp_path: Path) -> None:
    path = str(tmp_path / "db")
    ctx: Any = process_context()
    for run in range(2):
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_write_and_ack, args=(path, run, send))
        proc.start()
        acked = -1
        while acked < 30 * (run + 1) and recv.poll(60):  # kill after some acks, not a timer
            acked = recv.recv()
        os.kill(proc.pid or 0, signal.SIGKILL)
        proc.join(30)
        while recv.poll(0):  # acks sent just before the kill
            acked = recv.recv()
        assert proc.exitcode == -signal.SIGKILL
        assert lmdb_verify(path) == []  # structurally intact
        with LmdbStore(path) as s:
            versions = sorted(s.list_keys(f"ver/{run}/"))
            last = int(bytes(s.read(f"ref/{run}")))
            assert last >= acked >= 30  # every acknowledged commit is there
            assert len(versions) == last + 1  # ref and versions moved together (atomic)
            for v in versions:
                assert bytes(s.read(v)) == f"v{int(v.rsplit('/', 1)[1])}".encode() * 50


def test_map_grows_by_itself(tmp_path: Path) -> None:
    with LmdbStore(tmp_path / "db", map_size=64 * 1024) as s:
        values = {f"k/{i:04d}": os.urandom(50_000) for i in range(100)}  # ~5 MB into 64 KiB
        for k, v in values.items():
            s.write(k, v)
        s.write("one-big", b"x" * (3 << 20))
        assert s.commit({"ver/1": b"v" * (2 << 20)}, {"ref": b"r" * (2 << 20)}) is True
        assert all(bytes(s.read(k)) == v for k, v in values.items())
        assert len(bytes(s.read("one-big"))) == 3 << 20
        assert s.exists("ver/1") and s.exists("ref")


def test_map_grows_under_many_threads(tmp_path: Path) -> None:
    errors: list[BaseException] = []
    with LmdbStore(tmp_path / "db", map_size=64 * 1024) as s:

        def worker(t: int) -> None:
            try:
                for i in range(20):
                    s.write(f"t{t}/{i}", bytes([t]) * 100_000)
                    assert bytes(s.read(f"t{t}/{i}"))[:1] == bytes([t])
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert errors == []
        assert len(list(s.list_keys(""))) == 160


def test_map_growth_in_another_process_is_adopted(tmp_path: Path) -> None:
    path = str(tmp_path / "db")
    with LmdbStore(path, map_size=64 * 1024) as s:
        s.write("parent/0", b"before")  # environment open with the small map
        ctx: Any = process_context()
        child = ctx.Process(target=_grow_in_child, args=(path, 200))  # ~4 MB
        child.start()
        child.join(120)
        assert child.exitcode == 0
        # our map is now smaller than the file: reads and writes recover by themselves
        assert bytes(s.read("child/0199")) == bytes([199]) * 20_000
        for i in range(50):
            s.write(f"parent/{i}", b"p" * 50_000)
        assert len(list(s.list_keys("child/"))) == 200
        assert bytes(s.read("parent/49")) == b"p" * 50_000


def test_processes_lose_no_compare_and_swap_increment(tmp_path: Path) -> None:
    path = str(tmp_path / "db")
    with LmdbStore(path) as s:
        s.write("counter", b"0")
        ctx: Any = process_context()
        procs = [ctx.Process(target=_cas_increments, args=(path, 30)) for _ in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
        assert [p.exitcode for p in procs] == [0] * 4
        assert bytes(s.read("counter")) == b"120"


def test_forked_child_reopens_and_writes(tmp_path: Path) -> None:
    with LmdbStore(tmp_path / "db") as s:
        s.write("parent", b"p")

        def child() -> None:
            # the inherited store re-opens its environment in this process
            assert bytes(s.read("parent")) == b"p"
            s.write("child", b"c")
            assert s.write_if_absent("child", b"again") is False

        ctx = multiprocessing.get_context("fork")
        proc = ctx.Process(target=child)
        proc.start()
        proc.join(60)
        assert proc.exitcode == 0
        assert bytes(s.read("child")) == b"c"
        s.write("parent-after-fork", b"ok")
        assert bytes(s.read("parent-after-fork")) == b"ok"


def test_fork_inside_a_transaction_protects_the_parent(tmp_path: Path) -> None:
    with LmdbStore(tmp_path / "db") as s:
        s.write("k", b"snapshot")
        with s.read_view("k") as view:

            def child() -> None:
                # re-opening would abort the parent's reader in the shared lock table
                with pytest.raises(StorageException, match="spawn"):
                    s.write("from-child", b"x")

            proc = multiprocessing.get_context("fork").Process(target=child)
            proc.start()
            proc.join(60)
            assert proc.exitcode == 0
            for i in range(20):  # the parent's snapshot stays intact under new writes
                s.write("k", bytes([i]) * 4096)
            assert bytes(view) == b"snapshot"
        assert not s.exists("from-child")
        assert bytes(s.read("k")) == bytes([19]) * 4096


def test_full_map_inside_read_view_fails_cleanly_instead_of_hanging(tmp_path: Path) -> None:
    with LmdbStore(tmp_path / "db", map_size=64 * 1024) as s:
        s.write("k", b"v")
        with s.read_view("k"), pytest.raises(LmdbMapFullError, match="read_view"):
            s.write("big", b"x" * (1 << 20))
        s.write("big", b"x" * (1 << 20))  # outside the block the map grows as usual
        assert len(bytes(s.read("big"))) == 1 << 20


def test_stores_on_one_path_share_one_environment(tmp_path: Path) -> None:
    a = LmdbStore(tmp_path / "db")
    b = LmdbStore(str(tmp_path / "x" / ".." / "db"))  # same directory, another spelling
    try:
        a.write("k", b"from a")
        assert bytes(b.read("k")) == b"from a"
        assert a._env() is b._env()  # LMDB forbids a second open of the same files
        a.close()
        b.write("k2", b"still usable after the other store closed")
        assert bytes(b.read("k2")).startswith(b"still")
    finally:
        a.close()
        b.close()
    with LmdbStore(tmp_path / "db") as c:  # re-open after every store closed
        assert bytes(c.read("k")) == b"from a"


def test_data_survives_reopen_through_uri(tmp_path: Path) -> None:
    uri = f"lmdb://{tmp_path}/db?map_size=1MB"
    with open_store(uri) as s:
        s.write("lib/sym", b"persisted")
    assert (tmp_path / "db" / "data.mdb").is_file()
    with open_store(uri) as s:
        assert bytes(s.read("lib/sym")) == b"persisted"


def test_read_view_is_zero_copy_and_scoped(tmp_path: Path) -> None:
    with LmdbStore(tmp_path / "db") as s:
        s.write("seg", b"columnar bytes")
        with s.read_view("seg") as view:
            assert view.readonly
            assert bytes(view[:8]) == b"columnar"
        with pytest.raises(ValueError):  # released when the block ends: no use-after-free
            bytes(view)
        assert isinstance(s.read("seg"), bytes)  # the default read is an owned copy


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc")
def test_released_view_leaves_the_resident_set_and_reads_again(tmp_path: Path) -> None:
    """A large read that releases its views does not keep the file resident in the process
    (the pages stay in the OS page cache), and the bytes read back intact afterwards."""
    size = 64 << 20
    payload = os.urandom(1 << 20) * (size >> 20)
    with LmdbStore(tmp_path / "db") as s:
        s.write("big", payload)
        with s.read_view("big") as view:  # resident while mapped and touched
            before = _rss_kib()
            assert bytes(view[-16:]) == payload[-16:] and bytes(view) == payload
            touched = _rss_kib()
        with s.read_view("big", release=True) as view:
            assert bytes(view) == payload
        after = _rss_kib()
        assert touched - before > 32 << 10 or touched > after  # the map counted while touched
        assert touched - after > 32 << 10, (before, touched, after)  # ... and left when released
        assert s.read("big") == payload
        with s.read_view("big", release=True) as view:  # pages map again on the next use
            assert bytes(view) == payload


def test_listing_lazily_does_not_block_map_growth(tmp_path: Path) -> None:
    with LmdbStore(tmp_path / "db", map_size=256 * 1024) as s:
        s.write_many({f"l/{i:05d}": b"" for i in range(2500)})
        it = s.list_keys("l/")
        first = [next(it) for _ in range(10)]
        for i in range(40):  # forces several map doublings mid-iteration
            s.write(f"big/{i}", b"b" * 100_000)
        rest = list(it)
        assert len(first) + len(rest) == 2500
        assert sorted(first + rest) == [f"l/{i:05d}" for i in range(2500)]


def test_lmdb_errors_are_translated(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_bytes(b"not an lmdb directory")
    s = LmdbStore(not_a_dir / "db")
    with pytest.raises(StorageException, match="cannot create"):
        s.write("k", b"v")
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "data.mdb").write_bytes(b"\x00garbage" * 1000)
    with pytest.raises(StorageException) as info2:
        LmdbStore(corrupt).read("k")
    assert isinstance(info2.value.__cause__, lmdb.Error)


def test_bad_keys_are_refused_clearly(tmp_path: Path) -> None:
    with LmdbStore(tmp_path / "db") as s:
        with pytest.raises(UserInputException, match="NUL"):
            s.write("a\x00b", b"")
        with pytest.raises(UserInputException):
            s.write("", b"")
        with pytest.raises(KeyNotFoundException):
            s.read("never")


def test_closed_store_refuses_use(tmp_path: Path) -> None:
    s = LmdbStore(tmp_path / "db")
    s.write("k", b"v")
    s.close()
    with pytest.raises(StorageException, match="closed"):
        s.read("k")


def test_a_store_deleted_while_open_is_opened_afresh(tmp_path: Path) -> None:
    """A directory deleted (and made again) while a connection still has it open: a new
    connection opens what is on disk now, not the deleted file; closing the old connection
    leaves the new one working."""
    import shutil

    import pandas as pd

    from arcticlite import Arctic

    path = tmp_path / "s"
    old_store = LmdbStore(str(path))  # the only connection to the first store
    old_store.write("key", b"old")
    shutil.rmtree(path)
    assert old_store.read("key") == b"old"  # (it still reads the deleted file)
    new = Arctic(f"lmdb://{path}")
    assert new.list_libraries() == []
    new.create_library("lib").write("sym", pd.DataFrame({"a": [3]}))
    old_store.close()
    assert new["lib"].read("sym").data["a"].tolist() == [3]
    assert Arctic(f"lmdb://{path}")["lib"].read("sym").data["a"].tolist() == [3]
