"""The data path: slice a table into row x column tiles, encode them as Fermion segments,
write them content addressed; and back: fetch the segments a read needs and assemble them.

Costs (measured in ``benchmarks/bench_engine.py``):

- writes encode segments in the thread pool and hand finished segments to the store in
  batches of about :data:`WRITE_BATCH_BYTES`, so that storage I/O (an LMDB transaction and its
  fsync, S3 PUTs) overlaps encoding instead of following it; at most twice the engine's
  encodes are in flight, so memory stays bounded by the window plus the queued batches;
- reads decode each segment straight from the store's zero-copy view where the backend lends
  one (LMDB's memory map), so a segment's bytes are never copied out of the store first; only
  the pages of the rows wanted are decoded (row ranges, and date ranges trimmed on the
  segment's own index column before its data columns are touched); the index column of a row
  group is decoded once, not once per column slice; small segments are read in one store
  request and decoded in a few pool tasks rather than one task each.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections import OrderedDict, deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arcticlite import format as fermion
from arcticlite import normalize as norm
from arcticlite._envelope import naming_key
from arcticlite.index import FLAG_OPEN_TAIL, FLAG_REGULAR, ROW_DTYPE, hex_digests, new_digest
from arcticlite.progress import Progress
from arcticlite.query import absent_name
from arcticlite.storage import KVStore
from arcticlite.table._pools import Pools, shared
from arcticlite.table._prune import Intervals, file_rows, simple_terms
from arcticlite.version import LibraryKeys

WRITE_BATCH_BYTES = 8 << 20
#: Batches handed to the store and not yet written, at most. Encoding outruns a store (LMDB
#: writes one transaction at a time), and without a bound every encoded segment of a large
#: write waited in memory: 800 MB of fresh pages for a 10M x 10 write (170,000 page faults),
#: where a bounded queue reuses the same few buffers. As many as the I/O pool's threads, so
#: that an object store still receives that many PUTs at once.
WRITES_IN_FLIGHT = 4
"""Encoded bytes handed to the store per ``write_many`` call (one LMDB transaction)."""
PAGE_SIZE = 1 << 20
"""Fermion page size of data segments: one page per 8-byte column of a default 100,000-row
segment. Half as many pages as Fermion's 512 KiB default halves the per-page decode overhead
(5M-row quote frame: 0.13 s vs 0.16 s to read, 3.1 s vs 5.1 s to write); row ranges inside a
segment still skip whole pages of the wider columns."""
TAIL_BYTES = 16 << 10
"""An append of at most this many bytes (in memory, as Arrow) starts or extends the symbol's
*open tail*: the tail segment is replaced by one holding its rows and the new ones, written
plain (``optimize_for="write"``), until the rows reach this size; that append writes them with
:data:`OPTIMIZE_FOR` and the next one starts a new tail. 2,000 appends of 10 rows then leave
~30 segments instead of 2,001 (a read decodes a few, not thousands of tiny files), and each
append rewrites at most ~16 KiB of tail where its index leaf would otherwise have grown by one
row a time (so the bytes written per append stay about the same)."""
OPTIMIZE_FOR = "read"
"""Fermion encoding policy of data segments: decode speed over bytes (LZ4, not ZSTD; no
short-run RLE). 5M-row quote frame: read 0.11 s vs 0.125 s, 24 MB vs 17 MB stored."""
SMALL_SEGMENT_BYTES = 64 << 10
"""Segments smaller than this on average are read in one store request (copies are cheap)."""
RANGED_MAX_FRACTION = 2
"""On a store without zero-copy views (S3), a segment of which a read needs at most 1 / this
of the rows (page skipping) is read by ranged requests of its metadata and the pages of those
rows (:data:`RANGED_GAP` apart at least, else coalesced) instead of one GET of the whole."""
RANGED_GAP = 64 << 10
"""Pages of a ranged segment read closer than this are fetched in one request."""
RANGED_MIN_BYTES = 256 << 10
"""Segments smaller than this are always fetched whole (the metadata read alone is ~64 KiB)."""
LATE_MAX_FRACTION = 2
"""Late materialisation takes the rows that may pass a query's filters when they are at most
1 / this of the rows considered; more, and the pages are decoded whole (a take would cost more
than the filter saves)."""


BLOOM_MIN_DISTINCT = 16
"""Default Bloom-filter threshold: an integer or string column of a segment with at least this
many distinct values gets a Bloom filter (integer columns sorted in the segment excepted). Low:
a filter costs 10 bits per distinct value (a 50-value column: 64 bytes), and a segment holding
few of a column's values is where a filter prunes best; the distinct values are computed for
every eligible column anyway."""
BLOOM_MAX_FRACTION = 0.03
"""Default share of a segment's data its Bloom filters may take, at most (the smallest filters
first): a column of distinct random integers (10 bits a row) gets none at this default."""


@dataclass(frozen=True, slots=True)
class Layout:
    """How a table is tiled: index columns first, then data columns sliced; and which columns
    of a segment get a Bloom filter (``bloom_min_distinct``: None = none; Fermion 1.1)."""

    n_index: int
    rows_per_segment: int
    columns_per_segment: int  # 0 = one column slice (dynamic schema)
    bloom_min_distinct: int | None = None
    bloom_max_fraction: float = BLOOM_MAX_FRACTION  # the filters' share of a segment, at most


def index_values(table: pa.Table, n_index: int, is_datetime: bool, start_row: int) -> np.ndarray:
    """int64 values used for min/max pruning: ns for a datetime index, else row numbers."""
    if is_datetime and n_index:
        col = table.column(0)
        if col.num_chunks == 1 and not col.null_count and pa.types.is_timestamp(col.type):
            return col.chunk(0).to_numpy().view(np.int64)  # no copy: the user's own index values
        arr = col.cast(pa.int64()) if col.num_chunks else pa.array([], pa.int64())
        if arr.null_count:  # NaT (stored with validate_index=False): its int64 value, as pandas has it
            arr = arr.fill_null(np.iinfo(np.int64).min)
        vals = arr.to_numpy() if isinstance(arr, pa.Array) else arr.combine_chunks().to_numpy(zero_copy_only=False)
        return np.asarray(vals, dtype=np.int64)
    return np.arange(start_row, start_row + table.num_rows, dtype=np.int64)


def col_slices(n_data: int, layout: Layout) -> list[tuple[int, int]]:
    if n_data == 0 or layout.columns_per_segment <= 0:
        return [(0, n_data)]
    step = layout.columns_per_segment
    return [(c, min(c + step, n_data)) for c in range(0, n_data, step)]


# -- writing ------------------------------------------------------------------------------------
def regular_groups(idx: np.ndarray, r0s: np.ndarray, r1s: np.ndarray) -> np.ndarray:
    """Per row group ``[r0, r1)`` of the int64 index ``idx``: whether its values are an
    arithmetic sequence (:data:`FLAG_REGULAR`). An irregular group is told from its ends
    alone (no pass over its values); only a group whose ends fit is compared whole."""
    out = np.zeros(len(r0s), dtype=bool)
    for g, (r0, r1) in enumerate(zip(r0s.tolist(), r1s.tolist(), strict=True)):
        if r1 - r0 <= 2:
            out[g] = True
            continue
        step = int(idx[r0 + 1]) - int(idx[r0])
        if step < 0 or int(idx[r1 - 1]) - int(idx[r0]) != (r1 - r0 - 1) * step:
            continue
        seg = idx[r0:r1]
        out[g] = bool(np.all(seg[1:] - seg[:-1] == step))
    return out


#: Encoding choices shared by the writes of one batch (``write_batch``, ``append_batch``, ...):
#: by the stored schema of a column slice, the memo its segments keep (see ``fermion.encode``'s
#: ``choices``). None outside a batch: a write's segments share choices among themselves only.
_BATCH_CHOICES: contextvars.ContextVar[dict[Any, dict[Any, Any]] | None] = contextvars.ContextVar(
    "arcticlite_batch_choices", default=None)


@contextlib.contextmanager
def shared_choices(memo: dict[Any, dict[Any, Any]]) -> Iterator[None]:
    """Within the block (on this thread), segments whose column slices have the same stored
    schema share one memo of encoding choices in ``memo``: the symbols of a batch of small writes
    of one shape search a column's encoding once, not once per symbol (a later page whose
    reused choice stops paying is searched again, as within one write)."""
    token = _BATCH_CHOICES.set(memo)
    try:
        yield
    finally:
        _BATCH_CHOICES.reset(token)


def write_segments(
    store: KVStore,
    keys: LibraryKeys,
    sym: str,
    table: pa.Table,
    layout: Layout,
    *,
    start_row: int,
    is_datetime: bool,
    sink: dict[str, bytes] | None = None,
    optimize_for: str = OPTIMIZE_FOR,
    flags: int = 0,
    pools: Pools | None = None,
    nan_rows: pa.Table | None = None,
    row_major: list[norm.RowMajorBlock] | None = None,
) -> np.ndarray:
    """Encode and write ``table`` as segments; return their leaf rows (rows offset by
    ``start_row``, ``flags`` set). Nothing refers to the segments until a version commits them.

    ``nan_rows``: NaN-rows companions of ``table``'s string columns, row-aligned (or trailing
    columns of ``table``, as :func:`read_segments` gives them); each segment holds those of its
    columns (``normalize`` module ``_nanrows``).

    With ``sink``, a table that fits one segment is not written but put into ``sink``, for
    the caller to write with its commit (one LMDB transaction for a small append).
    ``optimize_for`` is the Fermion encoding policy of the segments. ``row_major``: the blocks
    of ``table``'s placeholder columns (``normalize(row_major=...)``), transposed here one
    segment at a time."""
    if not row_major and norm.has_placeholders(table.schema):
        raise ValueError("write_segments: the table has row-major placeholders but no row_major blocks")
    n = table.num_rows
    if n == 0:
        return np.zeros(0, dtype=ROW_DTYPE)
    table, inner = norm.split_nan_rows(table)
    nan_rows = nan_rows if inner is None else inner
    idx = index_values(table, layout.n_index, is_datetime, start_row)
    names = table.column_names
    n_data = len(names) - layout.n_index
    cslices = col_slices(n_data, layout)
    r0s = np.arange(0, n, layout.rows_per_segment, dtype=np.int64)
    r1s = np.minimum(r0s + layout.rows_per_segment, n)
    tasks: list[tuple[int, int, list[str]]] = []
    for r0, r1 in zip(r0s.tolist(), r1s.tolist(), strict=True):
        for c0, c1 in cslices:
            tasks.append((r0, r1, names[: layout.n_index] + names[layout.n_index + c0 : layout.n_index + c1]))
    # one pool task per segment: Fermion's own page parallelism only for a lone segment
    inner_parallel = len(tasks) == 1

    # the segments of one column slice share their encoding choices: a column's scheme is
    # searched on its first pages, then reused (and searched again every few pages)
    choices: dict[Any, dict[Any, Any]] = {}
    batch_choices = _BATCH_CHOICES.get()
    # strings carried dictionary-encoded from normalization are stored as plain values
    stored = norm.value_schema(table.schema)

    def encode(task: tuple[int, int, list[str]]) -> tuple[str, bytes]:
        r0, r1, cols = task
        # open tails (written plain) carry no Bloom filter: they are small and soon replaced
        bloom = layout.bloom_min_distinct if optimize_for != "write" else None
        piece = table.select(cols).slice(r0, r1 - r0)
        if row_major:
            piece = norm.fill_rows(piece, row_major, r0)  # in this thread's buffer: encoded below
        piece = norm.segment_nan_rows(piece, nan_rows.slice(r0, r1 - r0) if nan_rows is not None else None)
        schema = None
        if stored is not table.schema:  # NaN-rows companions (and their listing) follow the columns
            schema = pa.schema([stored.field(c) for c in cols] + list(piece.schema)[len(cols):],
                               metadata=piece.schema.metadata)
        memo: dict[Any, Any] | None = None
        if batch_choices is not None:  # a memo's stream numbers hold for one stored schema
            fields = tuple((f.name, str(f.type)) for f in (schema if schema is not None else piece.schema))
            memo = batch_choices.setdefault((fields, optimize_for), {fermion.DISTINCT_FILES: True})
        elif len(tasks) > 1:
            memo = choices.setdefault(tuple(cols), {})
        body = fermion.encode(piece, schema=schema, parallel=inner_parallel,
                              page_size=PAGE_SIZE, optimize_for=optimize_for, choices=memo,
                              bloom_min_distinct=bloom, bloom_max_fraction=layout.bloom_max_fraction)
        return new_digest(body), body  # a fresh key name: unreachable keys never revive (gc)

    rows = np.zeros(len(tasks), dtype=ROW_DTYPE)
    ncs = len(cslices)
    rows["start_row"] = np.repeat(start_row + r0s, ncs)
    rows["end_row"] = np.repeat(start_row + r1s, ncs)
    rows["seg_rows"] = np.repeat(r1s - r0s, ncs)
    rows["start_col"] = np.tile([c0 for c0, _ in cslices], len(r0s))
    rows["end_col"] = np.tile([c1 for _, c1 in cslices], len(r0s))
    rows["min_index"] = np.repeat(np.minimum.reduceat(idx, r0s), ncs)
    rows["max_index"] = np.repeat(np.maximum.reduceat(idx, r0s), ncs)
    rows["flags"] = flags
    if is_datetime and layout.n_index and not table.column(0).null_count:
        rows["flags"] |= np.repeat(np.where(regular_groups(idx, r0s, r1s), FLAG_REGULAR, 0), ncs).astype(np.uint32)

    if len(tasks) == 1:
        digest, body = encode(tasks[0])
        rows[0]["digest"] = np.frombuffer(bytes.fromhex(digest), dtype=np.uint8)
        rows[0]["nbytes"] = len(body)
        if sink is not None:
            sink[keys.tdata(sym, digest)] = body
        else:
            store.write_many({keys.tdata(sym, digest): body})
        return rows

    # encode in the pool, write finished segments in batches while later ones encode
    pools = pools or shared()
    # encodes in flight while earlier segments are written: ``pools.encode_threads`` (an encode
    # is mostly Python and numpy calls on one page at a time: more of them than that only
    # contend for the GIL); one per core for row-major blocks, whose per-segment transposition
    # is one long GIL-free copy into a buffer each thread keeps (more in flight would fault in
    # more buffers: a 20,000 x 1,000 write touched 80 MB of them instead of 40)
    window = pools.threads if row_major else max(1, min(pools.encode_threads, pools.threads))
    pending: deque[Future[tuple[str, bytes]]] = deque()
    writes: list[Future[None]] = []
    done = 0  # writes[:done] have finished
    nxt = 0
    batch: dict[str, bytes] = {}
    batch_bytes = 0
    bar = Progress(len(tasks), f"write {sym}", unit="segment")
    try:
        for i in range(len(tasks)):
            while nxt < len(tasks) and len(pending) < window:
                pending.append(pools.work.submit(encode, tasks[nxt]))
                nxt += 1
            digest, body = pending.popleft().result()
            rows[i]["digest"] = np.frombuffer(bytes.fromhex(digest), dtype=np.uint8)
            rows[i]["nbytes"] = len(body)
            batch[keys.tdata(sym, digest)] = body
            batch_bytes += len(body)
            if batch_bytes >= WRITE_BATCH_BYTES:
                while len(writes) - done >= WRITES_IN_FLIGHT:  # the store sets the pace
                    writes[done].result()
                    done += 1
                writes.append(pools.io.submit(store.write_many, batch))
                batch, batch_bytes = {}, 0
            bar.update(1)
        if batch:
            store.write_many(batch)
    finally:
        for f in pending:
            f.cancel()
        errors = [f.exception() for f in writes]  # waits for every write
        bar.close()
    for exc in errors:
        if exc is not None:
            raise exc
    return rows


def is_small_append(table: pa.Table, layout: Layout) -> bool:
    """Whether appending ``table`` goes through the open tail (see :data:`TAIL_BYTES`)."""
    return 0 < table.num_rows <= layout.rows_per_segment and table.nbytes <= TAIL_BYTES


def write_tail(
    store: KVStore,
    keys: LibraryKeys,
    sym: str,
    tail: np.ndarray,
    table: pa.Table,
    layout: Layout,
    *,
    is_datetime: bool,
    sink: dict[str, bytes],
    pools: Pools | None = None,
    nan_rows: pa.Table | None = None,
) -> np.ndarray | None:
    """Leaf rows of segments holding the rows of the open tail ``tail`` (its leaf rows, one per
    column slice) followed by those of the small ``table``, their bodies put into ``sink``; or
    None when ``tail`` is not an open tail these rows can join (then the caller appends new
    segments). The result is again an open tail while under :data:`TAIL_BYTES`. Rows with
    NaN-rows companions (``nan_rows``) start segments of their own."""
    if nan_rows is not None:
        return None
    names = table.column_names
    n_index = layout.n_index
    cslices = col_slices(len(names) - n_index, layout)
    if len(tail) != len(cslices) or not len(tail):
        return None
    start, end = int(tail["start_row"][0]), int(tail["end_row"][0])
    ok = (
        (tail["flags"] & FLAG_OPEN_TAIL).all()
        and (tail["start_row"] == start).all() and (tail["end_row"] == end).all()
        and (tail["seg_offset"] == 0).all() and (tail["seg_rows"] == end - start).all()
        and [(int(a), int(b)) for a, b in zip(tail["start_col"], tail["end_col"], strict=True)] == cslices
        and end - start + table.num_rows <= layout.rows_per_segment
    )
    if not ok:
        return None
    tail_keys = [keys.tdata(sym, d) for d in hex_digests(tail)]
    olds = [_TAILS.get(k) for k in tail_keys]
    missing = [k for k, t in zip(tail_keys, olds, strict=True) if t is None]
    fetched = iter(store.read_many(missing) if missing else [])
    columns: list[pa.ChunkedArray] = []
    slices: list[list[str]] = []
    for (c0, c1), old in zip(cslices, olds, strict=True):
        if old is None:
            old = fermion.decode(next(fetched))
        want = names[:n_index] + names[n_index + c0 : n_index + c1]
        slices.append(want)
        new = table.select(want)
        if old.column_names != want or old.schema.types != new.schema.types:
            return None  # the schema changed (dynamic schema): the new rows start a new tail
        cols = range(0 if not columns else n_index, len(want))
        columns += [pa.chunked_array(old.column(i).chunks + new.column(i).chunks, new.schema.field(i).type)
                    for i in cols]
    merged = pa.Table.from_arrays(columns, schema=table.schema)
    still_open = merged.nbytes <= TAIL_BYTES
    rows = write_segments(
        store, keys, sym, merged, layout, start_row=start, is_datetime=is_datetime, sink=sink,
        optimize_for="write" if still_open else OPTIMIZE_FOR, flags=FLAG_OPEN_TAIL if still_open else 0,
        pools=pools,
    )
    if still_open:  # the next small append will want these rows back
        for digest, want in zip(hex_digests(rows), slices, strict=True):
            _TAILS.put(keys.tdata(sym, digest), _owned(merged.select(want)))
    return rows


def _owned(table: pa.Table) -> pa.Table:
    """A copy of ``table`` in fresh buffers: the new rows were converted from the caller's
    frame without copying, and the caller may modify that frame after the append returns."""
    return pa.Table.from_arrays([pa.concat_arrays(c.chunks) for c in table.columns], schema=table.schema)


class _TailCache:
    """Decoded open tails by segment key, so that a writer appending again does not fetch and
    decode the tail it has just written. Keys name immutable content (never reused), so an entry
    is never stale; the oldest entries go first."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[str, pa.Table] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> pa.Table | None:
        with self._lock:
            return self._items.pop(key, None)  # a tail is merged once: take it out

    def put(self, key: str, table: pa.Table) -> None:
        with self._lock:
            self._items[key] = table
            while len(self._items) > self._size:
                self._items.popitem(last=False)


