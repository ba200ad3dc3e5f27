"""Query pushdown that skips what cannot match (issue 15): Bloom filters written with the
segments and consulted while planning, page skipping inside the row groups kept (row-aligned
across column slices), pushdown of ``isin`` / ``!=`` / ``isna`` / ``notna`` / OR, and
``QueryBuilder.explain``. Every result is checked against pandas on the full frame."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

from arcticlite import Arctic, Library, LibraryOptions, QueryBuilder
from arcticlite.exceptions import UnsupportedLibraryOptionValue, UserInputException
from arcticlite.table import _segments


def frame(n: int = 8_000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "id": np.arange(n, dtype=np.int64),
        "k": rng.permutation(n).astype(np.int64) * 7,  # unique, unsorted: min/max cannot prune
        "x": rng.random(n),
        "t": np.char.add("T", np.sort(rng.integers(0, 5_000, n)).astype(str)).astype(object),
        "u": np.char.add("U", rng.integers(0, 10**6, n).astype(str)).astype(object),  # high cardinality
    }, index=pd.date_range("2024-01-01", periods=n, freq="s"))


def make_lib(uri: str, name: str = "p", **opts: Any) -> Library:
    # filters on the unique columns too (at the default 3 % share they would get none)
    base: dict[str, Any] = {"rows_per_segment": 1_000, "bloom_min_distinct": 100, "bloom_max_fraction": 1.0}
    base.update(opts)
    return Arctic(uri).create_library(name, LibraryOptions(**base))


def check(lib: Library, sym: str, q: QueryBuilder, expected: pd.DataFrame) -> None:
    got = lib.read(sym, query_builder=q).data
    pd.testing.assert_frame_equal(got, expected, check_freq=False)


@pytest.fixture
def lmdb_uri(tmp_path: os.PathLike[str]) -> str:
    return f"lmdb://{os.path.join(os.fspath(tmp_path), 'lmdb')}"


def test_bloom_filters_prune_what_min_max_cannot(lmdb_uri: str) -> None:
    lib = make_lib(lmdb_uri)
    df = frame()
    lib.write("s", df)
    v = int(df.k.iloc[4321])
    q = QueryBuilder()
    q = q[q["k"] == v]
    check(lib, "s", q, df[df.k == v])
    ex = q.explain(lib, "s")
    assert ex.row_groups_considered == 8 and ex.row_groups_pruned_minmax == 0
    assert ex.row_groups_pruned_bloom >= 6  # 7 expected; a false positive (~0.8 %) may keep one
    assert ex.segments_fetched == 8 - ex.row_groups_pruned_bloom and ex.rows_returned == 1
    # isin: an absent value first, then one present
    vals_k = [-7, int(df.k.iloc[2_222])]
    q = QueryBuilder()
    q = q[q["k"].isin(vals_k)]
    check(lib, "s", q, df[df.k.isin(vals_k)])
    assert len(lib.read("s", query_builder=q).data) == 1
    # isin on strings: values of two row groups and one absent
    vals = ["U5x", df.u.iloc[10], df.u.iloc[7_990]]
    q = QueryBuilder()
    q = q[q["u"].isin(vals)]
    check(lib, "s", q, df[df.u.isin(vals)])
    assert q.explain(lib, "s").row_groups_pruned_bloom >= 5
    # a value nowhere: every row group goes
    q = QueryBuilder()
    q = q[q["u"] == "U5x"]  # inside every row group's min/max
    check(lib, "s", q, df[df.u == "U5x"])
    ex = q.explain(lib, "s")
    assert ex.row_groups_pruned_bloom >= 7 and ex.segments_fetched <= 1


def test_without_filters_nothing_is_pruned_by_bloom_and_results_agree(lmdb_uri: str) -> None:
    on, off = make_lib(lmdb_uri, "on"), make_lib(lmdb_uri, "off", bloom_min_distinct=None)
    df = frame()
    on.write("s", df)
    off.write("s", df)
    per_write = make_lib(lmdb_uri, "pw")
    per_write.write("s", df, bloom_min_distinct=None)  # this write only: no filters
    v = int(df.k.iloc[17])
    q = QueryBuilder()
    q = q[q["k"] == v]
    for lib in (on, off, per_write):
        check(lib, "s", q, df[df.k == v])
    assert q.explain(on, "s").row_groups_pruned_bloom >= 6
    assert q.explain(off, "s").row_groups_pruned_bloom == 0
    assert q.explain(per_write, "s").row_groups_pruned_bloom == 0
    per_write.append("s", frame(2_000, seed=1).set_index(
        pd.date_range("2025-01-01", periods=2_000, freq="s")), bloom_min_distinct=50)


def test_staged_segments_take_the_stage_calls_threshold(lmdb_uri: str) -> None:
    lib = make_lib(lmdb_uri, "st", bloom_min_distinct=None)  # the library writes no filters
    df = frame()
    lib.stage("with", df, bloom_min_distinct=100)
    lib.stage("without", df)
    for sym in ("with", "without"):
        lib.finalize_staged_data(sym)
    v = int(df.k.iloc[4321])
    q = QueryBuilder()
    q = q[q["k"] == v]
    for sym in ("with", "without"):
        check(lib, sym, q, df[df.k == v])
    assert q.explain(lib, "with").row_groups_pruned_bloom >= 6
    assert q.explain(lib, "without").row_groups_pruned_bloom == 0
    with pytest.raises(UserInputException, match="bloom_min_distinct"):
        lib.stage("bad", df, bloom_min_distinct=0)
    assert lib.get_staged_symbols() == []


def test_bad_thresholds_are_refused_and_change_nothing(lmdb_uri: str) -> None:
    with pytest.raises(UnsupportedLibraryOptionValue, match="bloom_min_distinct"):
        LibraryOptions(bloom_min_distinct=0)
    lib = make_lib(lmdb_uri)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(UserInputException, match="bloom_min_distinct"):
            lib.write("s", frame(100), bloom_min_distinct=bad)
    assert not lib.has_symbol("s")


def test_filters_take_at_most_three_percent_of_a_segment_by_default(lmdb_uri: str) -> None:
    n = 200_000
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"k": rng.integers(-(10**9), 10**9, n), "x": rng.random(n),
                       "ticker": np.char.add("T", rng.integers(0, 10_000, n).astype(str)).astype(object)},
                      index=pd.date_range("2024-01-01", periods=n, freq="s"))

    def stored(lib: Library) -> int:
        segs = lib.inspect_segments("s").drop_duplicates("key")
        return int(segs.segment_bytes.sum())

    ac = Arctic(lmdb_uri)
    sizes = {}
    for name, opts in {"none": {"bloom_min_distinct": None}, "default": {},
                       "all": {"bloom_max_fraction": 1.0}}.items():
        lib = ac.create_library(name, LibraryOptions(**opts))
        lib.write("s", df)
        sizes[name] = stored(lib)
        v = int(df.k.iloc[123_456])
        q = QueryBuilder()
        q = q[q["k"] == v]
        check(lib, "s", q, df[df.k == v])
        # the unique random integers get a filter only when their 10 bits a row may be spent
        assert (q.explain(lib, "s").row_groups_pruned_bloom >= 1) == (name == "all")
        q = QueryBuilder()
        q = q[q["ticker"] == "T123"]
        check(lib, "s", q, df[df.ticker == "T123"])
    assert sizes["none"] < sizes["default"] <= 1.03 * sizes["none"]  # the tickers' filters only
    assert sizes["all"] > 1.06 * sizes["none"]  # 10 bits a row for the unique integers
    with pytest.raises(UnsupportedLibraryOptionValue, match="bloom_max_fraction"):
        LibraryOptions(bloom_max_fraction=1.5)


@pytest.mark.s3
def test_s3_reads_only_tails_and_filters_of_pruned_segments(s3_uri: str, whole_fetches: Any) -> None:
    lib = make_lib(s3_uri, rows_per_segment=20_000)
    df = frame(80_000)
    lib.write("s", df)
    fetched = whole_fetches(lib._store)
    v = int(df.k.iloc[123])
    q = QueryBuilder()
    q = q[q["k"] == v]
    check(lib, "s", q, df[df.k == v])
    ex = q.explain(lib, "s")
    assert ex.row_groups_pruned_bloom >= 2  # 3 of 4 expected
    assert len(fetched) == 2 * ex.segments_fetched  # whole GETs only for the kept segments (read + explain)
    total = sum(int(n) for n in lib._table.index("s").leaves(lib._resolve("s", None).index)["nbytes"])
    assert 0 < ex.metadata_bytes < total / 4  # pruned segments: ranged reads of tails and filters


@pytest.mark.s3
def test_s3_fetches_only_the_byte_ranges_of_pages_a_read_needs(s3_uri: str, whole_fetches: Any,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_segments, "PAGE_SIZE", 16 << 10)  # 2,048 int64 values a page
    lib = make_lib(s3_uri, rows_per_segment=100_000, bloom_min_distinct=None)
    df = frame(200_000)
    lib.write("s", df)
    store = lib._store
    fetched = whole_fetches(store)
    ranged: list[int] = []
    read_range = store.read_range

    def counting(key: str, offset: int, length: int) -> bytes:
        out = read_range(key, offset, length)
        ranged.append(len(out))
        return out

    monkeypatch.setattr(store, "read_range", counting)
    leaves = lib._table.index("s").leaves(lib._resolve("s", None).index)
    segment = int(leaves["nbytes"][1])
    q = QueryBuilder()
    q = q[(q["id"] >= 150_000) & (q["id"] < 150_500)]  # 500 rows of the second segment
    check(lib, "s", q, df[(df.id >= 150_000) & (df.id < 150_500)])
    assert fetched == []  # no segment downloaded whole
    ex = q.explain(lib, "s")
    # the planner's tails of both segments, then the kept one's metadata and the pages of 500 rows
    assert 0 < sum(ranged) / 2 - ex.metadata_bytes < segment / 8
    assert ex.segments_ranged == 1 and ex.pages_skipped > 0 and ex.bytes_fetched < segment / 8
    # a filter passing most rows: the segment is worth one whole GET
    q = QueryBuilder()
    q = q[q["id"] >= 102_000]
    check(lib, "s", q, df[df.id >= 102_000])
    assert len(fetched) == 1 and q.explain(lib, "s").segments_ranged == 0
    # with ranged reads off the same read downloads the whole segment, and agrees
    monkeypatch.setattr(_segments, "RANGED_MIN_BYTES", 1 << 40)
    fetched.clear()
    q = QueryBuilder()
    q = q[(q["id"] >= 150_000) & (q["id"] < 150_500)]
    check(lib, "s", q, df[(df.id >= 150_000) & (df.id < 150_500)])
    assert len(fetched) == 1


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Engine segments of 2 KiB pages (256 int64 values), so segments hold several pages."""
    monkeypatch.setattr(_segments, "PAGE_SIZE", 2048)
    yield


