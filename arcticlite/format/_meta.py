"""Reading and validating Fermion metadata: footer, CIT, name index, schema entries, CMBs.

Every block is checked (magic, version, checksum, bounds) before any field of it is trusted,
and every count is bounded by the file size before anything is allocated from it.

Metadata is parsed with :mod:`struct` into Python ints and tuples: a small segment's footer,
CIT entries and CMBs are a few hundred bytes, for which one ``unpack`` beats building numpy
structured arrays. The numpy views of a CMB (statistics, pruning) are built on first use.
Results that are pure functions of checksummed bytes (schema entries, schema metadata, small
name indexes) are memoised by those bytes, so the segments of one symbol, which repeat them,
parse them once.
"""

from __future__ import annotations

import dataclasses
import functools
import struct
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from arcticlite.exceptions import (
    ChecksumError,
    FormatEOFError,
    InvalidFileError,
    UnsupportedVersionError,
)
from arcticlite.format import _layout as L
from arcticlite.format._range import META_GAP, RangeReader
from arcticlite.format._types import Node, StreamSpec, build_nodes, deserialize_field

_FOOTER_INDEX = {name: k for k, name in enumerate(L.FOOTER_DTYPE.names or ())}

# positions in a page tuple (PAGE_DTYPE field order)
P_OFFSET, P_CHECKSUM, P_MIN, P_MAX, P_LENGTH, P_RAW, P_ITEMS, P_NULLS, P_FLAGS, P_ENCODING = range(10)
P_FIRST = 11
# positions in a chunk tuple (CHUNK_DTYPE field order)
C_ITEMS, C_NULLS, C_PAGES, C_FLAGS = 4, 5, 6, 8

NAME_TABLE_MAX = 16 * 1024
"""Name indexes up to this size, when already in memory, are checked and memoised whole."""
MEMO_SIZE = 4096
"""Entries per memo of parsed schema entries / schema metadata / name indexes."""


class Footer:
    """The validated footer: common fields as attributes, every field by name (``f["x"]``)."""

    __slots__ = ("values", "num_rows", "num_columns", "num_stripes", "cit_entries", "batch_mode",
                 "version", "cmb_area_offset", "cmb_area_length", "cit_offset")

    def __init__(self, values: tuple[Any, ...]) -> None:
        self.values = values
        self.num_rows: int = values[0]
        self.num_columns: int = values[7]
        self.num_stripes: int = values[10]
        self.cit_entries: int = values[12]
        self.batch_mode = bool(values[14] & L.SETTING_BATCH_MODE)
        self.version: tuple[int, int] = (values[18], values[19])
        self.cmb_area_offset: int = values[1]
        self.cmb_area_length: int = values[2]
        self.cit_offset: int = values[11]

    def __getitem__(self, k: str) -> Any:
        return self.values[_FOOTER_INDEX[k]]

    @property
    def raw(self) -> np.void:
        """The footer as a ``FOOTER_DTYPE`` record."""
        return np.frombuffer(L.FOOTER_STRUCT.pack(*self.values), dtype=L.FOOTER_DTYPE)[0]


