"""Which missing values of an object string column were ``NaN`` and which ``None``.

Arrow has one null, so a string column keeps its missing values as nulls and its hint records
the most common kind (:mod:`._columns`). A column with ``NaN`` among its missing values also
gets a boolean *NaN-rows companion*: a column named :func:`nan_rows_name` ``(stored)``, true
on the rows whose missing value was ``NaN``, false elsewhere. A column whose missing values are
all ``None``, or that has none, gets nothing (no extra work on the common paths). A companion
is a trailing column of the tables that pass between the layers, row-aligned with its column
through every slice, filter, concatenation and re-encoding; it is never part of a version's
schema.

In a segment a companion is an ordinary Fermion column. A segment holding a string column with
missing values lists its companions under the schema-metadata key :data:`SEGMENT_KEY` (an
empty list when there are none): its string columns without a companion have only ``None``.
Rows of segments without the key (written before companions existed) are "unknown" (null in
an assembled companion), and the hint's kind applies there (docs/format.md, "NaN rows").

Also here: *sparse* integer and boolean columns of a segment, null on the rows that lack the
column (:data:`SPARSE_KEY`, docs/format.md "Sparse columns").
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "SEGMENT_KEY",
    "SPARSE_KEY",
    "apply_nan_rows",
    "is_nan_rows_name",
    "nan_rows_mask",
    "nan_rows_name",
    "segment_kinds",
    "segment_companions",
    "segment_nan_rows",
    "sparse_columns",
    "split_nan_rows",
    "unsparse",
]

_PREFIX = "\x00nan:"
SEGMENT_KEY = b"arcticlite.nan_rows"
"""Schema-metadata key of a Fermion segment: JSON list of the columns that have a companion."""


SPARSE_KEY = b"arcticlite.sparse"
"""Schema-metadata key of a Fermion segment whose integer and boolean columns hold nulls on
the rows that lack the column (a sort merge of staged frames of different columns, dynamic
schema): JSON list of those columns. A plain read shows those rows as a column a segment
lacks is backfilled (0, False); a query sees them as missing values (docs/format.md)."""


def nan_rows_name(stored: str) -> str:
    """Name of the NaN-rows companion of stored column ``stored``."""
    return _PREFIX + stored


def is_nan_rows_name(name: str) -> bool:
    return name.startswith(_PREFIX)


def _base(name: str) -> str:
    return name[len(_PREFIX):]


def _is_textual(typ: pa.DataType) -> bool:
    return (pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_binary(typ)
            or pa.types.is_large_binary(typ) or pa.types.is_null(typ))


def nan_rows_mask(values: np.ndarray, arr: pa.Array | pa.ChunkedArray) -> np.ndarray | None:
    """The companion of an object column ``values`` stored as the text array ``arr``: true
    where the missing value is a float NaN; None when no missing value is NaN (or when they are
    NaT / pd.NA, which the hint describes). Costs nothing for a column without missing values."""
    if not arr.null_count or not _is_textual(arr.type) or values.dtype != object:
        return None
    isna = np.asarray(arr.is_null())
    try:  # None becomes null, NaN a valid double: only these two kinds make a mixed column
        kinds = pa.array(values[isna], from_pandas=False)
    except (pa.ArrowException, TypeError, ValueError):
        return None
    if not (pa.types.is_floating(kinds.type) and kinds.null_count < len(kinds)):
        return None
    mask = np.zeros(len(values), dtype=bool)
    mask[isna] = kinds.is_valid().to_numpy(zero_copy_only=False)
    return mask


def split_nan_rows(table: pa.Table) -> tuple[pa.Table, pa.Table | None]:
    """``table`` without its companions, and the companions (None when it has none)."""
    names = table.column_names
    comp = [n for n in names if is_nan_rows_name(n)]
    if not comp:
        return table, None
    return table.drop_columns(comp), table.select(comp)


def segment_nan_rows(piece: pa.Table, companions: pa.Table | None) -> pa.Table:
    """``piece`` (a segment's rows and columns) with the companions of its columns that hold a
    NaN there, listed in the schema metadata under :data:`SEGMENT_KEY`; unchanged when no
    string column of ``piece`` has a missing value."""
    text = [f.name for f in piece.schema if _is_textual(f.type)]
    if not text or not any(piece.column(n).null_count for n in text):
        return piece
    keep = []
    out = piece
    if companions is not None:
        have = set(text)
        for n, comp in zip(companions.column_names, companions.columns, strict=True):
            # kept where it marks a NaN, or rows of unknown kind
            if _base(n) in have and piece.column(_base(n)).null_count and (comp.null_count or pc.any(comp).as_py()):
                keep.append(n)
                out = out.append_column(n, comp)
    md = dict(piece.schema.metadata or {})
    md[SEGMENT_KEY] = json.dumps([_base(n) for n in keep]).encode()
    return out.replace_schema_metadata(md)


def segment_companions(metadata: dict[bytes, bytes] | None, columns: Iterable[str]) -> list[str]:
    """Companion column names a segment with schema ``metadata`` holds for ``columns``."""
    if not metadata or SEGMENT_KEY not in metadata:
        return []
    listed = set(json.loads(metadata[SEGMENT_KEY]))
    return [nan_rows_name(c) for c in columns if c in listed]


def segment_kinds(table: pa.Table) -> tuple[set[str], set[str]]:
    """(string columns whose missing values are all ``None``, string columns with missing
    values of unknown kind) of a decoded segment ``table``: the first when the segment lists
    its companions (the columns without one), the second for an older segment."""
    text = [f.name for f in table.schema if _is_textual(f.type)]
    if not text:
        return set(), set()
    md = table.schema.metadata
    if md and SEGMENT_KEY in md:
        names = set(table.column_names)
        return {n for n in text if nan_rows_name(n) not in names}, set()
    return set(), {n for n in text if table.column(n).null_count}


def apply_nan_rows(out: np.ndarray, col: pa.ChunkedArray, companion: Any, default_nan: bool) -> np.ndarray:
    """Put ``NaN`` / ``None`` in the null rows of the object array ``out`` (converted from
    ``col``) as ``companion`` says; rows it leaves unknown get the hint's kind."""
    if not col.null_count:
        return out
    nan = np.asarray(pc.fill_null(companion, default_nan))
    nulls = np.asarray(col.is_null())
    if not out.flags.writeable:
        out = out.copy()
    out[nulls & nan] = np.nan
    out[nulls & ~nan] = None
    return out


def sparse_columns(metadata: dict[bytes, bytes] | None) -> list[str]:
    """The columns a segment with schema ``metadata`` lists under ``normalize.SPARSE_KEY``."""
    if not metadata or SPARSE_KEY not in metadata:
        return []
    return list(json.loads(metadata[SPARSE_KEY]))


def unsparse(t: pa.Table, keep_nulls: bool) -> tuple[pa.Table, bool]:
    """Segment table ``t`` with the nulls of its sparse columns backfilled (``keep_nulls``: for
    a query, which sees them as missing values; its output is backfilled at the end), and
    whether it kept any."""
    names = sparse_columns(t.schema.metadata)
    if keep_nulls:
        return t, any(n in t.column_names and t.column(n).null_count for n in names)
    for name in names:
        k = t.schema.get_field_index(name)
        if k >= 0 and t.column(k).null_count:
            typ = t.schema.field(k).type
            t = t.set_column(k, t.schema.field(k), t.column(k).fill_null(pa.scalar(0 if pa.types.is_integer(typ) else False, typ)))
    return t, False
