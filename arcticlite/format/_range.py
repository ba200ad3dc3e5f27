"""Range reading: every byte Fermion reads goes through a :class:`RangeReader`.

A range reader answers ``(offset, length) -> bytes`` requests, serves them from a tail
prefetch when it can (footer + CIT + schema in one request for small files), and coalesces
nearby ranges into one request (IO coalescing, seed 003).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from arcticlite.exceptions import FormatEOFError, UserInputException

DEFAULT_PREFETCH = 64 * 1024
DEFAULT_GAP = 1 << 20
"""Data ranges closer than this are fetched in one request (remote sources)."""
LOCAL_GAP = 64 * 1024
"""Gap for local files and in-memory sources, where small requests are cheap."""
MMAP_MAX = 256 * 1024
"""Local-file requests up to this size are served from a memory map (no syscall)."""
META_GAP = 4 * 1024
"""Metadata ranges closer than this are fetched in one request."""

RangeFn = Callable[[int, int], Any]


class RangeReader:
    """Bounds-checked, counting, prefetching reader over a byte source.

    Parameters
    ----------
    source
        ``bytes`` / ``bytearray`` / ``memoryview`` (read zero-copy), a path, a binary file
        object with ``seek``/``read``, or a callable ``(offset, length) -> bytes``.
    size
        Total size in bytes; required for a callable source.
    prefetch
        Bytes read from the end of the file by the first request (:meth:`prefetch_tail`).

    Attributes
    ----------
    requests, bytes_requested
        Number of requests sent to the underlying source and the bytes they asked for.
    """

    def __init__(self, source: Any, *, size: int | None = None, prefetch: int = DEFAULT_PREFETCH) -> None:
        self._buf: memoryview | None = None
        self._mm: mmap.mmap | None = None
        self._fn: RangeFn | None = None
        self._file: Any = None
        self._owned = False
        if isinstance(source, bytes | bytearray | memoryview):
            self._buf = memoryview(source).cast("B") if isinstance(source, memoryview) else memoryview(source)
            self.size = len(self._buf)
        elif hasattr(source, "__array_interface__") or hasattr(source, "__buffer__") and not callable(source):
            self._buf = memoryview(source).cast("B")
            self.size = len(self._buf)
        elif isinstance(source, str | os.PathLike):
            self._file = open(Path(source), "rb", buffering=0)  # noqa: SIM115 - closed by close()
            self._owned = True
            self.size = os.fstat(self._file.fileno()).st_size
            self._mm = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if self.size else None
        elif callable(source):
            if size is None:
                raise UserInputException("a callable range source needs size=")
            self._fn = source
            self.size = int(size)
        elif hasattr(source, "read") and hasattr(source, "seek"):
            self._file = source
            self.size = source.seek(0, os.SEEK_END)
        else:
            raise UserInputException(f"cannot read a Fermion file from {type(source).__name__}")
        self.gap = DEFAULT_GAP if self._fn is not None else LOCAL_GAP
        """Default coalescing gap for this source."""
        if size is not None and int(size) != self.size:
            raise UserInputException(f"size={size} but the source holds {self.size} bytes")
        self.prefetch = int(prefetch)
        self.requests = 0
        self.bytes_requested = 0
        self._tail_off = self.size
        self._tail: memoryview = memoryview(b"")

    # -------------------------------------------------------------- primitive
    def _fetch(self, offset: int, length: int) -> memoryview:
        self.requests += 1
        self.bytes_requested += length
        if self._buf is not None:
            return self._buf[offset : offset + length]
        if self._fn is not None:
            data = self._fn(offset, length)
            mv = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
        elif self._mm is not None and length <= MMAP_MAX:
            mv = memoryview(self._mm)[offset : offset + length]
        elif self._owned:
            out = np.empty(length, dtype=np.uint8)  # no zero fill, unlike bytearray
            n = os.preadv(self._file.fileno(), [out.data], offset) if length else 0
            mv = out.data[:n]
        else:
            self._file.seek(offset)
            mv = memoryview(self._file.read(length))
        if len(mv) != length:
            raise FormatEOFError(f"short read at {offset}: asked {length} bytes, got {len(mv)}")
        return mv

    @property
    def can_read_into(self) -> bool:
        """True for local files: :meth:`read_into` scatters a range into caller buffers."""
        return self._owned and self._file is not None

    def read_into(self, offset: int, bufs: Sequence[np.ndarray]) -> None:
        """Read consecutive bytes at ``offset`` straight into ``bufs`` (one ``preadv``)."""
        length = sum(b.nbytes for b in bufs)
        if offset < 0 or offset + length > self.size:
            raise FormatEOFError(f"range [{offset}, {offset + length}) is outside the file")
        self.requests += 1
        self.bytes_requested += length
        n = os.preadv(self._file.fileno(), [b.data.cast("B") for b in bufs], offset)
        if n != length:
            raise FormatEOFError(f"short read at {offset}: asked {length} bytes, got {n}")

    @property
    def in_memory(self) -> bool:
        """True for a bytes-like source: every read is a zero-copy slice."""
        return self._buf is not None

    def cheap(self, offset: int) -> bool:
        """True when bytes from ``offset`` on are already in memory (a zero-copy source, or
        inside the tail prefetch): reading them costs no request."""
        return self._buf is not None or offset >= self._tail_off

    def prefetch_tail(self, length: int | None = None) -> memoryview:
        """Read the last ``length`` bytes (default ``prefetch``) once and keep them."""
        length = min(self.size, self.prefetch if length is None else length)
        if self.size - length < self._tail_off:
            self._tail = self._fetch(self.size - length, length)
            self._tail_off = self.size - length
        return self._tail

    def read(self, offset: int, length: int) -> memoryview:
        """Bytes ``[offset, offset + length)``; FormatEOFError when outside the file."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise FormatEOFError(f"range [{offset}, {offset + length}) is outside the file "
                                 f"of {self.size} bytes")
        if offset >= self._tail_off:
            s = offset - self._tail_off
            return self._tail[s : s + length]
        return self._fetch(offset, length)

    def read_many(self, ranges: Sequence[tuple[int, int]], gap: int | None = None) -> list[memoryview]:
        """Read many ranges, merging those closer than ``gap`` bytes into one request."""
        if self._buf is not None:  # zero-copy source: every range is a slice, nothing to merge
            buf, size = self._buf, self.size
            res = []
            for o, n in ranges:
                if o < 0 or n < 0 or o + n > size:
                    raise FormatEOFError(f"range [{o}, {o + n}) is outside the file of {size} bytes")
                res.append(buf[o : o + n])
                self.bytes_requested += n
            self.requests += len(ranges)
            return res
        gap = self.gap if gap is None else gap
        out: list[memoryview] = [memoryview(b"")] * len(ranges)
        if not ranges:
            return out
        order = sorted(range(len(ranges)), key=lambda i: ranges[i][0])
        for i in order:
            o, n = ranges[i]
            if o < 0 or n < 0 or o + n > self.size:
                raise FormatEOFError(f"range [{o}, {o + n}) is outside the file of {self.size} bytes")
        groups: list[list[int]] = []
        start = end = -1
        for i in order:
            o, n = ranges[i]
            if groups and o <= end + gap and o >= start:
                groups[-1].append(i)
                end = max(end, o + n)
            else:
                groups.append([i])
                start, end = o, o + n
        for g in groups:
            lo = min(ranges[i][0] for i in g)
            hi = max(ranges[i][0] + ranges[i][1] for i in g)
            buf = self.read(lo, hi - lo)
            for i in g:
                o, n = ranges[i]
                out[i] = buf[o - lo : o - lo + n]
        return out

    def close(self) -> None:
        """Close what this reader opened (memoryviews into a map stay valid: CPython keeps the
        map open while views exist... so the map is left to the garbage collector)."""
        if self._owned and self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> RangeReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iter_chunks(seq: Sequence[Any], n: int) -> Iterable[Sequence[Any]]:
    for i in range(0, len(seq), n):
        yield seq[i : i + n]
