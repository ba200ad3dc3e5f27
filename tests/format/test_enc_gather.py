"""Gathering a few values of an encoded blob equals decoding it whole at those rows."""

from __future__ import annotations

import numpy as np
import pytest

from arcticlite.exceptions import CorruptDataError
from arcticlite.format import _encodings as E
from arcticlite.format._enc_gather import gather_fixed


def _arrays(rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = 10_000
    return {
        "regular index": (np.datetime64("2020-01-01", "ns") + np.arange(n) * np.timedelta64(1, "s")).view(np.int64),
        "row id": np.arange(5, 5 + n, dtype=np.int64),
        "descending": np.arange(n, 0, -1, dtype=np.int64) * 7,
        "small ints": rng.integers(0, 1000, n).astype(np.int64),
        "wide ints": rng.integers(-(10**12), 10**12, n),
        "int32": rng.integers(-5, 5, n).astype(np.int32),
        "uint8": rng.integers(0, 255, n).astype(np.uint8),
        "uint64 high": (np.uint64(2**63) + rng.integers(0, 10**6, n).astype(np.uint64)),
        "constant": np.full(n, -3, dtype=np.int64),
        "few values": rng.choice(np.array([10**15, -7, 3], dtype=np.int64), n),
        "random walk": np.cumsum(rng.integers(-3, 4, n)).astype(np.int64),
        "floats": rng.random(n),
        "prices": np.round(rng.random(n) * 100, 2),
        "float32": rng.random(n).astype(np.float32),
        "runs": np.repeat(rng.integers(0, 10**9, n // 100), 100).astype(np.int64),
        "wrapping": np.array([np.iinfo(np.int64).max - 2, np.iinfo(np.int64).min + 5] * (n // 2), dtype=np.int64),
        "short": np.array([4, 1], dtype=np.int64),
    }


@pytest.mark.parametrize("compress", [True, False])
def test_gathered_rows_equal_the_whole_decode(compress: bool) -> None:
    rng = np.random.default_rng(7)
    gathered = 0
    for name, values in _arrays(rng).items():
        blob = E.encode_fixed(values, allow_compression=compress)
        whole = E.decode_fixed(blob, values.dtype, len(values))
        for rows in (np.arange(len(values)), np.array([0, len(values) - 1]),
                     np.sort(rng.choice(len(values), min(len(values), 37), replace=False)),
                     np.zeros(0, dtype=np.int64)):
            got = gather_fixed(memoryview(blob), values.dtype, len(values), rows.astype(np.int64))
            if got is None:  # an encoding that needs the whole decode
                continue
            gathered += 1
            assert got.dtype == values.dtype, (name, E.describe(blob))
            np.testing.assert_array_equal(got, whole[rows], err_msg=f"{name}: {E.describe(blob)}")
    assert gathered >= 40  # most encodings are gathered without a whole decode


def test_a_regular_index_and_a_row_id_are_gathered_as_arithmetic_sequences() -> None:
    values = np.arange(100_000, dtype=np.int64) * 1_000_000_000 + 1_600_000_000 * 10**9
    blob = E.encode_fixed(values)
    assert E.describe(blob).startswith("delta")
    got = gather_fixed(memoryview(blob), values.dtype, len(values), np.array([3, 99_999], dtype=np.int64))
    assert got is not None and got.tolist() == [values[3], values[99_999]]


def test_a_truncated_blob_raises_a_corruption_error() -> None:
    values = np.random.default_rng(1).integers(0, 1000, 5000).astype(np.int64)
    blob = E.encode_fixed(values, allow_compression=False)
    assert "bitpack" in E.describe(blob)
    with pytest.raises(CorruptDataError):
        gather_fixed(memoryview(blob)[:-8], values.dtype, len(values), np.array([1], dtype=np.int64))


def test_rows_of_an_unaligned_plain_page_are_the_values() -> None:
    from arcticlite.format._enc_gather import take_values

    values = np.random.default_rng(2).random(5_000)
    page = b"\x00" + values.tobytes()  # a plain page: a one-byte header, then the values
    view = np.frombuffer(page, dtype=np.float64, count=len(values), offset=1)
    assert not view.flags.aligned
    rows = np.array([0, 17, 4_999], dtype=np.int64)
    got = take_values(view, rows)
    assert got.dtype == np.float64 and got.tolist() == values[rows].tolist()
    assert take_values(view, np.zeros(0, dtype=np.int64)).tolist() == []
    ints = np.frombuffer(b"\x00" + np.arange(10, dtype=np.int64).tobytes(), np.int64, 10, 1)
    assert take_values(ints[2:], np.array([0, 7])).tolist() == [2, 9]


def _sorted_arrays(rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = 10_000
    return {
        "regular index": (np.datetime64("2020-01-01", "ns") + np.arange(n) * np.timedelta64(1, "s")).view(np.int64),
        "row id": np.arange(5, 5 + n, dtype=np.int64),
        "irregular": np.cumsum(rng.integers(1, 1000, n)).astype(np.int64),
        "duplicates": np.sort(rng.integers(0, 50, n)).astype(np.int64),
        "constant": np.full(n, -3, dtype=np.int64),
        "negative": np.sort(rng.integers(-(10**12), 10**12, n)),
        "near the top": np.iinfo(np.int64).max - np.arange(n, 0, -1, dtype=np.int64) * 3,
        "short": np.array([1, 4], dtype=np.int64),
        "one": np.array([9], dtype=np.int64),
    }


@pytest.mark.parametrize("compress", [True, False])
def test_a_sorted_blob_searched_without_a_decode_equals_searchsorted(compress: bool) -> None:
    from arcticlite.format._enc_gather import search_fixed

    rng = np.random.default_rng(3)
    searched = 0
    for name, values in _sorted_arrays(rng).items():
        blob = E.encode_fixed(values, allow_compression=compress)
        lo_v, hi_v = int(values[0]), int(values[-1])
        probes = np.unique(np.concatenate([
            values[rng.integers(0, len(values), 50)], values[[0, -1]],
            rng.integers(lo_v, hi_v + 1, 50) if hi_v > lo_v else np.zeros(0, np.int64),
            np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, lo_v - 1, hi_v + (hi_v < np.iinfo(np.int64).max)]),
        ]).astype(np.int64))
        got = search_fixed(memoryview(blob), np.dtype(np.int64), len(values), probes)
        if got is None:  # an irregular sequence: the caller decodes it
            continue
        searched += 1
        np.testing.assert_array_equal(got[0], np.searchsorted(values, probes, "left"), err_msg=f"{name}: {E.describe(blob)}")
        np.testing.assert_array_equal(got[1], np.searchsorted(values, probes, "right"), err_msg=f"{name}: {E.describe(blob)}")
    assert searched >= 6


def test_a_column_is_searched_across_its_pages_as_a_whole(tmp_path: object) -> None:
    import pyarrow as pa

    from arcticlite import format as fermion
    from arcticlite.format import FermionReader

    rng = np.random.default_rng(5)
    regular = np.arange(300_000, dtype=np.int64) * 10**9 + 1_600_000_000 * 10**9
    irregular = np.cumsum(rng.integers(1, 10**6, 300_000)).astype(np.int64)
    table = pa.table({"ts": pa.array(regular.view("M8[ns]")), "irr": irregular, "x": rng.random(300_000),
                      "f": rng.random(300_000)})
    reader = FermionReader(fermion.encode(table, page_size=1 << 16, stripe_rows=100_000))
    assert len(reader.page_stats("ts")) > 3  # several pages and stripes
    for name, col in (("ts", regular), ("irr", irregular)):
        probes = np.unique(np.concatenate([col[rng.integers(0, len(col), 200)], col[[0, -1]] + [-1, 1],
                                           rng.integers(int(col[0]), int(col[-1]), 100)]))
        got = reader.count_sorted(name, probes)
        assert got is not None
        np.testing.assert_array_equal(got[0], np.searchsorted(col, probes, "left"))
        np.testing.assert_array_equal(got[1], np.searchsorted(col, probes, "right"))
    assert reader.count_sorted("f", np.array([1], dtype=np.int64)) is None  # not an integer column
