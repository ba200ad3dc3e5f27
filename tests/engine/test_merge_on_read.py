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
    calls: list[dict[str, object]] = [
        {}, {"output_format": "pyarrow"}, {"output_format": "polars"}, {"columns": ["v"]}, {"columns": []},
        {"row_range": (3, max(3, n - 4))}, {"row_range": (-5, None)}, {"query_builder": q},
        {"columns": ["k"], "query_builder": q},
    ]
    if timeseries:
        lo = pd.Timestamp("2024-01-01") + pd.Timedelta(hours=7)
        calls += [{"date_range": (lo, lo + pd.Timedelta(hours=20))}, {"date_range": (None, lo)},
                  {"date_range": (lo, None), "columns": ["s"], "output_format": "pyarrow"}]
        dq = QueryBuilder().date_range((lo, lo + pd.Timedelta(hours=30)))
        calls.append({"query_builder": dq})
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


def test_append_and_update_after_merges_fold_the_deltas_first(ac: Arctic) -> None:
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
