"""The public scan API (``Library.scan``): plans, tasks, and a multiprocessing reader."""

from __future__ import annotations

import multiprocessing as mp
import pickle
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import arcticlite as adb
from arcticlite.exceptions import NoSuchVersionException, UserInputException


def _frame(n: int = 5_000, tz: str | None = "UTC") -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame(
        {"x": np.arange(n, dtype=np.int64), "y": rng.random(n), "s": np.array(["a", "bb", "ccc"])[np.arange(n) % 3]},
        index=pd.date_range("2024-01-01", periods=n, freq="min", tz=tz),
    )


@pytest.fixture
def slib(tmp_path: Any) -> Any:
    ac = adb.Arctic(f"lmdb://{tmp_path}/db")
    return ac.create_library("scan", adb.LibraryOptions(rows_per_segment=500, columns_per_segment=2))


def _as_frame(table: pa.Table) -> pd.DataFrame:
    return table.to_pandas().set_index("index").rename_axis(None)


def test_scan_returns_the_read_as_plain_arrow(slib: Any) -> None:
    df = _frame()
    slib.write("s", df)
    plan = slib.scan("s")
    assert plan.version == 0
    assert plan.schema.names == ["index", "x", "y", "s"]
    assert plan.schema.field("index").type == pa.timestamp("ns", tz="UTC")
    pd.testing.assert_frame_equal(_as_frame(plan.to_table()), df, check_freq=False)


def test_tasks_hold_whole_row_groups_and_cover_every_row_once(slib: Any) -> None:
    df = _frame()
    slib.write("s", df)
    plan = slib.scan("s")
    tasks = plan.tasks(target_bytes=1)
    assert len(tasks) == 10  # one task per 500-row group (two column slices each)
    assert all(t.segments == 2 for t in tasks)
    parts = [pickle.loads(pickle.dumps(t)).to_table() for t in tasks]
    assert [p.num_rows for p in parts] == [t.rows for t in tasks]
    pd.testing.assert_frame_equal(_as_frame(pa.concat_tables(parts)), df, check_freq=False)
    assert len(plan.tasks()) == 1
    again = pickle.loads(pickle.dumps(plan))  # a plan is a value: it pickles and runs elsewhere
    assert again.version == plan.version and again.segments == plan.segments
    pd.testing.assert_frame_equal(_as_frame(again.to_table()), df, check_freq=False)


def test_tasks_cut_by_rows_for_data_that_compresses_well(slib: Any) -> None:
    df = _frame()
    slib.write("s", df)
    plan = slib.scan("s")
    tasks = plan.tasks(target_rows=1_200)  # closes at the row group that reaches 1,200 rows
    assert [t.rows for t in tasks] == [1_500, 1_500, 1_500, 500]
    pd.testing.assert_frame_equal(_as_frame(pa.concat_tables([t.to_table() for t in tasks])), df,
                                  check_freq=False)
    assert len(plan.tasks(target_bytes=1, target_rows=10**9)) == 10  # either target closes a task
    with pytest.raises(UserInputException, match="target_rows"):
        plan.tasks(target_rows=0)


def test_scan_prunes_before_fetching(slib: Any) -> None:
    df = _frame()
    slib.write("s", df)
    q = adb.QueryBuilder()
    q = q[q["x"] >= 4_800]
    plan = slib.scan("s", query_builder=q)
    assert plan.segments_considered == 20 and plan.segments == 2
    assert _as_frame(plan.to_table()).equals(df[df.x >= 4_800])
    plan = slib.scan("s", date_range=(df.index[1_000], df.index[1_499]), columns=["y"])
    assert plan.segments == 1 and plan.schema.names == ["index", "y"]
    pd.testing.assert_frame_equal(_as_frame(plan.to_table()), df.iloc[1_000:1_500][["y"]], check_freq=False)


def test_scan_of_an_older_version_and_a_range_index(slib: Any) -> None:
    df = _frame(tz=None).reset_index(drop=True)
    slib.write("r", df)
    slib.append("r", df.set_axis(pd.RangeIndex(len(df), 2 * len(df))))
    plan = slib.scan("r", as_of=0)
    assert plan.version == 0 and plan.schema.names == ["x", "y", "s"]
    assert plan.to_table().num_rows == len(df)
    assert slib.scan("r").to_table().num_rows == 2 * len(df)


