"""Schema rules for append / update, and index sortedness.

:func:`common_schema` checks that new data may join a stored symbol (static or dynamic schema,
ArcticDB's rules) and returns the schema both must be read as; :func:`common_meta` merges the
two :class:`NormMeta` records for the new version; :func:`sortedness` classifies a datetime
index the way ``get_description().sorted`` reports it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pyarrow as pa

from arcticlite.exceptions import NormalizationException, SchemaException, StreamDescriptorMismatch
from arcticlite.normalize._meta import NormMeta
from arcticlite.normalize._nanrows import is_nan_rows_name

__all__ = ["common_meta", "common_schema", "sortedness"]

_FRAME_KINDS = frozenset(["dataframe", "arrow", "polars"])
_ROWCOUNT = frozenset(["range", "none"])
_INDEX_WORDS = {
    "range": "Row count",
    "none": "Row count",
    "datetime": "Timestamp",
    "other": "Non-timestamp",
    "multi": "Multi",
}


def _check_object_kind(old: NormMeta, new: NormMeta) -> None:
    same_kind = old.kind == new.kind or {old.kind, new.kind} <= _FRAME_KINDS
    if not same_kind:
        raise NormalizationException(
            f"E_INCOMPATIBLE_OBJECTS Cannot combine a {new.kind} with the stored {old.kind}; "
            "write the same kind of object (DataFrame, Series, ndarray) as the stored version"
        )


def _check_index(old: NormMeta, new: NormMeta, stored_rows: int | None) -> None:
    ok, nk = old.index_kind, new.index_kind
    if not (ok == nk or {ok, nk} <= _ROWCOUNT):
        raise NormalizationException(
            f"E_INCOMPATIBLE_INDEX Cannot append {_INDEX_WORDS[nk]} index to {_INDEX_WORDS[ok]} index"
        )
    if ok == "multi" and len(old.index_columns) != len(new.index_columns):
        raise NormalizationException(
            f"E_INCOMPATIBLE_INDEX Cannot append a {len(new.index_columns)}-level MultiIndex to a "
            f"{len(old.index_columns)}-level MultiIndex"
        )
    if ok == "range" and nk == "range" and stored_rows is not None:
        if new.range_step != old.range_step:
            raise NormalizationException(
                f"E_INCOMPATIBLE_INDEX Cannot append RangeIndex with a different RangeIndex step: "
                f"stored step {old.range_step}, new step {new.range_step}"
            )
        expected = old.range_start + stored_rows * old.range_step
        # a frame's default index (starting at 0) is taken as "no index": its rows continue
        # the stored range, as in ArcticDB
        if new.range_start != expected and new.range_start != 0:
            raise NormalizationException(
                f"E_INCOMPATIBLE_INDEX Cannot append RangeIndex: not contiguous; the new data starts "
                f"at {new.range_start} but the stored RangeIndex stops at {expected}; "
                f"use pd.RangeIndex({expected}, ...) or reset_index"
            )
    if ok == "multi" and list(old.index_names) != list(new.index_names):
        raise NormalizationException(
            f"E_INCOMPATIBLE_INDEX The MultiIndex level names differ: stored {list(old.index_names)}, new "
            f"{list(new.index_names)}; an append or update needs the same names, even under dynamic schema"
        )
    # a RangeIndex is no stored column: its name is the newest write's (ArcticDB)
    if list(old.index_names) != list(new.index_names) and ok != "none" and nk != "none" \
            and not (ok == "range" and nk == "range"):
        raise StreamDescriptorMismatch(
            f"The index names differ: stored {list(old.index_names)}, new {list(new.index_names)}; "
            "rename the index to match"
        )


_TYPE_NAMES = {
    pa.int8(): "INT8", pa.int16(): "INT16", pa.int32(): "INT32", pa.int64(): "INT64",
    pa.uint8(): "UINT8", pa.uint16(): "UINT16", pa.uint32(): "UINT32", pa.uint64(): "UINT64",
    pa.float32(): "FLOAT32", pa.float64(): "FLOAT64", pa.bool_(): "BOOL8",
    pa.string(): "UTF_DYNAMIC64", pa.large_string(): "UTF_DYNAMIC64",
    pa.binary(): "ASCII_DYNAMIC64", pa.large_binary(): "ASCII_DYNAMIC64",
}


def type_name(typ: pa.DataType) -> str:
    """ArcticDB's name of a stored type (``INT64``, ``FLOAT64``, ``UTF_DYNAMIC64``,
    ``NANOSECONDS_UTC64``, ...; other Arrow types by their Arrow name, upper case)."""
    if typ in _TYPE_NAMES:
        return _TYPE_NAMES[typ]
    if pa.types.is_timestamp(typ):
        return "NANOSECONDS_UTC64"
    if pa.types.is_dictionary(typ) and _is_text_type(typ.value_type):
        return "UTF_DYNAMIC64"
    return str(typ).upper()


def _is_text_type(typ: pa.DataType) -> bool:
    return pa.types.is_string(typ) or pa.types.is_large_string(typ)


def _describe(typ: pa.DataType, hint: str) -> str:
    return type_name(typ) + (f" ({hint})" if hint else "")


def _fields(meta: NormMeta, schema: pa.Schema) -> list[tuple[str, Any, pa.DataType, str]]:
    """(stored name, user label, arrow type, hint) of the data columns present in ``schema``."""
    index = set(meta.index_columns)
    data = [f for f in schema if f.name not in index]
    labels, hints = meta.describe([f.name for f in data])
    return [(f.name, u, f.type, h) for f, u, h in zip(data, labels, hints, strict=True)]


def text_like(typ: pa.DataType) -> bool:
    """Whether a column of type ``typ`` is a string column as ArcticDB sees it: strings, bytes,
    a dictionary of strings, or Arrow's null type (a column of None only: ArcticDB stores an
    object column without a value as a string column)."""
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    return (pa.types.is_null(typ) or pa.types.is_string(typ) or pa.types.is_large_string(typ)
            or pa.types.is_binary(typ) or pa.types.is_large_binary(typ))


def refuse_none_with_values(name: Any, a: pa.DataType, b: pa.DataType, what: str = "") -> None:
    """``SchemaException`` when one of two types of data column ``name`` is a column of None
    only and the other holds numbers, bools or times: ArcticDB types the first as a string
    column, which has no common type with the second."""
    if a != b and (pa.types.is_null(a) or pa.types.is_null(b)) and not (text_like(a) and text_like(b)):
        ta, tb = ("UTF_DYNAMIC64" if pa.types.is_null(t) else type_name(t) for t in (a, b))
        raise SchemaException(
            f"E_DESCRIPTOR_MISMATCH No valid common type between TD<type={ta}, dim=0> and "
            f"TD<type={tb}, dim=0> for column {name}{what}: a column of None only is a string "
            "column; give it the other data's dtype (e.g. NaN for floats)"
        )


def common_type(name: Any, a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """The type data column ``name`` takes when data of type ``b`` joins data of type ``a``
    under dynamic schema; ``SchemaException`` when they have none."""
    refuse_none_with_values(name, a, b)
    return _unify_type(name, a, b)


def _unify_type(name: Any, a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """Common type of ``a`` (stored) and ``b`` (new) under dynamic schema."""
    if a == b:
        return a
    if pa.types.is_null(a):
        return b
    if pa.types.is_null(b):
        return a

    def numeric(t: pa.DataType) -> bool:
        return pa.types.is_integer(t) or pa.types.is_floating(t)

    if numeric(a) and numeric(b):
        signed = pa.types.is_signed_integer
        if (a == pa.uint64() and signed(b)) or (b == pa.uint64() and signed(a)):
            # no integer type holds both (numpy would give float64, losing precision): refuse
            raise SchemaException(
                f"E_DESCRIPTOR_MISMATCH No valid common type between {type_name(a)} and {type_name(b)} for "
                f"column {name!r}: no integer type holds every uint64 and negative value; cast the new "
                "data to the stored type"
            )
        res = np.promote_types(a.to_pandas_dtype(), b.to_pandas_dtype())
        return pa.from_numpy_dtype(res)
    stringy = (pa.types.is_string, pa.types.is_large_string)
    if any(f(a) for f in stringy) and any(f(b) for f in stringy):
        return pa.large_string()
    binary = (pa.types.is_binary, pa.types.is_large_binary)
    if any(f(a) for f in binary) and any(f(b) for f in binary):
        return pa.large_binary()
    units = ["s", "ms", "us", "ns"]
    if pa.types.is_timestamp(a) and pa.types.is_timestamp(b):
        unit = max(a.unit, b.unit, key=units.index)
        return pa.timestamp(unit, tz=b.tz)  # the newest write's tz wins, as for the index
    if pa.types.is_duration(a) and pa.types.is_duration(b):
        return pa.duration(max(a.unit, b.unit, key=units.index))
    if pa.types.is_dictionary(a) and pa.types.is_dictionary(b) and a.value_type == b.value_type:
        wider = a.index_type if a.index_type.bit_width >= b.index_type.bit_width else b.index_type
        return pa.dictionary(wider, a.value_type, a.ordered)
    raise SchemaException(
        f"E_DESCRIPTOR_MISMATCH No valid common type between {a} and {b} for column {name!r}; "
        "cast the new data to the stored type"
    )


def _data_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` without NaN-rows companions (which are no part of a symbol's columns)."""
    if not any(is_nan_rows_name(n) for n in schema.names):
        return schema
    return pa.schema([f for f in schema if not is_nan_rows_name(f.name)], metadata=schema.metadata)


