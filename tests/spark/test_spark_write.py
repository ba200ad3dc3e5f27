"""Writes: overwrite / append, index column, interop with Library, failures, concurrency, S3."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyspark")

import arcticlite as adb  # noqa: E402
import spark_connector  # noqa: E402
from spark_connector.source import (  # noqa: E402
    JOB_PREFIX,
    ArcticLiteWriter,
    StagedMessage,
    WriteOptions,
    new_job_tag,
)


def _events(spark: Any, start: int, n: int, parts: int = 2) -> Any:
    return (spark.range(start, start + n, numPartitions=parts)
            .selectExpr("id", "timestamp_seconds(id * 60) AS ts", "cast(id % 7 AS int) AS g",
                        "concat('s', cast(id % 5 AS string)) AS s", "id / 3.0d AS x"))


def test_overwrite_append_and_index_column(spark: Any, lib: Any, reader: Any, writer: Any) -> None:
    writer(_events(spark, 0, 1000)).option("index_column", "ts").mode("overwrite").save("ev")
    writer(_events(spark, 1000, 500)).option("index_column", "ts").mode("append").save("ev")
    df = lib.read("ev").data
    assert len(df) == 1500 and df.index.name == "ts" and df.index.is_monotonic_increasing
    assert list(df["id"]) == list(range(1500))
    assert [v.version for v in lib.list_versions("ev")] == [1, 0] or len(lib.list_versions("ev")) == 2
    back = reader().load("ev")
    assert back.columns == ["ts", "id", "g", "s", "x"] and back.count() == 1500
    writer(_events(spark, 0, 10)).option("index_column", "ts").mode("overwrite").save("ev")
    assert len(lib.read("ev").data) == 10
    assert reader().option("as_of", "1").load("ev").count() == 1500  # old versions stay readable


def test_append_before_the_last_row_fails_cleanly(spark: Any, lib: Any, writer: Any) -> None:
    writer(_events(spark, 100, 100)).option("index_column", "ts").mode("overwrite").save("o")
    with pytest.raises(Exception, match="E_UNSORTED_DATA|before the last"):
        writer(_events(spark, 0, 10)).option("index_column", "ts").mode("append").save("o")
    assert len(lib.list_versions("o")) == 1 and lib.get_staged_symbols() == []


def test_interleaved_partitions_are_sorted_on_commit(spark: Any, lib: Any, writer: Any) -> None:
    df = _events(spark, 0, 2000).repartition(3, "g")  # every partition spans the whole range
    writer(df).option("index_column", "ts").option("stage_rows", "300").mode("overwrite").save("il")
    out = lib.read("il").data
    assert len(out) == 2000 and out.index.is_monotonic_increasing and list(out["id"]) == list(range(2000))


def test_range_index_keeps_partition_order(spark: Any, lib: Any, writer: Any) -> None:
    writer(_events(spark, 0, 3000, parts=3)).mode("overwrite").save("ri")
    out = lib.read("ri").data
    assert isinstance(out.index, pd.RangeIndex) and list(out["id"]) == list(range(3000))


def test_library_write_read_by_spark_and_back(spark: Any, lib: Any, reader: Any, writer: Any) -> None:
    frame = pd.DataFrame({"px": np.linspace(1, 2, 300), "q": np.arange(300, dtype="int32"), "sym": ["A", "B", "C"] * 100},
                         index=pd.date_range("2024-03-01", periods=300, freq="s", tz="UTC", name="time"))
    lib.write("lw", frame)
    sdf = reader().load("lw")
    assert sdf.count() == 300
    writer(sdf).option("index_column", "time").mode("overwrite").save("sw")
    pd.testing.assert_frame_equal(lib.read("sw").data, frame, check_freq=False)


def test_failed_task_leaves_no_version_and_no_staged_data(spark: Any, lib: Any, writer: Any) -> None:
    writer(_events(spark, 0, 100)).option("index_column", "ts").mode("overwrite").save("f")
    # another job staging the same symbol meanwhile (a Spark write's tag, and an untagged one)
    later = pd.DataFrame({"id": [10_000, 10_001], "g": np.array([0, 1], dtype="int32"), "s": ["s0", "s1"],
                          "x": [0.5, 1.5]},
                         index=pd.DatetimeIndex(["2100-01-01", "2100-01-02"], tz="UTC", name="ts"))
    other = lib.stage("f", later.iloc[:1], job=new_job_tag())
    untagged = lib.stage("f", later.iloc[1:])
    from pyspark.sql import functions as F

    bad = _events(spark, 100, 4000, parts=4).withColumn(
        "id", F.expr("CASE WHEN id = 3900 THEN CAST(raise_error('injected failure') AS BIGINT) ELSE id END"))
    with pytest.raises(Exception, match="injected failure"):
        writer(bad).option("index_column", "ts").option("stage_rows", "500").mode("append").save("f")
    assert len(lib.list_versions("f")) == 1 and len(lib.read("f").data) == 100
    # the failed job's abort deleted its own entries only: the other job's are still there
    lib.finalize_staged_data("f", mode="append", stage_results=[other, untagged])
    assert list(lib.read("f").data["id"].iloc[-2:]) == [10_000, 10_001]
    assert lib.get_staged_symbols() == []
    report = lib.gc(grace_period=0)  # what the failed job wrote is unreachable and goes now
    assert report.deleted >= 1
    assert lib.gc(grace_period=0).unreachable == 0
    assert len(lib.read("f").data) == 102


def test_abort_deletes_its_jobs_late_entries_only(lib: Any, lmdb_uri: str) -> None:
    """A task that died before reporting (message None) still had its entries deleted, by job."""
    from pyspark.sql.types import LongType, StructField, StructType

    opts = WriteOptions.parse({"uri": lmdb_uri, "library": "lib", "path": "a"}, overwrite=False)
    schema = StructType([StructField("id", LongType())])
    w1 = ArcticLiteWriter(opts, schema, overwrite=False)
    w2 = ArcticLiteWriter(opts, schema, overwrite=False)
    assert w1.job != w2.job and w1.job.startswith(JOB_PREFIX) and len(w1.job) <= 64
    frame = pd.DataFrame({"id": np.arange(3)})
    reported = lib.stage("a", frame, job=w1.job)
    lib.stage("a", frame, job=w1.job)  # staged by a task that died before reporting
    survivor = lib.stage("a", frame, job=w2.job)
    w1.abort([StagedMessage(0, 0, [reported], 3), None])
    item = lib.finalize_staged_data("a", stage_results=[survivor])
    assert len(lib.read("a", as_of=item.version).data) == 3
    with pytest.raises(Exception, match="E_NO_STAGED_SEGMENTS"):
        lib.finalize_staged_data("a", mode="append")  # nothing of w1's job is left


def test_commit_deletes_its_jobs_unreported_entries(lib: Any, lmdb_uri: str) -> None:
    """Entries of the job that the commit does not use (an attempt Spark did not pick) go."""
    from pyspark.sql.types import LongType, StructField, StructType

    opts = WriteOptions.parse({"uri": lmdb_uri, "library": "lib", "path": "u"}, overwrite=True)
    w = ArcticLiteWriter(opts, StructType([StructField("id", LongType())]), overwrite=True)
    frame = pd.DataFrame({"id": np.arange(3)})
    used = lib.stage("u", frame, job=w.job)
    lib.stage("u", frame, job=w.job)  # a speculative duplicate attempt's entry
    w.commit([StagedMessage(0, 0, [used], 3)])
    assert len(lib.read("u").data) == 3 and lib.get_staged_symbols() == []


def test_concurrent_appends_both_land(spark: Any, lib: Any, writer: Any) -> None:
    writer(_events(spark, 0, 100)).mode("overwrite").save("c")
    errors: list[BaseException] = []

    def append(start: int) -> None:
        # a new thread has no active session in the JVM: Spark would not find the data source
        spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
        try:
            writer(_events(spark, start, 500)).mode("append").save("c")
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    from pyspark import InheritableThread  # carries the active session into the thread

    threads = [InheritableThread(target=append, args=(s,)) for s in (1000, 2000)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, [str(e)[:2000] for e in errors]
    ids = sorted(lib.read("c").data["id"])
    assert ids == list(range(100)) + list(range(1000, 1500)) + list(range(2000, 2500))
    assert len(lib.list_versions("c")) == 3 and lib.get_staged_symbols() == []


def test_errorifexists_and_ignore(spark: Any, lib: Any, writer: Any, lmdb_uri: str) -> None:
    def lib_uri(_: Any) -> str:
        return lmdb_uri

    df = _events(spark, 0, 10)
    spark_connector.save(df, "m", mode="errorifexists", uri=lib_uri(lib), library="lib")
    with pytest.raises(Exception, match="already exists"):
        spark_connector.save(df, "m", mode="errorifexists", uri=lib_uri(lib), library="lib")
    spark_connector.save(_events(spark, 0, 99), "m", mode="ignore", uri=lib_uri(lib), library="lib")
    assert len(lib.read("m").data) == 10 and len(lib.list_versions("m")) == 1
    with pytest.raises(Exception, match="already exists"):
        writer(df).option("if_exists", "error").mode("append").save("m")
    spark_connector.save(_events(spark, 0, 20), "m", mode="overwrite", uri=lib_uri(lib), library="lib")
    spark_connector.save(_events(spark, 20, 5), "m", mode="append", uri=lib_uri(lib), library="lib")
    assert len(lib.read("m").data) == 25


def test_compact_runs_one_spark_task_per_compaction_task(spark: Any, lib: Any, lmdb_uri: str,
                                                          reader: Any) -> None:
    def frame(start: int, n: int) -> pd.DataFrame:
        return pd.DataFrame({"id": np.arange(start, start + n), "x": np.arange(start, start + n) / 3.0},
                            index=pd.date_range("2024-01-01", periods=n, freq="s", tz="UTC", name="ts")
                            + pd.Timedelta(seconds=start))

    # finalizing staged pieces references them as they are: small row slices (appends would
    # fill the last slice up instead)
    pieces = [frame(10 * i, 10) for i in range(6)]  # small row slices ...
    pieces.append(frame(60, 300))  # ... full ones ...
    pieces += [frame(360 + 10 * i, 10) for i in range(5)]  # ... small ones again: two runs
    lib.finalize_staged_data("frag", stage_results=[lib.stage("frag", p) for p in pieces])
    before = lib.read("frag").data
    plan = lib.compact_data_explain_plan("frag", 100)
    assert plan.will_do_work and len(plan.runs) == 2
    sc = spark.sparkContext
    sc.setJobGroup("arcticlite-compact-test", "compact")
    try:
        item = spark_connector.compact(spark, lmdb_uri, "lib", "frag", rows_per_segment=100)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    tracker = sc.statusTracker()
    jobs = tracker.getJobIdsForGroup("arcticlite-compact-test")
    assert len(jobs) == 1
    stages = tracker.getJobInfo(jobs[0]).stageIds
    assert sum(tracker.getStageInfo(s).numTasks for s in stages) == len(plan.runs)
    assert item.version == plan.version_id_after
    pd.testing.assert_frame_equal(lib.read("frag").data, before)
    after = lib.compact_data_explain_plan("frag", 100)
    assert not after.will_do_work and after.row_slices_before == plan.row_slices_after
    assert sorted(r["id"] for r in reader().load("frag").collect()) == list(range(410))
    # nothing left to do: no Spark job, the current version back
    again = spark_connector.compact(spark, lmdb_uri, "lib", "frag", rows_per_segment=100)
    assert again.version == item.version


def test_a_failing_compaction_task_commits_nothing_and_gc_removes_its_siblings(
        spark: Any, lib: Any, lmdb_uri: str) -> None:
    def frame(start: int, n: int) -> pd.DataFrame:
        return pd.DataFrame({"id": np.arange(start, start + n)},
                            index=pd.date_range("2024-01-01", periods=n, freq="s", name="ts")
                            + pd.Timedelta(seconds=start))

    pieces = [frame(10 * i, 10) for i in range(6)] + [frame(60, 300)] + [frame(360 + 10 * i, 10) for i in range(5)]
    lib.finalize_staged_data("frag", stage_results=[lib.stage("frag", p) for p in pieces])
    plan = lib.compact_data_explain_plan("frag", 100)
    assert len(plan.runs) == 2
    # one segment of the second run is lost (an operator deleted it): that run's Spark task
    # fails reading it, the first run's task succeeds and writes new segments
    index = lib.inspect_index("frag")
    lost = index.loc[index["start_row"] == 400, "key"].iloc[0]
    store_key = next(k for k in lib._store.list_keys("lib/tdata/") if k.endswith(lost))
    lib._store.delete([store_key])
    keys_before = set(lib._store.list_keys("lib/"))
    with pytest.raises(Exception) as err:
        spark_connector.compact(spark, lmdb_uri, "lib", "frag", rows_per_segment=100)
    assert "not found" in str(err.value).lower() or "missing" in str(err.value).lower(), str(err.value)[-2000:]
    assert [k.version for k in lib.list_versions("frag")] == [0]
    # what the successful task wrote is unreachable, and gc removes exactly that
    written = set(lib._store.list_keys("lib/")) - keys_before
    assert written, "the successful task wrote its segments"
    lib.gc(grace_period=0)
    assert {k for k in lib._store.list_keys("lib/") if "/_gc/" not in k} == keys_before
    assert lib.read("frag", row_range=(0, 360)).data["id"].tolist() == list(range(360))


def test_s3_round_trip(spark: Any, s3_uri: str) -> None:
    lib = adb.Arctic(s3_uri).get_library("lib", create_if_missing=True,
                                         library_options=adb.LibraryOptions(rows_per_segment=200))
    df = _events(spark, 0, 1000)
    df.write.format("arcticlite").option("uri", s3_uri).option("library", "lib").option("index_column", "ts") \
        .mode("overwrite").save("s3sym")
    assert len(lib.read("s3sym").data) == 1000
    back = spark.read.format("arcticlite").option("uri", s3_uri).option("library", "lib") \
        .option("date_range", "1970-01-01 01:00:00,1970-01-01 01:59:59").load("s3sym")
    assert sorted(r["id"] for r in back.collect()) == list(range(60, 120))


def test_compact_folds_merge_deltas_one_spark_task_per_group(spark: Any, lmdb_uri: str, reader: Any) -> None:
    small = adb.Arctic(lmdb_uri).create_library("deltas", adb.LibraryOptions(rows_per_segment=50))
    cow = adb.Arctic(lmdb_uri).create_library("cow", adb.LibraryOptions(rows_per_segment=50, merge_on_read=False))
    df = pd.DataFrame({"id": np.arange(300), "x": np.arange(300) / 3.0},
                      index=pd.date_range("2024-01-01", periods=300, freq="s", name="ts"))
    for lib in (small, cow):
        lib.write("m", df)
    for rows in ([5, 6], [120], [290, 299]):  # three merges, each an update of a few rows
        src = df.iloc[rows].copy()
        src["x"] = -1.0
        for lib in (small, cow):
            lib.merge("m", src)
    # the Spark scan applies the deltas
    got = reader().option("library", "deltas").load("m").orderBy("ts").toPandas()
    assert list(got["x"]) == list(cow.read("m").data["x"])
    plan = small.compaction_plan("m", memory_budget=1)
    job = small.compact_data_tasks("m")
    assert len(job.tasks) == len(small.compaction_plan("m").tasks) == 3  # three groups of row groups
    assert len(plan.tasks) == 3
    sc = spark.sparkContext
    sc.setJobGroup("arcticlite-fold-test", "fold")
    try:
        item = spark_connector.compact(spark, lmdb_uri, "deltas", "m")
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    tracker = sc.statusTracker()
    jobs = tracker.getJobIdsForGroup("arcticlite-fold-test")
    assert sum(tracker.getStageInfo(s).numTasks for s in tracker.getJobInfo(jobs[0]).stageIds) == 3
    assert item.version == 4 and small.compaction_plan("m").layers == 0
    pd.testing.assert_frame_equal(small.read("m").data, cow.read("m").data)
