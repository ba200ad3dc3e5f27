"""Compaction of deltas: the merges a symbol keeps as delta segments folded into its base.

A library merged on read and one merged copy-on-write receive the same merges; compacting the
first must give the second's data, in one new version, however the groups are cut (memory
budget) and run (workers), and must give up cleanly when a writer commits first. A compaction
killed mid-way leaves the symbol readable and ``gc()`` clean.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

from arcticlite import Arctic, Library, LibraryOptions
from arcticlite.exceptions import CommitConflictError, UserInputException
from arcticlite.table import FoldPlan

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def ac(uri: str) -> Arctic:
    """A fresh store on the current backend (memory, LMDB, moto S3)."""
    return Arctic(uri)


def tsframe(rng: np.random.Generator, n: int, start: int = 0, tag: str = "b") -> pd.DataFrame:
    hours = np.sort(rng.integers(start, start + 200, n))
    return pd.DataFrame({"k": rng.integers(0, 3, n), "v": rng.normal(size=n).round(3),
                         "s": [f"{tag}{i}" for i in range(n)]},
                        index=pd.DatetimeIndex(pd.Timestamp("2024-01-01") + pd.to_timedelta(hours, "h")))


def source(rng: np.random.Generator, tag: str, n: int = 6) -> pd.DataFrame:
    src = tsframe(rng, n, start=-5, tag=tag).reset_index().drop_duplicates(["index", "k"])
    return src.set_index("index").rename_axis(None)


def merged_pair(ac: Arctic, merges: int = 8, seed: int = 0, **opts: object) -> tuple[Library, Library]:
    """Two libraries with the same data and merges: on read (deltas pending) and copy-on-write."""
    rng = np.random.default_rng(seed)
    mor = ac.create_library("mor", LibraryOptions(rows_per_segment=10, **opts))  # type: ignore[arg-type]
    cow = ac.create_library("cow", LibraryOptions(rows_per_segment=10, merge_on_read=False))
    df = tsframe(rng, 150)
    for lib in (mor, cow):
        lib.write("x", df)
    for i in range(merges):
        src = source(rng, f"m{i}")
        for lib in (mor, cow):
            lib.merge("x", src, on=["k"])
        if i == merges // 2:
            gone = cow.read("x").data.sample(5, random_state=i)[["k"]]
            for lib in (mor, cow):
                lib.delete_rows("x", gone, on=["k"])
    return mor, cow


def data_keys(lib: Library) -> set[str]:
    name = lib.name
    return set(lib._store.list_keys(f"{name}/tdata/")) | set(lib._store.list_keys(f"{name}/tindex/"))


def test_compaction_folds_every_delta_into_one_version(ac: Arctic) -> None:
    mor, cow = merged_pair(ac)
    before = mor.read("x")
    plan = mor.compaction_plan("x")
    assert isinstance(plan, FoldPlan) and plan.layers == 9 and plan.delta_rows > 0
    assert plan.tasks and plan.rows == len(before.data)
    groups = plan.groups()
    assert [g["start_row"] for g in groups] == sorted(g["start_row"] for g in groups)
    assert sum(g["changes"] for g in groups) > 0
    item = mor.compact_data("x")  # compact_data folds deltas too
    assert item.version == before.version + 1
    assert mor.compaction_plan("x").layers == 0
    pd.testing.assert_frame_equal(mor.read("x").data, cow.read("x").data)
    pd.testing.assert_frame_equal(mor.read("x", as_of=before.version).data, before.data)
    assert not mor.inspect_index("x")["delta"].any()
    assert mor.compact_deltas("x").version == item.version  # nothing left to fold: no new version


def test_untouched_row_groups_are_reused(ac: Arctic) -> None:
    mor, cow = merged_pair(ac, merges=0)
    df = cow.read("x").data
    src = df.iloc[[3, 4]].copy()
    src["v"] += 100.0
    for lib in (mor, cow):
        lib.merge("x", src, on=["k"])
    base = set(mor.inspect_index("x", as_of=0)["key"])
    plan = mor.compaction_plan("x")
    assert len(plan.tasks) == 1 and plan.untouched_row_groups == plan.row_groups - 1
    mor.compact_deltas("x")
    after = set(mor.inspect_index("x")["key"])
    assert len(base - after) == 1 and len(after - base) == 1  # only the row group holding rows 3-4
    pd.testing.assert_frame_equal(mor.read("x").data, cow.read("x").data)


@pytest.mark.parametrize(("workers", "budget"), [(1, None), (2, None), (2, 1), (1, 5000)])
def test_budget_and_workers_change_tasks_not_results(ac: Arctic, workers: int, budget: int | None) -> None:
    mor, cow = merged_pair(ac, seed=workers)
    wide = len(mor.compaction_plan("x").tasks)
    plan = mor.compaction_plan("x", memory_budget=budget)
    if budget == 1:  # every row group its own task
        assert len(plan.tasks) >= wide and len(plan.tasks) == plan.row_groups - plan.untouched_row_groups
    mor.compact_deltas("x", workers=workers, memory_budget=budget)
    pd.testing.assert_frame_equal(mor.read("x").data, cow.read("x").data)


def test_row_numbered_deltas_fold(ac: Arctic) -> None:
    rng = np.random.default_rng(5)
    mor = ac.create_library("mor", LibraryOptions(rows_per_segment=10))
    cow = ac.create_library("cow", LibraryOptions(rows_per_segment=10, merge_on_read=False))
    df = pd.DataFrame({"k": np.arange(40), "v": rng.normal(size=40)})
    for lib in (mor, cow):
        lib.write("r", df)
    for _ in range(4):
        src = pd.DataFrame({"k": rng.choice(60, 6, replace=False), "v": rng.normal(size=6)})
        for lib in (mor, cow):
            lib.merge("r", src, on=["k"])
    plan = mor.compaction_plan("r")
    last = plan.groups()[-1]
    assert last["end_row"] == 40 and last["key_to"] is None  # the group holding the rows inserted at the end
    mor.compact_deltas("r", workers=2)
    pd.testing.assert_frame_equal(mor.read("r").data, cow.read("r").data)


def test_compaction_is_due_per_library_options(ac: Arctic) -> None:
    rng = np.random.default_rng(2)
    lib = ac.create_library("due", LibraryOptions(rows_per_segment=10, compaction_deltas=3,
                                                  compaction_delta_share=0.5))
    lib.write("x", tsframe(rng, 100))
    dues = []
    for i in range(3):
        lib.merge("x", source(rng, f"d{i}", n=3), on=["k"])
        dues.append(lib.compaction_plan("x").due)
    assert dues == [False, False, True]
    with pytest.raises(Exception, match="compaction_deltas"):
        LibraryOptions(compaction_deltas=0)


def test_a_writer_that_commits_first_makes_compaction_give_up(ac: Arctic) -> None:
    mor, cow = merged_pair(ac, merges=3)
    job = mor.compact_data_tasks("x")
    results = [t.execute(mor._store, mor._keys) for t in job.tasks]
    late = source(np.random.default_rng(9), "late")
    for lib in (mor, cow):
        lib.merge("x", late, on=["k"])
    with pytest.raises(CommitConflictError, match="run the compaction again"):
        mor.commit_compaction(job, results)
    pd.testing.assert_frame_equal(mor.read("x").data, cow.read("x").data)  # the writer's merge is there
    mor.compact_deltas("x")  # a fresh compaction then succeeds
    pd.testing.assert_frame_equal(mor.read("x").data, cow.read("x").data)


def test_a_metadata_commit_meanwhile_is_rebased_onto(ac: Arctic) -> None:
    mor, cow = merged_pair(ac, merges=3)
    job = mor.compact_data_tasks("x")
    results = [t.execute(mor._store, mor._keys) for t in job.tasks]
    mor.write_metadata("x", {"note": 1})
    item = mor.commit_compaction(job, results)
    assert mor.read_metadata("x").metadata == {"note": 1} and item.version == mor.read("x").version
    pd.testing.assert_frame_equal(mor.read("x").data, cow.read("x").data)
    with pytest.raises(UserInputException):
        mor.compact_deltas("x", workers=0)


def test_gc_removes_deltas_no_version_reaches(ac: Arctic) -> None:
    mor, _ = merged_pair(ac, merges=4)
    delta_keys = set(mor.inspect_index("x").query("delta")["key"])
    assert delta_keys
    mor.compact_deltas("x", prune_previous_versions=True)
    left = data_keys(mor)
    assert not delta_keys & left  # pruned with the versions that referenced them
    mor.gc(grace_period=0)
    assert data_keys(mor) == left


KILLED = textwrap.dedent("""
    import os, signal, sys
    import arcticlite
    from arcticlite.table import _fold
    calls = []
    real = _fold.FoldTask.execute
    def execute(self, store=None, keys=None):
        if calls:  # the second group: the first one's segments are written
            os.kill(os.getpid(), signal.SIGKILL)
        calls.append(1)
        return real(self, store, keys)
    _fold.FoldTask.execute = execute
    lib = arcticlite.Arctic(sys.argv[1]).get_library("mor")
    lib.compact_deltas("x", memory_budget=1)  # a task per row group