@pytest.mark.parametrize("cols", [127, 1], ids=["one-slice", "one-column-per-slice"])
def test_page_skipping_keeps_column_slices_row_aligned(lmdb_uri: str, small_pages: None, cols: int) -> None:
    lib = make_lib(lmdb_uri, rows_per_segment=4_000, columns_per_segment=cols)
    df = frame()
    lib.write("s", df)
    q = QueryBuilder()
    q = q[(q["id"] >= 1_000) & (q["id"] < 1_100)]
    check(lib, "s", q, df[(df.id >= 1_000) & (df.id < 1_100)])
    ex = q.explain(lib, "s")
    assert ex.row_groups_pruned_minmax == 1 and ex.pages_skipped > 0 and ex.rows_skipped > 3_000
    # OR across columns of different slices; sorted t and id prune pages on either side
    q = QueryBuilder()
    q = q[(q["id"] < 300) | (q["t"] == df.t.iloc[7_900]) | (q["x"] > 2)]
    check(lib, "s", q, df[(df.id < 300) | (df.t == df.t.iloc[7_900]) | (df.x > 2)])
    assert q.explain(lib, "s").pages_skipped > 0
    # the filter column not among the columns returned
    q = QueryBuilder()
    q = q[q["id"].isin([5, 2_500, 7_999])]
    got = lib.read("s", query_builder=q, columns=["x", "u"]).data
    pd.testing.assert_frame_equal(got, df.loc[df.id.isin([5, 2_500, 7_999]), ["x", "u"]], check_freq=False)


