"""Reads straight into pandas blocks: the read path for the common pandas case.

A pandas DataFrame keeps columns of one dtype together in a 2-D *block* (one row of the
block per column). For a read whose columns all have a fixed numpy form (ints, floats,
naive nanosecond timestamps, strings as Python objects) under a datetime or range index,
this module

1. works out the exact rows of the result first (a ``date_range`` costs the index column of
   at most the two segments that straddle its bounds),
2. allocates the final blocks and the index buffer once, and
3. has every segment decode its columns straight into its rows of those blocks
   (``FermionReader.read_into``): uncompressed pages are one copy from the store's memory
   map into the result, compressed pages decompress into it, dictionary-coded strings are a
   ``take`` of a few shared Python strings.

The DataFrame is then built around the blocks without copying them. Nothing is allocated
twice, so a read's peak memory is the result plus the segments in flight; with a mapping
backend the map pages of large segments are released as soon as they are decoded
(``KVStore.read_view(release=True)``).

Anything else (nulls in an integer column, nested or dictionary types, dynamic schema,
multi-indexes, query processing) raises :class:`NotDirect` before or while decoding and the
caller uses the general Arrow path instead, so this module never changes what a read returns,
only how fast and in how much memory.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import wait
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa

from arcticlite import format as fermion
from arcticlite import normalize as norm
from arcticlite._envelope import naming_key
from arcticlite.index import hex_digests
from arcticlite.progress import Progress
from arcticlite.storage import KVStore
from arcticlite.table._pools import Pools, shared
from arcticlite.table._segments import lends_views
from arcticlite.version import LibraryKeys

_NAT = np.iinfo(np.int64).min
_T = TypeVar("_T")
POOL_MIN_BYTES = 4 << 20
"""Reads of fewer stored bytes than this decode on the calling thread."""
FETCH_WINDOW = 16
"""Segments fetched together from a store without zero-copy views (bounds the bytes in flight)."""


class NotDirect(Exception):
    """This read cannot go straight into pandas blocks; use the general path."""


@functools.lru_cache(maxsize=256)
def block_dtype(typ: pa.DataType) -> np.dtype[Any] | None:
    """The numpy dtype pandas gives a column of Arrow type ``typ`` (None: not handled here)."""
    if pa.types.is_integer(typ) or (pa.types.is_floating(typ) and typ.bit_width >= 32):
        return np.dtype(typ.to_pandas_dtype())
    if pa.types.is_boolean(typ):
        return np.dtype(bool)
    if pa.types.is_timestamp(typ) and typ.tz is None and typ.unit == "ns":
        return np.dtype("datetime64[ns]")
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return np.dtype(object)
    return None


@dataclass(slots=True)
class Blocks:
    """The result being filled: one 2-D array per dtype and the index values."""

    arrays: list[np.ndarray]  # shape (columns of that dtype, rows)
    placement: list[list[int]]  # result column positions of each array's rows
    dest: dict[str, np.ndarray]  # stored column name -> its row in a block (1-D view)
    index: np.ndarray | None  # datetime64[ns] values of the index, if it has one
    nrows: int
    # with an object block whose slots start NULL (format.object_array): per thread, the string
    # objects its segments share
    labels: threading.local | None = None

    @property
    def null_objects(self) -> bool:
        """Whether the object block's slots start NULL (decoders fill them by pointer)."""
        return self.labels is not None


