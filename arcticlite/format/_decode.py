"""Decoding pages straight into Arrow buffers (DCS streams -> ``pa.Array.from_buffers``).

Decoding is planned in two passes so that page work can run in parallel: ``plan_*`` registers
one job per page with a :class:`Collector` (fetch, checksum, decode into a slice of the final
column buffer) and returns a *finisher*; after :meth:`Collector.run`, the finisher wraps the
buffers into an Arrow array zero-copy. Offsets and dictionary indices are validated before
any array is built, so corrupt values can never reach ``from_buffers``.

The ``*_into`` planners decode rows of a stripe into caller-owned numpy arrays instead
(:meth:`FermionReader.read_into`). Pages are the CMB's page tuples (``_meta.P_*`` positions).
"""

from __future__ import annotations

import functools
from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Any

import numpy as np
import pyarrow as pa
import xxhash

from arcticlite.exceptions import ChecksumError, InvalidFileError
from arcticlite.format import _codec, _enc_binary, _parallel
from arcticlite.format import _layout as L
from arcticlite.format._alloc import empty, populate
from arcticlite.format._encodings import decode_native
from arcticlite.format._meta import (
    C_FLAGS,
    P_CHECKSUM,
    P_ENCODING,
    P_FIRST,
    P_ITEMS,
    P_LENGTH,
    P_NULLS,
    P_OFFSET,
    P_RAW,
    ColumnMeta,
)
from arcticlite.format._objects import Labels
from arcticlite.format._range import RangeReader
from arcticlite.format._types import BINARY, BOOL, BYTES, DICT, FIXED, FSL, LIST, NULL, STRUCT

Finisher = Callable[[], pa.Array]
Page = tuple[Any, ...]
Pages = Sequence[Page]
PLAIN_ID = 0
"""Encoding id of a 'plain' blob (docs: _encodings.py): id byte, then the raw values."""
_U8 = np.dtype(np.uint8)


class Collector:
    """Page jobs of one read: ranges to fetch, then checksum + decode per page.

    With ``eager`` (an in-memory :class:`RangeReader`), a page is checksummed and decoded
    as soon as it is added: small reads skip the job list and the hand-over to the pool.
    """

    __slots__ = ("budget", "ranges", "jobs", "direct", "eager", "populate", "labels")

    def __init__(self, budget: int = 1 << 62, eager: RangeReader | None = None) -> None:
        self.budget = budget
        self.eager = eager
        self.populate = False  # page jobs into caller buffers map their pages first (read_into)
        self.labels: Labels | None = None  # object outputs are NULL-filled: fill by pointer
        self.ranges: list[tuple[int, int]] = []
        self.jobs: list[tuple[int, Callable[[memoryview], None], int]] = []  # checksum, fn, weight
        self.direct: dict[int, np.ndarray] | None = None  # job -> destination of a plain page

    def reserve(self, nbytes: int) -> None:
        """Account for an output allocation; refuse reads that expand implausibly."""
        self.budget -= nbytes
        if self.budget < 0:
            raise InvalidFileError("decoded size is implausible for the file size; refusing to allocate")

    def add(self, page: Page, fn: Callable[[memoryview], None],
            direct: np.ndarray | None = None) -> None:
        """Register a page job; ``direct``: the destination of the page's values, which a plain
        page of a local file is read straight into."""
        if self.eager is not None:
            mv = self.eager.read(page[P_OFFSET], page[P_LENGTH])
            if L.checksum(mv) != page[P_CHECKSUM]:
                L.verify(mv, page[P_CHECKSUM], "page")
            fn(mv)
            return
        if direct is not None and page[P_ENCODING] == PLAIN_ID \
                and page[P_LENGTH] == 1 + direct.nbytes:
            if self.direct is None:
                self.direct = {}
            self.direct[len(self.jobs)] = direct
        self.jobs.append((page[P_CHECKSUM], fn, page[P_RAW]))
        self.ranges.append((page[P_OFFSET], page[P_LENGTH]))

    def run(self, rr: RangeReader, *, gap: int | None = None, parallel: bool = True) -> None:
        if not self.jobs:
            return
        direct = self.direct if self.direct and rr.can_read_into else {}
        if direct:
            fetch = [r for k, r in enumerate(self.ranges) if k not in direct]
            got = iter(rr.read_many(fetch, gap=gap))
            mvs = [memoryview(b"") if k in direct else next(got) for k in range(len(self.ranges))]
        else:
            mvs = rr.read_many(self.ranges, gap=gap)
        weights = [w for *_, w in self.jobs]
        if not direct and (not parallel or len(self.jobs) < 2
                           or sum(weights) < _parallel.MIN_PARALLEL_BYTES):
            digest = L.checksum
            for (cs, fn, _), mv in zip(self.jobs, mvs, strict=True):
                if digest(mv) != cs:
                    L.verify(mv, cs, "page")
                fn(mv)
            return

        def job(mv: memoryview, cs: int, fn: Callable[[memoryview], None]) -> Callable[[], None]:
            def run() -> None:
                L.verify(mv, cs, "page")
                fn(mv)
            return run

        def scatter(i: int, cs: int, dst: np.ndarray) -> Callable[[], None]:
            def run() -> None:  # plain page: read the values straight into the column buffer
                head = np.empty(1, dtype=np.uint8)
                rr.read_into(self.ranges[i][0], [head, dst])
                h = xxhash.xxh3_64()
                h.update(head.data)
                h.update(dst.data)
                if h.intdigest() != cs:
                    raise ChecksumError("checksum mismatch in page; the segment is corrupt")
                if head[0] != PLAIN_ID:
                    raise InvalidFileError("page encoding differs from its page meta")
            return run

        _parallel.run_jobs([scatter(k, cs, direct[k]) if k in direct else job(mvs[k], cs, fn)
                            for k, (cs, fn, _) in enumerate(self.jobs)], weights,
                           parallel=parallel)


