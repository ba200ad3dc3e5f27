"""Type mapping between arcticlite's stored Arrow types and Spark SQL types.

Read direction (:func:`spark_type`): every stored Arrow type maps to one Spark type, or a
:class:`UnsupportedTypeError` names the column. Spark holds timestamps and day-time intervals
in microseconds: stored nanosecond values are floored to the microsecond on read (option
``nanoseconds="error"`` raises instead when a value has sub-microsecond digits).

Write direction (:func:`to_store`): the Arrow batches Spark hands the writer are stored as
they are, except timestamps and intervals, which are widened to nanoseconds (arcticlite's
and pandas' native unit), so a symbol written by Spark reads back through ``Library.read``
like one written from pandas.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T

#: Spark's Arrow conversion of a schema (internal to PySpark; its signature changed in 4.1).
_spark_to_arrow_schema: Any
try:  # pragma: no cover - depends on the installed pyspark
    from pyspark.sql.pandas.types import to_arrow_schema as _spark_to_arrow_schema
except ImportError:  # pragma: no cover
    _spark_to_arrow_schema = None


class UnsupportedTypeError(TypeError):
    """A stored column has an Arrow type Spark cannot represent."""


def spark_type(t: pa.DataType, column: str) -> T.DataType:
    """The Spark type of a stored Arrow type ``t`` of ``column`` (read direction)."""
    if pa.types.is_boolean(t):
        return T.BooleanType()
    if pa.types.is_int8(t):
        return T.ByteType()
    if pa.types.is_int16(t) or pa.types.is_uint8(t):
        return T.ShortType()
    if pa.types.is_int32(t) or pa.types.is_uint16(t):
        return T.IntegerType()
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return T.LongType()
    if pa.types.is_uint64(t):
        return T.DecimalType(20, 0)  # exact: 0 … 2**64-1
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return T.FloatType()
    if pa.types.is_float64(t):
        return T.DoubleType()
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise UnsupportedTypeError(f"column {column!r}: {t} has precision > 38, which Spark cannot hold")
        return T.DecimalType(t.precision, t.scale)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return T.StringType()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) \
            or pa.types.is_binary_view(t):
        return T.BinaryType()
    if pa.types.is_dictionary(t):
        return spark_type(t.value_type, column)
    if pa.types.is_date(t):
        return T.DateType()
    if pa.types.is_timestamp(t):
        return T.TimestampType() if t.tz is not None else T.TimestampNTZType()
    if pa.types.is_duration(t):
        return T.DayTimeIntervalType(T.DayTimeIntervalType.DAY, T.DayTimeIntervalType.SECOND)
    if pa.types.is_null(t):
        return T.NullType()
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) \
            or pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return T.ArrayType(spark_type(t.value_type, f"{column}[]"), containsNull=True)
    if pa.types.is_map(t):
        return T.MapType(spark_type(t.key_type, f"{column}.key"), spark_type(t.item_type, f"{column}.value"),
                         valueContainsNull=True)
    if pa.types.is_struct(t):
        return T.StructType([T.StructField(t.field(i).name, spark_type(t.field(i).type, f"{column}.{t.field(i).name}"))
                             for i in range(t.num_fields)])
    raise UnsupportedTypeError(f"column {column!r}: arcticlite type {t} has no Spark type; "
                               "exclude it with .option('columns', ...)")


def spark_schema(schema: pa.Schema) -> T.StructType:
    """The Spark schema of a scan's Arrow schema (every field nullable)."""
    return T.StructType([T.StructField(f.name, spark_type(f.type, f.name), nullable=True) for f in schema])


def arrow_schema(schema: T.StructType) -> pa.Schema:
    """The exact Arrow schema Spark expects of the batches a reader yields."""
    if _spark_to_arrow_schema is not None:
        try:
            return _spark_to_arrow_schema(schema, timezone="UTC")
        except TypeError:  # pyspark 4.0: no timezone argument
            return _spark_to_arrow_schema(schema)
    raise ImportError("pyspark.sql.pandas.types.to_arrow_schema is missing")  # pragma: no cover


def _floor_to_us(arr: pa.Array, target: pa.DataType, column: str, strict: bool) -> pa.Array:
    """Nanoseconds → microseconds, floored (Spark's own ns → µs rule), or strict."""
    unit = arr.type.unit
    if unit in ("s", "ms", "us"):
        return pc.cast(arr, target)
    ints = pc.cast(arr, pa.int64())
    values = pc.fill_null(ints, 0).to_numpy(zero_copy_only=False)
    if strict and np.any(values % 1000):
        raise ValueError(f"column {column!r} holds nanosecond values that Spark's microsecond "
                         "timestamps cannot hold (option nanoseconds='truncate' floors them)")
    floored = pa.array(np.floor_divide(values, 1000), type=pa.int64(),
                       mask=ints.is_null().to_numpy(zero_copy_only=False) if ints.null_count else None)
    return floored.view(target)


def conform(arr: Any, target: pa.DataType, column: str, strict_ns: bool) -> pa.Array:
    """Cast one stored column to the Arrow type Spark expects (no per-row Python)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.type.equals(target):
        return arr
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if (pa.types.is_timestamp(arr.type) and pa.types.is_timestamp(target)) or \
            (pa.types.is_duration(arr.type) and pa.types.is_duration(target)):
        if pa.types.is_timestamp(target) and target.tz is not None and arr.type.tz is None:
            raise UnsupportedTypeError(f"column {column!r}: naive timestamps read as TimestampType; "
                                       "use TimestampNTZType in the schema")
        return _floor_to_us(arr, target, column, strict_ns)
    try:
        return pc.cast(arr, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise UnsupportedTypeError(f"column {column!r}: cannot read {arr.type} as {target}: {exc}") from exc


def to_store(batch: pa.RecordBatch | pa.Table) -> pa.Table:
    """A batch from Spark as the table to stage: timestamps / intervals in nanoseconds."""
    table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
    cols = []
    fields = []
    for f, col in zip(table.schema, table.columns, strict=True):
        t = f.type
        if pa.types.is_timestamp(t) and t.unit != "ns":
            t = pa.timestamp("ns", tz=t.tz)
        elif pa.types.is_duration(t) and t.unit != "ns":
            t = pa.duration("ns")
        elif pa.types.is_large_string(t):
            t = pa.string()
        if t is not f.type:
            try:
                col = pc.cast(col, t)  # safe: out of the ns range raises
            except pa.ArrowInvalid as exc:
                raise ValueError(f"column {f.name!r}: {exc} (arcticlite stores timestamps in nanoseconds, "
                                 "years 1678-2261)") from exc
        cols.append(col)
        fields.append(pa.field(f.name, t, nullable=True))
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))
