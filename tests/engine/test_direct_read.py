"""Pandas reads that decode straight into the result's blocks return exactly what the general
Arrow path returns: every dtype it handles, nulls, segment and page edges, date and row
ranges, column subsets, tiled (row x column) layouts -- and fall back where they must."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import numpy as np
import pandas as pd
import pytest
from enginehelpers import assert_frame_equal

from arcticlite import Arctic, LibraryOptions
from arcticlite import format as fermion
from arcticlite.exceptions import CorruptDataError
from arcticlite.format import _alloc
from arcticlite.storage import open_store
from arcticlite.table import Pools, _direct

N = 1_000


def _frame(n: int = N, seed: int = 0, tz: str | None = None) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    idx = pd.date_range("2024-01-01", periods=n, freq="min", name="ts", tz=tz)
    words = np.array(["NYSE", "NASDAQ", "ARCA", "a much longer venue name", ""], dtype=object)
    return pd.DataFrame(
        {
            "f64": rng.standard_normal(n),
            "i64": rng.integers(-(10**12), 10**12, n),
            "u8": rng.integers(0, 255, n).astype(np.uint8),
            "i32": rng.integers(-1000, 1000, n).astype(np.int32),
            "f32": rng.standard_normal(n).astype(np.float32),
            "price": np.round(100 + np.cumsum(rng.integers(-1, 2, n)) / 100, 2),
            "venue": words[rng.integers(0, len(words), n)],
            "when": pd.date_range("2000-01-01", periods=n, freq="h").values,
            "flag": rng.random(n) < 0.3,
        },
        index=idx,
    )


def _general(lib: Any, *args: Any, **kwargs: Any) -> Any:
    old = lib._table.options
    lib._table.options = dataclasses.replace(old, direct_reads=False)
    try:
        return lib.read(*args, **kwargs).data
    finally:
        lib._table.options = old


def _both(lib: Any, *args: Any, **kwargs: Any) -> pd.DataFrame:
    got = lib.read(*args, **kwargs).data
    assert_frame_equal(got, _general(lib, *args, **kwargs))
    return got


TILED = [
    pytest.param(LibraryOptions(), id="default"),
    pytest.param(LibraryOptions(rows_per_segment=97, columns_per_segment=3), id="tiles97x3"),
]


@pytest.mark.parametrize("library_options", TILED, indirect=True)
def test_whole_frame_matches_written(lib: Any) -> None:
    df = _frame()
    lib.write("s", df)
    got = _both(lib, "s")
    assert_frame_equal(got, df)
    assert got._mgr.is_consolidated()  # one block per dtype, like a frame pandas built itself


@pytest.mark.parametrize("library_options", TILED, indirect=True)
@pytest.mark.parametrize("cols", [None, ["venue"], ["i32", "f64"], ["when", "price", "u8"], []])
@pytest.mark.parametrize("rows", [(0, 1), (96, 98), (97, 195), (500, 1000), (999, 1000), (3, 3)])
def test_row_ranges_and_columns(lib: Any, cols: Any, rows: tuple[int, int]) -> None:
    df = _frame()
    lib.write("s", df)
    got = _both(lib, "s", row_range=rows, columns=cols)
    want = df.iloc[rows[0] : rows[1]]
    want = want if cols is None else want[[c for c in df.columns if c in cols]]
    if cols == []:  # as ArcticDB: a read of no column has an empty RangeIndex of columns
        want = want.set_axis(pd.RangeIndex(0), axis=1)
    assert_frame_equal(got, want)


@pytest.mark.parametrize("library_options", TILED, indirect=True)
@pytest.mark.parametrize("span", [(0, 0), (0, 96), (96, 97), (100, 390), (10, 999), (-5, 3), (998, 1200)])
def test_date_ranges_at_segment_edges(lib: Any, span: tuple[int, int]) -> None:
    df = _frame()
    lib.write("s", df)
    t0 = df.index[0] + pd.Timedelta(minutes=span[0])
    t1 = df.index[0] + pd.Timedelta(minutes=span[1])
    got = _both(lib, "s", date_range=(t0, t1))
    assert_frame_equal(got, df.loc[t0:t1])


def _as_large(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every result counts as large: 4 KiB pages, two threads mapping and decoding segments."""
    monkeypatch.setattr(fermion, "PREFAULT_MIN_BYTES", 0)
    monkeypatch.setattr(_alloc, "PREFAULT_MIN_BYTES", 0)


