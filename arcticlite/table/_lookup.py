"""Finding the stored rows a merge keyed on the index touches, reading as little as possible:
by arithmetic on the leaf rows of segments flagged regular, by searching index pages in place,
or by searching an index column already read (:mod:`._merge` uses them)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from arcticlite import format as fermion
from arcticlite._envelope import naming_key
from arcticlite.format import search_arithmetic
from arcticlite.index import FLAG_REGULAR, hex_digests
from arcticlite.storage import KVStore
from arcticlite.table._pools import Pools
from arcticlite.table._segments import lends_views
from arcticlite.version import LibraryKeys

__all__ = ["found_rows", "index_hits", "rows_with_values", "take_chunked"]


def index_hits(store: KVStore, keys: LibraryKeys, sym: str, leaves: np.ndarray, sidx: np.ndarray,
               field: pa.Field, pools: Pools) -> tuple[pa.Table, np.ndarray] | None:
    """The stored rows of ``leaves`` (row groups with a sorted datetime index) whose index value
    sorted ``sidx`` holds, as (a one-column table of those values, their absolute row numbers),
    found without decoding the index column: a segment flagged regular (``FLAG_REGULAR``) by
    arithmetic on its leaf row alone, any other by searching its index pages in place
    (:meth:`FermionReader.count_sorted`); the values found are the values searched. None when
    a segment's index column cannot be searched so (the caller reads it)."""
    sidx = np.unique(sidx)  # a key the source repeats finds its stored rows once
    groups = leaves[np.unique(leaves["start_row"], return_index=True)[1]]
    digests = hex_digests(groups)
    views = lends_views(store)

    def one(i: int) -> tuple[np.ndarray, np.ndarray] | None:
        g = groups[i]
        sub = sidx[np.searchsorted(sidx, g["min_index"], "left"):np.searchsorted(sidx, g["max_index"], "right")]
        if not len(sub):
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        key = keys.tdata(sym, digests[i])
        off, n = int(g["seg_offset"]), int(g["end_row"] - g["start_row"])
        mn, mx = int(g["min_index"]), int(g["max_index"])
        whole = off == 0 and int(g["seg_rows"]) == n  # the leaf is its whole segment: min and max are its rows'
        regular = int(g["flags"]) & FLAG_REGULAR and whole and (n == 1 or (mx - mn) % (n - 1) == 0)
        if regular and n > 1 and mx > mn:  # distinct values min + k * step: each found at most once
            step = (mx - mn) // (n - 1)
            d = sub - np.int64(mn)  # sub lies within [mn, mx]
            hit = d % step == 0
            return d[hit] // step + int(g["start_row"]), sub[hit]
        if regular:
            got: tuple[np.ndarray, np.ndarray] | None = search_arithmetic(mn, 0, n, sub)
        else:
            got = _search_segment(store, views, key, field.name, int(g["nbytes"]), sub)
        if got is None:
            return None
        lo, hi = np.clip(got[0], off, off + n) - off, np.clip(got[1], off, off + n) - off
        run = hi - lo
        present = run > 0
        lo, run, sub = lo[present], run[present], sub[present]
        rows = np.repeat(lo - np.concatenate([[0], np.cumsum(run)[:-1]]), run) + np.arange(int(run.sum()))
        return rows.astype(np.int64) + int(g["start_row"]), np.repeat(sub, run)

    found = list(map(one, range(len(groups)))) if views else list(pools.io.map(one, range(len(groups))))
    if any(f is None for f in found):
        return None
    pos = np.concatenate([f[0] for f in found if f is not None]) if found else np.zeros(0, np.int64)
    vals = np.concatenate([f[1] for f in found if f is not None]) if found else np.zeros(0, np.int64)
    col = pa.array(vals, pa.int64()).cast(field.type) if not pa.types.is_timestamp(field.type) else \
        pa.array(vals, pa.int64()).view(field.type)
    return pa.table([col], schema=pa.schema([field])), pos


def _search_segment(store: KVStore, views: bool, key: str, column: str, nbytes: int, values: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray] | None:
    """``count_sorted`` of ``column`` in the segment ``key``: zero-copy where the store lends
    views, else by ranged reads (its metadata and the column's pages only)."""
    with naming_key(key):
        if views:
            with store.read_view(key) as view:
                return fermion.FermionReader(view, parallel=False).count_sorted(column, values)
        rr = fermion.RangeReader(lambda o, ln: store.read_range(key, o, ln), size=nbytes)
        return fermion.FermionReader(rr, parallel=False).count_sorted(column, values)


def found_rows(stored: pa.ChunkedArray, sidx: np.ndarray) -> np.ndarray:
    """:func:`rows_with_values` over a sorted timestamp column, chunk by chunk: each chunk's
    values are searched in place (no copy of the column; a merge reads the index column of
    every row group its source touches) for the source values within the chunk's range."""
    out, offset = [], 0
    for chunk in stored.chunks:
        n = len(chunk)
        if n and not chunk.null_count:
            vals = chunk.view(pa.int64()).to_numpy(zero_copy_only=True) if pa.types.is_timestamp(chunk.type) \
                else chunk.cast(pa.int64()).to_numpy()
            sub = sidx[np.searchsorted(sidx, vals[0], "left"):np.searchsorted(sidx, vals[-1], "right")]
            if len(sub):
                out.append(rows_with_values(vals, sub) + offset)
        elif n:
            out.append(rows_with_values(chunk.cast(pa.int64()).to_numpy(zero_copy_only=False), sidx) + offset)
        offset += n
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def take_chunked(table: pa.Table, rows: np.ndarray) -> pa.Table:
    """``table.take(rows)`` (``rows`` ascending) chunk by chunk: Arrow's take on a column of many
    chunks first concatenates them all, which for the index column of a large symbol is a
    copy of it to take a few rows."""
    col = table.column(0)
    if col.num_chunks <= 1 or any(table.column(i).num_chunks != col.num_chunks for i in range(table.num_columns)):
        return table.take(pa.array(rows, pa.int64()))
    bounds = np.cumsum([0] + [len(c) for c in col.chunks])
    cuts = np.searchsorted(rows, bounds)
    parts = [(i, pa.array(rows[cuts[i]:cuts[i + 1]] - bounds[i], pa.int64()))
             for i in range(col.num_chunks) if cuts[i + 1] > cuts[i]]
    arrays = [pa.chunked_array([table.column(j).chunk(i).take(idx) for i, idx in parts], table.schema.field(j).type)
              for j in range(table.num_columns)]
    return pa.Table.from_arrays(arrays, schema=table.schema)


def rows_with_values(tidx: np.ndarray, sidx: np.ndarray) -> np.ndarray:
    """The positions in sorted ``tidx`` of the values that sorted ``sidx`` holds: two
    ``searchsorted`` of the (few) source values into the stored ones, then their runs."""
    lo, hi = np.searchsorted(tidx, sidx, "left"), np.searchsorted(tidx, sidx, "right")
    present = hi > lo
    lo, first = np.unique(lo[present], return_index=True)  # equal source values: the same run
    n = hi[present][first] - lo
    if not len(n):
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(lo - np.concatenate([[0], np.cumsum(n)[:-1]]), n)
    return (starts + np.arange(int(n.sum()), dtype=np.int64)).astype(np.int64)