def _state(cm: ColumnMeta, s: int, st: int) -> str:
    """'valid', 'null' or 'pages' for validity stream ``s`` in stripe ``st``."""
    d = cm.sm[s][0]
    if d == L.DESC_USE_DEFAULT:
        return "valid"
    if d == L.DESC_FORCE_NULL:
        return "null"
    chunks = cm.clist[s]
    assert chunks is not None
    f = chunks[st][C_FLAGS]
    if f & L.FLAG_ALL_NULL:
        return "null"
    if f & L.FLAG_ALL_VALID:
        return "valid"
    return "pages"


def _bitmap_plan(pages: Pages, coll: Collector, total: int, validity: bool = False
                 ) -> Callable[[], pa.Buffer]:
    coll.reserve(total)
    out = np.empty(total, dtype=np.uint8)
    pos = 0
    for p in pages:
        cnt = p[P_ITEMS]
        nbytes = (cnt + 7) // 8
        if p[P_RAW] != nbytes:
            raise InvalidFileError("bitmap page size does not match its item count")
        dst = out[pos : pos + cnt]
        ones = cnt - p[P_NULLS] if validity else -1

        def fn(mv: memoryview, dst: np.ndarray = dst, cnt: int = cnt, nbytes: int = nbytes,
               ones: int = ones) -> None:
            raw = _codec.decode_fixed(mv, _U8, nbytes)
            dst[:] = np.unpackbits(raw, count=cnt, bitorder="little")
            if ones >= 0 and int(np.count_nonzero(dst)) != ones:
                raise InvalidFileError("validity bitmap disagrees with the page null count")

        coll.add(p, fn)
        pos += cnt
    return lambda: pa.py_buffer(np.packbits(out, bitorder="little"))


def _fixed_job(dst: np.ndarray, dtype: np.dtype[Any], cnt: int, fresh: bool = False
               ) -> Callable[[memoryview], None]:
    """Decode a FIXED page of ``cnt`` values into ``dst`` (contiguous); ``fresh``: map the
    pages of ``dst`` just before (:func:`~arcticlite.format.populate`)."""
    size = 1 + cnt * dtype.itemsize

    def fn(mv: memoryview) -> None:
        if fresh:
            populate((dst,))
        if len(mv) == size and mv[0] == PLAIN_ID:  # plain: one memcpy, outside the GIL
            np.copyto(dst.view(_U8), np.frombuffer(mv, _U8, size - 1, 1))
        elif not decode_native(mv, dst):
            _codec.decode_fixed(mv, dtype, cnt, out=dst)
    return fn