_TAILS = _TailCache(64)


# -- reading ------------------------------------------------------------------------------------
def lends_views(store: KVStore) -> bool:
    """Whether ``store.read_view`` is zero-copy (the default implementation reads a copy)."""
    return type(store).read_view is not KVStore.read_view


def _has_nested_dictionary(typ: pa.DataType) -> bool:
    if pa.types.is_dictionary(typ):
        return True
    return any(_has_nested_dictionary(typ.field(i).type) for i in range(typ.num_fields))


def _detached(table: pa.Table, view: memoryview) -> bool:
    """Whether no buffer of ``table`` points into ``view`` (decoders may return zero-copy
    views of plain pages; those must not outlive the store's view)."""
    src = pa.py_buffer(view)
    lo, hi = src.address, src.address + src.size
    del src
    for col in table.columns:
        typ = col.type
        dict_top = pa.types.is_dictionary(typ)
        if (dict_top and _has_nested_dictionary(typ.value_type)) or (not dict_top and _has_nested_dictionary(typ)):
            return False  # Array.buffers() does not reach nested dictionaries: be safe
        for chunk in col.chunks:
            parts = [chunk.indices, chunk.dictionary] if dict_top else [chunk]
            for part in parts:
                for buf in part.buffers():
                    if buf is not None and buf.size and lo <= buf.address < hi:
                        return False
    return True


