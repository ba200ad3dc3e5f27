"""Normalization round trips: ArcticDB's behaviour (reference §3) and where arcticlite does better."""

from __future__ import annotations

import datetime
import decimal
import json
import zoneinfo

import dateutil.tz
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import pandas as hpd

from arcticlite import QueryBuilder
from arcticlite.exceptions import (
    ArcticDbNotYetImplemented,
    ArcticUnsupportedDataTypeException,
    CorruptDataError,
    MissingDependencyError,
    NormalizationException,
    SchemaException,
    StreamDescriptorMismatch,
    UnsupportedVersionError,
    UserInputException,
)
from arcticlite.normalize._frames import (
    NormMeta,
    OutputFormat,
    common_meta,
    common_schema,
    denormalize,
    normalize,
    sortedness,
)

# None vs NaN vs NaT in object columns must come back as written
pytestmark = pytest.mark.filterwarnings("error:Mismatched null-like values:FutureWarning")

pl = pytest.importorskip("polars")
pl_testing = pytest.importorskip("polars.testing")


def roundtrip(data, **kw):
    """normalize -> JSON metadata round trip -> denormalize."""
    table, meta = normalize(data)
    meta2 = NormMeta.from_json(meta.to_json())
    assert meta2 == meta
    return denormalize(table, meta2, **kw)


def assert_same(out, data):
    if isinstance(data, pd.DataFrame):
        pd.testing.assert_frame_equal(out, data, check_freq=False)
    elif isinstance(data, pd.Series):
        pd.testing.assert_series_equal(out, data, check_freq=False)
    else:
        assert isinstance(out, np.ndarray)
        assert out.dtype == data.dtype and out.shape == data.shape
        np.testing.assert_array_equal(out, data)


IDX = pd.date_range("2024-01-01", periods=3, freq="h")

# --------------------------------------------------------------------------- §3 exact round trips
EXACT = {
    **{
        f"int-{t}": pd.DataFrame({"x": np.array([1, -2, 3], dtype=t)}, index=IDX)
        for t in ["int8", "int16", "int32", "int64"]
    },
    **{
        f"uint-{t}": pd.DataFrame({"x": np.array([1, 2, 255], dtype=t)}, index=IDX)
        for t in ["uint8", "uint16", "uint32", "uint64"]
    },
    "float32-nan": pd.DataFrame({"x": np.array([1.5, np.nan, 3], dtype="float32")}, index=IDX),
    "float64-nan": pd.DataFrame({"x": [1.5, np.nan, -np.inf]}, index=IDX),
    "bool": pd.DataFrame({"x": [True, False, True]}, index=IDX),
    "str-unicode-emoji": pd.DataFrame({"x": ["a", "ünï", "🚀"]}, index=IDX),
    "str-none": pd.DataFrame({"x": ["a", None, "c"]}, index=IDX),
    "str-nan": pd.DataFrame({"x": ["a", np.nan, "c"]}, index=IDX),
    "all-none": pd.DataFrame({"x": [None, None, None]}, index=IDX),
    "bytes": pd.DataFrame({"x": [b"a", b"\x00\xff", None]}, index=IDX),
    "datetime64-nat": pd.DataFrame(
        {
            "x": pd.to_datetime(
                ["2020-01-01 00:00:00", None, "2021-05-06 07:08:09.123456789"], format="ISO8601"
            )
        },
        index=IDX,
    ),
    "categorical": pd.DataFrame(
        {"x": pd.Categorical(["a", "b", None], categories=["b", "a", "z"])}, index=IDX
    ),
    "categorical-ordered": pd.DataFrame({"x": pd.Categorical([1, 3, 1], ordered=True)}, index=IDX),
    "int-column-names": pd.DataFrame({0: [1, 2, 3], 1: [4.0, 5, 6]}, index=IDX),
    "duplicate-column-names": pd.DataFrame([[1, 2.0, "a"]] * 3, columns=["a", "a", "b"], index=IDX),
    "int64-index": pd.DataFrame({"x": [1, 2, 3]}, index=pd.Index([5, 1, 9], name="i")),
    "float-index": pd.DataFrame({"x": [1, 2, 3]}, index=pd.Index([0.5, np.nan, 2.0])),
    "string-index": pd.DataFrame({"x": [1, 2, 3]}, index=pd.Index(["b", "a", "c"], name="k")),
    "range-index": pd.DataFrame({"x": [1, 2, 3]}, index=pd.RangeIndex(10, 40, 10, name="r")),
    "range-index-negative-step": pd.DataFrame({"x": [1, 2, 3]}, index=pd.RangeIndex(5, -1, -2)),
    "named-datetime-index": pd.DataFrame({"x": [1, 2, 3]}, index=IDX.rename("when")),
    "tz-index-ny": pd.DataFrame({"x": [1, 2, 3]}, index=IDX.tz_localize("America/New_York")),
    "tz-index-utc": pd.DataFrame({"x": [1, 2, 3]}, index=IDX.tz_localize("UTC")),
    "tz-index-tokyo": pd.DataFrame({"x": [1, 2, 3]}, index=IDX.tz_localize("Asia/Tokyo")),
    "multiindex-dt-str": pd.DataFrame(
        {"x": [1, 2, 3]}, index=pd.MultiIndex.from_arrays([IDX, ["a", "b", "c"]], names=["t", "s"])
    ),
    "multiindex-int-str": pd.DataFrame(
        {"x": [1, 2, 3]}, index=pd.MultiIndex.from_arrays([[1, 1, 2], ["a", "b", "a"]])
    ),
    "multiindex-tz": pd.DataFrame(
        {"x": [1, 2, 3]},
        index=pd.MultiIndex.from_arrays(
            [IDX.tz_localize("Europe/London"), [3, 2, 1]], names=["t", None]
        ),
    ),
    "series-named": pd.Series([1.0, 2.0, 3.0], index=IDX, name="price"),
    "series-unnamed": pd.Series([1, 2, 3], index=IDX),
    "series-int-name": pd.Series(["a", "b", None], name=7),
    "ndarray-1d": np.arange(5, dtype="int32"),
    "ndarray-2d": np.arange(12, dtype="float64").reshape(4, 3),
    "ndarray-2d-fortran": np.asfortranarray(np.arange(12, dtype="int64").reshape(3, 4)),
    "ndarray-str": np.array(["a", "bb", "ccc"]),
    "ndarray-bool": np.array([True, False]),
    "many-columns-mixed": pd.DataFrame(
        {"a": [1, 2, 3], "b": ["x", "y", "z"], "c": [1.0, 2.0, 3.0], "d": [True, False, True]},
        index=IDX,
    ),
    "columns-name": pd.DataFrame({"x": [1, 2, 3]}, index=IDX).rename_axis(columns="fields"),
    "index-name-equals-column": pd.DataFrame({"x": [1, 2, 3]}, index=IDX.rename("x")),
    "column-named-index": pd.DataFrame({"index": [1, 2, 3]}, index=IDX),
    "no-columns": pd.DataFrame(index=IDX),
}


