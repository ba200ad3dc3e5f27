"""A MultiIndex whose first level is a DatetimeIndex is a time series by that level: ``update``
(with or without ``date_range``), ``delete_data_in_range``, ``read(date_range=)`` and
``QueryBuilder.resample`` / ``date_range`` use it (resample returns only that level)."""

from __future__ import annotations

from datetime import datetime as d

import numpy as np
import pandas as pd
import pytest

from arcticlite import Library, LibraryOptions, QueryBuilder
from arcticlite.exceptions import InternalException
from tests.query.conftest import in_output_order

SLICED = pytest.mark.parametrize("library_options", [LibraryOptions(), LibraryOptions(rows_per_segment=2)],
                                 indirect=True, ids=["default", "2-row-segments"])


def mi(days: list[int], keys: str) -> pd.MultiIndex:
    return pd.MultiIndex.from_arrays([pd.to_datetime([d(2018, 1, x) for x in days]), list(keys)], names=["t", "k"])


@pytest.fixture
def stored(lib: Library) -> pd.DataFrame:
    df = pd.DataFrame({"c": [1, 2, 3, 4, 5, 6]}, index=mi([1, 2, 2, 3, 3, 4], "ABCDEF"))
    lib.write("s", df)
    return df


@SLICED
def test_update_replaces_the_rows_of_the_first_level_range(lib: Library, stored: pd.DataFrame) -> None:
    lib.update("s", pd.DataFrame({"c": [100, 200]}, index=mi([2, 5], "XY")))
    pd.testing.assert_frame_equal(lib.read("s").data, pd.DataFrame({"c": [1, 100, 200]}, index=mi([1, 2, 5], "AXY")))


@SLICED
def test_update_with_date_range(lib: Library, stored: pd.DataFrame) -> None:
    new = pd.DataFrame({"c": [100, 200, 300]}, index=mi([2, 2, 3], "BCD"))
    lib.update("s", new, date_range=(d(2018, 1, 2), d(2018, 1, 2)))  # only the new rows inside it are written
    pd.testing.assert_frame_equal(lib.read("s").data,
                                  pd.DataFrame({"c": [1, 100, 200, 4, 5, 6]}, index=mi([1, 2, 2, 3, 3, 4], "ABCDEF")))
    lib.update("s", new, date_range=(d(2018, 1, 2), d(2018, 1, 3)))
    pd.testing.assert_frame_equal(lib.read("s").data,
                                  pd.DataFrame({"c": [1, 100, 200, 300, 6]}, index=mi([1, 2, 2, 3, 4], "ABCDF")))
    # appends after an update still work, and the index stays a MultiIndex
    lib.append("s", pd.DataFrame({"c": [7]}, index=mi([9], "G")))
    assert lib.read("s").data["c"].tolist() == [1, 100, 200, 300, 6, 7]


@SLICED
def test_delete_and_read_by_date_range(lib: Library, stored: pd.DataFrame) -> None:
    got = lib.read("s", date_range=(d(2018, 1, 2), d(2018, 1, 3))).data
    pd.testing.assert_frame_equal(got, stored.iloc[1:5])
    q = QueryBuilder()
    got = lib.read("s", date_range=(d(2018, 1, 2), None), query_builder=q[q["c"] > 3]).data
    assert got["c"].tolist() == [4, 5, 6]
    lib.delete_data_in_range("s", (d(2018, 1, 2), d(2018, 1, 3)))
    assert lib.read("s").data["c"].tolist() == [1, 6]


@pytest.mark.parametrize("tz", [None, "Europe/London"])
def test_resample_by_the_first_level(lib: Library, tz: str | None) -> None:
    idx = pd.MultiIndex.from_product([pd.date_range("2024-01-01", freq="h", periods=5, tz=tz), [0, 1]],
                                     names=["when", "seq"])
    df = pd.DataFrame({"x": np.arange(10), "y": np.arange(10) * 10.0}, index=idx)
    lib.write("s", df)
    got = lib.read("s", query_builder=QueryBuilder().resample("2h").agg({"x": "sum", "y": "mean"})).data
    flat = df.set_axis(idx.get_level_values(0), axis=0)
    expected = in_output_order(flat.resample("2h").agg({"x": "sum", "y": "mean"}))
    pd.testing.assert_frame_equal(got, expected, check_freq=False, check_dtype=False)
    assert got.index.name == "when"


def test_update_needs_a_datetime_first_level(lib: Library) -> None:
    idx = pd.MultiIndex.from_arrays([[1, 2], ["a", "b"]])
    lib.write("s", pd.DataFrame({"c": [1, 2]}, index=idx))
    with pytest.raises(InternalException, match="non-timeseries"):
        lib.update("s", pd.DataFrame({"c": [3]}, index=pd.MultiIndex.from_arrays([[2], ["b"]])))
    assert lib.read("s").data["c"].tolist() == [1, 2]


@SLICED
def test_update_and_delete_keep_the_first_level_bounds(lib: Library, stored: pd.DataFrame) -> None:
    """The description's date range and the order check of a later append stand after an update
    or a delete_data_in_range (they are the first level's bounds)."""
    lib.update("s", pd.DataFrame({"c": [9]}, index=mi([2], "X")))
    assert lib.get_description("s").date_range == (pd.Timestamp("2018-01-01"), pd.Timestamp("2018-01-04"))
    lib.update("s", pd.DataFrame({"c": [8]}, index=mi([6], "Y")), date_range=(d(2018, 1, 5), d(2018, 1, 7)))
    assert lib.get_description("s").date_range == (pd.Timestamp("2018-01-01"), pd.Timestamp("2018-01-06"))
    lib.delete_data_in_range("s", (d(2018, 1, 1), d(2018, 1, 1)))
    assert lib.get_description("s").date_range == (pd.Timestamp("2018-01-02"), pd.Timestamp("2018-01-06"))
    with pytest.raises(InternalException, match="Can't append"):
        lib.append("s", pd.DataFrame({"c": [0]}, index=mi([3], "Z")))
    lib.append("s", pd.DataFrame({"c": [0]}, index=mi([7], "Z")))
    assert lib.read("s").data.index.get_level_values(0).is_monotonic_increasing
