"""Data of the fair benchmark (``python -m benchmarks.fair``): sizes, frame shapes, scenarios.

Pure functions only (numpy and pandas, no engine imports), so that the driver, the workers and
the smoke test (``tests/test_bench_harness.py``) share them.

A frame is generated once per run of the driver as *parts* (plain numpy arrays, pickled to a
file) and rebuilt in each worker by :func:`build_frame` with the constructor that defines its
shape, so that the memory layout a writer sees is the one the shape names (a frame from a 2-D
row-major array is one block whose columns are strided; a frame built column by column is one
consolidated block with contiguous columns).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

ENGINES = ("arcticdb", "arcticlite")
ENGINE_LABELS = {"arcticdb": "ArcticDB", "arcticlite": "arcticlite"}

# Full sizes (``--scale 1``). Row counts scale; column counts of the wide shapes do not (the
# number of columns is what those scenarios are about); counts of operations scale with a floor.
FULL_SIZES: dict[str, int] = {
    "array_rows": 10_000_000,  # x 10 float64, from a 2-D array
    "columns_rows": 10_000_000,  # x 10 float64, column by column
    "mixed_rows": 5_000_000,
    "quotes_rows": 5_000_000,
    "tickers_rows": 5_000_000,  # id, x, a 10,000-value string ticker
    "wide_rows": 20_000,  # x 1,000 float64
    "wide_cols": 1_000,
    "long_rows": 40_000_000,  # x 1 float64
    "select_rows": 10_000,  # x 10,000 float64, read 10 of them
    "select_cols": 10_000,
    "appends": 2_000,  # of 10 rows
    "versions": 2_000,
    "symbols": 5_000,
    "batch_symbols": 100,  # write_batch / read_batch of this many symbols ...
    "batch_rows": 10_000,  # ... of this many rows x 5 columns each
    "s3_array_rows": 1_000_000,  # S3 through moto: smaller by default (moto is slow)
    "s3_mixed_rows": 500_000,
    "s3_quotes_rows": 500_000,
}
FLOORS: dict[str, int] = {
    "wide_rows": 1_000,
    "select_rows": 1_000,
    "appends": 40,
    "versions": 20,
    "symbols": 100,
    "batch_symbols": 10,
    "batch_rows": 100,
}
UNSCALED = frozenset({"wide_cols", "select_cols"})


def sizes_for(scale: float, overrides: dict[str, int] | None = None) -> dict[str, int]:
    """The sizes of a run at ``scale`` (1.0 = full), with explicit ``overrides`` last."""
    if scale <= 0:
        raise ValueError("scale must be > 0")
    out = {}
    for key, full in FULL_SIZES.items():
        if key in UNSCALED:
            out[key] = full
        else:
            out[key] = max(FLOORS.get(key, 100), int(round(full * scale)))
    for key, value in (overrides or {}).items():
        if key not in FULL_SIZES:
            raise KeyError(f"unknown size {key!r}; known: {', '.join(FULL_SIZES)}")
        out[key] = int(value)
    return out


# -- shapes --------------------------------------------------------------------------------------
def _index(n: int, freq: str = "s", tz: str | None = None) -> np.ndarray:
    idx = pd.date_range("2020-01-01", periods=n, freq=freq, tz=tz)
    return idx.asi8.copy()  # int64 ns since epoch (UTC)


def make_parts(shape: str, n: int, ncols: int = 10, seed: int = 0) -> dict[str, Any]:
    """Plain arrays from which :func:`build_frame` makes the frame of ``shape`` with ``n`` rows."""
    rng = np.random.default_rng(seed)
    if shape == "array":  # 2-D, row-major (C order): frame[c] is a strided view
        return {"index": _index(n), "values": rng.standard_normal((n, ncols)), "ncols": ncols}
    if shape == "columns":  # one contiguous 1-D array per column
        return {"index": _index(n), "cols": list(rng.standard_normal((ncols, n))), "ncols": ncols}
    if shape == "mixed":
        labels = np.array([f"label_{i:04d}_{'x' * (i % 13)}" for i in range(1_000)], dtype=object)
        return {
            "index": _index(n, tz="America/New_York"),
            "tz": "America/New_York",
            "f": rng.standard_normal(n),
            "i": rng.integers(-(10**9), 10**9, n, dtype=np.int64),
            "b": rng.random(n) < 0.5,
            "s": labels[rng.integers(0, len(labels), n)],
        }
    if shape == "quotes":
        gaps = rng.exponential(5_000, n).astype(np.int64) * 1_000  # microseconds, mean 5 ms
        gaps[rng.random(n) < 0.3] = 0
        ts = np.datetime64("2024-01-02T09:30", "ns").astype(np.int64) + np.cumsum(gaps)
        ticks = 10_000 + np.cumsum(rng.integers(-1, 2, n) * (rng.random(n) < 0.3))
        spread = rng.integers(1, 4, n)
        venues = np.array(["NYSE", "NASDAQ", "ARCA", "IEX"], dtype=object)
        return {
            "index": ts,
            "bid": ticks / 100.0,
            "ask": (ticks + spread) / 100.0,
            "bid_size": np.maximum(1, rng.lognormal(1.0, 1.0, n).astype(np.int64)) * 100,
            "ask_size": np.maximum(1, rng.lognormal(1.0, 1.0, n).astype(np.int32)) * 100,
            "venue": venues[rng.choice(4, n, p=[0.4, 0.3, 0.2, 0.1])],
        }
    if shape == "tickers":  # every row's ticker drawn uniformly from 10,000 names
        names = np.array([f"T{i:05d}" for i in range(10_000)], dtype=object)
        return {"index": _index(n), "id": np.arange(n, dtype=np.int64), "x": rng.random(n),
                "ticker": names[rng.integers(0, len(names), n)]}
    if shape == "batch":  # one symbol of a batch: 2 float, 2 int, 1 bool column
        return {"index": _index(n), "f0": rng.standard_normal(n), "f1": rng.random(n),
                "i0": rng.integers(0, 10**6, n, dtype=np.int64),
                "i1": rng.integers(-100, 100, n, dtype=np.int64), "b": rng.random(n) < 0.5}
    if shape == "long":
        return {"index": _index(n, freq="ms"), "cols": [rng.standard_normal(n)], "ncols": 1}
    if shape == "small":  # the 10-row appends, the versions, the 5,000 symbols
        return {"index": _index(n, freq="ms"), "a": rng.standard_normal(n),
                "b": rng.integers(0, 1_000, n, dtype=np.int64)}
    raise KeyError(f"unknown shape {shape!r}")


def build_frame(shape: str, parts: dict[str, Any]) -> pd.DataFrame:
    """The frame of ``shape`` from :func:`make_parts`'s arrays (no copy of a 2-D array)."""
    if shape == "array":
        idx = pd.DatetimeIndex(parts["index"].view("M8[ns]"), name="ts")
        values = parts["values"]
        return pd.DataFrame(values, index=idx, columns=[f"c{i}" for i in range(values.shape[1])],
                            copy=False)
    if shape in ("columns", "long"):
        idx = pd.DatetimeIndex(parts["index"].view("M8[ns]"), name="ts")
        return pd.DataFrame({f"c{i}": col for i, col in enumerate(parts["cols"])}, index=idx)
    if shape == "mixed":
        idx = pd.DatetimeIndex(parts["index"].view("M8[ns]"), name="ts").tz_localize("UTC")
        idx = idx.tz_convert(parts["tz"])
        return pd.DataFrame({k: parts[k] for k in ("f", "i", "b", "s")}, index=idx)
    if shape == "quotes":
        idx = pd.DatetimeIndex(parts["index"].view("M8[ns]"), name="ts")
        cols = ("bid", "ask", "bid_size", "ask_size", "venue")
        return pd.DataFrame({k: parts[k] for k in cols}, index=idx)
    if shape == "small":
        idx = pd.DatetimeIndex(parts["index"].view("M8[ns]"), name="ts")
        return pd.DataFrame({"a": parts["a"], "b": parts["b"]}, index=idx)
    if shape in ("tickers", "batch"):
        idx = pd.DatetimeIndex(parts["index"].view("M8[ns]"), name="ts")
        return pd.DataFrame({k: v for k, v in parts.items() if k != "index"}, index=idx)
    raise KeyError(f"unknown shape {shape!r}")


