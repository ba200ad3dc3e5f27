"""The data path: slice a table into row x column tiles, encode them as Fermion segments,
write them under fresh names; and back: fetch the segments a read needs and assemble them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from arcticlite import format as fermion
from arcticlite.index._tindex import ROW_DTYPE, hex_digests, new_digest
from arcticlite.storage import KVStore
from arcticlite.version._keys import LibraryKeys

_POOL = ThreadPoolExecutor(max_workers=max(4, (os.cpu_count() or 2) * 2), thread_name_prefix="arcticlite-seg")


@dataclass(frozen=True, slots=True)
class Layout:
    """How a table is tiled: index columns first, then data columns sliced."""

    n_index: int
    rows_per_segment: int
    columns_per_segment: int  # 0 = one column slice (dynamic schema)


def index_values(table: pa.Table, n_index: int, is_datetime: bool, start_row: int) -> np.ndarray:
    """int64 values used for min/max pruning: ns for a datetime index, else row numbers."""
    if is_datetime and n_index:
        col = table.column(0)
        arr = col.cast(pa.int64()) if col.num_chunks else pa.array([], pa.int64())
        vals = arr.to_numpy() if isinstance(arr, pa.Array) else arr.combine_chunks().to_numpy(zero_copy_only=False)
        return np.asarray(vals, dtype=np.int64)
    return np.arange(start_row, start_row + table.num_rows, dtype=np.int64)


def col_slices(n_data: int, layout: Layout) -> list[tuple[int, int]]:
    if n_data == 0 or layout.columns_per_segment <= 0:
        return [(0, n_data)]
    step = layout.columns_per_segment
    return [(c, min(c + step, n_data)) for c in range(0, n_data, step)]


def write_segments(
    store: KVStore,
    keys: LibraryKeys,
    sym: str,
    table: pa.Table,
    layout: Layout,
    *,
    start_row: int,
    is_datetime: bool,
) -> np.ndarray:
    """Encode and write ``table`` as segments; return their leaf rows (rows offset by
    ``start_row``). Nothing refers to the segments until a version commits them."""
    n = table.num_rows
    if n == 0:
        return np.zeros(0, dtype=ROW_DTYPE)
    idx = index_values(table, layout.n_index, is_datetime, start_row)
    names = table.column_names
    n_data = len(names) - layout.n_index
    cslices = col_slices(n_data, layout)
    tasks = []
    for r0 in range(0, n, layout.rows_per_segment):
        r1 = min(r0 + layout.rows_per_segment, n)
        for c0, c1 in cslices:
            cols = names[: layout.n_index] + names[layout.n_index + c0 : layout.n_index + c1]
            tasks.append((r0, r1, c0, c1, cols))

    def encode(task: tuple[int, int, int, int, list[str]]) -> tuple[str, bytes]:
        r0, r1, _c0, _c1, cols = task
        body = fermion.encode(table.select(cols).slice(r0, r1 - r0))
        return new_digest(body), body

    encoded = list(_POOL.map(encode, tasks)) if len(tasks) > 1 else [encode(tasks[0])]
    store.write_many({keys.tdata(sym, d): body for d, body in encoded})
    rows = np.zeros(len(tasks), dtype=ROW_DTYPE)
    for i, ((r0, r1, c0, c1, _), (d, body)) in enumerate(zip(tasks, encoded, strict=True)):
        seg = idx[r0:r1]
        rows[i]["min_index"] = seg.min()
        rows[i]["max_index"] = seg.max()
        rows[i]["start_row"] = start_row + r0
        rows[i]["end_row"] = start_row + r1
        rows[i]["start_col"] = c0
        rows[i]["end_col"] = c1
        rows[i]["digest"] = np.frombuffer(bytes.fromhex(d), dtype=np.uint8)
        rows[i]["seg_rows"] = r1 - r0
        rows[i]["nbytes"] = len(body)
    return rows


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
) -> pa.Table:
    """Fetch and assemble the rows ``row_range`` (absolute, half-open) of the columns
    ``wanted`` (storage names, storage order) from ``leaves``."""
    index_names = schema.names[:n_index]
    data_names = schema.names[n_index:]
    pos = {name: i for i, name in enumerate(data_names)}
    wanted_pos = sorted(pos[w] for w in wanted if w in pos)
    out_schema = pa.schema([schema.field(i) for i in range(n_index)] + [schema.field(n_index + p) for p in wanted_pos])
    if len(leaves) == 0:
        return out_schema.empty_table()
    if wanted_pos:
        need = np.zeros(len(leaves), dtype=bool)
        for p in wanted_pos:
            need |= (leaves["start_col"] <= p) & (leaves["end_col"] > p)
        # a row group whose column slices hold none of the wanted columns still needs its rows
    else:
        need = leaves["start_col"] == leaves["start_col"].min()
    leaves = leaves[need]
    digests = hex_digests(leaves)
    bufs = store.read_many([keys.tdata(sym, d) for d in digests])

    def decode(i: int) -> pa.Table:
        leaf = leaves[i]
        c0, c1 = int(leaf["start_col"]), int(leaf["end_col"])
        cols = index_names + [data_names[p] for p in wanted_pos if c0 <= p < c1]
        start, stop = int(leaf["start_row"]), int(leaf["end_row"])
        lo, hi = 0, stop - start
        if row_range is not None:
            lo = max(0, row_range[0] - start)
            hi = min(stop - start, row_range[1] - start)
        off = int(leaf["seg_offset"])
        if dynamic:  # segments hold the columns that existed when they were written
            t = fermion.decode(bufs[i])
            t = t.select([c for c in cols if c in t.column_names])
        else:
            t = fermion.decode(bufs[i], columns=cols)
        return t.slice(off + lo, hi - lo)

    tables = list(_POOL.map(decode, range(len(leaves)))) if len(leaves) > 1 else [decode(0)]
    # group column slices of the same rows side by side, then stack row groups
    groups: dict[int, list[pa.Table]] = {}
    for i in range(len(leaves)):
        groups.setdefault(int(leaves[i]["start_row"]), []).append(tables[i])
    parts = []
    for start in sorted(groups):
        ts = groups[start]
        cols: dict[str, pa.ChunkedArray] = {}
        nrows = ts[0].num_rows
        for t in ts:
            for name in t.column_names:
                cols.setdefault(name, t.column(name))
        arrays = []
        for f in out_schema:
            col = cols.get(f.name)
            arrays.append(_fill(f.type, nrows) if col is None else _cast(col, f.type))
        parts.append(pa.Table.from_arrays(arrays, schema=out_schema))
    if len(parts) == 1:
        return parts[0]
    return pa.concat_tables(parts)


def _cast(col: pa.ChunkedArray, typ: pa.DataType) -> pa.ChunkedArray:
    if col.type == typ:
        return col
    return col.cast(typ)


def _fill(typ: pa.DataType, n: int) -> pa.Array:
    """Backfill of a column missing from a segment (dynamic schema): 0 for ints, NaN for
    floats, null otherwise -- as ArcticDB does."""
    if pa.types.is_integer(typ):
        return pa.array(np.zeros(n, dtype=typ.to_pandas_dtype()), type=typ)
    if pa.types.is_floating(typ):
        return pa.array(np.full(n, np.nan, dtype=typ.to_pandas_dtype()), type=typ)
    if pa.types.is_boolean(typ):
        return pa.array(np.zeros(n, dtype=bool), type=typ)
    return pa.nulls(n, type=typ)