def _fixed_plan(pages: Pages, coll: Collector, dtype: np.dtype[Any], total: int,
                per_item: int = 1) -> np.ndarray:
    coll.reserve(total * per_item * dtype.itemsize)
    out = empty(total * per_item, dtype)
    isz = dtype.itemsize
    if len(pages) == 1:
        p = pages[0]
        if p[P_RAW] != len(out) * isz:
            raise InvalidFileError("page size does not match its item count")
        coll.add(p, _fixed_job(out, dtype, len(out)), direct=out)
        return out
    pos = 0
    for p in pages:
        cnt = p[P_ITEMS] * per_item
        if p[P_RAW] != cnt * isz:
            raise InvalidFileError("page size does not match its item count")
        dst = out[pos : pos + cnt]
        coll.add(p, _fixed_job(dst, dtype, cnt), direct=dst)
        pos += cnt
    return out


def _binary_plan(pages: Pages, coll: Collector, odt: np.dtype[Any], total: int
                 ) -> Callable[[], tuple[pa.Buffer, pa.Buffer]]:
    parts: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(pages)
    for k, p in enumerate(pages):
        cnt = p[P_ITEMS]

        def fn(mv: memoryview, k: int = k, cnt: int = cnt) -> None:
            offs, data = _codec.decode_binary(mv, cnt, odt)
            offs = np.asarray(offs)
            data = np.asarray(data).view(np.uint8)
            if len(offs) != cnt + 1 or (cnt >= 0 and len(offs) and int(offs[0]) != 0):
                raise InvalidFileError("binary page offsets have the wrong length or start")
            if int(offs[-1]) != len(data) or (cnt and int(np.diff(offs).min()) < 0):
                raise InvalidFileError("binary page offsets are not monotone within the data")
            parts[k] = (offs, data)

        coll.add(p, fn)

    return concat_binary(parts, odt, total)


def concat_binary(parts: Sequence[tuple[np.ndarray, np.ndarray] | None], odt: np.dtype[Any], total: int
                  ) -> Callable[[], tuple[pa.Buffer, pa.Buffer]]:
    """The finisher joining per-page ``(offsets from 0, data)`` parts (filled by page jobs)
    into one column's offsets (``odt``) and data buffers of ``total`` values."""

    def finish() -> tuple[pa.Buffer, pa.Buffer]:
        if len(parts) == 1 and parts[0] is not None and parts[0][0].dtype == odt:  # one page: as is
            o, d = parts[0]
            return pa.py_buffer(o), pa.py_buffer(d)
        offs_out = np.empty(total + 1, dtype=odt)
        offs_out[0] = 0
        datas = []
        pos, base = 0, 0
        for part in parts:
            assert part is not None
            o, d = part
            n = len(o) - 1
            np.add(o[1:], base, out=offs_out[pos + 1 : pos + 1 + n], casting="unsafe")
            base += len(d)
            pos += n
            datas.append(d)
        if odt == np.int32 and base > np.iinfo(np.int32).max:
            raise InvalidFileError("string data exceeds 2 GiB in a 32-bit offsets column")
        data = np.concatenate(datas) if len(datas) > 1 else datas[0] if datas else np.zeros(0, np.uint8)
        return pa.py_buffer(offs_out), pa.py_buffer(data)

    return finish


def select_pages(pages: Pages, intervals: Sequence[tuple[int, int]]) -> list[int]:
    """Indices of the pages holding any item of ``intervals`` (sorted, disjoint)."""
    out = []
    j, ni = 0, len(intervals)
    for k, p in enumerate(pages):
        s = p[P_FIRST]
        while j < ni and intervals[j][1] <= s:
            j += 1
        if j == ni:
            break
        if intervals[j][0] < s + p[P_ITEMS]:
            out.append(k)
    return out


