"""Per-column conversion between pandas values and Arrow arrays.

One column at a time, always vectorised (numpy / pyarrow over the whole column; the only loops
are over columns). Each conversion returns the Arrow array plus a *hint*: a short string that
tells :func:`arrow_to_pandas` how to rebuild the exact pandas dtype when Arrow's default
conversion would not. The empty hint means "``to_pandas`` gets it right".

Hints
-----
``""``
    Arrow's default conversion restores the dtype (numpy numerics, bool, datetime64 with any
    unit and tz, timedelta64, categorical, object columns of ``str`` / ``bytes`` with ``None``).
``"object"``
    An object column of Python scalars that Arrow stores natively (ints, floats, bools,
    Timestamps): rebuilt as an ``object`` column of Python scalars, nulls as ``None``.
``"object:nan"``, ``"object:nat"``, ``"object:na"``
    Like ``""``/``"object"`` but the missing values were ``NaN`` / ``NaT`` / ``pd.NA``
    rather than ``None`` (the most frequent kind in the column).
``"pylist"``
    An object column of Python lists (stored as an Arrow list type).
``"Int64"``, ``"UInt8"``, ``"Float64"``, ``"boolean"``, ...
    A pandas nullable extension dtype, restored with ``dtype.__from_arrow__``.
``"string[python]"``, ``"string[pyarrow]"`` (optionally ``"|nan"``)
    A pandas ``StringDtype`` with that storage (and ``na_value=np.nan``).
``"arrow"``
    A ``pd.ArrowDtype`` column.
``"tz:zoneinfo"``, ``"tz:dateutil"``, ``"tz:datetime"``, ``"tz:pytz"``
    A tz-aware column whose tz object comes from that library rather than pandas' default
    for the tz name (pandas 2 makes pytz zones): restored with the same kind of tz object.
"""

from __future__ import annotations

import ctypes
import datetime
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from pandas.api.types import infer_dtype

from arcticlite.exceptions import ArcticDbNotYetImplemented
from arcticlite.format import factorize_words

__all__ = [
    "DICTIONARY_VALUES",
    "arrow_to_pandas",
    "few_strings_as_dictionary",
    "pandas_to_arrow",
    "tz_library",
    "tz_object",
    "value_schema",
    "value_table",
]

_PICKLE_HINT = "write_pickle stores any Python object"

_MASKED_NAMES = frozenset(
    [
        "Int8",
        "Int16",
        "Int32",
        "Int64",
        "UInt8",
        "UInt16",
        "UInt32",
        "UInt64",
        "Float32",
        "Float64",
        "boolean",
    ]
)


def _reject(label: Any, dtype: Any, detail: str) -> ArcticDbNotYetImplemented:
    return ArcticDbNotYetImplemented(
        f"Failed to normalize column {label!r} with dtype '{dtype}'. {detail}; "
        f"{_PICKLE_HINT} (use Library.write_pickle)."
    )


def tz_library(tz: Any, unit: str = "ns", *, via_arrow: bool = False) -> str:
    """Which library ``tz`` comes from, or ``""`` when the default rebuild from its Arrow name
    gives an equal dtype (so nothing needs recording).

    The default rebuild is pandas' parse of the name for an index, or pyarrow's ``to_pandas``
    for a column (``via_arrow``): the two do not always make the same tz object.
    """
    name = pa.lib.tzinfo_to_string(tz)
    try:
        if via_arrow:
            rebuilt = pa.array([0], pa.timestamp(unit, tz=name)).to_pandas().dtype
        else:
            rebuilt = pd.DatetimeTZDtype(unit, tz=name)
        if rebuilt == pd.DatetimeTZDtype(unit, tz=tz):
            return ""
    except (TypeError, ValueError, KeyError, pa.ArrowException):
        pass
    module = type(tz).__module__.split(".")[0]
    return module if module in ("zoneinfo", "dateutil", "datetime", "pytz") else ""