class _Names:
    """``data_names[p]`` of a wide schema without building the list of all its names."""

    __slots__ = ("_schema", "_n_index")

    def __init__(self, schema: pa.Schema, n_index: int) -> None:
        self._schema, self._n_index = schema, n_index

    def __getitem__(self, p: int) -> str:
        return str(self._schema.field(self._n_index + p).name)


@dataclass(slots=True)
class FetchStats:
    """What the data fetch of a read touched (``QueryBuilder.explain``).

    Attributes
    ----------
    segments : int
        Segments (row x column tiles) decoded.
    pages, pages_skipped : int
        Data pages of the columns read inside the rows fetched, and those of them left unread
        because page statistics of the row group's filter columns ruled their rows out.
    rows_skipped : int
        Rows of the fetched segments not decoded for that reason.
    bytes_fetched : int
        Bytes the segment readers requested (metadata and pages).
    segments_ranged : int
        Segments read by ranged requests of their metadata and needed pages (S3), not whole.
    rows_considered_late, rows_taken_late : int
        Rows whose filter columns were decoded first (late materialisation), and the rows of
        them that may pass, the only rows of the other columns decoded.
    """

    segments: int = 0
    pages: int = 0
    pages_skipped: int = 0
    rows_skipped: int = 0
    bytes_fetched: int = 0
    segments_ranged: int = 0
    rows_considered_late: int = 0
    rows_taken_late: int = 0
    whole: bool = False  # segments were read whole (counted when fetched)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def fetched(self, nbytes: int) -> None:
        with self._lock:
            self.whole = True
            self.bytes_fetched += nbytes

    def taken(self, considered: int, taken: int) -> None:
        with self._lock:
            self.rows_considered_late += considered
            self.rows_taken_late += taken

    def add(self, reader: fermion.FermionReader, cols: Sequence[str], job: _Job, *, ranged: bool = False) -> None:
        """Count the pages of ``cols`` in the job's rows and those outside its ``rows`` (and the
        bytes the reader requested, when segments are not fetched whole or this one was
        ``ranged``)."""
        pages = skipped = 0
        present = set(reader.column_names)
        for c in cols:
            if c not in present:  # dynamic schema: a column the segment does not hold
                continue
            for p in reader.page_stats(c):
                if p["node"] != 0 or p["stream"] != "DATA":
                    continue
                first = reader.stripe_starts()[p["stripe"]] + _first_item(reader, c, p)
                a, b = first, first + p["rows"]
                if b <= job.lo or a >= job.hi:
                    continue
                pages += 1
                if job.rows is not None and not any(x < b and a < y for x, y in job.rows):
                    skipped += 1
        with self._lock:
            self.segments += 1
            self.pages += pages
            self.pages_skipped += skipped
            if job.rows is not None:
                self.rows_skipped += (job.hi - job.lo) - sum(y - x for x, y in job.rows)
            if not self.whole or ranged:
                self.bytes_fetched += reader.range_reader.bytes_requested
                self.segments_ranged += ranged


