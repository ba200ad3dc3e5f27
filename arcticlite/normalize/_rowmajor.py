"""Row-major numeric blocks, transposed segment by segment by the writer.

A frame built from a 2-D ndarray (``pd.DataFrame(np.random.random((n, k)))``, the way many
users build one) keeps the array row-major: each column is a strided view that Arrow cannot
wrap. Transposing the whole block first doubles the memory a write touches (an 800 MB frame
faults in 800 MB of fresh pages, ~0.4 s of system time on the benchmark VM) before the first
segment is encoded. Instead, :func:`defer_row_major` leaves such blocks where they are: the
normalized table holds a *placeholder* for each of their columns (the right type and length,
all null, no data of its own, its field marked with :data:`ROW_MAJOR`), and the segment
writer fills each segment's slice of those columns with :func:`fill_rows` from the block,
in a buffer each writer thread reuses. Only the writer (``Library.write``) asks for this;
every other consumer gets ordinary columns.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from arcticlite.normalize._columns import ROW_MAJOR

__all__ = ["ROW_MAJOR", "RowMajorBlock", "defer_row_major", "fill_rows", "has_placeholders", "row_major_numeric"]

_KINDS = frozenset("iu")
#: Smaller blocks are transposed at once: a segment or two gain nothing from deferring.
MIN_VALUES = 1 << 20


@dataclass(frozen=True, slots=True)
class RowMajorBlock:
    """One row-major block of a frame: ``values`` is ``(k, n)`` (a transposed view of the
    user's C-ordered ``(n, k)`` array), ``names`` the stored names of its ``k`` columns."""

    values: np.ndarray
    names: tuple[str, ...]


def row_major_numeric(values: Any) -> bool:
    """Whether a pandas block's ``values`` (``(k, n)``) are a row-major view of numeric data
    (int, uint, float32/64) holding two columns or more: a strided view per column, which
    Arrow would gather column by column."""
    return (
        isinstance(values, np.ndarray)
        and values.ndim == 2
        and values.shape[0] >= 2
        and not values.flags.c_contiguous
        and (values.dtype.kind in _KINDS or values.dtype in (np.float32, np.float64))
    )


def _eligible(values: Any, n: int) -> bool:
    return (
        row_major_numeric(values)
        and n * values.shape[0] >= MIN_VALUES
        and values.T.flags.c_contiguous  # one dense (n, k) array: rows of a segment are contiguous
    )


def defer_row_major(df: pd.DataFrame, names: list[str]) -> tuple[dict[int, pa.Array], list[RowMajorBlock]]:
    """Placeholders (by column position) for the columns of ``df``'s row-major numeric blocks,
    and the blocks themselves; ``({}, [])`` when it has none worth deferring."""
    out: dict[int, pa.Array] = {}
    blocks: list[RowMajorBlock] = []
    n = len(df)
    for blk in getattr(getattr(df, "_mgr", None), "blocks", ()):  # private pandas API: optional
        values = getattr(blk, "values", None)
        if not isinstance(values, np.ndarray) or not _eligible(values, n):
            continue
        positions = [int(p) for p in blk.mgr_locs.as_array]
        typ = pa.from_numpy_dtype(values.dtype)
        nulls = pa.py_buffer(np.zeros((n + 7) // 8, dtype=np.uint8))
        data = pa.py_buffer(values.T)  # n * k items: at least the n a placeholder needs
        for pos in positions:
            out[pos] = pa.Array.from_buffers(typ, n, [nulls, data], null_count=n)
        blocks.append(RowMajorBlock(values=values, names=tuple(names[p] for p in positions)))
    return out, blocks


def has_placeholders(schema: pa.Schema) -> bool:
    """Whether ``schema`` marks any column as a row-major placeholder."""
    return any(f.metadata and ROW_MAJOR in f.metadata for f in schema)


_local = threading.local()
#: A transposed tile reads and writes about this many bytes: rows of the block's columns that
#: stay in the core's cache while they are scattered (10 float64 columns: 4,096 rows; 127: 512).
_TILE_BYTES = 512 << 10
_TILE_ROWS = (64, 4096)
#: Buffers up to this size stay with their thread for the next segment (a 100,000-row segment of
#: 40 float64 columns); larger ones are allocated per segment, so that no thread keeps one.
_KEEP_BYTES = 32 << 20


def _buffer(shape: tuple[int, int], dtype: np.dtype) -> np.ndarray:
    """A ``shape`` array of ``dtype`` owned by this thread, reused from one segment to the next
    (its previous contents are dead once the segment holding them is encoded)."""
    need = shape[0] * shape[1] * dtype.itemsize
    if need > _KEEP_BYTES:  # a very wide segment: not kept by the thread after the write
        return np.empty(shape, dtype)
    buf = getattr(_local, "buf", None)
    if buf is None or buf.nbytes < need:
        buf = _local.buf = np.empty(need, dtype=np.uint8)
    return buf[:need].view(dtype).reshape(shape)


def fill_rows(piece: pa.Table, blocks: list[RowMajorBlock], r0: int) -> pa.Table:
    """``piece`` (rows ``r0 ..`` of a normalized table) with its placeholder columns filled
    from ``blocks``. The filled columns live in this thread's buffer: encode the result
    before the thread fills another piece."""
    where = {name: (b, j) for b, blk in enumerate(blocks) for j, name in enumerate(blk.names)}
    wanted: dict[int, list[tuple[int, int]]] = {}  # block -> [(position in piece, row of the block)]
    for i, field in enumerate(piece.schema):
        if field.metadata and ROW_MAJOR in field.metadata:
            b, j = where[field.name]
            wanted.setdefault(b, []).append((i, j))
    if not wanted:
        return piece
    n = piece.num_rows
    dtypes = {blocks[b].values.dtype for b in wanted}
    shared = len(dtypes) == 1  # one buffer holds every block's rows
    buf = _buffer((sum(map(len, wanted.values())), n), dtypes.pop()) if shared else None
    fields, arrays = list(piece.schema), list(piece.columns)
    row = 0
    for b, cols in wanted.items():
        values = blocks[b].values
        js = [j for _, j in cols]
        run = js == list(range(js[0], js[0] + len(js)))  # a column slice: a view, not a gather
        src = values[js[0]:js[0] + len(js), r0:r0 + n] if run else values[js, r0:r0 + n]
        dst = buf[row:row + len(js)] if buf is not None else np.empty((len(js), n), values.dtype)
        tile = min(max(_TILE_BYTES // (len(js) * values.dtype.itemsize), _TILE_ROWS[0]), _TILE_ROWS[1])
        for t in range(0, n, tile):  # the (n, k) rows of this segment, transposed in cache-sized tiles
            np.copyto(dst[:, t:t + tile], src[:, t:t + tile])
        row += len(js)
        for k, (i, _) in enumerate(cols):
            f = fields[i]
            meta = {key: v for key, v in f.metadata.items() if key != ROW_MAJOR} or None
            fields[i] = pa.field(f.name, f.type, f.nullable, metadata=meta)
            arrays[i] = pa.chunked_array([pa.array(dst[k])], type=f.type)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=piece.schema.metadata))
