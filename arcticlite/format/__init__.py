"""Fermion, the columnar segment format (seed 003; byte layout in docs/format.md).

A Fermion file holds one Arrow table: a data area of stripes -> per-column streams -> pages,
then per-column metadata blocks (CMB), schema entries, a name index, the column index table
(CIT) and a fixed 128-byte footer. Reading k of n columns touches O(k) metadata.

Public API
----------
:func:`encode` / :func:`decode`
    Arrow table <-> bytes, as the engine uses them.
:func:`decode_into`
    Columns decoded straight into caller-owned numpy arrays (e.g. one pandas block filled
    from many segments).
:class:`FermionWriter` / :class:`FermionReader`
    Streaming writer (incl. batch mode) and random-access reader (statistics, row ranges,
    predicate pushdown, batches).
:func:`from_parquet` / :func:`to_parquet`
    Conversion both ways.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from arcticlite.format._alloc import (
    PREFAULT_MIN_BYTES,
    empty,
    populate,
    prefault,
    small_pages,
)
from arcticlite.format._enc_gather import search_arithmetic
from arcticlite.format._enc_policy import DISTINCT_FILES
from arcticlite.format._encodings import ENCODING_NAMES
from arcticlite.format._intervals import Intervals, intersect_intervals, merge_intervals
from arcticlite.format._kernels import factorize_words, native_enabled
from arcticlite.format._layout import DEFAULT_PAGE_SIZE, VERSION_MAJOR, VERSION_MINOR
from arcticlite.format._objects import FAST as OBJECTS_BY_POINTER
from arcticlite.format._objects import Labels, object_array
from arcticlite.format._objects import words as object_words
from arcticlite.format._parquet import from_parquet, to_parquet
from arcticlite.format._range import RangeReader
from arcticlite.format._reader import FermionReader
from arcticlite.format._writer import FermionWriter

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "DISTINCT_FILES",
    "ENCODING_NAMES",
    "FermionReader",
    "FermionWriter",
    "Intervals",
    "Labels",
    "OBJECTS_BY_POINTER",
    "PREFAULT_MIN_BYTES",
    "RangeReader",
    "VERSION_MAJOR",
    "VERSION_MINOR",
    "decode",
    "decode_into",
    "empty",
    "encode",
    "factorize_words",
    "from_parquet",
    "intersect_intervals",
    "merge_intervals",
    "native_enabled",
    "object_array",
    "object_words",
    "populate",
    "prefault",
    "search_arithmetic",
    "small_pages",
    "to_parquet",
]


def encode(table: pa.Table, *, schema: pa.Schema | None = None, **options: Any) -> bytes:
    """Encode an Arrow table (or record batch) as a Fermion file.

    Parameters
    ----------
    table
        The data; every type listed in docs/format.md, nulls anywhere, any chunking.
    schema
        The file's schema, if not the table's: a string or binary column may then arrive
        dictionary-encoded and is stored as plain values (the same file as for the values).
    **options
        :class:`FermionWriter` options: ``page_size`` (default 512 KiB of raw values),
        ``stripe_rows``, ``parallel``, ``optimize_for`` (``"size"`` or ``"read"``),
        ``bloom_min_distinct`` (Bloom filters of the integer / string columns with at least that
        many distinct values; format 1.1, docs/format.md §9), ``bloom_max_fraction`` (the
        filters' share of the file, at most; default 0.03).

    Returns
    -------
    bytes
        The complete file.
    """
    w = FermionWriter(None, table.schema if schema is None else schema, **options)
    w.write(table)
    out = w.close()
    assert out is not None
    return out


def decode(source: Any, columns: list[str] | None = None, filter: Any = None, *,
           row_range: tuple[int, int] | None = None, with_batch_ids: bool = False,
           **options: Any) -> pa.Table:
    """Decode a Fermion file (bytes, memoryview, path, file object or RangeReader).

    Parameters
    ----------
    source
        The file.
    columns
        Names (or indices) to read, in order; None reads all.
    filter
        ``(column, op, value)`` tuples ANDed; ops ``== != < <= > >= in``, ``not in``,
        ``("col", "between", (lo, hi))``, ``("col", "isnull", None)`` / ``"notnull"`` and
        ``("", "or", [[terms...], [terms...]])``. Pages that cannot match (by min/max, null
        counts or Bloom filters) are skipped unread.
    row_range
        ``(start, stop)`` rows to read.
    with_batch_ids
        Add ``batch_id`` / ``index_in_batch`` columns (batch-mode files).
    **options
        :class:`FermionReader` options.

    Raises
    ------
    CorruptDataError
        Any corruption (a subclass says which), never another exception type.
    SchemaException
        A requested column does not exist.
    """
    reader = FermionReader(source, **options)
    try:
        return reader.read(columns, filter=filter, row_range=row_range, with_batch_ids=with_batch_ids)
    finally:
        reader.close()


def decode_into(source: Any, columns: list[str | int], out: list[Any], row_range: tuple[int, int] | None = None,
                **options: Any) -> list[Any]:
    """Decode columns of a Fermion file straight into caller-owned numpy arrays.

    See :meth:`FermionReader.read_into` for what ``out`` must hold per column kind.

    Parameters
    ----------
    source
        The file (as for :func:`decode`).
    columns
        Names or indices.
    out
        One 1-D, C-contiguous, writable numpy array per column, of the row range's length.
    row_range
        ``(start, stop)`` rows (clipped to the file); None reads every row.
    **options
        :class:`FermionReader` options.

    Returns
    -------
    list
        Per column None (every row valid) or a bool validity mask (True = valid).
    """
    reader = FermionReader(source, **options)
    try:
        return reader.read_into(columns, out, row_range=row_range)
    finally:
        reader.close()
