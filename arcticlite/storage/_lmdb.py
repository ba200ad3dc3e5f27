"""LMDB backend (``lmdb://path``): one memory-mapped B+tree file on one machine.

Concurrency model
-----------------
* One ``lmdb.Environment`` per absolute path per process, shared by every :class:`LmdbStore`
  opened on that path (LMDB forbids opening the same files twice in one process) and
  reference-counted. The registry is keyed by ``(pid, path)``: a forked child never uses the
  parent's environment; it closes its inherited copy and re-opens.
* LMDB serialises writers across threads *and* processes with its lock file; readers are MVCC
  snapshots and never block. Every operation runs in its own short transaction, so no
  transaction is ever shared between threads.
* The map grows by itself: a ``MapFullError`` doubles the map and retries the whole
  transaction; a ``MapResizedError`` (another process grew it) adopts the new size. Resizing
  needs no transaction open in this process, so operations hold a shared lock and a resize
  takes it exclusively.

Keys longer than LMDB's 511-byte limit are stored under ``<first 440 bytes>\\0<sha256>`` with
the real key kept inside the value, so they still sort under their prefix and list correctly.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import mmap
import os
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import lmdb
import numpy as np

from arcticlite.exceptions import (
    ArcticException,
    CorruptDataError,
    KeyNotFoundException,
    LmdbMapFullError,
    PermissionException,
    StorageException,
    UserInputException,
)
from arcticlite.storage._base import Buffer, KVStore
from arcticlite.storage._lmdb_bounds import MapBounds

__all__ = ["DEFAULT_MAP_SIZE", "LmdbStore"]

#: Initial map size of a new environment; it doubles whenever it fills up.
DEFAULT_MAP_SIZE = 1 << 30
_MAX_READERS = 1024
_LIST_PAGE = 1000
_MAX_GROWTHS = 48
# How long a new transaction waits for a pending map resize before going ahead anyway.
_YIELD_TO_RESIZE = 0.05
# Keys up to LMDB's default limit are stored as they are. The threshold is fixed (not read
# from the build) so that the on-disk layout never depends on how liblmdb was compiled.
_MAX_KEY = 511
# Long keys: a stored key is at most _LONG_PREFIX + 1 + 32 = 473 bytes (< 511).
_LONG_PREFIX = 440
_LONG_MARK = b"\x00"
_LEN = struct.Struct("<I")

T = TypeVar("T")


class _WouldDeadlock(Exception):
    """A resize was needed while this thread itself keeps a transaction open."""


class _SharedExclusiveLock:
    """Many shared holders (transactions) or one exclusive holder (a map resize).

    A pending resize makes new shared holders wait, but only briefly
    (:data:`_YIELD_TO_RESIZE`), so that a steady stream of readers cannot starve it, while a
    thread that already holds the lock (e.g. inside a ``read_view``) never waits: nested use
    can delay a resize, but cannot deadlock.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._shared = 0
        self._exclusive = False
        self._waiting = 0
        self._local = threading.local()

    def acquire_shared(self) -> None:
        local = self._local
        depth = getattr(local, "depth", 0)
        with self._cond:
            deadline = 0.0
            while self._exclusive or (self._waiting and not depth):
                if self._exclusive:
                    self._cond.wait()
                    continue
                now = time.monotonic()
                if not deadline:
                    deadline = now + _YIELD_TO_RESIZE
                elif now >= deadline:
                    break
                self._cond.wait(deadline - now)
            self._shared += 1
        local.depth = depth + 1

    def release_shared(self) -> None:
        self._local.depth -= 1
        with self._cond:
            self._shared -= 1
            if not self._shared:
                self._cond.notify_all()

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        self.acquire_shared()
        try:
            yield
        finally:
            self.release_shared()

    def held_by_this_thread(self) -> bool:
        return bool(getattr(self._local, "depth", 0))

    def holders_at_fork(self) -> int:
        """Shared holders (open transactions) recorded; read without the lock, for a child
        process right after fork (the threads that held it do not exist there)."""
        return self._shared

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        if self.held_by_this_thread():
            raise _WouldDeadlock  # this thread holds a shared lock (an open read_view)
        with self._cond:
            self._waiting += 1
            try:
                while self._exclusive or self._shared:
                    self._cond.wait()
            finally:
                self._waiting -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()