""")


@pytest.mark.lmdb
def test_a_killed_compaction_leaves_the_symbol_readable_and_gc_clean(tmp_path: object) -> None:
    uri = f"lmdb://{os.path.join(str(tmp_path), 'db')}"
    mor, cow = merged_pair(Arctic(uri))
    before = mor.read("x")
    keys_before = data_keys(mor)
    assert len(mor.compaction_plan("x", memory_budget=1).tasks) > 1
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-c", KILLED, uri], env=env, capture_output=True, timeout=300)
    assert proc.returncode == -9, proc.stderr.decode()
    lib = Arctic(uri).get_library("mor")
    after = lib.read("x")
    assert after.version == before.version
    pd.testing.assert_frame_equal(after.data, cow.read("x").data)
    assert data_keys(lib) > keys_before  # the first group's segments were written, never committed
    report = lib.gc(grace_period=0)
    assert report is not None
    assert data_keys(lib) == keys_before
    lib.compact_deltas("x")
    pd.testing.assert_frame_equal(lib.read("x").data, cow.read("x").data)


@pytest.mark.lmdb
def test_groups_fold_in_worker_processes(tmp_path: object) -> None:
    uri = f"lmdb://{os.path.join(str(tmp_path), 'db')}"
    mor, cow = merged_pair(Arctic(uri))
    before = mor.read("x")
    assert len(mor.compaction_plan("x", memory_budget=1).tasks) > 2
    item = mor.compact_deltas("x", workers=2, memory_budget=1, executor="process")
    assert item.version == before.version + 1 and not mor.inspect_index("x")["delta"].any()
    pd.testing.assert_frame_equal(mor.read("x").data, cow.read("x").data)
    assert mor.gc(grace_period=0).deleted == 0  # every segment the processes wrote is referenced


def test_worker_processes_need_a_library_they_can_open() -> None:
    mor, _ = merged_pair(Arctic("mem://"), merges=2)
    keys = data_keys(mor)
    with pytest.raises(UserInputException, match="mem:// library lives only in this process"):
        mor.compact_deltas("x", workers=2, executor="process")
    with pytest.raises(UserInputException, match="executor"):
        mor.compact_deltas("x", executor="fork")
    assert data_keys(mor) == keys and mor.compaction_plan("x").layers == 3