def _first_item(reader: fermion.FermionReader, col: str, p: dict[str, Any]) -> int:
    """First row (within its stripe) of the top-level page ``p`` of ``col``."""
    cm = reader.column_meta(col)
    s = next((i for i, spec in enumerate(cm.specs) if int(cm.streams[i]["node"]) == 0
              and spec.stream_type == 2), 0) if len(cm.streams) else 0
    return int(cm.pages[s][p["stripe"]][p["page"]]["first_item"])


#: What decoding a row group held in one segment gives when its filters rule out every row
#: (late materialisation): no table to assemble (``read_segments`` drops it).
RULED_OUT = pa.table({})


class Judging:
    """Whether judging a segment's statistics and Bloom filters before decoding its filter
    columns still pays, within one read (late materialisation).

    Judging costs metadata work per segment (page min/max, the Bloom filter) and pays only
    when it rules rows out. Once :data:`FUTILE_RUN` segments in a row have had nothing ruled
    out (every segment holds every value: random tickers, ``x > 0.999`` over uniform values),
    only every :data:`FUTILE_RUN`-th segment is judged; any segment that has rows ruled out
    brings judging back for every segment. Results never depend on it: a segment not judged
    decodes its filter columns and the query filters every row exactly."""

    __slots__ = ("futile", "skipped")

    FUTILE_RUN = 8

    def __init__(self) -> None:
        self.futile = 0  # segments judged in a row with nothing ruled out
        self.skipped = 0  # segments not judged since the last judged one

    def due(self) -> bool:
        if self.futile < self.FUTILE_RUN or self.skipped + 1 >= self.FUTILE_RUN:
            self.skipped = 0
            return True
        self.skipped += 1
        return False

    def record(self, ruled_out: bool) -> None:
        self.futile = 0 if ruled_out else self.futile + 1


