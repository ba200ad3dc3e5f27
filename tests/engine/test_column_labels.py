"""Column labels keep their dtype: a frame whose ``columns`` are pandas strings (``string``, and
``str``, the default of pandas 3) reads back with the same labels dtype."""

from __future__ import annotations

import pandas as pd

import arcticlite as adb


def test_string_dtype_column_labels_round_trip() -> None:
    lib = adb.Arctic("mem://").create_library("p")
    df = pd.DataFrame({"a": [1, 2], "b": [3.0, 4.0]})
    df.columns = df.columns.astype("string")
    lib.write("S", df)
    got = lib.read("S").data
    assert got.columns.dtype == df.columns.dtype and list(got.columns) == ["a", "b"]
    plain = pd.DataFrame({"a": [1]})
    lib.write("T", plain)
    assert lib.read("T").data.columns.dtype == plain.columns.dtype  # object under pandas 2, str under 3