def allocate(fields: Sequence[pa.Field], index_field: pa.Field | None, nrows: int) -> Blocks:
    """Blocks for the data columns ``fields`` (result order) and the index column."""
    groups: dict[np.dtype[Any], list[int]] = {}
    dtypes = []
    for pos, f in enumerate(fields):
        dt = block_dtype(f.type)
        if dt is None:
            raise NotDirect(f"column type {f.type}")
        dtypes.append(dt)
        groups.setdefault(dt, []).append(pos)
    arrays, placement, dest = [], [], {}
    total = nrows * (sum(dt.itemsize * len(p) for dt, p in groups.items() if not dt.hasobject) + (8 if index_field is not None else 0))
    null_objects = False
    for dt, positions in groups.items():
        if dt.hasobject:  # NULL slots, memory mapped by the decoders: no None written first
            arr, null_objects = fermion.object_array((len(positions), nrows))
        else:
            arr = fermion.empty(len(positions) * nrows, dt, result_bytes=total).reshape(len(positions), nrows)
        arrays.append(arr)
        placement.append(positions)
        for j, pos in enumerate(positions):
            dest[fields[pos].name] = arr[j]
    index = None
    if index_field is not None:
        index = fermion.empty(nrows, np.dtype("datetime64[ns]"), result_bytes=total)
        dest[index_field.name] = index
    return Blocks(arrays, placement, dest, index, nrows, threading.local() if null_objects else None)


def no_null_slots(out: np.ndarray) -> None:
    """Set any NULL slot of a part of a NULL-filled object block (one that no decoder wrote) to
    None: a read's segments always cover its rows, and this makes sure pandas never meets
    NULL."""
    slots = fermion.object_words(out)
    if np.count_nonzero(slots) < len(slots):
        out[np.flatnonzero(slots == 0)] = None


def _as_raw(a: np.ndarray) -> np.ndarray:
    """The buffer a segment decodes into: timestamps as their int64 values."""
    return a.view(np.int64) if a.dtype.kind == "M" else a


def _patch_nulls(name: str, out: np.ndarray, valid: np.ndarray | None) -> None:
    if valid is None:
        return
    invalid = ~valid
    if out.dtype.kind == "f":
        out[invalid] = np.nan
    elif out.dtype.kind == "M":
        out.view(np.int64)[invalid] = _NAT
    elif out.dtype.kind == "O":
        out[invalid] = None
    else:  # pandas turns ints with nulls into float64, bools into objects: the general path
        raise NotDirect(f"nulls in column {name!r} of dtype {out.dtype}")


def _patch_nan_rows(reader: fermion.FermionReader, name: str, out: np.ndarray, valid: np.ndarray,
                    job: _Job) -> None:
    """NaN (rather than None) in the missing rows the segment's NaN-rows companion marks."""
    comps = norm.segment_companions(reader.metadata, [name])
    if comps:
        nan = reader.read(comps, row_range=(job.lo, job.hi)).column(0).fill_null(False)
        out[np.asarray(nan) & ~valid] = np.nan


RELEASE_MIN_BYTES = 4 << 20
"""A segment whose rows read take at least this many stored bytes leaves the resident set once
decoded (``read_view(release=True)``): that is what keeps a large read's peak memory near the
size of its result. Smaller shares stay mapped, so that repeated small reads (a date range, a
tail) do not fault their pages in again every time."""


@dataclass(frozen=True, slots=True)
class _Job:
    key: str
    cols: list[str]
    lo: int  # rows [lo, hi) of the segment file
    hi: int
    at: int  # first result row
    nbytes: int  # stored bytes of the rows read (a share of the segment's size)


def _decode_into(src: Any, job: _Job, blocks: Blocks, parallel: bool, fresh: bool = False) -> None:
    with naming_key(job.key):
        _decode_job(src, job, blocks, parallel, fresh)


def _decode_job(src: Any, job: _Job, blocks: Blocks, parallel: bool, fresh: bool) -> None:
    reader = fermion.FermionReader(src, parallel=parallel)
    try:
        n = job.hi - job.lo
        outs = [_as_raw(blocks.dest[c][job.at : job.at + n]) for c in job.cols]
        # fresh: each page maps its share of the result just before it writes it (the pages of a
        # NULL-filled object block are always fresh)
        labels = None
        if blocks.labels is not None:  # the segments a thread decodes share string objects
            labels = getattr(blocks.labels, "labels", None)
            if labels is None:
                labels = blocks.labels.labels = fermion.Labels()
        valid = reader.read_into(job.cols, outs, row_range=(job.lo, job.hi), populate=fresh,
                                 null_objects=blocks.null_objects, labels=labels)
        for c, out, v in zip(job.cols, outs, valid, strict=True):
            if blocks.null_objects and out.dtype.kind == "O":
                no_null_slots(out)
            _patch_nulls(c, out, v)
            if v is not None and out.dtype.kind == "O":
                _patch_nan_rows(reader, c, out, v, job)
    finally:
        reader.close()


