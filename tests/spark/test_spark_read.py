"""Reads: time travel, column / date-range pruning (segments fetched), filter pushdown."""

from __future__ import annotations

import glob
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyspark")

import spark_connector  # noqa: E402
from spark_connector.source import ArcticLitePushdownReader, ReadOptions  # noqa: E402

N = 1000  # 10 row groups of 100 rows


def _frame(n: int = N, start: str = "2024-01-01") -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {"a": np.arange(n), "g": (np.arange(n) % 7).astype("int32"), "s": [f"k{i % 5}" for i in range(n)],
         "f": rng.random(n), "b": np.arange(n) % 3 == 0},
        index=pd.date_range(start, periods=n, freq="h", tz="UTC", name="ts"),
    )


def _fetched(metrics: Path) -> int:
    """Segments the executors fetched, from the reader's ``metrics_dir`` records."""
    total = sum(json.loads(Path(p).read_text())["segments"] for p in glob.glob(str(metrics / "*.json")))
    for p in glob.glob(str(metrics / "*.json")):
        Path(p).unlink()
    return total


def test_as_of_version_snapshot_and_time(lib: Any, reader: Any) -> None:
    lib.write("tt", _frame(10))
    lib.snapshot("snap0")
    time.sleep(0.01)
    lib.append("tt", _frame(5, start="2024-02-01"))
    versions = lib.list_versions("tt")
    t1 = max(info["date"] if isinstance(info, dict) else info.date for info in versions.values())
    assert reader().load("tt").count() == 15
    assert reader().option("as_of", "0").load("tt").count() == 10
    assert reader().option("as_of", "1").load("tt").count() == 15
    assert reader().option("as_of", "snap0").load("tt").count() == 10
    before = (pd.Timestamp(t1) - pd.Timedelta(1, "ns")).isoformat()
    assert reader().option("as_of", before).load("tt").count() == 10
    assert reader().option("as_of", pd.Timestamp(t1).isoformat()).load("tt").count() == 15


def test_column_and_date_range_pruning_fetch_fewer_segments(tmp_path: Path, spark: Any, lmdb_uri: str) -> None:
    import arcticlite as adb

    lib = adb.Arctic(lmdb_uri).get_library(
        "lib", create_if_missing=True,
        library_options=adb.LibraryOptions(rows_per_segment=100, columns_per_segment=2))
    lib.write("p", _frame())
    metrics = tmp_path / "metrics"
    metrics.mkdir()

    def rd() -> Any:
        return (spark.read.format("arcticlite").option("uri", lmdb_uri).option("library", "lib")
                .option("metrics_dir", str(metrics)))

    full = rd().load("p")
    assert full.count() == N
    assert _fetched(metrics) == 30  # 10 row groups x 3 column slices (a,g | s,f | b)
    cols = rd().option("columns", "a").load("p")
    assert cols.columns == ["ts", "a"]
    assert cols.agg({"a": "sum"}).collect()[0][0] == sum(range(N))
    assert _fetched(metrics) == 10  # one column slice per row group
    day = rd().option("date_range", "2024-01-02,2024-01-02 23:59:59").load("p")
    assert day.count() == 24
    assert _fetched(metrics) == 3  # hours 24-47: row group 0 only, its 3 column slices
    late = rd().option("pushdown", "true").load("p").filter("ts >= '2024-02-10'")  # pushed: row group 9
    assert late.count() == 40  # hours 960-999
    expected = 3 if spark_connector.pushdown_supported(spark) else 30
    assert _fetched(metrics) == expected
    # partitions: whole row groups, cut by rows as well as by stored bytes
    rd().option("partition_rows", "250").load("p").write.format("noop").mode("overwrite").save()
    records = [json.loads(Path(p).read_text()) for p in glob.glob(str(metrics / "*.json"))]
    assert sorted(r["rows"] for r in records) == [100, 300, 300, 300]


PREDICATES = [
    "a >= 950",
    "a > 100 AND a <= 250 AND s = 'k3'",
    "g IN (1, 5) AND a < 400",
    "s IN ('k0', 'k4') AND b = true",
    "ts > '2024-01-10 05:00:00' AND ts <= '2024-01-12 00:00:00'",
    "ts = '2024-01-03 07:00:00'",
    "ts < '2024-01-01 03:00:00' OR a = 999",
    "f > 0.5 AND a < 300",
    "NOT (a = 3) AND a < 10",
    "s LIKE 'k1%' AND a BETWEEN 10 AND 500",
    "s IS NULL",
    "s IS NOT NULL AND a < 20",
    "ts IS NOT NULL AND a >= 990",
]