@pytest.mark.parametrize("data", EXACT.values(), ids=EXACT.keys())
def test_exact_roundtrip(data):
    assert_same(roundtrip(data), data)


# --------------------------------------------------------------------------- §3 round trips with a change
def test_int_column_with_none_is_float64():
    df = pd.DataFrame({"x": [1, None, 3]})
    assert df["x"].dtype == "float64"  # pandas already made it float
    assert_same(roundtrip(df), df)


def test_datetime_index_freq_dropped():
    out = roundtrip(pd.DataFrame({"x": [1, 2, 3]}, index=IDX))
    assert IDX.freq is not None and out.index.freq is None


@pytest.mark.parametrize(
    "data",
    [
        pd.DataFrame(),
        pd.DataFrame({"a": pd.Series([], dtype="float64")}),
        pd.DataFrame({"a": []}, index=pd.RangeIndex(0)),
    ],
)
def test_empty_frame_reads_back_with_empty_datetime_index(data):
    out = roundtrip(data)
    assert isinstance(out.index, pd.DatetimeIndex) and len(out) == 0
    assert list(out.columns) == list(data.columns)
    assert list(out.dtypes) == list(data.dtypes)


def test_empty_series_reads_back_with_empty_datetime_index():
    out = roundtrip(pd.Series([], dtype="float64", name="s"))
    assert isinstance(out.index, pd.DatetimeIndex) and len(out) == 0 and out.name == "s"


def test_empty_frame_with_datetime_index_is_exact():
    df = pd.DataFrame({"a": pd.Series([], dtype="int64")}, index=pd.DatetimeIndex([], name="t"))
    assert_same(roundtrip(df), df)


# --------------------------------------------------------------------------- deliberately better than ArcticDB
BETTER = {
    # ArcticDB returns naive UTC (issue #189)
    "tz-aware-data-column": pd.DataFrame(
        {"x": pd.date_range("2024-01-01 12:00", periods=3, tz="America/New_York")}
    ),
    # ArcticDB returns datetime64[ns]
    "datetime64-us-column": pd.DataFrame(
        {"x": pd.Series(np.array(["2020-01-01", "NaT", "3000-01-01"], dtype="datetime64[us]"))}
    ),
    "datetime64-ms-column": pd.DataFrame(
        {"x": pd.to_datetime(["2020-01-01", "2021-01-01"]).as_unit("ms")}
    ),
    "datetime64-s-column": pd.DataFrame(
        {"x": pd.to_datetime(["2020-01-01", "2021-01-01"]).as_unit("s")}
    ),
    "datetime-index-us": pd.DataFrame({"x": [1, 2, 3]}, index=IDX.as_unit("us").tz_localize("UTC")),
    # ArcticDB rejects these
    "timedelta64": pd.DataFrame({"x": pd.to_timedelta([1, None, 3], unit="s")}),
    "timedelta64-ms": pd.DataFrame({"x": pd.to_timedelta([1, 2], unit="s").as_unit("ms")}),
    "nullable-Int64": pd.DataFrame({"x": pd.array([1, None, 3], dtype="Int64")}),
    "nullable-UInt8": pd.DataFrame({"x": pd.array([1, None, 255], dtype="UInt8")}),
    "nullable-Int32": pd.DataFrame({"x": pd.array([None, None, 3], dtype="Int32")}),
    "nullable-Float64": pd.DataFrame({"x": pd.array([1.5, None, 3], dtype="Float64")}),
    "nullable-boolean": pd.DataFrame({"x": pd.array([True, None, False], dtype="boolean")}),
    "string-dtype": pd.DataFrame({"x": pd.array(["a", None, "c"], dtype="string")}),
    "string-pyarrow-dtype": pd.DataFrame(
        {"x": pd.array(["a", None, "c"], dtype="string[pyarrow]")}
    ),
    "arrow-dtype": pd.DataFrame({"x": pd.array([1, None, 3], dtype="int32[pyarrow]")}),
    "nested-lists": pd.DataFrame({"x": [[1, 2], [], None, [3]]}),
    "nested-str-lists": pd.DataFrame({"x": [["a"], ["b", None]]}),
    "object-ints": pd.DataFrame({"x": pd.Series([1, 2, None], dtype=object)}),
    "object-timestamps": pd.DataFrame(
        {"x": pd.Series([pd.Timestamp("2020-01-01"), None], dtype=object)}
    ),
    "object-floats-none": pd.DataFrame({"x": pd.Series([1.5, None], dtype=object)}),
    "object-timestamps-nat": pd.DataFrame(
        {"x": pd.Series([pd.NaT, pd.Timestamp("2020")], dtype=object)}
    ),
    "str-pd-na": pd.DataFrame({"x": pd.Series(["a", pd.NA, "b"], dtype=object)}),
    "object-bools": pd.DataFrame({"x": pd.Series([True, False], dtype=object)}),
    "object-dates": pd.DataFrame({"x": [datetime.date(2020, 1, 1), datetime.date(2021, 2, 3)]}),
    "categorical-datetime": pd.DataFrame({"x": pd.Categorical(pd.date_range("2020", periods=2))}),
    "categorical-index": pd.DataFrame(
        {"x": [1, 2]}, index=pd.CategoricalIndex(["a", "b"], name="c")
    ),
    "timedelta-index": pd.DataFrame({"x": [1, 2]}, index=pd.to_timedelta([1, 2], unit="D")),
    "nullable-index": pd.DataFrame({"x": [1, 2]}, index=pd.Index([1, None], dtype="Int64")),
    "series-Int64": pd.Series(pd.array([1, None], dtype="Int64"), name="n"),
    "series-tz": pd.Series(pd.date_range("2020", periods=2, tz="Europe/Paris")),
    "categorical-series": pd.Series(pd.Categorical(["x", "y", "x"])),
}


