"""The column metadata blocks (CMBs, docs/format.md §3) of a file, built when the writer closes.

Two builders write the same bytes: :func:`_build_bulk` by array operations over every chunk
and page record of the file at once (what keeps a 10,000-column write fast), and
:func:`_build_small` record by record with ``struct`` (cheaper for a file of a few columns, where
each numpy call's fixed cost dominates: every small append to a symbol writes one).
"""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from arcticlite.format import _layout as L

__all__ = ["CmbSource", "build_cmbs"]

_SMALL_CMB_RECORDS = 128
"""Up to this many chunks + pages in a file, its CMBs are packed record by record
(:func:`_build_small`): the bulk builder's ~150 numpy calls cost a fixed ~0.2 ms, more than a
Python loop over so few records."""
_CODE_DTYPES = {1: np.dtype("<i8"), 2: np.dtype("<u8"), 3: np.dtype("<f8")}
"""The 8-byte type the min/max of each statistics kind code is stored as."""
_STAT_FORMATS = {1: struct.Struct("<q"), 2: struct.Struct("<Q"), 3: struct.Struct("<d")}
"""How the 8-byte min/max of each statistics kind code compare (as ``_CODE_DTYPES``)."""
_ZERO8 = bytes(8)

Entry = tuple[pa.Field, tuple[tuple[int, ...], ...], int, list[list[int]], int]
"""Per CIT entry: field, stream layout, node count, node lengths per stripe, null count."""


@dataclass(frozen=True, slots=True)
class CmbSource:
    """What the writer recorded while writing the data, as the builders need it."""

    stripe_rows: list[int]
    #: per stripe: (3, user streams) item/null counts and flags of every chunk
    chunk_counts: list[np.ndarray]
    #: per group of pages: (stripe, stream of each page, packed PageMeta records, kind codes)
    page_recs: list[tuple[int, list[int], bytes, bytes]]
    #: per stripe of a batch-mode file: (batch ids, batch lengths)
    batch_stripes: list[tuple[np.ndarray, np.ndarray]]
    batch_mode: bool
    num_rows: int
    num_columns: int
    num_streams: int


def _exclusive_cumsum(a: np.ndarray) -> np.ndarray:
    out = np.zeros(len(a) + 1, dtype=np.int64)
    np.cumsum(a, out=out[1:])
    return out


