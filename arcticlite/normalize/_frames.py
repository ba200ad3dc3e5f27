"""Normalization: user data <-> (Arrow table, :class:`NormMeta`).

:func:`normalize` turns a pandas ``DataFrame`` / ``Series``, a 1-D or 2-D ``numpy.ndarray``, a
``pyarrow.Table`` / ``RecordBatch`` or a polars ``DataFrame`` into an Arrow table whose index
column(s) come first, followed by the data columns under unique string names, plus the
metadata needed to give the user back exactly what they wrote. :func:`denormalize` does the
reverse, for any column subset and row slice of that table, as pandas, pyarrow or polars.

Behaviour follows ArcticDB's round trips, and deliberately does better where ArcticDB loses
information (tz-aware data columns, nullable dtypes, timedelta, non-ns datetimes, nested lists,
categoricals); see ``docs/compatibility.md``.

Everything is vectorised: the only Python loops are over columns. Numeric columns are wrapped
without a copy in both directions where pyarrow allows.
"""

from __future__ import annotations

import enum
import functools
import json
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from arcticlite.exceptions import (
    ArcticDbNotYetImplemented,
    ArcticUnsupportedDataTypeException,
    MissingDependencyError,
    UserInputException,
)
from arcticlite.format import small_pages
from arcticlite.normalize._columns import (
    DICTIONARY_VALUES,
    ROW_MAJOR,
    arrow_to_pandas,
    few_strings_as_dictionary,
    pandas_to_arrow,
    tz_library,
    tz_object,
)
from arcticlite.normalize._meta import FORMAT_VERSION, NormMeta
from arcticlite.normalize._nanrows import (
    apply_nan_rows,
    is_nan_rows_name,
    nan_rows_mask,
    nan_rows_name,
    split_nan_rows,
)
from arcticlite.normalize._rowmajor import RowMajorBlock, defer_row_major, row_major_numeric
from arcticlite.normalize._schema import common_meta, common_schema, sortedness

__all__ = [
    "FORMAT_VERSION",
    "NormMeta",
    "OutputFormat",
    "common_meta",
    "common_schema",
    "denormalize",
    "normalize",
    "sortedness",
]

_PICKLE = "use write_pickle to store arbitrary Python objects"
_INDEX_RANGE = (
    "The datetime index {name!r} has values outside 1677-09-21..2262-04-11: an index is "
    "stored in nanoseconds. Store such dates in a column, or use another index"
)


class OutputFormat(str, enum.Enum):  # noqa: UP042 - as ArcticDB: str() of a member is "OutputFormat.PYARROW"
    """What :func:`denormalize` (and ``Library.read``) returns.

    Strings are accepted case-insensitively: ``OutputFormat("PyArrow") is OutputFormat.PYARROW``.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0]}))
    >>> type(lib.read("S", output_format=adb.OutputFormat.PYARROW).data).__name__
    'Table'
    >>> adb.OutputFormat("PyArrow") is adb.OutputFormat.PYARROW
    True
    """

    PANDAS = "PANDAS"
    PYARROW = "PYARROW"
    POLARS = "POLARS"

    @classmethod
    def _missing_(cls, value: object) -> OutputFormat | None:
        if isinstance(value, str):
            up = value.upper()
            for member in cls:
                if member.value == up:
                    return member
        return None


# ---------------------------------------------------------------------------------- names
def _index_stored_names(names: list[Any]) -> list[str]:
    """Stored names of the index levels: the user's name when it is a str, else ArcticDB's
    Arrow names (``__index__`` for one level, ``__index_level_<i>__`` for a MultiIndex)."""
    out: list[str] = []
    for i, name in enumerate(names):
        if isinstance(name, str) and name:
            cand = name
        else:
            cand = "__index__" if len(names) == 1 else f"__index_level_{i}__"
        base, k = cand, 1
        while cand in out:
            cand, k = f"{base}__{k}", k + 1
        out.append(cand)
    return out


def _data_stored_names(
    labels: list[Any], taken: list[str], *, none_name: str = "None"
) -> list[str]:
    """Unique stored names for data columns.

    A label keeps its name when it is a str used by one column only and not by the index;
    the rest get ``str(label)``, suffixed ``__1``, ``__2``, ... until unique (deterministic).
    """
    used = set(taken)
    counts: dict[str, int] = {}
    for x in labels:
        if isinstance(x, str):
            counts[x] = counts.get(x, 0) + 1
    out: list[str | None] = [None] * len(labels)
    for i, x in enumerate(labels):
        if isinstance(x, str) and counts[x] == 1 and x not in used:
            out[i] = x
            used.add(x)
    for i, x in enumerate(labels):
        if out[i] is not None:
            continue
        base = x if isinstance(x, str) else (none_name if x is None else str(x))
        cand, k = base, 1
        while cand in used:
            cand, k = f"{base}__{k}", k + 1
        out[i] = cand
        used.add(cand)
    return [x for x in out if x is not None]


# ---------------------------------------------------------------------------------- index
_NAT = np.iinfo(np.int64).min  # NaT's int64 value


