"""compact_data / compact_data_explain_plan / is_symbol_fragmented / defragment_symbol_data:
small row slices merged, oversized ones split (ArcticDB's slice sizes), copy-on-write, and the
plan ArcticDB's ``CompactDataInfo`` describes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import arcticlite as adb
from arcticlite.exceptions import InternalException, StorageException


@pytest.fixture
def lib(uri: str) -> adb.Library:
    return adb.Arctic(uri).get_library("c", create_if_missing=True)


def _df(n: int, start: str = "2024-01-01") -> pd.DataFrame:
    return pd.DataFrame({"a": np.arange(n, dtype=np.int64), "b": np.arange(n) * 0.5},
                        index=pd.date_range(start, periods=n, freq="min"))


def _appended(lib: adb.Library, sizes: list[int]) -> pd.DataFrame:
    parts, t = [], pd.Timestamp("2024-01-01")
    for i, n in enumerate(sizes):
        df = _df(n, str(t))
        t = df.index[-1] + pd.Timedelta(minutes=1)
        (lib.write if i == 0 else lib.append)("s", df)
        parts.append(df)
    return pd.concat(parts)


def test_explain_plan_describes_the_work_as_arcticdb_does(lib: adb.Library) -> None:
    lib.write("s", _df(7))
    plan = lib.compact_data_explain_plan("s", rows_per_segment=4)
    assert plan.will_do_work and (plan.version_id_before, plan.version_id_after) == (0, 1)
    assert plan.row_slices_before == [0, 7] and plan.row_slices_after == [0, 3, 7]  # 7 rows at 4: 3 + 4
    assert (plan.num_row_slices_before, plan.num_row_slices_after) == (1, 2)
    assert "CompactDataInfo(will_do_work=true" in repr(plan)
    assert lib.compact_data("s", rows_per_segment=4).version == 1
    assert_same = lib.compact_data_explain_plan("s", rows_per_segment=4)
    assert not assert_same.will_do_work and assert_same.version_id_after == assert_same.version_id_before == 1
    assert lib.compact_data("s", rows_per_segment=4).version == 1  # nothing to do: no new version


@pytest.mark.parametrize(("rows", "target", "after"), [(7, 2, [0, 2, 4, 7]), (10, 4, [0, 5, 10]),
                                                       (13, 4, [0, 4, 8, 13]), (5, 4, [0, 5])])
def test_oversized_slices_split_evenly(lib: adb.Library, rows: int, target: int, after: list[int]) -> None:
    df = _df(rows)
    lib.write("s", df)
    assert lib.compact_data_explain_plan("s", rows_per_segment=target).row_slices_after == after
    lib.compact_data("s", rows_per_segment=target)
    idx = lib.inspect_index("s")
    assert sorted(set(idx["start_row"])) == after[:-1]
    pd.testing.assert_frame_equal(lib.read("s").data, df, check_freq=False)


def test_small_appends_merge_and_old_versions_stay_readable(lib: adb.Library) -> None:
    df = _appended(lib, [30] + [1_000] * 5)  # large appends: one segment each
    before = lib.read("s").version
    plan = lib.compact_data_explain_plan("s", rows_per_segment=5_000)
    assert plan.will_do_work and plan.num_row_slices_after < plan.num_row_slices_before
    v = lib.compact_data("s", rows_per_segment=5_000).version
    assert v == before + 1
    pd.testing.assert_frame_equal(lib.read("s").data, df, check_freq=False)
    pd.testing.assert_frame_equal(lib.read("s", as_of=before).data, df, check_freq=False)
    assert sorted(set(lib.inspect_index("s")["start_row"])) == [0]  # 5,030 rows: within a third over 5,000


def test_compaction_keeps_rows_appended_while_it_ran(lib: adb.Library, monkeypatch: pytest.MonkeyPatch) -> None:
    df = _appended(lib, [10, 1_000, 1_000])
    extra = _df(5, str(df.index[-1] + pd.Timedelta(minutes=1)))
    real = lib._table.apply

    def append_first(sym: str, op: object, **kw: object) -> object:
        monkeypatch.setattr(lib._table, "apply", real)
        lib.append("s", extra)  # a writer commits between the compaction's rewrite and its commit
        return real(sym, op, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(lib._table, "apply", append_first)
    lib.compact_data("s", rows_per_segment=5_000)
    pd.testing.assert_frame_equal(lib.read("s").data, pd.concat([df, extra]), check_freq=False)


def test_errors(lib: adb.Library) -> None:
    with pytest.raises(StorageException, match="non-existent"):
        lib.compact_data("missing")
    lib.write("s", _df(3))
    lib.delete("s")
    with pytest.raises(StorageException, match="non-existent"):
        lib.compact_data("s")
    lib.write("s", _df(3))
    with pytest.raises(InternalException, match="Nothing to compact"):
        lib.defragment_symbol_data("s")
    assert not lib.is_symbol_fragmented("s")
    lib.write_pickle("p", {"x": 1})
    assert lib.compact_data("p").version == 0  # pickled data is one blob, already compact (as ArcticDB)


def test_compaction_tasks_run_in_other_processes_then_commit_once(tmp_path: object) -> None:
    import multiprocessing as mp
    import pickle

    uri = f"lmdb://{tmp_path}/db"
    lib = adb.Arctic(uri).get_library("c", create_if_missing=True)
    df = _appended(lib, [2_000, 2_000, 2_000, 2_000, 20_000])  # appends too large for the open tail
    job = lib.compact_data_tasks("s", rows_per_segment=8_000)
    assert len(job.tasks) == 2 and job.plan.will_do_work  # small slices merged; 20 rows split
    tasks = [pickle.loads(pickle.dumps(t)) for t in job.tasks]
    with mp.get_context("spawn").Pool(2) as pool:
        results = pool.map(_execute, tasks)
    v = lib.commit_compaction(job, results).version
    assert v == job.plan.version_id_after
    assert sorted(set(lib.inspect_index("s")["start_row"])) == job.plan.row_slices_after[:-1]
    pd.testing.assert_frame_equal(lib.read("s").data, df, check_freq=False)
    with pytest.raises(Exception, match="2 runs got 1"):
        lib.commit_compaction(job, results[:1])


def _execute(task: object) -> object:
    return task.execute()  # type: ignore[attr-defined]


def _staged(lib: adb.Library, sizes: list[int]) -> pd.DataFrame:
    """A symbol whose row slices have exactly ``sizes`` rows (finalized staged pieces)."""
    parts, t = [], pd.Timestamp("2024-01-01")
    for n in sizes:
        parts.append(_df(n, str(t)))
        t = parts[-1].index[-1] + pd.Timedelta(minutes=1)
    lib.finalize_staged_data("s", stage_results=[lib.stage("s", p) for p in parts])
    return pd.concat(parts)


# layouts and the slices ArcticDB 6.28 plans for them (will_do_work is "after is not None")
@pytest.mark.parametrize(("sizes", "target", "after"), [
    ([2, 2], 4, None),  # within [2/3, 4/3] of the target: nothing to do
    ([1], 4, None),  # a lone small slice has nothing to merge with
    ([6], 4, [3, 3]),  # over a third above the target: split
    ([2, 2, 6], 4, [4, 3, 3]),  # once there is work, neighbours that get closer to 4 merge
    ([2, 3, 1, 1], 4, [5, 2]),
    ([1, 2, 2, 4], 4, [3, 2, 4]),  # 3 + 2 would move away from 4
    ([2, 1, 1, 2], 4, [4, 2]),
    ([5, 1], 4, [3, 3]),  # a small last slice joins the one before, then splits
    ([1, 2, 2, 5], 2, [1, 2, 2, 2, 3]),
    ([30, 1_000, 1_000, 1_000, 1_000, 1_000], 5_000, [5_030]),
])
def test_the_slices_compaction_plans(lib: adb.Library, sizes: list[int], target: int,
                                     after: list[int] | None) -> None:
    df = _staged(lib, sizes)
    assert lib.compact_data_explain_plan("s", target).row_slices_before == list(np.cumsum([0, *sizes]))
    plan = lib.compact_data_explain_plan("s", target)
    assert plan.will_do_work == (after is not None)
    if after is not None:
        assert plan.row_slices_after == list(np.cumsum([0, *after]))
    item = lib.compact_data("s", target)
    assert item.version == (1 if after is not None else 0)
    assert lib.compact_data_explain_plan("s", target).row_slices_before == plan.row_slices_after
    pd.testing.assert_frame_equal(lib.read("s").data, df, check_freq=False)


@pytest.mark.parametrize(("sizes", "after"), [([4, 5], None), ([4, 5, 1, 2], [4, 5, 3]), ([3, 1, 1, 1, 1], [4, 3])])
def test_small_appends_are_row_slices_of_their_own(lib: adb.Library, sizes: list[int],
                                                   after: list[int] | None) -> None:
    # the appends share one open-tail segment, yet compaction sees one row slice per append
    df = _appended(lib, sizes)
    assert lib.inspect_index("s")["start_row"].nunique() < len(sizes) or len(sizes) == 2
    plan = lib.compact_data_explain_plan("s", 4)
    assert plan.row_slices_before == list(np.cumsum([0, *sizes]))
    assert plan.will_do_work == (after is not None)
    v = lib.compact_data("s", 4).version
    assert v == len(sizes) - (0 if after is not None else 1)
    if after is not None:
        assert plan.row_slices_after == list(np.cumsum([0, *after]))
        assert lib.compact_data_explain_plan("s", 4).row_slices_before == plan.row_slices_after
    pd.testing.assert_frame_equal(lib.read("s").data, df, check_freq=False)
    tail = df.index[-2:]
    pd.testing.assert_frame_equal(lib.read("s", date_range=(tail[0], tail[1])).data, df.loc[tail[0]:tail[1]],
                                  check_freq=False)


def test_compaction_keeps_metadata_and_returns_an_item_without_it(uri: str) -> None:
    # the metadata stays with the symbol; the item, as ArcticDB's, carries neither data nor
    # metadata (so a library that refuses pickles can compact a symbol whose metadata is one)
    ac = adb.Arctic(uri)
    lib = ac.get_library("c", create_if_missing=True)
    _appended(lib, [1, 1, 1, 1, 1, 1])
    lib.write_metadata("s", {"when": pd.Timestamp("2024-01-01")})
    strict = ac.get_library("c", allow_pickle=False)
    item = strict.compact_data("s", 4)
    assert item.version == 7 and item.metadata is None and item.data is None
    assert strict.compact_data("s", 4).metadata is None  # nothing to do: the same item
    assert lib.read_metadata("s").metadata == {"when": pd.Timestamp("2024-01-01")}


def test_update_and_range_delete_keep_the_row_slices_of_small_appends(lib: adb.Library) -> None:
    # three appends share the open tail (slices 5 | 2 | 3); an update of the first rows, a
    # range delete of the last ones and an update of the whole second append leave the
    # other appends' slices where ArcticDB leaves its segments: 3 | 2 | 2 | 2, nothing to compact
    lib.write("s", _df(5))
    lib.append("s", _df(2, "2024-01-01 00:05"))
    lib.append("s", _df(3, "2024-01-01 00:07"))
    lib.update("s", _df(3) + 100)
    assert lib.compact_data_explain_plan("s", 2).row_slices_before == [0, 3, 5, 7, 10]
    lib.delete_data_in_range("s", (pd.Timestamp("2024-01-01 00:09"), pd.Timestamp("2024-01-01 00:10")))
    assert lib.compact_data_explain_plan("s", 2).row_slices_before == [0, 3, 5, 7, 9]
    lib.update("s", _df(2, "2024-01-01 00:05") + 200)
    plan = lib.compact_data_explain_plan("s", 2)
    assert plan.row_slices_before == [0, 3, 5, 7, 9] and not plan.will_do_work
    assert lib.compact_data("s", 2).version == 5  # no new version, as ArcticDB
    want = pd.concat([_df(3) + 100, _df(5)[3:], _df(2, "2024-01-01 00:05") + 200, _df(2, "2024-01-01 00:07")])
    pd.testing.assert_frame_equal(lib.read("s").data, want, check_freq=False)