@pytest.mark.parametrize("data", BETTER.values(), ids=BETTER.keys())
def test_better_than_arcticdb_roundtrip(data):
    assert_same(roundtrip(data), data)


def test_mixed_none_and_nan_keep_each_rows_kind():
    """As in ArcticDB: each missing string keeps its kind (tests/engine/test_missing_kinds.py)."""
    out = roundtrip(pd.DataFrame({"x": ["a", np.nan, None, np.nan]}))
    assert out["x"][0] == "a" and out["x"][2] is None
    assert all(isinstance(v, float) and np.isnan(v) for v in out["x"][[1, 3]])


@pytest.mark.parametrize(
    "tz",
    [
        zoneinfo.ZoneInfo("Europe/London"),
        dateutil.tz.gettz("Europe/London"),
        datetime.timezone(datetime.timedelta(hours=-3)),
        datetime.UTC,
        "Asia/Tokyo",
        "dateutil/Asia/Tokyo",
    ],
    ids=repr,
)
def test_tz_objects_of_any_library_roundtrip(tz):
    """ArcticDB gives a pytz zone back for a zoneinfo / dateutil one (dtype differs)."""
    df = pd.DataFrame(
        {"c": pd.date_range("2024", periods=2, tz=tz)},
        index=pd.MultiIndex.from_arrays([pd.date_range("2024", periods=2, tz=tz), [1, 2]]),
    )
    assert_same(roundtrip(df), df)
    df = df.droplevel(1)
    assert_same(roundtrip(df), df)


def test_tz_aware_data_column_keeps_wall_clock():
    df = pd.DataFrame({"x": [pd.Timestamp("2024-01-01 12:00", tz="America/New_York")]})
    assert roundtrip(df)["x"][0].hour == 12  # ArcticDB gives 17:00 naive


# --------------------------------------------------------------------------- rejected
REJECTED = {
    "mixed-object": (pd.DataFrame({"x": [1, "a", 2.5]}), ArcticDbNotYetImplemented),
    "mixed-int-float-object": (
        pd.DataFrame({"x": pd.Series([1, 2.5], dtype=object)}),
        ArcticDbNotYetImplemented,
    ),
    "str-and-bytes": (pd.DataFrame({"x": ["a", b"b"]}), ArcticDbNotYetImplemented),
    "mixed-type-lists": (pd.DataFrame({"x": [[1], ["a"]]}), ArcticDbNotYetImplemented),
    "dicts": (pd.DataFrame({"x": [{"a": 1}, {"b": 2}]}), ArcticDbNotYetImplemented),
    "decimal": (
        pd.DataFrame({"x": [decimal.Decimal("1.1"), decimal.Decimal(2)]}),
        ArcticDbNotYetImplemented,
    ),
    "big-int": (pd.DataFrame({"x": [1, 2**70]}), ArcticDbNotYetImplemented),
    "object-bool-none": (pd.DataFrame({"x": [True, None]}), ArcticDbNotYetImplemented),
    "period-index": (
        pd.DataFrame({"x": [1, 2]}, index=pd.period_range("2020", periods=2, freq="D")),
        ArcticDbNotYetImplemented,
    ),
    "interval-index": (
        pd.DataFrame({"x": [1, 2]}, index=pd.interval_range(0, 2)),
        ArcticDbNotYetImplemented,
    ),
    "period-column": (
        pd.DataFrame({"x": pd.period_range("2020", periods=2, freq="D")}),
        ArcticDbNotYetImplemented,
    ),
    "multiindex-columns": (
        pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("a", 1), ("a", 2)])),
        ArcticDbNotYetImplemented,
    ),
    "float16": (pd.DataFrame({"x": np.array([1, 2], dtype="float16")}), ArcticDbNotYetImplemented),
    "complex128": (
        pd.DataFrame({"x": np.array([1 + 2j, 2], dtype="complex128")}),
        ArcticDbNotYetImplemented,
    ),
    "tz-categorical": (
        pd.DataFrame({"x": pd.Categorical(pd.date_range("2020", periods=2, tz="UTC"))}),
        ArcticDbNotYetImplemented,
    ),
    "interval-categorical": (
        pd.DataFrame({"x": pd.Categorical(pd.interval_range(0, 2))}),
        ArcticDbNotYetImplemented,
    ),
    "sparse": (pd.DataFrame({"x": pd.arrays.SparseArray([0, 1])}), ArcticDbNotYetImplemented),
    "ndarray-3d": (np.zeros((2, 2, 2)), ArcticDbNotYetImplemented),
    "list": ([1, 2, 3], ArcticUnsupportedDataTypeException),
    "dict": ({"a": 1}, ArcticUnsupportedDataTypeException),
    "int": (5, ArcticUnsupportedDataTypeException),
    "none": (None, ArcticUnsupportedDataTypeException),
    "str": ("abc", ArcticUnsupportedDataTypeException),
}


@pytest.mark.parametrize(("data", "exc"), REJECTED.values(), ids=REJECTED.keys())
def test_rejected(data, exc):
    with pytest.raises(exc) as info:
        normalize(data)
    assert "write_pickle" in str(info.value)


def test_rejection_names_the_column():
    with pytest.raises(ArcticDbNotYetImplemented, match="'bad'.*first non-null value of type int"):
        normalize(pd.DataFrame({"ok": [1, 2], "bad": [1, "a"]}))


def test_datetime_index_outside_ns_range_rejected():
    idx = pd.DatetimeIndex(np.array(["2000-01-01", "3000-01-01"], "M8[s]"))
    with pytest.raises(UserInputException, match="outside"):
        normalize(pd.DataFrame({"x": [1, 2]}, index=idx))
    t = pa.table({"t": pa.array([0, 40_000_000_000], pa.timestamp("s")), "x": [1, 2]})
    with pytest.raises(UserInputException, match="outside"):
        normalize(t, index_column="t")