def _datetime_to_arrow(idx: pd.DatetimeIndex) -> tuple[pa.Array, dict[str, Any]]:
    """A DatetimeIndex as naive ``timestamp('ns')`` of UTC instants, plus the NormMeta fields
    of its tz and unit."""
    unit = idx.unit
    tz = None if idx.tz is None else pa.lib.tzinfo_to_string(idx.tz)
    lib = "" if idx.tz is None else tz_library(idx.tz, unit)
    try:
        ns = idx if unit == "ns" else idx.as_unit("ns")
    except (OverflowError, ValueError) as exc:  # pandas' OutOfBoundsDatetime is a ValueError
        raise UserInputException(_INDEX_RANGE.format(name=idx.name)) from exc
    fields = {"tz": tz, "tz_library": lib, "index_unit": unit, "index_hints": ("dt",)}
    ints = ns.asi8
    if len(ints) and ints.min() != _NAT and ints.flags.c_contiguous:
        # no NaT: the user's int64 nanoseconds as the buffer, without pyarrow's NaT scan
        return pa.Array.from_buffers(pa.timestamp("ns"), len(ints), [None, pa.py_buffer(ints)]), fields
    return pa.array(ints.view("M8[ns]")), fields


def _index_to_arrow(
    idx: pd.Index, nrows: int
) -> tuple[list[pa.Array | pa.ChunkedArray], dict[str, Any]]:
    """Index columns and the NormMeta fields describing the index."""
    if isinstance(idx, pd.RangeIndex):
        if nrows == 0:  # ArcticDB writes an empty frame with an empty DatetimeIndex
            return [pa.array(np.empty(0, "M8[ns]"))], {
                "index_kind": "datetime",
                "index_names": (idx.name,),
                "index_hints": ("dt",),
                "written_empty": True,
            }
        return [], {
            "index_kind": "range",
            "index_names": (idx.name,),
            "range_start": int(idx.start),
            "range_step": int(idx.step),
        }
    if isinstance(idx, pd.DatetimeIndex):
        arr, dt_fields = _datetime_to_arrow(idx)
        if nrows == 0:
            dt_fields["written_empty"] = True
        return [arr], {"index_kind": "datetime", "index_names": (idx.name,), **dt_fields}
    if isinstance(idx, pd.MultiIndex):
        arrays, hints = [], []
        fields: dict[str, Any] = {"index_kind": "multi", "index_names": tuple(idx.names)}
        for i in range(idx.nlevels):
            level = idx.get_level_values(i)
            if i == 0 and isinstance(level, pd.DatetimeIndex):
                arr, dt_fields = _datetime_to_arrow(level)
                dt_fields.pop("index_hints")
                fields.update(dt_fields)
                arrays.append(arr)
                hints.append("dt")
            else:
                arr2, hint = _level_to_arrow(level)
                arrays.append(arr2)
                hints.append(hint)
        fields["index_hints"] = tuple(hints)
        return arrays, fields
    arr2, hint = _level_to_arrow(idx)
    return [arr2], {"index_kind": "other", "index_names": (idx.name,), "index_hints": (hint,)}


def _level_to_arrow(level: pd.Index) -> tuple[pa.Array | pa.ChunkedArray, str]:
    if isinstance(level.dtype, pd.PeriodDtype | pd.IntervalDtype):
        raise ArcticDbNotYetImplemented(
            f"{type(level).__name__} is not supported as an index; convert it "
            f"(e.g. .to_timestamp()) or {_PICKLE}"
        )
    return pandas_to_arrow(level, label=f"index {level.name!r}")


# ---------------------------------------------------------------------------------- normalize
def normalize(data: Any, *, index_column: str | bool | None = None,
              dictionary_strings: bool = False,
              row_major: list[RowMajorBlock] | None = None) -> tuple[pa.Table, NormMeta]:
    """Convert user data to an Arrow table plus the metadata to restore it.

    Parameters
    ----------
    data : pandas.DataFrame, pandas.Series, numpy.ndarray, pyarrow.Table, pyarrow.RecordBatch or polars.DataFrame
        What the user writes. ndarrays must be 1-D or 2-D.
    index_column : str or bool, optional
        Arrow / polars input only: the column to use as the index (``True`` = the first
        column). A timestamp column gives a datetime index. Without it the data has a
        row-count index (``index_kind="none"``).
    dictionary_strings : bool
        pandas data only: long object columns of few distinct ``str`` come back
        dictionary-encoded, their field marked with :data:`DICTIONARY_VALUES` (what they
        stand for: :func:`value_schema`). For the segment writer, which stores them as plain
        strings; other consumers leave it off.
    row_major : list, optional
        pandas frames only, for the segment writer: the columns of large row-major numeric
        blocks (a frame from a 2-D ndarray) are not transposed but left as placeholders
        marked with :data:`ROW_MAJOR`, and their blocks are appended to this list; the
        writer fills each segment from them (:func:`fill_rows`).

    Returns
    -------
    (pyarrow.Table, NormMeta)
        Index column(s) first, then the data columns under unique str names. A datetime
        index is stored as naive ``timestamp('ns')`` holding UTC instants; its tz and unit are
        in the metadata. A RangeIndex has no column (start/step are in the metadata).

    Raises
    ------
    ArcticUnsupportedDataTypeException
        ``data`` is not one of the supported types (use ``write_pickle``).
    ArcticDbNotYetImplemented
        A column or index cannot be stored as a column (names the column; ``write_pickle``
        stores anything).
    UserInputException
        ``index_column`` is given for pandas / numpy data, or names no column.

    Notes
    -----
    Cost: numeric columns are wrapped without copying (bool is bit-packed, so copied); object
    columns are converted in C by pyarrow.
    """
    if isinstance(data, pd.DataFrame | pd.Series | np.ndarray) and index_column not in (
        None,
        False,
    ):
        raise UserInputException(
            "index_column applies only to Arrow and polars data; pandas data uses its own index"
        )
    if isinstance(data, pd.DataFrame):
        return _normalize_frame(data, dictionary_strings, row_major)
    if isinstance(data, pd.Series):
        return _normalize_series(data, dictionary_strings)
    if isinstance(data, np.ndarray):
        return _normalize_ndarray(data)
    if isinstance(data, pa.RecordBatch):
        return _normalize_arrow(pa.Table.from_batches([data]), "arrow", index_column)
    if isinstance(data, pa.Table):
        return _normalize_arrow(data, "arrow", index_column)
    if type(data).__module__.split(".")[0] == "polars" and type(data).__name__ == "DataFrame":
        return _normalize_arrow(_polars_to_arrow(data), "polars", index_column)
    raise ArcticUnsupportedDataTypeException(
        f"Data of type {type(data).__name__} cannot be normalized: write() takes a pandas "
        f"DataFrame or Series, a numpy ndarray, a pyarrow Table or a polars DataFrame; {_PICKLE}"
    )


