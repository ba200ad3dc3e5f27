"""Small appends share the symbol's open tail segment (``_segments.TAIL_BYTES``): a symbol that
receives thousands of small appends is stored in a few segments, so it reads fast, and every
version still reads exactly what it held."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from enginehelpers import all_options, assert_frame_equal

from arcticlite import Arctic, Library, LibraryOptions
from arcticlite.table._segments import TAIL_BYTES


def ticks(k: int, n: int = 10) -> pd.DataFrame:
    """Batch ``k`` of a tick stream: ``n`` rows a millisecond apart, batches a second apart."""
    rng = np.random.default_rng(k)
    idx = pd.date_range(pd.Timestamp("2021-01-01") + pd.Timedelta(seconds=k), periods=n, freq="ms")
    return pd.DataFrame({"a": rng.standard_normal(n), "b": rng.integers(0, 1000, n)}, index=idx)


def data_keys(lib: Library) -> set[str]:
    return {k for k in lib._store.list_keys() if "/tdata/" in k}


@all_options
def test_small_appends_fill_few_segments(lib: Library) -> None:
    n = 300
    lib.write("s", ticks(0))
    for k in range(1, n + 1):
        lib.append("s", ticks(k))
    want = pd.concat([ticks(k) for k in range(n + 1)])
    assert_frame_equal(lib.read("s").data, want)
    for v in (0, 1, 57, 150, 299):  # every version still holds exactly its rows
        assert_frame_equal(lib.read("s", as_of=v).data, want.iloc[: 10 * (v + 1)])
    assert_frame_equal(lib.read("s", row_range=(1_234, 2_345)).data, want.iloc[1_234:2_345])
    lo, hi = want.index[777], want.index[2_222]
    assert_frame_equal(lib.read("s", date_range=(lo, hi)).data, want.loc[lo:hi])
    idx = lib.inspect_index("s")
    opts = lib.options()
    if opts.rows_per_segment >= 100:
        row_groups = idx["start_row"].nunique()
        assert row_groups <= 2 + want.memory_usage(index=True).sum() // TAIL_BYTES, row_groups
    # only the last row group may still be open
    last = idx["start_row"] == idx["start_row"].max()
    assert not idx.loc[~last, "open_tail"].any() or opts.rows_per_segment < 100


def test_sealed_tail_is_compressed_and_open_tail_is_plain(lib: Library) -> None:
    lib.write("s", ticks(0))
    k = 1
    while len(lib.inspect_index("s")) < 3:
        lib.append("s", ticks(k))
        k += 1
    idx = lib.inspect_index("s")
    assert idx["open_tail"].tolist() == [False, False, True]
    segs = lib.inspect_segments("s")
    sealed = segs[segs["key"] == idx["key"][1].rsplit("/", 1)[-1]]
    tail = segs[segs["key"] == idx["key"][2].rsplit("/", 1)[-1]]
    assert set(tail["encodings"]) <= {"plain", "constant"}, tail
    assert (sealed["encodings"] != "plain").any(), sealed
    assert_frame_equal(lib.read("s").data, pd.concat([ticks(j) for j in range(k)]))


def test_large_append_closes_the_tail_and_small_ones_start_a_new_one(lib: Library) -> None:
    parts = [ticks(0), ticks(1), ticks(2, 5_000), ticks(10), ticks(11)]
    lib.write("s", parts[0])
    for p in parts[1:]:
        lib.append("s", p)
    assert_frame_equal(lib.read("s").data, pd.concat(parts))
    idx = lib.inspect_index("s")
    assert idx["open_tail"].tolist() == [False, True, False, True]
    assert idx["end_row"].tolist() == [10, 20, 5_020, 5_040]


def test_update_and_delete_over_the_open_tail(lib: Library) -> None:
    lib.write("s", ticks(0))
    for k in range(1, 6):
        lib.append("s", ticks(k))
    model = pd.concat([ticks(k) for k in range(6)])
    patch = ticks(3, 4) * 0 + 7
    lib.update("s", patch)
    model = pd.concat([model[model.index < patch.index[0]], patch, model[model.index > patch.index[-1]]])
    assert_frame_equal(lib.read("s").data, model)
    lib.append("s", ticks(6))
    model = pd.concat([model, ticks(6)])
    assert_frame_equal(lib.read("s").data, model)
    cut = (model.index[15], model.index[44])
    lib.delete_data_in_range("s", cut)
    model = model[(model.index < cut[0]) | (model.index > cut[1])]
    lib.append("s", ticks(7))
    model = pd.concat([model, ticks(7)])
    assert_frame_equal(lib.read("s").data, model)


@pytest.mark.parametrize("library_options", [LibraryOptions(dynamic_schema=True)], ids=["dynamic"],
                         indirect=True)
def test_new_column_starts_a_new_tail(lib: Library) -> None:
    lib.write("s", ticks(0))
    lib.append("s", ticks(1))
    extra = ticks(2).assign(c=1.5)
    lib.append("s", extra)
    lib.append("s", ticks(3).assign(c=2.5))
    got = lib.read("s").data
    want = pd.concat([ticks(0), ticks(1), extra, ticks(3).assign(c=2.5)])
    assert_frame_equal(got, want[got.columns])


def test_range_index_appends(lib: Library) -> None:
    lib.write("r", pd.DataFrame({"x": np.arange(3)}))
    for k in range(1, 40):
        lib.append("r", pd.DataFrame({"x": np.arange(3) + 3 * k}, index=pd.RangeIndex(3 * k, 3 * k + 3)))
    got = lib.read("r").data
    assert got["x"].tolist() == list(range(120))
    assert got.index.equals(pd.RangeIndex(120))
    assert len(lib.inspect_index("r")) == 2  # the written rows, then one open tail
    assert lib.read("r", row_range=(50, 60)).data["x"].tolist() == list(range(50, 60))


def test_pruned_appends_leave_no_old_tails(lib: Library) -> None:
    lib.write("s", ticks(0))
    for k in range(1, 80):
        lib.append("s", ticks(k), prune_previous_versions=True)
    idx = lib.inspect_index("s")
    assert data_keys(lib) == set(idx["key"])  # replaced tails were removed with their versions
    assert_frame_equal(lib.read("s").data, pd.concat([ticks(k) for k in range(80)]))


def test_snapshot_keeps_the_tail_it_saw(lib: Library) -> None:
    lib.write("s", ticks(0))
    lib.append("s", ticks(1))
    lib.snapshot("snap")
    for k in range(2, 10):
        lib.append("s", ticks(k), prune_previous_versions=True)
    assert_frame_equal(lib.read("s", as_of="snap").data, pd.concat([ticks(0), ticks(1)]))
    assert_frame_equal(lib.read("s").data, pd.concat([ticks(k) for k in range(10)]))


def test_append_rebuilds_when_a_pruning_writer_removes_the_tail_it_reads(
        ac: Arctic, lib: Library, monkeypatch: pytest.MonkeyPatch) -> None:
    lib.write("s", ticks(0))
    lib.append("s", ticks(1))  # v1 holds an open tail
    other = ac.get_library("lib")
    store = lib._store
    read_many = store.read_many
    raced: list[bool] = []

    def racing(keys: list[str]) -> list[object]:
        if not raced and any("/tdata/" in k for k in keys):
            raced.append(True)  # another writer replaces the tail and prunes v1 (and its tail)
            other.append("s", ticks(2), prune_previous_versions=True)
        return read_many(keys)

    monkeypatch.setattr(store, "read_many", racing)
    assert lib.append("s", ticks(3)).version == 3
    assert raced
    assert_frame_equal(lib.read("s").data, pd.concat([ticks(k) for k in range(4)]))


def test_frames_changed_after_their_append_do_not_change_the_tail(lib: Library) -> None:
    lib.write("s", ticks(0))
    lib.append("s", ticks(1))  # starts the open tail
    batch = ticks(2)
    lib.append("s", batch)  # joins it
    a = batch["a"].to_numpy()
    a[:] = 99.0  # the caller reuses its frame's buffers
    lib.append("s", ticks(3))
    assert_frame_equal(lib.read("s").data, pd.concat([ticks(k) for k in range(4)]))