def plan_flat(cm: ColumnMeta, ni: int, st: int, coll: Collector,
              intervals: list[tuple[int, int]] | None) -> Callable[[], list[pa.Array]]:
    """Rows ``intervals`` (None: all) of a flat node in one stripe, as array slices."""
    node = cm.nodes[ni]
    n = cm.nl[st][ni]
    full = intervals is None
    ivs = [(0, n)] if intervals is None else intervals
    if node.kind == NULL:
        return lambda: [pa.nulls(b - a) for a, b in ivs]
    vstate = _state(cm, node.streams[0], st)
    if vstate == "null" and n:
        return lambda: [pa.nulls(b - a, node.type) for a, b in ivs]
    ds = node.streams[1]
    dpages = cm.plist[ds][st]
    if n and not len(dpages):
        raise InvalidFileError("a non-null node has no data pages")
    sel = None if full else select_pages(dpages, ivs)
    pages = dpages if sel is None else [dpages[k] for k in sel]
    total = n if sel is None else sum(p[P_ITEMS] for p in pages)  # pages tile the chunk
    vfin: Callable[[], pa.Buffer | None] = lambda: None  # noqa: E731
    if vstate == "pages":
        vpages = cm.plist[node.streams[0]][st]
        if [p[P_ITEMS] for p in vpages] != [p[P_ITEMS] for p in dpages]:
            raise InvalidFileError("validity and data pages are not aligned")
        vfin = _bitmap_plan(vpages if sel is None else [vpages[k] for k in sel], coll, total,
                            validity=True)
    t = node.type
    if node.kind == FIXED:
        assert node.dtype is not None
        out = _fixed_plan(pages, coll, node.dtype, total)

        def build() -> pa.Array:
            return pa.Array.from_buffers(t, total, [vfin(), pa.py_buffer(out)])
    elif node.kind == BYTES:
        out = _fixed_plan(pages, coll, _U8, total, node.width)

        def build() -> pa.Array:
            return pa.Array.from_buffers(t, total, [vfin(), pa.py_buffer(out)])
    elif node.kind == BOOL:
        bfin = _bitmap_plan(pages, coll, total)

        def build() -> pa.Array:
            return pa.Array.from_buffers(t, total, [vfin(), bfin()])
    elif node.kind == BINARY:
        spec = cm.specs[ds]
        binfin = _binary_plan(pages, coll, spec.dtype, total)

        def build() -> pa.Array:
            ob, db = binfin()
            return pa.Array.from_buffers(t, total, [vfin(), ob, db])
    elif node.kind == DICT:
        assert node.dtype is not None
        out = _fixed_plan(pages, coll, node.dtype, total)
        child = plan_whole(cm, node.children[0], st, coll)

        def build() -> pa.Array:
            d = child()
            if total and (int(out.min()) < 0 or int(out.max()) >= max(len(d), 1)):
                if len(d) or vstate != "null":
                    raise InvalidFileError("dictionary index out of range")
            idx = pa.Array.from_buffers(pa.from_numpy_dtype(node.dtype), total,
                                        [vfin(), pa.py_buffer(out)])
            return pa.DictionaryArray.from_arrays(idx, d, ordered=t.ordered)
    else:  # pragma: no cover - guarded by FLAT_KINDS
        raise InvalidFileError(f"node kind {node.kind} is not flat")

    if full:
        return lambda: [build()]

    def finish() -> list[pa.Array]:
        arr = build()
        res = []
        sstarts = [p[P_FIRST] for p in pages]
        cov = [0, *accumulate(p[P_ITEMS] for p in pages)]
        for a, b in ivs:
            j = bisect_right(sstarts, a) - 1
            res.append(arr.slice(cov[j] + a - sstarts[j], b - a))
        return res

    return finish


