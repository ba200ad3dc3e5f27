"""Stage results: how ``stage`` slices what it writes, finalizing stale stage results, and
finalizing data that starts before the stored rows with ``validate_index=False``."""

from __future__ import annotations

import pickle

import pandas as pd
import pytest

from arcticlite import Library, LibraryOptions
from arcticlite.exceptions import MissingKeysInStageResultsError, UnsortedDataException

ONE_ROW = pytest.mark.parametrize("library_options", [LibraryOptions(rows_per_segment=1)], indirect=True)
TWO_ROWS = pytest.mark.parametrize("library_options", [LibraryOptions(rows_per_segment=2)], indirect=True)


def days(start: str, n: int, base: int) -> pd.DataFrame:
    return pd.DataFrame({"a": range(base, base + n), "b": range(base + 10, base + 10 + n)},
                        index=pd.date_range(start, periods=n))


@ONE_ROW
def test_stage_slices_by_rows_per_segment(lib: Library) -> None:
    result = lib.stage("s", days("2025-01-01", 2, 0))
    assert len(result.staged_segments) == 2
    assert pickle.loads(pickle.dumps(result)).staged_segments == result.staged_segments
    lib.finalize_staged_data("s", stage_results=[result])
    pd.testing.assert_frame_equal(lib.read("s").data, days("2025-01-01", 2, 0), check_freq=False)


@TWO_ROWS
@pytest.mark.parametrize("sort", [False, True])
def test_stale_stage_results_are_refused_and_change_nothing(lib: Library, sort: bool) -> None:
    finalize = lib.sort_and_finalize_staged_data if sort else lib.finalize_staged_data
    d1, d2, d3 = days("2025-01-01", 3, 0), days("2025-01-04", 2, 3), days("2025-01-06", 1, 5)
    r1, r2, r3 = lib.stage("s", d1), lib.stage("s", d2), lib.stage("s", d3)
    finalize("s", stage_results=[r1, r2])
    with pytest.raises(MissingKeysInStageResultsError, match="no longer exist") as err:
        finalize("s", stage_results=[r3, r2, r1])
    # one entry per missing segment (r2: 1, r1: 2), naming the position in the list given
    assert [m.stage_result_index for m in err.value.stage_results_with_missing_keys] == [1, 2, 2]
    assert lib.read("s").version == 0 and lib.get_staged_symbols() == ["s"]
    finalize("s", stage_results=[r3])
    item = lib.read("s")
    assert item.version == 1
    pd.testing.assert_frame_equal(item.data, d3, check_freq=False)


@TWO_ROWS
def test_append_before_the_last_row_needs_validate_index_false(lib: Library) -> None:
    d0 = days("2026-01-01", 1, 100)
    lib.write("s", d0)
    d1, d2 = days("2025-01-01", 3, 0), days("2025-01-04", 2, 3)
    r1, r2 = lib.stage("s", d1), lib.stage("s", d2)
    with pytest.raises(UnsortedDataException, match="validate_index=False"):
        lib.finalize_staged_data("s", mode="append", stage_results=[r1, r2])
    assert lib.read("s").version == 0
    lib.finalize_staged_data("s", mode="append", stage_results=[r1, r2], validate_index=False)
    got = lib.read("s").data
    pd.testing.assert_frame_equal(got, pd.concat([d0, d1, d2]), check_freq=False)
    assert not got.index.is_monotonic_increasing
    assert lib.get_description("s").sorted == "UNSORTED"