def test_null_and_not_equal_pushdown(lmdb_uri: str, small_pages: None) -> None:
    lib = make_lib(lmdb_uri, rows_per_segment=2_000)
    n = 8_000
    df = pd.DataFrame({
        "c": np.where(np.arange(n) < 4_000, 5, np.arange(n)).astype(np.int64),  # constant 5 first
        "f": np.where((np.arange(n) >= 6_000) & (np.arange(n) % 3 == 0), np.nan, 1.0),
        "s": np.where(np.arange(n) < 2_000, None, "v").astype(object),
    }, index=pd.date_range("2024-01-01", periods=n, freq="s"))
    lib.write("n", df)
    cases = [
        (lambda q: q[q["c"] != 5], lambda d: d[d.c != 5], 2),
        (lambda q: q[q["f"].isna()], lambda d: d[d.f.isna()], 3),
        (lambda q: q[q["s"].isnull()], lambda d: d[d.s.isnull()], 3),
        (lambda q: q[q["s"].notnull() & (q["c"] == 5)], lambda d: d[d.s.notnull() & (d.c == 5)], 3),
        (lambda q: q[(q["c"] == 5) | q["f"].isna()], lambda d: d[(d.c == 5) | d.f.isna()], 1),
    ]
    for build, expect, pruned in cases:
        q = build(QueryBuilder())
        check(lib, "n", q, expect(df))
        ex = q.explain(lib, "n")
        assert ex.row_groups_pruned_minmax == pruned, (ex, pruned)