def test_index_column_for_pandas_rejected():
    with pytest.raises(UserInputException):
        normalize(pd.DataFrame({"x": [1]}), index_column="x")


# --------------------------------------------------------------------------- stored layout
def test_stored_layout_datetime_index_tz():
    df = pd.DataFrame(
        {"x": [1.0, 2.0]},
        index=pd.DatetimeIndex(["2024-01-01 12:00", "2024-01-02"], tz="America/New_York"),
    )
    table, meta = normalize(df)
    assert table.column_names == ["__index__", "x"]  # ArcticDB's Arrow name for an unnamed index
    assert table.schema.field("__index__").type == pa.timestamp("ns")  # naive, UTC instants
    assert table.column("__index__")[0].as_py() == datetime.datetime(2024, 1, 1, 17, 0)
    assert meta.tz == "America/New_York" and meta.index_kind == "datetime"
    assert meta.index_columns == ("__index__",)


def test_stored_layout_range_index_has_no_column():
    df = pd.DataFrame({"x": [1, 2]}, index=pd.RangeIndex(3, 7, 2))
    table, meta = normalize(df)
    assert table.column_names == ["x"]
    assert (meta.index_kind, meta.range_start, meta.range_step, meta.index_columns) == (
        "range",
        3,
        2,
        (),
    )


def test_stored_names_unique_strings():
    df = pd.DataFrame(
        [[1, 2, 3, 4, 5]], columns=["a", "a", 0, "0", "__index__"], index=pd.DatetimeIndex(["2024"])
    )
    table, meta = normalize(df)
    assert len(set(table.column_names)) == table.num_columns
    assert all(isinstance(n, str) for n in table.column_names)
    assert meta.user_columns == ("a", "a", 0, "0", "__index__")
    assert meta.index_columns == ("__index__",)  # the index keeps ArcticDB's name
    assert meta.columns[3] == "0" and meta.columns[4] != "__index__"
    assert meta.columns[2] not in ("0", "a") and meta.columns[1] != "a"
    assert list(denormalize(table, meta).columns) == list(df.columns)


def test_numeric_columns_are_zero_copy():
    values = np.arange(1000, dtype="float64")
    df = pd.DataFrame({"x": values}, copy=False)
    table, _ = normalize(df)
    assert table.column("x").chunk(0).buffers()[1].address == df["x"].to_numpy().ctypes.data


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8", "int16"])
def test_frame_from_row_major_2d_array(dtype):
    """Row-major blocks are transposed in row blocks; values and labels must survive."""
    a = (np.arange(200_003 * 3) % 97).astype(dtype).reshape(-1, 3)
    df = pd.DataFrame(a, index=pd.date_range("2024", periods=len(a), freq="s"))
    df["extra"] = "x"
    assert_same(roundtrip(df), df)


@pytest.mark.parametrize(
    "data",
    [
        pd.DataFrame({"a": np.arange(5.0), "b": np.arange(5)}),
        pd.Series(np.arange(5.0), name="a"),
        np.arange(5.0),
        np.arange(6).reshape(3, 2),
    ],
    ids=["frame", "series", "ndarray-1d", "ndarray-2d"],
)
def test_results_are_writable(data):
    """Zero-copy views of Arrow memory are read-only; what users read must be modifiable."""
    out = roundtrip(data)
    if isinstance(out, pd.DataFrame):
        out.iloc[0, 0] = 42
    elif isinstance(out, pd.Series):
        out.iloc[0] = 42
    else:
        out[0] = 42


def test_user_to_stored_storage_order_and_unknown_dropped():
    df = pd.DataFrame([[1, 2, 3, 4]], columns=["a", 0, "b", "a"])
    _, meta = normalize(df)
    assert meta.user_to_stored(["b", "zzz", 0, "a"]) == [
        meta.columns[0],
        meta.columns[1],
        "b",
        meta.columns[3],
    ]
    assert meta.user_to_stored(["0"]) == [meta.columns[1]]  # an int label is found by its text too (ArcticDB)
    assert meta.user_to_stored([]) == []


# --------------------------------------------------------------------------- column subsets and row slices
def test_column_subset_and_row_slice():
    df = pd.DataFrame(
        {
            "a": [1, 2, 3, 4],
            "b": ["w", "x", "y", "z"],
            "c": pd.array([1, None, 3, 4], dtype="Int64"),
        },
        index=pd.date_range("2024", periods=4, tz="UTC"),
    )
    table, meta = normalize(df)
    cols = meta.user_to_stored(["c", "a"])
    sub = table.select([*meta.index_columns, *cols]).slice(1, 2)
    assert_same(denormalize(sub, meta), df[["a", "c"]].iloc[1:3])
    sub = table.select(list(meta.index_columns))
    out = denormalize(sub, meta)
    assert list(out.columns) == [] and out.index.equals(df.index)


def test_range_index_slice_renumbered_from_stored_start():
    df = pd.DataFrame({"x": range(10)}, index=pd.RangeIndex(100, 120, 2))
    table, meta = normalize(df)
    out = denormalize(table.slice(8, 2), meta, row_offset=8)
    pd.testing.assert_index_equal(out.index, pd.RangeIndex(100, 104, 2))
    assert list(out["x"]) == [8, 9]


def test_duplicate_labels_subset():
    df = pd.DataFrame([[1, 2, 3]], columns=["a", "b", "a"])
    table, meta = normalize(df)
    out = denormalize(table.select(meta.user_to_stored(["a"])), meta)
    assert list(out.columns) == ["a", "a"] and list(out.iloc[0]) == [1, 3]


def test_series_with_column_dropped_and_unknown_column():
    table, meta = normalize(pd.DataFrame({"a": [1, 2]}))
    extra = table.append_column("new", pa.array([1.5, 2.5]))  # e.g. added under dynamic schema
    out = denormalize(extra, meta)
    assert list(out.columns) == ["a", "new"] and out["new"].dtype == "float64"