@pytest.fixture(params=["inline", "pooled", "large"])
def decode_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, lib: Any) -> str:
    """Small reads decode inline; force the pooled (and, without views, windowed) path too,
    and the path of large results."""
    if request.param == "pooled":
        monkeypatch.setattr(_direct, "POOL_MIN_BYTES", 0)
        monkeypatch.setattr(lib._table, "pools", Pools(decode_threads=4))
    if request.param == "large":
        _as_large(monkeypatch)
        monkeypatch.setattr(lib._table, "pools", Pools(threads=2, decode_threads=1))
    if request.param != "inline":
        monkeypatch.setattr(_direct, "FETCH_WINDOW", 3)
    return str(request.param)


def test_appended_segments_and_head_tail(lib: Any, decode_mode: str) -> None:
    df = _frame(2_000)
    lib.write("s", df.iloc[:700])
    for a in range(700, 2_000, 260):
        lib.append("s", df.iloc[a : a + 260])
    assert_frame_equal(_both(lib, "s"), df)
    assert_frame_equal(lib.head("s", 5).data, df.head(5))
    assert_frame_equal(lib.tail("s", 300).data, df.tail(300))
    t0, t1 = df.index[650], df.index[1_250]
    assert_frame_equal(_both(lib, "s", date_range=(t0, t1)), df.loc[t0:t1])


