"""Lazy reads (``read(lazy=True)``, ``read_batch(lazy=True)``), ``concat`` and
``read_batch_and_join``, as ArcticDB 6.28 behaves (its outputs were checked side by side)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import arcticlite as adb
from arcticlite import Library, QueryBuilder, ReadRequest
from arcticlite.exceptions import NoSuchVersionException, SchemaException, UserInputException


@pytest.fixture
def two(lib: Library) -> Library:
    lib.write("a", pd.DataFrame({"x": [1, 2, 3], "k": [7, 8, 9]}, index=pd.date_range("2024-01-01", periods=3)))
    lib.write("b", pd.DataFrame({"x": [4, 5], "z": ["p", "q"]}, index=pd.date_range("2024-01-02", periods=2)))
    return lib


def test_lazy_read_runs_its_clauses_on_collect(two: Library) -> None:
    lz = two.read("a", lazy=True)
    assert isinstance(lz, adb.LazyDataFrame) and isinstance(lz, QueryBuilder)
    lz = lz[lz["x"] > 1]
    lz = lz.apply("w", adb.col("x") * 2)
    got = lz.collect()
    assert got.symbol == "a" and got.version == 0
    q = QueryBuilder()
    q = q[q["x"] > 1].apply("w", adb.col("x") * 2)
    pd.testing.assert_frame_equal(got.data, two.read("a", query_builder=q).data)
    assert got.data["w"].tolist() == [4, 6]
    assert repr(two.read("a", lazy=True)) == "LazyDataFrame(ReadRequest(symbol=a))"


def test_lazy_read_keeps_the_request(two: Library) -> None:
    two.write("a", pd.DataFrame({"x": [0]}, index=pd.date_range("2030-01-01", periods=1)))
    lz = two.read("a", as_of=0, lazy=True, date_range=(pd.Timestamp("2024-01-02"), None), columns=["x"])
    assert lz.collect().data["x"].tolist() == [2, 3]
    assert two.head("a", 2, as_of=0, lazy=True).collect().data["x"].tolist() == [1, 2]
    assert two.tail("a", 1, as_of=0, lazy=True).collect().data["x"].tolist() == [3]
    assert isinstance(two.read("a", lazy=True, output_format="pyarrow").collect().data, pa.Table)
    nothing = two.read("nope", lazy=True)  # nothing is read before collect()
    with pytest.raises(NoSuchVersionException):
        nothing.collect()


def test_lazy_collection(two: Library) -> None:
    col = two.read_batch(["a", "b", "missing"], lazy=True)
    assert isinstance(col, adb.LazyDataFrameCollection) and len(col.split()) == 3
    col = col[col["x"] > 2]
    out = col.collect()
    assert out[0].data["x"].tolist() == [3]
    assert out[1].data["x"].tolist() == [4, 5]
    assert isinstance(out[2], adb.DataError) and out[2].symbol == "missing"
    heads = two.read_batch(["a", "b"], lazy=True).head(1).collect()
    assert [len(v.data) for v in heads] == [1, 1]
    groups = two.read_batch(["a", "b"], lazy=True).groupby("x").agg({"x2": ("x", "sum")}).collect()
    assert groups[1].data["x2"].tolist() == [4, 5]


def test_concat_outer_backfills_like_dynamic_schema(two: Library) -> None:
    got = adb.concat(two.read_batch(["a", "b"], lazy=True)).collect()
    assert isinstance(got, adb.VersionedItemWithJoin)
    assert [v.symbol for v in got.versions] == ["a", "b"] and all(v.data is None for v in got.versions)
    want = pd.DataFrame({"x": [1, 2, 3, 4, 5], "k": [7, 8, 9, 0, 0], "z": [None, None, None, "p", "q"]},
                        index=pd.DatetimeIndex(["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-02", "2024-01-03"]))
    pd.testing.assert_frame_equal(got.data, want, check_freq=False)


def test_concat_inner_and_range_indexes(two: Library) -> None:
    inner = adb.concat([two.read("a", lazy=True), two.read("b", lazy=True)], "inner").collect().data
    assert list(inner.columns) == ["x"] and inner["x"].tolist() == [1, 2, 3, 4, 5]
    two.write("ra", pd.DataFrame({"x": [1.5, 2.5]}))
    two.write("rb", pd.DataFrame({"x": [3.5, 4.5, 5.5], "f": [1.0, 2.0, 3.0]}))
    got = adb.concat(two.read_batch(["ra", "rb"], lazy=True)).collect().data
    assert got.index.equals(pd.RangeIndex(5))
    assert got["f"].isna().tolist() == [True, True, False, False, False]
    with pytest.raises(SchemaException, match="E_DESCRIPTOR_MISMATCH"):
        adb.concat(two.read_batch(["a", "ra"], lazy=True)).collect()
    with pytest.raises(UserInputException, match="join"):
        adb.concat(two.read_batch(["a", "b"], lazy=True), "left")


def test_clauses_after_the_join_run_on_the_joined_rows(two: Library) -> None:
    lz = adb.concat(two.read_batch(["a", "b"], lazy=True))
    lz = lz[lz["x"] > 2]
    assert lz.collect().data["x"].tolist() == [3, 4, 5]
    res = adb.concat([two.read("a", lazy=True), two.read("b", lazy=True)]).resample("2D").agg({"x": "sum"})
    assert res.collect().data["x"].tolist() == [1, 14]  # buckets from the epoch, as pandas' origin="epoch"
    assert repr(adb.concat(two.read_batch(["a"], lazy=True))).endswith("| CONCAT)")


def test_read_batch_and_join(two: Library) -> None:
    q = QueryBuilder().concat("outer")
    q = q[q["x"] < 5]
    got = two.read_batch_and_join([ReadRequest("a"), "b"], q)
    assert got.data["x"].tolist() == [1, 2, 3, 4]
    per_symbol = QueryBuilder()
    per_symbol = per_symbol[per_symbol["x"] >= 3]
    got = two.read_batch_and_join([ReadRequest("a", query_builder=per_symbol), ReadRequest("b")],
                                  QueryBuilder().concat(), output_format="pyarrow")
    assert isinstance(got.data, pa.Table) and got.data.column("x").to_pylist() == [3, 4, 5]
    with pytest.raises(UserInputException, match="no clauses"):
        two.read_batch_and_join(["a", "b"], QueryBuilder())
    with pytest.raises(UserInputException, match="start"):
        two.read_batch_and_join(["a", "b"], QueryBuilder().head(1))
    with pytest.raises(NoSuchVersionException):
        two.read_batch_and_join(["a", "missing"], QueryBuilder().concat())
    with pytest.raises(UserInputException, match="concat"):
        two.read("a", query_builder=QueryBuilder().concat())


def test_arcticdb_conveniences_of_lazy_frames_and_joins() -> None:
    """``**``, ``lazy_df["c"] = expr``, Series joins and pickled collections, as in ArcticDB."""
    import pickle

    import arcticlite as adb

    lib = adb.Arctic("mem://").create_library("conv")
    lib.write("s", pd.DataFrame({"a": np.array([1, 2, 3], "int64")}))
    q = adb.QueryBuilder()
    assert lib.read("s", query_builder=q.apply("c", q["a"] ** 2)).data["c"].tolist() == [1, 4, 9]
    q = adb.QueryBuilder()
    assert len(lib.read("s", query_builder=q[q["a"] < 2**70]).data) == 3  # beyond int64: compared exactly
    lazy = lib.read("s", lazy=True)
    lazy["d"] = lazy["a"] * 10
    assert lazy.collect().data["d"].tolist() == [10, 20, 30]
    lib.write("x1", pd.Series([1, 2], index=pd.date_range("2024", periods=2), name="x"))
    lib.write("x2", pd.Series([3], index=pd.date_range("2025", periods=1), name="x"))
    joined = adb.concat(lib.read_batch(["x1", "x2"], lazy=True)).collect().data
    assert isinstance(joined, pd.Series) and joined.name == "x" and joined.tolist() == [1, 2, 3]
    coll = pickle.loads(pickle.dumps(lib.read_batch(["x1", "x2"], lazy=True)))
    assert [item.data.tolist() for item in coll.collect()] == [[1, 2], [3]]


def test_joins_of_different_time_zones_become_naive_utc_as_in_arcticdb() -> None:
    import arcticlite as adb

    lib = adb.Arctic("mem://").create_library("tz")
    lib.write("ny", pd.DataFrame({"v": [1, 2]}, index=pd.date_range("2024-01-01", periods=2, tz="US/Eastern")))
    lib.write("naive", pd.DataFrame({"v": [3]}, index=pd.date_range("2024-02-01", periods=1)))
    lib.write("ny2", pd.DataFrame({"v": [4]}, index=pd.date_range("2024-03-01", periods=1, tz="US/Eastern")))
    mixed = adb.concat(lib.read_batch(["ny", "naive"], lazy=True)).collect().data
    assert str(mixed.index.dtype) == "datetime64[ns]"
    assert list(mixed.index.astype(str)) == ["2024-01-01 05:00:00", "2024-01-02 05:00:00", "2024-02-01 00:00:00"]
    same = adb.concat(lib.read_batch(["ny", "ny2"], lazy=True)).collect().data
    assert str(same.index.tz) == "US/Eastern"
    coll = adb.LazyDataFrameCollection(lib.read_batch(["ny", "ny2"], lazy=True).split())
    coll["w"] = coll["v"] * 2
    assert [item.data["w"].tolist() for item in coll.collect()] == [[2, 4], [8]]


def test_a_join_refuses_a_pickled_member_before_reading_the_ones_after_it() -> None:
    lib = adb.Arctic("mem://").create_library("pickled")
    lib.write("frame", pd.DataFrame({"v": [1]}, index=pd.date_range("2024", periods=1)))
    lib.write_pickle("obj", {"not": "a frame"})
    with pytest.raises(SchemaException, match="pickled"):  # the missing symbol after it is not read
        adb.concat(lib.read_batch(["frame", "obj", "missing"], lazy=True)).collect()
    with pytest.raises(NoSuchVersionException):
        adb.concat(lib.read_batch(["missing", "obj"], lazy=True)).collect()