class _EnvHandle:
    """One open environment of this process, shared by the stores on its path."""

    def __init__(self, path: str, map_size: int, read_only: bool = False) -> None:
        self.path = path
        self.pid = os.getpid()
        self.refs = 0
        self.read_only = read_only
        self.lock = _SharedExclusiveLock()
        try:
            self.env: Any = self._open(path, map_size, read_only, lock=True)
        except lmdb.Error as exc:
            if not read_only or not _denied(exc):
                raise _translate(exc, f"cannot open LMDB environment at {path!r}") from exc
            # a read-only directory: its lock file cannot be opened for writing, so the
            # environment is read without LMDB's reader table (no process may write it meanwhile)
            try:
                self.env = self._open(path, map_size, read_only, lock=False)
            except lmdb.Error as exc2:
                raise _translate(exc2, f"cannot open LMDB environment at {path!r}") from exc2
        # free reader slots left by processes that died inside a read transaction (kill -9),
        # which would otherwise pin old pages and make the file grow
        with contextlib.suppress(lmdb.Error):
            self.env.reader_check()
        limit = self.env.max_key_size()
        if limit < _MAX_KEY:
            self.env.close()
            raise StorageException(f"this liblmdb supports keys of {limit} bytes; need {_MAX_KEY}")
        self.generation = 0  # bumped by every resize in this process
        self.map = MapBounds(self.path, lambda: self.env.stat()["psize"])  # values are checked against it
        self.file = _file_id(path)

    def current(self) -> bool:
        """Whether the data file at the path is still the one this environment opened (not
        deleted, nor replaced by another store since)."""
        return self.file is not None and _file_id(self.path) == self.file

    @staticmethod
    def _open(path: str, map_size: int, read_only: bool, lock: bool) -> Any:
        return lmdb.open(path, map_size=map_size, subdir=True, readonly=read_only, writemap=False,
                         max_readers=_MAX_READERS, max_dbs=0, max_spare_txns=0, lock=lock,
                         readahead=False, create=not read_only)

    def map_size(self) -> int:
        return int(self.env.info()["map_size"])

    def begin(self, write: bool = False, buffers: bool = False) -> Any:
        """A transaction; a read transaction is never behind the last commit on disk.

        LMDB readers take their snapshot from the last-committed-transaction counter in the
        shared lock file, which a writer moves *after* writing its meta page. A writer killed
        between the two (kill -9 during the synchronous meta write) leaves the commit on disk
        but the counter behind: until the next write transaction repairs it, every reader of an
        environment opened before the kill sees the state before that commit, and a decision
        made on that stale view (gc, the cleanup after a delete) is then applied to the real
        one -- deleting the segments of the version it could not see. So a read transaction
        that starts behind the newest meta page makes the repair first: it takes the writer
        lock for an empty write transaction (LMDB recovers a dead writer's lock and moves the
        counter to the meta page; a live writer inside that window finishes first).
        """
        env = self.env
        if write or self.read_only:  # a write transaction takes the lock (and repairs) itself
            return env.begin(write=write, buffers=buffers)
        last = env.info()["last_txnid"]
        txn = env.begin(buffers=buffers)
        if txn.id() >= last:
            return txn
        txn.abort()
        env.begin(write=True).abort()  # catch up: see the docstring
        return env.begin(buffers=buffers)


_registry: dict[tuple[int, str], _EnvHandle] = {}
_registry_lock = threading.Lock()
# Environments inherited through fork() while one of our transactions was open: closing them
# would abort the parent's transaction in the shared reader table, so they are kept (never
# closed) and their paths refused in this process.
_unsafe_after_fork: dict[str, _EnvHandle] = {}