def _updated(lib: Any, n: int, span: tuple[int, int], seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Write ``n`` rows, update rows ``span`` with new values; (written frame, expected frame)."""
    df = _frame(n)
    lib.write("s", df)
    patch = _frame(span[1] - span[0], seed=seed).set_axis(df.index[span[0] : span[1]])
    lib.update("s", patch)
    want = df.copy()
    want.iloc[span[0] : span[1]] = patch
    return df, want


def test_update_trimmed_segments(lib: Any) -> None:
    _, want = _updated(lib, 900, (400, 450), seed=3)
    assert_frame_equal(_both(lib, "s"), want)


@pytest.mark.parametrize("library_options", TILED, indirect=True)
def test_date_range_over_an_updated_span(lib: Any) -> None:
    """An update leaves two slices of one segment around the new rows; a date range that
    starts in one slice and ends in the other reads each slice's own rows."""
    df, want = _updated(lib, 600, (250, 270), seed=5)
    for a, b in [(240, 280), (100, 500), (255, 265), (0, 599), (269, 400)]:
        t0, t1 = df.index[a], df.index[b]
        assert_frame_equal(_both(lib, "s", date_range=(t0, t1)), want.loc[t0:t1])


def test_nulls_in_floats_strings_and_timestamps(lib: Any) -> None:
    df = _frame(300)
    df.loc[df.index[::7], "f64"] = np.nan
    df["venue"] = df["venue"].where(np.arange(300) % 5 != 0, None)
    df.loc[df.index[::11], "when"] = pd.NaT
    lib.write("s", df)
    got = _both(lib, "s")
    assert_frame_equal(got, df)
    assert got["venue"].isna().sum() == 60


def test_integer_and_bool_columns_with_nulls_take_the_general_path(lib: Any) -> None:
    import pyarrow as pa

    table = pa.table({"ts": pa.array(pd.date_range("2024", periods=4, freq="s")),
                      "x": pa.array([1, None, 3, 4], pa.int64()),
                      "y": pa.array([True, False, None, True])})
    lib.write("s", table, index_column="ts")
    got = _both(lib, "s")
    assert got["x"].dtype == np.float64 and np.isnan(got["x"].iloc[1])
    assert got["y"].dtype == object and got["y"].iloc[2] is None


@pytest.mark.parametrize("tz", ["UTC", "America/New_York"])
def test_time_zone_index(lib: Any, tz: str) -> None:
    df = _frame(200, tz=tz)
    lib.write("s", df)
    assert_frame_equal(_both(lib, "s"), df)


def test_range_index_and_labels(lib: Any) -> None:
    df = _frame(400).reset_index(drop=True)
    df.columns = pd.Index(list(range(10, 10 + df.shape[1])), name="level")
    lib.write("s", df)
    got = _both(lib, "s", row_range=(5, 390))
    assert_frame_equal(got, df.iloc[5:390].reset_index(drop=True))


def test_empty_symbol_and_empty_range(lib: Any) -> None:
    df = _frame(0)
    lib.write("e", df)
    assert_frame_equal(_both(lib, "e"), df, check_index_type=False)
    lib.write("s", _frame(50))
    got = _both(lib, "s", date_range=(pd.Timestamp("1990"), pd.Timestamp("1991")))
    assert len(got) == 0 and list(got.columns) == list(_frame(1).columns)


def test_wide_symbol_few_columns(tmp_path: Any) -> None:
    lib = Arctic(f"lmdb://{tmp_path}").create_library("w", LibraryOptions(columns_per_segment=50))
    rng = np.random.default_rng(1)
    df = pd.DataFrame(rng.standard_normal((300, 400)), columns=[f"c{i}" for i in range(400)],
                      index=pd.date_range("2024", periods=300, freq="s"))
    lib.write("w", df)
    cols = ["c399", "c3", "c120", "c121"]
    assert_frame_equal(_both(lib, "w", columns=cols), df[sorted(cols, key=lambda c: int(c[1:]))])


def test_results_do_not_share_memory(lib: Any) -> None:
    df = _frame(100)
    lib.write("s", df)
    a = lib.read("s").data
    b = lib.read("s").data
    a.iloc[:, 0] = 0.0
    assert_frame_equal(b, df)


@pytest.mark.parametrize("bad", [0, 5, 9])
def test_a_corrupt_segment_of_a_large_read_is_reported(tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                                                       bad: int) -> None:
    """Segments of a large result decode on two threads: a corrupt one raises CorruptDataError
    naming its key, whichever thread meets it, and the store is left as it was."""
    _as_large(monkeypatch)
    uri = f"lmdb://{tmp_path / 'store'}"
    lib = Arctic(uri).create_library("lib", LibraryOptions(rows_per_segment=100))
    df = _frame(1_000)
    lib.write("s", df)
    lib._table.pools = Pools(threads=2, decode_threads=1)
    with open_store(uri) as store:
        keys = sorted(store.list_keys("lib/tdata/s/"))
        assert len(keys) == 10
        good = bytes(store.read(keys[bad]))
        body = bytearray(good)
        body[len(body) // 3] ^= 4
        store.write(keys[bad], bytes(body))
        with pytest.raises(CorruptDataError) as err:
            lib.read("s")
        assert f"storage key '{keys[bad]}'" in str(err.value), err.value
        store.write(keys[bad], good)
    assert_frame_equal(lib.read("s").data, df)


def test_large_reads_on_every_worker_of_the_pool_finish(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large read asks the pool for a second decoding thread; reads running on every worker
    of that pool (an embedding application's tasks) still finish, each on its own thread."""
    _as_large(monkeypatch)
    lib = Arctic(f"lmdb://{tmp_path / 'store'}").create_library("lib", LibraryOptions(rows_per_segment=100))
    df = _frame(1_000)
    lib.write("s", df)
    pools = Pools(threads=2, decode_threads=1)
    lib._table.pools = pools
    n = pools.work._max_workers
    gate = threading.Barrier(n)

    def task() -> pd.DataFrame:
        gate.wait(timeout=30)  # every worker busy with a read before any read starts
        return lib.read("s").data

    futures = [pools.work.submit(task) for _ in range(n)]
    for f in futures:
        assert_frame_equal(f.result(timeout=120), df)


def test_string_objects_are_shared_and_counted(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large read of a few-label string column over many segments: at most one object per
    value and segment (as ArcticDB returns; fewer where segments repeat a dictionary), each
    referenced exactly as often as it is used, and every reference given back when the frame
    is dropped."""
    import gc
    import sys

    _as_large(monkeypatch)
    lib = Arctic(f"lmdb://{tmp_path / 'store'}").create_library("lib", LibraryOptions(rows_per_segment=500))
    df = _frame(20_000)
    lib.write("s", df)
    got = lib.read("s").data
    assert_frame_equal(got, df)
    venue = got["venue"].to_numpy()
    assert venue.dtype == object
    objs = {id(v): v for v in venue}
    assert len(objs) <= 5 * 40  # five values, 40 segments
    uses = {k: int(sum(v is o for v in venue)) for k, o in objs.items()}
    long_value = next(o for o in objs.values() if len(o) > 1)
    del got
    gc.collect()
    before = sys.getrefcount(long_value)
    n = uses[id(long_value)]
    del venue
    gc.collect()
    assert sys.getrefcount(long_value) == before - n
    # held by objs and long_value alone now (+ getrefcount's argument): nothing leaked, no cache
    assert sys.getrefcount(long_value) == 3

