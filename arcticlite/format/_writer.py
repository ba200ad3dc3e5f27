"""Fermion writer: "data first, meta last" (seed 003, docs/format.md).

Rows are buffered into stripes; each stripe is decomposed into per-node streams, cut into
pages (default 512 KiB of raw values), encoded (``_encodings``), checksummed and appended to
the sink. The metadata stays in memory as flat page and chunk records until
:meth:`FermionWriter.close`, which builds every CMB at once and writes the CMBs, schema
entries, name index, CIT and footer after the data.

Cost model: a wide table (thousands of one-page columns) must not pay per-column Python work
beyond cutting its pages and running one page job. So the incompressibility test of all float
pages of a stripe runs in bulk (``_encodings.incompressible_many``); a page it marks is written
straight from the Arrow buffer (``_encodings.plain_parts`` and ``os.writev``: no blob is
built); and the CMBs of all columns are assembled by array operations over all page and chunk
records (``_writer_cmb``), not column by column.

A small file (a few columns in one stripe: every small append to a symbol) is the opposite case:
there the fixed cost of each numpy call dominates, so its CMBs (``_writer_cmb``), and the
CIT, name index and footer of every file, are packed record by record with ``struct``.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import itertools
import os
import struct
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from arcticlite.exceptions import SchemaException, UserInputException
from arcticlite.format import _bloom, _kernels
from arcticlite.format import _layout as L
from arcticlite.format._enc_policy import (
    DISTINCT_FILES,
    POLICIES,
    REUSE,
    SIZE,
    dictionary_key,
    run_with,
)
from arcticlite.format._encodings import incompressible_many
from arcticlite.format._parallel import MIN_PARALLEL_BYTES, run_jobs
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
from arcticlite.format._writer_cmb import CmbSource, build_cmbs
from arcticlite.format._writer_pages import (
    BinaryPage,
    BitmapPage,
    DictBinaryPage,
    FixedPage,
    PageOut,
)

DEFAULT_STRIPE_ROWS = 1 << 20
_GROUP_BYTES = 8 << 20
"""Raw bytes of the pages encoded (and handed to the sink) together."""


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


def _carries(data: pa.Schema, declared: pa.Schema) -> bool:
    """Whether ``data`` matches the file schema ``declared`` but for string / binary columns
    whose values arrive dictionary-encoded (stored as plain values: the file is the same)."""
    if data.names != declared.names:
        return False
    for have, want in zip(data.types, declared.types, strict=True):
        if have == want:
            continue
        if not (pa.types.is_dictionary(have) and have.value_type == want and not have.ordered
                and (pa.types.is_string(want) or pa.types.is_large_string(want)
                     or pa.types.is_binary(want) or pa.types.is_large_binary(want))):
            return False
    return True


def _dictionary_offsets(dictionary: pa.Array) -> np.ndarray:
    """int64 offsets (from the array's first value) of a string / binary ``dictionary``."""
    t = dictionary.type
    odt = np.dtype(np.int64 if pa.types.is_large_string(t) or pa.types.is_large_binary(t) else np.int32)
    offs = _values(dictionary.buffers()[1], odt, dictionary.offset, len(dictionary) + 1)
    return (offs - offs[0]).astype(np.int64)


def _used_values(chunk: pa.DictionaryArray) -> pa.Array:
    """The dictionary values that ``chunk`` uses (nulls aside): its dictionary itself when
    it uses every entry."""
    codes = chunk.indices.drop_null().to_numpy(zero_copy_only=False)
    used = np.flatnonzero(_kernels.code_counts(codes, len(chunk.dictionary)))
    if len(used) == len(chunk.dictionary):
        return chunk.dictionary
    return chunk.dictionary.take(pa.array(used))


def _cuts(n: int, per_page: int, cum: np.ndarray | None = None, page_size: int = 0,
          allowed: np.ndarray | None = None) -> list[int]:
    """Page boundaries ``[0, ..., n]`` for ``n`` items (batch boundaries in ``allowed``)."""
    if n == 0:
        return [0]
    per_page = max(1, per_page)
    if cum is None and allowed is None:
        if n <= per_page:
            return [0, n]
        return [*range(0, n, per_page), n]
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
    return cuts


# ----------------------------------------------------------------------------- single records
# A handful of records (the footer, the CIT and name index of a narrow table, the CMBs of a
# small one) are packed one by one with the ``struct`` twins of the layout dtypes
# (``L.*_STRUCT``, shared with the reader): a numpy record array costs microseconds per field
# assignment, which is most of the cost of writing a small file.
_U32, _U64 = struct.Struct("<I"), struct.Struct("<Q")
_HEADER = L.MAGIC + struct.pack("<HH", L.VERSION_MAJOR, L.VERSION_MINOR)
_UNSET = object()
_HEADER_BLOOM = L.MAGIC + struct.pack("<HH", L.VERSION_MAJOR, L.VERSION_MINOR_BLOOM)


def _name_slot(h: int, column: int) -> bytes:
    """A name index slot: name hash, column and their check (``L.slot_check``)."""
    head = L.NAME_SLOT_HEAD_STRUCT.pack(h, column)
    return head + _U32.pack(L.checksum(head) & 0xFFFFFFFF)


_EMPTY_SLOT = _name_slot(0, L.EMPTY_SLOT)
"""An empty name index slot: the same in every file."""


# ----------------------------------------------------------------------------- output
class _Sink:
    """The writer's output: buffers are gathered and written in few large calls.

    :meth:`add` keeps the buffers it is given (no copy) until they are written, so page values
    go from the Arrow buffers to the file without an intermediate blob. A file the writer
    opened itself is written with ``os.writev``; once ``FLUSH_BYTES`` are gathered they are
    handed to a background thread (created on the first such write, so small files never start
    one), which writes in order while the writer encodes the next pages. :meth:`flush` writes
    the rest and waits: the writer calls it before ``write``/``append_batch`` return, so no
    reference to the caller's data outlives the call. Another file object gets one ``write``
    of the joined buffers per flush. The memory sink joins the buffers into a chunk on
    :meth:`flush` only: those of the last stripe (which close() only starts) and of the metadata
    are joined once, with the chunks, by :meth:`getvalue` (a one-stripe file is copied once).
    """

    FLUSH_BYTES = 8 << 20
    MAX_PARTS = 1000  # under IOV_MAX (1024 on Linux) buffers per writev

    def __init__(self, file: Any, vectored: bool) -> None:
        self.file = file  # None: memory
        self.vectored = vectored
        self.pos = 0
        self._parts: list[Any] = []
        self._pending = 0
        self._chunks: list[bytes] = []
        self._io: ThreadPoolExecutor | None = None
        self._inflight: list[Future[None]] = []

    def add(self, data: bytes | memoryview) -> int:
        """Append ``data`` (bytes or a byte-format memoryview); return its offset."""
        off = self.pos
        n = len(data)
        self._parts.append(data)
        self.pos += n
        self._pending += n
        if self._pending >= self.FLUSH_BYTES or len(self._parts) >= self.MAX_PARTS:
            self._write(background=True)
        return off

    def add_parts(self, parts: tuple[Any, ...]) -> int:
        """Append the buffers of one blob; return the blob's offset."""
        off = self.pos
        for p in parts:
            self.add(p)
        return off

    def start(self) -> None:
        """Start writing everything gathered (in the background for a writer-owned file)."""
        self._write(background=True)

    def flush(self) -> None:
        """Write everything gathered and wait until every background write is done."""
        self._write(background=False)
        self._wait()

    def _write(self, background: bool) -> None:
        parts = self._parts
        if not parts or (self.file is None and background):  # memory: nothing to start
            return
        self._parts, self._pending = [], 0
        if self.file is None:
            self._chunks.append(b"".join(parts))
        elif self.vectored:
            if background:
                if self._io is None:
                    self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fermion-io")
                self._inflight.append(self._io.submit(_writev_all, self.file, parts))
                return
            self._wait()
            _writev_all(self.file, parts)
        else:
            self.file.write(parts[0] if len(parts) == 1 else b"".join(parts))

    def _wait(self) -> None:
        inflight, self._inflight = self._inflight, []
        for fut in inflight:
            fut.result()

    def shutdown(self) -> None:
        """Wait for background writes (ignoring their errors: the caller is failing or has
        already seen them) and stop the background thread."""
        for fut in self._inflight:
            fut.exception()
        self._inflight = []
        if self._io is not None:
            self._io.shutdown(wait=True)
            self._io = None

    def getvalue(self) -> bytes:
        """The memory sink's file: its chunks and the buffers gathered since, joined."""
        pieces = [*self._chunks, *self._parts]
        self._chunks, self._parts, self._pending = [], [], 0
        return pieces[0] if len(pieces) == 1 and type(pieces[0]) is bytes else b"".join(pieces)


def _writev_all(file: Any, parts: list[Any]) -> None:
    """``os.writev`` every byte of ``parts`` to ``file`` (resuming after short writes)."""
    fd = file.fileno()
    for i in range(0, len(parts), _Sink.MAX_PARTS):
        batch = parts[i : i + _Sink.MAX_PARTS]
        left = sum(len(p) for p in batch)
        while left:
            done = os.writev(fd, batch)
            left -= done
            if not left:
                break
            k = 0
            while done >= len(batch[k]):
                done -= len(batch[k])
                k += 1
            batch = [memoryview(batch[k])[done:], *batch[k + 1 :]]


def _run_all(jobs: list[Any]) -> list[Any]:
    return [job() for job in jobs]


def _groups(weights: list[int], size: int) -> list[tuple[int, int]]:
    """Split jobs into consecutive groups of about ``size`` total weight."""
    if not weights:
        return []
    if sum(weights) <= size:  # one group (the common case of a small stripe), without numpy
        return [(0, len(weights))]
    cw = np.cumsum(weights)
    cuts = np.unique(np.searchsorted(cw, np.arange(size, int(cw[-1]), size), side="left") + 1)
    bounds = [0, *cuts[cuts < len(weights)].tolist(), len(weights)]
    return list(itertools.pairwise(bounds))


# ----------------------------------------------------------------------------- state
@dataclass(slots=True)
class _Column:
    field: pa.Field
    nodes: list[Node]
    streams: list[StreamSpec]
    stream_base: int  # index of the column's first stream among all streams of the file
    node_lengths: list[list[int]] = field(default_factory=list)  # per stripe, per node
    null_count: int = 0


@functools.lru_cache(maxsize=4096)
def _stream_layout(t: pa.DataType) -> tuple[tuple[int, ...], ...]:
    """(stream_type, node, kind, dtype_code) of each stream of a column of type ``t``."""
    nodes, streams = build_nodes(t)
    node_of = [0] * len(streams)
    for nd in nodes:
        for s in nd.streams:
            node_of[s] = nd.index
    return (tuple(s.stream_type for s in streams), tuple(node_of),
            tuple(s.kind for s in streams), tuple(s.dtype_code for s in streams))


_BATCH_LAYOUT = ((L.STREAM_BATCH_META,) * 2, (0, 0), (L.KIND_FIXED,) * 2,
                 (L.DTYPE_CODES["int64"],) * 2)


class _StripeWork:
    """What decomposing one stripe produces: chunk counts per stream and the page jobs."""

    __slots__ = ("items", "nulls", "flags", "streams", "jobs", "weights", "floats", "float_at")

    def __init__(self, num_streams: int) -> None:
        self.items = [0] * num_streams
        self.nulls = [0] * num_streams
        self.flags = [0] * num_streams
        self.streams: list[int] = []  # stream of each page job
        self.jobs: list[Any] = []
        self.weights: list[int] = []
        self.floats: list[FixedPage] = []  # float pages: candidates of the bulk gate
        self.float_at: list[int] = []  # their job indices

    def add(self, stream: int, job: Any, weight: int) -> None:
        self.streams.append(stream)
        self.jobs.append(job)
        self.weights.append(weight)


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
    optimize_for
        ``"size"`` (default): the smallest encoding and codec of each page. ``"read"``: only
        encodings that decode fast (LZ4 instead of ZSTD, run-length encoding only for long
        runs), for data read far more often than stored; see :mod:`._enc_policy`.
    choices
        A dict shared by the writers of many files with one schema (the segments of one bulk
        write): each stream's encoding choice (scheme, mode, codec) is made on its first page
        and reused for the next pages, searched again every few pages. Writes faster; the
        files are the same format, at most slightly larger.
    bloom_min_distinct
        Write a Bloom filter for each integer or string column with at least this many
        distinct values in the file (None: no filters; integer columns sorted in the file get
        none, their page min/max prune equality already).
    bloom_max_fraction
        The filters take at most this share of the data written (default 3 %): the smallest
        filters first; a column whose filter does not fit in what is left gets none (a column
        of distinct random integers would cost 10 bits a row).

    Notes
    -----
    Not thread-safe: one writer per thread. In batch mode (:meth:`append_batch`) a batch never
    straddles a page or a stripe.
    """

    def __init__(self, sink: Any = None, schema: pa.Schema | None = None, *,
                 page_size: int = L.DEFAULT_PAGE_SIZE, stripe_rows: int = DEFAULT_STRIPE_ROWS,
                 parallel: bool = True, optimize_for: str = "size",
                 choices: dict[Any, Any] | None = None, bloom_min_distinct: int | None = None,
                 bloom_max_fraction: float = _bloom.MAX_FRACTION) -> None:
        if not isinstance(bloom_max_fraction, int | float) or isinstance(bloom_max_fraction, bool) \
                or not 0 <= bloom_max_fraction <= 1:
            raise UserInputException(f"bloom_max_fraction={bloom_max_fraction!r} must be a number "
                                     "between 0 and 1 (the filters' share of the data written)")
        if bloom_min_distinct is not None and (isinstance(bloom_min_distinct, bool)
                                               or not isinstance(bloom_min_distinct, int | np.integer)
                                               or bloom_min_distinct < 1):
            raise UserInputException(f"bloom_min_distinct={bloom_min_distinct!r} must be a positive int "
                                     "(or None: no Bloom filters)")
        if optimize_for not in POLICIES:
            raise UserInputException(f"optimize_for={optimize_for!r} is not one of "
                                     f"{sorted(POLICIES)}")
        self._policy = POLICIES[optimize_for]
        if choices is not None:  # a bulk write's memo of encoding choices, shared by its files
            self._policy = dataclasses.replace(self._policy, memo=choices)
        if page_size < 64 or page_size > (1 << 30):
            raise UserInputException(f"page_size={page_size} must be within [64, 2**30]")
        if stripe_rows < 1:
            raise UserInputException("stripe_rows must be positive")
        self.page_size = int(page_size)
        self.stripe_rows = int(stripe_rows)
        self.parallel = parallel
        self._file: Any = None
        self._own_file = False
        vectored = False
        if isinstance(sink, str | os.PathLike):
            vectored = hasattr(os, "writev")  # unbuffered: the sink gathers buffers for writev
            self._file = open(Path(sink), "wb", buffering=0 if vectored else -1)  # noqa: SIM115 - closed in close()
            self._own_file = True
        elif sink is not None:
            self._file = sink
        self._out = _Sink(self._file, vectored)
        self._schema: pa.Schema | None = None
        self._columns: list[_Column] = []
        self._num_streams = 0
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._pending_batches: list[tuple[int, int]] = []
        self._batch_mode: bool | None = None
        self._batch_stripes: list[tuple[np.ndarray, np.ndarray]] = []
        self._next_batch_id = 0
        self._num_rows = 0
        self._stripe_rows_list: list[int] = []
        # per stripe: (3, streams) item/null counts and flags of every chunk
        self._chunk_counts: list[np.ndarray] = []
        # per group of pages: (stripe, stream of each page, their packed PageMeta records,
        # statistics kind code of each page)
        self._page_recs: list[tuple[int, list[int], bytes, bytes]] = []
        self._closed = False
        self._bloom_min = None if bloom_min_distinct is None else int(bloom_min_distinct)
        self._bloom_fraction = float(bloom_max_fraction)
        # per column: the chunks written so far (None: not eligible), and for integer
        # columns the last value while the column is still sorted
        self._bloom_vals: dict[int, list[pa.Array] | None] = {}
        self._bloom_last: dict[int, Any] = {}
        # per column carried dictionary-encoded whose one chunk used its whole dictionary: the
        # dictionary's identity, under which a bulk write's memo keeps its filter
        self._bloom_whole: dict[int, tuple[Any, ...]] = {}
        self._out.add(_HEADER if self._bloom_min is None else _HEADER_BLOOM)
        if schema is not None:
            self._set_schema(schema)

    # -------------------------------------------------------------- input
    def _set_schema(self, schema: pa.Schema) -> None:
        self._schema = schema
        for f in schema:
            nodes, streams = build_nodes(f.type)
            self._columns.append(_Column(f, nodes, streams, self._num_streams))
            self._num_streams += len(streams)

    def _check(self, data: pa.Table | pa.RecordBatch) -> pa.Table:
        if self._closed:
            raise UserInputException("the writer is closed")
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        if not isinstance(data, pa.Table):
            raise UserInputException(f"expected a pyarrow Table or RecordBatch, got {type(data).__name__}")
        if self._schema is None:
            self._set_schema(data.schema)
        elif not data.schema.equals(self._schema, check_metadata=False) and not _carries(data.schema, self._schema):
            raise SchemaException(f"table schema {data.schema} does not match the file schema {self._schema}")
        return data

    def write(self, data: pa.Table | pa.RecordBatch) -> None:
        """Append rows (not in batch mode)."""
        data = self._check(data)
        if self._batch_mode:
            raise UserInputException("this writer is in batch mode: use append_batch()")
        self._batch_mode = False
        if self._bloom_min is not None:
            self._bloom_collect(data)
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
        if self._bloom_min is not None:
            self._bloom_collect(data)
        self._pending.append(data)
        self._pending_batches.append((bid, data.num_rows))
        self._pending_rows += data.num_rows
        if self._pending_rows >= self.stripe_rows:
            self._flush(self._pending_rows)
        return bid

    def _bloom_collect(self, data: pa.Table) -> None:
        """Remember the distinct values of the Bloom-eligible columns of ``data``."""
        for i, f in enumerate(data.schema):
            vals = self._bloom_vals.get(i)
            if vals is None:
                if i in self._bloom_vals or _bloom.kind_of(f.type) is None:
                    self._bloom_vals.setdefault(i, None)
                    continue
                vals = self._bloom_vals[i] = []
                self._bloom_last[i] = _UNSET
            col = data.column(i)
            if not len(col):
                continue
            if i in self._bloom_last:  # integer columns sorted so far: page min/max do better
                self._track_sorted(i, col)
            if pa.types.is_dictionary(col.type) and not pa.types.is_dictionary(self._columns[i].field.type):
                # values carried dictionary-encoded: fewer values than a filter needs use none
                for c in col.chunks:
                    if len(c.dictionary) < (self._bloom_min or 1):
                        continue
                    used = _used_values(c)
                    if used is c.dictionary and not vals and self._policy.memo is not None:
                        self._bloom_whole[i] = dictionary_key(self._policy.memo, c.dictionary)
                    else:
                        self._bloom_whole.pop(i, None)
                    vals.append(used)
            else:
                vals.extend(col.chunks)  # distinct values are found at close, for the columns kept

    def _track_sorted(self, i: int, col: pa.ChunkedArray) -> None:
        last = self._bloom_last[i]
        if not pa.types.is_integer(col.type) or col.null_count:
            del self._bloom_last[i]
            return
        v = col.to_numpy()
        head = v[:65]  # most unsorted columns show it in their first values: no pass over all
        if (len(v) > 1 and (not bool((head[1:] >= head[:-1]).all()) or not bool((v[1:] >= v[:-1]).all()))) \
                or (last is not _UNSET and v[0] < last):
            del self._bloom_last[i]
            return
        self._bloom_last[i] = v[-1]

    def _bloom_section(self) -> bytes:
        """The bloom section of the columns with at least ``bloom_min_distinct`` distinct
        values (integer columns sorted in the file excepted), within the size budget
        (``bloom_max_fraction`` of the data written): the smallest
        filters first, a column whose filter no longer fits gets none. Empty when none
        qualifies."""
        assert self._bloom_min is not None
        memo = self._policy.memo
        wanted = []
        for i, vals in sorted(self._bloom_vals.items()):
            if not vals or i in self._bloom_last:
                continue
            typ = self._columns[i].field.type
            # a whole dictionary's filter made by an earlier file of the write: (count, bits)
            shared = ("bloom", self._bloom_whole[i]) if memo is not None and i in self._bloom_whole else None
            cached = memo.get(shared) if memo is not None and shared is not None else None
            values, count = _bloom.filter_values(pa.chunked_array(vals, typ)) if cached is None else (None, cached[0])
            if count >= self._bloom_min:
                wanted.append((_bloom.filter_bytes(count), i, typ, values, count, shared, cached))
        budget = self._bloom_fraction * self._out.pos
        filters = []
        for size, i, typ, values, count, shared, cached in sorted(wanted, key=lambda w: (w[0], w[1])):
            if size > budget:
                break
            budget -= size
            kind = _bloom.kind_of(typ)
            assert kind is not None
            if cached is None:
                cached = (count, _bloom.build(_bloom.hashes_of(values, kind)))
                if memo is not None and shared is not None:  # the files of one dictionary share it
                    memo[shared] = cached
            filters.append((i, kind, count, cached[1]))
        filters.sort(key=lambda f: f[0])
        if not filters:
            return b""
        body = _bloom.section(filters)
        return body if len(body) < (1 << 32) else b""

    # -------------------------------------------------------------- stripes
    def _flush(self, nrows: int, wait: bool = True) -> None:
        """Write the first ``nrows`` buffered rows as a stripe (``wait``: see _write_stripe)."""
        if not self._pending:
            return
        if not self._columns:  # pyarrow slices/concatenates 0-column tables wrongly: count rows
            total = self._pending_rows
            stripe, rest = _no_columns(min(nrows, total)), _no_columns(max(0, total - nrows))
        else:
            table = pa.concat_tables(self._pending) if len(self._pending) > 1 else self._pending[0]
            if nrows >= table.num_rows:  # all of it (e.g. a small table at close): no slicing
                stripe, rest = table, None
            else:
                stripe, rest = table.slice(0, nrows), table.slice(nrows)
        self._pending = [rest] if rest is not None and rest.num_rows else []
        self._pending_rows = rest.num_rows if rest is not None else 0
        allowed = None
        if self._batch_mode:
            ids = np.array([b for b, _ in self._pending_batches], dtype=np.int64)
            lens = np.array([n for _, n in self._pending_batches], dtype=np.int64)
            self._pending_batches = []
            self._batch_stripes.append((ids, lens))
            allowed = np.unique(np.concatenate([[0], np.cumsum(lens)]))
        self._write_stripe(stripe, allowed, wait)

    def _gate(self, floats: list[FixedPage]) -> None:
        """Mark the float pages the incompressibility test stores plain. With a bulk write's
        memo of choices, a stream remembered as plain skips the test (for ``REUSE`` pages) and
        one the test marks plain is remembered, like any other choice."""
        memo = self._policy.memo
        if memo is not None and memo.get(DISTINCT_FILES):
            memo = None  # unrelated files: every float page takes the test, none is remembered
        test = floats
        if memo is not None:
            test = []
            for job in floats:
                entry = memo.get(job.key)
                if entry is not None and entry[0] == "plain" and entry[4] > 0:
                    memo[job.key] = (*entry[:4], entry[4] - 1)
                    job.plain = True
                else:
                    test.append(job)
        if not test:
            return
        plain = incompressible_many([j.vals for j in test])
        for job, flag in zip(test, plain.tolist(), strict=True):
            if flag:
                job.plain = True
                if memo is not None and job.key is not None:
                    memo[job.key] = ("plain", 0, None, 0, REUSE)

    def _write_stripe(self, table: pa.Table, allowed: np.ndarray | None, wait: bool = True) -> None:
        """Encode and write one stripe. With ``wait`` (every stripe but the one close() writes
        last) all of its pages are written before returning, since they may point into the
        caller's buffers; close() instead builds the metadata while the last pages are written.
        """
        n = table.num_rows
        work = _StripeWork(self._num_streams)
        for ci, col in enumerate(self._columns):
            ca = table.column(ci)
            arr = ca.combine_chunks() if ca.num_chunks != 1 else ca.chunk(0)
            col.null_count += arr.null_count
            lengths = [0] * len(col.nodes)
            self._decompose(col, 0, arr, allowed, lengths, work)
            col.node_lengths.append(lengths)
        stripe = len(self._stripe_rows_list)
        try:
            # groups of pages: the sink writes one group while the next is encoded
            for a, b in _groups(work.weights, _GROUP_BYTES):
                fa, fb = bisect.bisect_left(work.float_at, a), bisect.bisect_left(work.float_at, b)
                if fb > fa:
                    self._gate(work.floats[fa:fb])
                # a page stored plain costs a min/max and a checksum: not worth a thread hand-off
                weights = [0 if type(j) is FixedPage and j.plain else w
                           for j, w in zip(work.jobs[a:b], work.weights[a:b], strict=True)]
                jobs = work.jobs[a:b]
                if not self.parallel or sum(weights) < MIN_PARALLEL_BYTES:
                    # run_jobs would run them inline: set the policy once, not per job
                    results = run_with(self._policy, functools.partial(_run_all, jobs))
                else:
                    if self._policy is not SIZE:
                        jobs = [functools.partial(run_with, self._policy, j) for j in jobs]
                    results = run_jobs(jobs, weights, parallel=True)
                self._record_pages(stripe, work.streams[a:b], results)
            if wait:
                self._out.flush()
            else:
                self._out.start()
        except BaseException:
            self._out.shutdown()
            raise
        self._chunk_counts.append(np.array([work.items, work.nulls, work.flags], dtype=np.int64))
        self._stripe_rows_list.append(n)
        self._num_rows += n

    def _record_pages(self, stripe: int, streams: list[int], results: list[PageOut]) -> None:
        """Append the pages' blobs to the sink and keep their PageMeta records (packed, with
        ``first_item`` 0: the CMB builders set it)."""
        if not results:
            return
        add, pack = self._out.add_parts, L.PAGE_STRUCT.pack
        recs = [pack(add(blob), checksum, minmax[:8], minmax[8:], length, raw, items, nulls, flags,
                     encoding, b"", 0)
                for blob, length, checksum, encoding, raw, items, nulls, flags, minmax, _ in results]
        self._page_recs.append((stripe, streams, b"".join(recs), bytes([r[9] for r in results])))

    def _decompose(self, col: _Column, ni: int, arr: pa.Array, allowed: np.ndarray | None,
                   lengths: list[int], work: _StripeWork) -> None:
        node = col.nodes[ni]
        n = len(arr)
        lengths[ni] = n
        if node.kind == NULL:
            return
        valid = _validity(arr)
        nulls = arr.null_count
        base = col.stream_base
        for s in node.streams:
            work.items[base + s] = n
            work.nulls[base + s] = nulls
        vstream = base + node.streams[0]
        if n and nulls == n:
            work.flags[vstream] = L.FLAG_ALL_NULL
            return
        work.flags[vstream] = L.FLAG_ALL_VALID if valid is None else 0
        ps = self.page_size
        t = node.type
        off = arr.offset
        bufs = arr.buffers()
        cum = None
        fast: list[int] | None = None  # page cuts made by the native kernel
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
        elif node.kind == BINARY and pa.types.is_dictionary(arr.type):
            # values carried dictionary-encoded (see _carries): pages cut by the values' bytes
            indices = arr.indices if valid is None else arr.indices.fill_null(0)
            codes = indices.to_numpy(zero_copy_only=False)
            d_offs = _dictionary_offsets(arr.dictionary)
            d_lens = np.diff(d_offs)
            per_page = max(8, ps // 4)
            fast = None if allowed is not None else _kernels.byte_cuts(codes, d_lens, ps, per_page)
            if fast is not None:  # cut in one pass; each page's value counts from its own codes
                page_counts = {(a, b): _kernels.code_counts(codes[a:b], len(d_lens))
                               for a, b in itertools.pairwise(fast)}
            else:
                counts = _kernels.code_counts(codes, len(d_lens))
                if n > per_page or int(counts @ d_lens) > ps:  # several pages: cut by the values' bytes
                    cum = np.concatenate([[0], np.cumsum(d_lens[codes])])
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
        cuts = fast if fast is not None else _cuts(n, per_page, cum, ps, allowed)
        if valid is not None and node.kind in (FIXED, DICT):
            vals = _ffill(vals, valid)
        # ---- page jobs
        floats = node.kind == FIXED and vals.dtype.kind == "f"
        stats = node.stats if node.kind == FIXED else ""
        for s in node.streams:
            validity = col.streams[s].stream_type == L.STREAM_VALIDITY
            if validity and valid is None:
                continue
            g = base + s
            for r0, r1 in itertools.pairwise(cuts):
                vslice = None if valid is None else valid[r0:r1]
                job: Any
                if validity:
                    job, w = BitmapPage(vslice, vslice, g), (r1 - r0) // 8
                elif node.kind == BINARY and pa.types.is_dictionary(arr.type):
                    known: np.ndarray | None
                    if fast is not None:
                        known = page_counts[(r0, r1)]
                        w = int(known @ d_lens)
                    else:  # one page: its value counts are the segment's
                        known = counts if cum is None else None
                        w = int(counts @ d_lens) if cum is None else int(cum[r1] - cum[r0])
                    job = DictBinaryPage(codes[r0:r1], arr.dictionary, d_offs, vslice, g,
                                         known if valid is None else None)
                elif node.kind == BINARY:
                    assert cum is not None
                    job = BinaryPage(offs[r0 : r1 + 1], data, arr.slice(r0, r1 - r0), vslice)
                    w = int(cum[r1] - cum[r0])
                elif node.kind == BOOL:
                    job, w = BitmapPage(vals[r0:r1], vslice, g), (r1 - r0) // 8
                elif node.kind == BYTES:
                    job = FixedPage(vals[r0 * node.width : r1 * node.width], "", vslice, r1 - r0, g)
                    w = (r1 - r0) * node.width
                else:
                    job = FixedPage(vals[r0:r1], stats, vslice, r1 - r0, g)
                    w = (r1 - r0) * vals.itemsize
                    if floats:
                        work.floats.append(job)
                        work.float_at.append(len(work.jobs))
                work.add(g, job, w)
        # ---- children
        if node.kind == LIST:
            base_off, end = int(offs[0]), int(offs[-1])
            child = arr.values.slice(base_off, end - base_off)
            callowed = None if allowed is None else np.unique(offs[allowed] - base_off)
            self._decompose(col, node.children[0], child, callowed, lengths, work)
        elif node.kind == FSL:
            child = arr.values.slice(off * node.width, n * node.width)
            callowed = None if allowed is None else allowed * node.width
            self._decompose(col, node.children[0], child, callowed, lengths, work)
        elif node.kind == STRUCT:
            for i, kid in enumerate(node.children):
                self._decompose(col, kid, arr.field(i), allowed, lengths, work)
        elif node.kind == DICT:
            self._decompose(col, node.children[0], arr.dictionary, None, lengths, work)

    # -------------------------------------------------------------- close
    def close(self) -> bytes | None:
        """Flush buffered rows, write the metadata, and return the file bytes (memory sink)."""
        if self._closed:
            raise UserInputException("the writer is already closed")
        if self._schema is None:
            self._set_schema(pa.schema([]))
        if self._pending_rows or self._pending_batches:
            self._flush(self._pending_rows, wait=False)
        self._closed = True
        out = self._out
        if self._batch_mode:
            self._write_batch_pages()
        bloom = self._bloom_section() if self._bloom_min is not None else b""
        if bloom:  # the end of the data area, found from the footer's bloom_length
            out.add(bloom)
        data_end = out.pos
        entries = [(c.field, _stream_layout(c.field.type), len(c.nodes), c.node_lengths,
                    c.null_count) for c in self._columns]
        if self._batch_mode:
            entries.append((pa.field("__batch_meta__", pa.int64()), _BATCH_LAYOUT, 1,
                            [[len(ids)] for ids, _ in self._batch_stripes], 0))
        area, cmb_start, cmb_len, cmb_sum = build_cmbs(CmbSource(
            self._stripe_rows_list, self._chunk_counts, self._page_recs, self._batch_stripes,
            bool(self._batch_mode), self._num_rows, len(self._columns), self._num_streams), entries)
        out.add(area)
        schema_off = out.pos
        assert self._schema is not None
        blobs = _field_blobs(self._schema)
        if self._batch_mode:
            blobs.append(serialize_field(entries[-1][0]))
        out.add(b"".join(blobs))
        meta_blob = _schema_meta_blob(self._schema)
        meta_off = out.add(meta_blob)
        schema_len = out.pos - schema_off
        ncols = len(self._columns)
        slots, num_slots = self._name_index([c.field.name for c in self._columns])
        name_off = out.add(slots)
        # CIT: one 64-byte entry per column (+ the batch-meta system column), packed one by one:
        # each entry needs its own checksum anyway
        cit = []
        field_off = schema_off
        for e, (start, length, cmb_sum_e, blob, entry) in enumerate(
                zip(cmb_start, cmb_len, cmb_sum, blobs, entries, strict=True)):
            null_count = entry[4]
            if e == ncols:
                flags = L.CIT_SYSTEM_BATCH_META
            else:
                flags = L.CIT_ALL_NULL if self._num_rows and null_count == self._num_rows else 0
            head = L.CIT_HEAD_STRUCT.pack(data_end + start, field_off, cmb_sum_e, L.checksum(blob),
                                  null_count, length, len(blob), flags, 0)
            cit.append(head)
            cit.append(_U64.pack(L.checksum(head)))
            field_off += len(blob)
        cit_off = out.add(b"".join(cit))
        footer = L.FOOTER_STRUCT.pack(
            self._num_rows, data_end, len(area), schema_off, schema_len, meta_off, len(meta_blob),
            ncols, name_off, num_slots, len(self._stripe_rows_list), cit_off, len(entries),
            self.page_size, L.SETTING_BATCH_MODE if self._batch_mode else 0,
            L.checksum(meta_blob), 0, len(bloom), L.VERSION_MAJOR,
            L.VERSION_MINOR if self._bloom_min is None else L.VERSION_MINOR_BLOOM, L.FOOTER_SIZE, L.MAGIC)
        lo, hi = L.FOOTER_CHECKSUM_SPAN
        out.add(footer[:lo] + _U64.pack(L.footer_checksum(footer)) + footer[hi:])
        if self._file is None:
            return out.getvalue()
        try:
            out.flush()
        finally:
            out.shutdown()
        if self._own_file:
            self._file.close()
        else:
            self._file.flush()
        return None

    @staticmethod
    def _name_index(names: list[str]) -> tuple[bytes, int]:
        """The name index (open addressing, linear probing, at least twice as many slots as
        names) and its slot count."""
        m = 2
        while m < 2 * len(names):
            m *= 2
        mask = m - 1
        slots = [_EMPTY_SLOT] * m
        for i, name in enumerate(names):
            h = L.name_hash(name)
            j = h & mask
            while slots[j] is not _EMPTY_SLOT:
                j = (j + 1) & mask
            slots[j] = _name_slot(h, i)
        return b"".join(slots), m

    def _write_batch_pages(self) -> None:
        """Write the BATCH_META pages (batch ids, batch lengths) of every stripe."""
        g0 = self._num_streams  # the system column's two streams follow the user columns'
        for t, (ids, lens) in enumerate(self._batch_stripes):
            pages = [(g0 + s, FixedPage(vals, "i" if s == 0 else "", None, len(vals)))
                     for s, vals in enumerate((ids, lens)) if len(vals)]
            self._record_pages(t, [g for g, _ in pages], [job() for _, job in pages])

    def __enter__(self) -> FermionWriter:
        return self

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        if exc_type is None and not self._closed:
            self.close()
            return
        self._out.shutdown()
        if self._own_file and self._file is not None and not self._file.closed:
            self._file.close()


_FIELD_BLOBS: dict[bytes, tuple[bytes, ...]] = {}
_FIELD_BLOBS_LOCK = threading.Lock()
_FIELD_BLOBS_MAX = 256
"""Schemas whose field blobs :func:`_field_blobs` keeps (the oldest is dropped)."""
_FIELD_BLOBS_COLUMNS = 256
"""Only schemas of up to this many columns are cached: the small files written often."""


def _field_blobs(schema: pa.Schema) -> list[bytes]:
    """The schema entry (``serialize_field``) of every field of ``schema``.

    Cached by the IPC serialization of the schema without its own metadata (which pandas
    varies from one append to the next): equal bytes mean equal fields, nested metadata
    included, and serializing the schema once costs less than serializing each field.
    """
    if len(schema) > _FIELD_BLOBS_COLUMNS:
        return [serialize_field(f) for f in schema]
    key = schema.remove_metadata().serialize().to_pybytes()
    blobs = _FIELD_BLOBS.get(key)
    if blobs is None:
        blobs = tuple(serialize_field(f) for f in schema)
        with _FIELD_BLOBS_LOCK:  # writers run in pool threads
            if len(_FIELD_BLOBS) >= _FIELD_BLOBS_MAX:
                del _FIELD_BLOBS[next(iter(_FIELD_BLOBS))]
            _FIELD_BLOBS[key] = blobs
    return list(blobs)


def _schema_meta_blob(schema: pa.Schema | None) -> bytes:
    """The schema-metadata blob of ``schema`` (``serialize_schema_meta``), cached by content:
    appends to a symbol often carry the same pandas metadata."""
    meta = schema.metadata if schema is not None else None
    return _serialized_meta(None if meta is None else tuple(meta.items()))


@functools.lru_cache(maxsize=256)
def _serialized_meta(items: tuple[tuple[bytes, bytes], ...] | None) -> bytes:
    return serialize_schema_meta(None if items is None else dict(items))


def _no_columns(n: int) -> pa.Table:
    return pa.table({"_": pa.nulls(n)}).select([])