def common_schema(
    old: NormMeta,
    old_schema: pa.Schema,
    new: NormMeta,
    new_schema: pa.Schema,
    *,
    dynamic: bool,
    stored_rows: int | None = None,
    new_rows: int | None = None,
) -> pa.Schema | None:
    """Check that new data may be appended to / update a stored symbol; unify the schemas.

    Parameters
    ----------
    old, old_schema : NormMeta, pyarrow.Schema
        The stored version's metadata and table schema.
    new, new_schema : NormMeta, pyarrow.Schema
        The new data's (from :func:`normalize`).
    dynamic : bool
        ``LibraryOptions.dynamic_schema``.
    stored_rows : int, optional
        Row count of the stored version; needed to check that a RangeIndex append is
        contiguous (skipped when ``None``).
    new_rows : int, optional
        Row count of the new data. ``0`` accepts the append whatever its index kind and
        columns (ArcticDB does; the caller still writes a version) and returns ``None``.

    Returns
    -------
    pyarrow.Schema or None
        ``None`` when the new table's schema equals the stored one (nothing to cast).
        Otherwise the schema (index columns first, stored columns in their order, then new
        columns) to which stored segments and the new table should be cast when read /
        combined; columns absent from one side are to be filled by the caller (ints 0,
        floats NaN, others null).

    Raises
    ------
    NormalizationException
        The object kind (Series vs DataFrame) or index kind differ, or a RangeIndex append
        is not contiguous or has another step.
    StreamDescriptorMismatch
        Static schema: column names, order or dtypes differ (the message lists them with
        ``-`` stored / ``+`` new); either schema: index names differ.
    SchemaException
        Dynamic schema: a column's types have no common type (str vs number, bool vs number).
    """
    old_schema, new_schema = _data_schema(old_schema), _data_schema(new_schema)
    _check_object_kind(old, new)
    if new_rows == 0:
        return None  # ArcticDB accepts an empty append whatever its index and columns
    if old.kind == "ndarray" and new.kind == "ndarray" and old.shape and new.shape \
            and tuple(old.shape[1:]) != tuple(new.shape[1:]):
        raise NormalizationException(
            "E_WRONG_SHAPE The appending NDArray must have the same shape as the existing (excl. the first "
            f"dimension): stored {tuple(old.shape)}, new {tuple(new.shape)}"
        )
    if old.kind == "series" and stored_rows == 0 and old.written_empty and old.index_kind != new.index_kind:
        # a Series written with no row has a timestamp index of no value: under dynamic schema
        # the new rows' index replaces it (ArcticDB); under static schema the descriptors differ
        if not dynamic:
            raise StreamDescriptorMismatch(
                f"The index of the new data ({new.index_kind}) differs from the stored one ({old.index_kind}, "
                "written with no row); under static schema it must match: write the symbol instead of appending"
            )
    else:
        _check_index(old, new, stored_rows)
    old_f, new_f = _fields(old, old_schema), _fields(new, new_schema)
    index_fields = [f for f in old_schema if f.name in set(old.index_columns)]
    new_index = {f.name: f for f in new_schema if f.name in set(new.index_columns)}
    if not dynamic:
        if len(old_f) != len(new_f) or not all(
            _static_compatible(a, b) for a, b in zip(old_f, new_f, strict=True)
        ):
            _raise_mismatch(old_f, new_f)
        static_index = []
        for f in index_fields:
            g = new_index.get(f.name)
            if g is not None and g.type != f.type:
                if not (pa.types.is_null(f.type) or pa.types.is_null(g.type)):
                    raise StreamDescriptorMismatch(
                        f"The index column {f.name!r} has type {g.type} in the new data but {f.type} "
                        "in the stored data; cast the index to match"
                    )
                # a level stored without a value (an empty frame) takes the new data's type, as
                # a data column that was all None does
                f = pa.field(f.name, _unify_type(f.name, f.type, g.type))
            static_index.append(f)
        fields = [
            pa.field(n, _unify_type(u, ta, tb))
            for (n, u, ta, _), (_, _, tb, _) in zip(old_f, new_f, strict=True)
        ]
        out = pa.schema([*static_index, *fields])
        return None if out == _plain(old_schema) and out == _plain(new_schema) else out
    unified_index = []
    for f in index_fields:
        g = new_index.get(f.name)
        unified_index.append(
            f if g is None else pa.field(f.name, _unify_type(f.name, f.type, g.type))
        )
    new_by_name = {n: (u, t) for n, u, t, _ in new_f}
    fields = []
    if stored_rows == 0:
        # a version of no row holds no value of any column: the new data's columns and types
        # make the schema (ArcticDB), stored columns the new data lacks are not kept
        fields = [pa.field(n, t) for n, _, t, _ in new_f]
        new_by_name = {}
        old_f = []
    for n, u, t, _ in old_f:
        if n in new_by_name:
            nu, nt = new_by_name.pop(n)
            if not _labels_equal(u, nu):
                raise SchemaException(
                    f"E_DESCRIPTOR_MISMATCH Column labels {u!r} (stored) and {nu!r} (new) map to the "
                    "same stored name; rename one of them"
                )
            t = common_type(u, t, nt)
        fields.append(pa.field(n, t))
    for n, _, t, _ in new_f:
        if n in new_by_name:
            fields.append(pa.field(n, t))
    out = pa.schema([*unified_index, *fields])
    return None if out == _plain(new_schema) and out == _plain(old_schema) else out


