"""Merge on read: ``merge`` / ``delete_rows`` write delta segments that every read applies.

A library merged on read (the default) and one merged copy-on-write (``merge_on_read=False``)
receive the same writes, merges and deletes; after each step every read path must return the
same thing from both: pandas, Arrow, polars, queries, lazy frames, date ranges, columns, row
ranges, head / tail, batch reads, scan tasks of any size, and every older version.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from arcticlite import Arctic, Library, LibraryOptions, QueryBuilder
from arcticlite.library import MergeStrategy

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

STRATEGIES = [MergeStrategy("update", "insert"), MergeStrategy("update", "do_nothing"),
              MergeStrategy("do_nothing", "insert")]


def pair(ac: Arctic, rows_per_segment: int = 8, columns_per_segment: int = 127) -> tuple[Library, Library]:
    mor = ac.create_library("mor", LibraryOptions(rows_per_segment=rows_per_segment,
                                                  columns_per_segment=columns_per_segment))
    cow = ac.create_library("cow", LibraryOptions(rows_per_segment=rows_per_segment,
                                                  columns_per_segment=columns_per_segment, merge_on_read=False))
    return mor, cow


def both(libs: tuple[Library, Library], call: str, *args: object, **kw: object) -> None:
    """``call`` on both libraries: the same outcome (result version or exception class)."""
    out = []
    for lib in libs:
        try:
            out.append(getattr(lib, call)(*args, **kw).version)
        except Exception as exc:  # noqa: BLE001 - compared between the two
            out.append(type(exc).__name__)
    assert out[0] == out[1]


def same(a: object, b: object) -> None:
    if isinstance(a, pd.DataFrame | pd.Series):
        if isinstance(a, pd.Series):
            pd.testing.assert_series_equal(a, b)  # type: ignore[arg-type]
        else:
            pd.testing.assert_frame_equal(a, b)  # type: ignore[arg-type]
    elif isinstance(a, pa.Table):
        assert isinstance(b, pa.Table) and a.equals(b), (a, b)
    else:
        assert a.equals(b)  # type: ignore[attr-defined]


def check_reads(mor: Library, cow: Library, sym: str, *, timeseries: bool) -> None:
    """Every read path returns the same from both libraries."""
    n = len(cow.read(sym).data)
    q = QueryBuilder()
    q = q[q["v"] > 0]
    rare = QueryBuilder()  # statistics rule out most row groups: only those no delta touches are pruned
    rare = rare[(rare["v"] > 1.2) | (rare["s"] == "b3")]
    calls: list[dict[str, object]] = [
        {}, {"output_format": "pyarrow"}, {"output_format": "polars"}, {"columns": ["v"]}, {"columns": []},
        {"row_range": (3, max(3, n - 4))}, {"row_range": (-5, None)}, {"query_builder": q},
        {"columns": ["k"], "query_builder": q}, {"query_builder": rare}, {"columns": ["s"], "query_builder": rare},
    ]
    if timeseries:
        lo = pd.Timestamp("2024-01-01") + pd.Timedelta(hours=7)
        calls += [{"date_range": (lo, lo + pd.Timedelta(hours=20))}, {"date_range": (None, lo)},
                  {"date_range": (lo, None), "columns": ["s"], "output_format": "pyarrow"}]
        dq = QueryBuilder().date_range((lo, lo + pd.Timedelta(hours=30)))
        calls.append({"query_builder": dq})
        rq = QueryBuilder().date_range((lo, lo + pd.Timedelta(hours=30)))
        calls.append({"query_builder": rq[rq["v"] > 1.2]})
    for kw in calls:
        same(mor.read(sym, **kw).data, cow.read(sym, **kw).data)  # type: ignore[arg-type]
    for k in (1, 4, 50):
        same(mor.head(sym, k).data, cow.head(sym, k).data)
        same(mor.tail(sym, k).data, cow.tail(sym, k).data)
    same(mor.read(sym, lazy=True).collect().data, cow.read(sym, lazy=True).collect().data)
    lazy_q = mor.read(sym, lazy=True)
    lazy_q = lazy_q[lazy_q["v"] < 0.5]
    lazy_c = cow.read(sym, lazy=True)
    lazy_c = lazy_c[lazy_c["v"] < 0.5]
    same(lazy_q.collect().data, lazy_c.collect().data)
    same(mor.read_batch([sym])[0].data, cow.read_batch([sym])[0].data)
    ref = cow.scan(sym).to_table()
    for target in (1, 300, 1 << 30):
        plan = mor.scan(sym)
        tasks = plan.tasks(target_bytes=target)
        parts = [t.to_table(plan._store) for t in tasks]
        got = pa.concat_tables(parts) if parts else plan.schema.empty_table()
        assert got.equals(ref)
    ref = cow.scan(sym, query_builder=rare).to_table()
    for target in (1, 1 << 30):  # scan tasks over row groups that statistics pruned
        plan = mor.scan(sym, query_builder=rare)
        parts = [t.to_table(plan._store) for t in plan.tasks(target_bytes=target)]
        assert (pa.concat_tables(parts) if parts else ref.schema.empty_table()).equals(ref)
    assert mor.get_description(sym).row_count == cow.get_description(sym).row_count


def tsframe(rng: np.random.Generator, n: int, start: int = 0, tag: str = "b") -> pd.DataFrame:
    hours = np.sort(rng.integers(start, start + 48, n))
    return pd.DataFrame({"k": rng.integers(0, 3, n), "v": rng.normal(size=n).round(2),
                         "s": [f"{tag}{i}" for i in range(n)]},
                        index=pd.DatetimeIndex(pd.Timestamp("2024-01-01") + pd.to_timedelta(hours, "h")))


@pytest.mark.parametrize("seed", [0, 1])
def test_timeseries_merges_read_as_copy_on_write(ac: Arctic, seed: int) -> None:
    rng = np.random.default_rng(seed)
    libs = pair(ac, columns_per_segment=2 if seed else 127)
    mor, cow = libs
    both(libs, "write", "x", tsframe(rng, 60))
    for step in range(7):
        src = tsframe(rng, 9, start=-3, tag=f"m{step}").reset_index().drop_duplicates(["index", "k"])
        src = src.set_index("index").rename_axis(None)
        both(libs, "merge", "x", src, strategy=STRATEGIES[step % 3], on=["k"])
        if step % 3 == 2:
            keys = cow.read("x").data.sample(4, random_state=step)[["k"]]
            both(libs, "delete_rows", "x", keys, on=["k"])
        check_reads(mor, cow, "x", timeseries=True)
    assert mor.read("x").data.shape == cow.read("x").data.shape
    for v in range(mor.read("x").version + 1):  # older versions read as they were
        same(mor.read("x", as_of=v).data, cow.read("x", as_of=v).data)


def test_row_numbered_merges_read_as_copy_on_write(ac: Arctic) -> None:
    rng = np.random.default_rng(7)
    libs = pair(ac)
    mor, cow = libs
    df = pd.DataFrame({"k": np.arange(40), "v": rng.normal(size=40).round(2), "s": [f"r{i}" for i in range(40)]})
    both(libs, "write", "r", df)
    for step in range(6):
        keys = rng.choice(60, 6, replace=False)
        src = pd.DataFrame({"k": keys, "v": rng.normal(size=6).round(2), "s": [f"n{step}{i}" for i in range(6)]})
        both(libs, "merge", "r", src, strategy=STRATEGIES[step % 3], on=["k"])
        if step == 3:
            both(libs, "delete_rows", "r", pd.DataFrame({"k": rng.choice(60, 10)}), on=["k"])
        check_reads(mor, cow, "r", timeseries=False)


def test_a_merge_writes_deltas_and_rewrites_no_base_segment(ac: Arctic) -> None:
    mor, _ = pair(ac, rows_per_segment=10)
    df = pd.DataFrame({"a": np.arange(100), "b": np.arange(100) * 1.0}, index=pd.date_range("2024-01-01", periods=100))
    mor.write("s", df)
    before = set(mor.inspect_index("s")["key"])
    src = df.iloc[[15, 16, 55]].copy()
    src["a"] += 1000
    mor.merge("s", src)
    after = mor.inspect_index("s")
    new = [k for k in after["key"] if k not in before]
    assert len(new) == 1  # one delta segment; every base segment still referenced as it was
    assert before <= set(after["key"])
    expect = df.copy()
    expect.iloc[[15, 16, 55], 0] += 1000
    pd.testing.assert_frame_equal(mor.read("s").data, expect, check_freq=False)
    pd.testing.assert_frame_equal(mor.read("s", as_of=0).data, df, check_freq=False)
    # a row range reads only the row groups that give its rows (their counts come from the deltas)
    assert mor.scan("s", row_range=(0, 5)).segments == 1 and mor.scan("s", row_range=(52, 57)).segments == 1
    assert mor.scan("s").segments == 10
    pd.testing.assert_frame_equal(mor.read("s", row_range=(52, 57)).data, expect.iloc[52:57], check_freq=False)


def test_append_and_update_after_merges_read_as_copy_on_write(ac: Arctic) -> None:
    rng = np.random.default_rng(3)
    libs = pair(ac)
    mor, cow = libs
    both(libs, "write", "x", tsframe(rng, 40))
    both(libs, "merge", "x", tsframe(rng, 5, tag="m"), on=["k"])
    later = tsframe(rng, 5, start=100, tag="a")
    both(libs, "append", "x", later)
    check_reads(mor, cow, "x", timeseries=True)
    both(libs, "merge", "x", tsframe(rng, 5, start=10, tag="u"), on=["k"])
    both(libs, "update", "x", tsframe(rng, 3, start=20, tag="p"))
    check_reads(mor, cow, "x", timeseries=True)
    both(libs, "merge", "x", tsframe(rng, 5, start=10, tag="w"), on=["k"])
    both(libs, "delete_data_in_range", "x", (pd.Timestamp("2024-01-01 12:00"), pd.Timestamp("2024-01-02")))
    check_reads(mor, cow, "x", timeseries=True)


def test_errors_are_the_same_merged_on_read(ac: Arctic) -> None:
    libs = pair(ac)
    df = pd.DataFrame({"k": [1, 2, 3], "v": [1.0, 2.0, 3.0], "s": ["a", "b", "c"]},
                      index=pd.date_range("2024-01-01", periods=3))
    both(libs, "write", "x", df)
    dup = pd.concat([df.iloc[[1]], df.iloc[[1]]])
    both(libs, "merge", "x", dup, on=["k"])  # a stored row matched twice: refused on both
    assert libs[0].read("x").version == 0
    both(libs, "merge", "x", df.iloc[[0]], on=["k"])
    both(libs, "merge", "x", dup, on=["k"])  # refused again, now against a version with deltas
    same(libs[0].read("x").data, libs[1].read("x").data)


def test_statistics_prune_the_row_groups_no_delta_touches(ac: Arctic) -> None:
    libs = pair(ac, rows_per_segment=10)
    mor, cow = libs
    df = pd.DataFrame({"v": np.arange(100.0)}, index=pd.date_range("2024-01-01", periods=100))
    both(libs, "write", "s", df)
    src = pd.DataFrame({"v": [1000.0, 2000.0]}, index=pd.DatetimeIndex(["2024-01-16", "2024-02-25 12:00"]))
    both(libs, "merge", "s", src)  # updates row 15 (row group 1), inserts into row group 5's key range
    both(libs, "delete_rows", "s", pd.DataFrame(index=pd.DatetimeIndex(["2024-03-01"])))  # row 60 (group 6)
    q = QueryBuilder()
    q = q[q["v"] > 500]
    got = mor.read("s", query_builder=q).data
    pd.testing.assert_frame_equal(got, cow.read("s", query_builder=q).data)
    assert list(got["v"]) == [1000.0, 2000.0]
    explain = q.explain(mor, "s")
    assert explain.row_groups_pruned_minmax == 7  # every row group but the three the deltas touch
    assert explain.segments_after_index_range == 10 and explain.segments_pruned_by_statistics == 7
    assert explain.segments_fetched == 3  # the base segments of those three (the deltas are read beside)
    late = QueryBuilder()
    late = late[late["v"] > 95]  # passes rows of an untouched row group only
    pd.testing.assert_frame_equal(mor.read("s", query_builder=late).data, cow.read("s", query_builder=late).data)
    assert late.explain(mor, "s").row_groups_pruned_minmax == 6
    dr = (pd.Timestamp("2024-01-10"), pd.Timestamp("2024-03-05"))
    pd.testing.assert_frame_equal(mor.read("s", date_range=dr, query_builder=q).data,
                                  cow.read("s", date_range=dr, query_builder=q).data)


def test_description_leaves_out_deleted_first_and_last_rows(ac: Arctic) -> None:
    libs = pair(ac, rows_per_segment=10)
    mor, cow = libs
    start = pd.Timestamp("2024-01-01")
    both(libs, "write", "s", pd.DataFrame({"v": np.arange(30.0)}, index=pd.date_range(start, periods=30)))
    ends = pd.DataFrame(index=pd.DatetimeIndex([start, start + pd.Timedelta(days=29)]))
    both(libs, "delete_rows", "s", ends)
    assert mor.get_description("s").date_range == (start + pd.Timedelta(days=1), start + pd.Timedelta(days=28))
    assert mor.get_description("s").date_range == cow.get_description("s").date_range
    # the whole first row group deleted: the first row read comes from the next one
    both(libs, "delete_rows", "s", pd.DataFrame(index=pd.date_range(start, periods=12)))
    assert mor.get_description("s").date_range == cow.get_description("s").date_range
    assert mor.get_description("s").date_range[0] == start + pd.Timedelta(days=12)
    # an append after the new last row (before the deleted one) is accepted as copy-on-write accepts it
    both(libs, "append", "s", pd.DataFrame({"v": [-1.0]}, index=[start + pd.Timedelta(days=28, hours=12)]))
    same(mor.read("s").data, cow.read("s").data)
    both(libs, "delete_rows", "s", pd.DataFrame(index=cow.read("s").data.index))  # every row
    assert all(pd.isna(t) for t in mor.get_description("s").date_range + cow.get_description("s").date_range)
    assert mor.get_description("s").row_count == 0


def test_an_append_keeps_deltas_pending_only_when_sorted_after_every_row(ac: Arctic) -> None:
    libs = pair(ac, rows_per_segment=10)
    mor, cow = libs
    start = pd.Timestamp("2024-01-01")
    both(libs, "write", "s", pd.DataFrame({"v": np.arange(30.0)}, index=pd.date_range(start, periods=30)))
    both(libs, "merge", "s", pd.DataFrame({"v": [-1.0]}, index=[start + pd.Timedelta(days=4)]))
    both(libs, "append", "s", pd.DataFrame({"v": [1.0, 2.0]}, index=pd.date_range("2024-03-01", periods=2)))
    assert mor.compaction_plan("s").layers == 1  # still pending: the appended rows own no change
    same(mor.read("s").data, cow.read("s").data)
    unsorted = pd.DataFrame({"v": [3.0, 4.0]}, index=pd.DatetimeIndex(["2024-04-02", "2024-04-01"]))
    both(libs, "append", "s", unsorted, validate_index=False)
    assert mor.compaction_plan("s").layers == 0  # an unsorted append folds them first
    same(mor.read("s").data, cow.read("s").data)


@pytest.mark.parametrize("regular", [True, False])
def test_merges_on_the_index_alone_read_as_copy_on_write(ac: Arctic, regular: bool) -> None:
    # the index as the only key: the stored rows are found by searching each segment's index
    # column in place (a regular index by arithmetic); with repeated index values, an update
    # that leaves parts of segments in place, and deletes by index
    rng = np.random.default_rng(11)
    libs = pair(ac, rows_per_segment=16)
    mor, cow = libs
    n = 200
    minutes = np.arange(n) * 2 if regular else np.sort(rng.choice(600, n, replace=False))
    if not regular:
        minutes[50:53] = minutes[50]  # repeated index values
    idx = pd.DatetimeIndex(pd.Timestamp("2024-01-01") + pd.to_timedelta(minutes, "min"))
    base = pd.DataFrame({"k": rng.integers(0, 3, n), "v": rng.normal(size=n).round(2),
                         "s": [f"b{i}" for i in range(n)]}, index=idx)
    both(libs, "write", "x", base)
    upd = base.iloc[70:75].copy()
    upd["v"] = 9.0
    both(libs, "update", "x", upd)  # a row group rewritten, its neighbours' segments kept in part
    for step in range(5):
        at = np.sort(rng.choice(n, 12, replace=False))
        src = base.iloc[at].copy()
        src = src[~src.index.duplicated()]
        src["v"] = float(step)
        extra = pd.DataFrame({"k": [7], "v": [-1.0], "s": [f"new{step}"]},
                             index=[idx[at[0]] + pd.Timedelta(seconds=30)])
        src = pd.concat([src, extra]).sort_index()
        strategy = STRATEGIES[step % 3] if regular or step else MergeStrategy("update", "insert")
        both(libs, "merge", "x", src, strategy=strategy)
        check_reads(mor, cow, "x", timeseries=True)
    gone = cow.read("x").data.iloc[[3, 40, 41, 150]]
    both(libs, "delete_rows", "x", gone.iloc[:, :0])
    check_reads(mor, cow, "x", timeseries=True)
    for v in range(mor.read("x").version + 1):
        same(mor.read("x", as_of=v).data, cow.read("x", as_of=v).data)


def test_segments_of_a_regular_index_are_flagged_and_merged_by_arithmetic(ac: Arctic) -> None:
    from arcticlite.index import FLAG_REGULAR

    lib = ac.create_library("lib", LibraryOptions(rows_per_segment=10))
    idx = pd.date_range("2024-01-01", periods=30, freq="s")
    ticks = idx[:10].append(idx[10:20] + pd.Timedelta(milliseconds=1)).append(idx[20:] + pd.to_timedelta(
        np.r_[0, 5, 9, 20, 21, 22, 23, 24, 25, 26], "ms"))  # regular, regular shifted, irregular
    lib.write("x", pd.DataFrame({"v": np.arange(30.0)}, index=ticks))
    leaves = lib._table.index("x").leaves(lib._engine.head("x").index)
    assert [bool(f & FLAG_REGULAR) for f in leaves["flags"]] == [True, True, False]
    src = pd.DataFrame({"v": [-1.0, -2.0, -3.0, -4.0]},
                       index=[ticks[3], ticks[12], ticks[12] + pd.Timedelta(milliseconds=1), ticks[23]])
    lib.merge("x", src)
    want = pd.DataFrame({"v": np.arange(30.0)}, index=ticks)
    want.iloc[[3, 12, 23], 0] = [-1.0, -2.0, -4.0]
    want = pd.concat([want, src.iloc[[2]]]).sort_index(kind="stable")
    pd.testing.assert_frame_equal(lib.read("x").data, want, check_freq=False)


@pytest.mark.parametrize("regular", [True, False])
def test_keys_the_source_repeats_delete_each_stored_row_once(ac: Arctic, regular: bool) -> None:
    # delete_rows / merge by the index with a key given twice: each stored row is found once
    # (the row count, and so every row range, stays right)
    libs = pair(ac, rows_per_segment=2)
    mor, cow = libs
    days = [0, 1, 2, 3, 4, 5] if regular else [7, 18, 24, 24, 25, 30]
    idx = pd.DatetimeIndex(pd.Timestamp("2024-01-01") + pd.to_timedelta(days, "D"))
    both(libs, "write", "x", pd.DataFrame({"v": np.arange(6.0), "k": 1, "s": "a"}, index=idx))
    keys = pd.DataFrame(index=idx[[4, 2, 2, 1]].sort_values())
    both(libs, "delete_rows", "x", keys)
    for lo, hi in ((-1, 9), (0, 9), (1, 3)):
        same(mor.read("x", row_range=(lo, hi)).data, cow.read("x", row_range=(lo, hi)).data)
    assert mor.get_description("x").row_count == cow.get_description("x").row_count
    check_reads(mor, cow, "x", timeseries=True)