def _after_fork_in_child() -> None:
    # A child must not use its parent's environment, and py-lmdb refuses a second open of
    # the same files, so the inherited copy is closed first. That is safe only when no
    # transaction was open at fork time (closing aborts open transactions, and a read
    # transaction's reader slot is shared with the parent).
    global _registry_lock
    _registry_lock = threading.Lock()
    for handle in list(_registry.values()):
        if handle.lock.holders_at_fork() == 0:
            with contextlib.suppress(Exception):
                handle.env.close()
        else:
            _unsafe_after_fork[handle.path] = handle
    _registry.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _file_id(path: str) -> tuple[int, int] | None:
    """(device, inode) of the store's data file, None where there is none."""
    try:
        st = os.stat(os.path.join(path, "data.mdb"))
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _acquire(path: str, map_size: int, read_only: bool = False) -> _EnvHandle:
    key = (os.getpid(), path)
    with _registry_lock:
        if path in _unsafe_after_fork:
            raise StorageException(
                f"the LMDB environment at {path!r} was inside a transaction in another thread "
                "when this process was forked, so it cannot be re-opened safely here; start "
                "worker processes with multiprocessing's 'spawn' (or fork while no LMDB "
                "operation is running)"
            )
        handle = _registry.get(key)
        if handle is not None and not handle.current():
            # the directory was deleted (or another store put in its place) while this process
            # had it open: a new connection opens what is there now, not the unlinked file;
            # connections already open keep theirs until they close
            handle = None
        if handle is None:
            handle = _EnvHandle(path, map_size, read_only)
            _registry[key] = handle
        elif handle.read_only and not read_only:  # a read-only store may share a writable one
            raise PermissionException(
                f"the LMDB environment at {path!r} is open read-only in this process "
                "(Arctic(..., read_only=True)); close that connection before opening it for writing")
        handle.refs += 1
        return handle


def _release(handle: _EnvHandle) -> None:
    with _registry_lock:
        if handle.pid != os.getpid():
            return
        if handle.refs == 1 and handle.lock.held_by_this_thread():
            raise StorageException("leave the read_view block before closing the store")
        handle.refs -= 1
        if handle.refs > 0:
            return
        if _registry.get((handle.pid, handle.path)) is handle:  # (not a newer one on the path)
            _registry.pop((handle.pid, handle.path))
        # under the registry lock, so that a concurrent open of this path waits for the close
        with handle.lock.exclusive(), contextlib.suppress(Exception):
            handle.env.close()


_MADV_DONTNEED = 4
_PAGE = mmap.PAGESIZE
_RELEASE_MIN = 1 << 20
try:
    _LIBC: Any = ctypes.CDLL(None, use_errno=True)
    _LIBC.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
except (OSError, AttributeError):  # pragma: no cover - no libc madvise on this platform
    _LIBC = None


