"""Details a user switching from ArcticDB relies on, found by replaying random operation
sequences on both engines: each test states what ArcticDB 6.28 does."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import arcticlite as adb
from arcticlite.exceptions import SchemaException, UserInputException


@pytest.fixture
def lib(tmp_path) -> adb.Library:
    return adb.Arctic(f"lmdb://{tmp_path}/db").get_library("l", create_if_missing=True)


def _df(n: int = 3, start: str = "2024-01-01", **cols: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"a": np.arange(n), **cols}, index=pd.date_range(start, periods=n))


@pytest.mark.parametrize("rows", [2, 0])
def test_update_with_no_new_row_in_its_date_range_keeps_the_stored_rows(lib: adb.Library, rows: int) -> None:
    lib.write("s", _df(6, "2024-01-08"))
    item = lib.update("s", _df(rows, "2024-01-09"), date_range=(pd.Timestamp("2024-01-12"), pd.Timestamp("2024-01-13")))
    assert item.version == 1  # a new version, as ArcticDB makes
    pd.testing.assert_frame_equal(lib.read("s").data, _df(6, "2024-01-08"), check_freq=False)


def test_write_pickle_stores_a_frame_as_write_does(lib: adb.Library) -> None:
    lib.write_pickle("s", _df())
    assert [c.name for c in lib.get_description("s").columns] == ["a"]
    assert lib.append("s", _df(1, "2024-02-01")).version == 1  # appendable: not a pickle
    pd.testing.assert_frame_equal(lib.read("s").data, pd.concat([_df(), _df(1, "2024-02-01")]), check_freq=False)
    lib.write_pickle("u", _df().iloc[::-1])  # as ArcticDB: no index validation
    assert lib.get_description("u").sorted == "DESCENDING"
    lib.write_pickle("p", pd.DataFrame({"a": [{"x": 1}]}))  # does not normalise: pickled
    assert lib.read("p").data["a"].tolist() == [{"x": 1}]


def test_a_failed_finalize_deletes_the_staged_data_when_asked(lib: adb.Library) -> None:
    lib.stage("s", _df(2))
    lib.stage("s", _df(2, "2024-02-01", b=[1.0, 2.0]))
    with pytest.raises(SchemaException):
        lib.finalize_staged_data("s", delete_staged_data_on_failure=True)
    assert lib.get_staged_symbols() == [] and not lib.has_symbol("s")


def test_stage_results_of_another_symbol_are_refused(lib: adb.Library) -> None:
    lib.stage("a", _df(2))
    mine, theirs = lib.stage("a", _df(2, "2024-02-01")), lib.stage("b", _df(2))
    with pytest.raises(UserInputException, match="E_STAGE_RESULT_WITH_INCORRECT_SYMBOL"):
        lib.finalize_staged_data("a", stage_results=[mine, theirs])
    assert lib.list_symbols() == [] and sorted(lib.get_staged_symbols()) == ["a", "b"]
