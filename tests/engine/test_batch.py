"""Batch methods: per-item failures come back in place as ``DataError``, the other items are
still written (reference §2 "read_batch", "Batch writes")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from enginehelpers import all_options, assert_frame_equal, frame, versions_of

from arcticlite import (
    DataError,
    DeleteRequest,
    ErrorCategory,
    ErrorCode,
    Library,
    QueryBuilder,
    ReadInfoRequest,
    ReadRequest,
    SymbolDescription,
    UpdatePayload,
    VersionedItem,
    VersionRequestType,
    WriteMetadataPayload,
    WritePayload,
)
from arcticlite.exceptions import (
    ArcticDuplicateSymbolsInBatchException,
    ArcticInvalidApiUsageException,
    ArcticUnsupportedDataTypeException,
)
from arcticlite.library._types import KeyType


@all_options
def test_write_batch(lib: Library) -> None:
    out = lib.write_batch([WritePayload("a", frame(3)), WritePayload("b", frame(4, base=5), metadata="m"),
                           WritePayload("", frame(1))])
    assert isinstance(out[0], VersionedItem) and out[0].version == 0 and out[0].symbol == "a"
    assert isinstance(out[1], VersionedItem) and out[1].metadata == "m"
    assert isinstance(out[2], DataError)
    assert out[2].error_category == ErrorCategory.USER_INPUT
    assert set(lib.list_symbols()) == {"a", "b"}
    assert_frame_equal(lib.read("a").data, frame(3))
    assert_frame_equal(lib.read("b").data, frame(4, base=5))
    assert lib.read("b").metadata == "m"


def test_write_batch_per_item_failures(lib: Library) -> None:
    out = lib.write_batch([WritePayload("ok", frame(2)), WritePayload("unsorted", frame(3).iloc[::-1])])
    assert isinstance(out[0], VersionedItem)
    assert isinstance(out[1], DataError) and out[1].symbol == "unsorted"
    assert out[1].error_code == ErrorCode.E_UNSORTED_DATA
    assert lib.list_symbols() == ["ok"]
    out = lib.write_batch([WritePayload("unsorted", frame(3).iloc[::-1])], validate_index=False)
    assert isinstance(out[0], VersionedItem)


def test_write_batch_upfront_errors_write_nothing(lib: Library) -> None:
    with pytest.raises(ArcticDuplicateSymbolsInBatchException):
        lib.write_batch([WritePayload("a", frame(1)), WritePayload("a", frame(2))])
    with pytest.raises(ArcticUnsupportedDataTypeException):
        lib.write_batch([WritePayload("a", frame(1)), WritePayload("b", [1, 2])])
    assert lib.list_symbols() == []


def test_write_batch_prune(lib: Library) -> None:
    lib.write("a", frame(1))
    lib.write_batch([WritePayload("a", frame(2))], prune_previous_versions=True)
    assert versions_of(lib, "a") == [1]


def test_write_pickle_batch(lib: Library) -> None:
    out = lib.write_pickle_batch([WritePayload("p", [1, 2]), WritePayload("q", {"x": 1}, metadata=3)])
    assert [o.version for o in out] == [0, 0]
    assert lib.read("p").data == [1, 2]
    assert lib.read("q").data == {"x": 1} and lib.read("q").metadata == 3
    with pytest.raises(ArcticDuplicateSymbolsInBatchException):
        lib.write_pickle_batch([WritePayload("p", 1), WritePayload("p", 2)])


@all_options
def test_append_batch(lib: Library) -> None:
    lib.write("a", frame(3))
    lib.write("b", frame(3))
    out = lib.append_batch([WritePayload("a", frame(2, start="2024-02-01"), metadata="m"),
                            WritePayload("b", frame(2, start="2023-01-01")),  # before the last row
                            WritePayload("new", frame(1))])
    assert isinstance(out[0], VersionedItem) and out[0].version == 1 and out[0].metadata == "m"
    assert isinstance(out[1], DataError) and out[1].symbol == "b"
    assert isinstance(out[2], VersionedItem) and out[2].version == 0
    assert_frame_equal(lib.read("a").data, pd.concat([frame(3), frame(2, start="2024-02-01")]))
    assert versions_of(lib, "b") == [0]
    assert_frame_equal(lib.read("b").data, frame(3))
    with pytest.raises(ArcticDuplicateSymbolsInBatchException):
        lib.append_batch([WritePayload("a", frame(1)), WritePayload("a", frame(1))])
    with pytest.raises(ArcticUnsupportedDataTypeException):
        lib.append_batch([WritePayload("a", "text")])
    assert versions_of(lib, "a") == [0, 1]


@all_options
def test_update_batch(lib: Library) -> None:
    lib.write("a", frame(5))
    out = lib.update_batch([UpdatePayload("a", frame(1, start="2024-01-03", base=99)),
                            UpdatePayload("missing", frame(1))])
    assert isinstance(out[0], VersionedItem) and out[0].version == 1
    assert isinstance(out[1], DataError) and out[1].symbol == "missing"
    assert lib.read("a").data["a"].tolist() == [0, 1, 99, 3, 4]
    assert not lib.has_symbol("missing")
    out = lib.update_batch([UpdatePayload("missing", frame(2))], upsert=True)
    assert isinstance(out[0], VersionedItem)
    assert_frame_equal(lib.read("missing").data, frame(2))
    out = lib.update_batch([UpdatePayload("a", frame(5, base=50), date_range=(pd.Timestamp("2024-01-05"), None))])
    assert lib.read("a").data["a"].tolist() == [0, 1, 99, 3, 54]
    with pytest.raises(ArcticDuplicateSymbolsInBatchException):
        lib.update_batch([UpdatePayload("a", frame(1)), UpdatePayload("a", frame(1))])


def test_read_batch(lib: Library) -> None:
    lib.write("a", frame(3))
    lib.write("a", frame(4, base=10))
    lib.write("b", frame(2), metadata="mb")
    lib.snapshot("snap")
    out = lib.read_batch(["a", ReadRequest("a", as_of=0), ReadRequest("b", columns=[]),
                          ReadRequest("a", row_range=(1, 3)), ReadRequest("a", as_of=7), "missing",
                          ReadRequest("b", as_of="snap"), "a"])
    assert_frame_equal(out[0].data, frame(4, base=10))
    assert_frame_equal(out[1].data, frame(3))
    assert_frame_equal(out[2].data, frame(2)[[]].set_axis(pd.RangeIndex(0), axis=1))  # no column: as ArcticDB
    assert out[2].metadata == "mb"
    assert_frame_equal(out[3].data, frame(4, base=10).iloc[1:3])
    err = out[4]
    assert isinstance(err, DataError)
    assert err.symbol == "a"
    assert err.version_request_type == VersionRequestType.SPECIFIC and err.version_request_data == 7
    assert err.error_code == ErrorCode.E_NO_SUCH_VERSION and err.error_category == ErrorCategory.MISSING_DATA
    assert isinstance(out[5], DataError) and out[5].version_request_type == VersionRequestType.LATEST
    assert out[6].version == 0
    assert_frame_equal(out[7].data, out[0].data)  # duplicates are allowed


def test_read_batch_output_format_and_query_builder(lib: Library) -> None:
    import pyarrow as pa

    lib.write("a", frame(3))
    out = lib.read_batch(["a"], output_format="pyarrow")
    assert isinstance(out[0].data, pa.Table)
    q = QueryBuilder()
    with pytest.raises(ArcticInvalidApiUsageException):
        lib.read_batch([ReadRequest("a", query_builder=q)], query_builder=q)


def test_read_metadata_batch(lib: Library) -> None:
    lib.write("a", frame(1), metadata={"k": 0})
    lib.write("a", frame(1), metadata={"k": 1})
    out = lib.read_metadata_batch(["a", ReadInfoRequest("a", as_of=0), "missing", ReadInfoRequest("a", as_of=5)])
    assert out[0].metadata == {"k": 1} and out[0].data is None
    assert out[1].metadata == {"k": 0} and out[1].version == 0
    assert isinstance(out[2], DataError) and isinstance(out[3], DataError)
    assert out[3].version_request_data == 5


def test_write_metadata_batch(lib: Library) -> None:
    lib.write("a", frame(2))
    lib.write("b", frame(3))
    out = lib.write_metadata_batch([WriteMetadataPayload("a", "ma"), WriteMetadataPayload("b", "mb")])
    assert [o.version for o in out] == [1, 1]
    assert lib.read("a").metadata == "ma" and lib.read("b").metadata == "mb"
    assert_frame_equal(lib.read("b").data, frame(3))
    with pytest.raises(ArcticDuplicateSymbolsInBatchException):
        lib.write_metadata_batch([WriteMetadataPayload("a", 1), WriteMetadataPayload("a", 2)])
    lib.write_metadata_batch([WriteMetadataPayload("a", "p")], prune_previous_versions=True)
    assert versions_of(lib, "a") == [2]


def test_get_description_batch(lib: Library) -> None:
    lib.write("a", frame(3))
    lib.write("a", frame(5))
    out = lib.get_description_batch(["a", ReadInfoRequest("a", as_of=0), "missing"])
    assert isinstance(out[0], SymbolDescription) and out[0].row_count == 5
    assert out[1].row_count == 3
    assert isinstance(out[2], DataError)
    assert out[0] == lib.get_description("a")


def test_delete_batch(lib: Library) -> None:
    for s in ("a", "b", "c"):
        lib.write(s, frame(1))
        lib.write(s, frame(2))
    out = lib.delete_batch(["a", DeleteRequest("b", [0]), DeleteRequest("c", [99]), "never"])
    assert out[0] is None and out[1] is None and out[3] is None
    assert isinstance(out[2], DataError) and out[2].symbol == "c"
    assert out[2].error_code == ErrorCode.E_NO_SUCH_VERSION
    assert set(lib.list_symbols()) == {"b", "c"}
    assert versions_of(lib, "b") == [1]
    assert versions_of(lib, "c") == [0, 1]
    assert lib.delete_batch(["a"]) == [None]  # already deleted: None


def _shaped(kind: str, n: int = 20_000) -> pd.DataFrame:
    """One schema (x float64, k int64), data of very different character per ``kind``."""
    rng = np.random.default_rng(len(kind))
    if kind == "random":
        x, k = rng.standard_normal(n), rng.integers(-(2**62), 2**62, n)
    elif kind == "prices":  # two decimals, few distinct sizes: both columns compress well
        x, k = np.round(100 + np.cumsum(rng.integers(-3, 4, n)) / 100, 2), rng.integers(0, 8, n) * 100
    else:  # long runs
        x, k = np.repeat(rng.standard_normal(n // 1000), 1000), np.repeat(np.arange(n // 1000), 1000)
    return pd.DataFrame({"x": x, "k": k}, index=pd.date_range("2024-01-01", periods=n, freq="s"))


def test_write_batch_of_unlike_symbols_stores_each_as_compactly_as_a_write(lib: Library) -> None:
    # the symbols of a batch share what the first one found about each column's encoding; a
    # symbol whose data that choice does not suit is searched again (or its float pages
    # tested again), so the batch neither garbles nor bloats it
    kinds = ["random", "prices", "runs", "prices", "random", "runs"]
    frames = {f"{k}_{i}": _shaped(k) for i, k in enumerate(kinds)}
    items = lib.write_batch([WritePayload(s, df) for s, df in frames.items()])
    assert all(isinstance(i, VersionedItem) for i in items)
    for s, df in frames.items():
        lib.write(f"alone_{s}", df)
    sizes = lib.admin_tools().get_sizes_by_symbol()
    for s, df in frames.items():
        assert_frame_equal(lib.read(s).data, df)
        batch_bytes = sizes[s][KeyType.TABLE_DATA].bytes_compressed
        alone_bytes = sizes[f"alone_{s}"][KeyType.TABLE_DATA].bytes_compressed
        assert batch_bytes <= 1.15 * alone_bytes, (s, batch_bytes, alone_bytes)


def test_delete_batch_as_arcticdb_takes_it(lib: Library) -> None:
    """An empty list of versions deletes the whole symbol; a failed item names no version
    request; a negative version number is refused (``TypeError``) before anything is deleted."""
    for s in ("t", "t", "u", "u"):
        lib.write(s, frame(2))
    with pytest.raises(TypeError, match="0 or more"):
        lib.delete_batch(["u", DeleteRequest("t", [-1])])
    assert sorted(lib.list_symbols()) == ["t", "u"]
    with pytest.raises(TypeError):
        lib.delete("t", versions=-1)
    with pytest.raises(TypeError):
        lib.snapshot("snap", versions={"t": -1})
    assert lib.list_snapshots() == {} and len(lib.list_versions("t")) == 2
    out = lib.delete_batch([DeleteRequest("t", []), DeleteRequest("u", [5])])
    assert out[0] is None and isinstance(out[1], DataError)
    assert out[1].version_request_type is None and out[1].error_code == ErrorCode.E_NO_SUCH_VERSION
    assert lib.list_symbols() == ["u"] and lib.list_versions("t") == {}
    lib.delete("u", versions=[])  # (delete itself: an empty list deletes nothing)
    assert len(lib.list_versions("u")) == 2


def test_read_batch_error_reports_a_time_as_nanoseconds(lib: Library) -> None:
    import datetime as dt

    lib.write("s", frame(2))
    for when in (dt.datetime(2000, 1, 1), pd.Timestamp("2000-01-01")):
        (err,) = lib.read_batch([ReadRequest("s", as_of=when)])
        assert isinstance(err, DataError) and err.version_request_type == VersionRequestType.TIMESTAMP
        assert err.version_request_data == 946_684_800_000_000_000
