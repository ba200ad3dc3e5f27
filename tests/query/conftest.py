"""Fixtures of the QueryBuilder tests.

``backend`` is narrowed here to memory and LMDB (one smoke test in ``test_ranges.py`` uses
S3 through ``s3_uri``). ``lib`` is parametrised over library options: the defaults, and tiny
row / column slices (5 rows x 2 columns per segment) so that queries cross segments and the
pushdown paths (index range, row range, column pruning) are exercised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

from arcticlite import Arctic, Library, LibraryOptions
from arcticlite.query._agg_order import output_order


@pytest.fixture(params=[pytest.param("memory", marks=pytest.mark.memory),
                        pytest.param("lmdb", marks=pytest.mark.lmdb)])
def backend(request: pytest.FixtureRequest) -> str:
    """memory and LMDB only (the S3 path of a read is the same code over another store)."""
    return str(request.param)


@pytest.fixture(params=["default", "tiny"])
def lib(uri: str, request: pytest.FixtureRequest) -> Iterator[Library]:
    """A fresh library; ``tiny`` slices 5 rows x 2 columns per segment."""
    opts = LibraryOptions() if request.param == "default" else LibraryOptions(rows_per_segment=5,
                                                                              columns_per_segment=2)
    ac = Arctic(uri)
    yield ac.create_library("q", opts)


def sample_frame(n: int = 40, seed: int = 0, *, dt_index: bool = True) -> pd.DataFrame:
    """Ints, floats with NaN, strings with None, bools, a small uint and a timestamp column."""
    rng = np.random.default_rng(seed)
    strs = np.array(["apple", "banana", "cherry", "date", None], dtype=object)
    df = pd.DataFrame({
        "i": rng.integers(-50, 50, n),
        "f": np.where(rng.random(n) < 0.15, np.nan, rng.normal(size=n).round(3)),
        "s": strs[rng.integers(0, 5, n)],
        "g": np.array(["x", "y", "z"], dtype=object)[rng.integers(0, 3, n)],
        "b": rng.random(n) < 0.5,
        "u": rng.integers(0, 200, n).astype(np.uint8),
        "t": pd.Timestamp("2023-06-01") + pd.to_timedelta(rng.integers(0, 10_000, n), unit="min"),
    })
    if dt_index:
        df.index = pd.date_range("2024-01-01", periods=n, freq="7min", name="ts")
    return df


@pytest.fixture
def whole_fetches(monkeypatch: pytest.MonkeyPatch) -> Callable[[Any], list[str]]:
    """``watch(store)``: the data-segment keys ``store.read_many`` fetches whole from then on
    (ranged reads of footers and filters are not counted)."""

    def watch(store: Any) -> list[str]:
        fetched: list[str] = []
        read_many = store.read_many

        def counting(keys: list[str]) -> list[object]:
            fetched.extend(k for k in keys if "/tdata/" in k)
            return read_many(keys)

        monkeypatch.setattr(store, "read_many", counting)
        return fetched

    return watch


def in_output_order(frame: pd.DataFrame) -> pd.DataFrame:
    """An expected aggregation result built in the ``agg`` dict's column order, reordered as
    ArcticDB and arcticlite output it (the iteration order of ArcticDB's hash map of the
    aggregations: ``test_aggregations.py::test_output_columns_come_in_arcticdbs_order``)."""
    names = list(frame.columns)
    return frame[[names[i] for i in output_order(names)]]
