"""Reading and validating Fermion metadata: footer, CIT, name index, schema entries, CMBs.

Every block is checked (magic, version, checksum, bounds) before any field of it is trusted,
and every count is bounded by the file size before anything is allocated from it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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


@dataclass(slots=True)
class Footer:
    raw: np.void
    num_rows: int
    num_columns: int
    num_stripes: int
    cit_entries: int
    batch_mode: bool
    version: tuple[int, int]

    def __getitem__(self, k: str) -> Any:
        return self.raw[k]


def read_footer(rr: RangeReader) -> Footer:
    size = rr.size
    if size < L.HEADER_SIZE + L.FOOTER_SIZE:
        raise InvalidFileError(f"{size} bytes is too short for a Fermion file")
    tail = rr.prefetch_tail()
    raw = bytes(tail[len(tail) - L.FOOTER_SIZE :])
    L.check_magic(raw[-4:], "footer")
    f = np.frombuffer(raw, dtype=L.FOOTER_DTYPE)[0]
    if int(f["version_major"]) != L.VERSION_MAJOR:
        raise UnsupportedVersionError(
            f"Fermion format version {int(f['version_major'])}.{int(f['version_minor'])} is not "
            f"supported by this reader (major {L.VERSION_MAJOR}); upgrade arcticlite")
    if int(f["footer_checksum"]) != L.footer_checksum(raw):
        raise ChecksumError("footer checksum mismatch; the segment is corrupt")
    if int(f["footer_size"]) != L.FOOTER_SIZE:
        raise InvalidFileError(f"footer size {int(f['footer_size'])} != {L.FOOTER_SIZE}")
    if rr.size <= len(tail):  # the header is checked when it comes for free
        L.check_magic(bytes(tail[:4]), "header")
        if bytes(tail[4:8]) != np.array([f["version_major"], f["version_minor"]], "<u2").tobytes():
            raise InvalidFileError("header and footer versions differ")
    end = size - L.FOOTER_SIZE
    ncols, nent = int(f["num_columns"]), int(f["cit_entries"])
    batch = bool(int(f["settings"]) & L.SETTING_BATCH_MODE)
    if nent != ncols + (1 if batch else 0):
        raise InvalidFileError("CIT entry count does not match the column count")
    cit_off = int(f["cit_offset"])
    L.check_range(cit_off, nent * L.CIT_DTYPE.itemsize, L.HEADER_SIZE, end, "CIT")
    if cit_off + nent * L.CIT_DTYPE.itemsize != end:
        raise InvalidFileError("the CIT does not end where the footer starts")
    slots = int(f["name_index_slots"])
    if slots < 2 or slots & (slots - 1) or slots < 2 * ncols:
        raise InvalidFileError(f"bad name index size {slots}")
    L.check_range(int(f["name_index_offset"]), slots * L.NAME_SLOT_DTYPE.itemsize,
                  L.HEADER_SIZE, cit_off, "name index")
    L.check_range(int(f["schema_offset"]), int(f["schema_length"]), L.HEADER_SIZE,
                  int(f["name_index_offset"]), "schema area")
    L.check_range(int(f["schema_meta_offset"]), int(f["schema_meta_length"]),
                  int(f["schema_offset"]), int(f["schema_offset"]) + int(f["schema_length"]),
                  "schema metadata")
    L.check_range(int(f["cmb_area_offset"]), int(f["cmb_area_length"]), L.HEADER_SIZE,
                  int(f["schema_offset"]) + 1, "CMB area")
    nrows, nstripes = int(f["num_rows"]), int(f["num_stripes"])
    if nrows > min(L.MAX_ROWS, max(1 << 24, size << 16)) or nstripes > nrows + 1 or nstripes > size:
        raise InvalidFileError(f"implausible row/stripe counts {nrows}/{nstripes}")
    if nrows and not nstripes and nent > (1 if batch else 0):
        raise InvalidFileError("rows without stripes")
    return Footer(f, nrows, ncols, nstripes, nent, batch,
                  (int(f["version_major"]), int(f["version_minor"])))


def read_cit(rr: RangeReader, footer: Footer, indices: list[int]) -> np.ndarray:
    """The CIT entries of ``indices`` (checksummed), one coalesced read."""
    base = int(footer["cit_offset"])
    size = L.CIT_DTYPE.itemsize
    bufs = rr.read_many([(base + i * size, size) for i in indices], gap=META_GAP)
    out = np.frombuffer(b"".join(bytes(b) for b in bufs), dtype=L.CIT_DTYPE, count=len(indices))
    sums = L.cit_entry_checksums(out) if len(out) else np.zeros(0, np.uint64)
    bad = np.flatnonzero(sums != out["checksum"])
    if len(bad):
        raise ChecksumError(f"CIT entry {indices[int(bad[0])]} checksum mismatch; the segment is corrupt")
    cmb_lo = int(footer["cmb_area_offset"])
    cmb_hi = cmb_lo + int(footer["cmb_area_length"])
    s_lo = int(footer["schema_offset"])
    s_hi = s_lo + int(footer["schema_length"])
    for e in out:
        if int(e["flags"]) & L.CIT_ALL_NULL:
            if int(e["cmb_length"]):
                raise InvalidFileError("all-null column with a CMB")
        else:
            L.check_range(int(e["cmb_offset"]), int(e["cmb_length"]), cmb_lo, cmb_hi, "CMB")
        L.check_range(int(e["field_offset"]), int(e["field_length"]), s_lo, s_hi, "schema entry")
    return out


def lookup_names(rr: RangeReader, footer: Footer, names: list[str]) -> list[list[int]]:
    """Candidate column indices per name (hash matches), probing the name index in windows."""
    slots = int(footer["name_index_slots"])
    base = int(footer["name_index_offset"])
    mask = slots - 1
    hashes = [L.name_hash(n) for n in names]
    pos = [h & mask for h in hashes]
    result: list[list[int]] = [[] for _ in names]
    todo = list(range(len(names)))
    window = 4
    probed = [0] * len(names)
    while todo:
        ranges = []
        for i in todo:
            n = min(window, slots - pos[i])
            ranges.append((base + pos[i] * L.NAME_SLOT_DTYPE.itemsize, n * L.NAME_SLOT_DTYPE.itemsize))
        bufs = rr.read_many(ranges, gap=META_GAP)
        nxt = []
        for i, buf in zip(todo, bufs, strict=True):
            arr = np.frombuffer(buf, dtype=L.NAME_SLOT_DTYPE)
            done = False
            for s in arr:
                h, c, chk = int(s["hash"]), int(s["column"]), int(s["check"])
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
                pos[i] = (pos[i] + len(arr)) & mask
                nxt.append(i)
        todo = nxt
        window = 16
    return result


def read_fields(rr: RangeReader, entries: Sequence[np.void]) -> list[pa.Field]:
    bufs = rr.read_many([(int(e["field_offset"]), int(e["field_length"])) for e in entries], gap=META_GAP)
    out = []
    for e, b in zip(entries, bufs, strict=True):
        L.verify(b, int(e["field_checksum"]), "schema entry")
        try:
            out.append(deserialize_field(b))
        except (pa.ArrowException, ValueError) as exc:
            raise InvalidFileError(f"unreadable schema entry: {exc}") from exc
    return out


def read_schema_meta(rr: RangeReader, footer: Footer) -> dict[bytes, bytes] | None:
    from arcticlite.format._types import deserialize_schema_meta

    b = rr.read(int(footer["schema_meta_offset"]), int(footer["schema_meta_length"]))
    L.verify(b, int(footer["schema_meta_checksum"]), "schema metadata")
    try:
        return deserialize_schema_meta(b)
    except (pa.ArrowException, ValueError) as exc:
        raise InvalidFileError(f"unreadable schema metadata: {exc}") from exc


@dataclass(slots=True)
class ColumnMeta:
    """Parsed, validated CMB of one column (all arrays are numpy views of the CMB bytes)."""

    index: int
    field: pa.Field
    nodes: list[Node]
    specs: list[StreamSpec]
    all_null: bool
    null_count: int
    stripe_rows: np.ndarray  # (stripes,)
    node_lengths: np.ndarray  # (stripes, nodes)
    streams: np.ndarray  # STREAM_DTYPE (num_streams,)
    chunks: list[np.ndarray | None]  # per stream: CHUNK_DTYPE (stripes,) or None (default)
    pages: list[list[np.ndarray]]  # per stream, per stripe: PAGE_DTYPE array
    cmb_length: int = 0


def parse_cmb(index: int, fld: pa.Field, entry: np.void, buf: memoryview | bytes,
              footer: Footer, data_end: int, system: bool = False) -> ColumnMeta:
    """Validate and parse one CMB (checksum first; every offset and count bounded)."""
    nodes, specs = _system_nodes() if system else build_nodes(fld.type)
    nstripes = footer.num_stripes
    if int(entry["flags"]) & L.CIT_ALL_NULL:
        return ColumnMeta(index, fld, nodes, specs, True, footer.num_rows,
                          np.zeros(0, np.uint64), np.zeros((0, len(nodes)), np.uint64),
                          np.zeros(0, L.STREAM_DTYPE), [None] * len(specs), [[] for _ in specs])
    L.verify(buf, int(entry["cmb_checksum"]), f"CMB of column {index}")
    n = len(buf)
    magic, h_stripes, h_streams, h_nodes, nchunks, npages, _ = L.frombuffer(
        L.CMB_HEADER_DTYPE, buf, 1, "CMB header").item()
    if magic != L.CMB_MAGIC:
        raise InvalidFileError("bad CMB magic")
    if (h_stripes, h_streams, h_nodes) != (nstripes, len(specs), len(nodes)):
        raise InvalidFileError("CMB counts do not match the footer/schema")
    if nchunks > len(specs) * nstripes or npages * L.PAGE_DTYPE.itemsize > n:
        raise InvalidFileError("CMB chunk/page counts out of range")
    sec = L.cmb_sections(nstripes, len(nodes), len(specs), nchunks, npages)
    if sec["end"][0] != n:
        raise InvalidFileError(f"CMB size {n} does not match its counts ({sec['end'][0]})")

    def arr(name: str, dtype: np.dtype[Any]) -> np.ndarray:
        off, ln = sec[name]
        return np.frombuffer(buf, dtype=dtype, count=ln // dtype.itemsize, offset=off)

    stripe_rows = arr("stripes", L.STRIPE_DTYPE)["row_count"]
    node_lengths = arr("node_lengths", L.NODE_LEN_DTYPE).reshape(nstripes, len(nodes))
    streams = arr("streams", L.STREAM_DTYPE)
    chunk_all = arr("chunks", L.CHUNK_DTYPE)
    page_all = arr("pages", L.PAGE_DTYPE)
    srows = stripe_rows.tolist()
    nl = node_lengths.tolist()
    if nstripes:
        if max(srows) > L.MAX_ROWS or max(max(r) for r in nl) > L.MAX_ROWS:
            raise InvalidFileError("implausible row count in a CMB")
        if sum(srows) != footer.num_rows:
            raise InvalidFileError("stripe row counts do not add up to the file's rows")
        if not system and any(r[0] != n for r, n in zip(nl, srows, strict=True)):
            raise InvalidFileError("top node length differs from the stripe row count")
    elif footer.num_rows:
        raise InvalidFileError("rows without stripes")
    # stream directory
    sm = streams.tolist()
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
    # chunk arrays tile the chunk section in stream order; page runs tile the page pool
    c_lo, p_lo = sec["chunks"][0], sec["pages"][0]
    for k, s in enumerate(full):
        if sm[s][3] != c_lo + k * nstripes * L.CHUNK_DTYPE.itemsize:
            raise InvalidFileError("chunk descriptor offsets out of order")
    clist = chunk_all.tolist()
    _check_chunks(chunk_all, clist, page_all, p_lo, data_end)
    for k, s in enumerate(full):
        node = sm[s][2]
        for st in range(nstripes):
            if clist[k * nstripes + st][4] != nl[st][node]:
                raise InvalidFileError("chunk item count differs from the node length")
    _check_nulls(nodes, sm, full, clist, nstripes, nl)
    npg = chunk_all["num_pages"].astype(np.int64)
    pstart = np.concatenate([[0], np.cumsum(npg)]).tolist()
    chunks: list[np.ndarray | None] = [None] * len(specs)
    empty = page_all[:0]
    pages: list[list[np.ndarray]] = [[empty] * nstripes for _ in specs]
    for k, s in enumerate(full):
        chunks[s] = chunk_all[k * nstripes : (k + 1) * nstripes]
        base = k * nstripes
        pages[s] = [page_all[pstart[base + st] : pstart[base + st + 1]] for st in range(nstripes)]
    return ColumnMeta(index, fld, nodes, specs, False, int(entry["null_count"]), stripe_rows,
                      node_lengths, streams, chunks, pages, n)


_KNOWN_FLAGS = (L.FLAG_HAS_STATS | L.FLAG_HAS_NAN | L.FLAG_ALL_VALID | L.FLAG_ALL_NULL
                | L.FLAG_PREFIX_STATS)


def _check_nulls(nodes: list[Node], sm: list[tuple[Any, ...]], full: list[int],
                 clist: list[tuple[Any, ...]], nstripes: int, nl: list[list[int]]) -> None:
    """Null counts and all-valid/all-null flags must agree across the streams of a node."""
    row = {s: k for k, s in enumerate(full)}
    for _off, _len, _mn, _mx, items, nulls, _npg, _pmo, flags, _r in clist:
        if flags & ~_KNOWN_FLAGS or nulls > items:
            raise InvalidFileError("bad chunk flags or null counts")
    for node in nodes:
        if not node.streams:
            continue
        v = node.streams[0]
        desc = sm[v][0]
        lengths = [nl[st][node.index] for st in range(nstripes)]
        if desc == L.DESC_FULL:
            want = []
            for c in clist[row[v] * nstripes : (row[v] + 1) * nstripes]:
                items, nulls, npg, flags = c[4], c[5], c[6], c[8]
                an, av = flags & L.FLAG_ALL_NULL, flags & L.FLAG_ALL_VALID
                if (an and av) or ((an or av) and npg) or (an and nulls != items) \
                        or (av and nulls) or (not an and not av and not npg and items):
                    raise InvalidFileError("validity chunk flags disagree with its pages")
                want.append(nulls)
        elif desc == L.DESC_FORCE_NULL:
            want = lengths
        else:
            want = [0] * nstripes
        has_valid = any(n > w for n, w in zip(lengths, want, strict=True))
        for s in node.streams[1:]:
            if s not in row:
                if has_valid:
                    raise InvalidFileError("a stream with valid items has no chunks")
                continue
            for c, w in zip(clist[row[s] * nstripes : (row[s] + 1) * nstripes], want, strict=True):
                if c[5] != w:
                    raise InvalidFileError("null counts differ between the streams of a node")
                if not c[6] and c[4] > c[5]:
                    raise InvalidFileError("a chunk with valid items has no pages")


@functools.lru_cache(maxsize=1)
def _system_nodes() -> tuple[list[Node], list[StreamSpec]]:
    node = Node(0, pa.int64(), "batch", streams=[0, 1])
    return [node], [StreamSpec(L.STREAM_BATCH_META, L.KIND_FIXED, np.dtype(np.int64)),
                    StreamSpec(L.STREAM_BATCH_META, L.KIND_FIXED, np.dtype(np.int64))]


def _check_chunks(chunks: np.ndarray, clist: list[tuple[Any, ...]], pages: np.ndarray, p_lo: int,
                  data_end: int) -> None:
    """Checks that the page runs tile their chunks and stay in the data area."""
    if len(pages) <= 64:
        _check_chunks_small(clist, pages.tolist(), p_lo, data_end)
        return
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
                        data_end: int) -> None:
    """:func:`_check_chunks` on Python ints (faster for the usual handful of chunks)."""
    k = 0
    for off, length, _mn, _mx, items, nulls, npg, pmo, _fl, _r in chunks:
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
