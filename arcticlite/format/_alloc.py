"""Buffers for decoded values, taken from Arrow's memory pool.

``numpy.empty`` of a large array maps fresh pages from the OS, which the kernel zero-fills on
first touch and takes back when the array dies; a read repeated in a loop pays that page fault
per 4 KiB every time (and, with several threads, the TLB shootdowns of giving them back). The
Arrow pool keeps freed memory for the next allocation, so decoding into it costs only the
writes.
"""

from __future__ import annotations

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
