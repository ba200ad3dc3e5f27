"""Decoding pages straight into Arrow buffers (DCS streams -> ``pa.Array.from_buffers``).

Decoding is planned in two passes so that page work can run in parallel: ``plan_*`` registers
one job per page with a :class:`Collector` (fetch, checksum, decode into a slice of the final
column buffer) and returns a *finisher*; after :meth:`Collector.run`, the finisher wraps the
buffers into an Arrow array zero-copy. Offsets and dictionary indices are validated before
any array is built, so corrupt values can never reach ``from_buffers``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import xxhash

from arcticlite.exceptions import ChecksumError, InvalidFileError
from arcticlite.format import _codec
from arcticlite.format import _layout as L
from arcticlite.format._meta import ColumnMeta
from arcticlite.format._parallel import run_jobs
from arcticlite.format._range import RangeReader
from arcticlite.format._types import BINARY, BOOL, BYTES, DICT, FIXED, FSL, LIST, NULL, STRUCT

Finisher = Callable[[], pa.Array]
PLAIN_ID = 0
"""Encoding id of a 'plain' blob (docs: _encodings.py): id byte, then the raw values."""


class Collector:
    """Page jobs of one read: ranges to fetch, then checksum + decode per page."""

    def __init__(self, budget: int = 1 << 62) -> None:
        self.budget = budget
        self.ranges: list[tuple[int, int]] = []
        self.jobs: list[tuple[int, int, Callable[[memoryview], None], int]] = []
        self.direct: dict[int, np.ndarray] = {}  # job -> final buffer slice of a plain page

    def reserve(self, nbytes: int) -> None:
        """Account for an output allocation; refuse reads that expand implausibly."""
        self.budget -= nbytes
        if self.budget < 0:
            raise InvalidFileError("decoded size is implausible for the file size; refusing to allocate")

    def add(self, page: np.void, fn: Callable[[memoryview], None],
            direct: np.ndarray | None = None) -> None:
        if direct is not None and int(page["encoding"]) == PLAIN_ID \
                and int(page["length"]) == 1 + direct.nbytes:
            self.direct[len(self.jobs)] = direct
        self.jobs.append((len(self.ranges), int(page["checksum"]), fn, int(page["raw_length"])))
        self.ranges.append((int(page["offset"]), int(page["length"])))

    def run(self, rr: RangeReader, *, gap: int | None = None, parallel: bool = True) -> None:
        direct = self.direct if rr.can_read_into else {}
        fetch = [r for k, r in enumerate(self.ranges) if k not in direct]
        got = iter(rr.read_many(fetch, gap=gap))
        mvs = [memoryview(b"") if k in direct else next(got) for k in range(len(self.ranges))]

        def job(i: int, cs: int, fn: Callable[[memoryview], None]) -> Callable[[], None]:
            def run() -> None:
                L.verify(mvs[i], cs, "page")
                fn(mvs[i])
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

        run_jobs([scatter(i, cs, direct[k]) if k in direct else job(i, cs, fn)
                  for k, (i, cs, fn, _) in enumerate(self.jobs)], [w for *_, w in self.jobs],
                 parallel=parallel)


def _state(cm: ColumnMeta, s: int, st: int) -> str:
    """'valid', 'null' or 'pages' for validity stream ``s`` in stripe ``st``."""
    d = int(cm.streams[s]["desc_type"])
    if d == L.DESC_USE_DEFAULT:
        return "valid"
    if d == L.DESC_FORCE_NULL:
        return "null"
    chunks = cm.chunks[s]
    assert chunks is not None
    f = int(chunks[st]["flags"])
    if f & L.FLAG_ALL_NULL:
        return "null"
    if f & L.FLAG_ALL_VALID:
        return "valid"
    return "pages"


def _bitmap_plan(pages: np.ndarray, coll: Collector, total: int, validity: bool = False
                 ) -> Callable[[], pa.Buffer]:
    coll.reserve(total)
    out = np.empty(total, dtype=np.uint8)
    pos = 0
    for p in pages:
        cnt = int(p["item_count"])
        nbytes = (cnt + 7) // 8
        if int(p["raw_length"]) != nbytes:
            raise InvalidFileError("bitmap page size does not match its item count")
        dst = out[pos : pos + cnt]
        ones = cnt - int(p["null_count"]) if validity else -1

        def fn(mv: memoryview, dst: np.ndarray = dst, cnt: int = cnt, nbytes: int = nbytes,
               ones: int = ones) -> None:
            raw = _codec.decode_fixed(mv, np.dtype(np.uint8), nbytes)
            dst[:] = np.unpackbits(raw, count=cnt, bitorder="little")
            if ones >= 0 and int(np.count_nonzero(dst)) != ones:
                raise InvalidFileError("validity bitmap disagrees with the page null count")

        coll.add(p, fn)
        pos += cnt
    return lambda: pa.py_buffer(np.packbits(out, bitorder="little"))


def _fixed_plan(pages: np.ndarray, coll: Collector, dtype: np.dtype[Any], total: int,
                per_item: int = 1) -> np.ndarray:
    coll.reserve(total * per_item * dtype.itemsize)
    out = np.empty(total * per_item, dtype=dtype)
    pos = 0
    for p in pages:
        cnt = int(p["item_count"]) * per_item
        if int(p["raw_length"]) != cnt * dtype.itemsize:
            raise InvalidFileError("page size does not match its item count")
        dst = out[pos : pos + cnt]

        def fn(mv: memoryview, dst: np.ndarray = dst, cnt: int = cnt) -> None:
            if len(mv) == 1 + cnt * dtype.itemsize and mv[0] == PLAIN_ID:
                dst[:] = np.frombuffer(mv, dtype=dtype, count=cnt, offset=1)  # plain: one memcpy
            else:
                _codec.decode_fixed(mv, dtype, cnt, out=dst)

        coll.add(p, fn, direct=dst)
        pos += cnt
    return out


def _binary_plan(pages: np.ndarray, coll: Collector, odt: np.dtype[Any], total: int
                 ) -> Callable[[], tuple[pa.Buffer, pa.Buffer]]:
    parts: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(pages)
    for k, p in enumerate(pages):
        cnt = int(p["item_count"])

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

    def finish() -> tuple[pa.Buffer, pa.Buffer]:
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


def select_pages(starts: np.ndarray, ends: np.ndarray, intervals: list[tuple[int, int]]) -> np.ndarray:
    mask = np.zeros(len(starts), dtype=bool)
    for a, b in intervals:
        mask |= (starts < b) & (ends > a)
    return np.flatnonzero(mask)


def plan_flat(cm: ColumnMeta, ni: int, st: int, coll: Collector,
              intervals: list[tuple[int, int]] | None) -> Callable[[], list[pa.Array]]:
    """Rows ``intervals`` (None: all) of a flat node in one stripe, as array slices."""
    node = cm.nodes[ni]
    n = int(cm.node_lengths[st, ni])
    full = intervals is None
    ivs = [(0, n)] if intervals is None else intervals
    if node.kind == NULL:
        return lambda: [pa.nulls(b - a) for a, b in ivs]
    vstate = _state(cm, node.streams[0], st)
    if vstate == "null" and n:
        return lambda: [pa.nulls(b - a, node.type) for a, b in ivs]
    ds = node.streams[1]
    dpages = cm.pages[ds][st]
    if n and not len(dpages):
        raise InvalidFileError("a non-null node has no data pages")
    starts = dpages["first_item"].astype(np.int64)
    counts = dpages["item_count"].astype(np.int64)
    sel = np.arange(len(dpages)) if full else select_pages(starts, starts + counts, ivs)
    pages = dpages[sel]
    total = int(counts[sel].sum())
    cov = np.concatenate([[0], np.cumsum(counts[sel])])
    vfin: Callable[[], pa.Buffer | None] = lambda: None  # noqa: E731
    if vstate == "pages":
        vpages = cm.pages[node.streams[0]][st]
        if not np.array_equal(vpages["item_count"], dpages["item_count"]):
            raise InvalidFileError("validity and data pages are not aligned")
        vfin = _bitmap_plan(vpages[sel], coll, total, validity=True)
    t = node.type
    if node.kind == FIXED:
        assert node.dtype is not None
        out = _fixed_plan(pages, coll, node.dtype, total)

        def build() -> pa.Array:
            return pa.Array.from_buffers(t, total, [vfin(), pa.py_buffer(out)])
    elif node.kind == BYTES:
        out = _fixed_plan(pages, coll, np.dtype(np.uint8), total, node.width)

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

    def finish() -> list[pa.Array]:
        arr = build()
        if full:
            return [arr]
        res = []
        sstarts = starts[sel]
        for a, b in ivs:
            j = int(np.searchsorted(sstarts, a, side="right")) - 1
            res.append(arr.slice(int(cov[j] + a - sstarts[j]), b - a))
        return res

    return finish


def plan_whole(cm: ColumnMeta, ni: int, st: int, coll: Collector) -> Finisher:
    """The whole node ``ni`` of stripe ``st`` (recursively), as one array."""
    node = cm.nodes[ni]
    n = int(cm.node_lengths[st, ni])
    t = node.type
    if node.kind in (FIXED, BYTES, BOOL, BINARY, DICT, NULL):
        fin = plan_flat(cm, ni, st, coll, None)
        return lambda: fin()[0]
    vstate = _state(cm, node.streams[0], st)
    if vstate == "null" and n:
        return lambda: pa.nulls(n, t)
    vfin: Callable[[], pa.Buffer | None] = lambda: None  # noqa: E731
    if vstate == "pages":
        vpages = cm.pages[node.streams[0]][st]
        vfin = _bitmap_plan(vpages, coll, n, validity=True)
    kids = [plan_whole(cm, c, st, coll) for c in node.children]
    clen = [int(cm.node_lengths[st, c]) for c in node.children]
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
        lpages = cm.pages[node.streams[1]][st]
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