def _table(
    index_arrays: list[Any], index_names: list[str], arrays: list[Any], names: list[str],
    carried: frozenset[int] = frozenset(), deferred: frozenset[int] = frozenset(),
) -> pa.Table:
    """The table of the index and data arrays; data arrays at the positions ``carried`` are
    dictionary-encoded strings, marked with :data:`DICTIONARY_VALUES`, those at ``deferred``
    row-major placeholders, marked with :data:`ROW_MAJOR`."""
    cols = [
        a if isinstance(a, pa.ChunkedArray) else pa.chunked_array([a], type=a.type)
        for a in [*index_arrays, *arrays]
    ]
    if not carried and not deferred:
        return pa.Table.from_arrays(cols, names=[*index_names, *names])
    marks = {**dict.fromkeys(carried, {DICTIONARY_VALUES: b"1"}), **dict.fromkeys(deferred, {ROW_MAJOR: b"1"})}
    fields = [pa.field(name, c.type, metadata=marks.get(i - len(index_arrays)))
              for i, (name, c) in enumerate(zip([*index_names, *names], cols, strict=True))]
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))


def _column_to_arrow(col: pd.Series, label: Any, dictionary_strings: bool) -> tuple[Any, str, bool]:
    """(array, hint, whether it is carried dictionary-encoded) of one data column."""
    if dictionary_strings and col.dtype == object:
        enc = few_strings_as_dictionary(col.to_numpy(copy=False))
        if enc is not None:
            return enc, "", True
    arr, hint = pandas_to_arrow(col, label)
    return arr, hint, False


def _columns_dtype(columns: pd.Index) -> str:
    """dtype of ``DataFrame.columns`` as a string ``pandas_dtype`` parses back (tz included)."""
    dtype = columns.dtype
    if isinstance(dtype, np.dtype | pd.DatetimeTZDtype | pd.StringDtype):  # pandas 3 labels are "str"
        return str(dtype)
    return "object"


_TRANSPOSE_ROWS = 4096
_TRANSPOSE_COLS = 256