# -- scenarios -----------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Dataset:
    """What a read scenario reads: a frame of ``shape`` written once per engine (and backend)."""

    shape: str
    rows_key: str
    ncols: int | None = None  # array / columns / wide: columns of the 2-D data

    def key(self, sizes: dict[str, int]) -> tuple[str, int, int | None]:
        return (self.shape, sizes[self.rows_key], self.ncols)


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One timed operation. ``op`` is what the worker does; ``dataset`` what it writes or reads."""

    name: str
    op: str  # write | read | date_range | append | as_of | list_first | list | select
    #        | write_batch | write_each | read_batch
    label: str
    backend: str = "lmdb"
    dataset: Dataset | None = None
    unit: str = "s"


def scenarios(sizes: dict[str, int]) -> list[Scenario]:
    """Every scenario, in the order they run, labelled with their sizes."""
    ds = {
        "array": Dataset("array", "array_rows", 10),
        "columns": Dataset("columns", "columns_rows", 10),
        "mixed": Dataset("mixed", "mixed_rows"),
        "quotes": Dataset("quotes", "quotes_rows"),
        "tickers": Dataset("tickers", "tickers_rows"),
        "batch": Dataset("batch", "batch_rows"),
        "wide": Dataset("array", "wide_rows", sizes["wide_cols"]),
        "long": Dataset("long", "long_rows"),
        "select": Dataset("array", "select_rows", sizes["select_cols"]),
        "s3_array": Dataset("array", "s3_array_rows", 10),
        "s3_mixed": Dataset("mixed", "s3_mixed_rows"),
        "s3_quotes": Dataset("quotes", "s3_quotes_rows"),
    }

    def n(key: str) -> str:
        return f"{sizes[key]:,}"

    shape_labels = {
        "array": f"{n('array_rows')} x 10 float64, 2-D array",
        "columns": f"{n('columns_rows')} x 10 float64, column by column",
        "mixed": f"{n('mixed_rows')} mixed (f/i/b/str, tz index)",
        "quotes": f"{n('quotes_rows')} quotes",
        "tickers": f"{n('tickers_rows')} x (id, x, 10,000-value ticker)",
        "wide": f"{n('wide_rows')} x {n('wide_cols')} float64",
        "long": f"{n('long_rows')} x 1 float64",
    }
    out: list[Scenario] = []
    for key, text in shape_labels.items():
        out.append(Scenario(f"write_{key}", "write", f"write {text}", dataset=ds[key]))
        out.append(Scenario(f"read_{key}", "read", f"read {text}", dataset=ds[key]))
    out += [
        Scenario("date_range", "date_range",
                 f"date_range 1 hour of {n('array_rows')} rows", dataset=ds["array"], unit="ms"),
        Scenario("append", "append", f"{n('appends')} appends of 10 rows, total"),
        Scenario("as_of", "as_of", f"read(as_of=0), {n('versions')} versions", unit="ms"),
        Scenario("list_first", "list_first",
                 f"list_symbols {n('symbols')}, fresh client, first call ever", unit="ms"),
        Scenario("list", "list", f"list_symbols {n('symbols')}, fresh client, later call",
                 unit="ms"),
        Scenario("batch_write", "write_batch",
                 f"write_batch {n('batch_symbols')} symbols x {n('batch_rows')} rows x 5",
                 dataset=ds["batch"], unit="ms"),
        Scenario("writes", "write_each",
                 f"write {n('batch_symbols')} symbols x {n('batch_rows')} rows x 5, one write each",
                 dataset=ds["batch"], unit="ms"),
        Scenario("batch_read", "read_batch",
                 f"read_batch {n('batch_symbols')} symbols x {n('batch_rows')} rows x 5",
                 dataset=ds["batch"], unit="ms"),
        Scenario("select", "select",
                 f"read 10 of {n('select_cols')} columns x {n('select_rows')} rows",
                 dataset=ds["select"], unit="ms"),
    ]
    for key, text in (("array", f"{n('s3_array_rows')} x 10 float64, 2-D array"),
                      ("mixed", f"{n('s3_mixed_rows')} mixed"),
                      ("quotes", f"{n('s3_quotes_rows')} quotes")):
        d = ds[f"s3_{key}"]
        out.append(Scenario(f"s3_write_{key}", "write", f"S3 write {text}", "s3", d))
        out.append(Scenario(f"s3_read_{key}", "read", f"S3 read {text}", "s3", d))
    return out


def select_scenarios(all_: Sequence[Scenario], only: Sequence[str] | None,
                     backends: Sequence[str]) -> list[Scenario]:
    """Filter by name (an entry matches a scenario equal to it or starting with it + ``_``;
    ``write`` matches every LMDB write) and by backend."""
    chosen = []
    for s in all_:
        if s.backend not in backends:
            continue
        if only:
            names = {s.name, s.op}
            if not any(o in names or s.name.startswith(o + "_") for o in only):
                continue
        chosen.append(s)
    return chosen


# -- schedule and statistics ---------------------------------------------------------------------
def run_order(runs: int, engines: Sequence[str] = ENGINES) -> list[tuple[int, int, str]]:
    """(run, position in its pair, engine) in execution order: A B, B A, A B, ... (A B B A A B)."""
    a, b = engines
    out = []
    for r in range(runs):
        pair = (a, b) if r % 2 == 0 else (b, a)
        out += [(r, 0, pair[0]), (r, 1, pair[1])]
    return out


def summarise(values: Sequence[float]) -> dict[str, float] | None:
    """Median, min and max (``None`` for no values)."""
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values)}


def ratio(arcticdb: float | None, arcticlite: float | None) -> float | None:
    """ArcticDB time / arcticlite time (> 1: arcticlite faster)."""
    if not arcticdb or not arcticlite:
        return None
    return arcticdb / arcticlite


def order_effect(records: Sequence[dict[str, Any]], metric: str) -> dict[str, Any]:
    """Per engine: median of ``metric`` over the runs where it went first in its pair, over the
    runs where it went second, and first / second (> 1: slower when first)."""
    out: dict[str, Any] = {}
    for engine in ENGINES:
        first = [r["metrics"][metric] for r in records
                 if r["engine"] == engine and r["position"] == 0 and metric in r["metrics"]]
        second = [r["metrics"][metric] for r in records
                  if r["engine"] == engine and r["position"] == 1 and metric in r["metrics"]]
        m1 = statistics.median(first) if first else None
        m2 = statistics.median(second) if second else None
        out[engine] = {"first": m1, "second": m2, "n_first": len(first), "n_second": len(second),
                       "first_over_second": (m1 / m2) if m1 and m2 else None}
    return out


def fmt_value(seconds: float | None, unit: str) -> str:
    if seconds is None:
        return "–"
    if unit == "ms":
        v = seconds * 1e3
        return f"{v:.2f}" if v < 10 else f"{v:.1f}"
    return f"{seconds:.3f}" if seconds < 10 else f"{seconds:.2f}"


def fmt_cell(summary: dict[str, float] | None, unit: str) -> str:
    """``median (min–max) unit``."""
    if summary is None:
        return "–"
    return (f"{fmt_value(summary['median'], unit)} ({fmt_value(summary['min'], unit)}–"
            f"{fmt_value(summary['max'], unit)}) {unit}")