# --------------------------------------------------------------------------- output formats
def test_output_format_enum_case_insensitive():
    assert OutputFormat("PyArrow") is OutputFormat.PYARROW
    assert OutputFormat("POLARS") is OutputFormat.POLARS
    assert OutputFormat.PANDAS == "PANDAS"  # as ArcticDB's values
    with pytest.raises(ValueError):
        OutputFormat("csv")


def test_pyarrow_output_index_has_tz_and_unit():
    df = pd.DataFrame(
        {"x": [1, 2]}, index=pd.date_range("2024", periods=2, tz="Asia/Tokyo", unit="us", name="t")
    )
    table, meta = normalize(df)
    out = denormalize(table, meta, output_format="PYARROW")
    assert out.schema.field("t").type == pa.timestamp("us", tz="Asia/Tokyo")
    assert out.column("t").to_pandas().tolist() == list(df.index)
    assert out.column_names == ["t", "x"]


@pytest.mark.parametrize(
    "data",
    [
        pd.DataFrame(
            {"x": [1.5, 2.5], "n": pd.array([1, None], dtype="Int64")},
            index=pd.date_range("2024", periods=2, tz="Asia/Tokyo", name="t"),
        ),
        pd.DataFrame({"x": [1, 2]}, index=pd.date_range("2024", periods=2)),
        pd.DataFrame({"x": [1, 2, 3]}, index=pd.RangeIndex(10, 16, 2, name="r")),
        pd.DataFrame(
            {"x": [1, 2]}, index=pd.MultiIndex.from_arrays([[1, 2], ["a", "b"]], names=["i", None])
        ),
        pd.Series([1.0, 2.0], index=pd.Index(["a", "b"], name="k"), name="s"),
    ],
)
def test_pyarrow_output_to_pandas_restores_index(data):
    """As with ArcticDB's Arrow output, ``table.to_pandas()`` gives the frame back."""
    table, meta = normalize(data)
    out = denormalize(table, meta, output_format="pyarrow").to_pandas()
    expected = data.to_frame() if isinstance(data, pd.Series) else data
    pd.testing.assert_frame_equal(out, expected, check_freq=False)
    sliced = denormalize(table.slice(1), meta, output_format="pyarrow").to_pandas()
    assert len(sliced) == len(data) - 1


def test_pyarrow_output_range_index_no_column():
    table, meta = normalize(pd.DataFrame({"x": [1, 2]}))
    assert denormalize(table, meta, output_format=OutputFormat.PYARROW).column_names == ["x"]


def test_polars_output():
    df = pd.DataFrame(
        {
            "x": [1.5, 2.5],
            "s": ["a", None],
            "c": pd.Categorical(["u", "v"]),
            "k": pd.Categorical([1, 2]),
        },
        index=pd.date_range("2024", periods=2, tz="UTC"),
    )
    table, meta = normalize(df)
    out = denormalize(table, meta, output_format="polars")
    assert isinstance(out, pl.DataFrame)
    assert out.columns == ["__index__", "x", "s", "c", "k"]
    assert out["x"].to_list() == [1.5, 2.5] and out["s"].to_list() == ["a", None]
    assert out["__index__"].dtype == pl.Datetime("ns", "UTC")


def test_polars_output_without_polars_names_the_extra(monkeypatch):
    table, meta = normalize(pd.DataFrame({"x": [1]}))
    monkeypatch.setitem(__import__("sys").modules, "polars", None)
    with pytest.raises(MissingDependencyError, match=r"arcticlite\[polars\]"):
        denormalize(table, meta, output_format="polars")


def test_ndarray_output_formats():
    a = np.arange(6.0).reshape(3, 2)
    table, meta = normalize(a)
    assert denormalize(table, meta, output_format="pyarrow").num_rows == 3
    assert_same(denormalize(table.slice(1, 2), meta), a[1:])


# --------------------------------------------------------------------------- arrow and polars input
def test_arrow_table_roundtrip_no_index():
    t = pa.table(
        {
            "a": [1, 2, 3],
            "b": ["x", None, "z"],
            "c": pa.array([1, 2, 3], pa.timestamp("ms", tz="UTC")),
        }
    )
    table, meta = normalize(t)
    assert meta.kind == "arrow" and meta.index_kind == "none"
    assert denormalize(table, meta, output_format="pyarrow").equals(t)
    out = denormalize(table, meta)
    assert isinstance(out, pd.DataFrame) and isinstance(out.index, pd.RangeIndex)
    pd.testing.assert_frame_equal(out, t.to_pandas())


def test_record_batch_and_duplicate_names():
    batch = pa.RecordBatch.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])
    table, meta = normalize(batch)
    assert len(set(table.column_names)) == 2
    assert denormalize(table, meta, output_format="pyarrow").column_names == ["a", "a"]


@pytest.mark.parametrize("tz", [None, "Europe/Berlin"])
def test_arrow_index_column_datetime(tz):
    ts = pa.array([0, 1_000_000, 2_000_000], pa.timestamp("us", tz=tz))
    t = pa.table({"v": [1.0, 2.0, 3.0], "ts": ts, "w": [1, 2, 3]})
    table, meta = normalize(t, index_column="ts")
    assert meta.index_kind == "datetime" and meta.tz == tz and table.column_names[0] == "ts"
    assert table.schema.field("ts").type == pa.timestamp("ns")
    assert denormalize(table, meta, output_format="pyarrow").equals(t)  # original position and type
    out = denormalize(table, meta)
    assert (
        isinstance(out.index, pd.DatetimeIndex)
        and out.index.name == "ts"
        and str(out.index.tz) == str(tz)
    )
    assert list(out.columns) == ["v", "w"]
    assert sortedness(table, meta) == "ASCENDING"


def test_arrow_index_column_other_and_true():
    t = pa.table({"k": ["a", "b"], "v": [1, 2]})
    table, meta = normalize(t, index_column=True)
    assert meta.index_kind == "other"
    assert list(denormalize(table, meta).index) == ["a", "b"]
    with pytest.raises(UserInputException):
        normalize(t, index_column="nope")