def tz_object(name: str, library: str) -> Any:
    """The tz object for Arrow tz ``name`` from ``library`` (see :func:`tz_library`)."""
    offset = name[:1] in "+-"
    if library == "pytz":
        import pytz

        if offset:
            sign = -1 if name[0] == "-" else 1
            hours, _, minutes = name[1:].partition(":")
            return pytz.FixedOffset(sign * (int(hours) * 60 + int(minutes or 0)))
        return pytz.timezone(name)
    if library == "zoneinfo" and not offset:
        import zoneinfo

        return zoneinfo.ZoneInfo(name)
    if library == "dateutil" and not offset:
        return "dateutil/" + name if name != "UTC" else pa.lib.string_to_tzinfo(name)
    if library == "datetime" or (offset and library):
        if name == "UTC":
            return datetime.UTC
        return pa.lib.string_to_tzinfo(name)
    return name


def pandas_to_arrow(
    values: pd.Series | pd.Index | np.ndarray, label: Any
) -> tuple[pa.Array | pa.ChunkedArray, str]:
    """Convert one pandas column (or index level, or 1-D ndarray) to Arrow.

    Parameters
    ----------
    values : pandas.Series, pandas.Index or numpy.ndarray
        The column. Numeric numpy data is wrapped without a copy.
    label : Any
        The user's label, only used in error messages.

    Returns
    -------
    (pyarrow.Array or pyarrow.ChunkedArray, str)
        The array and the dtype hint (see the module docstring).

    Raises
    ------
    ArcticDbNotYetImplemented
        For dtypes that cannot be stored as columns (float16, complex, Period, Interval,
        Sparse, mixed-type / Decimal / dict / over-int64 object columns, object bools with
        missing values).
    """
    if isinstance(values, np.ndarray):
        return _numpy_to_arrow(values, label)
    dtype = values.dtype
    if isinstance(dtype, np.dtype):
        return _numpy_to_arrow(values.to_numpy(copy=False), label)
    try:
        return _extension_to_arrow(values.array, dtype, label)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        if isinstance(exc, ArcticDbNotYetImplemented):
            raise
        raise _reject(label, dtype, f"Arrow cannot hold it ({exc})") from exc


def _extension_to_arrow(ext: Any, dtype: Any, label: Any) -> tuple[pa.Array | pa.ChunkedArray, str]:
    if isinstance(dtype, pd.DatetimeTZDtype):
        lib = tz_library(dtype.tz, dtype.unit, via_arrow=True)
        return pa.array(ext), f"tz:{lib}" if lib else ""
    if isinstance(dtype, pd.CategoricalDtype):
        cats = dtype.categories
        if isinstance(
            cats.dtype, pd.IntervalDtype | pd.PeriodDtype | pd.SparseDtype | pd.DatetimeTZDtype
        ):
            raise _reject(label, dtype, f"Categories of dtype {cats.dtype} are not supported")
        if cats.dtype == object and infer_dtype(cats, skipna=True) not in (
            "string",
            "bytes",
            "empty",
        ):
            raise _reject(label, dtype, "Categories must be strings, bytes or numbers")
        return pa.array(ext), ""
    if isinstance(dtype, pd.ArrowDtype):
        return pa.array(ext), "arrow"
    if isinstance(dtype, pd.StringDtype):
        hint = f"string[{dtype.storage}]"
        if dtype.na_value is not pd.NA:
            hint += "|nan"
        typ = pa.large_string() if dtype.storage == "pyarrow" else pa.string()
        return pa.array(ext, type=typ), hint
    name = getattr(dtype, "name", str(dtype))
    if name in _MASKED_NAMES:
        return pa.array(ext), name
    raise _reject(label, dtype, f"Unsupported dtype '{dtype}'")


def _numpy_to_arrow(arr: np.ndarray, label: Any) -> tuple[pa.Array | pa.ChunkedArray, str]:
    kind = arr.dtype.kind
    if kind in "iufmM" and not arr.dtype.isnative:  # big-endian values: in the machine's order
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if kind in "iub":
        return pa.array(arr), ""
    if kind == "f":
        if arr.dtype.itemsize == 2:
            raise _reject(label, arr.dtype, "float16 is not supported; cast to float32")
        if arr.dtype.itemsize > 8:
            raise _reject(label, arr.dtype, "extended precision floats are not supported")
        return pa.array(arr), ""
    if kind in "mM":
        unit = np.datetime_data(arr.dtype)[0]
        if unit not in ("s", "ms", "us", "ns"):
            arr = arr.astype(arr.dtype.str[:3] + "[ns]" if kind == "M" else "timedelta64[ns]")
        return pa.array(arr), ""
    if kind == "O":
        return _object_to_arrow(arr, label)
    if kind in "US":
        return pa.array(arr), ""
    raise _reject(label, arr.dtype, f"Unsupported dtype '{arr.dtype}'")