def plan_whole(cm: ColumnMeta, ni: int, st: int, coll: Collector) -> Finisher:
    """The whole node ``ni`` of stripe ``st`` (recursively), as one array."""
    node = cm.nodes[ni]
    n = cm.nl[st][ni]
    t = node.type
    if node.kind in (FIXED, BYTES, BOOL, BINARY, DICT, NULL):
        fin = plan_flat(cm, ni, st, coll, None)
        return lambda: fin()[0]
    vstate = _state(cm, node.streams[0], st)
    if vstate == "null" and n:
        return lambda: pa.nulls(n, t)
    vfin: Callable[[], pa.Buffer | None] = lambda: None  # noqa: E731
    if vstate == "pages":
        vpages = cm.plist[node.streams[0]][st]
        vfin = _bitmap_plan(vpages, coll, n, validity=True)
    kids = [plan_whole(cm, c, st, coll) for c in node.children]
    clen = [cm.nl[st][c] for c in node.children]
    if node.kind == STRUCT:
        if any(c != n for c in clen):
            raise InvalidFileError("struct child length differs from the parent")
        return lambda: pa.Array.from_buffers(t, n, [vfin()], children=[k() for k in kids])
    if node.kind == FSL:
        if clen[0] != n * node.width:
            raise InvalidFileError("fixed-size list child has the wrong length")
        return lambda: pa.Array.from_buffers(t, n, [vfin()], children=[kids[0]()])
    if node.kind == LIST:
        assert node.dtype is not None
        lpages = cm.plist[node.streams[1]][st]
        if n and not len(lpages):
            raise InvalidFileError("list node without offsets pages")
        lengths = _fixed_plan(lpages, coll, node.dtype, n)

        def build() -> pa.Array:
            if n and int(lengths.min()) < 0:
                raise InvalidFileError("negative list length")
            offs = np.zeros(n + 1, dtype=node.dtype)
            np.cumsum(lengths, out=offs[1:])
            if int(offs[-1]) != clen[0] or (n and int(lengths.astype(np.int64).sum()) != clen[0]):
                raise InvalidFileError("list offsets do not match the child length")
            return pa.Array.from_buffers(t, n, [vfin(), pa.py_buffer(offs)], children=[kids[0]()])
        return build
    raise InvalidFileError(f"unknown node kind {node.kind}")  # pragma: no cover


# ----------------------------------------------------------------------------- into caller buffers
def overlapping(pages: Pages, lo: int, hi: int) -> list[tuple[Page, int, int]]:
    """``(page, first item, item count)`` of the pages holding items ``[lo, hi)``."""
    return [(p, p[P_FIRST], p[P_ITEMS]) for p in pages
            if p[P_FIRST] < hi and p[P_FIRST] + p[P_ITEMS] > lo]


def fixed_into(pages: Pages, coll: Collector, dtype: np.dtype[Any], lo: int, hi: int,
               dst: np.ndarray) -> None:
    """Items ``[lo, hi)`` of a stripe's FIXED pages, decoded into ``dst`` (``hi - lo`` values).

    A page inside the range decodes straight into its slice of ``dst`` (a plain page is one
    copy from the source, or one ``preadv`` into ``dst`` for local files); a page cut by the
    range edge copies its slice out of the source (plain) or out of a page-sized temporary.
    """
    isz = dtype.itemsize
    for p, first, cnt in overlapping(pages, lo, hi):
        if p[P_RAW] != cnt * isz:
            raise InvalidFileError("page size does not match its item count")
        a, b = max(lo, first), min(hi, first + cnt)
        target = dst[a - lo : b - lo]
        if b - a == cnt:
            coll.add(p, _fixed_job(target, dtype, cnt, coll.populate), direct=target)
            continue
        coll.reserve(cnt * isz)

        def edge(mv: memoryview, dst: np.ndarray = target, cnt: int = cnt, skip: int = a - first,
                 fresh: bool = coll.populate) -> None:
            if fresh:
                populate((dst,))
            if len(mv) == 1 + cnt * isz and mv[0] == PLAIN_ID:
                dst.data.cast("B")[:] = mv[1 + skip * isz : 1 + (skip + len(dst)) * isz]
            else:
                dst[:] = _codec.decode_fixed(mv, dtype, cnt)[skip : skip + len(dst)]

        coll.add(p, edge)


