"""``None`` and ``NaN`` in one object string column: each row keeps its own kind of missing
value, as in ArcticDB, through every read path and every operation that rewrites segments."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from enginehelpers import all_options

import arcticlite as adb
from arcticlite import Library, LibraryOptions, QueryBuilder


def kinds(values: Any) -> list[Any]:
    """The values with each missing one named: ``"NaN"`` for a float NaN, ``None`` for None."""
    return ["NaN" if isinstance(v, float) and math.isnan(v) else v for v in values]


def mixed(n: int, start: str = "2024-01-01") -> pd.DataFrame:
    pattern = np.array(["a", None, np.nan, "b", np.nan, None, "c"], dtype=object)
    return pd.DataFrame({"i": np.arange(n), "s": pattern[np.arange(n) % len(pattern)]},
                        index=pd.date_range(start, periods=n, freq="h"))


@all_options
def test_plain_and_sliced_reads_keep_each_rows_kind(lib: Library) -> None:
    df = mixed(23)
    lib.write("x", df)
    expected = kinds(df["s"])
    assert kinds(lib.read("x").data["s"]) == expected
    assert kinds(lib.read("x", columns=["s"]).data["s"]) == expected
    assert kinds(lib.head("x", 5).data["s"]) == expected[:5]
    assert kinds(lib.tail("x", 4).data["s"]) == expected[-4:]
    assert kinds(lib.read("x", row_range=(3, 11)).data["s"]) == expected[3:11]
    window = lib.read("x", date_range=(df.index[2], df.index[9])).data
    assert kinds(window["s"]) == expected[2:10]
    arrow = lib.read("x", output_format="pyarrow").data
    assert arrow.column_names == ["__index__", "i", "s"]  # nothing extra shows
    assert arrow.column("s").null_count == df["s"].isna().sum()


@all_options
def test_query_results_keep_each_rows_kind(lib: Library) -> None:
    df = mixed(21)
    lib.write("x", df)
    q = QueryBuilder()
    q = q[q["i"].isin(list(range(0, 21, 2)))]
    assert kinds(lib.read("x", query_builder=q).data["s"]) == kinds(df["s"][df["i"] % 2 == 0])
    q = QueryBuilder()
    q = q[q["s"].isna()]
    assert kinds(lib.read("x", query_builder=q).data["s"]) == kinds(df["s"][df["s"].isna()])
    q = QueryBuilder()
    q = q[q["s"] != "a"]  # missing values are "not equal"
    assert kinds(lib.read("x", query_builder=q).data["s"]) == kinds(df["s"][df["s"] != "a"])
    q = QueryBuilder()
    q = q.apply("j", q["i"] * 2).head(6)
    assert kinds(lib.read("x", query_builder=q).data["s"]) == kinds(df["s"][:6])
    lazy = lib.read("x", lazy=True)
    lazy = lazy[lazy["i"] > 10]
    assert kinds(lazy.collect().data["s"]) == kinds(df["s"][df["i"] > 10])


@all_options
def test_append_update_and_compaction_keep_each_rows_kind(lib: Library) -> None:
    lib.write("x", mixed(9))
    only_nan = pd.DataFrame({"i": [100, 101], "s": np.array([np.nan, "z"], dtype=object)},
                            index=pd.date_range("2024-02-01", periods=2))
    only_none = pd.DataFrame({"i": [102, 103], "s": np.array([None, "y"], dtype=object)},
                             index=pd.date_range("2024-02-03", periods=2))
    lib.append("x", only_nan)
    lib.append("x", only_none)
    lib.append("x", mixed(5, "2024-03-01"))
    # lists, not pd.concat: concatenating object columns may turn None into NaN
    expected = (kinds(mixed(9)["s"]) + kinds(only_nan["s"]) + kinds(only_none["s"])
                + kinds(mixed(5, "2024-03-01")["s"]))
    assert kinds(lib.read("x").data["s"]) == expected
    # the update's own majority (NaN here) does not recolour the rows of other writes
    patch = pd.DataFrame({"i": [-1, -2, -3], "s": np.array([np.nan, np.nan, None], dtype=object)},
                         index=pd.date_range("2024-01-01 03:00", periods=3, freq="h"))
    lib.update("x", patch)
    expected = expected[:3] + kinds(patch["s"]) + expected[6:]
    assert kinds(lib.read("x").data["s"]) == expected
    lib.compact_data("x")
    assert kinds(lib.read("x").data["s"]) == expected


def test_small_appends_through_the_open_tail(lib: Library) -> None:
    lib.write("x", mixed(3))
    parts = [mixed(3)]
    for k in range(6):
        part = mixed(2 + k % 3, f"2024-01-0{k + 2}")
        lib.append("x", part)
        parts.append(part)
    assert kinds(lib.read("x").data["s"]) == [k for p in parts for k in kinds(p["s"])]


def test_series_range_index_and_concat(lib: Library) -> None:
    s = pd.Series(["a", None, np.nan, None], name="v", dtype=object)
    lib.write("s", s)
    assert kinds(lib.read("s").data) == ["a", None, "NaN", None]
    frame = pd.DataFrame({"a": ["row1", "row2", None, np.nan, math.nan]})
    lib.write("f", frame)
    q = QueryBuilder()
    q = q[q["a"] != "row2"]
    assert kinds(lib.read("f", query_builder=q).data["a"]) == ["row1", None, "NaN", "NaN"]
    joined = adb.concat(lib.read_batch(["f", "f"], lazy=True)).collect().data
    assert kinds(joined["a"]) == kinds(frame["a"]) * 2


def test_column_without_a_mix_costs_nothing_extra(lib: Library) -> None:
    only_none = pd.DataFrame({"s": np.array(["a", None, "b"], dtype=object)})
    no_missing = pd.DataFrame({"s": np.array(["a", "c", "b"], dtype=object)})
    from arcticlite import normalize as norm

    for df in (only_none, no_missing):
        t, _ = norm.normalize(df)
        assert not any(norm.is_nan_rows_name(n) for n in t.column_names)
        lib.write("x", df)
        assert kinds(lib.read("x").data["s"]) == kinds(df["s"])


@pytest.mark.parametrize("library_options", [LibraryOptions(rows_per_segment=4)], indirect=True)
def test_data_written_without_companions_reads_with_the_columns_majority(
        lib: Library, monkeypatch: pytest.MonkeyPatch) -> None:
    """Segments of an older writer (no companions, no listing) read as before: every missing
    value of the column takes its most common kind; newer segments keep each row's kind."""
    from arcticlite import normalize as norm

    with monkeypatch.context() as m:
        m.setattr(norm, "segment_nan_rows", lambda piece, companions: piece)
        lib.write("x", mixed(7))  # a, None, NaN, b, NaN, None, c: a tie, read as None
    assert kinds(lib.read("x").data["s"]) == ["a", None, None, "b", None, None, "c"]
    lib.append("x", mixed(7, "2024-02-01"))
    lib.compact_data("x")
    assert kinds(lib.read("x").data["s"]) == (["a", None, None, "b", None, None, "c"]
                                              + kinds(mixed(7)["s"]))


@all_options
def test_staged_data_keeps_each_rows_kind(lib: Library) -> None:
    late, early = mixed(6, "2024-02-01"), mixed(5)
    lib.stage("x", late)
    lib.stage("x", early)
    lib.sort_and_finalize_staged_data("x")
    assert kinds(lib.read("x").data["s"]) == kinds(early["s"]) + kinds(late["s"])
    lib.stage("y", early)
    lib.finalize_staged_data("y")
    assert kinds(lib.read("y").data["s"]) == kinds(early["s"])