@dataclass(frozen=True, slots=True)
class _Job:
    pos: int  # position in ``leaves``
    key: str
    cols: list[str]
    lo: int  # rows [lo, hi) of the segment file
    hi: int
    trim: bool  # cut the rows to ``index_range`` with the segment's own index column
    rows: Intervals | None = None  # only these rows of [lo, hi) may match the query's filters
    late: tuple[Any, ...] | None = None  # the query's value filters, judged here first (late materialisation)
    text: tuple[str, ...] = ()  # string columns whose NaN-rows companions to read too
    judged: bool = False  # ``late`` was judged on this segment's statistics while planning
    codes: tuple[str, ...] = ()  # string columns to return dictionary-encoded (read_segments' code_keys)
    judging: Judging | None = None  # shared by the read's late jobs: whether to judge statistics first


def _decode(src: Any, job: _Job, *, dynamic: bool, index_name: str | None,
            index_range: tuple[int, int] | None, parallel: bool,
            stats: FetchStats | None = None) -> pa.Table:
    ranged = isinstance(src, fermion.RangeReader)
    with naming_key(job.key):
        reader = fermion.FermionReader(src, parallel=parallel, coalesce_gap=RANGED_GAP if ranged else None)
        try:
            out = _decode_with(reader, job, dynamic=dynamic, index_name=index_name, index_range=index_range,
                               stats=stats)
            if stats is not None:
                stats.add(reader, [c for c in job.cols if c != index_name] or job.cols, job, ranged=ranged)
            return out
        finally:
            reader.close()


def _decode_with(reader: fermion.FermionReader, job: _Job, *, dynamic: bool, index_name: str | None,
                 index_range: tuple[int, int] | None, stats: FetchStats | None = None) -> pa.Table:
    cols = job.cols
    if dynamic:  # segments hold the columns that existed when they were written
        present = set(reader.column_names)
        cols = [c for c in cols if c in present]
    # the segment's schema metadata lists its NaN-rows companions and sparse columns (normalize's
    # _nanrows); a trimmed or row-selected decode drops it, so it is put back
    metadata = reader.metadata if job.text or dynamic else None
    if job.text:
        cols = cols + norm.segment_companions(metadata, job.text)
    out = _decode_rows(reader, job, cols, index_name=index_name, index_range=index_range, stats=stats)
    restore = bool(job.text) or (metadata is not None and norm.SPARSE_KEY in metadata)
    if restore and out is not RULED_OUT and out.schema.metadata != metadata:
        out = out.replace_schema_metadata(metadata)
    return out


def _coded_type(typ: pa.DataType) -> pa.DataType:
    binary = pa.types.is_binary(typ) or pa.types.is_large_binary(typ)
    return pa.dictionary(pa.int32(), pa.large_binary() if binary else pa.large_string())


def _decode_rows(reader: fermion.FermionReader, job: _Job, cols: list[str], *, index_name: str | None,
                 index_range: tuple[int, int] | None, stats: FetchStats | None) -> pa.Table:
    if not job.codes:
        return _decode_plain(reader, job, cols, index_name=index_name, index_range=index_range, stats=stats)
    codes = [c for c in cols if c in job.codes]
    simple = job.rows is None and job.late is None and not (job.trim and index_range is not None)
    out = _decode_plain(reader, job, [c for c in cols if c not in job.codes] if simple else cols,
                        index_name=index_name, index_range=index_range, stats=stats)
    if out is RULED_OUT:
        return out
    for c in codes:
        col = reader.read_dictionary(c, (job.lo, job.hi)) if simple else None
        if col is None:  # not all dictionary pages (or rows cut by a filter): encode the strings
            plain = reader.read([c], row_range=(job.lo, job.hi)).column(0) if simple else out.column(c)
            typ = _coded_type(plain.type)
            col = pc.dictionary_encode(plain.cast(typ.value_type))
            col = pa.chunked_array([pa.DictionaryArray.from_arrays(ch.indices.cast(pa.int32()), ch.dictionary)
                                    for ch in col.chunks], typ)
        if simple:
            out = out.append_column(c, col)
        else:
            out = out.set_column(out.schema.get_field_index(c), c, col)
    return out.select(cols) if simple else out


