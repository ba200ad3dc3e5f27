"""Staged writes: stage / finalize_staged_data / sort_and_finalize_staged_data /
delete_staged_data / get_staged_symbols (reference §2 "Staged data")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from enginehelpers import all_options, assert_frame_equal, frame, versions_of

from arcticlite import Library, StagedDataFinalizeMethod, StageResult
from arcticlite.exceptions import (
    AppendOrderException,
    ArcticInvalidApiUsageException,
    ArcticUnsupportedDataTypeException,
    SchemaException,
    UnsortedDataException,
    UserInputException,
)


def wide(n: int, start: str, base: int = 0) -> pd.DataFrame:
    idx = pd.date_range(start, periods=n)
    return pd.DataFrame({c: np.arange(base, base + n) + i for i, c in enumerate("abc")}, index=idx)


@all_options
def test_stage_and_finalize_write(lib: Library) -> None:
    df = wide(7, "2024-01-01")
    r2 = lib.stage("s", df.iloc[3:])  # staged out of order: finalize orders by index
    r1 = lib.stage("s", df.iloc[:3])
    assert isinstance(r1, StageResult) and isinstance(r2, StageResult)
    assert lib.get_staged_symbols() == ["s"]
    assert not lib.has_symbol("s") and lib.list_symbols() == []
    item = lib.finalize_staged_data("s", metadata="m")
    assert item.version == 0 and item.metadata == "m"
    assert_frame_equal(lib.read("s").data, df)
    assert lib.get_staged_symbols() == []
    assert lib.list_symbols() == ["s"]


@all_options
def test_finalize_append(lib: Library) -> None:
    df = wide(8, "2024-01-01")
    lib.write("s", df.iloc[:4])
    lib.stage("s", df.iloc[4:6])
    lib.stage("s", df.iloc[6:])
    item = lib.finalize_staged_data("s", mode=StagedDataFinalizeMethod.APPEND)
    assert item.version == 1
    assert_frame_equal(lib.read("s").data, df)
    lib.stage("s", wide(1, "2024-02-01", base=9))
    lib.finalize_staged_data("s", mode="APPEND")  # strings, case-insensitive
    assert len(lib.read("s").data) == 9


def test_finalize_modes_create_missing_symbol(lib: Library) -> None:
    lib.stage("w", frame(2))
    lib.finalize_staged_data("w", mode="write")
    lib.stage("a", frame(2))
    lib.finalize_staged_data("a", mode="append")
    assert set(lib.list_symbols()) == {"w", "a"}
    assert_frame_equal(lib.read("a").data, frame(2))


def test_finalize_write_replaces(lib: Library) -> None:
    lib.write("s", frame(5))
    lib.stage("s", frame(2, start="2020-01-01", base=7))
    lib.finalize_staged_data("s")
    assert_frame_equal(lib.read("s").data, frame(2, start="2020-01-01", base=7))
    assert versions_of(lib, "s") == [0, 1]


def test_finalize_errors(lib: Library) -> None:
    with pytest.raises(UserInputException):  # nothing staged
        lib.finalize_staged_data("s")
    lib.stage("s", frame(2))
    with pytest.raises(ArcticInvalidApiUsageException):
        lib.finalize_staged_data("s", mode="bogus")
    assert lib.get_staged_symbols() == ["s"]
    assert not lib.has_symbol("s")


def test_overlapping_staged_data(lib: Library) -> None:
    lib.stage("s", frame(3))
    lib.stage("s", frame(3, start="2024-01-02", base=10))
    with pytest.raises(UnsortedDataException):
        lib.finalize_staged_data("s")
    assert lib.get_staged_symbols() == ["s"]  # kept
    assert not lib.has_symbol("s")
    lib.sort_and_finalize_staged_data("s")
    got = lib.read("s").data
    assert got.index.is_monotonic_increasing
    assert sorted(got["a"].tolist()) == [0, 1, 2, 10, 11, 12]
    assert lib.get_staged_symbols() == []


def test_sort_and_finalize_interleaved(lib: Library) -> None:
    df = frame(10)
    lib.stage("s", df.iloc[::2])
    lib.stage("s", df.iloc[1::2])
    lib.sort_and_finalize_staged_data("s", metadata="sorted")
    assert_frame_equal(lib.read("s").data, df)
    assert lib.read("s").metadata == "sorted"


def test_finalize_append_before_last_row(lib: Library) -> None:
    lib.write("s", frame(3))
    lib.stage("s", frame(1, start="2023-01-01"))
    with pytest.raises(UnsortedDataException):
        lib.finalize_staged_data("s", mode="append")
    assert lib.get_staged_symbols() == ["s"]
    with pytest.raises(AppendOrderException):
        lib.finalize_staged_data("s", mode="append", delete_staged_data_on_failure=True)
    assert lib.get_staged_symbols() == []
    assert versions_of(lib, "s") == [0]
    assert_frame_equal(lib.read("s").data, frame(3))


def test_finalize_schema_mismatch(lib: Library) -> None:
    lib.stage("s", frame(1))
    lib.stage("s", frame(1, start="2024-01-05", cols=("x",)))
    with pytest.raises(SchemaException):
        lib.finalize_staged_data("s")
    assert not lib.has_symbol("s")
    lib.write("t", frame(2))
    lib.stage("t", frame(1, start="2024-02-01", cols=("zz",)))
    with pytest.raises(SchemaException):
        lib.finalize_staged_data("t", mode="append")
    assert versions_of(lib, "t") == [0]


def test_stage_validation(lib: Library) -> None:
    with pytest.raises(UnsortedDataException):
        lib.stage("s", frame(3).iloc[::-1])
    with pytest.raises(ArcticUnsupportedDataTypeException):
        lib.stage("s", [1, 2, 3])
    assert lib.get_staged_symbols() == []
    lib.stage("s", frame(3).iloc[::-1], sort_on_index=True)
    lib.finalize_staged_data("s")
    assert_frame_equal(lib.read("s").data, frame(3))


def test_range_index_staged_in_staging_order(lib: Library) -> None:
    for k in range(4):
        lib.stage("r", pd.DataFrame({"a": [k, k]}))
    lib.finalize_staged_data("r")
    assert lib.read("r").data["a"].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]


def test_delete_staged_data_and_stage_results(lib: Library) -> None:
    r1 = lib.stage("s", frame(1))
    r2 = lib.stage("s", frame(1, start="2024-01-05", base=5))
    lib.stage("t", frame(1))
    assert lib.get_staged_symbols() == ["s", "t"]
    lib.finalize_staged_data("s", stage_results=[r2])
    assert lib.read("s").data["a"].tolist() == [5]
    assert lib.get_staged_symbols() == ["s", "t"]  # r1 is still staged
    lib.delete_staged_data(r1)
    assert lib.get_staged_symbols() == ["t"]
    lib.delete_staged_data("t")
    assert lib.get_staged_symbols() == []
    with pytest.raises(UserInputException):
        lib.finalize_staged_data("t")


def test_staged_data_of_prefix_sharing_symbols_is_separate(lib: Library) -> None:
    names = ["a", "a/b", "a%2Fb", "a/", "A"]
    for i, n in enumerate(names):
        lib.write(n, frame(1, base=i))
        lib.stage(n, frame(1, start="2024-02-01", base=10 * i + 1))
    assert sorted(lib.get_staged_symbols()) == sorted(names)
    lib.finalize_staged_data("a", mode="append")
    lib.delete_staged_data("a/")
    assert sorted(lib.get_staged_symbols()) == sorted(set(names) - {"a", "a/"})
    assert lib.read("a").data["a"].tolist() == [0, 1]
    for i, n in enumerate(names[1:], start=1):
        assert lib.read(n).data["a"].tolist() == [i]
    lib.delete("a")
    assert sorted(lib.list_symbols()) == sorted(set(names) - {"a"})


def test_a_job_tag_lets_an_abort_find_every_entry_of_its_job() -> None:
    import arcticlite as adb
    from arcticlite.exceptions import UserInputException

    lib = adb.Arctic("mem://").create_library("jobs")
    df = pd.DataFrame({"x": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2))
    mine = [lib.stage("s", df, job="spark_7.3") for _ in range(2)]
    other = lib.stage("s", df.set_axis(pd.date_range("2024-02-01", periods=2)), job="spark_8")
    untagged = lib.stage("s", df.set_axis(pd.date_range("2024-03-01", periods=2)))
    assert all("-spark_7.3-" in r.staged_keys[0] for r in mine)
    lib.delete_staged_data("s", job="spark_7.3")  # e.g. a task died before reporting its results
    lib.finalize_staged_data("s", stage_results=[other, untagged])
    assert len(lib.read("s").data) == 4
    with pytest.raises(UserInputException, match="job must be"):
        lib.stage("s", df, job="a/b")


def test_sort_and_finalize_refuses_staged_frames_whose_schemas_differ() -> None:
    import arcticlite as adb
    from arcticlite.exceptions import SchemaException, SortingException

    lib = adb.Arctic("mem://").create_library("schemas")
    lib.stage("s", pd.DataFrame({"x": [1, 2]}, index=pd.date_range("2024", periods=2)))
    lib.stage("s", pd.DataFrame({"x": ["a", "b"]}, index=pd.date_range("2023", periods=2)))
    with pytest.raises(SchemaException, match="x: INT64 vs x: UTF_DYNAMIC64"):
        lib.sort_and_finalize_staged_data("s")
    assert not lib.has_symbol("s")
    lib.stage("t", pd.DataFrame({"x": [1, 2]}, index=pd.DatetimeIndex(["2024", None])), validate_index=False)
    for finalize in (lib.finalize_staged_data, lib.sort_and_finalize_staged_data):
        with pytest.raises(SortingException, match="NaT"):  # a NaT cannot be ordered
            finalize("t")
    assert not lib.has_symbol("t")


def test_sort_merge_under_dynamic_schema_backfills_as_reads_do() -> None:
    import arcticlite as adb

    lib = adb.Arctic("mem://").create_library("dyn", adb.LibraryOptions(dynamic_schema=True))
    lib.stage("s", pd.DataFrame({"a": [1, 2]}, index=pd.date_range("2024", periods=2)))
    lib.stage("s", pd.DataFrame({"a": [3], "b": [7]}, index=pd.date_range("2023", periods=1)))
    lib.sort_and_finalize_staged_data("s")
    got = lib.read("s").data
    assert got["b"].dtype == "int64" and got["b"].tolist() == [7, 0, 0]  # ints: 0, as ArcticDB fills them


@pytest.mark.parametrize("how", ["finalize_staged_data", "sort_and_finalize_staged_data"])
def test_dynamic_schema_finalize_orders_columns_by_the_frames_first_timestamps(how: str) -> None:
    # as ArcticDB: the frame of the earliest rows gives the first columns, whatever the staging order
    import arcticlite as adb

    lib = adb.Arctic("mem://").create_library("dyn", adb.LibraryOptions(dynamic_schema=True))
    for hour, cols in ((15, "ab"), (4, "cd"), (30, "ef")):
        idx = pd.date_range("2024-01-01", periods=2, freq="h") + pd.Timedelta(hours=hour)
        lib.stage("s", pd.DataFrame({c: [1.0, 2.0] for c in cols}, index=idx))
    getattr(lib, how)("s")
    assert list(lib.read("s").data.columns) == ["c", "d", "a", "b", "e", "f"]
    assert [c.name for c in lib.get_description("s").columns] == ["c", "d", "a", "b", "e", "f"]


@pytest.mark.parametrize("uri", ["mem://", "lmdb"])
def test_queries_see_the_rows_a_sort_merged_frame_lacked_as_missing(uri: str, tmp_path) -> None:
    # as ArcticDB: a plain read shows 0 / False there, but a filter does not match them
    # (`!=` does, as for any missing value), and a projection of them shows 0
    import arcticlite as adb

    ac = adb.Arctic(f"lmdb://{tmp_path}" if uri == "lmdb" else uri)
    lib = ac.create_library("dyn", adb.LibraryOptions(dynamic_schema=True))
    n = 120_000  # more than a segment's rows, pages of one value
    idx = pd.date_range("2024", periods=n, freq="s")
    lib.stage("s", pd.DataFrame({"i": np.full(n, 5, np.int64), "b": np.ones(n, bool)}, index=idx))
    lib.stage("s", pd.DataFrame({"x": np.arange(n // 2, dtype=float)}, index=idx[::2] + pd.Timedelta("1ms")))
    lib.sort_and_finalize_staged_data("s")
    plain = lib.read("s").data
    assert plain["i"].dtype == "int64" and (plain["i"].to_numpy() == 0).sum() == n // 2
    part = lib.read("s", date_range=(idx[10], idx[20])).data  # a trimmed read of the segment too
    assert part["b"].dtype == bool and len(part) == 16 and part["b"].sum() == 11  # 5 rows lack b
    q = adb.QueryBuilder()
    assert len(lib.read("s", query_builder=q[q.i < 6]).data) == n
    q = adb.QueryBuilder()
    assert len(lib.read("s", query_builder=q[q.i != 5]).data) == n // 2
    q = adb.QueryBuilder()
    assert len(lib.read("s", query_builder=q[q.b == False]).data) == 0  # noqa: E712
    q = adb.QueryBuilder()
    assert len(lib.read("s", query_builder=q[q.i.isnull()]).data) == n // 2
    q = adb.QueryBuilder()
    got = lib.read("s", query_builder=q.apply("y", q.i * 2)[q.x < 2]).data
    assert got["y"].dtype == "int64" and got["y"].tolist() == [0, 0]
    assert got["i"].dtype == "int64" and got["i"].tolist() == [0, 0]
    q = adb.QueryBuilder()
    sums = lib.read("s", query_builder=q.resample("1h").agg({"i": "sum", "b": "count"})).data
    assert sums["i"].sum() == 5 * n and sums["b"].sum() == n


def _quotes(first_hour: int, s: list) -> pd.DataFrame:
    return pd.DataFrame({"v": np.arange(len(s), dtype=float), "s": s},
                        index=pd.date_range(pd.Timestamp("2024-01-01") + pd.Timedelta(hours=first_hour),
                                            periods=len(s), freq="h"))


@pytest.mark.parametrize("sort", [False, True])
def test_a_column_of_none_only_combines_with_a_string_column(lib: Library, sort: bool) -> None:
    # as ArcticDB, under static schema too: a staged frame whose string column holds only None
    lib.write("s", _quotes(0, ["x", "y", "z"]), staged=True)
    lib.write("s", _quotes(5, [None, None]), staged=True)
    (lib.sort_and_finalize_staged_data if sort else lib.finalize_staged_data)("s")
    assert lib.read("s").data["s"].tolist() == ["x", "y", "z", None, None]


@pytest.mark.parametrize("sort", [False, True])
def test_staged_columns_of_types_without_a_common_one_are_refused_by_name(lib: Library, sort: bool) -> None:
    lib.write("s", _quotes(0, ["x", "y"]), staged=True)
    lib.write("s", _quotes(5, [1.5, 2.5]), staged=True)
    with pytest.raises(SchemaException, match="E_DESCRIPTOR_MISMATCH"):
        (lib.sort_and_finalize_staged_data if sort else lib.finalize_staged_data)("s")
    assert not lib.has_symbol("s")


def test_sort_and_finalize_needs_a_datetime_index(lib: Library) -> None:
    from arcticlite.exceptions import InternalException

    lib.write("r", pd.DataFrame({"v": [1.0, 2.0]}), staged=True)
    with pytest.raises(InternalException, match="Sort merge only supports datetime indexed data"):
        lib.sort_and_finalize_staged_data("r")
    assert not lib.has_symbol("r")
    lib.finalize_staged_data("r")  # an ordered finalize takes it
    assert lib.read("r").data["v"].tolist() == [1.0, 2.0]


@pytest.mark.parametrize("sort", [False, True])
def test_an_empty_frame_staged_first_does_not_change_the_description(lib: Library, sort: bool) -> None:
    lib.write("s", _quotes(0, ["a"]).iloc[:0].astype({"s": object}), staged=True)
    lib.write("s", _quotes(5, ["p", "q"]), staged=True)
    (lib.sort_and_finalize_staged_data if sort else lib.finalize_staged_data)("s")
    d = lib.get_description("s")
    assert [c.name for c in d.columns] == ["v", "s"] and d.row_count == 2
    assert d.index[0].name is None


def _cols(first_hour: int, n: int, cols: list[str]) -> pd.DataFrame:
    return pd.DataFrame({c: np.arange(n, dtype=float) for c in cols},
                        index=pd.date_range(pd.Timestamp("2024-01-01") + pd.Timedelta(hours=first_hour), periods=n,
                                            freq="h"))


@pytest.mark.parametrize(("mode", "stored", "staged", "expected"), [
    # ArcticDB's order of refusals (6.28, observed side by side): an append's staged columns
    # against the stored ones, then overlapping staged rows, then the staged frames' columns
    ("write", ["a"], [(200, 3, ["a", "b"]), (201, 2, ["a", "b"])], UnsortedDataException),
    ("write", ["a", "b"], [(200, 3, ["a", "b"]), (201, 2, ["a", "c"])], UnsortedDataException),
    ("write", ["a"], [(200, 2, ["a", "b"]), (203, 2, ["a", "c"])], SchemaException),
    ("append", ["a"], [(200, 2, ["a", "b"]), (203, 2, ["a", "b"])], SchemaException),
    ("append", ["a"], [(200, 3, ["a", "b"]), (201, 2, ["a", "b"])], SchemaException),
    ("append", ["a", "b"], [(200, 3, ["a", "b"]), (201, 2, ["a", "c"])], UnsortedDataException),
])
def test_finalize_refusals_come_in_arcticdbs_order(ac, mode: str, stored: list[str], staged: list,
                                                    expected: type[Exception]) -> None:
    lib = ac.create_library("static_order")  # static schema: columns must match
    lib.write("s", _cols(100, 2, stored))
    for first, n, cols in staged:
        lib.write("s", _cols(first, n, cols), staged=True)
    with pytest.raises(expected):
        lib.finalize_staged_data("s", mode=mode)
    assert len(lib.list_versions("s")) == 1 and list(lib.read("s").data.columns) == stored


def test_under_dynamic_schema_columns_without_a_common_type_are_refused_before_overlaps(ac) -> None:
    from arcticlite import LibraryOptions

    lib = ac.create_library("dynamic_order", LibraryOptions(dynamic_schema=True))
    lib.write("s", _quotes(0, ["x", "y", "z"]), staged=True)
    lib.write("s", _quotes(1, [1.5, 2.5]), staged=True)  # overlaps, and s is float here
    with pytest.raises(SchemaException, match="No valid common type"):
        lib.finalize_staged_data("s")
    assert not lib.has_symbol("s")


def _dyn(ac, name: str):
    from arcticlite import LibraryOptions

    return ac.create_library(name, LibraryOptions(dynamic_schema=True))


def _rows(start: int, n: int, cols: dict) -> pd.DataFrame:
    return pd.DataFrame(cols, index=pd.RangeIndex(start, start + n))


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("sort", [False, True])
def test_a_column_of_none_only_is_a_string_column_when_staged_frames_combine(ac, dynamic: bool, sort: bool) -> None:
    # ArcticDB types an object column holding only None as strings: no common type with floats
    lib = _dyn(ac, "none_dyn") if dynamic else ac.create_library("none_static")
    lib.stage("s", _quotes(0, [1.5, 2.5]))
    lib.stage("s", _quotes(5, [None, None]))
    with pytest.raises(SchemaException, match="E_DESCRIPTOR_MISMATCH"):
        (lib.sort_and_finalize_staged_data if sort else lib.finalize_staged_data)("s")
    assert not lib.has_symbol("s")
    lib.delete_staged_data("s")
    lib.stage("s", _quotes(0, ["x", "y"]))  # with strings it combines
    lib.stage("s", _quotes(5, [None, None]))
    (lib.sort_and_finalize_staged_data if sort else lib.finalize_staged_data)("s")
    assert lib.read("s").data["s"].tolist() == ["x", "y", None, None]


def test_under_dynamic_schema_none_only_columns_do_not_join_number_columns(ac) -> None:
    lib = _dyn(ac, "none_append")
    lib.write("s", _quotes(0, [1.5, 2.5]))
    with pytest.raises(SchemaException, match="No valid common type .* for column s"):
        lib.append("s", _quotes(5, [None, None]))
    lib.write("t", _quotes(0, [None, None]))
    with pytest.raises(SchemaException, match="No valid common type"):
        lib.update("t", _quotes(0, [1.5, 2.5]).iloc[:1])
    assert len(lib.list_versions("s")) == 1 and len(lib.list_versions("t")) == 1
    lib.append("t", _quotes(5, ["a", None]))  # a string column takes them
    assert lib.read("t").data["s"].tolist() == [None, None, "a", None]


def test_sort_and_finalize_appending_other_columns_is_refused_before_the_index_kind(ac) -> None:
    from arcticlite.exceptions import InternalException

    lib = ac.create_library("sort_static_order")  # static schema: the stored columns come first
    lib.write("r", _rows(0, 3, {"a": [1, 2, 3]}))
    lib.stage("r", _rows(10, 2, {"b": [1.0, 2.0]}))
    with pytest.raises(SchemaException):
        lib.sort_and_finalize_staged_data("r", mode="append")
    lib.delete_staged_data("r")
    lib.stage("r", _rows(10, 2, {"a": [4, 5]}))
    with pytest.raises(InternalException, match="Sort merge only supports datetime indexed data"):
        lib.sort_and_finalize_staged_data("r", mode="append")
    assert len(lib.list_versions("r")) == 1 and lib.read("r").data["a"].tolist() == [1, 2, 3]


def test_dynamic_schema_staged_appends_refuse_another_index_kind_as_arcticdb_does(ac) -> None:
    from arcticlite.exceptions import InternalException

    lib = _dyn(ac, "dyn_index_kinds")
    lib.write("t", _quotes(0, ["a", "b"]))  # timestamps stored, row numbers staged
    lib.stage("t", _rows(0, 2, {"v": [1.0, 2.0], "s": ["c", "d"]}))
    with pytest.raises(InternalException, match="row-count index"):
        lib.finalize_staged_data("t", mode="append")
    lib.write("r", _rows(0, 2, {"v": [1.0, 2.0]}))  # row numbers stored: a sort merge is refused
    lib.stage("r", _quotes(0, ["a", "b"]))
    with pytest.raises(InternalException, match="Sort merge only supports datetime indexed data"):
        lib.sort_and_finalize_staged_data("r", mode="append")
    lib.write("c", _rows(0, 2, {"s": ["a", "b"]}))  # but types without a common one come first
    lib.stage("c", _rows(5, 0, {"s": np.array([], dtype=float)}))
    with pytest.raises(SchemaException, match="No valid common type"):
        lib.sort_and_finalize_staged_data("c", mode="append")
    assert [len(lib.list_versions(s)) for s in "trc"] == [1, 1, 1]


@pytest.mark.parametrize("sort", [False, True])
def test_dynamic_schema_finalize_describes_the_columns_of_every_staged_frame(ac, sort: bool) -> None:
    lib = _dyn(ac, f"dyn_describe_{sort}")
    lib.stage("s", pd.DataFrame({"i": [1, 2]}, index=pd.date_range("2024-01-10", periods=2)))
    lib.stage("s", pd.DataFrame({"i": [3, 4], "t": ["x", None]}, index=pd.date_range("2024-01-03", periods=2)))
    (lib.sort_and_finalize_staged_data if sort else lib.finalize_staged_data)("s")
    assert [c.name for c in lib.get_description("s").columns] == ["i", "t"]
    assert lib.read("s").data.to_dict("list") == {"i": [3, 4, 1, 2], "t": ["x", None, None, None]}


def test_sort_on_index_needs_an_index(lib: Library) -> None:
    from arcticlite.exceptions import InternalException

    with pytest.raises(InternalException, match="Sort requested on index but no index supplied"):
        lib.stage("r", _rows(0, 2, {"v": [2.0, 1.0]}), sort_on_index=True)
    assert lib.get_staged_symbols() == []
    lib.stage("r", _rows(0, 2, {"v": [2.0, 1.0]}), sort_columns=["v"])  # sorting by a column works
    lib.finalize_staged_data("r")
    assert lib.read("r").data["v"].tolist() == [1.0, 2.0]
