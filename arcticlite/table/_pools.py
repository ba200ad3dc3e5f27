"""The engine's thread pools: segment encode/decode, and storage I/O.

Pools are objects handed to the data path, not module globals: a :class:`~arcticlite.table.
TableEngine` owns one :class:`Pools` (by default the process-wide one from :func:`shared`,
so that many libraries in one process do not multiply threads), and a test or an embedding
application can give an engine pools of its own size.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from arcticlite import config

#: Threads the data path plans for (at least 2: encode and write overlap even on one core).
THREADS = max(2, os.cpu_count() or 2)
#: Threads for work that is mostly Python and numpy calls under the GIL (decoding a read's
#: segments into pandas blocks, encoding a write's segments): one on machines with two cores or
#: fewer, where a second such thread only trades the GIL with the first.
GIL_BOUND_THREADS = THREADS if (os.cpu_count() or 1) > 2 else 1


@dataclass(frozen=True, slots=True)
class Pools:
    """Thread pools of the data path.

    Attributes
    ----------
    threads : int
        Cores the data path plans for; encodes in flight are ``2 * threads``.
    decode_threads : int
        Threads that decode one read's segments into pandas blocks (1 on machines with two
        cores or fewer, where decode threads only contend for the GIL).
    encode_threads : int
        Segments of one write encoded at once (1 on machines with two cores or fewer: an
        encode is Python and numpy calls on one page at a time, and two of them hand the GIL
        to each other after every call -- on two cores a 5M-row quote write took ~10 % longer
        and ~45 % more CPU with two than with one; the other core still writes to storage).
    """

    threads: int = THREADS
    decode_threads: int = GIL_BOUND_THREADS
    encode_threads: int = GIL_BOUND_THREADS
    _work: ThreadPoolExecutor = field(default=None, repr=False)  # type: ignore[assignment]
    _io: ThreadPoolExecutor = field(default=None, repr=False)  # type: ignore[assignment]
    _batch: ThreadPoolExecutor = field(default=None, repr=False)  # type: ignore[assignment]
    _local_batch: ThreadPoolExecutor = field(default=None, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self._work is None:
            object.__setattr__(self, "_work", ThreadPoolExecutor(
                max_workers=1 if self.threads <= 1 else max(4, self.threads * 2),
                thread_name_prefix="arcticlite-seg"))
        if self._io is None:
            object.__setattr__(self, "_io", ThreadPoolExecutor(max_workers=4, thread_name_prefix="arcticlite-io"))
        if self._batch is None:
            object.__setattr__(self, "_batch", ThreadPoolExecutor(max_workers=8, thread_name_prefix="arcticlite-batch"))
        if self._local_batch is None:
            object.__setattr__(self, "_local_batch", ThreadPoolExecutor(
                max_workers=max(1, self.threads), thread_name_prefix="arcticlite-local-batch"))

    @property
    def work(self) -> ThreadPoolExecutor:
        """CPU work: encoding and decoding segments (pyarrow codecs release the GIL)."""
        return self._work

    @property
    def io(self) -> ThreadPoolExecutor:
        """Storage requests: batched writes, read-ahead, ranged metadata reads."""
        return self._io

    @property
    def batch(self) -> ThreadPoolExecutor:
        """Whole operations of a batch call (``write_batch``, ``read_batch``, ...), one per symbol."""
        return self._batch

    @property
    def local_batch(self) -> ThreadPoolExecutor:
        """Whole operations of a batch call on a local store (LMDB, memory): one thread per
        core. Such an operation waits only on its commit's fsync; more threads than cores only
        hand the GIL to each other (100 writes of 10,000 rows on two cores: ~0.95 s on 8
        threads, ~0.65 s on 2)."""
        return self._local_batch


_shared: Pools | None = None
_lock = threading.RLock()  # shared() may call single() while holding it


_single: Pools | None = None


def single() -> Pools:
    """Pools for work that may use one core (a Spark task: ``spark.task.cpus`` = 1): reads
    decode in the calling thread, writes encode one segment at a time; storage requests still
    overlap. Created on first use."""
    global _single
    if _single is None:
        with _lock:
            if _single is None:
                _single = Pools(threads=1, decode_threads=1, encode_threads=1)
    return _single


def configured_threads() -> int:
    """Cores the data path plans for: the ``VersionStore.NumCPUThreads`` setting
    (:mod:`arcticlite.config`) when set, else :data:`THREADS`."""
    n = config.get_config_int("VersionStore.NumCPUThreads")
    return n if n is not None and n > 0 else THREADS


def shared() -> Pools:
    """The process-wide pools, created on first use (and again when the
    ``VersionStore.NumCPUThreads`` setting changes; 1 thread: see :func:`single`)."""
    global _shared
    n = configured_threads()
    if _shared is None or _shared.threads != n:
        with _lock:
            if _shared is None or _shared.threads != n:
                _shared = single() if n == 1 else Pools(threads=n)
    return _shared