def test_explain_reports_index_range_and_bytes(lmdb_uri: str) -> None:
    lib = make_lib(lmdb_uri, columns_per_segment=2)
    df = frame()
    lib.write("s", df)
    q = QueryBuilder()
    q = q[q["x"] > 0.5]
    ex = q.explain(lib, "s", date_range=(df.index[0], df.index[2_500]))
    assert ex.segments_total == 8 * 3 and ex.segments_pruned_by_index_range == 5 * 3
    assert ex.rows_returned == int((df.x.iloc[:2_501] > 0.5).sum())
    assert ex.bytes_fetched > 0 and ex.segments_fetched == 3 * 3
    d = ex.to_dict()
    assert d["segments_pruned_by_index_range"] == 15 and "pages_skipped" in d
    assert "pruned by min/max" in str(ex)
    with pytest.raises(UserInputException, match="arcticlite Library"):
        q.explain(object(), "s")


def test_filters_after_apply_push_down_unless_on_the_projected_column(lmdb_uri: str) -> None:
    lib = make_lib(lmdb_uri)
    df = frame()
    lib.write("s", df)
    q = QueryBuilder()
    q = q.apply("y", q["x"] * 2)
    q = q[(q["id"] < 500) & (q["y"] > 1.0)]
    exp = df.assign(y=df.x * 2)
    check(lib, "s", q, exp[(exp.id < 500) & (exp.y > 1.0)])
    assert q.explain(lib, "s").row_groups_pruned_minmax == 7  # on id; y is not stored
    q = QueryBuilder()
    q = q.apply("id", q["x"] * 0)  # overwrites a stored column: its statistics no longer apply
    q = q[q["id"] == 0]
    exp = df.assign(id=df.x * 0)
    check(lib, "s", q, exp[exp.id == 0])
    assert q.explain(lib, "s").row_groups_pruned_minmax == 0