def _empty_small_pages(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """``np.empty`` without numpy's transparent-huge-page advice (see
    :func:`arcticlite.format.small_pages`): a transposed copy lives only until its segments
    are encoded."""
    with small_pages():
        return np.empty(shape, dtype)


def _dense_numeric_columns(df: pd.DataFrame, skip: Any = ()) -> dict[int, np.ndarray]:
    """Contiguous copies of the columns of row-major numeric blocks, by column position.

    A frame built from a 2-D ndarray keeps it row-major, so each column is a strided view and
    Arrow must gather it; gathering column by column reads the whole block once per column.
    A tiled transpose reads it once. Other frames return ``{}``; blocks holding a column
    position in ``skip`` (deferred to the writer) are left out.
    """
    out: dict[int, np.ndarray] = {}
    blocks = getattr(getattr(df, "_mgr", None), "blocks", ())  # private pandas API: optional
    for blk in blocks:
        values = getattr(blk, "values", None)
        if not row_major_numeric(values) or int(blk.mgr_locs.as_array[0]) in skip:
            continue
        assert isinstance(values, np.ndarray)
        k, n = values.shape
        dense = _empty_small_pages((k, n), values.dtype)
        for c in range(0, k, _TRANSPOSE_COLS):  # tiles of 4096 rows x 256 columns
            for r in range(0, n, _TRANSPOSE_ROWS):
                tile = (slice(c, c + _TRANSPOSE_COLS), slice(r, r + _TRANSPOSE_ROWS))
                dense[tile] = values[tile]
        for j, pos in enumerate(blk.mgr_locs.as_array):
            out[int(pos)] = dense[j]
    return out


def _normalize_frame(df: pd.DataFrame, dictionary_strings: bool = False,
                     row_major: list[RowMajorBlock] | None = None) -> tuple[pa.Table, NormMeta]:
    if isinstance(df.columns, pd.MultiIndex):
        raise ArcticDbNotYetImplemented(f"MultiIndex column are not supported yet; {_PICKLE}")
    labels = list(df.columns)
    index_arrays, ifields = _index_to_arrow(df.index, len(df))
    index_cols = _index_stored_names(list(ifields["index_names"])) if index_arrays else []
    names = _data_stored_names(labels, index_cols)
    deferred: dict[int, pa.Array] = {}
    if row_major is not None:
        deferred, blocks = defer_row_major(df, names)
        row_major.extend(blocks)
    dense = _dense_numeric_columns(df, skip=deferred)
    arrays, hints, carried = [], [], set()
    nan_rows: dict[str, np.ndarray] = {}
    for pos, (label, col) in enumerate(df.items()):
        if pos in deferred:
            arr, hint = deferred[pos], ""
        elif pos in dense:
            arr, hint = pa.array(dense[pos]), ""
        else:
            arr, hint, dictionary = _column_to_arrow(col, label, dictionary_strings)
            if dictionary:
                carried.add(pos)
            elif arr.null_count and col.dtype == object:
                mask = nan_rows_mask(col.to_numpy(), arr)
                if mask is not None:
                    nan_rows[names[pos]] = mask
        arrays.append(arr)
        hints.append(hint)
    meta = NormMeta(
        kind="dataframe",
        index_columns=tuple(index_cols),
        columns=tuple(names),
        user_columns=tuple(labels),
        column_hints=tuple(hints),
        columns_name=df.columns.name,
        columns_dtype=_columns_dtype(df.columns),
        **ifields,
    )
    table = _table(index_arrays, index_cols, arrays, names, frozenset(carried), frozenset(deferred))
    return _with_nan_rows(table, nan_rows), meta


def _with_nan_rows(table: pa.Table, nan_rows: dict[str, np.ndarray]) -> pa.Table:
    """``table`` with the NaN-rows companions of its mixed string columns (:mod:`._nanrows`)."""
    for stored, mask in nan_rows.items():
        table = table.append_column(nan_rows_name(stored), pa.array(mask, pa.bool_()))
    return table


def _normalize_series(s: pd.Series, dictionary_strings: bool = False) -> tuple[pa.Table, NormMeta]:
    index_arrays, ifields = _index_to_arrow(s.index, len(s))
    index_cols = _index_stored_names(list(ifields["index_names"])) if index_arrays else []
    names = _data_stored_names([s.name], index_cols, none_name="0")
    arr, hint, dictionary = _column_to_arrow(s, s.name, dictionary_strings)
    mask = nan_rows_mask(s.to_numpy(), arr) if not dictionary and arr.null_count and s.dtype == object else None
    meta = NormMeta(
        kind="series",
        index_columns=tuple(index_cols),
        columns=tuple(names),
        user_columns=(s.name,),
        column_hints=(hint,),
        **ifields,
    )
    table = _table(index_arrays, index_cols, [arr], names, frozenset({0} if dictionary else ()))
    return _with_nan_rows(table, {names[0]: mask} if mask is not None else {}), meta


def _normalize_ndarray(a: np.ndarray) -> tuple[pa.Table, NormMeta]:
    if a.ndim not in (1, 2):
        raise ArcticDbNotYetImplemented(
            f"Only 1-D and 2-D ndarrays can be written as columns (got {a.ndim}-D); {_PICKLE}"
        )
    cols = [a] if a.ndim == 1 else [a[:, j] for j in range(a.shape[1])]
    arrays, hints = [], []
    for j, c in enumerate(cols):
        arr, hint = pandas_to_arrow(c, j)
        arrays.append(arr)
        hints.append(hint)
    labels = list(range(len(cols)))
    names = [str(j) for j in labels]
    meta = NormMeta(
        kind="ndarray",
        index_kind="range",
        index_names=(None,),
        columns=tuple(names),
        user_columns=tuple(labels),
        column_hints=tuple(hints),
        shape=tuple(int(x) for x in a.shape),
        dtype=a.dtype.str,
    )
    return _table([], [], arrays, names), meta


def _polars_to_arrow(df: Any) -> pa.Table:
    import polars as pl  # present: df is a polars object

    try:
        return df.to_arrow(compat_level=pl.CompatLevel.oldest())
    except TypeError:  # older polars without compat_level
        return df.to_arrow()
    except Exception as exc:  # e.g. pl.Object columns
        raise ArcticDbNotYetImplemented(
            f"polars DataFrame cannot be converted to Arrow ({exc}); {_PICKLE}"
        ) from exc


def _normalize_arrow(
    table: pa.Table, kind: str, index_column: str | bool | None
) -> tuple[pa.Table, NormMeta]:
    names = table.column_names
    if index_column is True:
        if not names:
            raise UserInputException("index_column=True needs at least one column")
        index_column = names[0]
    if index_column in (None, False):
        stored = _data_stored_names(names, [])
        meta = NormMeta(
            kind=kind,
            index_kind="none",
            columns=tuple(stored),
            user_columns=tuple(names),
            column_hints=("",) * len(names),
        )
        return table.rename_columns(stored).replace_schema_metadata(None), meta
    if not isinstance(index_column, str) or names.count(index_column) != 1:
        raise UserInputException(
            f"index_column {index_column!r} must name exactly one column of the data; columns are {names}"
        )
    pos = names.index(index_column)
    idx = table.column(pos)
    data = table.remove_column(pos)
    ifields: dict[str, Any] = {"index_names": (index_column,), "index_position": pos}
    if pa.types.is_timestamp(idx.type):
        ifields.update(
            index_kind="datetime", tz=idx.type.tz, index_unit=idx.type.unit, index_hints=("dt",)
        )
        try:
            idx = idx.cast(pa.timestamp(idx.type.unit)).cast(pa.timestamp("ns"))
        except pa.ArrowInvalid as exc:
            raise UserInputException(_INDEX_RANGE.format(name=index_column)) from exc
    else:
        ifields.update(index_kind="other", index_hints=("",))
    stored = _data_stored_names(data.column_names, [index_column])
    meta = NormMeta(
        kind=kind,
        index_columns=(index_column,),
        columns=tuple(stored),
        user_columns=tuple(data.column_names),
        column_hints=("",) * len(stored),
        **ifields,
    )
    out = pa.Table.from_arrays([idx, *data.columns], names=[index_column, *stored])
    return out, meta


# ---------------------------------------------------------------------------------- denormalize
def _split(table: pa.Table, meta: NormMeta) -> tuple[list[str], list[str]]:
    """(index columns present, data columns present) in table order (NaN-rows companions are
    neither)."""
    index_set = set(meta.index_columns)
    names = table.column_names
    return ([n for n in names if n in index_set],
            [n for n in names if n not in index_set and not is_nan_rows_name(n)])


def _arrow_index_output(table: pa.Table, meta: NormMeta) -> pa.Table:
    """Give a ``dt`` index column its tz and unit back (metadata-only casts)."""
    for name, hint in zip(meta.index_columns, meta.index_hints, strict=False):
        pos = table.schema.get_field_index(name) if hint == "dt" else -1
        if pos >= 0:
            col = table.column(pos)
            target = pa.timestamp(meta.index_unit, tz=meta.tz)
            if col.type != target:
                if meta.tz is not None:
                    col = col.cast(pa.timestamp("ns", tz="UTC"))
                col = col.cast(target, safe=False)
                table = table.set_column(pos, name, col)
    return table


def arrow_columns(table: pa.Table, meta: NormMeta) -> pa.Table:
    """A stored table as plain Arrow columns, for engines that know no pandas index (Spark,
    DuckDB, a scan's record batches): the index is a leading column named after the index
    (``index`` when unnamed, ``level_<i>`` for unnamed levels of a MultiIndex) with its time
    zone and unit restored; a RangeIndex is not a column. Data columns keep their stored
    names (the user's names where they are unique strings). No schema metadata."""
    table = _arrow_index_output(split_nan_rows(table)[0], meta).replace_schema_metadata(None)
    index_present, data_present = _split(table, meta)
    taken = set(data_present)
    names = []
    for i, stored in enumerate(index_present):
        user = meta.index_names[i] if i < len(meta.index_names) else None
        want = stored if isinstance(user, str) and user else ("index" if len(index_present) == 1 else f"level_{i}")
        names.append(want if want not in taken else stored)
    return table.rename_columns([*names, *data_present]) if index_present else table


def _to_arrow(table: pa.Table, meta: NormMeta, *, unique: bool = False) -> pa.Table:
    table = _arrow_index_output(split_nan_rows(table)[0], meta).replace_schema_metadata(None)
    if meta.kind in ("arrow", "polars"):
        index_present, data_present = _split(table, meta)
        names = [*index_present, *meta.describe(data_present)[0]]
        if unique and len(set(names)) != len(names):
            names = table.column_names  # polars needs unique names: keep the stored ones
        table = table.select([*index_present, *data_present]).rename_columns(names)
        if index_present and meta.index_position and len(data_present) == len(meta.columns):
            order = list(range(1, table.num_columns))
            order.insert(meta.index_position, 0)
            table = table.select(order)
    return table


def _pandas_metadata(table: pa.Table, meta: NormMeta) -> bytes | None:
    """pyarrow's ``pandas`` schema metadata for pyarrow output of pandas data, as ArcticDB
    attaches it: ``out.to_pandas()`` then restores the index (kind, name, tz) and dtypes.

    pyarrow builds the entries of the index and of hinted columns (nullable, object, ...) from
    a zero-row rebuild of just those; plain columns need only their name (Arrow's type says the
    rest), so wide tables cost O(columns) JSON, not a pandas round trip.
    """
    if meta.kind not in ("dataframe", "series"):
        return None
    try:
        index_present, data_names = _split(table, meta)
        _, hints = meta.describe(data_names)
        special = [n for n, h in zip(data_names, hints, strict=True) if h]
        empty = denormalize(table.select([*index_present, *special]).slice(0, 0), meta)
        frame = empty.to_frame() if isinstance(empty, pd.Series) else empty
        frame.columns = special if len(frame.columns) == len(special) else list(frame.columns)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            md = json.loads(pa.Schema.from_pandas(frame, preserve_index=None).metadata[b"pandas"])
        generated = [c for c in md["index_columns"] if isinstance(c, str)]
        if len(generated) != len(index_present):
            return None
        rename = dict(zip(generated, index_present, strict=True))
        md["index_columns"] = [
            rename.get(c, c) if isinstance(c, str) else c for c in md["index_columns"]
        ]
        for c in md["index_columns"]:
            if isinstance(c, dict) and c.get("kind") == "range":
                c["stop"] = c["start"] + table.num_rows * c["step"]
        entries = {}
        for col in md["columns"]:
            col["field_name"] = rename.get(col["field_name"], col["field_name"])
            entries[col["field_name"]] = col
        # as ArcticDB: the index entries first, a plain column typed from its Arrow type, and
        # only the keys ArcticDB writes
        md["columns"] = [entries[n] for n in index_present if n in entries] + [
            _data_entry(entries.get(n), n, table.schema.field(n).type) for n in data_names
        ]
        kind = ("mixed", "object") if data_names else ("int64", "int64")  # no column: an int64 Index
        md["column_indexes"] = [{"name": None, "field_name": None, "pandas_type": kind[0],
                                 "numpy_type": kind[1], "metadata": None}]
        return json.dumps({k: md[k] for k in ("index_columns", "column_indexes", "columns")}).encode()
    except (ValueError, TypeError, KeyError, pa.ArrowException):
        return None  # metadata is a convenience; the table itself is complete


_NUMPY_NUMBERS = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                            "float16", "float32", "float64"})