def _decode_plain(reader: fermion.FermionReader, job: _Job, cols: list[str], *, index_name: str | None,
                  index_range: tuple[int, int] | None, stats: FetchStats | None) -> pa.Table:
    lo, hi = job.lo, job.hi
    if job.late is not None and hi > lo:
        # late materialisation: the filter columns first, then only the rows that may pass
        judge = not job.judged and (job.judging is None or job.judging.due())
        sel = reader.match_rows(list(job.late), (lo, hi), rows=job.rows, prune=judge)
        if judge and job.judging is not None:
            job.judging.record(reader.ruled_out > 0)
        considered = hi - lo if job.rows is None else sum(b - a for a, b in job.rows)
        if len(sel) * LATE_MAX_FRACTION <= considered:
            if stats is not None:
                stats.taken(considered, len(sel))
            return reader.take(cols, sel) if len(sel) else RULED_OUT
    if job.rows is not None:  # page skipping: the same rows in every column slice
        return reader.read(cols, row_range=(lo, hi), rows=job.rows)
    if job.trim and index_range is not None and index_name is not None and hi > lo:
        # decode the index first, then only the pages of the data columns inside the range
        ixcol = reader.read([index_name], row_range=(lo, hi)).column(0)
        ix = ixcol.cast(pa.int64()).to_numpy()
        a = int(np.searchsorted(ix, index_range[0], "left"))
        b = max(a, int(np.searchsorted(ix, index_range[1], "right")))
        rest = [c for c in cols if c != index_name]
        data = reader.read(rest, row_range=(lo + a, lo + b))
        if len(rest) == len(cols):
            return data
        return pa.Table.from_arrays([ixcol.slice(a, b - a), *data.columns], names=[index_name, *rest])
    return reader.read(cols, row_range=(lo, hi))


def wanted_positions(schema: pa.Schema, n_index: int, wanted: Sequence[str]) -> list[int]:
    """Sorted data-column positions (0 = first data column) of the stored names ``wanted``;
    names not in ``schema`` are skipped. A few columns of a wide schema cost O(len(wanted))."""
    if 8 * len(wanted) < len(schema):
        found = {schema.get_field_index(w) for w in wanted}
        return sorted(i - n_index for i in found if i >= n_index)
    pos = {name: i for i, name in enumerate(schema.names[n_index:])}
    return sorted({pos[w] for w in wanted if w in pos})


def with_columns(leaves: np.ndarray, wanted_pos: Sequence[int]) -> np.ndarray:
    """The leaves holding a wanted data column (``wanted_pos``: sorted positions); with none
    wanted (an index-only read), the first column slice of each row group, which still gives
    the rows. One binary search per leaf, whatever the number of columns."""
    if not len(leaves):
        return leaves
    if len(wanted_pos):
        pos = np.asarray(wanted_pos, dtype=np.int64)
        i = np.searchsorted(pos, leaves["start_col"].astype(np.int64), "left")
        need = (i < len(pos)) & (pos[np.minimum(i, len(pos) - 1)] < leaves["end_col"].astype(np.int64))
    else:
        need = leaves["start_col"] == leaves["start_col"].min()
    return leaves if need.all() else leaves[need]