def test_polars_roundtrip():
    df = pl.DataFrame(
        {
            "a": [1, 2],
            "s": ["x", None],
            "t": [datetime.datetime(2024, 1, 1), None],
            "c": pl.Series(["u", "v"], dtype=pl.Categorical),
            "l": [[1, 2], [3]],
        }
    )
    table, meta = normalize(df)
    assert meta.kind == "polars"
    out = denormalize(table, meta, output_format="polars")
    pl_testing.assert_frame_equal(out, df)
    with_index, meta2 = normalize(df, index_column="t")
    assert meta2.index_kind == "datetime"
    pl_testing.assert_frame_equal(denormalize(with_index, meta2, output_format="polars"), df)


# --------------------------------------------------------------------------- metadata
def test_meta_json_roundtrip_exotic_labels():
    df = pd.DataFrame(
        [[1, 2, 3, 4, 5, 6]],
        columns=[1.5, None, True, ("a", 1), pd.Timestamp("2020", tz="UTC"), "ü"],
    )
    df.columns.name = 3
    table, meta = normalize(df)
    assert NormMeta.from_json(meta.to_json()) == meta
    out = denormalize(table, NormMeta.from_json(meta.to_json()))
    assert list(out.columns) == list(df.columns) and out.columns.name == 3


def test_datetime_column_labels():
    df = pd.DataFrame([[1, 2]], columns=pd.date_range("2024", periods=2, tz="Europe/Paris"))
    assert_same(roundtrip(df), df)
    df = pd.DataFrame([[1, 2]], columns=pd.date_range("2024", periods=2))
    assert_same(roundtrip(df), df)


def test_many_hinted_columns():
    cols = {f"n{i}": pd.array([i, None], dtype="Int64") for i in range(80)}
    cols["plain"] = [1.5, 2.5]
    cols.update({f"s{i}": ["a", np.nan] for i in range(10)})
    df = pd.DataFrame(cols, index=pd.DatetimeIndex(["2024-01-01", "2024-01-02"]))
    assert_same(roundtrip(df), df)


def test_polars_output_of_arrow_with_duplicate_names():
    batch = pa.RecordBatch.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])
    table, meta = normalize(batch)
    out = denormalize(table, meta, output_format="polars")
    assert out.columns == table.column_names and out.row(0) == (1, 2)


def test_meta_refuses_newer_version():
    _, meta = normalize(pd.DataFrame({"x": [1]}))
    raw = json.loads(meta.to_json())
    raw["format_version"] = 99
    with pytest.raises(UnsupportedVersionError, match="upgrade"):
        NormMeta.from_json(json.dumps(raw).encode())
    with pytest.raises(CorruptDataError):
        NormMeta.from_json(b"not json")
    with pytest.raises(CorruptDataError):
        NormMeta.from_json(b'{"format_version": 1, "kind": "nope", "index_kind": "range"}')


def test_meta_is_frozen():
    _, meta = normalize(pd.DataFrame({"x": [1]}))
    with pytest.raises(AttributeError):
        meta.kind = "series"  # type: ignore[misc]


# --------------------------------------------------------------------------- schema checks
def _n(data):
    t, m = normalize(data)
    return m, t.schema


def _check(old, new, *, dynamic=False, stored_rows=None):
    (om, os_), (nm, ns) = _n(old), _n(new)
    return common_schema(om, os_, nm, ns, dynamic=dynamic, stored_rows=stored_rows)


def df_at(start, **cols):
    n = len(next(iter(cols.values())))
    return pd.DataFrame(cols, index=pd.date_range(start, periods=n, freq="D"))


def test_static_identical_is_none():
    assert _check(df_at("2024", a=[1, 2]), df_at("2025", a=[3, 4])) is None


def test_static_tz_may_differ_newest_wins():
    old = pd.DataFrame({"a": [1]}, index=pd.DatetimeIndex(["2024"]))
    new = pd.DataFrame({"a": [1]}, index=pd.DatetimeIndex(["2025"], tz="Asia/Tokyo"))
    assert _check(old, new) is None
    (om, _), (nm, _) = _n(old), _n(new)
    assert common_meta(om, nm, None).tz == "Asia/Tokyo"


@pytest.mark.parametrize(
    "new",
    [
        df_at("2025", a=np.array([1], "int32")),
        df_at("2025", a=[1.0]),
        df_at("2025", b=[1]),
        df_at("2025", a=[1], b=[2]),
    ],
)
def test_static_mismatch_lists_columns(new):
    with pytest.raises(StreamDescriptorMismatch) as info:
        _check(df_at("2024", a=[1]), new)
    msg = str(info.value)
    assert ("-'a': INT64" in msg or "+'b'" in msg) and "+" in msg and "dynamic_schema" in msg


def test_static_mismatch_order_and_nullable():
    with pytest.raises(StreamDescriptorMismatch, match="order"):
        _check(df_at("2024", a=[1], b=[2]), df_at("2025", b=[2], a=[1]))
    with pytest.raises(StreamDescriptorMismatch, match="Int64"):
        _check(df_at("2024", a=[1]), df_at("2025", a=pd.array([1], dtype="Int64")))


def test_index_name_mismatch():
    new = df_at("2025", a=[1])
    new.index.name = "t"
    with pytest.raises(StreamDescriptorMismatch, match="index names"):
        _check(df_at("2024", a=[1]), new)
    with pytest.raises(StreamDescriptorMismatch, match="index names"):
        _check(df_at("2024", a=[1]), new, dynamic=True)


def test_series_name_mismatch():
    a = pd.Series([1], index=pd.DatetimeIndex(["2024"]), name="a")
    with pytest.raises(StreamDescriptorMismatch):
        _check(a, a.rename("b"))


def test_index_kind_mismatch():
    with pytest.raises(
        NormalizationException, match="Cannot append Row count index to Timestamp index"
    ):
        _check(df_at("2024", a=[1]), pd.DataFrame({"a": [1]}))
    with pytest.raises(NormalizationException):
        _check(pd.DataFrame({"a": [1]}), pd.DataFrame({"a": [1]}, index=pd.Index([5])))
    # an empty DataFrame is written with a DatetimeIndex, as in ArcticDB
    with pytest.raises(NormalizationException):
        _check(pd.DataFrame(), pd.DataFrame({"a": [1]}))
    with pytest.raises(StreamDescriptorMismatch):  # ArcticDB 6.28: no columns to match
        _check(pd.DataFrame(), df_at("2024", a=[1]))
    empty_with_column = pd.DataFrame({"a": pd.Series([], dtype="int64")})
    assert _check(empty_with_column, df_at("2024", a=[1])) is None