def _data_entry(entry: dict[str, Any] | None, name: str, typ: pa.DataType) -> dict[str, Any]:
    """A data column's pandas-metadata entry: pyarrow's (from the zero-row rebuild) where pandas
    needs it, typed from the Arrow type where that says it all (a zero-row rebuild of a Series
    may not keep its numpy dtype)."""
    if entry is None or (entry.get("metadata") is None and entry.get("numpy_type") in _NUMPY_NUMBERS
                         and (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_boolean(typ))):
        return {"name": name if entry is None else entry["name"], "field_name": name, **_plain_entry(typ)}
    return entry


def _plain_entry(typ: pa.DataType) -> dict[str, Any]:
    """The pandas-metadata types of a column pandas needs nothing special for (ArcticDB's
    names: the Arrow type's for numbers, ``unicode`` for strings, ``datetime`` for times)."""
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return {"pandas_type": "unicode", "numpy_type": "object", "metadata": None}
    if pa.types.is_timestamp(typ):
        if typ.tz is not None:
            return {"pandas_type": "datetimetz", "numpy_type": f"datetime64[{typ.unit}]",
                    "metadata": {"timezone": typ.tz}}
        return {"pandas_type": "datetime", "numpy_type": f"datetime64[{typ.unit}]", "metadata": None}
    if pa.types.is_boolean(typ) or pa.types.is_integer(typ) or pa.types.is_floating(typ):
        return {"pandas_type": str(typ), "numpy_type": str(typ), "metadata": None}
    return {"pandas_type": "object", "numpy_type": "object", "metadata": None}


