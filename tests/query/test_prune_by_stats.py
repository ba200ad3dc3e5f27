"""Leading QueryBuilder filters skip the row groups whose page min/max prove that no row passes
(``table/_prune.py``): the results are those of an unpruned read, with fewer segments
decoded."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

from arcticlite import Arctic, Library, LibraryOptions, QueryBuilder
from arcticlite.table import _segments


@pytest.fixture(params=[(1_000, 127), (1_000, 1)], ids=["rows", "rows-and-columns"])
def plib(uri: str, request: pytest.FixtureRequest) -> Iterator[Library]:
    rows, cols = request.param
    yield Arctic(uri).create_library("p", LibraryOptions(rows_per_segment=rows, columns_per_segment=cols))


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Row groups whose rows were decoded, per read: those the plan kept, less those their
    segment's reader ruled out before decoding a row (a read that judges when decoding)."""
    seen: list[int] = []
    real = _segments._fetch_decode

    def spy(store: Any, jobs: list[Any], leaves: np.ndarray, *a: Any, **k: Any) -> Any:
        out = real(store, jobs, leaves, *a, **k)
        seen.append(len({int(leaves[j.pos]["start_row"]) for j, t in zip(jobs, out, strict=True)
                         if t is not _segments.RULED_OUT}))
        return out

    monkeypatch.setattr(_segments, "_fetch_decode", spy)
    return seen


def frame(n: int = 20_000) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    return pd.DataFrame({
        "x": np.arange(n, dtype=np.int64),
        "y": rng.standard_normal(n),
        "s": np.where(np.arange(n) < n // 2, "low", "high"),
        "p": np.round(100 + np.cumsum(rng.integers(-1, 2, n)) / 100, 2),
    }, index=pd.date_range("2024-01-01", periods=n, freq="s"))


def unpruned(lib: Library, sym: str, q: QueryBuilder, monkeypatch: pytest.MonkeyPatch) -> pd.DataFrame:
    with monkeypatch.context() as m:
        m.setattr(lib._table, "options", dataclasses.replace(lib._table.options, prune_by_statistics=False))
        return lib.read(sym, query_builder=q).data


def test_selective_filters_skip_row_groups(plib: Library, decoded: list[int],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    df = frame()
    plib.write("s", df)
    q = QueryBuilder()
    q = q[(q["x"] >= 18_500) & (q["y"] > 0)]
    got = plib.read("s", query_builder=q).data
    pd.testing.assert_frame_equal(got, df[(df.x >= 18_500) & (df.y > 0)], check_freq=False)
    pd.testing.assert_frame_equal(got, unpruned(plib, "s", q, monkeypatch), check_freq=False)
    assert decoded[0] == 2  # of 20 row groups
    q2 = QueryBuilder()
    q2 = q2[q2["s"] == "low"]
    assert len(plib.read("s", query_builder=q2).data) == 10_000
    q3 = QueryBuilder()
    q3 = q3[q3["x"].isin([5, 15_001])].apply("z", q3["x"] * 2)
    assert plib.read("s", query_builder=q3).data["z"].tolist() == [10, 30_002]
    nothing = QueryBuilder()
    nothing = nothing[nothing["p"] > 1_000]
    assert plib.read("s", query_builder=nothing).data.empty


def test_range_index_results_are_unchanged(plib: Library, monkeypatch: pytest.MonkeyPatch) -> None:
    df = frame().reset_index(drop=True)
    plib.write("r", df)
    q = QueryBuilder()
    q = q[q["x"] > 19_990]
    got = plib.read("r", query_builder=q).data
    pd.testing.assert_frame_equal(got, unpruned(plib, "r", q, monkeypatch))
    assert got.index.equals(pd.RangeIndex(9)) and got["x"].tolist() == list(range(19_991, 20_000))


def test_columns_missing_from_old_segments_keep_their_row_groups(uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = Arctic(uri).create_library("d", LibraryOptions(dynamic_schema=True, rows_per_segment=100))
    old = pd.DataFrame({"y": np.arange(300.0)}, index=pd.date_range("2024-01-01", periods=300, freq="s"))
    new = pd.DataFrame({"y": np.arange(300.0, 600.0), "x": np.arange(1, 301)},
                       index=pd.date_range("2024-01-02", periods=300, freq="s"))
    lib.write("d", old)
    lib.append("d", new)
    q = QueryBuilder()
    q = q[q["x"] == 0]  # the old rows read back as 0, but in a query x is missing there: no match
    got = lib.read("d", query_builder=q).data
    assert got.empty
    pd.testing.assert_frame_equal(got, unpruned(lib, "d", q, monkeypatch), check_freq=False)
    q = QueryBuilder()
    q = q[q["x"].isna() | (q["x"] <= 3)]
    got = lib.read("d", query_builder=q).data
    assert len(got) == 303 and got["x"].tolist()[-4:] == [0, 1, 2, 3]
    pd.testing.assert_frame_equal(got, unpruned(lib, "d", q, monkeypatch), check_freq=False)


@pytest.mark.s3
def test_s3_reads_only_the_metadata_of_pruned_segments(s3_uri: str, decoded: list[int], whole_fetches: Any,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    lib = Arctic(s3_uri).create_library("p", LibraryOptions(rows_per_segment=1_000))
    df = frame()
    lib.write("s", df)
    fetched = whole_fetches(lib._store)
    q = QueryBuilder()
    q = q[q["x"] < 1_500]
    got = lib.read("s", query_builder=q).data
    pd.testing.assert_frame_equal(got, df[df.x < 1_500], check_freq=False)
    assert decoded == [2] and len(fetched) == 2  # 18 of 20 segments: a ranged read of their tail
    pd.testing.assert_frame_equal(got, unpruned(lib, "s", q, monkeypatch), check_freq=False)
