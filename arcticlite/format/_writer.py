"""Fermion writer: "data first, meta last" (seed 003, docs/format.md).

Rows are buffered into stripes; each stripe is decomposed into per-node streams, cut into
pages (default 512 KiB of raw values), encoded (``_encodings``), checksummed and appended to
the sink. The metadata (CMBs, schema entries, name index, CIT, footer) stays in memory until
:meth:`FermionWriter.close` writes it after the data.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arcticlite.exceptions import SchemaException, UserInputException
from arcticlite.format import _codec
from arcticlite.format import _layout as L
from arcticlite.format._parallel import run_jobs
from arcticlite.format._types import (
    BINARY,
    BOOL,
    BYTES,
    DICT,
    FIXED,
    FSL,
    LIST,
    NULL,
    STRUCT,
    Node,
    StreamSpec,
    build_nodes,
    serialize_field,
    serialize_schema_meta,
)

DEFAULT_STRIPE_ROWS = 1 << 20
_ZERO8 = b"\0" * 8


# ----------------------------------------------------------------------------- helpers
def _validity(arr: pa.Array) -> np.ndarray | None:
    """Validity of ``arr`` as a bool array, or None when it has no nulls."""
    n = len(arr)
    if n == 0 or arr.null_count == 0:
        return None
    if arr.null_count == n:
        return np.zeros(n, dtype=bool)
    buf = arr.buffers()[0]
    bits = np.frombuffer(buf, dtype=np.uint8)
    return np.unpackbits(bits, count=arr.offset + n, bitorder="little")[arr.offset:].view(bool)


def _bits(buf: pa.Buffer | None, offset: int, n: int) -> np.ndarray:
    if n == 0 or buf is None:
        return np.zeros(n, dtype=bool)
    bits = np.frombuffer(buf, dtype=np.uint8)
    return np.unpackbits(bits, count=offset + n, bitorder="little")[offset:].view(bool)


def _values(buf: pa.Buffer | None, dtype: np.dtype[Any], offset: int, n: int) -> np.ndarray:
    if buf is None or n == 0:
        return np.zeros(n, dtype=dtype)
    return np.frombuffer(buf, dtype=dtype, count=offset + n)[offset:]


def _ffill(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Null slots take the previous valid value (the first valid one for leading nulls)."""
    n = len(values)
    idx = np.where(valid, np.arange(n), 0)
    np.maximum.accumulate(idx, out=idx)
    first = int(np.argmax(valid))
    idx[:first] = first
    return values[idx]


def _stat_bytes(v: Any, kind: str) -> bytes:
    if kind == "i":
        return np.int64(v).tobytes()
    if kind == "u":
        return np.uint64(v).tobytes()
    if kind == "f":
        return np.float64(v).tobytes()
    return np.uint64(v).tobytes()


def prefix64(b: bytes) -> int:
    """First 8 bytes of ``b`` (zero padded) as a big-endian integer: monotone in ``b``."""
    return int.from_bytes(b[:8].ljust(8, b"\0"), "big")


def _cuts(n: int, per_page: int, cum: np.ndarray | None = None, page_size: int = 0,
          allowed: np.ndarray | None = None) -> np.ndarray:
    """Page boundaries ``[0, ..., n]`` for ``n`` items (batch boundaries in ``allowed``)."""
    if n == 0:
        return np.zeros(1, dtype=np.int64)
    per_page = max(1, per_page)
    if cum is None and allowed is None:
        return np.append(np.arange(0, n, per_page, dtype=np.int64), n)
    cuts = [0]
    pos = 0
    while pos < n:
        if cum is None:
            target = pos + per_page
        else:
            target = int(np.searchsorted(cum, cum[pos] + page_size, side="right")) - 1
            target = min(max(target, pos + 1), pos + per_page)
        target = min(target, n)
        if allowed is not None:
            j = int(np.searchsorted(allowed, target, side="right")) - 1
            c = int(allowed[j])
            if c <= pos:
                c = int(allowed[int(np.searchsorted(allowed, pos, side="right"))])
            target = c
        cuts.append(target)
        pos = target
    return np.asarray(cuts, dtype=np.int64)