def test_empty_append_accepted_whatever_its_index():
    (om, os_), (nm, ns) = _n(pd.DataFrame({"a": [1]})), _n(pd.DataFrame())
    assert common_schema(om, os_, nm, ns, dynamic=False, new_rows=0) is None
    with pytest.raises(NormalizationException):  # but not another kind of object
        (sm, ss) = _n(pd.Series([], dtype="int64"))
        common_schema(om, os_, sm, ss, dynamic=False, new_rows=0)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            {"t": pd.date_range("2020", periods=1)},
            {"t": pd.date_range("2021", periods=1, unit="us")},
        ),
        ({"s": [None]}, {"s": ["a"]}),
        ({"s": ["a"]}, {"s": [None]}),
        ({"s": ["a", np.nan]}, {"s": ["b", None]}),
        (
            {"t": pd.date_range("2020", periods=1, tz="UTC")},
            {"t": pd.date_range("2020", periods=1, tz="Asia/Tokyo")},
        ),
    ],
)
def test_static_compatible_like_arcticdb(old, new):
    """Differences ArcticDB does not see: datetime units / tz, None vs NaN, all-None columns."""
    o, n = df_at("2024", **old), df_at("2025", **new)
    schema = _check(o, n)
    (om, _), (nm, _) = _n(o), _n(n)
    merged = common_meta(om, nm, schema)
    assert merged.columns == om.columns


def test_static_str_onto_bytes_mismatch():
    with pytest.raises(StreamDescriptorMismatch):
        _check(df_at("2024", s=[b"a"]), df_at("2025", s=["a"]))


def test_object_kind_mismatch():
    with pytest.raises(NormalizationException, match="INCOMPATIBLE_OBJECTS"):
        _check(df_at("2024", a=[1]), pd.Series([1], index=pd.DatetimeIndex(["2025"]), name="a"))


def test_range_index_append_rules():
    old = pd.DataFrame({"a": [1, 2, 3]}, index=pd.RangeIndex(0, 6, 2))
    assert (
        _check(old, pd.DataFrame({"a": [4]}, index=pd.RangeIndex(6, 8, 2)), stored_rows=3) is None
    )
    # a default index (from 0) continues the stored range, as in ArcticDB
    assert _check(old, pd.DataFrame({"a": [4]}, index=pd.RangeIndex(0, 2, 2)), stored_rows=3) is None
    with pytest.raises(NormalizationException, match="not contiguous"):
        _check(old, pd.DataFrame({"a": [4]}, index=pd.RangeIndex(2, 4, 2)), stored_rows=3)
    with pytest.raises(NormalizationException, match="different RangeIndex step"):
        _check(old, pd.DataFrame({"a": [4]}, index=pd.RangeIndex(6, 7, 1)), stored_rows=3)


def test_dynamic_new_columns_and_widening():
    old = df_at("2024", a=np.array([1], "int32"), b=[1.5], s=["x"])
    new = df_at("2025", c=[True], a=np.array([2], "int64"), s=["y"])
    schema = _check(old, new, dynamic=True)
    assert schema.names == ["__index__", "a", "b", "s", "c"]
    assert schema.field("a").type == pa.int64() and schema.field("c").type == pa.bool_()
    (om, _), (nm, _) = _n(old), _n(new)
    merged = common_meta(om, nm, schema)
    assert merged.columns == ("a", "b", "s", "c")


def test_dynamic_int_promotes_to_float():
    assert (
        _check(df_at("2024", a=[1]), df_at("2025", a=[1.5]), dynamic=True).field("a").type
        == pa.float64()
    )
    assert (
        _check(
            df_at("2024", a=np.array([1], "uint8")),
            df_at("2025", a=np.array([1], "int8")),
            dynamic=True,
        )
        .field("a")
        .type
        == pa.int16()
    )


@pytest.mark.parametrize(
    ("a", "b"), [(["x"], [1]), ([True], [1]), ([1.5], [False]), (["x"], [b"y"])]
)
def test_dynamic_no_common_type(a, b):
    with pytest.raises(SchemaException, match="No valid common type"):
        _check(df_at("2024", a=a), df_at("2025", a=b), dynamic=True)


def test_dynamic_tz_data_column_newest_wins():
    old = pd.DataFrame(
        {"t": pd.date_range("2024", periods=1, tz="UTC")}, index=pd.DatetimeIndex(["2024"])
    )
    new = pd.DataFrame(
        {"t": pd.date_range("2024", periods=1, tz="Asia/Tokyo")}, index=pd.DatetimeIndex(["2025"])
    )
    assert _check(old, new, dynamic=True).field("t").type == pa.timestamp("ns", tz="Asia/Tokyo")


# --------------------------------------------------------------------------- sortedness
@pytest.mark.parametrize(
    ("index", "expected"),
    [
        (pd.DatetimeIndex(["2024-01-01", "2024-01-01", "2024-01-02"]), "ASCENDING"),
        (pd.DatetimeIndex(["2024-01-03", "2024-01-02"]), "DESCENDING"),
        (pd.DatetimeIndex(["2024-01-03", "2024-01-04", "2024-01-02"]), "UNSORTED"),
        (pd.DatetimeIndex(["2024-01-01", None, "2024-01-02"]), "UNSORTED"),
        (pd.DatetimeIndex(["2024-01-01"]), "ASCENDING"),
        (pd.RangeIndex(3), "UNKNOWN"),
        (pd.Index([3, 2, 1]), "UNKNOWN"),
    ],
)
def test_sortedness(index, expected):
    table, meta = normalize(pd.DataFrame({"x": range(len(index))}, index=index))
    assert sortedness(table, meta) == expected


# --------------------------------------------------------------------------- property tests
_DTYPES = [
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint32",
    "uint64",
    "float32",
    "float64",
    "bool",
    "datetime64[ns]",
    "timedelta64[ns]",
]


