"""The ``arcticlite`` command line shows what a store holds and reports errors cleanly."""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd
import pytest

import arcticlite as adb
from arcticlite.__main__ import main


@pytest.fixture
def store_uri(tmp_path) -> str:  # type: ignore[no-untyped-def]
    uri = f"lmdb://{tmp_path / 'db'}"
    lib = adb.Arctic(uri).create_library("prices", adb.LibraryOptions(rows_per_segment=4))
    df = pd.DataFrame({"px": np.arange(10.0)}, index=pd.date_range("2024-01-01", periods=10))
    lib.write("AAPL", df)
    lib.append("AAPL", pd.DataFrame({"px": [99.0]}, index=pd.DatetimeIndex(["2024-02-01"])))
    return uri


def test_cli_lists_and_inspects(store_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["libraries", store_uri]) == 0
    assert capsys.readouterr().out.split() == ["prices"]
    assert main(["symbols", store_uri, "prices"]) == 0
    assert capsys.readouterr().out.split() == ["AAPL"]
    assert main(["versions", store_uri, "prices", "AAPL"]) == 0
    out = capsys.readouterr().out
    assert "append" in out and "write" in out
    assert main(["index", store_uri, "prices", "AAPL", "--as-of", "0"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 1 + 3  # header + 3 segments of v0
    assert main(["segments", store_uri, "prices", "AAPL"]) == 0
    assert "px" in capsys.readouterr().out
    assert main(["read", store_uri, "prices", "AAPL", "--rows", "2"]) == 0
    assert "2024-01-02" in capsys.readouterr().out
    assert main(["gc", store_uri, "prices", "--dry-run"]) == 0
    assert "0 unreachable, 0 of them would be deleted (dry run: nothing deleted)" in capsys.readouterr().out


def test_cli_error_is_one_clear_line(store_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["read", store_uri, "prices", "MISSING"]) == 3  # not found
    err = capsys.readouterr().err
    assert err.startswith("arcticlite: no symbol 'MISSING' in library 'prices'")
    assert main(["read", store_uri, "prices", "AAPL", "--as-of", "9"]) == 3
    assert capsys.readouterr().err.startswith("arcticlite: NoSuchVersionException")
    assert main(["symbols", store_uri, "nolib"]) == 3
    assert "no library 'nolib'" in capsys.readouterr().err


def test_a_reading_command_never_creates_the_store(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    from arcticlite.__main__ import main

    missing = tmp_path / "nope"
    for argv in (["libraries", f"lmdb://{missing}"], ["read", f"lmdb://{missing}", "lib", "sym"]):
        assert main(argv) == 3
        assert "no arcticlite store" in capsys.readouterr().err
    assert not missing.exists()
