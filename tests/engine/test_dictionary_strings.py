"""Object columns of few distinct strings travel dictionary-encoded from normalization to the
segment writer (a write of such a frame converts each distinct string once, not every row).
What a user sees must not change: the same values, dtypes, Arrow types and descriptions as a
column converted row by row, and the same stored files."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from arcticlite import LibraryOptions, QueryBuilder
from arcticlite import format as fermion
from arcticlite.normalize import DICTIONARY_VALUES, normalize, value_schema, value_table
from arcticlite.normalize._columns import DICTIONARY_MIN_ROWS, few_strings_as_dictionary

N = DICTIONARY_MIN_ROWS + 4_321


def labels_frame(n: int = N, seed: int = 0, start: str = "2024-01-01") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    venues = np.array(["NYSE", "NASDAQ", "ARCA", "IEX", "ünïcode ✓"], dtype=object)
    names = np.array([f"name_{i:04d}" for i in range(700)], dtype=object)
    return pd.DataFrame(
        {
            "venue": venues[rng.integers(0, len(venues), n)],
            "x": rng.standard_normal(n),
            "name": names[rng.integers(0, len(names), n)],
        },
        index=pd.date_range(start, periods=n, freq="s"),
    )


def assert_same(got: pd.DataFrame, want: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(got, want, check_freq=False)


def test_few_labels_are_carried_as_a_dictionary_and_stand_for_their_strings() -> None:
    df = labels_frame()
    carried, _ = normalize(df, dictionary_strings=True)
    plain, _ = normalize(df)
    assert pa.types.is_dictionary(carried.schema.field("venue").type)
    assert carried.schema.field("venue").metadata == {DICTIONARY_VALUES: b"1"}
    assert pa.types.is_dictionary(carried.schema.field("name").type)
    assert value_schema(carried.schema).equals(plain.schema)
    assert value_table(carried).equals(plain)


def test_equal_strings_held_by_different_objects_share_one_value() -> None:
    # the same text built twice: two objects, one value
    a, b = "".join(["ab", "c"]), "".join(["a", "bc"])
    assert a == b and a is not b
    arr = np.array([a, b] * (N // 2), dtype=object)
    enc = few_strings_as_dictionary(arr)
    assert enc is not None
    assert enc.dictionary.to_pylist() == ["abc"]
    assert enc.cast(pa.string()).to_pylist() == arr.tolist()


def test_ten_thousand_tickers_in_a_long_column_are_carried_as_a_dictionary(lib: Any) -> None:
    # a sample of 4,096 rows sees ~3,400 of the 10,000 names (most of them once), yet the
    # column holds one name per 200 rows: the repeats in the sample tell the two apart
    n = 2_000_000
    names = np.array([f"T{i:05d}" for i in range(10_000)], dtype=object)
    arr = names[np.random.default_rng(3).integers(0, 10_000, n)]
    enc = few_strings_as_dictionary(arr)
    assert enc is not None and len(enc.dictionary) == 10_000
    assert enc.cast(pa.string()).to_pylist() == arr.tolist()
    df = pd.DataFrame({"ticker": arr}, index=pd.date_range("2024-01-01", periods=n, freq="s"))
    lib.write("tickers", df)
    assert_same(lib.read("tickers").data, df)
    q = QueryBuilder()
    got = lib.read("tickers", query_builder=q[q["ticker"] == "T00042"]).data
    assert_same(got, df[df["ticker"] == "T00042"])


@pytest.mark.parametrize(
    "values",
    [
        pytest.param(lambda n: np.array(["a", None] * (n // 2), dtype=object), id="missing values"),
        pytest.param(lambda n: np.array(["a", b"b"] * (n // 2), dtype=object), id="bytes among str"),
        pytest.param(lambda n: np.array([str(i) for i in range(n)], dtype=object), id="all distinct"),
        pytest.param(lambda n: np.array([str(i) for i in range(n // 8)], dtype=object)[
            np.random.default_rng(0).integers(0, n // 8, n)], id="one value per 8 rows"),
        pytest.param(lambda n: np.array(["a", "b"] * 100, dtype=object), id="short column"),
        pytest.param(lambda n: np.array([1, 2] * (n // 2), dtype=object), id="ints"),
    ],
)
def test_other_object_columns_take_the_row_by_row_path(values: Any) -> None:
    assert few_strings_as_dictionary(values(N)) is None


def test_a_written_frame_reads_back_exactly(lib: Any) -> None:
    df = labels_frame()
    lib.write("s", df)
    lib.write("small", df.iloc[:100])  # short: converted row by row
    out = lib.read("s").data
    assert_same(out, df)
    assert out["venue"].dtype == object and isinstance(out["venue"].iloc[0], str)
    assert lib.get_description("s").columns == lib.get_description("small").columns


def test_stored_files_are_the_same_as_for_plain_strings() -> None:
    df = labels_frame()
    carried, _ = normalize(df, dictionary_strings=True)
    plain, _ = normalize(df)
    body = fermion.encode(carried, schema=value_schema(carried.schema), optimize_for="read")
    back = fermion.decode(body)
    assert back.schema.equals(plain.schema)
    assert back.equals(plain)
    for policy in ("size", "write"):
        assert fermion.decode(fermion.encode(carried, schema=value_schema(carried.schema),
                                             optimize_for=policy)).equals(plain)


def test_arrow_output_has_the_plain_string_type(lib: Any) -> None:
    df = labels_frame()
    lib.write("carried", df)
    lib.write("small", df.iloc[:100])  # short: converted row by row
    big = lib.read("carried", output_format="pyarrow").data
    small = lib.read("small", output_format="pyarrow").data
    assert big.schema.field("venue").type == small.schema.field("venue").type


def test_append_update_and_filters_mix_carried_and_plain_strings(lib: Any) -> None:
    df = labels_frame()
    lib.write("s", df)
    later = labels_frame(seed=1, start="2030-01-01")
    few = later.iloc[:10]  # a small append (row by row, joins the open tail)
    lib.append("s", few)
    lib.append("s", later.iloc[10:])  # a large append (carried)
    expected = pd.concat([df, later])
    assert_same(lib.read("s").data, expected)
    patch = labels_frame(n=N, seed=2, start="2024-01-01 06:00")
    lib.update("s", patch)
    expected = pd.concat([expected[expected.index < patch.index[0]], patch,
                          expected[expected.index > patch.index[-1]]])
    assert_same(lib.read("s").data, expected)
    from arcticlite import QueryBuilder

    q = QueryBuilder()
    q = q[q["venue"] == "ünïcode ✓"]
    got = lib.read("s", query_builder=q).data
    assert_same(got, expected[expected["venue"] == "ünïcode ✓"])


def test_dynamic_schema_and_staging(ac: Any) -> None:
    lib = ac.create_library("dyn", LibraryOptions(dynamic_schema=True))
    df = labels_frame()
    lib.write("s", df[["venue"]])
    lib.append("s", labels_frame(seed=3, start="2030-01-01"))
    out = lib.read("s").data
    assert out["venue"].tolist()[:N] == df["venue"].tolist()
    assert out["name"].iloc[:N].isna().all() and out["name"].iloc[N:].notna().all()
    lib.stage("st", df.iloc[N // 2 :])
    lib.stage("st", df.iloc[: N // 2])
    lib.finalize_staged_data("st")
    assert_same(lib.read("st").data, df)


@pytest.mark.parametrize("page_size", [4_096, 1 << 20])
def test_the_format_takes_dictionary_encoded_values_with_nulls_over_many_pages(page_size: int) -> None:
    rng = np.random.default_rng(5)
    n = 50_000
    codes = pa.array(rng.integers(0, 300, n).astype(np.int32), mask=rng.random(n) < 0.1)
    dictionary = pa.array([f"value {i}" * (1 + i % 4) for i in range(300)])
    table = pa.table({"s": pa.DictionaryArray.from_arrays(codes, dictionary)})
    schema = pa.schema([pa.field("s", pa.string())])
    body = fermion.encode(table, schema=schema, page_size=page_size, bloom_min_distinct=16)
    assert fermion.decode(body).equals(pa.table({"s": table.column("s").cast(pa.string())}))
    # the Bloom filter holds the values, and proves a value absent
    hit = fermion.decode(body, filter=[("s", "==", dictionary[7].as_py())])
    assert hit.num_rows == int(((codes.to_numpy(zero_copy_only=False) == 7) & codes.is_valid().to_numpy(
        zero_copy_only=False)).sum())
    assert fermion.decode(body, filter=[("s", "==", "absent")]).num_rows == 0
