"""What a writer optimises its encodings for: the smallest file, or the fastest read.

The encoders choose among cascades and codecs by size. A writer created with
``optimize_for="read"`` narrows that choice to encodings that decode fast, at some cost in
bytes:

- LZ4 is the only general-purpose codec offered (it decodes several times faster than ZSTD;
  a page is still stored uncompressed unless LZ4 saves :data:`~._enc_wrap.MIN_SAVING`);
- run-length encoding needs runs of :attr:`Policy.min_avg_run` values on average (short runs
  cost a ``numpy.repeat`` that is slower than decoding the values themselves).

``optimize_for="write"`` skips the choice altogether: every page is stored plain (or constant),
uncompressed: the cheapest file to write and to read, and the largest (for small, short-lived
files such as the open tail segment of a symbol that receives many small appends).

Both choices only restrict the candidates: files are the same format and every reader decodes
them. The policy is per thread, set by the writer around each page job (page jobs run on the
writer's thread or in the shared pool).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["DISTINCT_FILES", "POLICIES", "READ", "REUSE", "REUSE_GAIN", "REUSE_MAX", "REUSE_SEARCHED", "REUSE_SLACK", "SIZE", "WRITE", "Policy", "current",
           "dictionary_key", "run_with"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Policy:
    """Restrictions on the encodings a writer may choose."""

    name: str
    #: Whether ZSTD may wrap a page (else LZ4 only).
    zstd: bool
    #: Run-length encoding is considered only for at least this average run length.
    min_avg_run: int
    #: Whether cascades and codecs are tried at all (else plain or constant pages only).
    cascades: bool = True
    #: Choices of scheme, mode and codec shared by the files of one bulk write, by stream:
    #: a stream reuses its choice for :data:`REUSE_SEARCHED` pages (a dictionary or a plain
    #: float stream :data:`REUSE`) before searching again (None: every page searches). Not part
    #: of the policy's identity.
    memo: dict[Any, Any] | None = field(default=None, compare=False)


#: Pages that reuse a stream's remembered encoding choice before it is searched again.
REUSE = 15
#: A numeric stream's searched choice (its cascade recipe, mode and codec) holds this many pages
#: before the next search: a search costs about a replayed page's time ten times over (~1-2.5 ms
#: on 16,384 values), a choice that stops suiting the data is caught sooner by
#: :data:`REUSE_SLACK`, and searching again at 15 pages found nothing better on the benchmark
#: shapes (5M quotes: 7 % less encoding time, 0.1 % fewer bytes).
REUSE_SEARCHED = 64
#: A numeric stream whose search gains nothing (its page is not :data:`REUSE_GAIN` times the
#: size of the last choice's, or smaller) reuses the choice for four times as many pages,
#: up to this many: stationary data is searched a few times per write, not every
#: :data:`REUSE_SEARCHED` pages.
REUSE_MAX = 240
REUSE_GAIN = 0.97
#: A reused choice whose pages come out this many times larger (per value) than the page it
#: was chosen on, two pages in a row, is searched again on the next page.
REUSE_SLACK = 1.15
#: A memo holding this key (True) serves files of unrelated data (the symbols of a batch of
#: writes): a page its reused choice does not suit (:data:`REUSE_SLACK`) is searched at once,
#: not from the next page on (a symbol of one page has no next page), and float pages always
#: take the incompressibility test (a stream remembered as plain is not assumed plain).
DISTINCT_FILES = "distinct-files"


SIZE = Policy("size", zstd=True, min_avg_run=4)
READ = Policy("read", zstd=False, min_avg_run=16)
WRITE = Policy("write", zstd=False, min_avg_run=16, cascades=False)
POLICIES = {p.name: p for p in (SIZE, READ, WRITE)}

_LOCAL = threading.local()


def current() -> Policy:
    """The policy of the page job running on this thread (``size`` outside any job)."""
    return getattr(_LOCAL, "policy", SIZE)


def run_with(policy: Policy, job: Callable[[], T]) -> T:
    """Run ``job`` on this thread under ``policy``."""
    prev: Any = getattr(_LOCAL, "policy", SIZE)
    _LOCAL.policy = policy
    try:
        return job()
    finally:
        _LOCAL.policy = prev


def dictionary_key(memo: dict[Any, Any], dictionary: Any) -> tuple[Any, ...]:
    """The key under which a bulk write's ``memo`` keeps what its files made of ``dictionary``
    (a pyarrow array: an encoded dictionary, a Bloom filter): the type, the buffers' addresses,
    the offset and the length. The memo holds the dictionary from then on, so no other
    dictionary can take those addresses while the memo lives."""
    key = (str(dictionary.type), tuple(b.address if b is not None else 0 for b in dictionary.buffers()),
           dictionary.offset, len(dictionary))
    memo.setdefault(("held", key), dictionary)
    return key
