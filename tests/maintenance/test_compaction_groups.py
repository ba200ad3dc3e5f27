"""Compaction groups as seed 004 plans them: base row groups and delta segments whose key
ranges overlap fold together (union-find); one task per group, split by key range only when a
group's base bytes exceed the memory budget; the folded data never depends on the grouping."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from arcticlite import Arctic, Library, LibraryOptions
from arcticlite.table._groups import components, split_by_budget, union_find

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

DAY = pd.Timedelta(days=1)
START = pd.Timestamp("2024-01-01")


def test_overlapping_intervals_share_a_component() -> None:
    lo = np.array([0, 3, 10, 12, 20, 9, 40])
    hi = np.array([5, 8, 12, 13, 30, 9, 41])
    assert components(lo, hi).tolist() == [0, 0, 2, 2, 4, 5, 6]
    assert components(np.array([5, 0]), np.array([6, 100])).tolist() == [0, 0]  # one reaching over another
    assert union_find(5, np.array([4, 3, 1]), np.array([3, 2, 0])).tolist() == [0, 0, 2, 2, 2]
    assert split_by_budget(np.array([2, 3, 4, 5]), np.array([0, 0, 5, 5, 5, 20]), 10) == [(2, 4), (4, 5), (5, 6)]


@pytest.fixture
def libs(uri: str) -> tuple[Library, Library]:
    """Merged on read and copy-on-write, 100 daily rows in row groups of 10."""
    ac = Arctic(uri)
    mor = ac.create_library("mor", LibraryOptions(rows_per_segment=10))
    cow = ac.create_library("cow", LibraryOptions(rows_per_segment=10, merge_on_read=False))
    df = pd.DataFrame({"v": np.arange(100.0)}, index=pd.date_range(START, periods=100, freq="D"))
    for lib in (mor, cow):
        lib.write("x", df)
    return mor, cow


def merge(libs: tuple[Library, Library], days: list[float]) -> None:
    src = pd.DataFrame({"v": [-1.0 - d for d in days]}, index=START + pd.to_timedelta(days, "D"))
    for lib in libs:
        lib.merge("x", src)


def test_overlapping_segments_fold_in_one_group(libs: tuple[Library, Library]) -> None:
    mor, cow = libs
    merge(libs, [21, 24])  # A: inside row group 2
    merge(libs, [28, 33])  # B: across row groups 2 and 3 (overlaps A's group)
    merge(libs, [75])  # C: row group 7 alone
    merge(libs, [88.5])  # D: an insert between rows 88 and 89, inside row group 8's keys
    merge(libs, [99.5, 120])  # E: inserts after the last row: the last row group owns them
    plan = mor.compaction_plan("x")
    got = [(g["group"], g["start_row"], g["end_row"], g["base_segments"], g["delta_segments"], g["changes"])
           for g in plan.groups()]
    assert got == [(0, 20, 40, 2, 2, 4), (1, 70, 80, 1, 1, 1), (2, 80, 90, 1, 1, 1), (3, 90, 100, 1, 1, 2)]
    first = plan.groups()[0]
    assert (first["key_from"], first["key_to"]) == ((START + 20 * DAY).value, (START + 39 * DAY).value)
    assert plan.untouched_row_groups == 5 and plan.row_groups == 10
    before = set(mor.inspect_index("x", as_of=0)["key"])
    mor.compact_deltas("x", workers=2)
    after = set(mor.inspect_index("x")["key"])
    assert len(before & after) == 5  # the untouched row groups' segments are reused
    pd.testing.assert_frame_equal(mor.read("x").data, cow.read("x").data)


def test_a_merge_spanning_the_symbol_is_one_group_split_by_the_budget(libs: tuple[Library, Library]) -> None:
    mor, cow = libs
    merge(libs, [5, 95])  # one delta segment reaching over every row group
    merge(libs, [50])
    whole = mor.compaction_plan("x").groups()
    assert [(g["group"], g["start_row"], g["end_row"]) for g in whole] == [(0, 0, 100)]
    budget = int(mor.inspect_index("x")["bytes"].iloc[0]) * 3
    parts = mor.compaction_plan("x", memory_budget=budget).groups()
    assert len(parts) > 1 and {g["group"] for g in parts} == {0}
    assert [g["part"] for g in parts] == list(range(len(parts)))
    assert [g["start_row"] for g in parts][1:] == [g["end_row"] for g in parts][:-1]  # split by key range
    assert sum(g["changes"] for g in parts) == whole[0]["changes"] == 3
    assert [g["delta_segments"] for g in parts].count(2) == 1  # only the part holding day 50 reads merge 2
    mor.compact_deltas("x", memory_budget=budget, workers=2)
    pd.testing.assert_frame_equal(mor.read("x").data, cow.read("x").data)


def test_row_numbered_groups_follow_the_rows_changed(uri: str) -> None:
    ac = Arctic(uri)
    mor = ac.create_library("mor", LibraryOptions(rows_per_segment=10))
    cow = ac.create_library("cow", LibraryOptions(rows_per_segment=10, merge_on_read=False))
    df = pd.DataFrame({"k": np.arange(40), "v": np.arange(40.0)})
    for lib in (mor, cow):
        lib.write("r", df)
    for src in (pd.DataFrame({"k": [3, 5], "v": [-1.0, -2.0]}),  # rows of row group 0
                pd.DataFrame({"k": [25], "v": [-3.0]}),  # row group 2
                pd.DataFrame({"k": [100, 101], "v": [-4.0, -5.0]})):  # inserted after the last row
        for lib in (mor, cow):
            lib.merge("r", src, on=["k"])
    plan = mor.compaction_plan("r")
    got = [(g["start_row"], g["end_row"], g["key_from"], g["key_to"], g["changes"]) for g in plan.groups()]
    assert got == [(0, 10, 0, 9, 2), (20, 30, 20, 29, 1), (40, 40, 40, None, 2)]
    mor.compact_deltas("r", workers=2)
    pd.testing.assert_frame_equal(mor.read("r").data, cow.read("r").data)