def read_footer(rr: RangeReader) -> Footer:
    size = rr.size
    if size < L.HEADER_SIZE + L.FOOTER_SIZE:
        raise InvalidFileError(f"{size} bytes is too short for a Fermion file")
    tail = rr.prefetch_tail()
    if len(tail) < L.FOOTER_SIZE:
        tail = rr.prefetch_tail(L.FOOTER_SIZE)
    raw = tail[len(tail) - L.FOOTER_SIZE :]
    v = L.FOOTER_STRUCT.unpack_from(raw)
    L.check_magic(v[21], "footer")
    major, minor = v[18], v[19]
    if major != L.VERSION_MAJOR:
        raise UnsupportedVersionError(
            f"Fermion format version {major}.{minor} is not "
            f"supported by this reader (major {L.VERSION_MAJOR}); upgrade arcticlite")
    if v[16] != L.footer_checksum(raw):
        raise ChecksumError("footer checksum mismatch; the segment is corrupt")
    if v[20] != L.FOOTER_SIZE:
        raise InvalidFileError(f"footer size {v[20]} != {L.FOOTER_SIZE}")
    if size <= len(tail):  # the header is checked when it comes for free
        L.check_magic(bytes(tail[:4]), "header")
        if struct.unpack_from("<HH", tail, 4) != (major, minor):
            raise InvalidFileError("header and footer versions differ")
    end = size - L.FOOTER_SIZE
    (nrows, cmb_off, cmb_len, s_off, s_len, sm_off, sm_len, ncols, ni_off, slots, nstripes,
     cit_off, nent, _ps, settings) = v[:15]
    batch = bool(settings & L.SETTING_BATCH_MODE)
    if nent != ncols + (1 if batch else 0):
        raise InvalidFileError("CIT entry count does not match the column count")
    if cit_off + nent * L.CIT_STRUCT.size != end or cit_off < L.HEADER_SIZE:
        L.check_range(cit_off, nent * L.CIT_STRUCT.size, L.HEADER_SIZE, end, "CIT")
        raise InvalidFileError("the CIT does not end where the footer starts")
    if slots < 2 or slots & (slots - 1) or slots < 2 * ncols:
        raise InvalidFileError(f"bad name index size {slots}")
    hs = L.HEADER_SIZE
    if not (hs <= ni_off and ni_off + slots * L.NAME_SLOT_STRUCT.size <= cit_off and hs <= s_off
            and s_off + s_len <= ni_off and s_off <= sm_off and sm_off + sm_len <= s_off + s_len
            and hs <= cmb_off and cmb_off + cmb_len <= s_off + 1):
        L.check_range(ni_off, slots * L.NAME_SLOT_STRUCT.size, hs, cit_off, "name index")
        L.check_range(s_off, s_len, hs, ni_off, "schema area")
        L.check_range(sm_off, sm_len, s_off, s_off + s_len, "schema metadata")
        L.check_range(cmb_off, cmb_len, hs, s_off + 1, "CMB area")
    if nrows > min(L.MAX_ROWS, max(1 << 24, size << 16)) or nstripes > nrows + 1 or nstripes > size:
        raise InvalidFileError(f"implausible row/stripe counts {nrows}/{nstripes}")
    if nrows and not nstripes and nent > (1 if batch else 0):
        raise InvalidFileError("rows without stripes")
    return Footer(v)


class CitEntry(NamedTuple):
    cmb_offset: int
    field_offset: int
    cmb_checksum: int
    field_checksum: int
    null_count: int
    cmb_length: int
    field_length: int
    flags: int
    reserved: int
    checksum: int


def read_cit(rr: RangeReader, footer: Footer, indices: list[int]) -> list[CitEntry]:
    """The CIT entries of ``indices`` (checksummed), one coalesced read."""
    base = footer.cit_offset
    size = L.CIT_STRUCT.size
    if len(indices) > 1 and indices[-1] - indices[0] == len(indices) - 1:
        blob = rr.read(base + indices[0] * size, len(indices) * size)  # a contiguous run
        bufs = [blob[k * size : (k + 1) * size] for k in range(len(indices))]
    else:
        bufs = rr.read_many([(base + i * size, size) for i in indices], gap=META_GAP)
    cmb_lo = footer.cmb_area_offset
    cmb_hi = cmb_lo + footer.cmb_area_length
    s_lo = footer["schema_offset"]
    s_hi = s_lo + footer["schema_length"]
    out = []
    unpack, digest, new = L.CIT_STRUCT.unpack_from, L.checksum, tuple.__new__
    for i, b in zip(indices, bufs, strict=True):
        v = unpack(b)
        if digest(b[:56]) != v[9]:
            raise ChecksumError(f"CIT entry {i} checksum mismatch; the segment is corrupt")
        cmb_off, f_off, _, _, _, cmb_len, f_len, flags = v[:8]
        if flags & L.CIT_ALL_NULL:
            if cmb_len:
                raise InvalidFileError("all-null column with a CMB")
        elif cmb_off < cmb_lo or cmb_off + cmb_len > cmb_hi:
            L.check_range(cmb_off, cmb_len, cmb_lo, cmb_hi, "CMB")
        if f_off < s_lo or f_off + f_len > s_hi:
            L.check_range(f_off, f_len, s_lo, s_hi, "schema entry")
        out.append(new(CitEntry, v))
    return out


