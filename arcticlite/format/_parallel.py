"""A shared thread pool for page encode/decode (numpy, zstd and xxhash release the GIL)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from arcticlite import config

_POOL: ThreadPoolExecutor | None = None
_POOL_SIZE = 0
_LOCK = threading.Lock()
MIN_PARALLEL_BYTES = 1 << 20
"""Below this many bytes of work, jobs run inline (pool hand-off costs more than it saves)."""


_THREADS = max(1, min(8, os.cpu_count() or 1))


def threads() -> int:
    """Worker threads for page jobs: the ``VersionStore.NumCPUThreads`` setting
    (:mod:`arcticlite.config`), else the CPU count (read once: it costs a syscall), at most 8."""
    configured = config.get_config_int("VersionStore.NumCPUThreads")
    return configured if configured is not None and configured > 0 else _THREADS


def _pool() -> ThreadPoolExecutor:
    global _POOL, _POOL_SIZE
    with _LOCK:
        n = threads()
        if _POOL is None or _POOL_SIZE != n:  # a changed setting starts a new pool
            if _POOL is not None:
                _POOL.shutdown(wait=False)
            _POOL, _POOL_SIZE = ThreadPoolExecutor(max_workers=n, thread_name_prefix="fermion"), n
        return _POOL


def _run_group(group: Sequence[Callable[[], Any]]) -> list[Any]:
    return [job() for job in group]


def run_jobs(jobs: Sequence[Callable[[], Any]], weights: Sequence[int], *,
             parallel: bool = True) -> list[Any]:
    """Run ``jobs`` and return their results in order.

    Jobs are grouped into about ``4 × threads`` groups of similar total weight (bytes), so
    10,000 tiny page jobs cost a few dozen pool hand-offs, not 10,000.
    """
    total = int(sum(weights))
    n = threads()
    if not parallel or n == 1 or len(jobs) < 2 or total < MIN_PARALLEL_BYTES:
        return [job() for job in jobs]
    target = max(1, total // (4 * n))
    groups: list[list[Callable[[], Any]]] = [[]]
    acc = 0
    for job, w in zip(jobs, weights, strict=True):
        if acc >= target and groups[-1]:
            groups.append([])
            acc = 0
        groups[-1].append(job)
        acc += int(w)
    pool = _pool()
    futures = [pool.submit(_run_group, g) for g in groups]
    # every job ends before this returns or raises: a job that fails (a corrupt page) must not
    # leave others reading the caller's buffers (a memory map the caller may close or rewrite)
    wait(futures)
    out: list[Any] = []
    for f in futures:
        out.extend(f.result())
    return out
