"""Buffers for decoded values, taken from Arrow's memory pool.

``numpy.empty`` of a large array maps fresh pages from the OS, which the kernel zero-fills on
first touch and takes back when the array dies; a read repeated in a loop pays that page fault
per 4 KiB every time (and, with several threads, the TLB shootdowns of giving them back). The
Arrow pool keeps freed memory for the next allocation, so decoding into it costs only the
writes.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

#: Results at least this large come in 4 KiB pages (:func:`empty`), which the threads decoding
#: them map just before they write them (:func:`populate`).
PREFAULT_MIN_BYTES = 32 << 20
#: Results at least this large come from numpy in 4 KiB pages and go back to the OS when they
#: die; smaller ones from Arrow's pool (:func:`empty`). Measured on the 2-vCPU VM (fair
#: harness, alternated, 3 runs): a 10M x 10 float64 read (one 800 MB block) took 0.27-1.83 s
#: with huge pages (median 1.51 s: the kernel compacting memory for them) and 0.50-0.52 s in
#: 4 KiB pages.
SMALL_PAGES_MIN_BYTES = 256 << 20

POOL_MIN_BYTES = 1 << 20
"""Smaller arrays come from numpy: malloc's heap already reuses them, and many mid-sized pool
allocations measured slower (a 10,000-column read: 0.8-2.7 s from the pool, 0.7-0.9 s from
numpy)."""


def empty(n: int, dtype: Any, *, result_bytes: int | None = None) -> np.ndarray:
    """An uninitialised, writable 1-D array of ``n`` items (object arrays come from numpy).

    Where it comes from depends on the size of the result it is part of (``result_bytes``,
    by default its own size), so that all arrays of one result are treated alike:

    - :data:`SMALL_PAGES_MIN_BYTES` or more: numpy, in 4 KiB pages, and given back to the
      OS when the result dies (a process does not keep hundreds of MB it no longer uses);
    - :data:`PREFAULT_MIN_BYTES` or more: Arrow's pool, advised against huge pages, so that a
      process reading again reuses the pages the pool kept;
    - smaller: Arrow's pool as it comes (numpy below :data:`POOL_MIN_BYTES`).

    Why 4 KiB pages from 32 MiB on: on the machines measured, Arrow's transparent huge pages
    cost more than they save in a fresh process. The kernel takes a 2 MiB page from memory it
    has handed back to the hypervisor, and zeroing it there costs ~4 ms (800 MB: 1.4-1.7 s of
    system time, against 0.24-0.29 s in 4 KiB pages, whose small free blocks are never handed
    back). Fresh processes on the 2-vCPU VM, alternated, system time of a read: 10M x 10
    float64 (an 800 MB block, an 80 MB index) 0.45-0.55 s with the index in huge pages,
    0.33-0.40 s without; 5M mixed rows 0.21 s against 0.105 s; 5M quotes 0.215 s against
    0.103 s; 20,000 x 1,000 float64 0.077 s against 0.072 s.
    """
    dt = np.dtype(dtype)
    nbytes = n * dt.itemsize
    if dt.hasobject or nbytes < POOL_MIN_BYTES:
        return np.empty(n, dtype=dt)
    total = nbytes if result_bytes is None else max(result_bytes, nbytes)
    if total >= SMALL_PAGES_MIN_BYTES:  # a very large result: 4 KiB pages, mapped by its decoders
        with small_pages():
            return np.empty(n, dtype=dt)
    buf = pa.allocate_buffer(nbytes)
    if total >= PREFAULT_MIN_BYTES:
        _no_huge_pages(buf.address, buf.size)  # pages the pool already mapped stay as they are
    return np.frombuffer(buf, dtype=dt)


_ADVICE_SETTER = getattr(getattr(getattr(np, "_core", None), "multiarray", None), "_set_madvise_hugepage", None)
_ADVICE_LOCK = threading.Lock()
_advice_users = 0
_advice_before = True


@contextlib.contextmanager
def small_pages() -> Iterator[None]:
    """Within: numpy gives no transparent-huge-page advice for its large arrays.

    numpy advises the kernel to back arrays of 4 MiB or more with 2 MiB pages. Where the
    kernel then compacts memory on the first fault (THP ``defrag=madvise``, the common
    default), that costs far more than filling the pages: on the 2-vCPU benchmark VM a 5M-row
    write spent 0.38 s of system time in it, against 0.10 s without the advice. The arrays an
    operation makes (factorized codes, index values, transposed copies) live only while it
    runs, so 4 KiB pages serve them better. numpy's flag is process-wide: it is off while any
    operation is inside, and restored by the last one out.
    """
    global _advice_users, _advice_before
    if _ADVICE_SETTER is None:
        yield
        return
    with _ADVICE_LOCK:
        if _advice_users == 0:
            _advice_before = bool(_ADVICE_SETTER(False))
        _advice_users += 1
    try:
        yield
    finally:
        with _ADVICE_LOCK:
            _advice_users -= 1
            if _advice_users == 0:
                _ADVICE_SETTER(_advice_before)


THP_DEFRAG = "/sys/kernel/mm/transparent_hugepage/defrag"
KEEP_ADVICE_ENV = "ARCTICLITE_HUGEPAGES"


def _compacts_on_fault(path: str = THP_DEFRAG) -> bool:
    """Whether the kernel compacts memory when an advised huge page is first touched (THP
    ``defrag`` set to ``always`` or ``madvise``, the usual default)."""
    try:
        with open(path) as f:
            mode = f.read()
    except OSError:
        return False
    return "[always]" in mode or "[madvise]" in mode


def avoid_compaction_stalls() -> bool:
    """Turn numpy's transparent-huge-page advice off for this process where the kernel would
    stall on it (see :func:`small_pages`); ``ARCTICLITE_HUGEPAGES=1`` keeps it. Only page
    sizes change, never a value. Returns whether it was turned off.

    Measured on a 5M-row write (2-vCPU VM): 0.30-0.35 s of system time with the advice,
    0.07-0.13 s without, the same user time. Scoping it to each operation does not work: the
    advice sticks to address ranges that are handed out again later. The process's own
    huge pages (which Arrow's allocator uses for the blocks a read decodes into) are left on:
    with them a fresh process read 5M x 10 float64 in 0.12 s (median; a run in five stalled
    for ~1 s while the kernel compacted), without them in 0.39 s every time (fair harness,
    docs/benchmarks.md)."""
    if _ADVICE_SETTER is None or os.environ.get(KEEP_ADVICE_ENV, "") not in ("", "0"):
        return False
    if not _compacts_on_fault():
        return False
    _ADVICE_SETTER(False)
    return True


#: Whether importing arcticlite turned numpy's huge-page advice off (see avoid_compaction_stalls).
NUMPY_ADVICE_OFF = avoid_compaction_stalls()


# -- malloc: keep freed segment-sized buffers for the next one ------------------------------------
MALLOC_ENV = "ARCTICLITE_MALLOC_TUNING"
#: Allocations below this come from malloc's heap (reused) instead of fresh mappings.
MMAP_THRESHOLD = 32 << 20
#: Free memory at the top of the heap kept for reuse, up to this much.
TRIM_THRESHOLD = 128 << 20
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def keep_freed_buffers() -> bool:
    """Make glibc's malloc reuse freed buffers of up to :data:`MMAP_THRESHOLD` bytes instead of
    unmapping them; returns whether it did.

    A write hands a segment-sized buffer (a few MB) from the encoder to the store for every
    segment, and LMDB copies each value into pages it allocates for the transaction and frees
    at commit. By default glibc maps each such buffer afresh and unmaps it when freed, so every
    4 KiB of every segment costs a page fault, twice: measured here, writing 800 MB of
    encoded segments to LMDB took 194,000 page faults and 0.84-1.64 s of system time, against
    3,900 faults and 0.21-0.22 s with the buffers kept (mmap threshold 32 MiB, trim threshold
    128 MiB). The cost is that up to :data:`TRIM_THRESHOLD` of freed memory stays with the
    process. Left alone where it is not glibc, where ``ARCTICLITE_MALLOC_TUNING=0`` is set,
    or where the user tuned malloc through its own environment variables."""
    if os.environ.get(MALLOC_ENV, "") == "0":
        return False
    if any(k in os.environ for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")) or \
            "malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    import platform

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


#: Whether importing arcticlite made malloc keep freed segment buffers (see keep_freed_buffers).
MALLOC_TUNED = keep_freed_buffers()


# -- first touch of a result's pages on another core ----------------------------------------------
_MADV_POPULATE_WRITE = 23  # Linux 5.14+
_MADV_NOHUGEPAGE = 15
_PAGE = 4096


def _madvise() -> Any:
    import ctypes
    import platform

    if platform.system() != "Linux":
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


_MADVISE = _madvise()


def _no_huge_pages(addr: int, nbytes: int) -> None:
    """Advise the whole pages inside ``[addr, addr + nbytes)`` against transparent huge pages
    (pages already mapped stay as they are)."""
    if _MADVISE is None:
        return
    lo = -(-addr // _PAGE) * _PAGE
    hi = (addr + nbytes) // _PAGE * _PAGE
    if hi > lo:
        _MADVISE(lo, hi - lo, _MADV_NOHUGEPAGE)


def populate(arrays: Iterable[np.ndarray]) -> int:
    """Map the whole pages inside each of ``arrays`` writable now (``MADV_POPULATE_WRITE``),
    without writing a byte; returns the bytes populated.

    Called by the thread that is about to write the arrays: one system call maps a range's
    pages for about 60 % of the system time that first-touch faults on them cost (800 MB in
    4 KiB pages on the 2-vCPU VM: 0.24 s against 0.38-0.42 s), and the zeroed pages are still
    in that core's cache when they are written. Does nothing where the call does not exist."""
    if _MADVISE is None:
        return 0
    done = 0
    for a in arrays:
        addr = a.ctypes.data
        lo = -(-addr // _PAGE) * _PAGE
        hi = (addr + a.nbytes) // _PAGE * _PAGE
        if hi <= lo:
            continue
        if _MADVISE(lo, hi - lo, _MADV_POPULATE_WRITE) != 0:
            return done  # unsupported (EINVAL) or out of memory: the writer faults them itself
        done += hi - lo
    return done


def prefault(ranges: Iterator[tuple[int, int]], stop: threading.Event) -> int:
    """Map the pages of the memory ``ranges`` (address, bytes) writable, in order, until
    ``stop`` is set; returns the bytes populated.

    A large read decodes into fresh memory, and its first touch (the kernel zeroing each page,
    on a VM also the host backing it) costs more than the decoding on the machines measured.
    Such results come in 4 KiB pages (:func:`empty`): with the transparent huge pages of
    Arrow's pool, a 10M x 10 float64 read spent 1.2-2.0 s of system time on a loaded 2-vCPU VM
    (huge pages come from memory the kernel has handed back to the hypervisor, or must
    compact), against 0.4-0.5 s in 4 KiB pages. Run on another thread just ahead of the
    decoder, ``MADV_POPULATE_WRITE`` does that work on a second core without writing a byte:
    a page the decoder already wrote is left as it is, so the two never race on contents.
    Does nothing where the call does not exist (not Linux, or a kernel older than 5.14)."""
    if _MADVISE is None:
        return 0
    done = 0
    for addr, nbytes in ranges:
        if stop.is_set():
            break
        lo = -(-addr // _PAGE) * _PAGE  # whole pages inside the range only
        hi = (addr + nbytes) // _PAGE * _PAGE
        if hi <= lo:
            continue
        if _MADVISE(lo, hi - lo, _MADV_POPULATE_WRITE) != 0:
            break  # unsupported (EINVAL) or out of memory: the decoder faults them itself
        done += hi - lo
    return done