def fresh_bytes(blocks: Blocks) -> int:
    """Bytes of the result that are fresh memory the decoders write (object arrays excluded)."""
    return sum(a.nbytes for a in (*blocks.arrays, blocks.index) if a is not None and a.dtype.kind != "O")


def fill(store: KVStore, jobs: list[_Job], blocks: Blocks, pools: Pools | None = None) -> None:
    """Decode every job into ``blocks`` (each writes its own rows).

    A large result (:data:`arcticlite.format.PREFAULT_MIN_BYTES` or more) is decoded by two
    threads where the machine has two cores (more threads where it has more), each taking the
    next segment and decoding each page into its rows of the result right after mapping them
    (:func:`arcticlite.format.populate`): first touch of fresh memory costs more than the decoding, and both
    it and the copies run outside the GIL. Smaller reads decode on the calling thread (on
    two cores a 5M-row quote read took 0.14 s inline against 0.14-0.17 s on threads: the
    decoders of small segments interleave many short numpy calls with Python). Stores
    without zero-copy views are read a window of segments at a time (parallel GETs), the next
    window fetched while this one decodes."""
    if not jobs:
        return
    pools = pools or shared()
    views = lends_views(store)
    fresh = fresh_bytes(blocks) >= fermion.PREFAULT_MIN_BYTES
    pooled = pools.decode_threads > 1 and len(jobs) > 1 and sum(j.nbytes for j in jobs) >= POOL_MIN_BYTES
    runners = pools.decode_threads if pooled else 2 if fresh and pools.threads > 1 and len(jobs) > 1 else 1

    bar = Progress(len(jobs), "read", unit="segment")  # drawn on terminals for long reads only

    def one(job: _Job) -> None:
        if views:  # decode from the store's memory map; large reads leave the RSS after
            with store.read_view(job.key, release=job.nbytes >= RELEASE_MIN_BYTES) as view:
                _decode_into(view, job, blocks, False, fresh)
        else:
            _decode_into(store.read(job.key), job, blocks, False, fresh)
        bar.update(1)

    with bar:
        if views or len(jobs) == 1:
            _spread(one, jobs, runners, pools)
            return
        _fill_windows(store, jobs, blocks, pools, runners, fresh, bar)


def _spread(fn: Callable[[_T], None], jobs: Sequence[_T], runners: int, pools: Pools) -> None:
    """``fn`` of every job, on the calling thread and ``runners - 1`` of the pool's, each taking
    the next job in order (the calling thread alone makes progress even if the pool is busy)."""
    if runners <= 1 or len(jobs) <= 1:
        for j in jobs:
            fn(j)
        return
    lock = threading.Lock()
    pending = iter(jobs)
    failed = threading.Event()

    def run() -> None:
        while not failed.is_set():
            with lock:
                job = next(pending, None)
            if job is None:
                return
            try:
                fn(job)
            except BaseException:
                failed.set()
                raise

    futures = [pools.work.submit(run) for _ in range(min(runners, len(jobs)) - 1)]
    try:
        run()
    finally:
        # a helper that has not started (the pool busy, maybe with threads waiting like this
        # one) is not waited for: no job is left for it
        _run([f for f in futures if not f.cancel()])  # the others end before the blocks are used


