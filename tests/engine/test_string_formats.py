"""``arrow_string_format_default`` / ``_per_column``: the Arrow type of string columns in Arrow
and polars output, as ArcticDB gives them (large strings unless asked otherwise)."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

import arcticlite as adb
from arcticlite import ArrowOutputStringFormat as F

DICT = pa.dictionary(pa.int32(), pa.large_string())


@pytest.fixture
def lib() -> adb.Library:
    lib = adb.Arctic("mem://", output_format="pyarrow").create_library("x")
    lib.write("s", pd.DataFrame({"a": ["x", "y", "x"], "b": [1, 2, 3], "c": ["p", "q", "r"]}))
    return lib


@pytest.mark.parametrize(("fmt", "typ"), [(None, pa.large_string()), (F.UNSPECIFIED, pa.large_string()),
                                          (F.LARGE_STRING, pa.large_string()), (F.SMALL_STRING, pa.string()),
                                          (F.CATEGORICAL, DICT), (F.DICTIONARY_ENCODED, DICT),
                                          (pa.string(), pa.string()), (pa.large_string(), pa.large_string())])
def test_read_string_format(lib: adb.Library, fmt: object, typ: pa.DataType) -> None:
    t = lib.read("s", arrow_string_format_default=fmt).data
    assert t.schema.field("a").type == typ and t.schema.field("c").type == typ
    assert t.column("a").to_pylist() == ["x", "y", "x"]
    assert t.schema.field("b").type == pa.int64()


def test_per_column_overrides_the_default(lib: adb.Library) -> None:
    t = lib.read("s", arrow_string_format_default=F.SMALL_STRING,
                 arrow_string_format_per_column={"a": F.CATEGORICAL}).data
    assert t.schema.field("a").type == DICT and t.schema.field("c").type == pa.string()


def test_defaults_of_the_arctic_and_the_library() -> None:
    ac = adb.Arctic("mem://", output_format="pyarrow", arrow_string_format_default=F.SMALL_STRING)
    lib = ac.create_library("x")
    lib.write("s", pd.DataFrame({"a": ["x"]}))
    assert lib.read("s").data.schema.field("a").type == pa.string()
    lib2 = ac.get_library("x", arrow_string_format_default=F.CATEGORICAL)
    assert lib2.read("s").data.schema.field("a").type == DICT
    assert lib2.read("s", arrow_string_format_default=F.LARGE_STRING).data.schema.field("a").type == pa.large_string()


def test_polars_categorical(lib: adb.Library) -> None:
    pl = pytest.importorskip("polars")
    df = lib.read("s", output_format="polars", arrow_string_format_default=F.CATEGORICAL).data
    assert df.schema["a"] == pl.Categorical and df["a"].to_list() == ["x", "y", "x"]


def test_unknown_format_is_refused_naming_it(lib: adb.Library) -> None:
    with pytest.raises(ValueError, match="Unknown ArrowOutputStringFormat: string_view"):
        lib.read("s", arrow_string_format_default=pa.string_view())
    with pytest.raises(ValueError, match="Unknown ArrowOutputStringFormat"):
        adb.Arctic("mem://", arrow_string_format_default="utf-9")


@pytest.mark.parametrize("values", [[None, None], []], ids=["all-None", "no-rows"])
def test_a_string_column_of_no_strings_is_still_a_string_column_in_arrow(lib: adb.Library, values: list) -> None:
    idx = pd.date_range("2024", periods=len(values)) if values else pd.DatetimeIndex([])
    lib.write("n", pd.DataFrame({"s": pd.Series(values, dtype=object)}, index=idx))
    assert lib.read("n", output_format="pyarrow").data.schema.field("s").type == pa.large_string()
    got = lib.read("n", output_format="pyarrow", arrow_string_format_default=F.CATEGORICAL).data
    assert pa.types.is_dictionary(got.schema.field("s").type)


def test_polars_output_flags_a_timestamp_index_sorted(lib: adb.Library) -> None:
    pl = pytest.importorskip("polars")
    lib.write("p", pd.DataFrame({"a": [1, 2, 3]}, index=pd.date_range("2024", periods=3, tz="US/Eastern")))
    out = lib.read("p", output_format="polars").data
    assert isinstance(out, pl.DataFrame) and out[out.columns[0]].flags["SORTED_ASC"]
    assert not out["a"].flags["SORTED_ASC"]


def _types(t: pa.Table) -> tuple[pa.DataType, pa.DataType]:
    return t.schema.field("a").type, t.schema.field("c").type


def test_head_tail_and_lazy_reads_take_the_formats(lib: adb.Library) -> None:
    assert _types(lib.head("s", 2, arrow_string_format_default=F.CATEGORICAL).data) == (DICT, DICT)
    assert _types(lib.tail("s", 2, arrow_string_format_per_column={"c": F.SMALL_STRING}).data) == (
        pa.large_string(), pa.string())
    assert lib.tail("s", 2, arrow_string_format_default=F.SMALL_STRING).data.column("a").to_pylist() == ["y", "x"]
    assert _types(lib.read("s", lazy=True, arrow_string_format_default=F.CATEGORICAL).collect().data) == (DICT, DICT)
    assert _types(lib.head("s", 1, lazy=True, arrow_string_format_default=F.SMALL_STRING).collect().data) == (
        pa.string(), pa.string())


@pytest.mark.parametrize(("request_kw", "batch_kw", "want"), [
    # a request's default wins over the batch's
    ({"arrow_string_format_default": F.CATEGORICAL}, {"arrow_string_format_default": F.SMALL_STRING}, (DICT, DICT)),
    # its per-column formats apply on top of the batch's default
    ({"arrow_string_format_per_column": {"a": F.CATEGORICAL}}, {"arrow_string_format_default": F.SMALL_STRING},
     (DICT, pa.string())),
    # the batch's per-column formats apply on top of the request's default
    ({"arrow_string_format_default": F.CATEGORICAL}, {"arrow_string_format_per_column": {"c": F.SMALL_STRING}},
     (DICT, pa.string())),
    # a request's per-column formats replace the batch's
    ({"arrow_string_format_per_column": {"a": F.CATEGORICAL}}, {"arrow_string_format_per_column": {"c": F.SMALL_STRING}},
     (DICT, pa.large_string())),
    ({}, {"arrow_string_format_default": F.CATEGORICAL}, (DICT, DICT)),
])
def test_read_batch_formats_of_the_batch_and_of_each_request(
        lib: adb.Library, request_kw: dict[str, object], batch_kw: dict[str, object],
        want: tuple[pa.DataType, pa.DataType]) -> None:
    got = lib.read_batch([adb.ReadRequest("s", **request_kw)], **batch_kw)  # type: ignore[arg-type]
    assert _types(got[0].data) == want
    lazy = lib.read_batch([adb.ReadRequest("s", **request_kw)], lazy=True, **batch_kw)  # type: ignore[arg-type]
    assert _types(lazy.collect()[0].data) == want