#: Arrow types of string columns in Arrow / polars output, by ArcticDB's ``ArrowOutputStringFormat``
#: name (``UNSPECIFIED``: large strings, as ArcticDB gives them).
STRING_FORMATS = {
    "UNSPECIFIED": pa.large_string(),
    "LARGE_STRING": pa.large_string(),
    "SMALL_STRING": pa.string(),
    "CATEGORICAL": pa.dictionary(pa.int32(), pa.large_string()),
    "DICTIONARY_ENCODED": pa.dictionary(pa.int32(), pa.large_string()),
}


def _is_text(typ: pa.DataType) -> bool:
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    return pa.types.is_string(typ) or pa.types.is_large_string(typ)


def with_string_format(table: pa.Table, default: str = "UNSPECIFIED",
                       per_column: dict[str, str] | None = None, *, keep_written: bool = False) -> pa.Table:
    """String columns of ``table`` in the Arrow type their format names (:data:`STRING_FORMATS`):
    ``per_column`` (by column name) first, then ``default``. ``UNSPECIFIED`` leaves dictionary
    (categorical) columns as they are, and with ``keep_written`` (data written as Arrow or
    polars) every string column keeps the type it was written with."""
    for i, field in enumerate(table.schema):
        if not (_is_text(field.type) or (pa.types.is_null(field.type) and not keep_written)):
            continue  # (a pandas column of no values is a string column without strings)
        fmt = (per_column or {}).get(field.name, default)
        if fmt == "UNSPECIFIED" and (keep_written or pa.types.is_dictionary(field.type)):
            continue
        target = STRING_FORMATS[fmt]
        if field.type != target:
            col = table.column(i)
            if pa.types.is_dictionary(target) and not pa.types.is_dictionary(field.type):
                col = col.cast(target.value_type).dictionary_encode()
                col = col.cast(target)
            else:
                col = col.cast(target)
            table = table.set_column(i, field.with_type(target), col)
    return table


def _sorted_index(table: pa.Table, meta: NormMeta) -> str | None:
    """The name of ``table``'s leading index column (a MultiIndex's first level) when it holds
    timestamps in ascending order without NaT (polars output flags it sorted, as ArcticDB
    does), else None."""
    if meta.kind in ("arrow", "polars") or meta.index_kind == "range" or not meta.index_columns \
            or not table.num_columns or not pa.types.is_timestamp(table.schema.field(0).type):
        return None
    col = table.column(0)
    if col.null_count:
        return None
    ns = col.cast(pa.int64()).to_numpy()
    return table.column_names[0] if bool(np.all(ns[1:] >= ns[:-1])) else None


def _to_polars(table: pa.Table, sorted_column: str | None = None) -> Any:
    try:
        import polars as pl
    except ImportError as exc:
        raise MissingDependencyError(
            "output_format='polars' needs polars: pip install 'arcticlite[polars]'"
        ) from exc
    for i, field in enumerate(table.schema):
        typ = field.type
        if pa.types.is_dictionary(typ) and not (
            pa.types.is_string(typ.value_type) or pa.types.is_large_string(typ.value_type)
        ):  # polars only has string categoricals
            table = table.set_column(i, field.name, table.column(i).cast(typ.value_type))
    out = pl.from_arrow(table)
    if sorted_column is not None and isinstance(out, pl.DataFrame):
        out = out.with_columns(pl.col(sorted_column).set_sorted())
    return out