def _drop_pages(view: memoryview) -> None:
    """Take the whole pages inside ``view`` (a read-only, file-backed map region) out of the
    resident set; the next access maps them again from the page cache (a minor fault).
    Values under 1 MiB are left alone: the saving would not pay for the system call."""
    if _LIBC is None or view.nbytes < _RELEASE_MIN or sys.platform != "linux":
        return
    start = int(np.frombuffer(view, dtype=np.uint8).ctypes.data)
    lo = -(-start // _PAGE) * _PAGE
    hi = (start + view.nbytes) // _PAGE * _PAGE
    if hi > lo:
        _LIBC.madvise(lo, hi - lo, _MADV_DONTNEED)


def _denied(exc: BaseException) -> bool:
    text = str(exc)
    return "Permission denied" in text or "EACCES" in text or "Read-only file system" in text \
        or isinstance(exc, PermissionError)


#: LMDB's own findings of a damaged file (MDB_CORRUPTED, MDB_PAGE_NOTFOUND, MDB_PANIC, MDB_INVALID)
_DAMAGED = (lmdb.CorruptedError, lmdb.PageNotFoundError, lmdb.PanicError, lmdb.InvalidError)


def _translate(exc: BaseException, what: str, path: str | None = None) -> ArcticException:
    """The arcticlite error for ``exc``; LMDB's findings of a damaged file while reading or
    writing the store at ``path`` are a ``CorruptDataError`` naming the store (a file that is
    not an LMDB file at all stays a ``StorageException`` from the open)."""
    if path is not None and isinstance(exc, _DAMAGED):
        where = f" at {path!r}" if path not in what else ""
        return CorruptDataError(f"{what}: the LMDB file{where} is damaged (LMDB said {type(exc).__name__}: {exc}); "
                                "restore the store from a backup")
    if isinstance(exc, lmdb.MapFullError):
        return LmdbMapFullError(f"{what}: the LMDB map could not grow ({exc})")
    if _denied(exc):
        return PermissionException(f"{what}: permission denied ({exc})")
    return StorageException(f"{what}: LMDB error {type(exc).__name__}: {exc}")


class LmdbStore(KVStore):
    """A key-value store in an LMDB environment at ``<path>/data.mdb``.

    Parameters
    ----------
    path : str
        Directory of the environment; created if missing. Made absolute.
    map_size : int, optional
        Initial map size in bytes (default 1 GiB). The map doubles automatically when full,
        so this is only a starting reservation of address space.
    read_only : bool
        Open the environment read-only: nothing is created, every write raises
        :class:`PermissionException` before touching the file, and a directory the process
        cannot write (or a read-only file system) can be read.

    Notes
    -----
    Safe from many threads and many processes on one host (never on a network filesystem).
    :meth:`commit` is atomic: every key lands in one write transaction or none does.
    :meth:`read` returns ``bytes``; :meth:`read_view` lends a zero-copy ``memoryview`` that is
    valid only inside its ``with`` block. Values are not checksummed by LMDB: callers that
    need integrity must checksum what they store.
    """

    atomic_commit = True

    def __init__(self, path: str | os.PathLike[str], map_size: int | None = None, *, read_only: bool = False) -> None:
        self.path = os.path.abspath(os.fspath(path))
        self.read_only = read_only
        if map_size is not None and (not isinstance(map_size, int) or map_size <= 0):
            raise UserInputException(f"map_size must be a positive int, got {map_size!r}")
        self.map_size = int(map_size) if map_size is not None else DEFAULT_MAP_SIZE
        self._handle: _EnvHandle | None = None
        self._handle_lock = threading.Lock()
        self._closed = False

    def __repr__(self) -> str:
        return f"LmdbStore({self.path!r}{', read_only=True' if self.read_only else ''})"

    # -- environment ---------------------------------------------------------------------------
    def _env(self) -> _EnvHandle:
        handle = self._handle
        if handle is not None and handle.pid == os.getpid():
            return handle
        if self._closed:
            raise StorageException(f"{self!r} is closed")
        with self._handle_lock:
            handle = self._handle
            if handle is None or handle.pid != os.getpid():
                if self.read_only:
                    if not os.path.isfile(os.path.join(self.path, "data.mdb")):
                        raise StorageException(
                            f"no LMDB store at {self.path!r}; a read-only store is never created: check the path")
                else:
                    try:
                        os.makedirs(self.path, exist_ok=True)
                    except OSError as exc:
                        raise _translate(exc, f"cannot create LMDB directory {self.path!r}") from exc
                handle = _acquire(self.path, self.map_size, self.read_only)
                self._handle = handle
            return handle

    def _run(self, write: bool, fn: Callable[[Any], T], what: str, buffers: bool = False) -> T:
        """Run ``fn(txn)`` in a fresh transaction, growing or adopting the map as needed.

        With ``buffers=True`` values are zero-copy views valid only inside ``fn``.
        """
        if write and self.read_only:
            raise PermissionException(f"{what} refused: the LMDB store at {self.path!r} was opened read-only")
        handle = self._env()
        lock = handle.lock
        for _ in range(_MAX_GROWTHS):
            generation = handle.generation
            try:
                lock.acquire_shared()
                try:
                    with handle.begin(write=write, buffers=buffers) as txn:
                        return fn(txn)
                finally:
                    lock.release_shared()  # before any resize below
            except lmdb.MapFullError as exc:
                self._grow(handle, generation, exc, what)
            except lmdb.MapResizedError as exc:
                self._adopt(handle, exc, what)
            except lmdb.Error as exc:
                raise _translate(exc, what, self.path) from exc
        raise LmdbMapFullError(f"{what}: the LMDB map at {self.path!r} could not grow enough")

    @staticmethod
    def _grow(handle: _EnvHandle, generation: int, exc: BaseException, what: str) -> None:
        try:
            with handle.lock.exclusive():
                if handle.generation == generation:  # not grown by another thread meanwhile
                    handle.env.set_mapsize(handle.map_size() * 2)
                    handle.generation += 1
        except _WouldDeadlock:
            raise LmdbMapFullError(
                f"{what}: the LMDB map is full and cannot grow while this thread holds a "
                "read_view open; leave the read_view block first"
            ) from exc
        except lmdb.Error as exc2:
            raise _translate(exc2, what) from exc

    @staticmethod
    def _adopt(handle: _EnvHandle, exc: BaseException, what: str) -> None:
        try:
            with handle.lock.exclusive():
                handle.env.set_mapsize(0)
                handle.generation += 1
        except _WouldDeadlock:
            raise StorageException(
                f"{what}: another process grew the LMDB map; this thread must leave its "
                "read_view block before the new size can be adopted"
            ) from exc
        except lmdb.Error as exc2:
            raise _translate(exc2, what) from exc

    # -- key / value layout --------------------------------------------------------------------
    def _key(self, key: str) -> tuple[bytes, bool]:
        if not isinstance(key, str):
            raise UserInputException(f"keys must be str, got {type(key).__name__}")
        if "\x00" in key:
            raise UserInputException(f"key {key!r} contains a NUL character")
        raw = key.encode("utf-8")
        if not raw:
            raise UserInputException("the empty string is not a valid key")
        if len(raw) <= _MAX_KEY:
            return raw, False
        return raw[:_LONG_PREFIX] + _LONG_MARK + hashlib.sha256(raw).digest(), True

    @staticmethod
    def _wrap(key: str, data: Buffer, long: bool) -> Buffer:
        if not long:
            return data
        raw = key.encode("utf-8")
        return b"".join((_LEN.pack(len(raw)), raw, bytes(data)))

    @staticmethod
    def _unwrap(value: Any, long: bool) -> Any:
        if not long:
            return value
        (n,) = _LEN.unpack_from(value, 0)
        return memoryview(value)[_LEN.size + n :]

    def _real_key(self, stored: bytes, value: Any) -> str:
        try:
            if _LONG_MARK not in stored:
                return stored.decode("utf-8")
            (n,) = _LEN.unpack_from(value, 0)
            if _LEN.size + n > len(value):
                raise ValueError("the stored name runs past its value")
            return bytes(memoryview(value)[_LEN.size : _LEN.size + n]).decode("utf-8")
        except (UnicodeDecodeError, ValueError, struct.error) as exc:
            # arcticlite writes UTF-8 names only: a flipped bit in the key (LMDB checksums neither
            # keys nor values) or in a long key's stored name
            raise CorruptDataError(f"a key {stored[:200]!r} of the LMDB file at {self.path!r} is damaged ({exc}); "
                                   "restore the store from a backup") from exc

    def _get(self, txn: Any, key: str, cur: Any = None) -> Any:
        """The value of ``key`` in ``txn`` (a buffer transaction: a view valid until the txn
        ends) or ``None``.

        Looked up with a cursor, not ``Transaction.get``: py-lmdb's ``get`` touches every page
        of the value before returning it, and a value whose length field a flipped bit made
        longer reaches past the end of the file, where the memory map has nothing behind it
        (SIGBUS: the interpreter dies). The value's bounds are checked against the file first.
        """
        stored, long = self._key(key)
        cur = txn.cursor() if cur is None else cur
        if not cur.set_key(stored):
            return None
        self._check_node(cur.key(), key)  # before py-lmdb is asked for (and touches) the value
        value = cur.value()
        return self._unwrap(value, long)

    def _check_node(self, stored_key: Any, key: str) -> None:
        """Check that the value of the node ``stored_key`` views lies inside the file, before
        it is touched (:meth:`~._lmdb_bounds.MapBounds.check`)."""
        handle = self._handle
        if handle is not None:
            handle.map.check(stored_key, key)

    # -- reads ---------------------------------------------------------------------------------
    def read(self, key: str) -> bytes:
        """Return the value of ``key`` as ``bytes`` (one copy out of the map)."""

        def fn(txn: Any) -> bytes:
            value = self._get(txn, key)
            if value is None:
                raise KeyNotFoundException(f"key {key!r} not found in {self!r}")
            return bytes(value)

        return self._run(False, fn, f"read {key!r}", buffers=True)

    @contextlib.contextmanager
    def read_view(self, key: str, *, release: bool = False) -> Iterator[memoryview]:
        """Lend a zero-copy ``memoryview`` of the value of ``key`` for the ``with`` block.

        The view points into the memory map and is valid only inside the block (a read
        transaction stays open until it ends): copy what must outlive it. Keep blocks short,
        since an open reader pins old pages and delays map growth in this process.

        Raises
        ------
        KeyNotFoundException
            If ``key`` is absent.
        """
        handle = self._env()
        what = f"read {key!r}"
        for _ in range(_MAX_GROWTHS):
            try:
                with handle.lock.shared(), handle.begin(buffers=True) as txn:
                    value = self._get(txn, key)
                    if value is None:
                        raise KeyNotFoundException(f"key {key!r} not found in {self!r}")
                    view = memoryview(value)
                    try:
                        yield view
                    finally:
                        if release:
                            _drop_pages(view)
                        view.release()
                    return
            except lmdb.MapResizedError as exc:
                self._adopt(handle, exc, what)
            except lmdb.Error as exc:
                raise _translate(exc, what, self.path) from exc
        raise StorageException(f"{what}: the LMDB map kept changing size")

    def read_range(self, key: str, offset: int, length: int) -> bytes:
        """Return ``length`` bytes from ``offset`` (fewer at the end); copies only the range."""

        def fn(txn: Any) -> bytes:
            value = self._get(txn, key)
            if value is None:
                raise KeyNotFoundException(f"key {key!r} not found in {self!r}")
            return bytes(memoryview(value)[offset : offset + length])

        return self._run(False, fn, f"read_range {key!r}", buffers=True)

    def read_many(self, keys: Sequence[str]) -> list[Buffer]:
        """Read ``keys`` in one read transaction (a consistent snapshot)."""

        def fn(txn: Any) -> list[Buffer]:
            out: list[Buffer] = []
            cur = txn.cursor()
            for key in keys:
                value = self._get(txn, key, cur)
                if value is None:
                    raise KeyNotFoundException(f"key {key!r} not found in {self!r}")
                out.append(bytes(value))
            return out

        return self._run(False, fn, f"read_many of {len(keys)} keys", buffers=True)

    def exists(self, key: str) -> bool:
        stored = self._key(key)[0]
        return self._run(False, lambda txn: bool(txn.cursor().set_key(stored)), f"exists {key!r}", buffers=True)

    def list_keys(self, prefix: str = "") -> Iterator[str]:
        """Yield keys starting with ``prefix`` in byte order, a page per short read txn."""
        pb = prefix.encode("utf-8")
        n = min(len(pb), _LONG_PREFIX)
        seek = pb[:n]
        # Yield lazily; each page is one read transaction with a re-seek after the last key.
        last: bytes | None = None
        while True:

            def page(txn: Any, last: bytes | None = last) -> list[tuple[bytes, str]]:
                out: list[tuple[bytes, str]] = []
                cur = txn.cursor()
                if last is None:
                    if not cur.set_range(seek):
                        return out
                else:
                    if not cur.set_range(last):
                        return out
                    if cur.key() == last and not cur.next():
                        return out
                for k in cur.iternext(keys=True, values=False):  # values only of long keys (below)
                    stored = bytes(k)
                    if stored[:n] != seek:
                        break
                    if _LONG_MARK in stored:
                        self._check_node(k, stored.decode("utf-8", "replace"))
                        real = self._real_key(stored, cur.value())
                    else:
                        try:
                            real = stored.decode("utf-8")
                        except UnicodeDecodeError:
                            real = self._real_key(stored, None)  # raises CorruptDataError
                    out.append((stored, real if real.startswith(prefix) else ""))
                    if len(out) >= _LIST_PAGE:
                        break
                return out

            rows = self._run(False, page, f"list_keys {prefix!r}", buffers=True)
            for _, real in rows:
                if real:
                    yield real
            if len(rows) < _LIST_PAGE:
                return
            last = rows[-1][0]

    # -- writes --------------------------------------------------------------------------------
    def write(self, key: str, data: Buffer) -> None:
        stored, long = self._key(key)
        value = self._wrap(key, data, long)
        self._run(True, lambda txn: txn.put(stored, value), f"write {key!r}")

    def write_many(self, items: Mapping[str, Buffer]) -> None:
        """Write every item in one write transaction (so, here, atomically)."""
        rows = [(*self._key(k), k, v) for k, v in items.items()]

        def fn(txn: Any) -> None:
            for stored, long, key, data in rows:
                txn.put(stored, self._wrap(key, data, long))

        self._run(True, fn, f"write_many of {len(rows)} keys")

    def write_if_absent(self, key: str, data: Buffer) -> bool:
        stored, long = self._key(key)
        value = self._wrap(key, data, long)
        return bool(
            self._run(
                True,
                lambda txn: txn.put(stored, value, overwrite=False),
                f"write_if_absent {key!r}",
            )
        )

    def compare_and_swap(self, key: str, expected: Buffer | None, new: Buffer) -> bool:
        stored, long = self._key(key)
        value = self._wrap(key, new, long)
        want = None if expected is None else bytes(expected)

        def fn(txn: Any) -> bool:
            current = txn.get(stored)
            if want is None:
                if current is not None:
                    return False
            elif current is None or bytes(self._unwrap(current, long)) != want:
                return False
            txn.put(stored, value)
            return True

        return self._run(True, fn, f"compare_and_swap {key!r}")

    def delete(self, keys: Iterable[str]) -> None:
        stored = [self._key(k)[0] for k in keys]
        if not stored:
            return

        def fn(txn: Any) -> None:
            for k in stored:
                txn.delete(k)

        self._run(True, fn, f"delete of {len(stored)} keys")

    def commit(self, create: Mapping[str, Buffer], put: Mapping[str, Buffer]) -> bool:
        """Create ``create`` (all absent) and write ``put`` in one write transaction.

        Returns ``False`` and writes nothing if any key of ``create`` exists.
        """
        creates = [(*self._key(k), k, v) for k, v in create.items()]
        puts = [(*self._key(k), k, v) for k, v in put.items()]

        def fn(txn: Any) -> bool:
            for stored, _, _, _ in creates:
                if txn.get(stored) is not None:
                    return False
            for stored, long, key, data in creates + puts:
                txn.put(stored, self._wrap(key, data, long))
            return True

        return self._run(True, fn, "commit")

    def commit_many(self, commits: Sequence[tuple[Mapping[str, Buffer], Mapping[str, Buffer]]]) -> list[bool]:
        """:meth:`commit` of each ``(create, put)`` pair in one write transaction (one sync for
        all): a pair whose ``create`` keys exist writes nothing and gets False; the others land
        together."""
        rows = [([(*self._key(k), k, v) for k, v in create.items()],
                 [(*self._key(k), k, v) for k, v in put.items()]) for create, put in commits]

        def fn(txn: Any) -> list[bool]:
            won = []
            for creates, puts in rows:
                if any(txn.get(stored) is not None for stored, _, _, _ in creates):
                    won.append(False)
                    continue
                for stored, long, key, data in creates + puts:
                    txn.put(stored, self._wrap(key, data, long))
                won.append(True)
            return won

        return self._run(True, fn, f"commit of {len(rows)} writes")

    def key_count(self) -> int:
        """The entry count of LMDB's main B-tree (from its meta page; keys of any length count
        once)."""
        return int(self._run(False, lambda txn: txn.stat()["entries"], "key count"))

    # -- lifecycle -----------------------------------------------------------------------------
    def close(self) -> None:
        """Release this store's share of the environment (closed when the last one goes).

        Idempotent. Must not be called inside this store's own :meth:`read_view` block.
        """
        with self._handle_lock:
            handle = self._handle
            if handle is not None and handle.pid == os.getpid():
                _release(handle)
            self._handle = None
            self._closed = True