def _fill_windows(store: KVStore, jobs: list[_Job], blocks: Blocks, pools: Pools, runners: int, fresh: bool,
                  bar: Progress) -> None:
    """``fill`` from a store without views: a window of segments at a time."""
    windows = [jobs[w : w + FETCH_WINDOW] for w in range(0, len(jobs), FETCH_WINDOW)]
    ahead = pools.io.submit(store.read_many, [j.key for j in windows[0]])
    try:
        for k, window in enumerate(windows):
            bodies = ahead.result()
            if k + 1 < len(windows):
                ahead = pools.io.submit(store.read_many, [j.key for j in windows[k + 1]])
            _spread(lambda jb: _decode_into(jb[1], jb[0], blocks, False, fresh),
                    list(zip(window, bodies, strict=True)), runners, pools)
            bar.update(len(window))
            del bodies
    finally:
        wait([ahead])


def _run(futures: list[Any]) -> None:
    wait(futures)  # every job ends before the blocks are used or dropped
    for f in futures:
        f.result()


def index_bounds(store: KVStore, keys: LibraryKeys, sym: str, leaves: np.ndarray, index_name: str,
                 index_range: tuple[int, int], known: dict[str, tuple[int, np.ndarray]]) -> tuple[int, int]:
    """Absolute rows ``[a, b)`` of a sorted datetime index inside the closed ``index_range``,
    given the row groups overlapping it (decodes the index of at most two segments, and leaves
    them in ``known``: segment key -> (first file row, index values) for :func:`use_known`)."""
    lo, hi = index_range
    digests = hex_digests(leaves)

    def index_of(i: int) -> np.ndarray:
        key = keys.tdata(sym, digests[i])
        off = int(leaves[i]["seg_offset"])
        n = int(leaves[i]["end_row"] - leaves[i]["start_row"])
        out = np.empty(n, dtype=np.int64)
        with store.read_view(key) as src, naming_key(key):
            reader = fermion.FermionReader(src, parallel=False)
            try:
                valid = reader.read_into([index_name], [out], row_range=(off, off + n))[0]
            finally:
                reader.close()
        if valid is not None:
            raise NotDirect("nulls in the index")
        known[key] = (off, out)
        return out

    first, last = 0, len(leaves) - 1
    a = int(leaves[first]["start_row"])
    if int(leaves[first]["min_index"]) < lo:
        a += int(np.searchsorted(index_of(first), lo, "left"))
    b = int(leaves[last]["end_row"])
    if int(leaves[last]["max_index"]) > hi:
        b = int(leaves[last]["start_row"]) + int(np.searchsorted(index_of(last), hi, "right"))
    return a, max(a, b)


def use_known(jobs: list[_Job], known: dict[str, tuple[int, np.ndarray]], index_name: str,
              blocks: Blocks) -> list[_Job]:
    """Fill the index rows of jobs whose segment's index is already decoded; the jobs left
    decode only their data columns (none at all for an index-only job)."""
    if not known or blocks.index is None:
        return jobs
    out = []
    raw = blocks.index.view(np.int64)
    for j in jobs:
        hit = known.get(j.key)
        if hit is None or not j.cols or j.cols[0] != index_name:
            out.append(j)
            continue
        off, values = hit
        if not off <= j.lo <= j.hi <= off + len(values):  # another slice of a shared segment
            out.append(j)
            continue
        raw[j.at : j.at + j.hi - j.lo] = values[j.lo - off : j.hi - off]
        if len(j.cols) > 1:
            out.append(_Job(j.key, j.cols[1:], j.lo, j.hi, j.at, j.nbytes))
    return out