def _canon(rows: list[Any]) -> list[tuple[Any, ...]]:
    """Rows as sortable tuples, NaN made comparable."""
    return sorted(tuple("nan" if isinstance(v, float) and v != v else v for v in r) for r in rows)


def test_pushdown_equals_no_pushdown(spark: Any, lib: Any, reader: Any) -> None:
    df = _frame()
    df.loc[df.index[5], "f"] = np.nan  # Spark orders NaN above every number: floats are not pushed
    df.loc[df.index[[3, 500, 501]], "s"] = None  # IS NULL on strings is pushed
    lib.write("pd", df)
    sizes = []
    for pred in PREDICATES:  # one load() per filtered query: see docs/spark.md on pushdown
        a = _canon(reader().option("pushdown", "true").load("pd").filter(pred).collect())
        assert a == _canon(reader().load("pd").filter(pred).collect()), pred
        sizes.append(len(a))
    assert sizes[0] == 50 and sizes[5] == 1 and all(sizes), sizes


def test_pushed_filters_prune_segments_at_planning(lib: Any, lmdb_uri: str) -> None:
    from pyspark.sql import datasource as ds
    from pyspark.sql import types as T

    lib.write("pl", _frame())
    options = {"uri": lmdb_uri, "library": "lib", "path": "pl", "pushdown": "true"}
    schema = T.StructType([T.StructField("ts", T.TimestampType()), T.StructField("a", T.LongType()),
                           T.StructField("f", T.DoubleType())])
    rd = ArcticLitePushdownReader(ReadOptions.parse(options), schema)
    filters = [ds.GreaterThanOrEqual(("a",), 900), ds.LessThan(("f",), 0.5), ds.IsNotNull(("a",))]
    rest = list(rd.pushFilters(filters))
    assert rest == [filters[1], filters[2]] and rest[0] is filters[1]  # the same objects, by reference
    plan = rd.plan()
    assert (plan.segments, plan.segments_considered) == (1, 10)
    rd2 = ArcticLitePushdownReader(ReadOptions.parse(options), schema)
    import datetime as dt

    list(rd2.pushFilters([ds.LessThan(("ts",), dt.datetime(2024, 1, 2, tzinfo=dt.UTC))]))
    assert rd2.plan().segments == 1
    # IS NULL / IS NOT NULL: pushed on strings and timestamps, left to Spark on numbers (NaN)
    schema3 = T.StructType([*schema.fields, T.StructField("s", T.StringType())])
    rd3 = ArcticLitePushdownReader(ReadOptions.parse(options), schema3)
    nulls = [ds.IsNull(("s",)), ds.IsNotNull(("ts",)), ds.IsNull(("f",)), ds.IsNotNull(("a",))]
    assert list(rd3.pushFilters(nulls)) == nulls[2:]
    assert rd3.plan().segments == 0  # no string is missing: every segment pruned by its null count


def test_pushdown_exact_at_sub_microsecond_timestamps(lib: Any, reader: Any) -> None:
    idx = pd.DatetimeIndex(["2024-01-01 00:00:00.000000999", "2024-01-01 00:00:00.000001000",
                            "2024-01-01 00:00:00.000001001", "2024-01-01 00:00:00.000002"], name="t")
    lib.write("sub", pd.DataFrame({"a": [0, 1, 2, 3]}, index=idx))
    for pred in ["t > '2024-01-01 00:00:00.000001'", "t >= '2024-01-01 00:00:00.000001'",
                 "t < '2024-01-01 00:00:00.000001'", "t <= '2024-01-01 00:00:00.000001'",
                 "t = '2024-01-01 00:00:00.000001'"]:
        pushed = reader().option("pushdown", "true").load("sub").filter(pred).collect()
        assert sorted(pushed) == sorted(reader().load("sub").filter(pred).collect()), pred


def test_user_schema_prunes_columns(spark: Any, lib: Any, lmdb_uri: str) -> None:
    lib.write("us", _frame(10))
    df = (spark.read.format("arcticlite").schema("ts timestamp, s string").option("uri", lmdb_uri)
          .option("library", "lib").load("us"))
    assert df.columns == ["ts", "s"] and df.count() == 10
    assert df.filter("s = 'k1'").count() == 2


def test_empty_scan_and_missing_symbol(lib: Any, reader: Any) -> None:
    lib.write("e", _frame(10))
    assert reader().option("date_range", "2030-01-01,").load("e").count() == 0
    with pytest.raises(Exception, match="nosuch|No"):
        reader().load("nosuch").count()