def bits_into(pages: Pages, coll: Collector, lo: int, hi: int, dst: np.ndarray,
              validity: bool) -> None:
    """Items ``[lo, hi)`` of a stripe's bitmap pages as 0/1 bytes into ``dst`` (uint8).

    ``validity``: check each page's set bits against its null count (as :func:`_bitmap_plan`).
    """
    for p, first, cnt in overlapping(pages, lo, hi):
        nbytes = (cnt + 7) // 8
        if p[P_RAW] != nbytes:
            raise InvalidFileError("bitmap page size does not match its item count")
        a, b = max(lo, first), min(hi, first + cnt)
        ones = cnt - p[P_NULLS] if validity else -1

        def fn(mv: memoryview, dst: np.ndarray = dst[a - lo : b - lo], cnt: int = cnt,
               nbytes: int = nbytes, ones: int = ones, skip: int = a - first,
               fresh: bool = coll.populate) -> None:
            if fresh:
                populate((dst,))
            raw = _codec.decode_fixed(mv, _U8, nbytes)
            bits = np.unpackbits(raw, count=cnt, bitorder="little")
            if ones >= 0 and int(np.count_nonzero(bits)) != ones:
                raise InvalidFileError("validity bitmap disagrees with the page null count")
            dst[:] = bits[skip : skip + len(dst)]

        coll.add(p, fn)


def _fixed_kernel(mv: memoryview, dtype: np.dtype[Any], count: int, out: np.ndarray,
                  depth: int) -> None:
    _codec.decode_fixed(mv, dtype, count, out=out)


def _check_offsets(offs: np.ndarray, data: np.ndarray, cnt: int) -> None:
    if len(offs) != cnt + 1 or int(offs[0]) != 0:
        raise InvalidFileError("binary page offsets have the wrong length or start")
    if int(offs[-1]) != len(data) or (cnt and _enc_binary.regular_width(offs) is None
                                      and int(np.diff(offs).min()) < 0):
        raise InvalidFileError("binary page offsets are not monotone within the data")


@functools.cache
def _take_objects() -> Any:
    """pandas' typed object take, imported on first use (None without pandas)."""
    try:
        from pandas._libs.algos import take_1d_object_object
    except ImportError:  # pragma: no cover - pandas is optional for the format itself
        return None
    return take_1d_object_object


def binary_into(pages: Pages, coll: Collector, lo: int, hi: int, dst: np.ndarray,
                atype: pa.DataType) -> None:
    """Items ``[lo, hi)`` of a stripe's BINARY pages as Python objects into ``dst`` (object).

    ``atype`` is ``pa.large_string()`` (str objects) or ``pa.large_binary()`` (bytes). A
    dictionary-encoded page converts only its dictionary to objects, then takes them by code:
    equal values of a page share one object and a page costs one ``numpy.take``. With
    ``coll.labels`` (``dst`` NULL-filled, see :mod:`._objects`), the pages of a column that
    share a dictionary share its objects, and the take writes addresses outside the GIL.
    """
    labels = coll.labels
    for p, first, cnt in overlapping(pages, lo, hi):
        a, b = max(lo, first), min(hi, first + cnt)

        def fn(mv: memoryview, dst: np.ndarray = dst[a - lo : b - lo], cnt: int = cnt,
               skip: int = a - first) -> None:
            codes, offs, data = _enc_binary.decode_binary_codes(mv, cnt, 0, _fixed_kernel)
            data = np.asarray(data).view(np.uint8)
            size = cnt if codes is None else len(offs) - 1
            _check_offsets(offs, data, size)

            def arrow() -> pa.Array:
                return pa.Array.from_buffers(atype, size, [None, pa.py_buffer(offs), pa.py_buffer(data)])

            if codes is None:
                dst[:] = arrow().slice(skip, len(dst)).to_numpy(zero_copy_only=False)
                return
            c = codes[skip : skip + len(dst)]  # unsigned, checked below ``size``
            if labels is not None:
                d = labels.objects(atype, offs, data, lambda: arrow().to_numpy(zero_copy_only=False))
                labels.take(d, c, dst)
                return
            objs = arrow().to_numpy(zero_copy_only=False)
            take = _take_objects()
            if take is not None:  # a typed loop: twice as fast as numpy's object take
                take(objs, c.astype(np.intp, copy=False), dst, None)
            else:
                np.take(objs, c, out=dst)

        coll.add(p, fn)