def test_scan_refuses_what_tasks_cannot_do(slib: Any) -> None:
    slib.write("s", _frame(100))
    slib.write_pickle("p", {"a": 1})
    q = adb.QueryBuilder().groupby("s").agg({"x": "sum"})
    with pytest.raises(UserInputException, match="groupby|aggregate"):
        slib.scan("s", query_builder=q)
    with pytest.raises(UserInputException, match="pickled"):
        slib.scan("p")
    with pytest.raises(NoSuchVersionException):
        slib.scan("s", as_of=7)
    with pytest.raises(UserInputException, match="target_bytes"):
        slib.scan("s").tasks(target_bytes=0)


# -- the multiprocessing reader of docs/scan.md ------------------------------------------------
def run(task: Any) -> pa.Table:
    return pa.Table.from_batches(list(task.execute()), schema=None)


def parallel_read(uri: str, library: str, symbol: str, processes: int = 2) -> pa.Table:
    lib = adb.Arctic(uri).get_library(library)
    plan = lib.scan(symbol)
    with mp.get_context("spawn").Pool(processes) as pool:
        parts = pool.map(run, plan.tasks(target_bytes=1 << 20))
    return pa.concat_tables(parts) if parts else plan.schema.empty_table()


def test_multiprocessing_reader(tmp_path: Any) -> None:
    uri = f"lmdb://{tmp_path}/mp"
    lib = adb.Arctic(uri).create_library("m", adb.LibraryOptions(rows_per_segment=20_000))
    df = _frame(200_000)
    lib.write("big", df)
    got = parallel_read(uri, "m", "big")
    pd.testing.assert_frame_equal(_as_frame(got), df, check_freq=False)


def test_a_one_core_task_decodes_in_its_own_thread(tmp_path: Any) -> None:
    """``threads=1`` (what the Spark reader passes for ``spark.task.cpus`` = 1): the task's
    segments are decoded in the calling thread, so a worker running one task per core does
    not oversubscribe its cores; the rows are the same."""
    import threading

    lib = adb.Arctic(f"lmdb://{tmp_path}/db").create_library("big")
    rng = np.random.default_rng(2)
    df = pd.DataFrame(rng.random((300_000, 4)), columns=list("abcd"),
                      index=pd.date_range("2024-01-01", periods=300_000, freq="s"))
    lib.write("s", df)  # three segments of 100,000 rows: large enough to decode in the pool
    (task,) = lib.scan("s").tasks(target_bytes=1 << 30)
    assert task.segments == 3
    before = set(threading.enumerate())
    one = task.to_table(threads=1)
    started = [t.name for t in set(threading.enumerate()) - before if t.name.startswith("arcticlite-seg")]
    assert started == []
    assert one.equals(task.to_table())
    assert pa.Table.from_batches(list(task.execute(threads=1))).equals(one)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(UserInputException, match="threads"):
            task.to_table(threads=bad)


def test_num_cpu_threads_sizes_the_engine_threads(tmp_path: Any) -> None:
    """``VersionStore.NumCPUThreads`` (ArcticDB's setting, which the Spark connector sets in
    its executors to the task's cores) sizes the threads that encode and decode segments,
    also for libraries opened before it was set."""
    import subprocess
    import sys

    code = f"""
import threading, numpy as np, pandas as pd, arcticlite as adb
from arcticlite import config
lib = adb.Arctic("lmdb://{tmp_path}/db").create_library("t")
config.set_config_int("VersionStore.NumCPUThreads", 1)
df = pd.DataFrame(np.random.default_rng(0).random((400_000, 4)), columns=list("abcd"),
                  index=pd.date_range("2024-01-01", periods=400_000, freq="s"))
lib.write("s", df)
assert lib.read("s").data.equals(df)
print(sum(t.name.startswith("arcticlite-seg") for t in threading.enumerate()))
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert int(out.stdout.split()[-1]) <= 1
