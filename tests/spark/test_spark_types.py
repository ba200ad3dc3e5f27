"""Type mapping, both ways: every stored type read by Spark, every Spark type ingested."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from pyspark.sql import types as T  # noqa: E402

N = 6


def _stored_table() -> pa.Table:
    idx = pd.date_range("2024-01-01", periods=N, freq="h")
    return pa.table({
        "ts": pa.array(idx.values),  # becomes the (naive) index
        "i8": pa.array(np.arange(N, dtype="int8") - 3),
        "i16": pa.array(np.arange(N, dtype="int16") * 1000),
        "i32": pa.array(np.arange(N, dtype="int32") * 100_000),
        "i64": pa.array(np.arange(N, dtype="int64") * 10**12),
        "u8": pa.array(np.full(N, 255, dtype="uint8")),
        "u16": pa.array(np.full(N, 65535, dtype="uint16")),
        "u32": pa.array(np.full(N, 2**32 - 1, dtype="uint32")),
        "u64": pa.array(np.full(N, 2**64 - 1, dtype="uint64")),
        "f16": pa.array(np.arange(N, dtype="float16")),
        "f32": pa.array(np.arange(N, dtype="float32") / 4),
        "f64": pa.array([0.5, np.nan, np.inf, -1.0, None, 2.0]),
        "b": pa.array([True, False, None, True, False, True]),
        "s": pa.array(["a", None, "ü", "", "long " * 10, "x"]),
        "ls": pa.array(["p", "q", None, "r", "s", "t"], pa.large_string()),
        "cat": pa.array(["a", "b", "a", None, "b", "a"]).dictionary_encode(),
        "bin": pa.array([b"\x00", None, b"ab", b"", b"c", b"d"]),
        "n_i64": pa.array([1, None, 3, None, 5, 6], pa.int64()),
        "dec": pa.array([decimal.Decimal("1.25"), None] + [decimal.Decimal("-3.50")] * 4, pa.decimal128(10, 2)),
        "date": pa.array([dt.date(2024, 1, d) for d in range(1, N + 1)], pa.date32()),
        "t_ns": pa.array(pd.date_range("2000-01-01", periods=N, freq="D").values),
        "t_tz": pa.array(pd.date_range("2000-01-01", periods=N, freq="D", tz="US/Eastern")),
        "dur": pa.array(pd.to_timedelta(np.arange(N), unit="s").values),
        "l_i": pa.array([[1, 2], [], None, [3], [4, None], [5]], pa.list_(pa.int64())),
        "l_s": pa.array([["a"], ["b", "c"], [], None, ["d"], ["e"]]),
        "st": pa.array([{"x": i, "y": str(i)} for i in range(N)]),
    })


SPARK_TYPES = {
    "ts": T.TimestampNTZType(), "i8": T.ByteType(), "i16": T.ShortType(), "i32": T.IntegerType(),
    "i64": T.LongType(), "u8": T.ShortType(), "u16": T.IntegerType(), "u32": T.LongType(),
    "u64": T.DecimalType(20, 0), "f16": T.FloatType(), "f32": T.FloatType(), "f64": T.DoubleType(),
    "b": T.BooleanType(), "s": T.StringType(), "ls": T.StringType(), "cat": T.StringType(),
    "bin": T.BinaryType(), "n_i64": T.LongType(), "dec": T.DecimalType(10, 2), "date": T.DateType(),
    "t_ns": T.TimestampNTZType(), "t_tz": T.TimestampType(),
    "dur": T.DayTimeIntervalType(T.DayTimeIntervalType.DAY, T.DayTimeIntervalType.SECOND),
    "l_i": T.ArrayType(T.LongType()), "l_s": T.ArrayType(T.StringType()),
    "st": T.StructType([T.StructField("x", T.LongType()), T.StructField("y", T.StringType())]),
}


def _py(v: Any) -> Any:
    """Python value of an Arrow/pandas scalar, comparable with what Spark collects."""
    if isinstance(v, float) and np.isnan(v):
        return "nan"
    if isinstance(v, pd.Timestamp):
        return v.to_pydatetime()
    if isinstance(v, dict):
        return tuple(v.values())
    return v


def test_stored_types_read_by_spark(lib: Any, reader: Any) -> None:
    table = _stored_table()
    lib.write("types", table, index_column="ts")
    df = reader().load("types")
    assert {f.name: f.dataType for f in df.schema.fields} == SPARK_TYPES
    rows = df.collect()
    got = {name: [_py(r[name]) for r in rows] for name in SPARK_TYPES}
    exp = table.to_pydict()
    for name in ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "b", "s", "ls", "cat", "bin", "n_i64",
                 "dec", "date", "l_i", "l_s", "t_ns", "ts"]:
        assert got[name] == [_py(v) for v in exp[name]], name
    assert got["u64"] == [decimal.Decimal(2**64 - 1)] * N
    assert got["f16"] == [float(x) for x in range(N)]
    assert got["f64"] == [0.5, "nan", float("inf"), -1.0, None, 2.0]
    assert got["t_tz"] == [v.astimezone(dt.UTC).replace(tzinfo=None) for v in exp["t_tz"]]  # session TZ UTC
    assert got["dur"] == [dt.timedelta(seconds=i) for i in range(N)]
    assert got["st"] == [(i, str(i)) for i in range(N)]


def test_tz_aware_index_is_timestamp_and_naive_is_ntz(lib: Any, reader: Any) -> None:
    lib.write("aware", pd.DataFrame({"a": [1, 2]}, index=pd.date_range("2024-01-01", periods=2, tz="UTC")))
    lib.write("naive", pd.DataFrame({"a": [1, 2]}, index=pd.date_range("2024-01-01", periods=2, name="t")))
    lib.write("range", pd.DataFrame({"a": [1, 2]}))
    assert reader().load("aware").schema["index"].dataType == T.TimestampType()
    assert reader().load("naive").schema["t"].dataType == T.TimestampNTZType()
    assert reader().load("range").schema.names == ["a"]


def test_nanoseconds_are_floored_or_refused(lib: Any, reader: Any) -> None:
    idx = pd.DatetimeIndex([pd.Timestamp("1969-12-31 23:59:59.999999999"), pd.Timestamp("2024-01-01 00:00:00.000001500")],
                           name="t")
    lib.write("ns", pd.DataFrame({"a": [1, 2]}, index=idx))
    rows = reader().load("ns").orderBy("a").collect()
    assert [r["t"] for r in rows] == [dt.datetime(1969, 12, 31, 23, 59, 59, 999999), dt.datetime(2024, 1, 1, 0, 0, 0, 1)]
    with pytest.raises(Exception, match="nanosecond"):
        reader().option("nanoseconds", "error").load("ns").collect()


def test_unsupported_type_names_the_column(lib: Any, reader: Any) -> None:
    t = pa.table({"a": pa.array([1, 2]), "clock": pa.array([1, 2], pa.time32("s"))})
    lib.write("odd", t)
    with pytest.raises(Exception, match="clock"):
        reader().load("odd").schema  # noqa: B018
    assert reader().option("columns", "a").load("odd").count() == 2


def test_spark_types_ingested(spark: Any, lib: Any, reader: Any, writer: Any) -> None:
    schema = T.StructType([
        T.StructField("ts", T.TimestampType()), T.StructField("ntz", T.TimestampNTZType()),
        T.StructField("i8", T.ByteType()), T.StructField("i16", T.ShortType()), T.StructField("i32", T.IntegerType()),
        T.StructField("i64", T.LongType()), T.StructField("f32", T.FloatType()), T.StructField("f64", T.DoubleType()),
        T.StructField("b", T.BooleanType()), T.StructField("s", T.StringType()), T.StructField("bin", T.BinaryType()),
        T.StructField("dec", T.DecimalType(12, 3)), T.StructField("d", T.DateType()),
        T.StructField("dur", T.DayTimeIntervalType(T.DayTimeIntervalType.DAY, T.DayTimeIntervalType.SECOND)),
        T.StructField("arr", T.ArrayType(T.IntegerType())), T.StructField("arr_s", T.ArrayType(T.StringType())),
        T.StructField("st", T.StructType([T.StructField("x", T.LongType()), T.StructField("y", T.StringType())])),
    ])
    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    data = [
        (base + dt.timedelta(minutes=i), dt.datetime(2020, 1, 1) + dt.timedelta(microseconds=i), i - 2, i * 300,
         i * 70000, i * 10**10, i / 2, i / 3 if i != 2 else None, i % 2 == 0, f"s{i}" if i != 3 else None,
         bytes([i]), decimal.Decimal(i) / 8, dt.date(2024, 1, 1 + i), dt.timedelta(seconds=i, microseconds=7),
         [i, None] if i else None, [f"a{i}"], (i, f"y{i}"))
        for i in range(5)
    ]
    df = spark.createDataFrame(data, schema)
    writer(df).option("index_column", "ts").mode("overwrite").save("ingest")
    back = reader().load("ingest")
    assert back.schema == schema
    assert sorted(back.collect()) == sorted(df.collect())
    stored = lib.read("ingest").data  # arcticlite's own reader: a UTC index in nanoseconds
    assert str(stored.index.dtype) == "datetime64[ns, UTC]" and stored.index.name == "ts"
    assert list(stored["i64"]) == [i * 10**10 for i in range(5)]
