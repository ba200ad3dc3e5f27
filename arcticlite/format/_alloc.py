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
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

POOL_MIN_BYTES = 1 << 20
"""Smaller arrays come from numpy: malloc's heap already reuses them, and many mid-sized pool
allocations measured slower (a 10,000-column read: 0.8-2.7 s from the pool, 0.7-0.9 s from
numpy)."""


def empty(n: int, dtype: Any) -> np.ndarray:
    """An uninitialised, writable 1-D array of ``n`` items (object arrays come from numpy)."""
    dt = np.dtype(dtype)
    if dt.hasobject or n * dt.itemsize < POOL_MIN_BYTES:
        return np.empty(n, dtype=dt)
    return np.frombuffer(pa.allocate_buffer(n * dt.itemsize), dtype=dt)


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
_PR_SET_THP_DISABLE = 41


def _compacts_on_fault(path: str = THP_DEFRAG) -> bool:
    """Whether the kernel compacts memory when an advised huge page is first touched (THP
    ``defrag`` set to ``always`` or ``madvise``, the usual default)."""
    try:
        with open(path) as f:
            mode = f.read()
    except OSError:
        return False
    return "[always]" in mode or "[madvise]" in mode


def _disable_thp() -> bool:
    """``prctl(PR_SET_THP_DISABLE)``: this process gets no transparent huge pages."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):  # not Linux
        return False


def avoid_compaction_stalls() -> bool:
    """Give this process 4 KiB pages where the kernel would stall on huge ones (see
    :func:`small_pages`); ``ARCTICLITE_HUGEPAGES=1`` keeps huge pages. Only page sizes change,
    never a value. Returns whether it changed anything.

    Two sources of huge pages stall a fresh process: numpy's advice on its arrays of 4 MiB or
    more (its flag is turned off), and Arrow's default allocator (mimalloc), which backs the
    blocks a read decodes into with huge pages (the process's transparent huge pages are
    turned off). Measured on the 2-vCPU VM: a 5M-row write spent 0.30-0.35 s of system time
    with numpy's advice, 0.07-0.13 s without; a 400 MB read in a fresh process took 0.06 s
    when huge pages were at hand and 0.4-1.0 s when the kernel had to compact (3 runs in 5),
    and 0.21-0.23 s every time with 4 KiB pages; repeated reads in one process reuse the
    allocator's memory either way (0.05 s). Scoping this to each operation does not work: the
    advice sticks to address ranges handed out again later."""
    if os.environ.get(KEEP_ADVICE_ENV, "") not in ("", "0") or not _compacts_on_fault():
        return False
    if _ADVICE_SETTER is not None:
        _ADVICE_SETTER(False)
    _disable_thp()
    return True


#: Whether importing arcticlite turned huge pages off (see avoid_compaction_stalls).
NUMPY_ADVICE_OFF = avoid_compaction_stalls()