def index_from_table(table: pa.Table, meta: NormMeta, nrows: int) -> pd.Index:
    if meta.index_kind in ("range", "none") or not meta.index_columns:
        name = meta.index_names[0] if meta.index_names else None
        if meta.index_kind == "range":
            # ArcticDB re-numbers any row slice from the stored start.
            start, step = meta.range_start, meta.range_step
            return pd.RangeIndex(start, start + nrows * step, step, name=name)
        return pd.RangeIndex(nrows, name=name)
    levels = []
    for name, user, hint in zip(
        meta.index_columns, meta.index_names, meta.index_hints, strict=False
    ):
        col = table.column(name)
        if hint == "dt":
            levels.append(_datetime_index(col, meta, user))
        else:
            levels.append(pd.Index(arrow_to_pandas(col, hint), name=user, copy=False))
    if meta.index_kind == "multi":
        return pd.MultiIndex.from_arrays(levels, names=list(meta.index_names))
    return levels[0]


def _datetime_index(col: pa.ChunkedArray, meta: NormMeta, name: Any) -> pd.DatetimeIndex:
    if col.type != pa.timestamp("ns"):
        col = col.cast(pa.timestamp("ns"))
    values = (
        col.to_numpy()
        if col.num_chunks != 1 or col.null_count
        else col.chunk(0).to_numpy(zero_copy_only=False)
    )
    return datetime_index(values, meta, name)


def _fast_datetime_index() -> Any:
    """pandas' constructor of a DatetimeIndex around datetime64[ns] values it need not check
    (``DatetimeIndex(values)`` re-validates them: ~25 us of a small read), or None."""
    try:
        from pandas.core.arrays import DatetimeArray

        make = pd.DatetimeIndex._simple_new
        build = DatetimeArray._simple_new
        probe = np.array([0, 1], dtype="M8[ns]")
        if not make(build(probe, dtype=probe.dtype), name="x").equals(pd.DatetimeIndex(probe)):
            return None
    except (ImportError, AttributeError, TypeError, ValueError):  # pragma: no cover - other pandas
        return None
    return lambda values, name: make(build(values, dtype=_NS), name=name)


_NS = np.dtype("M8[ns]")
_DATETIME_INDEX = _fast_datetime_index()


def datetime_index(values: np.ndarray, meta: NormMeta, name: Any) -> pd.DatetimeIndex:
    """The user's DatetimeIndex (tz, unit, name) around stored naive-UTC ns ``values``
    (zero-copy for a tz-naive nanosecond index)."""
    if (meta.tz is None and meta.index_unit == "ns" and _DATETIME_INDEX is not None
            and isinstance(values, np.ndarray) and values.dtype == _NS and values.ndim == 1):
        return _DATETIME_INDEX(values, name)
    if meta.tz is not None:  # int64 values are UTC: the tz-aware index is the same buffer
        dtype = pd.DatetimeTZDtype("ns", tz_object(meta.tz, meta.tz_library))
        idx = pd.DatetimeIndex(np.asarray(values).view(np.int64), dtype=dtype, name=name, copy=False)
    else:
        idx = pd.DatetimeIndex(values, name=name, copy=False)
    if meta.index_unit != "ns":
        idx = idx.as_unit(meta.index_unit)
    return idx


_MAX_INSERTS = 64


def _values(table: pa.Table, name: str, hint: str) -> Any:
    """``arrow_to_pandas`` of column ``name``, its missing values NaN or None row by row where
    the table has the column's NaN-rows companion."""
    col = table.column(name)
    values = arrow_to_pandas(col, hint)
    pos = table.schema.get_field_index(nan_rows_name(name))
    if pos < 0 or not isinstance(values, np.ndarray) or values.dtype != object:
        return values
    return apply_nan_rows(values, col, table.column(pos), hint.endswith(":nan"))


def _frame_from_table(
    table: pa.Table, data_names: list[str], hints: list[str], index: pd.Index
) -> pd.DataFrame:
    """A DataFrame of the data columns (stored names as labels).

    Columns without a hint go through one multi-threaded ``to_pandas`` into consolidated
    blocks (one copy); hinted columns are converted one by one and inserted (or, when there
    are many, assembled with the rest without consolidation, so the cost stays linear).
    """
    names = set(table.column_names)
    mixed = {n for n in data_names if nan_rows_name(n) in names}
    plain = [n for n, h in zip(data_names, hints, strict=True) if not h and n not in mixed]
    if plain:
        df = (
            table.select(plain)
            .replace_schema_metadata(None)
            .to_pandas(split_blocks=False, use_threads=True, date_as_object=True)
        )
        df.index = index
    else:
        df = pd.DataFrame(index=index)
    if len(plain) == len(data_names):
        return df

    def hinted(n: str, h: str) -> pd.Series:
        values = _values(table, n, h)
        # a Series on the frame's own index: no alignment, no dtype inference
        return pd.Series(values, index=df.index, dtype=values.dtype, copy=False)

    if len(data_names) - len(plain) <= _MAX_INSERTS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pd.errors.PerformanceWarning)
            for pos, (n, h) in enumerate(zip(data_names, hints, strict=True)):
                if h or n in mixed:
                    df.insert(pos, n, hinted(n, h))
        return df
    cols = {n: (hinted(n, h) if h or n in mixed else df[n]) for n, h in zip(data_names, hints, strict=True)}
    return pd.DataFrame(cols, index=df.index, copy=False)