def _logical_hint(typ: pa.DataType, hint: str) -> str:
    """The part of a hint that matters for static-schema equality.

    Whether a string column's missing values were None or NaN, and whether an all-missing
    column was typed, do not change its dtype (ArcticDB stores both as a string column)."""
    base = hint.partition(":")[0]
    if base == "tz":  # which library made the tz object is not part of the dtype
        return ""
    if base == "object" and (
        pa.types.is_null(typ)
        or pa.types.is_string(typ)
        or pa.types.is_large_string(typ)
        or pa.types.is_binary(typ)
        or pa.types.is_large_binary(typ)
    ):
        return ""
    return base


def _static_compatible(
    a: tuple[str, Any, pa.DataType, str], b: tuple[str, Any, pa.DataType, str]
) -> bool:
    """Same column under static schema: same name and label, same dtype as ArcticDB sees it
    (timestamps of any unit / tz are one type; an all-None column is a string column)."""
    (na, ua, ta, ha), (nb, ub, tb, hb) = a, b
    if na != nb or not _labels_equal(ua, ub):
        return False
    if _logical_hint(ta, ha) != _logical_hint(tb, hb):
        return False
    if ta == tb or (pa.types.is_timestamp(ta) and pa.types.is_timestamp(tb)):
        return True
    text = (pa.types.is_string, pa.types.is_large_string)
    data = (pa.types.is_binary, pa.types.is_large_binary)
    for kinds in (text, data):
        if (pa.types.is_null(ta) and any(f(tb) for f in kinds)) or (
            pa.types.is_null(tb) and any(f(ta) for f in kinds)
        ):
            return True
    return False


