"""Moving from ArcticDB: a store ArcticDB wrote is refused with the way out, and
``import-arcticdb`` copies it (through an installed arcticdb)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import arcticlite as adb
from arcticlite.__main__ import main
from arcticlite.exceptions import UserInputException

arcticdb = pytest.importorskip("arcticdb")


def test_an_arcticdb_store_is_refused_then_imported(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = f"lmdb://{tmp_path}/old", f"lmdb://{tmp_path}/new"
    src = arcticdb.Arctic(old).create_library("prices")
    df = pd.DataFrame({"bid": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
    src.write("AAPL", df.iloc[:2], metadata={"v": 0})
    src.write("AAPL", df, metadata={"v": 1})
    src.write_pickle("cfg", {"a": [1, 2]})
    with pytest.raises(UserInputException, match="written by ArcticDB.*import-arcticdb"):
        adb.Arctic(old)
    assert main(["import-arcticdb", old, new, "--all-versions"]) == 0
    assert "copied 3 versions of 1 libraries" in capsys.readouterr().out
    lib = adb.Arctic(new)["prices"]
    got = lib.read("AAPL")
    pd.testing.assert_frame_equal(got.data, df, check_freq=False)
    assert got.metadata == {"v": 1} and got.version == 1
    assert lib.read("AAPL", as_of=0).metadata == {"v": 0}
    assert lib.read("cfg").data == {"a": [1, 2]}