def denormalize(
    table: pa.Table,
    meta: NormMeta,
    *,
    output_format: str | OutputFormat = OutputFormat.PANDAS,
    row_offset: int = 0,
    string_format: str = "UNSPECIFIED",
    string_formats: dict[str, str] | None = None,
) -> Any:
    """Rebuild the user's object from a stored table (or a column subset / row slice of it).

    Parameters
    ----------
    table : pyarrow.Table
        Stored columns, index first; any subset of the data columns in storage order, any
        row slice. Columns not described by ``meta`` (dynamic schema) are kept under their
        stored name.
    meta : NormMeta
        The metadata :func:`normalize` returned (or :func:`common_meta` merged).
    output_format : str or OutputFormat, default "pandas"
        ``"pandas"``: the kind written (DataFrame / Series / ndarray; Arrow and polars data
        give a DataFrame) with dtypes, index, names, tz and column labels restored.
        ``"pyarrow"``: a ``pyarrow.Table`` with the index as a leading column (none for a
        RangeIndex). ``"polars"``: a polars DataFrame (needs the ``polars`` extra).
    string_format, string_formats : str, dict
        Arrow / polars output: the Arrow type of string columns (ArcticDB's
        ``ArrowOutputStringFormat`` names, :data:`STRING_FORMATS`), by default and per column.
    row_offset : int, default 0
        Offset of the slice in the stored rows. Unused for now: as in ArcticDB, a RangeIndex
        slice is re-numbered from the stored start.

    Returns
    -------
    pandas.DataFrame, pandas.Series, numpy.ndarray, pyarrow.Table or polars.DataFrame

    Notes
    -----
    Cost: plain numeric columns cost one consolidated copy into a pandas block (multi-threaded);
    Arrow and polars output are zero-copy.
    """
    fmt = OutputFormat(output_format)
    if fmt is OutputFormat.PYARROW:
        out = with_string_format(_to_arrow(table, meta), string_format, string_formats,
                                 keep_written=meta.kind in ("arrow", "polars"))
        pandas_md = _pandas_metadata(table, meta)
        return out if pandas_md is None else out.replace_schema_metadata({b"pandas": pandas_md})
    if fmt is OutputFormat.POLARS:
        arrow = with_string_format(_to_arrow(table, meta, unique=True), string_format, string_formats,
                                   keep_written=meta.kind in ("arrow", "polars"))
        return _to_polars(arrow, _sorted_index(arrow, meta))
    del row_offset  # reserved; see docstring
    nrows = table.num_rows
    _, data_names = _split(table, meta)
    index = index_from_table(table, meta, nrows)
    if meta.kind == "series":
        name = meta.user_columns[0] if meta.user_columns else None
        if not data_names:
            return pd.Series(index=index, name=name, dtype="float64")
        values = _values(table, data_names[0], meta.describe(data_names[:1])[1][0])
        return pd.Series(values, index=index, name=name, dtype=values.dtype, copy=False)
    if meta.kind == "ndarray":
        return _ndarray_from_table(table, meta, data_names)
    labels, hints = meta.describe(data_names)
    df = _frame_from_table(table, data_names, hints, index)
    df.columns = column_labels(meta, labels)
    return df


def column_labels(meta: NormMeta, labels: list[Any]) -> pd.Index:
    """``DataFrame.columns`` as written (dtype and name) for the user labels ``labels``; none
    (no column read): the empty RangeIndex ArcticDB gives, pandas' default."""
    if not labels:
        if meta.index_kind == "multi" and meta.user_columns:  # (ArcticDB's for a MultiIndex frame)
            return pd.Index([], dtype=object)
        return pd.RangeIndex(0)
    dtype = _labels_dtype(meta.columns_dtype)
    if isinstance(dtype, np.dtype) and dtype == _OBJECT and all(type(x) is str for x in labels):
        values = np.empty(len(labels), dtype=object)
        values[:] = labels
        return pd.Index._simple_new(values, name=meta.columns_name)
    try:
        return pd.Index(labels, dtype=dtype, name=meta.columns_name)
    except (TypeError, ValueError):
        return pd.Index(labels, name=meta.columns_name)


_OBJECT = np.dtype(object)


@functools.lru_cache(maxsize=64)
def _labels_dtype(name: Any) -> Any:
    """The dtype named ``name`` (pandas parses a dtype string on every ``Index`` otherwise);
    a name pandas does not know is passed on as it is (``pd.Index`` then says why)."""
    if name is None:
        return None
    try:
        return pd.api.types.pandas_dtype(name)
    except (TypeError, ValueError):
        return name


def _ndarray_from_table(table: pa.Table, meta: NormMeta, data_names: list[str]) -> np.ndarray:
    dtype = np.dtype(meta.dtype) if meta.dtype else None
    _, hints = meta.describe(data_names)
    cols = [
        np.asarray(arrow_to_pandas(table.column(n), h))
        for n, h in zip(data_names, hints, strict=True)
    ]
    if dtype is not None and dtype.kind in "SU":
        # as wide as the longest value read, not as the first write (appends may be wider)
        width = max((int(np.char.str_len(c.astype(dtype.kind)).max(initial=0)) for c in cols), default=0)
        dtype = np.dtype(f"{dtype.byteorder if dtype.byteorder != '|' else ''}{dtype.kind}{max(1, width)}")
    elif dtype is not None and dtype.kind in "biuf" and cols:
        # a dynamic schema widens the stored type (int64 then floats appended: float64); the
        # array takes the wider type, as ArcticDB reads it, never cut back to the first write's
        dtype = np.result_type(dtype, *(c.dtype for c in cols if c.dtype.kind in "biuf"))
    if meta.shape is not None and len(meta.shape) == 1:
        out = cols[0] if cols else np.empty(0, dtype)
        return out.astype(dtype, copy=False) if dtype is not None else out
    out = np.empty((table.num_rows, len(cols)), dtype=dtype)
    for j, c in enumerate(cols):
        out[:, j] = c
    return out