def read_segments(
    store: KVStore,
    keys: LibraryKeys,
    sym: str,
    leaves: np.ndarray,
    schema: pa.Schema,
    n_index: int,
    wanted: Sequence[str],
    row_range: tuple[int, int] | None,
    *,
    dynamic: bool = False,
    index_range: tuple[int, int] | None = None,
    pools: Pools | None = None,
    positions: Sequence[int] | None = None,
    mark_absent: bool = False,
    absent_null: bool = False,
    candidates: dict[int, Intervals] | None = None,
    stats: FetchStats | None = None,
    filters: Sequence[Any] = (),
    nan_rows: bool = False,
    judged: bool = False,
    code_keys: Sequence[str] = (),
    with_index: bool = True,
) -> pa.Table:
    """Fetch and assemble the rows ``row_range`` (absolute, half-open) of the columns
    ``wanted`` (storage names, storage order) from ``leaves``.

    ``index_range`` (closed, int64 ns of a sorted datetime index) additionally trims the
    segments that straddle its bounds, decoding only the pages of the rows inside it; the
    caller still slices the result exactly. ``positions``: the data-column positions of
    ``wanted`` when the caller already has them (a read plan), so they are not looked up again.
    ``mark_absent`` (dynamic schema, for a query): a column backfilled in some rows gets a
    boolean companion column (``query.absent_name``) true on those rows. ``candidates`` (a read
    plan's, by row group start): the absolute rows of a row group that may pass the query's
    filters; every column slice of that group decodes only the pages covering them, so the
    slices stay row-aligned. ``stats`` counts pages and bytes fetched. ``filters`` (a query's
    value filters, ``QueryPlan.value_filters``): a row group held in one segment with every
    filter column decodes those columns first and then only the rows that may pass (late
    materialisation; the query still filters them exactly). ``nan_rows``: string
    columns bring their NaN-rows companions, as trailing columns (``normalize``'s
    ``split_nan_rows`` takes them off), where any segment holds one. ``judged``: ``filters``
    were already judged on the statistics and Bloom filters of ``leaves`` (``candidates``
    holds the outcome), so late materialisation does not judge them again. ``code_keys``:
    string columns to return dictionary-encoded (``dictionary<int32, large_string>``: each
    page's codes into its own dictionary, the strings never built; a query groups on them).
    ``with_index=False``: the index columns are neither decoded nor returned (a group-by of
    data columns never looks at them); ``index_range`` must then be None.
    """
    index_names = [schema.field(i).name for i in range(n_index)] if with_index else []
    wanted_pos = list(positions) if positions is not None else wanted_positions(schema, n_index, wanted)
    data_names: Any = _Names(schema, n_index) if 8 * len(wanted) < len(schema) else schema.names[n_index:]
    out_schema = pa.schema([schema.field(i) for i in range(len(index_names))]
                           + [schema.field(n_index + p) for p in wanted_pos])
    coded = {f.name for f in out_schema if f.name in code_keys and _is_text(f.type) and not pa.types.is_null(f.type)} \
        if code_keys and not dynamic else set()
    for name in coded:
        k = out_schema.get_field_index(name)
        out_schema = out_schema.set(k, out_schema.field(k).with_type(_coded_type(out_schema.field(k).type)))
    if len(leaves) == 0:
        return out_schema.empty_table()
    leaves = with_columns(leaves, wanted_pos)
    if len(leaves) == 0:
        return out_schema.empty_table()
    digests = hex_digests(leaves)
    start = leaves["start_row"].astype(np.int64)
    stop = leaves["end_row"].astype(np.int64)
    off = leaves["seg_offset"].astype(np.int64)
    lo = np.zeros(len(leaves), dtype=np.int64)
    hi = stop - start
    if row_range is not None:
        lo = np.clip(row_range[0] - start, 0, hi)
        hi = np.clip(row_range[1] - start, lo, hi)
    # a row group (same rows, several column slices) decodes its index columns once
    first_in_group = np.ones(len(leaves), dtype=bool)
    first_in_group[1:] = (start[1:] != start[:-1]) | (stop[1:] != stop[:-1])
    use_range = index_range if (index_range is not None and index_names) else None
    if use_range is not None:
        trim = (leaves["min_index"] < use_range[0]) | (leaves["max_index"] > use_range[1])
    else:
        trim = np.zeros(len(leaves), dtype=bool)
    last_in_group = np.ones(len(leaves), dtype=bool)
    last_in_group[:-1] = first_in_group[1:]
    late_cols = {t[0] for t in simple_terms(filters)} if filters and not dynamic else set()
    text = {f.name for f in out_schema if _is_text(f.type)} if nan_rows else set()
    jobs = []
    judging = Judging() if late_cols and not judged else None
    for i in range(len(leaves)):
        c0, c1 = int(leaves[i]["start_col"]), int(leaves[i]["end_col"])
        data = [data_names[p] for p in wanted_pos if c0 <= p < c1]
        keep_index = bool(first_in_group[i]) or bool(trim[i])
        cols = (index_names if keep_index else []) + data
        a, b = int(off[i] + lo[i]), int(off[i] + hi[i])
        rows = None
        if candidates is not None and int(start[i]) in candidates:
            rows = file_rows(candidates[int(start[i])], int(start[i]), int(off[i]), a, b)
        late = tuple(filters) if late_cols and first_in_group[i] and last_in_group[i] \
            and late_cols.issubset(cols) else None
        jobs.append(_Job(i, keys.tdata(sym, digests[i]), cols, a, b, bool(trim[i]) and rows is None, rows, late,
                         tuple(c for c in data if c in text) if text else (), judged,
                         tuple(c for c in data if c in coded) if coded else (), judging if late else None))
    tables = _fetch_decode(store, jobs, leaves, dynamic=dynamic,
                           index_name=index_names[0] if index_names else None, index_range=use_range,
                           pools=pools or shared(), stats=stats)
    if any(t is RULED_OUT for t in tables):  # whole row groups (late jobs) without a row
        kept = [i for i, t in enumerate(tables) if t is not RULED_OUT]
        if not kept:
            return out_schema.empty_table()
        tables, first_in_group = [tables[i] for i in kept], first_in_group[kept]
    return _assemble(tables, first_in_group, out_schema, set(index_names), mark_absent=mark_absent,
                     nan_rows=nan_rows, absent_null=absent_null)


def _fetch_decode(store: KVStore, jobs: list[_Job], leaves: np.ndarray, *, dynamic: bool,
                  index_name: str | None, index_range: tuple[int, int] | None,
                  pools: Pools, stats: FetchStats | None = None) -> list[pa.Table]:
    nbytes = int(leaves["nbytes"].sum())
    small = nbytes < SMALL_SEGMENT_BYTES * len(jobs)
    parallel_inner = len(jobs) == 1
    kw: dict[str, Any] = {"dynamic": dynamic, "index_name": index_name, "index_range": index_range,
                          "parallel": parallel_inner, "stats": stats}
    ranged: set[int] = set()  # segments read by ranged requests while decoding (S3)
    if small or not lends_views(store):
        sizes = leaves["nbytes"]
        ranged = set() if small or lends_views(store) else \
            {j.pos for j in jobs if int(sizes[j.pos]) >= RANGED_MIN_BYTES and _few_rows(j)}
        whole = [j for j in jobs if j.pos not in ranged]
        got = store.read_many([j.key for j in whole]) if whole else []
        bufs: dict[int, Any] = dict(zip([j.pos for j in whole], got, strict=True))
        if stats is not None and got:
            stats.fetched(sum(len(b) for b in got))

        def source(j: _Job) -> Any:
            if j.pos in ranged:
                return fermion.RangeReader(lambda off, n, key=j.key: store.read_range(key, off, n),
                                           size=int(sizes[j.pos]))
            return bufs[j.pos]

        def run_group(group: Sequence[_Job]) -> list[pa.Table]:
            return [_decode(source(j), j, **kw) for j in group]
    else:
        def one(j: _Job) -> pa.Table:
            with store.read_view(j.key) as view:
                t = _decode(view, j, **kw)
                if _detached(t, view):
                    return t
                del t
                copy = bytes(view)
            return _decode(copy, j, **{**kw, "stats": None})

        def run_group(group: Sequence[_Job]) -> list[pa.Table]:
            return [one(j) for j in group]

    late = pools.decode_threads <= 1 and not ranged and all(j.late is not None for j in jobs)
    if len(jobs) == 1 or small or pools.threads <= 1 or late:
        # small segments cost Python per-file overhead, not numpy work: threads would only
        # contend for the GIL (2,000 ten-row segments: 0.58 s inline vs 0.75-1.0 s pooled);
        # one-core pools decode in the calling thread; and so do filters judged first where
        # decode threads only contend for the GIL (two cores or fewer): they decode a filter
        # column and a few rows of the others per segment, Python work more than numpy work
        # (a fresh process's `ticker == x` over 50 segments: 77 -> 66 ms of CPU), unless
        # decoding waits for ranged requests (S3), which the threads overlap
        return run_group(jobs)
    futures = [pools.work.submit(run_group, [j]) for j in jobs]
    wait(futures)  # no decode outlives the read, even when one fails (a corrupt segment)
    out: list[pa.Table] = []
    for f in futures:
        out.extend(f.result())
    return out


