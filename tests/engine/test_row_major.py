"""Frames from 2-D ndarrays: their row-major blocks are transposed segment by segment by the
writer (``arcticlite.normalize._rowmajor``). What a user sees must not change: the same
values, dtypes and column order back, in every segment and column-slice layout."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from arcticlite import Arctic, LibraryOptions
from arcticlite import normalize as norm
from arcticlite.table._segments import write_segments

N = 212_345  # three row slices of the default 100,000 rows
MIN_ROWS = 100_000


def _frame(dtype: str, n: int = N, k: int = 5, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    values = (rng.random((n, k)) * 1000).astype(dtype)
    return pd.DataFrame(values, index=pd.date_range("2024-01-01", periods=n, freq="s"),
                        columns=[f"c{j}" for j in range(k)])


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "uint8"])
def test_a_frame_from_a_2d_array_reads_back_exactly(lib, dtype: str) -> None:
    df = _frame(dtype)
    assert not df._mgr.blocks[0].values.flags.c_contiguous  # really row-major
    lib.write("s", df)
    out = lib.read("s").data
    pd.testing.assert_frame_equal(out, df, check_freq=False)
    assert [d.dtype.name for d in lib.get_description("s").columns] == [dtype.upper()] * 5
    # rows across a segment boundary, and one column of the block
    part = lib.read("s", row_range=(MIN_ROWS - 3, MIN_ROWS + 3), columns=["c3"]).data
    pd.testing.assert_frame_equal(part, df.iloc[MIN_ROWS - 3:MIN_ROWS + 3][["c3"]], check_freq=False)


@pytest.mark.parametrize("backend", ["lmdb"], indirect=True)
def test_column_slices_cut_through_the_block(ac: Arctic) -> None:
    lib = ac.create_library("slices", LibraryOptions(rows_per_segment=50_000, columns_per_segment=2))
    df = _frame("float64", k=7)
    df.insert(3, "label", np.where(np.arange(N) % 3 == 0, "x", "y"))  # a column between the block's
    lib.write("s", df)
    pd.testing.assert_frame_equal(lib.read("s").data, df, check_freq=False)
    pd.testing.assert_frame_equal(lib.read("s", columns=["c1", "c6"]).data, df[["c1", "c6"]], check_freq=False)


@pytest.mark.parametrize("backend", ["lmdb"], indirect=True)
def test_a_reordered_selection_of_the_block_keeps_its_order(ac: Arctic) -> None:
    lib = ac.create_library("order")
    df = _frame("int64", k=6)[["c4", "c0", "c2"]]  # a view of the block, columns out of order
    lib.write("s", df)
    pd.testing.assert_frame_equal(lib.read("s").data, df, check_freq=False)
    lib.append("s", _frame("int64", n=10, k=6, seed=1)[["c4", "c0", "c2"]].set_axis(
        pd.date_range("2025-01-01", periods=10, freq="s")))
    assert len(lib.read("s").data) == N + 10


def test_placeholders_are_never_stored_without_their_block(tmp_path) -> None:
    from arcticlite.storage import open_store
    from arcticlite.table._segments import Layout
    from arcticlite.version import LibraryKeys

    blocks: list[norm.RowMajorBlock] = []
    table, meta = norm.normalize(_frame("float64"), row_major=blocks)
    assert blocks and norm.has_placeholders(table.schema)
    assert not norm.has_placeholders(norm.value_schema(table.schema))
    assert table.column("c0").null_count == N  # a placeholder holds no values of its own
    store = open_store(f"lmdb://{tmp_path}/db")
    with pytest.raises(ValueError, match="row-major placeholders"):
        write_segments(store, LibraryKeys("l"), "s", table, Layout(n_index=1, rows_per_segment=100_000, columns_per_segment=127), start_row=0, is_datetime=True)
    assert list(store.list_keys("")) == []


def test_fill_rows_gives_each_segment_its_rows() -> None:
    df = _frame("float64", k=4)
    blocks: list[norm.RowMajorBlock] = []
    table, _ = norm.normalize(df, row_major=blocks)
    piece = norm.fill_rows(table.slice(1000, 50), blocks, 1000)
    assert not norm.has_placeholders(piece.schema)
    for j in range(4):
        np.testing.assert_array_equal(piece.column(f"c{j}").to_numpy(), df[f"c{j}"].to_numpy()[1000:1050])
    assert isinstance(piece.column("c0"), pa.ChunkedArray)


@pytest.mark.parametrize("backend", ["lmdb"], indirect=True)
def test_a_read_larger_than_the_prefault_threshold_is_exact(ac: Arctic) -> None:
    """Results of 32 MiB or more are mapped on another thread while they are decoded."""
    from arcticlite.format import PREFAULT_MIN_BYTES

    lib = ac.create_library("big")
    n = PREFAULT_MIN_BYTES // 16 + 77_777  # two float64 columns: over the threshold together
    df = _frame("float64", n=n, k=2)
    lib.write("s", df)
    pd.testing.assert_frame_equal(lib.read("s").data, df, check_freq=False)
    part = lib.read("s", date_range=(df.index[1000], df.index[n - 1000])).data
    pd.testing.assert_frame_equal(part, df.iloc[1000 : n - 999], check_freq=False)


@pytest.mark.parametrize("backend", ["lmdb"], indirect=True)
def test_a_wide_frame_from_a_2d_array_reads_back_exactly(ac: Arctic) -> None:
    lib = ac.create_library("wide")
    rng = np.random.default_rng(3)
    df = pd.DataFrame(rng.standard_normal((3_000, 400)), index=pd.date_range("2024-01-01", periods=3_000, freq="s"),
                      columns=[f"c{j}" for j in range(400)])  # four column slices of 127
    lib.write("s", df)
    pd.testing.assert_frame_equal(lib.read("s").data, df, check_freq=False)
    pd.testing.assert_frame_equal(lib.read("s", columns=["c399", "c0", "c200"][::-1]).data[["c0", "c200", "c399"]],
                                  df[["c0", "c200", "c399"]], check_freq=False)


def test_segments_too_wide_to_keep_a_buffer_for_are_exact(lib, monkeypatch: pytest.MonkeyPatch) -> None:
    """A segment's rows larger than a thread keeps are transposed into memory of their own."""
    from arcticlite.normalize import _rowmajor

    monkeypatch.setattr(_rowmajor, "_KEEP_BYTES", 0)
    df = _frame("float64", k=6)
    lib.write("s", df)
    pd.testing.assert_frame_equal(lib.read("s").data, df, check_freq=False)