@functools.lru_cache(maxsize=8192)
def _name_hash(name: str) -> int:
    return L.name_hash(name)


@functools.lru_cache(maxsize=MEMO_SIZE // 16)
def _name_table(blob: bytes) -> tuple[dict[int, list[int]], int]:
    """A whole name index with every slot checked: hash -> columns, and the largest column."""
    table: dict[int, list[int]] = {}
    top = -1
    for h, c, chk in L.NAME_SLOT_STRUCT.iter_unpack(blob):
        if L.slot_check(h, c) != chk:
            raise ChecksumError("name index slot checksum mismatch; the segment is corrupt")
        if c != L.EMPTY_SLOT:
            table.setdefault(h, []).append(c)
            top = max(top, c)
    return table, top


def lookup_names(rr: RangeReader, footer: Footer, names: list[str]) -> list[list[int]]:
    """Candidate column indices per name (hash matches).

    A small name index already in memory is checked whole and memoised by its bytes; a
    large or remote one is probed in windows from each name's slot."""
    slots = footer["name_index_slots"]
    base = footer["name_index_offset"]
    if slots * L.NAME_SLOT_STRUCT.size <= NAME_TABLE_MAX and rr.cheap(base):
        table, top = _name_table(bytes(rr.read(base, slots * L.NAME_SLOT_STRUCT.size)))
        if top >= footer.num_columns:
            raise InvalidFileError("name index points past the last column")
        return [list(table.get(_name_hash(n), ())) for n in names]
    mask = slots - 1
    hashes = [_name_hash(n) for n in names]
    pos = [h & mask for h in hashes]
    result: list[list[int]] = [[] for _ in names]
    todo = list(range(len(names)))
    window = 4
    probed = [0] * len(names)
    while todo:
        ranges = []
        for i in todo:
            n = min(window, slots - pos[i])
            ranges.append((base + pos[i] * L.NAME_SLOT_STRUCT.size, n * L.NAME_SLOT_STRUCT.size))
        bufs = rr.read_many(ranges, gap=META_GAP)
        nxt = []
        for i, buf in zip(todo, bufs, strict=True):
            done = False
            k = 0
            for h, c, chk in L.NAME_SLOT_STRUCT.iter_unpack(buf):
                k += 1
                if L.slot_check(h, c) != chk:
                    raise ChecksumError("name index slot checksum mismatch; the segment is corrupt")
                probed[i] += 1
                if c == L.EMPTY_SLOT:
                    done = True
                    break
                if c >= footer.num_columns:
                    raise InvalidFileError("name index points past the last column")
                if h == hashes[i]:
                    result[i].append(c)
            if not done and probed[i] < slots:
                pos[i] = (pos[i] + len(buf) // L.NAME_SLOT_STRUCT.size) & mask
                nxt.append(i)
        todo = nxt
        window = 16
    return result


@functools.lru_cache(maxsize=MEMO_SIZE)
def _field_of(blob: bytes) -> pa.Field:
    try:
        return deserialize_field(blob)
    except (pa.ArrowException, ValueError) as exc:
        raise InvalidFileError(f"unreadable schema entry: {exc}") from exc


def read_fields(rr: RangeReader, entries: Sequence[CitEntry]) -> list[pa.Field]:
    bufs = rr.read_many([(e.field_offset, e.field_length) for e in entries], gap=META_GAP)
    out = []
    digest = L.checksum
    for e, b in zip(entries, bufs, strict=True):
        if digest(b) != e.field_checksum:
            L.verify(b, e.field_checksum, "schema entry")
        out.append(_field_of(bytes(b)))
    return out


@functools.lru_cache(maxsize=MEMO_SIZE)
def _schema_meta_of(blob: bytes) -> dict[bytes, bytes] | None:
    from arcticlite.format._types import deserialize_schema_meta

    try:
        return deserialize_schema_meta(blob)
    except (pa.ArrowException, ValueError) as exc:
        raise InvalidFileError(f"unreadable schema metadata: {exc}") from exc


def read_schema_meta(rr: RangeReader, footer: Footer) -> dict[bytes, bytes] | None:
    """The schema metadata (a memoised dict: callers must not modify it)."""
    b = rr.read(footer["schema_meta_offset"], footer["schema_meta_length"])
    L.verify(b, footer["schema_meta_checksum"], "schema metadata")
    return _schema_meta_of(bytes(b))


_EMPTY: tuple[()] = ()


@dataclasses.dataclass(slots=True, eq=False, repr=False)
class ColumnMeta:
    """Parsed, validated CMB of one column.

    Decoding uses the Python lists: ``srows`` (rows per stripe), ``nl`` (node lengths per
    stripe), ``sm`` (stream tuples), ``clist`` (per stream: chunk tuples per stripe, or None)
    and ``plist`` (per stream, per stripe: page tuples, ``P_*`` positions). The numpy views
    ``stripe_rows``, ``node_lengths``, ``streams``, ``chunks`` and ``pages`` (structured
    arrays over the CMB bytes) are built on first use.
    """

    index: int
    field: pa.Field
    nodes: list[Node]
    specs: list[StreamSpec]
    all_null: bool
    null_count: int
    srows: list[int]
    nl: list[list[int]]
    sm: list[tuple[int, ...]]
    clist: list[list[tuple[Any, ...]] | None]
    plist: list[list[Sequence[tuple[Any, ...]]]]
    _buf: Any = b""  # the CMB bytes the numpy views are built over
    cmb_length: int = 0
    _views: dict[str, Any] | None = dataclasses.field(default=None, init=False)

    def _np(self) -> dict[str, Any]:
        if self._views is None:
            ns, nn = len(self.srows), len(self.nodes)
            v: dict[str, Any] = {}
            if self.all_null:
                v["stripe_rows"] = np.zeros(0, np.uint64)
                v["node_lengths"] = np.zeros((0, nn), np.uint64)
                v["streams"] = np.zeros(0, L.STREAM_DTYPE)
                v["chunks"] = [None] * len(self.specs)
                v["pages"] = [[] for _ in self.specs]
            else:
                buf = self._buf
                nchunks = sum(len(c) for c in self.clist if c is not None)
                npages = sum(len(p) for per in self.plist for p in per)
                sec = L.cmb_sections(ns, nn, len(self.specs), nchunks, npages)

                def arr(name: str, dtype: np.dtype[Any]) -> np.ndarray:
                    off, ln = sec[name]
                    return np.frombuffer(buf, dtype=dtype, count=ln // dtype.itemsize, offset=off)

                v["stripe_rows"] = arr("stripes", L.STRIPE_DTYPE)["row_count"]
                v["node_lengths"] = arr("node_lengths", L.NODE_LEN_DTYPE).reshape(ns, nn)
                v["streams"] = arr("streams", L.STREAM_DTYPE)
                chunk_all = arr("chunks", L.CHUNK_DTYPE)
                page_all = arr("pages", L.PAGE_DTYPE)
                chunks: list[np.ndarray | None] = [None] * len(self.specs)
                pages: list[list[np.ndarray]] = [[page_all[:0]] * ns for _ in self.specs]
                k = p = 0
                for s, cl in enumerate(self.clist):
                    if cl is None:
                        continue
                    chunks[s] = chunk_all[k : k + ns]
                    k += ns
                    per = []
                    for pl in self.plist[s]:
                        per.append(page_all[p : p + len(pl)])
                        p += len(pl)
                    pages[s] = per
                v["chunks"] = chunks
                v["pages"] = pages
            self._views = v
        return self._views

    @property
    def stripe_rows(self) -> np.ndarray:
        """Rows per stripe (uint64)."""
        return self._np()["stripe_rows"]

    @property
    def node_lengths(self) -> np.ndarray:
        """(stripes, nodes) node lengths (uint64)."""
        return self._np()["node_lengths"]

    @property
    def streams(self) -> np.ndarray:
        """``STREAM_DTYPE`` records, one per stream."""
        return self._np()["streams"]

    @property
    def chunks(self) -> list[np.ndarray | None]:
        """Per stream: ``CHUNK_DTYPE`` records per stripe, or None (default stream)."""
        return self._np()["chunks"]

    @property
    def pages(self) -> list[list[np.ndarray]]:
        """Per stream, per stripe: ``PAGE_DTYPE`` records."""
        return self._np()["pages"]


def _nodes_of(fld: pa.Field, system: bool) -> tuple[list[Node], list[StreamSpec]]:
    if system:
        return _system_nodes()
    hit = _NODES.get(id(fld))
    if hit is not None and hit[0] is fld:
        return hit[1]
    shape = build_nodes(fld.type)
    if len(_NODES) >= MEMO_SIZE:
        _NODES.clear()
    _NODES[id(fld)] = (fld, shape)  # holds ``fld``: its id cannot be reused while cached
    return shape


_NODES: dict[int, tuple[pa.Field, tuple[list[Node], list[StreamSpec]]]] = {}


class _Shape(NamedTuple):
    """The validated structure part of a CMB (header, stripes, node lengths, streams), and
    what the chunks must agree with: their item counts and the per-node null checks."""

    specs: list[StreamSpec]
    srows: list[int]
    nl: list[list[int]]
    sm: list[tuple[int, ...]]
    full: list[int]
    items: list[int]  # item count of every chunk, in chunk order (the node lengths)
    nulls: list[tuple[int, int, list[int], list[int], bool]]  # see _null_plan


_SHAPES: dict[tuple[Any, ...], _Shape] = {}


def _shape(buf: Any, o_ch: int, nodes: list[Node], specs: list[StreamSpec], footer: Footer,
           system: bool) -> _Shape:
    """Parse and check the CMB bytes before the chunk section.

    A pure function of those bytes, the column type and the footer's row and stripe counts:
    memoised, since the segments of a symbol repeat them."""
    key = (bytes(buf[:o_ch]), footer.num_rows, footer.num_stripes, system, id(specs))
    hit = _SHAPES.get(key)
    if hit is not None and hit.specs is specs:
        return hit
    magic, nstripes, nsm, nn, nchunks, _, _ = L.CMB_HEADER_STRUCT.unpack_from(buf)
    if magic != L.CMB_MAGIC:
        raise InvalidFileError("bad CMB magic")
    if (nstripes, nsm, nn) != (footer.num_stripes, len(specs), len(nodes)):
        raise InvalidFileError("CMB counts do not match the footer/schema")
    o_nl = L.CMB_HEADER_STRUCT.size + 8 * nstripes
    o_sm = o_nl + 8 * nstripes * nn
    srows = list(struct.unpack_from(f"<{nstripes}Q", buf, L.CMB_HEADER_STRUCT.size))
    flat = struct.unpack_from(f"<{nstripes * nn}Q", buf, o_nl)
    nl = [list(flat[k * nn : (k + 1) * nn]) for k in range(nstripes)]
    sm = list(L.STREAM_STRUCT.iter_unpack(memoryview(buf)[o_sm:o_ch]))
    if nstripes:
        if max(srows) > L.MAX_ROWS or max(flat) > L.MAX_ROWS:
            raise InvalidFileError("implausible row count in a CMB")
        if sum(srows) != footer.num_rows:
            raise InvalidFileError("stripe row counts do not add up to the file's rows")
        if not system and any(r[0] != k for r, k in zip(nl, srows, strict=True)):
            raise InvalidFileError("top node length differs from the stripe row count")
    elif footer.num_rows:
        raise InvalidFileError("rows without stripes")
    # stream directory
    full = [s for s, row in enumerate(sm) if row[0] == L.DESC_FULL]
    for spec, (desc, stype, _node, coff, kind, code, _r0, _r1) in zip(specs, sm, strict=True):
        if (stype, kind, code) != (spec.stream_type, spec.kind, spec.dtype_code):
            raise InvalidFileError("CMB stream directory does not match the column type")
        if desc in (L.DESC_USE_DEFAULT, L.DESC_FORCE_NULL):
            if coff or (desc == L.DESC_FORCE_NULL and stype != L.STREAM_VALIDITY):
                raise InvalidFileError("default stream with chunks")
        elif desc != L.DESC_FULL:
            raise InvalidFileError(f"unknown descType {desc}")
    if len(full) * nstripes != nchunks:
        raise InvalidFileError("chunk count does not match the stream directory")
    # chunk arrays tile the chunk section in stream order
    for k, s in enumerate(full):
        if sm[s][3] != o_ch + k * nstripes * L.CHUNK_STRUCT.size:
            raise InvalidFileError("chunk descriptor offsets out of order")
    items = [nl[st][sm[s][2]] for s in full for st in range(nstripes)]
    shape = _Shape(specs, srows, nl, sm, full, items, _null_plan(nodes, sm, full, nstripes, nl))
    if len(_SHAPES) >= MEMO_SIZE:
        _SHAPES.clear()
    _SHAPES[key] = shape
    return shape


def parse_cmb(index: int, fld: pa.Field, entry: CitEntry, buf: memoryview | bytes,
              footer: Footer, data_end: int, system: bool = False) -> ColumnMeta:
    """Validate and parse one CMB (checksum first; every offset and count bounded)."""
    nodes, specs = _nodes_of(fld, system)
    nstripes = footer.num_stripes
    nsm = len(specs)
    if entry.flags & L.CIT_ALL_NULL:
        return ColumnMeta(index, fld, nodes, specs, True, footer.num_rows, [], [], [],
                          [None] * nsm, [[] for _ in specs])
    if L.checksum(buf) != entry.cmb_checksum:
        L.verify(buf, entry.cmb_checksum, f"CMB of column {index}")
    n = len(buf)
    if n < L.CMB_HEADER_STRUCT.size:
        raise FormatEOFError(f"CMB header: need {L.CMB_HEADER_STRUCT.size} bytes, have {n}")
    _, h_stripes, h_streams, h_nodes, nchunks, npages, _ = L.CMB_HEADER_STRUCT.unpack_from(buf)
    if nchunks > nsm * nstripes or npages * L.PAGE_STRUCT.size > n:
        raise InvalidFileError("CMB chunk/page counts out of range")
    o_ch = L.CMB_HEADER_STRUCT.size + 8 * h_stripes * (1 + h_nodes) + L.STREAM_STRUCT.size * h_streams
    o_pg = o_ch + L.CHUNK_STRUCT.size * nchunks
    end = o_pg + L.PAGE_STRUCT.size * npages
    if end != n:
        raise InvalidFileError(f"CMB size {n} does not match its counts ({end})")
    shape = _shape(buf, o_ch, nodes, specs, footer, system)
    srows, nl, sm, full = shape.srows, shape.nl, shape.sm, shape.full
    mv = memoryview(buf)
    clist = list(L.CHUNK_STRUCT.iter_unpack(mv[o_ch:o_pg]))
    pall = list(L.PAGE_STRUCT.iter_unpack(mv[o_pg:end]))
    # page runs tile the page pool in chunk order
    if npages <= 64:
        _check_chunks_small(clist, pall, o_pg, data_end, shape.items)
    else:
        _check_chunk_counts(clist, shape.items)
        _check_chunks(np.frombuffer(mv, L.CHUNK_DTYPE, nchunks, o_ch), clist,
                      np.frombuffer(mv, L.PAGE_DTYPE, npages, o_pg), o_pg, data_end)
    _check_nulls(shape.nulls, clist, nstripes)
    chunks: list[list[tuple[Any, ...]] | None] = [None] * nsm
    pages: list[list[Sequence[tuple[Any, ...]]]] = [[_EMPTY] * nstripes for _ in specs]
    if nstripes == 1:
        p = 0
        for k, s in enumerate(full):
            c = clist[k]
            chunks[s] = [c]
            pages[s] = [pall[p : p + c[C_PAGES]]]
            p += c[C_PAGES]
    else:
        p = 0
        for k, s in enumerate(full):
            cs = clist[k * nstripes : (k + 1) * nstripes]
            chunks[s] = cs
            per: list[Sequence[tuple[Any, ...]]] = []
            for c in cs:
                per.append(pall[p : p + c[C_PAGES]])
                p += c[C_PAGES]
            pages[s] = per
    return ColumnMeta(index, fld, nodes, specs, False, entry.null_count, srows, nl, sm, chunks,
                      pages, buf, n)


_KNOWN_FLAGS = (L.FLAG_HAS_STATS | L.FLAG_HAS_NAN | L.FLAG_ALL_VALID | L.FLAG_ALL_NULL
                | L.FLAG_PREFIX_STATS)


def _check_chunk_counts(clist: list[tuple[Any, ...]], want: list[int]) -> None:
    """Known flags only, null counts within item counts, item counts = node lengths."""
    for c in clist:
        if c[C_FLAGS] & ~_KNOWN_FLAGS or c[C_NULLS] > c[C_ITEMS]:
            raise InvalidFileError("bad chunk flags or null counts")
    if [c[C_ITEMS] for c in clist] != want:
        raise InvalidFileError("chunk item count differs from the node length")


def _null_plan(nodes: list[Node], sm: list[tuple[Any, ...]], full: list[int], nstripes: int,
               nl: list[list[int]]) -> list[tuple[int, int, list[int], list[int], bool]]:
    """Per node with streams: (validity descType, first chunk of the validity stream or -1,
    node lengths per stripe, first chunks of its other FULL streams, whether it has another
    stream that is not FULL)."""
    first = {s: k * nstripes for k, s in enumerate(full)}
    plan = []
    for node in nodes:
        if not node.streams:
            continue
        v = node.streams[0]
        others = node.streams[1:]
        plan.append((sm[v][0], first.get(v, -1), [nl[st][node.index] for st in range(nstripes)],
                     [first[s] for s in others if s in first], any(s not in first for s in others)))
    return plan


def _check_nulls(plan: list[tuple[int, int, list[int], list[int], bool]],
                 clist: list[tuple[Any, ...]], nstripes: int) -> None:
    """Null counts and all-valid/all-null flags must agree across the streams of a node."""
    for desc, vfirst, lengths, others, nonfull in plan:
        if desc == L.DESC_FULL:
            want = []
            for c in clist[vfirst : vfirst + nstripes]:
                items, nulls, npg, flags = c[C_ITEMS], c[C_NULLS], c[C_PAGES], c[C_FLAGS]
                an, av = flags & L.FLAG_ALL_NULL, flags & L.FLAG_ALL_VALID
                if (an and av) or ((an or av) and npg) or (an and nulls != items) \
                        or (av and nulls) or (not an and not av and not npg and items):
                    raise InvalidFileError("validity chunk flags disagree with its pages")
                want.append(nulls)
        elif desc == L.DESC_FORCE_NULL:
            want = lengths
        else:
            want = [0] * nstripes
        if nonfull and any(n > w for n, w in zip(lengths, want, strict=True)):
            raise InvalidFileError("a stream with valid items has no chunks")
        for first in others:
            for c, w in zip(clist[first : first + nstripes], want, strict=True):
                if c[C_NULLS] != w:
                    raise InvalidFileError("null counts differ between the streams of a node")
                if not c[C_PAGES] and c[C_ITEMS] > c[C_NULLS]:
                    raise InvalidFileError("a chunk with valid items has no pages")


@functools.lru_cache(maxsize=1)
def _system_nodes() -> tuple[list[Node], list[StreamSpec]]:
    node = Node(0, pa.int64(), "batch", streams=[0, 1])
    return [node], [StreamSpec(L.STREAM_BATCH_META, L.KIND_FIXED, np.dtype(np.int64)),
                    StreamSpec(L.STREAM_BATCH_META, L.KIND_FIXED, np.dtype(np.int64))]


def _check_chunks(chunks: np.ndarray, clist: list[tuple[Any, ...]], pages: np.ndarray, p_lo: int,
                  data_end: int) -> None:
    """Checks that the page runs tile their chunks and stay in the data area (vectorised, for
    CMBs with many pages; :func:`_check_chunks_small` otherwise)."""
    npg = chunks["num_pages"].astype(np.int64)
    if int(npg.sum()) != len(pages):
        raise InvalidFileError("chunk page counts do not add up to the page pool")
    first = np.concatenate([[0], np.cumsum(npg)[:-1]]) if len(npg) else npg
    has = npg > 0
    pmo = chunks["page_meta_offset"].astype(np.int64)
    if not np.array_equal(pmo[has], p_lo + first[has] * L.PAGE_DTYPE.itemsize):
        raise InvalidFileError("page meta offsets out of order")
    if np.any(chunks["length"][~has]):
        raise InvalidFileError("chunk with bytes but no pages")
    if not len(pages):
        return
    offs = pages["offset"].astype(np.int64)
    lens = pages["length"].astype(np.int64)
    cnt = pages["item_count"].astype(np.int64)
    if int(offs.min()) < L.HEADER_SIZE or int((offs + lens).max()) > data_end:
        raise FormatEOFError("page range outside the data area")
    owner = np.repeat(np.arange(len(npg)), npg)
    is_first = np.zeros(len(pages), dtype=bool)
    is_first[first[has]] = True
    cl = np.concatenate([[0], np.cumsum(lens)])
    cc = np.concatenate([[0], np.cumsum(cnt)])
    last = first + npg
    if not np.array_equal(offs[first[has]], chunks["offset"][has].astype(np.int64)):
        raise InvalidFileError("chunk offset differs from its first page")
    if not np.array_equal(cl[last[has]] - cl[first[has]], chunks["length"][has].astype(np.int64)):
        raise InvalidFileError("page lengths do not add up to the chunk length")
    if not np.array_equal(cc[last[has]] - cc[first[has]], chunks["item_count"][has].astype(np.int64)):
        raise InvalidFileError("page item counts do not add up to the chunk's")
    nf = ~is_first
    if not np.array_equal(offs[nf], (offs + lens)[np.flatnonzero(nf) - 1]):
        raise InvalidFileError("pages are not contiguous")
    if not np.array_equal(pages["first_item"].astype(np.int64), cc[:-1] - cc[first[owner]]):
        raise InvalidFileError("page first items are inconsistent")
    pn = pages["null_count"].astype(np.int64)
    cn = np.concatenate([[0], np.cumsum(pn)])
    if np.any(pn > cnt) or not np.array_equal(cn[last[has]] - cn[first[has]],
                                              chunks["null_count"][has].astype(np.int64)):
        raise InvalidFileError("page null counts do not add up to the chunk's")


def _check_chunks_small(chunks: list[tuple[Any, ...]], pages: list[tuple[Any, ...]], p_lo: int,
                        data_end: int, want: list[int]) -> None:
    """:func:`_check_chunks` on Python ints (faster for the usual handful of chunks), and the
    chunk flags, null counts and item counts (``want``: the node lengths) of
    :func:`_check_chunk_counts`."""
    k = 0
    for (off, length, _mn, _mx, items, nulls, npg, pmo, flags, _r), w in zip(chunks, want,
                                                                                strict=True):
        if flags & ~_KNOWN_FLAGS or nulls > items:
            raise InvalidFileError("bad chunk flags or null counts")
        if items != w:
            raise InvalidFileError("chunk item count differs from the node length")
        if not npg:
            if length:
                raise InvalidFileError("chunk with bytes but no pages")
            continue
        if pmo != p_lo + k * L.PAGE_DTYPE.itemsize or k + npg > len(pages):
            raise InvalidFileError("page meta offsets out of order")
        pos, first, nn = off, 0, 0
        for poff, _cs, _a, _b, plen, _raw, cnt, pnn, _f, _e, _rr, fi in pages[k : k + npg]:
            if poff != pos or fi != first or pnn > cnt:
                raise InvalidFileError("pages are not contiguous")
            pos += plen
            first += cnt
            nn += pnn
        if pos - off != length or first != items or nn != nulls:
            raise InvalidFileError("pages do not add up to their chunk")
        if off < L.HEADER_SIZE or pos > data_end:
            raise FormatEOFError("page range outside the data area")
        k += npg
    if k != len(pages):
        raise InvalidFileError("chunk page counts do not add up to the page pool")