def _few_rows(job: _Job) -> bool:
    """Whether page skipping leaves at most 1 / :data:`RANGED_MAX_FRACTION` of the job's rows."""
    return job.rows is not None and sum(b - a for a, b in job.rows) * RANGED_MAX_FRACTION <= job.hi - job.lo


def _assemble(tables: list[pa.Table], first_in_group: np.ndarray, out_schema: pa.Schema,
              index_names: set[str], *, mark_absent: bool = False, nan_rows: bool = False,
              absent_null: bool = False) -> pa.Table:
    """Put column slices of the same rows side by side, then stack row groups (zero-copy:
    each output column is a chunked array of the decoded pieces).

    ``nan_rows``: NaN-rows companions follow as trailing columns where some segment holds one
    or some older segment leaves the kind of missing strings unknown: false in the rows of
    segments whose column holds only None, null (unknown) in those of older segments."""
    chunks: dict[str, list[Any]] = {f.name: [] for f in out_schema}
    pieces: dict[str, list[tuple[bool, int]]] = {f.name: [] for f in out_schema}  # (absent, rows)
    group: dict[str, pa.ChunkedArray] = {}
    nrows = 0
    wanted: set[str] = set()  # companions to output
    groups: list[tuple[dict[str, pa.ChunkedArray], set[str], int]] = []  # companions held, only None, rows
    only_none: set[str] = set()
    sparse = False  # whether nulls of a sparse column were kept (a query backfills its output)

    def flush() -> None:
        held = {n: c for n, c in group.items() if norm.is_nan_rows_name(n)}
        wanted.update(held)
        groups.append((held, only_none, nrows))
        for f in out_schema:
            col = group.get(f.name)
            pieces[f.name].append((col is None, nrows))
            if col is None:
                chunks[f.name].append(pa.nulls(nrows, f.type) if absent_null else fill_missing(f.type, nrows))
            else:
                chunks[f.name].extend(_cast(col, f.type).chunks)

    for i, t in enumerate(tables):
        t, kept = norm.unsparse(t, mark_absent or absent_null)
        sparse |= kept
        if first_in_group[i]:
            if i:
                flush()
            group, only_none = {}, set()
            nrows = t.num_rows
        if nan_rows:
            nones, unknown = norm.segment_kinds(t)
            only_none |= {norm.nan_rows_name(n) for n in nones}
            wanted.update(norm.nan_rows_name(n) for n in unknown)
        for name, col in zip(t.column_names, t.columns, strict=True):
            if name in index_names and not first_in_group[i]:
                continue
            group.setdefault(name, col)
    flush()
    arrays = [pa.chunked_array(chunks[f.name], type=f.type) for f in out_schema]
    if arrays:
        table = pa.Table.from_arrays(arrays, schema=out_schema)
    else:  # no column (a RangeIndex symbol read with columns=[]): the rows all the same
        table = pa.table({"_": pa.nulls(sum(n for *_, n in groups))}, metadata=out_schema.metadata).select([])
    if nan_rows and wanted:
        for name in sorted(wanted):
            parts: list[Any] = []
            for held, nones, n in groups:
                col = held.get(name)
                if col is not None:
                    parts.extend(col.chunks)
                else:
                    parts.append(pa.array(np.zeros(n, bool)) if name in nones else pa.nulls(n, pa.bool_()))
            table = table.append_column(name, pa.chunked_array(parts, type=pa.bool_()))
    if mark_absent:
        for f in out_schema:
            flags = pieces[f.name]
            if f.name in index_names or not any(a for a, _ in flags):
                continue
            absent = np.repeat([a for a, _ in flags], [n for _, n in flags])
            table = table.append_column(absent_name(f.name), pa.array(absent, pa.bool_()))
    if sparse:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), norm.SPARSE_KEY: b"[]"})
    return table


def _is_text(typ: pa.DataType) -> bool:
    return (pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_binary(typ)
            or pa.types.is_large_binary(typ) or pa.types.is_null(typ))


def _cast(col: pa.ChunkedArray, typ: pa.DataType) -> pa.ChunkedArray:
    if col.type == typ:
        return col
    if pa.types.is_floating(typ) and pa.types.is_integer(col.type):
        # integers of a column a dynamic schema made float: each its nearest float, as numpy
        # and ArcticDB convert (beyond 2**53 not exact; Arrow's checked cast refuses them)
        return col.cast(typ, safe=False)
    return col.cast(typ)


def fill_missing(typ: pa.DataType, n: int) -> pa.Array:
    """Backfill of a column missing from a segment (dynamic schema): 0 for ints, NaN for
    floats, null otherwise -- as ArcticDB does."""
    if pa.types.is_integer(typ):
        return pa.array(np.zeros(n, dtype=typ.to_pandas_dtype()), type=typ)
    if pa.types.is_floating(typ):
        return pa.array(np.full(n, np.nan, dtype=typ.to_pandas_dtype()), type=typ)
    if pa.types.is_boolean(typ):
        return pa.array(np.zeros(n, dtype=bool), type=typ)
    return pa.nulls(n, type=typ)