def _ragged(base: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concat([base[i] + arange(counts[i]) for i])`` without a Python loop."""
    total = int(counts.sum())
    starts = _exclusive_cumsum(counts)[:-1]
    return np.repeat(base - starts, counts) + np.arange(total, dtype=np.int64)


def _put(area: np.ndarray, word: np.ndarray, records: np.ndarray) -> None:
    """Store ``records`` (structs of a multiple of 8 bytes) at the word offsets ``word`` of
    the ``uint64`` array ``area``."""
    if len(records):
        w = records.dtype.itemsize // 8
        area[word[:, None] + np.arange(w)] = records.view("<u8").reshape(len(records), w)


def build_cmbs(src: CmbSource, entries: list[Entry]
                ) -> tuple[memoryview | bytes, list[int], list[int], list[int]]:
    """Build the CMB of every CIT entry (docs/format.md §3).

    ``entries`` holds per CIT entry its field, stream layout (``_writer._stream_layout``), node
    count, node lengths per stripe and null count. Returns the CMB area and, per entry, the
    CMB offset in the area, length and checksum (an all-null column has no CMB: length 0 at
    the next CMB's offset).

    Files with up to :data:`_SMALL_CMB_RECORDS` chunks and pages get their CMBs record by
    record (:func:`_build_small`), larger ones by array operations over all records at
    once (:func:`_build_bulk`); both write the same bytes.
    """
    chunks = sum(len(e[1][0]) for e in entries) * len(src.stripe_rows)
    pages = sum(len(p[1]) for p in src.page_recs)
    if chunks + pages <= _SMALL_CMB_RECORDS:
        return _build_small(src, entries)
    area, start, size, sums = _build_bulk(src, entries)
    return area, start.tolist(), size.tolist(), sums.tolist()

def _build_small(src: CmbSource, entries: list[Entry]
                      ) -> tuple[bytes, list[int], list[int], list[int]]:
    """:func:`build_cmbs` record by record with ``struct`` (few chunks and pages).

    Mirrors :func:`_build_bulk` step by step: the two must write the same bytes.
    """
    T = len(src.stripe_rows)
    stripes = range(T)
    ncols = src.num_columns
    all_null_rows = src.num_rows  # a user column with this many nulls has no CMB
    # (items, nulls, flags) of each chunk, by stream then stripe; the batch-meta streams
    # (after the user columns' streams) hold one batch-meta item per batch
    per_stripe = [zip(*c.tolist(), strict=True) for c in src.chunk_counts]
    chunk_counts: list[Any] = list(zip(*per_stripe, strict=True)) if T else [()] * src.num_streams
    batch_chunks = [(len(ids), 0, 0) for ids, _ in src.batch_stripes]
    # the PageMeta fields (as a list) and statistics kind of each page, by chunk
    # (stream * T + stripe), in the order written
    chunk_pages: dict[int, list[tuple[list[Any], int]]] = {}
    for t, p_stream, recs, p_kind in src.page_recs:
        for g, fields, kind in zip(p_stream, L.PAGE_STRUCT.iter_unpack(recs), p_kind, strict=True):
            chunk_pages.setdefault(g * T + t, []).append((list(fields), kind))
    stripe_rows = struct.pack(f"<{T}Q", *src.stripe_rows)
    no_pages: list[tuple[list[Any], int]] = []
    cmbs: list[bytes] = []
    starts: list[int] = []
    sizes: list[int] = []
    sums: list[int] = []
    pos = g0 = 0
    for e, (_, layout, n_nodes, node_lengths, null_count) in enumerate(entries):
        stype, snode, skind, scode = layout
        n_streams = len(stype)
        streams = range(g0, g0 + n_streams)
        g0 += n_streams
        starts.append(pos)
        if e < ncols and all_null_rows and null_count == all_null_rows:  # no CMB
            sizes.append(0)
            sums.append(0)
            continue
        counts = [chunk_counts[g] if g < len(chunk_counts) else batch_chunks for g in streams]
        pages = [[chunk_pages.get(g * T + t, no_pages) for t in stripes] for g in streams]
        # desc types: a validity stream is USE_DEFAULT when every chunk holding items is
        # ALL_VALID, FORCE_NULL when they all are ALL_NULL (and there is one), else FULL;
        # another stream is FULL when it has pages
        full = []
        for i in range(n_streams):
            if stype[i] == L.STREAM_VALIDITY:
                states = {f & (L.FLAG_ALL_VALID | L.FLAG_ALL_NULL) for k, _, f in counts[i] if k}
                desc = (L.DESC_USE_DEFAULT if states <= {L.FLAG_ALL_VALID} else
                        L.DESC_FORCE_NULL if states == {L.FLAG_ALL_NULL} else L.DESC_FULL)
            else:
                desc = L.DESC_FULL if any(pages[i]) else L.DESC_USE_DEFAULT
            full.append(desc)
        n_full = full.count(L.DESC_FULL)
        n_pg = sum(len(p) for ps in pages for p in ps)
        st_off = 32 + 8 * T + 8 * T * n_nodes
        ck_off = st_off + 16 * n_streams
        pg_off = ck_off + 64 * T * n_full
        parts = [L.CMB_HEADER_STRUCT.pack(L.CMB_MAGIC, T, n_streams, n_nodes, n_full * T, n_pg, 0),
                 stripe_rows,
                 struct.pack(f"<{T * n_nodes}Q", *itertools.chain.from_iterable(node_lengths))]
        frank = 0  # FULL streams before this one
        for i in range(n_streams):
            parts.append(L.STREAM_STRUCT.pack(full[i], stype[i], snode[i],
                                           ck_off + 64 * T * frank if full[i] == L.DESC_FULL else 0,
                                           skind[i], scode[i], 0, 0))
            frank += full[i] == L.DESC_FULL
        # chunk descs of the FULL streams, then the page metas of all pages in chunk order
        n_seen = 0  # pages of the chunks before
        pmetas: list[bytes] = []
        for i in range(n_streams):
            for t in stripes:
                ps = pages[i][t]
                if full[i] == L.DESC_FULL:
                    parts.append(_chunk_desc(counts[i][t], ps, pg_off + 64 * n_seen))
                n_seen += len(ps)
                first_item = 0
                for rec, _ in ps:
                    rec[11] = first_item  # PageMeta.first_item: items before it in the chunk
                    first_item += rec[6]
                    pmetas.append(L.PAGE_STRUCT.pack(*rec))
        cmb = b"".join(parts + pmetas)
        cmbs.append(cmb)
        sizes.append(len(cmb))
        sums.append(L.checksum(cmb))
        pos += len(cmb)
    return b"".join(cmbs), starts, sizes, sums

def _build_bulk(src: CmbSource, entries: list[Entry]
                     ) -> tuple[memoryview, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`build_cmbs` for every CIT entry at once, by array operations.

    Streams are numbered across entries (entry ``e``'s streams follow entry ``e - 1``'s) and
    every stream has one chunk per stripe, so chunk ``(g, t)`` sits at ``g * T + t`` of the
    (streams × stripes) arrays, in CMB order.
    """
    T = len(src.stripe_rows)
    E = len(entries)
    n_streams = np.array([len(e[1][0]) for e in entries], dtype=np.int64)
    n_nodes = np.array([e[2] for e in entries], dtype=np.int64)
    G = int(n_streams.sum())
    sbase = _exclusive_cumsum(n_streams)
    entry_of = np.repeat(np.arange(E), n_streams)
    stype, snode, skind, scode = (np.fromiter(itertools.chain.from_iterable(e[1][k] for e in entries),
                                              dtype=np.int64, count=G) for k in range(4))
    # ---- chunks: (G, T) item/null counts and flags
    counts = np.zeros((3, G, T), dtype=np.int64)
    if T:
        user = np.stack(src.chunk_counts, axis=2)  # (3, user streams, T)
        counts[:, : user.shape[1]] = user
        if src.batch_mode:
            counts[0, user.shape[1] :] = [len(ids) for ids, _ in src.batch_stripes]
    c_items, c_nulls, c_flags = counts[0], counts[1], counts[2]
    # ---- pages, in CMB order: by chunk, then in order written
    groups = src.page_recs
    p_stripe = np.repeat(np.array([t for t, *_ in groups], dtype=np.int64),
                         [len(streams) for _, streams, _, _ in groups])
    p_stream = np.fromiter(itertools.chain.from_iterable(g[1] for g in groups), dtype=np.int64,
                           count=len(p_stripe))
    recs = np.frombuffer(b"".join(g[2] for g in groups), dtype=L.PAGE_DTYPE)
    p_kind = np.frombuffer(b"".join(g[3] for g in groups), dtype=np.uint8)
    key = p_stream * T + p_stripe
    order = np.argsort(key, kind="stable")
    key, recs, p_kind = key[order], recs[order], p_kind[order]
    n_pages = np.bincount(key, minlength=G * T)  # per chunk
    pstart = _exclusive_cumsum(n_pages)  # first page of each chunk (+ end)
    items = recs["item_count"].astype(np.int64)
    icum = _exclusive_cumsum(items)
    recs["first_item"] = icum[:-1] - icum[pstart[key]]
    lcum = _exclusive_cumsum(recs["length"].astype(np.int64))
    ck_length = lcum[pstart[1:]] - lcum[pstart[:-1]]
    has_pages = n_pages > 0
    ck_offset = np.zeros(G * T, dtype=np.uint64)
    ck_offset[has_pages] = recs["offset"][pstart[:-1][has_pages]]
    # chunk flags: HAS_NAN / PREFIX_STATS of its pages, HAS_STATS with min/max over them
    ck_flags = c_flags.reshape(-1).copy()
    p_flags = recs["flags"].astype(np.int64)
    if len(recs):
        ck_flags[has_pages] |= np.bitwise_or.reduceat(
            p_flags & (L.FLAG_HAS_NAN | L.FLAG_PREFIX_STATS), pstart[:-1][has_pages])
    ck_minmax = np.zeros((G * T, 2), dtype="<u8")
    words = recs.view("<u8").reshape(len(recs), L.PAGE_DTYPE.itemsize // 8)
    for code, dt in _CODE_DTYPES.items():
        sel = np.flatnonzero(((p_flags & L.FLAG_HAS_STATS) != 0) & (p_kind == code))
        if not len(sel):
            continue
        ks = key[sel]
        first = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
        run = np.diff(np.r_[first, len(ks)])
        pos = np.arange(len(ks))
        for j, red in ((0, np.minimum), (1, np.maximum)):
            bits = words[sel, 2 + j]
            v = bits.view(dt)
            best = np.repeat(red.reduceat(v, first), run)
            # the first page holding the extreme gives the bits (0.0 and -0.0 tie)
            at = np.minimum.reduceat(np.where(v == best, pos, len(ks)), first)
            ck_minmax[ks[first], j] = bits[at]
        ck_flags[ks[first]] |= L.FLAG_HAS_STATS
    # ---- stream desc types
    live = c_items > 0
    state = c_flags & (L.FLAG_ALL_VALID | L.FLAG_ALL_NULL)
    all_valid = np.all(~live | (state == L.FLAG_ALL_VALID), axis=1)
    all_null = live.any(axis=1) & np.all(~live | (state == L.FLAG_ALL_NULL), axis=1)
    paged = has_pages.reshape(G, T).any(axis=1)
    desc = np.where(stype == L.STREAM_VALIDITY,
                    np.where(all_valid, L.DESC_USE_DEFAULT,
                             np.where(all_null, L.DESC_FORCE_NULL, L.DESC_FULL)),
                    np.where(paged, L.DESC_FULL, L.DESC_USE_DEFAULT))
    # ---- CMB sizes and section offsets (bytes, relative to each CMB)
    null_counts = np.array([e[4] for e in entries], dtype=np.int64)
    has_cmb = np.ones(E, dtype=bool)
    if src.num_rows:
        has_cmb[: src.num_columns] = null_counts[: src.num_columns] != src.num_rows
    full = (desc == L.DESC_FULL) & has_cmb[entry_of]
    fcum = _exclusive_cumsum(full)
    n_full = fcum[sbase[1:]] - fcum[sbase[:-1]]
    n_pg = np.bincount(entry_of[key // T] if T else np.zeros(0, np.int64), minlength=E)
    nl_off = 32 + 8 * T
    st_off = nl_off + 8 * T * n_nodes
    ck_off = st_off + 16 * n_streams
    pg_off = ck_off + 64 * T * n_full
    size = np.where(has_cmb, pg_off + 64 * n_pg, 0)
    start = _exclusive_cumsum(size)
    area = np.zeros(int(start[-1]) // 8, dtype="<u8")  # every section is 8-byte aligned
    word = start[:-1] // 8
    ids = np.flatnonzero(has_cmb)
    # header, stripe rows, node lengths
    hdr = np.zeros(len(ids), dtype=L.CMB_HEADER_DTYPE)
    hdr["magic"] = L.CMB_MAGIC
    hdr["num_stripes"] = T
    hdr["num_streams"] = n_streams[ids]
    hdr["num_nodes"] = n_nodes[ids]
    hdr["num_chunks"] = n_full[ids] * T
    hdr["num_pages"] = n_pg[ids]
    _put(area, word[ids], hdr)
    if T:
        area[(word[ids] + 4)[:, None] + np.arange(T)] = src.stripe_rows
        nl_count = T * n_nodes[ids]
        nl = np.fromiter(itertools.chain.from_iterable(
            itertools.chain.from_iterable(entries[e][3]) for e in ids.tolist()),
            dtype=np.uint64, count=int(nl_count.sum()))
        area[_ragged(word[ids] + nl_off // 8, nl_count)] = nl
    # stream metas
    gsel = np.flatnonzero(has_cmb[entry_of])
    ge = entry_of[gsel]
    smeta = np.zeros(len(gsel), dtype=L.STREAM_DTYPE)
    smeta["desc_type"] = desc[gsel]
    smeta["stream_type"] = stype[gsel]
    smeta["node"] = snode[gsel]
    smeta["kind"] = skind[gsel]
    smeta["dtype_code"] = scode[gsel]
    frank = fcum[gsel] - fcum[sbase[ge]]  # FULL streams before this one in its CMB
    smeta["chunks_offset"] = np.where(full[gsel], ck_off[ge] + 64 * T * frank, 0)
    _put(area, word[ge] + (st_off[ge] + 16 * (gsel - sbase[ge])) // 8, smeta)
    # chunk descs of the FULL streams
    fg = np.flatnonzero(full)
    if T and len(fg):
        ci = (fg[:, None] * T + np.arange(T)).reshape(-1)
        ce = entry_of[ci // T]
        page_base = _exclusive_cumsum(n_pg)[ce]  # the entry's first page (sorted order)
        cdesc = np.zeros(len(ci), dtype=L.CHUNK_DTYPE)
        cdesc["offset"] = ck_offset[ci]
        cdesc["length"] = ck_length[ci]
        cdesc["item_count"] = c_items.reshape(-1)[ci]
        cdesc["null_count"] = c_nulls.reshape(-1)[ci]
        cdesc["num_pages"] = n_pages[ci]
        cdesc["page_meta_offset"] = pg_off[ce] + 64 * (pstart[ci] - page_base)
        cdesc["flags"] = ck_flags[ci]
        cw = cdesc.view("<u8").reshape(len(ci), L.CHUNK_DTYPE.itemsize // 8)
        cw[:, 2:4] = ck_minmax[ci]
        crank = (fcum[ci // T] - fcum[sbase[ce]]) * T + ci % T
        _put(area, word[ce] + ck_off[ce] // 8 + 8 * crank, cdesc)
    # page metas
    if len(recs):
        pe = entry_of[key // T]
        prank = np.arange(len(recs)) - _exclusive_cumsum(n_pg)[pe]
        _put(area, word[pe] + pg_off[pe] // 8 + 8 * prank, recs)
    raw = area.data.cast("B")
    sums = np.zeros(E, dtype=np.uint64)
    sums[ids] = np.fromiter((L.checksum(raw[a : a + s])
                             for a, s in zip(start[ids].tolist(), size[ids].tolist(), strict=True)),
                            dtype=np.uint64, count=len(ids))
    return raw, start[:-1], size, sums


def _chunk_desc(counts: tuple[int, int, int], pages: list[tuple[list[Any], int]],
                page_meta_offset: int) -> bytes:
    """One packed ChunkDesc (:func:`_build_small`): ``counts`` are the chunk's
    (items, nulls, flags), ``pages`` its (PageMeta fields, statistics kind) in order.

    Its min/max are those of its pages with statistics (the first page holding the extreme
    gives the bits: 0.0 and -0.0 tie), per statistics kind, a later kind winning; its flags add
    the pages' HAS_NAN and PREFIX_STATS.
    """
    items, nulls, flags = counts
    lo = hi = _ZERO8
    if pages:
        offset, length = pages[0][0][0], 0
        for rec, _ in pages:
            flags |= rec[8] & (L.FLAG_HAS_NAN | L.FLAG_PREFIX_STATS)
            length += rec[4]
        stat = [(rec, kind) for rec, kind in pages if kind in _STAT_FORMATS and rec[8] & L.FLAG_HAS_STATS]
        if len(stat) == 1:
            lo, hi = stat[0][0][2], stat[0][0][3]
            flags |= L.FLAG_HAS_STATS
        elif stat:
            for code, fmt in _STAT_FORMATS.items():
                sel = [rec for rec, kind in stat if kind == code]
                if sel:
                    los = [fmt.unpack(rec[2])[0] for rec in sel]
                    his = [fmt.unpack(rec[3])[0] for rec in sel]
                    lo, hi = sel[los.index(min(los))][2], sel[his.index(max(his))][3]
            flags |= L.FLAG_HAS_STATS
    else:
        offset = length = 0
    return L.CHUNK_STRUCT.pack(offset, length, lo, hi, items, nulls, len(pages), page_meta_offset,
                            flags, 0)