_NULL_VALUES = {"nan": np.nan, "nat": pd.NaT, "na": pd.NA}
_NULL_TEXT = (("", "None"), ("nan", "nan"), ("nat", "NaT"), ("na", "<NA>"))


def _null_hint(arr: np.ndarray, isna: np.ndarray) -> str:
    """``":nan"`` / ``":nat"`` / ``":na"`` when most missing values are NaN / NaT / pd.NA
    rather than None (Arrow keeps one kind of null per column)."""
    nulls = arr[isna]
    if not len(nulls):
        return ""
    try:  # None and NaN only (the usual case): pyarrow counts the Nones as nulls, in C
        n_none = pa.array(nulls, from_pandas=False).null_count
        return "" if n_none * 2 >= len(nulls) else ":nan"
    except (pa.ArrowException, TypeError, ValueError):
        pass
    text = nulls.astype(str)  # str() of the missing values only: 'None', 'nan', 'NaT', '<NA>'
    counts = {kind: int(np.count_nonzero(text == t)) for kind, t in _NULL_TEXT}
    kind = max(counts, key=lambda k: counts[k])  # ties: None
    return f":{kind}" if kind else ""


def _is_text(typ: pa.DataType) -> bool:
    return pa.types.is_string(typ) or pa.types.is_large_string(typ)


# -- few distinct strings, dictionary-encoded for the writer -------------------------------------
DICTIONARY_VALUES = b"arcticlite.values"
"""Field metadata key of a column that holds values of its dictionary's value type, carried
dictionary-encoded from normalization to the segment writer (which stores them as plain
string values: the files do not change). Categorical columns never carry it."""

ROW_MAJOR = b"arcticlite.row_major"
"""Field metadata key of a placeholder column: its values are still in a row-major block of
the user's frame, and the segment writer takes them from there segment by segment
(:mod:`arcticlite.normalize._rowmajor`). The stored schema never carries it."""

#: Columns shorter than this are converted the plain way (the saving would not pay the checks).
DICTIONARY_MIN_ROWS = 1 << 16
#: At most one distinct string object per this many rows.
DICTIONARY_MAX_SHARE = 16
_DICTIONARY_SAMPLE = 4096