def _plain(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, f.type) for f in schema])


def _labels_equal(a: Any, b: Any) -> bool:
    """Same column label: str only equals str; 1 == 1.0; NaN equals NaN."""
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _raise_mismatch(
    old_f: list[tuple[str, Any, pa.DataType, str]], new_f: list[tuple[str, Any, pa.DataType, str]]
) -> None:
    olds = [f"{u!r}: {_describe(t, h)}" for _, u, t, h in old_f]
    news = [f"{u!r}: {_describe(t, h)}" for _, u, t, h in new_f]
    lines = [f"-{x}" for x in olds if x not in news] + [f"+{x}" for x in news if x not in olds]
    if not lines:
        lines = [
            "(same columns in a different order)",
            "-" + ", ".join(olds),
            "+" + ", ".join(news),
        ]
    raise StreamDescriptorMismatch(
        "E_DESCRIPTOR_MISMATCH The columns of the new data differ from the stored ones "
        "(static schema: names, order and dtypes must be identical):\n"
        + "\n".join(lines)
        + "\nCast or reorder the new data to match, or use a library with dynamic_schema=True."
    )


def common_meta(old: NormMeta, new: NormMeta, schema: pa.Schema | None) -> NormMeta:
    """The NormMeta of a version made by appending / updating ``new`` onto ``old``.

    Parameters
    ----------
    old, new : NormMeta
        Stored and new metadata (already checked by :func:`common_schema`).
    schema : pyarrow.Schema or None
        What :func:`common_schema` returned (``None``: the stored columns are kept).

    Returns
    -------
    NormMeta
        ``old``'s kind, index and RangeIndex start, with the newest write's tz (and the
        finer of the two index units), and the
        columns of ``schema`` (labels and hints from ``new`` where it has the column, else from
        ``old``).
    """
    if schema is None:
        cols = old.columns if old.columns or not new.columns else new.columns
    else:
        index = set(old.index_columns)
        cols = tuple(f.name for f in schema if f.name not in index)
    old_info = dict(
        zip(old.columns, zip(*old.describe(list(old.columns)), strict=True), strict=True)
    )
    new_info = dict(
        zip(new.columns, zip(*new.describe(list(new.columns)), strict=True), strict=True)
    )
    pairs = [new_info.get(c) or old_info.get(c) or (c, "") for c in cols]
    users = [p[0] for p in pairs]
    hints = [p[1] for p in pairs]
    units = ["s", "ms", "us", "ns"]
    same_index = new.index_kind == old.index_kind
    return dataclasses.replace(
        old,
        tz=new.tz if same_index else old.tz,
        tz_library=new.tz_library if same_index else old.tz_library,
        index_unit=max(old.index_unit, new.index_unit, key=units.index)
        if same_index
        else old.index_unit,
        columns=tuple(cols),
        user_columns=tuple(users),
        column_hints=tuple(hints),
        shape=None if old.kind != "ndarray" else old.shape,
        # a RangeIndex's name is the newest write's (ArcticDB; it is no stored column)
        index_names=new.index_names if old.index_kind == new.index_kind == "range" else old.index_names,
    )


def sortedness(table: pa.Table, meta: NormMeta) -> str:
    """How the datetime index of ``table`` is ordered.

    Returns
    -------
    str
        ``"ASCENDING"`` (ties allowed; also for 0 or 1 rows), ``"DESCENDING"``, ``"UNSORTED"``
        (a NaT counts as unsorted) or ``"UNKNOWN"`` (not a datetime index).
    """
    if not meta.index_columns or not meta.index_hints or meta.index_hints[0] != "dt":
        return "UNKNOWN"
    col = table.column(meta.index_columns[0])
    if col.null_count:
        return "UNSORTED"
    values = col.to_numpy().view("i8")
    if len(values) < 2:
        return "ASCENDING"
    if np.all(values[1:] >= values[:-1]):
        return "ASCENDING"
    if np.all(values[1:] <= values[:-1]):
        return "DESCENDING"
    return "UNSORTED"