def plan(keys: LibraryKeys, sym: str, leaves: np.ndarray, schema: pa.Schema, n_index: int,
         wanted_pos: list[int], rows: tuple[int, int]) -> list[_Job]:
    """One job per segment overlapping ``rows``: which of its columns go where."""
    a, b = rows
    start = leaves["start_row"].astype(np.int64)
    stop = leaves["end_row"].astype(np.int64)
    keep = (start < b) & (stop > a)
    if not keep.all():
        leaves, start, stop = leaves[keep], start[keep], stop[keep]
    if not len(leaves):
        return []
    # the row groups must tile [a, b) exactly (they always do; anything else is not ours to fix)
    if len(leaves) == 1:
        tiled = int(start[0]) <= a and int(stop[0]) >= b
    else:
        group_start = np.unique(start)
        group_stop = np.unique(stop)
        tiled = (len(group_start) == len(group_stop) and group_start[0] <= a and group_stop[-1] >= b
                 and not (group_start[1:] != group_stop[:-1]).any())
    if not tiled:
        raise NotDirect("row groups do not tile the rows")
    digests = hex_digests(leaves)
    names = schema.names
    index_names = names[:n_index]
    starts, stops = start.tolist(), stop.tolist()
    col_lo, col_hi = leaves["start_col"].tolist(), leaves["end_col"].tolist()
    wanted = np.asarray(wanted_pos, dtype=np.int64)
    cols: list[list[str]] = []
    for c0, c1 in zip(col_lo, col_hi, strict=True):
        sel = wanted if (len(wanted) and c0 <= int(wanted.min()) and int(wanted.max()) < c1) \
            else wanted[(wanted >= c0) & (wanted < c1)]
        cols.append([names[n_index + p] for p in sel.tolist()])
    if index_names:  # each row group's index comes from one of its segments, one with data if any
        carrier: dict[int, int] = {}
        for i, s in enumerate(starts):
            if s not in carrier or (cols[i] and not cols[carrier[s]]):
                carrier[s] = i
        for i in carrier.values():
            cols[i] = index_names + cols[i]
    jobs = []
    for i, (off, nbytes, seg_rows) in enumerate(zip(leaves["seg_offset"].tolist(), leaves["nbytes"].tolist(),
                                                    leaves["seg_rows"].tolist(), strict=True)):
        if cols[i]:
            lo, hi = max(starts[i], a), min(stops[i], b)
            jobs.append(_Job(keys.tdata(sym, digests[i]), cols[i], off + lo - starts[i], off + hi - starts[i],
                             lo - a, nbytes * (hi - lo) // max(1, seg_rows)))
    return jobs


try:  # pandas >= 3 has a public constructor; 2.x builds the manager the way pyarrow does
    from pandas.api.internals import create_dataframe_from_blocks as _from_blocks
except ImportError:
    _from_blocks = None


def _block(arr: np.ndarray, placement: list[int]) -> Any:
    """pandas 2's block of the 2-D ``arr`` at ``placement``: numbers and bools built directly
    (``make_block`` checks and coerces what they never need: ~10 us a block), others by
    ``make_block``."""
    if _new_block is not None and arr.dtype.kind in "biuf":
        return _new_block(arr, placement=_BlockPlacement(np.asarray(placement, dtype=np.intp)), ndim=2)
    from pandas.core.internals.api import make_block

    return make_block(arr, placement=placement)


try:  # pandas 2.x internals (only used when pandas has no public constructor, above)
    from pandas._libs.internals import BlockPlacement as _BlockPlacement
    from pandas.core.internals.blocks import new_block as _new_block
except ImportError:  # pragma: no cover - other pandas
    _new_block = None


def frame(blocks: Blocks, index: pd.Index, columns: pd.Index) -> pd.DataFrame:
    """A DataFrame around ``blocks`` without copying them."""
    pairs = list(zip(blocks.arrays, blocks.placement, strict=True))
    try:
        if _from_blocks is not None:
            return _from_blocks([(arr, np.asarray(pl)) for arr, pl in pairs],
                                index=index, columns=columns)
        from pandas.core.internals import BlockManager

        mgr = BlockManager([_block(arr, pl) for arr, pl in pairs], [columns, index])
        return pd.DataFrame._from_mgr(mgr, mgr.axes)
    except (ImportError, AttributeError, TypeError):  # pragma: no cover - other pandas internals
        data = {pos: arr[j] for arr, pl in pairs for j, pos in enumerate(pl)}
        df = pd.DataFrame({k: data[k] for k in sorted(data)}, index=index, copy=False)
        df.columns = columns
        return df