# ----------------------------------------------------------------------------- state
@dataclass(slots=True)
class _Chunk:
    item_count: int
    null_count: int
    flags: int
    pages: list[dict[str, Any]] = field(default_factory=list)
    offset: int = 0
    length: int = 0


@dataclass(slots=True)
class _Column:
    field: pa.Field
    nodes: list[Node]
    streams: list[StreamSpec]
    chunks: list[list[_Chunk]]  # per stream, per stripe
    node_lengths: list[list[int]]  # per stripe, per node
    null_count: int = 0


@dataclass(slots=True)
class _PageJob:
    col: int
    stream: int
    chunk: _Chunk
    make: Callable[[], tuple[bytes, dict[str, Any]]]
    weight: int


class FermionWriter:
    """Write a Fermion file from Arrow tables or record batches.

    Parameters
    ----------
    sink
        A path, a binary file object, or None to collect the file in memory (returned by
        :meth:`close`).
    schema
        Schema of the file; defaults to the schema of the first table written.
    page_size
        Target raw bytes of values per page (unit of skipping and checksums).
    stripe_rows
        Rows buffered per stripe before its pages are encoded and written.
    parallel
        Encode pages in the shared thread pool.

    Notes
    -----
    Not thread-safe: one writer per thread. In batch mode (:meth:`append_batch`) a batch never
    straddles a page or a stripe.
    """

    def __init__(self, sink: Any = None, schema: pa.Schema | None = None, *,
                 page_size: int = L.DEFAULT_PAGE_SIZE, stripe_rows: int = DEFAULT_STRIPE_ROWS,
                 parallel: bool = True) -> None:
        if page_size < 64 or page_size > (1 << 30):
            raise UserInputException(f"page_size={page_size} must be within [64, 2**30]")
        if stripe_rows < 1:
            raise UserInputException("stripe_rows must be positive")
        self.page_size = int(page_size)
        self.stripe_rows = int(stripe_rows)
        self.parallel = parallel
        self._parts: list[bytes] | None = None
        self._file: Any = None
        self._own_file = False
        if sink is None:
            self._parts = []
        elif isinstance(sink, str | os.PathLike):
            self._file = open(Path(sink), "wb")  # noqa: SIM115 - closed in close()
            self._own_file = True
        else:
            self._file = sink
        self._pos = 0
        self._schema: pa.Schema | None = None
        self._columns: list[_Column] = []
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._pending_batches: list[tuple[int, int]] = []
        self._batch_mode: bool | None = None
        self._batch_ids: list[int] = []
        self._batch_lens: list[int] = []
        self._batch_stripes: list[tuple[np.ndarray, np.ndarray]] = []
        self._next_batch_id = 0
        self._num_rows = 0
        self._stripe_rows_list: list[int] = []
        self._closed = False
        self._emit(L.MAGIC + np.array([L.VERSION_MAJOR, L.VERSION_MINOR], "<u2").tobytes())
        if schema is not None:
            self._set_schema(schema)

    # -------------------------------------------------------------- input
    def _emit(self, data: bytes | memoryview) -> int:
        off = self._pos
        if self._parts is not None:
            self._parts.append(bytes(data))
        else:
            self._file.write(data)
        self._pos += len(data)
        return off

    def _set_schema(self, schema: pa.Schema) -> None:
        self._schema = schema
        for f in schema:
            nodes, streams = build_nodes(f.type)
            self._columns.append(_Column(f, nodes, streams, [[] for _ in streams], []))

    def _check(self, data: pa.Table | pa.RecordBatch) -> pa.Table:
        if self._closed:
            raise UserInputException("the writer is closed")
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        if not isinstance(data, pa.Table):
            raise UserInputException(f"expected a pyarrow Table or RecordBatch, got {type(data).__name__}")
        if self._schema is None:
            self._set_schema(data.schema)
        elif not data.schema.equals(self._schema, check_metadata=False):
            raise SchemaException(f"table schema {data.schema} does not match the file schema {self._schema}")
        return data

    def write(self, data: pa.Table | pa.RecordBatch) -> None:
        """Append rows (not in batch mode)."""
        data = self._check(data)
        if self._batch_mode:
            raise UserInputException("this writer is in batch mode: use append_batch()")
        self._batch_mode = False
        self._pending.append(data)
        self._pending_rows += data.num_rows
        while self._pending_rows >= self.stripe_rows:
            self._flush(self.stripe_rows)

    write_table = write

    def append_batch(self, data: pa.Table | pa.RecordBatch, batch_id: int | None = None) -> int:
        """Append one batch: its rows stay together in one page of every column.

        Returns the batch id (``batch_id`` or the next integer).
        """
        data = self._check(data)
        if self._batch_mode is False:
            raise UserInputException("rows were written with write(): batch mode is off")
        self._batch_mode = True
        bid = self._next_batch_id if batch_id is None else int(batch_id)
        self._next_batch_id = bid + 1
        self._pending.append(data)
        self._pending_batches.append((bid, data.num_rows))
        self._pending_rows += data.num_rows
        if self._pending_rows >= self.stripe_rows:
            self._flush(self._pending_rows)
        return bid

    # -------------------------------------------------------------- stripes
    def _flush(self, nrows: int) -> None:
        if not self._pending:
            return
        if not self._columns:  # pyarrow slices/concatenates 0-column tables wrongly: count rows
            total = self._pending_rows
            stripe, rest = _no_columns(min(nrows, total)), _no_columns(max(0, total - nrows))
        else:
            table = pa.concat_tables(self._pending) if len(self._pending) > 1 else self._pending[0]
            stripe, rest = table.slice(0, nrows), table.slice(nrows)
        self._pending = [rest] if rest.num_rows else []
        self._pending_rows = rest.num_rows
        allowed = None
        if self._batch_mode:
            ids = np.array([b for b, _ in self._pending_batches], dtype=np.int64)
            lens = np.array([n for _, n in self._pending_batches], dtype=np.int64)
            self._pending_batches = []
            self._batch_stripes.append((ids, lens))
            allowed = np.unique(np.concatenate([[0], np.cumsum(lens)]))
        self._write_stripe(stripe, allowed)

    def _write_stripe(self, table: pa.Table, allowed: np.ndarray | None) -> None:
        n = table.num_rows
        jobs: list[_PageJob] = []
        for ci, col in enumerate(self._columns):
            ca = table.column(ci)
            arr = ca.combine_chunks() if ca.num_chunks != 1 else ca.chunk(0)
            col.null_count += arr.null_count
            lengths = [0] * len(col.nodes)
            for s in range(len(col.streams)):
                col.chunks[s].append(_Chunk(0, 0, 0))
            self._decompose(ci, col, 0, arr, allowed, lengths, jobs)
            col.node_lengths.append(lengths)
        results = run_jobs([j.make for j in jobs], [j.weight for j in jobs], parallel=self.parallel)
        for job, (blob, meta) in zip(jobs, results, strict=True):
            off = self._emit(blob)
            if not job.chunk.pages:
                job.chunk.offset = off
            job.chunk.length += len(blob)
            meta["offset"] = off
            meta["length"] = len(blob)
            meta["checksum"] = L.checksum(blob)
            meta["encoding"] = blob[0] if blob else 0
            job.chunk.pages.append(meta)
        self._stripe_rows_list.append(n)
        self._num_rows += n

    def _decompose(self, ci: int, col: _Column, ni: int, arr: pa.Array,
                   allowed: np.ndarray | None, lengths: list[int], jobs: list[_PageJob]) -> None:
        node = col.nodes[ni]
        n = len(arr)
        lengths[ni] = n
        if node.kind == NULL:
            return
        valid = _validity(arr)
        nulls = arr.null_count
        vchunk = col.chunks[node.streams[0]][-1]
        vchunk.item_count, vchunk.null_count = n, nulls
        for s in node.streams[1:]:
            c = col.chunks[s][-1]
            c.item_count, c.null_count = n, nulls
        if n and nulls == n:
            vchunk.flags = L.FLAG_ALL_NULL
            return
        vchunk.flags = L.FLAG_ALL_VALID if valid is None else 0
        ps = self.page_size
        t = node.type
        off = arr.offset
        bufs = arr.buffers()
        cum = None
        if node.kind == FIXED:
            assert node.dtype is not None
            vals = _values(bufs[1], node.dtype, off, n)
            per_page = ps // node.dtype.itemsize
        elif node.kind == BYTES:
            vals = _values(bufs[1], np.dtype(np.uint8), off * node.width, n * node.width)
            per_page = ps // node.width
        elif node.kind == BOOL:
            vals = _bits(bufs[1], off, n)
            per_page = ps * 8
        elif node.kind == DICT:
            assert node.dtype is not None
            vals = _values(bufs[1], node.dtype, off, n)
            per_page = ps // node.dtype.itemsize
        elif node.kind == BINARY:
            odt = np.dtype(np.int64 if pa.types.is_large_string(t) or pa.types.is_large_binary(t) else np.int32)
            offs = _values(bufs[1], odt, off, n + 1)
            data = bufs[2] if bufs[2] is not None else pa.py_buffer(b"")
            cum = (offs - offs[0]).astype(np.int64)
            per_page = max(8, ps // 4)
        elif node.kind == LIST:
            assert node.dtype is not None
            offs = _values(bufs[1], node.dtype, off, n + 1)
            vals = np.diff(offs)
            per_page = ps // node.dtype.itemsize
        else:  # STRUCT, FSL: validity only
            per_page = ps * 8
        cuts = _cuts(n, per_page, cum, ps, allowed)
        if valid is not None and node.kind in (FIXED, DICT):
            vals = _ffill(vals, valid)
        # ---- page jobs
        for s in node.streams:
            spec = col.streams[s]
            chunk = col.chunks[s][-1]
            if spec.stream_type == L.STREAM_VALIDITY and valid is None:
                continue
            for p in range(len(cuts) - 1):
                r0, r1 = int(cuts[p]), int(cuts[p + 1])
                vslice = None if valid is None else valid[r0:r1]
                if spec.stream_type == L.STREAM_VALIDITY:
                    make = _job_bitmap(vslice, r0, r1, vslice)
                    w = (r1 - r0) // 8
                elif node.kind == BINARY:
                    make = _job_binary(offs[r0 : r1 + 1], data, arr.slice(r0, r1 - r0), r0, r1, vslice)
                    assert cum is not None
                    w = int(cum[r1] - cum[r0])
                elif node.kind == BOOL:
                    make = _job_bitmap(vals[r0:r1], r0, r1, vslice)
                    w = (r1 - r0) // 8
                elif node.kind == BYTES:
                    make = _job_fixed(vals[r0 * node.width : r1 * node.width], "", r0, r1, vslice,
                                      r1 - r0)
                    w = (r1 - r0) * node.width
                else:
                    make = _job_fixed(vals[r0:r1], node.stats if node.kind == FIXED else "", r0, r1,
                                      vslice, r1 - r0)
                    w = (r1 - r0) * vals.itemsize
                jobs.append(_PageJob(ci, s, chunk, make, w))
        # ---- children
        if node.kind == LIST:
            base, end = int(offs[0]), int(offs[-1])
            child = arr.values.slice(base, end - base)
            callowed = None if allowed is None else np.unique(offs[allowed] - base)
            self._decompose(ci, col, node.children[0], child, callowed, lengths, jobs)
        elif node.kind == FSL:
            child = arr.values.slice(off * node.width, n * node.width)
            callowed = None if allowed is None else allowed * node.width
            self._decompose(ci, col, node.children[0], child, callowed, lengths, jobs)
        elif node.kind == STRUCT:
            for i, kid in enumerate(node.children):
                self._decompose(ci, col, kid, arr.field(i), allowed, lengths, jobs)
        elif node.kind == DICT:
            self._decompose(ci, col, node.children[0], arr.dictionary, None, lengths, jobs)

    # -------------------------------------------------------------- close
    def close(self) -> bytes | None:
        """Flush buffered rows, write the metadata, and return the file bytes (memory sink)."""
        if self._closed:
            raise UserInputException("the writer is already closed")
        if self._schema is None:
            self._set_schema(pa.schema([]))
        if self._pending_rows or self._pending_batches:
            self._flush(self._pending_rows)
        self._closed = True
        batch_chunks = self._write_batch_pages() if self._batch_mode else None
        data_end = self._pos
        cmbs: list[tuple[int, int, int, int]] = []  # offset, length, checksum, flags
        for col in self._columns:
            cmbs.append(self._write_cmb(col))
        if batch_chunks is not None:
            cmbs.append(self._write_batch_cmb(batch_chunks))
        cmb_end = self._pos
        schema_off = self._pos
        fields: list[tuple[int, int, int]] = []
        for col in self._columns:
            blob = serialize_field(col.field)
            fields.append((self._emit(blob), len(blob), L.checksum(blob)))
        if self._batch_mode:
            blob = serialize_field(pa.field("__batch_meta__", pa.int64()))
            fields.append((self._emit(blob), len(blob), L.checksum(blob)))
        meta_blob = serialize_schema_meta(self._schema.metadata if self._schema is not None else None)
        meta_off = self._emit(meta_blob)
        schema_len = self._pos - schema_off
        ncols = len(self._columns)
        slots = self._name_index([c.field.name for c in self._columns])
        name_off = self._emit(slots.tobytes())
        cit = np.zeros(len(cmbs), dtype=L.CIT_DTYPE)
        for i, ((co, cl, cc, cf), (fo, fl, fc)) in enumerate(zip(cmbs, fields, strict=True)):
            cit[i] = (co, fo, cc, fc, 0, cl, fl, cf, 0, 0)
        for i, col in enumerate(self._columns):
            cit[i]["null_count"] = col.null_count
        cit["checksum"] = L.cit_entry_checksums(cit)
        cit_off = self._emit(cit.tobytes())
        footer = np.zeros(1, dtype=L.FOOTER_DTYPE)
        f = footer[0]
        f["num_rows"] = self._num_rows
        f["cmb_area_offset"], f["cmb_area_length"] = data_end, cmb_end - data_end
        f["schema_offset"], f["schema_length"] = schema_off, schema_len
        f["schema_meta_offset"], f["schema_meta_length"] = meta_off, len(meta_blob)
        f["num_columns"] = ncols
        f["name_index_offset"], f["name_index_slots"] = name_off, len(slots)
        f["num_stripes"] = len(self._stripe_rows_list)
        f["cit_offset"], f["cit_entries"] = cit_off, len(cit)
        f["page_size"] = self.page_size
        f["settings"] = L.SETTING_BATCH_MODE if self._batch_mode else 0
        f["schema_meta_checksum"] = L.checksum(meta_blob)
        f["version_major"], f["version_minor"] = L.VERSION_MAJOR, L.VERSION_MINOR
        f["footer_size"], f["magic"] = L.FOOTER_SIZE, L.MAGIC
        f["footer_checksum"] = L.footer_checksum(footer.tobytes())
        self._emit(footer.tobytes())
        if self._parts is not None:
            out = b"".join(self._parts)
            self._parts = []
            return out
        if self._own_file:
            self._file.close()
        else:
            self._file.flush()
        return None

    def _name_index(self, names: list[str]) -> np.ndarray:
        m = 2
        while m < 2 * len(names):
            m *= 2
        slots = np.zeros(m, dtype=L.NAME_SLOT_DTYPE)
        slots["column"] = L.EMPTY_SLOT
        hashes = [L.name_hash(nm) for nm in names]
        mask = m - 1
        for i, h in enumerate(hashes):
            j = h & mask
            while slots[j]["column"] != L.EMPTY_SLOT:
                j = (j + 1) & mask
            slots[j]["hash"], slots[j]["column"] = h, i
        slots["check"] = [L.slot_check(int(h), int(c)) for h, c in zip(slots["hash"], slots["column"], strict=True)]
        return slots

    def _cmb_bytes(self, streams: list[StreamSpec], chunks: list[list[_Chunk]],
                   node_lengths: np.ndarray, num_nodes: int, stream_nodes: list[int]) -> bytes:
        nstripes = len(self._stripe_rows_list)
        nstreams = len(streams)
        smeta = np.zeros(nstreams, dtype=L.STREAM_DTYPE)
        full: list[int] = []
        for s, spec in enumerate(streams):
            cs = chunks[s]
            smeta[s]["stream_type"], smeta[s]["node"] = spec.stream_type, stream_nodes[s]
            smeta[s]["kind"], smeta[s]["dtype_code"] = spec.kind, spec.dtype_code
            if spec.stream_type == L.STREAM_VALIDITY:
                states = {c.flags & (L.FLAG_ALL_VALID | L.FLAG_ALL_NULL) for c in cs if c.item_count}
                if states <= {L.FLAG_ALL_VALID}:
                    smeta[s]["desc_type"] = L.DESC_USE_DEFAULT
                    continue
                if states == {L.FLAG_ALL_NULL}:
                    smeta[s]["desc_type"] = L.DESC_FORCE_NULL
                    continue
            elif not any(c.pages for c in cs):
                smeta[s]["desc_type"] = L.DESC_USE_DEFAULT
                continue
            smeta[s]["desc_type"] = L.DESC_FULL
            full.append(s)
        npages = sum(len(c.pages) for s in full for c in chunks[s])
        sec = L.cmb_sections(nstripes, num_nodes, nstreams, len(full) * nstripes, npages)
        header = np.zeros(1, dtype=L.CMB_HEADER_DTYPE)
        header[0] = (L.CMB_MAGIC, nstripes, nstreams, num_nodes, len(full) * nstripes, npages, 0)
        stripes = np.array(self._stripe_rows_list, dtype="<u8")
        cdesc = np.zeros(len(full) * nstripes, dtype=L.CHUNK_DTYPE)
        pages = np.zeros(npages, dtype=L.PAGE_DTYPE)
        ci = pi = 0
        for s in full:
            smeta[s]["chunks_offset"] = sec["chunks"][0] + ci * L.CHUNK_DTYPE.itemsize
            kind = ""
            for c in chunks[s]:
                d = cdesc[ci]
                d["offset"], d["length"] = c.offset, c.length
                d["item_count"], d["null_count"] = c.item_count, c.null_count
                d["num_pages"] = len(c.pages)
                d["page_meta_offset"] = sec["pages"][0] + pi * L.PAGE_DTYPE.itemsize
                flags = c.flags
                mins, maxs = [], []
                first = 0
                for pm in c.pages:
                    p = pages[pi]
                    for k in ("offset", "checksum", "length", "raw_length", "item_count",
                              "null_count", "flags", "encoding"):
                        p[k] = pm[k]
                    p["first_item"] = first
                    first += pm["item_count"]
                    p["min"], p["max"] = pm.get("min", _ZERO8), pm.get("max", _ZERO8)
                    if pm["flags"] & L.FLAG_HAS_STATS:
                        kind = pm["kind"]
                        mins.append(pm["vmin"])
                        maxs.append(pm["vmax"])
                    flags |= pm["flags"] & (L.FLAG_HAS_NAN | L.FLAG_PREFIX_STATS)
                    pi += 1
                if mins:
                    d["min"], d["max"] = _stat_bytes(min(mins), kind), _stat_bytes(max(maxs), kind)
                    flags |= L.FLAG_HAS_STATS
                d["flags"] = flags
                ci += 1
        return b"".join([header.tobytes(), stripes.tobytes(),
                         np.ascontiguousarray(node_lengths, dtype="<u8").tobytes(),
                         smeta.tobytes(), cdesc.tobytes(), pages.tobytes()])

    def _write_cmb(self, col: _Column) -> tuple[int, int, int, int]:
        if self._num_rows and col.null_count == self._num_rows:
            return self._pos, 0, 0, L.CIT_ALL_NULL
        stream_nodes = [0] * len(col.streams)
        for nd in col.nodes:
            for s in nd.streams:
                stream_nodes[s] = nd.index
        nl = np.array(col.node_lengths, dtype=np.uint64).reshape(len(self._stripe_rows_list), len(col.nodes))
        blob = self._cmb_bytes(col.streams, col.chunks, nl, len(col.nodes), stream_nodes)
        return self._emit(blob), len(blob), L.checksum(blob), 0

    def _write_batch_pages(self) -> list[list[_Chunk]]:
        chunks: list[list[_Chunk]] = [[], []]
        for ids, lens in self._batch_stripes:
            for s, vals in enumerate((ids, lens)):
                c = _Chunk(len(vals), 0, 0)
                if len(vals):
                    blob, meta = _job_fixed(vals, "i" if s == 0 else "", 0, len(vals), None, len(vals))()
                    c.offset = self._emit(blob)
                    c.length = len(blob)
                    meta.update(offset=c.offset, length=len(blob), checksum=L.checksum(blob),
                                encoding=blob[0])
                    c.pages.append(meta)
                chunks[s].append(c)
        return chunks

    def _write_batch_cmb(self, chunks: list[list[_Chunk]]) -> tuple[int, int, int, int]:
        specs = [StreamSpec(L.STREAM_BATCH_META, L.KIND_FIXED, np.dtype(np.int64)),
                 StreamSpec(L.STREAM_BATCH_META, L.KIND_FIXED, np.dtype(np.int64))]
        nl = np.array([[len(ids)] for ids, _ in self._batch_stripes], dtype=np.uint64).reshape(-1, 1)
        blob = self._cmb_bytes(specs, chunks, nl, 1, [0, 0])
        return self._emit(blob), len(blob), L.checksum(blob), L.CIT_SYSTEM_BATCH_META

    def __enter__(self) -> FermionWriter:
        return self

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        if exc_type is None and not self._closed:
            self.close()
        elif self._own_file and self._file is not None and not self._file.closed:
            self._file.close()


def _no_columns(n: int) -> pa.Table:
    return pa.table({"_": pa.nulls(n)}).select([])


# ----------------------------------------------------------------------------- page jobs
def _base_meta(r0: int, r1: int, valid: np.ndarray | None, raw: int) -> dict[str, Any]:
    nn = 0 if valid is None else int((r1 - r0) - np.count_nonzero(valid))
    return {"item_count": r1 - r0, "null_count": nn, "raw_length": raw, "flags": 0}


def _job_bitmap(bools: np.ndarray | None, r0: int, r1: int, valid: np.ndarray | None
                ) -> Callable[[], tuple[bytes, dict[str, Any]]]:
    def make() -> tuple[bytes, dict[str, Any]]:
        assert bools is not None
        packed = np.packbits(bools, bitorder="little")
        return _codec.encode_fixed(packed), _base_meta(r0, r1, valid, len(packed))
    return make


def _job_fixed(vals: np.ndarray, stats: str, r0: int, r1: int, valid: np.ndarray | None,
               count: int) -> Callable[[], tuple[bytes, dict[str, Any]]]:
    def make() -> tuple[bytes, dict[str, Any]]:
        v = np.ascontiguousarray(vals)
        blob = _codec.encode_fixed(v)
        meta = _base_meta(r0, r1, valid, v.nbytes)
        if stats and count:
            sv = v if valid is None else v[valid]
            if len(sv):
                lo, hi = sv.min(), sv.max()
                if stats == "f" and (np.isnan(lo) or np.isnan(hi)):
                    meta["flags"] |= L.FLAG_HAS_NAN
                    lo, hi = np.fmin.reduce(sv), np.fmax.reduce(sv)
                if not (stats == "f" and np.isnan(lo)):
                    lo, hi = (int(lo), int(hi)) if stats in "iu" else (float(lo), float(hi))
                    meta.update(min=_stat_bytes(lo, stats), max=_stat_bytes(hi, stats), vmin=lo,
                                vmax=hi, kind=stats)
                    meta["flags"] |= L.FLAG_HAS_STATS
        return blob, meta
    return make


def _job_binary(offs: np.ndarray, data: pa.Buffer, arr: pa.Array, r0: int, r1: int,
                valid: np.ndarray | None) -> Callable[[], tuple[bytes, dict[str, Any]]]:
    def make() -> tuple[bytes, dict[str, Any]]:
        blob = _codec.encode_binary(offs, data)
        meta = _base_meta(r0, r1, valid, int(offs[-1] - offs[0]) + 4 * (r1 - r0 + 1))
        if arr.null_count < len(arr):
            mm = pc.min_max(arr)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            if isinstance(lo, str):
                lo, hi = lo.encode("utf-8", "surrogatepass"), hi.encode("utf-8", "surrogatepass")
            plo, phi = prefix64(lo), prefix64(hi)
            meta.update(min=_stat_bytes(plo, "u"), max=_stat_bytes(phi, "u"), vmin=plo, vmax=phi,
                        kind="u", flags=L.FLAG_HAS_STATS | L.FLAG_PREFIX_STATS)
        return blob, meta
    return make