def test_compaction_keeps_bloom_filters(lmdb_uri: str) -> None:
    lib = make_lib(lmdb_uri, rows_per_segment=500)
    df = frame()
    lib.write("s", df)
    lib.compact_data("s", rows_per_segment=2_000)
    v = int(df.k.iloc[4_321])
    q = QueryBuilder()
    q = q[q["k"] == v]
    check(lib, "s", q, df[df.k == v])
    ex = q.explain(lib, "s")
    assert ex.row_groups_considered == 4 and ex.row_groups_pruned_bloom >= 2  # 3 expected


def test_scan_tasks_and_lazy_frames_are_pruned_too(lmdb_uri: str, small_pages: None) -> None:
    lib = make_lib(lmdb_uri, rows_per_segment=2_000, columns_per_segment=2)
    df = frame()
    lib.write("s", df)
    v = int(df.k.iloc[6_543])
    q = QueryBuilder()
    q = q[(q["k"] == v) | (q["id"] < 100)]
    plan = lib.scan("s", query_builder=q)
    assert plan.segments < 4 * 3  # the row groups Bloom filters and min/max rule out are gone
    got = pd.concat([b.to_pandas() for t in plan.tasks() for b in t.execute()])
    assert sorted(got["id"].tolist()) == sorted(df[(df.k == v) | (df.id < 100)].id.tolist())
    lazy = lib.read("s", lazy=True)
    lazy = lazy[(lazy["k"] == v) | (lazy["id"] < 100)]
    pd.testing.assert_frame_equal(lazy.collect().data, df[(df.k == v) | (df.id < 100)], check_freq=False)


def test_explain_under_dynamic_schema(lmdb_uri: str) -> None:
    lib = make_lib(lmdb_uri, dynamic_schema=True)
    df = frame(3_000)
    lib.write("s", df[["id", "x"]])
    more = frame(3_000, seed=1).set_index(pd.date_range("2025-01-01", periods=3_000, freq="s"))
    lib.append("s", more[["id", "x", "k"]])  # k only in the later segments
    v = int(more.k.iloc[5])
    q = QueryBuilder()
    q = q[q["k"] == v]
    assert lib.read("s", query_builder=q).data["k"].tolist() == [v]
    ex = q.explain(lib, "s")
    assert ex.rows_returned == 1 and ex.row_groups_pruned_bloom >= 1


@pytest.mark.parametrize("first", [0, 12, 28])
def test_statistics_judged_again_after_a_futile_run_keep_every_row(lmdb_uri: str, monkeypatch: Any,
                                                                   first: int) -> None:
    """After a run of segments whose statistics ruled nothing out, late materialisation judges
    only every few segments; a segment where statistics rule rows out again brings judging
    back, and the rows are those pandas gives in every case."""
    from arcticlite import format as fermion

    judged: list[bool] = []
    real = fermion.FermionReader.match_rows

    def spy(self: Any, *args: Any, prune: bool = True, **kw: Any) -> Any:
        judged.append(prune)
        return real(self, *args, prune=prune, **kw)

    monkeypatch.setattr(fermion.FermionReader, "match_rows", spy)
    lib = make_lib(lmdb_uri)
    n = 40_000  # 40 segments: k holds 0..6 in segments [first, first + 12) only
    pos = np.arange(n)
    inside = (pos >= first * 1_000) & (pos < (first + 12) * 1_000)
    df = pd.DataFrame({"k": np.where(inside, pos % 7, 100 + pos % 50), "x": pos.astype(float)},
                      index=pd.date_range("2024-01-01", periods=n, freq="s"))
    lib.write("s", df)
    q = QueryBuilder()
    check(lib, "s", q[q["k"].isin([5, 6, 120])], df[df.k.isin([5, 6, 120])])
    q = QueryBuilder()
    check(lib, "s", q[q["k"] < 7], df[df.k < 7])
    judged.clear()
    q = QueryBuilder()
    check(lib, "s", q[q["k"] == 5], df[df.k == 5])
    assert len(judged) == 40
    # the 28 segments outside [first, first + 12) are ruled out by their statistics: after the
    # futile run inside it, at most FUTILE_RUN - 1 of them go unjudged before judging resumes
    assert judged.count(False) <= _segments.Judging.FUTILE_RUN - 1
