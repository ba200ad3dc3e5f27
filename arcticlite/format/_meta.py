"""Reading and validating Fermion metadata: footer, CIT, name index, schema entries, CMBs.

Every block is checked (magic, version, checksum, bounds) before any field of it is trusted,
and every count is bounded by the file size before anything is allocated from it.
"""

from __future__ import annotations

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
    L.check_magic(bytes(rr.read(0, 4)), "header")
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
    if nrows > L.MAX_ROWS or nstripes > max(nrows, 0) + 1 or nstripes > size:
        raise InvalidFileError(f"implausible row/stripe counts {nrows}/{nstripes}")
    if (nrows == 0) != (nstripes == 0) and nrows != 0:
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


def read_fields(rr: RangeReader, entries: np.ndarray) -> list[pa.Field]:
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
    if system:
        nodes = [Node(0, pa.int64(), "batch")]
        specs = [StreamSpec(L.STREAM_BATCH_META, L.KIND_FIXED, np.dtype(np.int64)),
                 StreamSpec(L.STREAM_BATCH_META, L.KIND_FIXED, np.dtype(np.int64))]
        nodes[0].streams = [0, 1]
    else:
        nodes, specs = build_nodes(fld.type)
    nstripes = footer.num_stripes
    if int(entry["flags"]) & L.CIT_ALL_NULL:
        return ColumnMeta(index, fld, nodes, specs, True, footer.num_rows,
                          np.zeros(0, np.uint64), np.zeros((0, len(nodes)), np.uint64),
                          np.zeros(0, L.STREAM_DTYPE), [None] * len(specs), [[] for _ in specs])
    L.verify(buf, int(entry["cmb_checksum"]), f"CMB of column {index}")
    n = len(buf)
    h = L.frombuffer(L.CMB_HEADER_DTYPE, buf, 1, "CMB header")[0]
    if bytes(h["magic"]) != L.CMB_MAGIC:
        raise InvalidFileError("bad CMB magic")
    if (int(h["num_stripes"]), int(h["num_streams"]), int(h["num_nodes"])) != (nstripes, len(specs), len(nodes)):
        raise InvalidFileError("CMB counts do not match the footer/schema")
    nchunks, npages = int(h["num_chunks"]), int(h["num_pages"])
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
    if int(stripe_rows.sum(dtype=np.uint64)) != footer.num_rows or (
            len(stripe_rows) and int(stripe_rows.max()) > L.MAX_ROWS):
        raise InvalidFileError("stripe row counts do not add up to the file's rows")
    if nstripes and not system and not np.array_equal(node_lengths[:, 0], stripe_rows):
        raise InvalidFileError("top node length differs from the stripe row count")
    if len(node_lengths) and int(node_lengths.max()) > L.MAX_ROWS:
        raise InvalidFileError("implausible node length")
    chunks: list[np.ndarray | None] = []
    pages: list[list[np.ndarray]] = []
    c_lo, c_hi = sec["chunks"][0], sec["chunks"][0] + sec["chunks"][1]
    p_lo, p_hi = sec["pages"][0], sec["pages"][0] + sec["pages"][1]
    for s, spec in enumerate(specs):
        sm = streams[s]
        if (int(sm["stream_type"]), int(sm["kind"]), int(sm["dtype_code"])) != (
                spec.stream_type, spec.kind, spec.dtype_code):
            raise InvalidFileError("CMB stream directory does not match the column type")
        d = int(sm["desc_type"])
        if d in (L.DESC_USE_DEFAULT, L.DESC_FORCE_NULL):
            if int(sm["chunks_offset"]) or (d == L.DESC_FORCE_NULL and spec.stream_type != L.STREAM_VALIDITY):
                raise InvalidFileError("default stream with chunks")
            chunks.append(None)
            pages.append([np.zeros(0, L.PAGE_DTYPE)] * nstripes)
            continue
        if d != L.DESC_FULL:
            raise InvalidFileError(f"unknown descType {d}")
        co = int(sm["chunks_offset"])
        if co < c_lo or co + nstripes * L.CHUNK_DTYPE.itemsize > c_hi or (co - c_lo) % L.CHUNK_DTYPE.itemsize:
            raise InvalidFileError("chunk descriptor offset out of range")
        ch = chunk_all[(co - c_lo) // L.CHUNK_DTYPE.itemsize :][:nstripes]
        plist = []
        for st in range(nstripes):
            c = ch[st]
            k = int(c["num_pages"])
            po = int(c["page_meta_offset"])
            if k:
                if po < p_lo or po + k * L.PAGE_DTYPE.itemsize > p_hi or (po - p_lo) % L.PAGE_DTYPE.itemsize:
                    raise InvalidFileError("page meta offset out of range")
                pg = page_all[(po - p_lo) // L.PAGE_DTYPE.itemsize :][:k]
                _check_pages(pg, c, data_end)
            else:
                pg = page_all[:0]
                if int(c["length"]):
                    raise InvalidFileError("chunk with bytes but no pages")
            if int(c["item_count"]) != int(node_lengths[st, sm["node"]]):
                raise InvalidFileError("chunk item count differs from the node length")
            plist.append(pg)
        chunks.append(ch)
        pages.append(plist)
    return ColumnMeta(index, fld, nodes, specs, False, int(entry["null_count"]), stripe_rows,
                      node_lengths, streams, chunks, pages, n)


def _check_pages(pg: np.ndarray, c: np.void, data_end: int) -> None:
    offs = pg["offset"].astype(np.int64)
    lens = pg["length"].astype(np.int64)
    if int(offs[0]) != int(c["offset"]) or int(lens.sum()) != int(c["length"]):
        raise InvalidFileError("pages do not tile their chunk")
    if len(offs) > 1 and not np.array_equal(offs[1:], offs[:-1] + lens[:-1]):
        raise InvalidFileError("pages are not contiguous")
    if int(offs[0]) < L.HEADER_SIZE or int(offs[-1] + lens[-1]) > data_end:
        raise FormatEOFError("page range outside the data area")
    cnt = pg["item_count"].astype(np.int64)
    if int(cnt.sum()) != int(c["item_count"]):
        raise InvalidFileError("page item counts do not add up to the chunk's")
    first = pg["first_item"].astype(np.int64)
    if int(first[0]) != 0 or (len(first) > 1 and not np.array_equal(first[1:], np.cumsum(cnt)[:-1])):
        raise InvalidFileError("page first items are inconsistent")
