"""The pure functions of the fair benchmark harness (benchmarks/fair_data.py). No timing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

fair = pytest.importorskip("benchmarks.fair_data")


def test_run_order_alternates_pairs() -> None:
    order = [(pos, e) for _, pos, e in fair.run_order(4, ("A", "B"))]
    assert [e for _, e in order] == list("ABBAABBA")
    assert [p for p, _ in order] == [0, 1] * 4


def test_summarise_median_min_max() -> None:
    assert fair.summarise([3.0, 1.0, 2.0, 10.0, 4.0]) == {
        "median": 3.0, "min": 1.0, "max": 10.0, "n": 5}
    assert fair.summarise([]) is None
    assert fair.ratio(2.0, 1.0) == 2.0 and fair.ratio(None, 1.0) is None


def test_order_effect_first_over_second() -> None:
    records = [{"engine": e, "position": p, "metrics": {"seconds": t}}
               for e, p, t in [("arcticdb", 0, 2.0), ("arcticlite", 1, 1.0),
                               ("arcticlite", 0, 3.0), ("arcticdb", 1, 1.0),
                               ("arcticdb", 0, 4.0), ("arcticlite", 1, 1.0)]]
    eff = fair.order_effect(records, "seconds")
    assert eff["arcticdb"]["first"] == 3.0 and eff["arcticdb"]["second"] == 1.0
    assert eff["arcticdb"]["first_over_second"] == 3.0
    assert eff["arcticlite"]["first_over_second"] == 3.0


def test_sizes_scale_with_floors_and_overrides() -> None:
    full = fair.sizes_for(1.0)
    assert full == fair.FULL_SIZES
    small = fair.sizes_for(0.02, {"s3_array_rows": 1234})
    assert small["array_rows"] == 200_000
    assert small["wide_cols"] == 1_000 and small["select_cols"] == 10_000
    assert small["appends"] == fair.FLOORS["appends"]
    assert small["s3_array_rows"] == 1234
    with pytest.raises(KeyError):
        fair.sizes_for(1.0, {"nope": 1})


@pytest.mark.parametrize("shape", ["array", "columns", "mixed", "quotes", "tickers", "batch", "long", "small"])
def test_shapes(shape: str) -> None:
    df = fair.build_frame(shape, fair.make_parts(shape, 1_000, 7))
    assert len(df) == 1_000 and isinstance(df.index, pd.DatetimeIndex)
    assert df.index.is_monotonic_increasing
    if shape == "array":  # one block, columns strided (row-major)
        assert df.shape[1] == 7 and not df["c0"].to_numpy().flags.c_contiguous
    if shape == "columns":
        assert df["c0"].to_numpy().flags.c_contiguous
    if shape == "mixed":
        assert str(df.index.tz) == "America/New_York"
        assert [str(t) for t in df.dtypes] == ["float64", "int64", "bool", "object"]
        assert df["s"].nunique() <= 1_000
    if shape == "quotes":
        assert set(df["venue"]) <= {"NYSE", "NASDAQ", "ARCA", "IEX"}
        assert np.allclose(df["bid"] * 100, np.round(df["bid"] * 100))
    if shape == "tickers":
        assert df["ticker"].str.match(r"T\d{5}$").all() and df["id"].is_monotonic_increasing


def test_scenarios_cover_the_issue() -> None:
    names = {s.name for s in fair.scenarios(fair.sizes_for(1.0))}
    for shape in ("array", "columns", "mixed", "quotes", "tickers", "wide", "long"):
        assert {f"write_{shape}", f"read_{shape}"} <= names
    assert {"date_range", "append", "as_of", "list_first", "list", "select", "batch_write",
            "batch_read"} <= names
    assert sum(n.startswith("s3_read_") for n in names) >= 2
    assert sum(n.startswith("s3_write_") for n in names) >= 2
    chosen = fair.select_scenarios(fair.scenarios(fair.sizes_for(1.0)), ["read"], ["lmdb"])
    assert chosen and all(s.op == "read" and s.backend == "lmdb" for s in chosen)