@st.composite
def frames(draw):
    cols = [
        hpd.column(f"c{i}", dtype=np.dtype(draw(st.sampled_from(_DTYPES))))
        for i in range(draw(st.integers(1, 4)))
    ]
    cols.append(hpd.column("s", elements=st.one_of(st.none(), st.text(max_size=5))))
    index = draw(st.sampled_from(["range", "datetime", "int"]))
    if index == "range":
        idx = hpd.range_indexes(min_size=1, max_size=20)
    elif index == "datetime":
        idx = hpd.indexes(dtype="datetime64[ns]", min_size=1, max_size=20, unique=True)
    else:
        idx = hpd.indexes(dtype="int64", min_size=1, max_size=20)
    return draw(hpd.data_frames(cols, index=idx))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames())
def test_hypothesis_roundtrip(df):
    assert_same(roundtrip(df), df)


_opt_int = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))
_text = st.text(max_size=6)
_ts = st.integers(-(2**62), 2**62)


def _column_strategy(n: int):
    """(name, values) for one column of ``n`` rows over arcticlite's extended dtypes."""
    lists = st.lists
    return st.sampled_from(
        [
            (
                "Int64",
                lists(_opt_int, min_size=n, max_size=n).map(lambda v: pd.array(v, dtype="Int64")),
            ),
            (
                "UInt8",
                lists(st.one_of(st.none(), st.integers(0, 255)), min_size=n, max_size=n).map(
                    lambda v: pd.array(v, dtype="UInt8")
                ),
            ),
            (
                "boolean",
                lists(st.one_of(st.none(), st.booleans()), min_size=n, max_size=n).map(
                    lambda v: pd.array(v, dtype="boolean")
                ),
            ),
            (
                "string",
                lists(st.one_of(st.none(), _text), min_size=n, max_size=n).map(
                    lambda v: pd.array(v, dtype="string")
                ),
            ),
            (
                "category",
                lists(st.sampled_from(["a", "b", None]), min_size=n, max_size=n).map(
                    lambda v: pd.Categorical(v)
                ),
            ),
            (
                "tz",
                lists(_ts, min_size=n, max_size=n).map(
                    lambda v: (
                        pd.DatetimeIndex(np.array(v, "M8[ns]"))
                        .tz_localize("UTC")
                        .tz_convert("Asia/Kolkata")
                    )
                ),
            ),
            (
                "us",
                lists(st.integers(-(2**62), 2**62), min_size=n, max_size=n).map(
                    lambda v: np.array(v, "M8[us]")
                ),
            ),
            ("td", lists(_ts, min_size=n, max_size=n).map(lambda v: np.array(v, "m8[ms]"))),
            (
                "str-none",
                lists(st.one_of(st.none(), _text), min_size=n, max_size=n).map(
                    lambda v: np.array(v, dtype=object)
                ),
            ),
            (
                "str-nan",
                lists(st.one_of(st.just(np.nan), _text), min_size=n, max_size=n).map(
                    lambda v: np.array(v, dtype=object)
                ),
            ),
            (
                "bytes",
                lists(st.one_of(st.none(), st.binary(max_size=4)), min_size=n, max_size=n).map(
                    lambda v: np.array(v, dtype=object)
                ),
            ),
            (
                "lists",
                lists(
                    st.one_of(st.none(), lists(st.integers(-5, 5), max_size=3)),
                    min_size=n,
                    max_size=n,
                ).map(lambda v: pd.Series(v, dtype=object).to_numpy()),
            ),
        ]
    ).flatmap(lambda pair: pair[1].map(lambda values: (pair[0], values)))


@st.composite
def extended_frames(draw):
    n = draw(st.integers(1, 12))
    cols = draw(st.lists(_column_strategy(n), min_size=1, max_size=5))
    data = {f"{name}{i}": values for i, (name, values) in enumerate(cols)}
    index = draw(st.sampled_from(["range", "datetime-tz", "string"]))
    if index == "range":
        idx = pd.RangeIndex(3, 3 + 2 * n, 2)
    elif index == "datetime-tz":
        idx = pd.date_range("2024", periods=n, freq="min", tz="America/Chicago", name="t")
    else:
        idx = pd.Index([f"k{i}" for i in range(n)], name="key")
    return pd.DataFrame(data, index=idx)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(extended_frames())
def test_hypothesis_extended_dtypes_roundtrip(df):
    assert_same(roundtrip(df), df)
    table, meta = normalize(df)
    half = table.slice(table.num_rows // 2)
    out = denormalize(half, meta)
    expected = df.iloc[table.num_rows // 2 :]
    if isinstance(df.index, pd.RangeIndex):  # ArcticDB re-numbers from the stored start
        expected = expected.set_axis(pd.RangeIndex(3, 3 + 2 * len(expected), 2))
    assert_same(out, expected)


@settings(max_examples=50, deadline=None)
@given(
    hpd.series(dtype=float, index=hpd.range_indexes(min_size=1)),
    st.sampled_from(["pandas", "pyarrow", "polars"]),
)
def test_hypothesis_series_output_formats(s, fmt):
    table, meta = normalize(s)
    out = denormalize(table, meta, output_format=fmt)
    if fmt == "pandas":
        assert_same(out, s)
    else:
        assert len(out) == len(s)


def test_uint64_column_above_2_63_with_few_values_writes_and_reads(lib):
    """A long uint64 column whose values lie near the top of the range (ids, hashes) and repeat
    (so it gets a Bloom filter from its distinct values) is written and read back exactly."""
    rng = np.random.default_rng(0)
    top = np.uint64(2**64 - 1_000)
    df = pd.DataFrame({"id": top + rng.integers(0, 500, 20_000).astype(np.uint64)},
                      index=pd.date_range("2024-01-01", periods=20_000, freq="s"))
    lib.write("ids", df)
    pd.testing.assert_frame_equal(lib.read("ids").data, df, check_freq=False)
    hit = int(df["id"].iloc[7])
    q = QueryBuilder()
    q = q[q["id"] == hit]
    pd.testing.assert_frame_equal(lib.read("ids", query_builder=q).data, df[df["id"] == hit], check_freq=False)
