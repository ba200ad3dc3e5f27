"""Keyed merge (``merge_experimental`` / ``merge``) and delete by key (``delete_rows``).

Each behaviour once, against a pandas expectation written out by hand; the side-by-side
comparison with ArcticDB over random cases is tests/compat/test_merge_differential.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from arcticlite import Library, LibraryOptions
from arcticlite.exceptions import (
    SchemaException,
    StorageException,
    UnsortedDataException,
    UserInputException,
)
from arcticlite.library import MergeAction, MergeStrategy
from arcticlite.table import TableEngine
from arcticlite.table._merge import match_codes, plan_chunks

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def days(*d: int) -> pd.DatetimeIndex:
    return pd.DatetimeIndex([pd.Timestamp("2024-01-01") + pd.Timedelta(days=x) for x in d])


def tframe(a: list[int], b: list[float], idx: list[int]) -> pd.DataFrame:
    return pd.DataFrame({"a": np.array(a, dtype=np.int64), "b": np.array(b, dtype=np.float64)}, index=days(*idx))


def read(lib: Library, sym: str = "s") -> pd.DataFrame:
    return lib.read(sym).data


def unchanged(lib: Library, sym: str, version: int) -> None:
    assert lib.read(sym).version == version
    assert [v.version for v in lib.list_versions(sym)].count(version + 1) == 0


# -- strategies ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("strategy", "expected"), [
    (MergeStrategy(), tframe([1, 20, 3, 40], [1, 20, 3, 40], [0, 1, 2, 3])),
    (MergeStrategy("update", "do_nothing"), tframe([1, 20, 3], [1, 20, 3], [0, 1, 2])),
    (MergeStrategy("DO_NOTHING", "Insert"), tframe([1, 2, 3, 40], [1, 2, 3, 40], [0, 1, 2, 3])),
    (MergeStrategy(MergeAction.UPDATE, MergeAction.INSERT), tframe([1, 20, 3, 40], [1, 20, 3, 40], [0, 1, 2, 3])),
])
def test_strategies(lib: Library, strategy: MergeStrategy, expected: pd.DataFrame) -> None:
    lib.write("s", tframe([1, 2, 3], [1, 2, 3], [0, 1, 2]), metadata="old")
    item = lib.merge_experimental("s", tframe([20, 40], [20, 40], [1, 3]), strategy=strategy)
    assert item.version == 1 and item.data is None and item.metadata is None
    pd.testing.assert_frame_equal(read(lib), expected, check_freq=False)
    assert lib.read("s").metadata is None  # metadata=None clears it, as update does


@pytest.mark.parametrize("strategy", [("insert", "update"), ("do_nothing", "do_nothing"), ("update", "update")])
def test_invalid_strategy_is_refused_and_changes_nothing(lib: Library, strategy: tuple[str, str]) -> None:
    lib.write("s", tframe([1], [1], [0]))
    with pytest.raises(UserInputException, match="Invalid merge strategy"):
        lib.merge_experimental("s", tframe([2], [2], [0]), strategy=MergeStrategy(*strategy))
    with pytest.raises(UserInputException, match="Invalid MergeAction"):
        lib.merge_experimental("s", tframe([2], [2], [0]), strategy=MergeStrategy("upsert", "insert"))
    unchanged(lib, "s", 0)


def test_merge_is_merge_experimental(lib: Library) -> None:
    lib.write("s", tframe([1, 2], [1, 2], [0, 1]))
    lib.merge("s", tframe([9], [9], [1]), metadata={"k": 1})
    pd.testing.assert_frame_equal(read(lib), tframe([1, 9], [1, 9], [0, 1]), check_freq=False)
    assert lib.read("s").metadata == {"k": 1}


# -- matching -----------------------------------------------------------------------------------
def test_on_columns_with_the_index_and_insert_order(lib: Library) -> None:
    lib.write("s", tframe([1, 2, 3, 4], [1, 2, 3, 4], [0, 1, 1, 2]))
    lib.merge("s", tframe([7, 3, 8], [7, 30, 8], [1, 1, 1]), on=["a"])
    # a=3 at day 1 updated in place; 7 and 8 inserted after the stored rows of day 1, in source order
    pd.testing.assert_frame_equal(read(lib), tframe([1, 2, 3, 7, 8, 4], [1, 2, 30, 7, 8, 4], [0, 1, 1, 1, 1, 2]),
                                  check_freq=False)


def test_one_source_row_updates_every_stored_row_it_matches(lib: Library) -> None:
    lib.write("s", tframe([1, 2, 3], [1, 2, 3], [1, 1, 2]))
    lib.merge("s", tframe([9], [9], [1]))
    pd.testing.assert_frame_equal(read(lib), tframe([9, 9, 3], [9, 9, 3], [1, 1, 2]), check_freq=False)


def test_a_row_matched_twice_under_update_is_refused(lib: Library) -> None:
    lib.write("s", tframe([1, 2], [1, 2], [0, 1]))
    with pytest.raises(UserInputException, match="Multiple source rows match the same target row"):
        lib.merge("s", tframe([8, 9], [8, 9], [1, 1]))
    with pytest.raises(UserInputException, match="Multiple source rows"):
        lib.merge("s", tframe([8, 9], [8, 9], [1, 1]), strategy=MergeStrategy("update", "do_nothing"))
    unchanged(lib, "s", 0)
    lib.merge("s", tframe([8, 9], [8, 9], [1, 1]), strategy=MergeStrategy("do_nothing", "insert"))  # fine: no update
    pd.testing.assert_frame_equal(read(lib), tframe([1, 2], [1, 2], [0, 1]), check_freq=False)


def test_repeated_new_keys_are_all_inserted(lib: Library) -> None:
    lib.write("s", tframe([1], [1], [0]))
    lib.merge("s", tframe([8, 9], [8, 9], [5, 5]))
    pd.testing.assert_frame_equal(read(lib), tframe([1, 8, 9], [1, 8, 9], [0, 5, 5]), check_freq=False)


def test_match_na(lib: Library) -> None:
    stored = pd.DataFrame({"k": [1.0, np.nan], "s": ["x", None], "v": [1, 2]}, index=days(0, 1))
    src = pd.DataFrame({"k": [np.nan], "s": [None], "v": [9]}, index=days(1))
    lib.write("s", stored)
    lib.merge("s", src, on=["k", "s"])  # missing keys match nothing: inserted
    assert read(lib)["v"].tolist() == [1, 2, 9]
    lib.write("s", stored)
    lib.merge("s", src, on=["k", "s"], match_na=True)  # they match each other: updated
    assert read(lib)["v"].tolist() == [1, 9]


def test_range_index_matches_on_columns_and_appends(lib: Library) -> None:
    lib.write("r", pd.DataFrame({"k": [1, 2, 3], "v": [1.0, 2.0, 3.0]}, index=pd.RangeIndex(5, 8)))
    lib.merge("r", pd.DataFrame({"k": [5, 2, 0], "v": [5.0, 9.0, 0.0]}), on=["k"])
    expected = pd.DataFrame({"k": [1, 2, 3, 5, 0], "v": [1.0, 9.0, 3.0, 5.0, 0.0]}, index=pd.RangeIndex(5, 10))
    pd.testing.assert_frame_equal(read(lib, "r"), expected)
    with pytest.raises(UserInputException, match="'on'"):
        lib.merge("r", pd.DataFrame({"k": [5], "v": [5.0]}))
    unchanged(lib, "r", 1)


# -- refusals: a clear error, nothing written ---------------------------------------------------
def test_refusals_change_nothing(lib: Library) -> None:
    lib.write("s", tframe([1, 2], [1, 2], [0, 1]))
    cases = [
        (UnsortedDataException, "sorted", tframe([1, 2], [1, 2], [3, 1]), {}),
        (SchemaException, "INT64", tframe([1], [1], [0]).astype({"a": np.int32}), {}),
        (SchemaException, "columns must equal", tframe([1], [1], [0])[["b", "a"]], {}),
        (SchemaException, "index", pd.DataFrame({"a": [1], "b": [1.0]}), {}),
        (UserInputException, "'zz'", tframe([1], [1], [0]), {"on": ["zz"]}),
        (SchemaException, "numpy", np.array([1.0]), {}),
    ]
    for exc, text, src, kw in cases:
        with pytest.raises(exc, match=text):
            lib.merge("s", src, **kw)
    with pytest.raises(UserInputException, match="index"):
        lib.write("i", tframe([1], [1], [0]).rename_axis("ix"))
        lib.merge("i", tframe([1], [1], [0]).rename_axis("ix"), on=["ix"])
    unchanged(lib, "s", 0)
    lib.write("u", tframe([1, 2], [1, 2], [1, 0]), validate_index=False)
    with pytest.raises(UserInputException, match="not sorted"):
        lib.merge("u", tframe([1], [1], [0]))
    unchanged(lib, "u", 0)
    multi = pd.DataFrame({"a": [1]}, index=pd.MultiIndex.from_tuples([("x", 1)]))
    lib.write("m", multi)
    with pytest.raises(UserInputException, match="MultiIndex"):
        lib.merge("m", multi)
    unchanged(lib, "m", 0)


def test_missing_symbol_and_upsert(lib: Library) -> None:
    with pytest.raises(StorageException, match="upsert=True"):
        lib.merge("new", tframe([1], [1], [0]))
    with pytest.raises(UserInputException, match="never inserts"):
        lib.merge("new", tframe([1], [1], [0]), upsert=True, strategy=MergeStrategy("update", "do_nothing"))
    assert not lib.has_symbol("new")
    item = lib.merge("new", tframe([1, 1], [1, 2], [0, 0]), upsert=True)
    assert item.version == 0
    pd.testing.assert_frame_equal(read(lib, "new"), tframe([1, 1], [1, 2], [0, 0]), check_freq=False)


def test_dynamic_schema_is_refused(ac: object) -> None:
    dyn = ac.create_library("dyn", LibraryOptions(dynamic_schema=True))  # type: ignore[attr-defined]
    dyn.write("s", tframe([1], [1], [0]))
    with pytest.raises(UserInputException, match="dynamic schema"):
        dyn.merge("s", tframe([2], [2], [0]))
    assert dyn.read("s").version == 0


def test_empty_source_is_a_new_version_with_the_same_data(lib: Library) -> None:
    lib.write("s", tframe([1], [1], [0]), metadata="m")
    assert lib.merge("s", tframe([], [], []), metadata="n").version == 1
    pd.testing.assert_frame_equal(read(lib), tframe([1], [1], [0]), check_freq=False)
    assert lib.read("s").metadata == "n"


def test_prune_previous_versions(lib: Library) -> None:
    lib.write("s", tframe([1], [1], [0]))
    lib.merge("s", tframe([2], [2], [0]), prune_previous_versions=True)
    assert [v.version for v in lib.list_versions("s")] == [1]


# -- delete by key ------------------------------------------------------------------------------
def test_delete_rows_by_index_and_on(lib: Library) -> None:
    lib.write("s", tframe([1, 2, 3, 4], [1, 2, 3, 4], [0, 1, 1, 2]), metadata="kept")
    keys = pd.DataFrame({"a": [4, 3, 9]}, index=days(2, 1, 1))  # any order; extra keys ignored
    item = lib.delete_rows("s", keys, on=["a"])
    assert item.version == 1 and lib.read("s").metadata == "kept"
    pd.testing.assert_frame_equal(read(lib), tframe([1, 2], [1, 2], [0, 1]), check_freq=False)
    lib.delete_rows("s", pd.DataFrame(index=days(1)))  # the index alone: every row of that day
    pd.testing.assert_frame_equal(read(lib), tframe([1], [1], [0]), check_freq=False)
    assert lib.read("s", as_of=0).data.shape == (4, 2)  # earlier versions keep their rows


def test_delete_rows_range_index_and_errors(lib: Library) -> None:
    lib.write("r", pd.DataFrame({"k": ["x", "y", "x", None], "v": [1, 2, 3, 4]}))
    lib.delete_rows("r", pd.DataFrame({"k": ["x"]}), on=["k"])
    pd.testing.assert_frame_equal(read(lib, "r"), pd.DataFrame({"k": ["y", None], "v": [2, 4]}))
    lib.delete_rows("r", pd.DataFrame({"k": [None]}), on=["k"], match_na=True)
    pd.testing.assert_frame_equal(read(lib, "r"), pd.DataFrame({"k": ["y"], "v": [2]}))
    with pytest.raises(SchemaException, match="key column"):
        lib.delete_rows("r", pd.DataFrame({"k": [1]}), on=["k"])
    with pytest.raises(UserInputException, match="'on'"):
        lib.delete_rows("r", pd.DataFrame({"k": ["y"]}))
    with pytest.raises(StorageException):
        lib.delete_rows("nope", pd.DataFrame({"k": ["y"]}), on=["k"])
    assert lib.read("r").version == 2


# -- cost: only the touched segments are rewritten ----------------------------------------------
def test_only_touched_segments_are_rewritten(ac: object) -> None:
    small = ac.create_library("small", LibraryOptions(rows_per_segment=10,  # type: ignore[attr-defined]
                                                      merge_on_read=False))
    n = 100
    df = pd.DataFrame({"a": np.arange(n), "b": np.arange(n) * 1.0}, index=pd.date_range("2024-01-01", periods=n))
    small.write("s", df)
    before = small.inspect_index("s")
    src = df.iloc[[15, 16]].copy()
    src["a"] += 1000
    src = pd.concat([src, pd.DataFrame({"a": [-1], "b": [-1.0]}, index=[df.index[-1] + pd.Timedelta(days=5)])])
    small.merge("s", src)
    after = small.inspect_index("s")
    new = [k for k in after["key"] if k not in set(before["key"])]
    assert len(new) == 2  # the segment of rows 10-19 again, and one for the inserted row
    assert len(after) == len(before) + 1
    expected = pd.concat([df, src.iloc[2:]])
    expected.iloc[[15, 16], 0] += 1000
    pd.testing.assert_frame_equal(small.read("s").data, expected, check_freq=False)


# -- the vectorised pieces ------------------------------------------------------------------------
def test_plan_chunks_groups_touched_row_groups() -> None:
    gmin = np.array([0, 10, 20, 30], dtype=np.int64)
    gmax = np.array([9, 19, 25, 39], dtype=np.int64)
    chunks = plan_chunks(gmin, gmax, np.array([-5, 12, 19, 20, 27, 50], dtype=np.int64))
    # -5: before group 0; 12..20 touch groups 1 and 2 (one chunk); 27: between 2 and 3; 50: after 3
    assert [(c.g0, c.g1, c.s0, c.s1) for c in chunks] == [(0, 0, 0, 1), (1, 3, 1, 4), (3, 3, 4, 5), (4, 4, 5, 6)]


def test_match_codes() -> None:
    m = match_codes(np.array([0, 1, 1, -1]), np.array([1, 2, 1, -1]))
    assert m.target_src.tolist() == [-1, 0, 0, -1]
    assert m.target_count.tolist() == [0, 2, 2, 0]
    assert m.source_matched.tolist() == [True, False, True, False]


def test_engine_exports_the_operation() -> None:
    from arcticlite.table import Merge, MergeSpec

    assert issubclass(Merge, object) and MergeSpec().matched == "update"
    assert TableEngine is not None


def test_a_merge_built_before_a_concurrent_append_rebases_onto_it(lib: Library) -> None:
    from arcticlite.table import Merge, MergeSpec

    lib.write("s", tframe([1, 2], [1, 2], [0, 1]))
    table, meta = lib._normalize(tframe([9, 7], [9, 7], [1, 5]))
    op = Merge(lib._table, "s", table, meta, MergeSpec(), metadata=None)
    op.begin()
    op.build(*[lib._engine.head("s")] * 2, 99)  # an attempt on version 0 (not committed)
    lib.append("s", tframe([3], [3], [2]))  # the concurrent writer wins
    lib._apply("s", op)  # the commit loop builds again on version 1: the appended row is kept
    pd.testing.assert_frame_equal(read(lib), tframe([1, 9, 3, 7], [1, 9, 3, 7], [0, 1, 2, 5]), check_freq=False)
    assert lib.read("s").version == 2


def test_multiindex_merges_by_its_first_level(lib: Library) -> None:
    def mi(*pairs: tuple[int, int]) -> pd.MultiIndex:
        return pd.MultiIndex.from_tuples([(pd.Timestamp("2024-01-01") + pd.Timedelta(days=d), k) for d, k in pairs])

    lib.write("m", pd.DataFrame({"a": [1, 2, 3]}, index=mi((0, 1), (1, 1), (1, 2))))
    lib.merge("m", pd.DataFrame({"a": [9, 8]}, index=mi((1, 5), (6, 6))))
    # the first level (and 'on') is the key: both rows of day 1 take the source row, level 2 included
    expected = pd.DataFrame({"a": [1, 9, 9, 8]}, index=mi((0, 1), (1, 5), (1, 5), (6, 6)))
    pd.testing.assert_frame_equal(read(lib, "m"), expected)
    assert lib.read("m", date_range=(pd.Timestamp("2024-01-02"), None)).data.shape == (3, 1)


def test_a_refusal_after_a_chunk_was_written_leaves_no_key_behind(ac: object) -> None:
    small = ac.create_library("small", LibraryOptions(rows_per_segment=10))  # type: ignore[attr-defined]
    df = pd.DataFrame({"a": np.arange(100)}, index=pd.date_range("2024-01-01", periods=100))
    small.write("s", df)
    keys = sorted(small._store.list_keys(""))
    src = pd.concat([df.iloc[[5]], df.iloc[[95]], df.iloc[[95]]])  # chunk 1 merges; chunk 10 is ambiguous
    with pytest.raises(UserInputException, match="stored row 95"):
        small.merge("s", src)
    assert sorted(small._store.list_keys("")) == keys
    assert small.read("s").version == 0
