"""Dynamic schema: which type changes of a column an append / update accepts.

A column's stored type widens to a common type (``uint8`` then ``int8`` gives ``int16``,
``int64`` then ``float32`` gives ``float64``), but signed integers and ``uint64`` have no
common integer type: the write is refused with ``SchemaException`` and the symbol is left as
it was (numpy would pick float64 and silently round large values)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from arcticlite import Library, LibraryOptions
from arcticlite.exceptions import SchemaException

DYNAMIC = pytest.mark.parametrize("library_options", [LibraryOptions(dynamic_schema=True)], indirect=True)


def _frame(dtype: str, value: int, at: int) -> pd.DataFrame:
    return pd.DataFrame({"c": np.array([value], dtype)}, index=[pd.Timestamp(at)])


@DYNAMIC
@pytest.mark.parametrize(("stored", "new"), [("int8", "uint64"), ("int64", "uint64"), ("uint64", "int32"),
                                             ("uint64", "int64")])
@pytest.mark.parametrize("method", ["append", "update"])
def test_signed_int_and_uint64_are_refused(lib: Library, stored: str, new: str, method: str) -> None:
    lib.write("s", _frame(stored, 1, 0))
    with pytest.raises(SchemaException, match="common type.*'c'"):
        getattr(lib, method)("s", _frame(new, 2, 1))
    assert lib.list_versions("s") and max(v.version for v in lib.list_versions("s")) == 0
    assert lib.read("s").data["c"].dtype == np.dtype(stored)


@DYNAMIC
@pytest.mark.parametrize(("stored", "new", "result"), [("uint8", "int8", "int16"), ("uint32", "int64", "int64"),
                                                       ("uint64", "uint8", "uint64"), ("uint64", "float64", "float64"),
                                                       ("int64", "float32", "float64")])
def test_compatible_numeric_types_widen(lib: Library, stored: str, new: str, result: str) -> None:
    lib.write("s", _frame(stored, 1, 0))
    lib.append("s", _frame(new, 2, 1))
    got = lib.read("s").data["c"]
    assert got.dtype == np.dtype(result) and got.tolist() == [1, 2]