def few_strings_as_dictionary(arr: np.ndarray) -> pa.DictionaryArray | None:
    """An object column of ``str`` holding few distinct values, dictionary-encoded, else None.

    A column of repeated labels usually holds the same few ``str`` objects many times over,
    so the objects are told apart by identity first (an integer factorization of their
    addresses, ~3 ns a row) and only the distinct objects are compared as strings. Converting
    every row to Arrow instead costs ~25 ns a row under the GIL. None when the column is
    short, not all ``str`` (missing values included: the plain conversion handles those), or
    has more than one distinct object per :data:`DICTIONARY_MAX_SHARE` rows.
    """
    n = len(arr)
    if arr.ndim != 1 or n < DICTIONARY_MIN_ROWS or arr.dtype != object:
        return None
    first = arr[0]
    if type(first) is not str:  # cheap early exit for columns of other objects
        return None
    arr = np.ascontiguousarray(arr)
    # the addresses of the objects: the array holds a reference to each while we look
    addresses = np.ctypeslib.as_array((ctypes.c_ssize_t * n).from_address(arr.ctypes.data))
    sample = addresses[:: max(1, n // _DICTIONARY_SAMPLE)]
    s = len(sample)
    repeats = s - len(pd.unique(sample))
    # many distinct objects: not worth it. s samples of D equally common objects repeat about
    # s²/2D times, so D is within half the limit when repeats >= s² * SHARE / n (a 10,000-value
    # column of 2M rows repeats ~730 times in 4,096, a unique one never)
    if repeats < s // 2 and repeats * n < s * s * DICTIONARY_MAX_SHARE:
        return None
    got = factorize_words(addresses, n // DICTIONARY_MAX_SHARE)  # hashing, in C
    if got is None:
        return None
    where, uniq = got
    objs = [ctypes.cast(int(a), ctypes.py_object).value for a in uniq.tolist()]
    if any(type(o) is not str for o in objs):
        return None
    try:
        values = pa.array(objs, type=pa.string())
    except (pa.ArrowException, UnicodeError):  # e.g. lone surrogates: the plain path explains
        return None
    # equal strings held by different objects share one code
    string_codes, distinct = pd.factorize(np.array(objs, dtype=object))
    codes = where
    if len(distinct) != len(objs):
        values = pa.array(distinct, type=pa.string())
        codes = string_codes.astype(np.int32)[where]
    return pa.DictionaryArray.from_arrays(pa.array(codes, type=pa.int32()), values)


def value_table(table: pa.Table) -> pa.Table:
    """``table`` with the columns carried dictionary-encoded decoded to their values."""
    schema = value_schema(table.schema)
    if schema is table.schema:
        return table
    return pa.Table.from_arrays([c.cast(f.type) for c, f in zip(table.columns, schema, strict=True)],
                                schema=schema)


def value_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with each column carried dictionary-encoded (:data:`DICTIONARY_VALUES`) given
    the type of its values: the schema the data stands for."""
    if not any(f.metadata and (DICTIONARY_VALUES in f.metadata or ROW_MAJOR in f.metadata) for f in schema):
        return schema
    return pa.schema(
        [pa.field(f.name, f.type.value_type, f.nullable)
         if f.metadata and DICTIONARY_VALUES in f.metadata
         else pa.field(f.name, f.type, f.nullable) if f.metadata and ROW_MAJOR in f.metadata
         else f for f in schema],
        metadata=schema.metadata,
    )


def _null_mask(out: pa.Array | pa.ChunkedArray) -> np.ndarray:
    mask = out.is_null()
    return np.asarray(mask.to_numpy(zero_copy_only=False))


def _object_to_arrow(arr: np.ndarray, label: Any) -> tuple[pa.Array | pa.ChunkedArray, str]:
    # Fast path for the common case, a column of str: pyarrow's own inference gives a string
    # array only when every non-missing value is a str, and its nulls are the missing values.
    try:
        out = pa.array(arr, from_pandas=True)
    except (pa.ArrowException, OverflowError, TypeError, ValueError):
        out = None
    if out is not None and _is_text(out.type):
        if not out.null_count:
            return out, ""
        nullhint = _null_hint(arr, _null_mask(out))
        return out, ("object" + nullhint) if nullhint else ""
    isna = pd.isna(arr)
    nullhint = _null_hint(arr, isna)
    # on the non-missing values: pandas calls [1.5, None] "mixed-integer-float"
    inferred = infer_dtype(arr[~isna] if isna.any() else arr, skipna=False)
    if inferred == "empty":
        return pa.nulls(len(arr)), ("object" + nullhint) if nullhint else ""
    if inferred in ("string", "bytes"):
        try:
            out = pa.array(
                arr, type=pa.string() if inferred == "string" else pa.binary(), mask=isna
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:  # e.g. surrogates
            raise _reject(label, "object", f"Could not encode values ({exc})") from exc
        return out, ("object" + nullhint) if nullhint else ""
    first = arr[int(np.argmin(isna))]
    detail = (
        f"Found first non-null value of type {type(first).__name__}, but only strings, bytes, "
        "numbers, Timestamps and homogeneous lists are supported in object columns"
    )
    if inferred == "integer" or inferred == "floating":
        try:
            out = pa.array(
                arr, type=pa.int64() if inferred == "integer" else pa.float64(), from_pandas=True
            )
        except (OverflowError, pa.ArrowInvalid) as exc:
            raise _reject(
                label, "object", "Python ints larger than int64 are not supported"
            ) from exc
        return out, "object" + nullhint
    if inferred == "boolean":
        if isna.any():
            raise _reject(
                label,
                "object",
                "Object bool columns with missing values are not supported; use the 'boolean' dtype",
            )
        return pa.array(arr.astype(bool)), "object"
    if inferred in ("datetime", "datetime64"):
        try:
            tz = getattr(first, "tz", None) or getattr(first, "tzinfo", None)
            typ = pa.timestamp("ns", tz=pa.lib.tzinfo_to_string(tz) if tz is not None else None)
            return pa.array(arr, type=typ, from_pandas=True), "object" + nullhint
        except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError, TypeError) as exc:
            raise _reject(
                label, "object", "Timestamps with mixed time zones are not supported"
            ) from exc
    if inferred in ("date", "time", "timedelta"):
        try:
            out = pa.array(arr, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise _reject(label, "object", detail) from exc
        return out, ("object" + nullhint) if inferred == "timedelta" or nullhint else ""
    if inferred == "mixed" and isinstance(first, list | np.ndarray):
        try:
            out = pa.array(arr, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
            raise _reject(label, "object", "Nested lists must hold values of one type") from exc
        if pa.types.is_list(out.type) or pa.types.is_large_list(out.type):
            return out, ("pylist" if isinstance(first, list) else "") + nullhint
    raise _reject(label, "object", detail)


def arrow_to_pandas(col: pa.Array | pa.ChunkedArray, hint: str) -> Any:
    """Convert one stored Arrow column back to a pandas array-like (numpy or extension).

    Parameters
    ----------
    col : pyarrow.Array or pyarrow.ChunkedArray
        The stored column (possibly sliced, possibly widened under dynamic schema).
    hint : str
        The hint recorded by :func:`pandas_to_arrow`. A hint that no longer fits the column's
        type (e.g. after a dynamic-schema widening) falls back to Arrow's default conversion.

    Returns
    -------
    numpy.ndarray or pandas.api.extensions.ExtensionArray
    """
    if isinstance(col, pa.Array):
        col = pa.chunked_array([col], type=col.type)
    base, _, null_kind = hint.partition(":")
    typ = col.type
    if base in _MASKED_NAMES or base.startswith("string["):
        if base.startswith("string["):
            storage, _, na = base[7:].partition("]")
            na_value = np.nan if "|nan" in hint else pd.NA
            dtype: Any = pd.StringDtype(storage, na_value=na_value)
            if pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_null(typ):
                if pa.types.is_null(typ):
                    col = col.cast(pa.string())
                return dtype.__from_arrow__(col)
        else:
            dtype = pd.api.types.pandas_dtype(base)
            if not pa.types.is_dictionary(typ) and not pa.types.is_string(typ):
                try:
                    return dtype.__from_arrow__(col)
                except (TypeError, ValueError, pa.ArrowException):
                    pass
    elif base == "arrow":
        return pd.arrays.ArrowExtensionArray(col)
    elif base == "tz" and pa.types.is_timestamp(typ) and typ.tz is not None:
        out = col.to_pandas()
        return out.dt.tz_convert(tz_object(typ.tz, null_kind)).array
    elif base == "pylist":
        out = pd.Series(col.to_pylist(), dtype=object).to_numpy()
        return _fill_nulls(out, col, null_kind)
    elif base == "object":
        if (
            pa.types.is_string(typ)
            or pa.types.is_large_string(typ)
            or pa.types.is_binary(typ)
            or pa.types.is_large_binary(typ)
            or pa.types.is_null(typ)
        ):
            out = col.to_numpy(zero_copy_only=False)
        elif pa.types.is_timestamp(typ) or pa.types.is_duration(typ):
            out = col.to_pandas().astype(object).to_numpy()
            out[np.asarray(col.is_null())] = None
        else:
            out = pd.Series(col.to_pylist(), dtype=object).to_numpy()
        return _fill_nulls(out, col, null_kind)
    return col.to_pandas().array if pa.types.is_dictionary(typ) else _default(col)


def _default(col: pa.ChunkedArray) -> Any:
    s = col.to_pandas()
    if not isinstance(s.dtype, np.dtype):
        return s.array
    out = s.to_numpy()
    # zero-copy views of Arrow memory are read-only; users expect to modify what they read
    return out if out.flags.writeable else out.copy()


def _fill_nulls(out: np.ndarray, col: pa.ChunkedArray, kind: str) -> np.ndarray:
    """Put the recorded kind of missing value (NaN, NaT, pd.NA) where Arrow has nulls."""
    if kind in _NULL_VALUES and col.null_count:
        if not out.flags.writeable:
            out = out.copy()
        out[np.asarray(col.is_null())] = _NULL_VALUES[kind]
    return out
