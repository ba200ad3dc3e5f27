"""``arcticlite read --where ... [--explain]``: filtered reads and what they prune, from the
command line (issue 15)."""

from __future__ import annotations

import os
import pathlib

import numpy as np
import pandas as pd
import pytest

from arcticlite import Arctic, LibraryOptions
from arcticlite.__main__ import main


@pytest.fixture
def store_uri(tmp_path: pathlib.Path) -> str:
    uri = f"lmdb://{os.path.join(tmp_path, 'lmdb')}"
    lib = Arctic(uri).create_library("l", LibraryOptions(rows_per_segment=1_000))
    n = 5_000
    lib.write("s", pd.DataFrame({"id": np.arange(n), "t": np.where(np.arange(n) < 10, "a", "b")},
                                index=pd.date_range("2024-01-01", periods=n, freq="s")))
    return uri


def test_read_where_and_explain(store_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["read", store_uri, "l", "s", "--where", "id >= 4998", "--where", 't == "b"']) == 0
    out = capsys.readouterr().out
    assert "4998" in out and "4999" in out and "4997" not in out
    assert main(["read", store_uri, "l", "s", "--where", "id in [3, 4_500]", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "5 in the version" in out and "3 pruned by min/max" in out and "rows returned: 2" in out
    assert main(["read", store_uri, "l", "s", "--where", "t notna", "--explain"]) == 0
    assert "rows returned: 5000" in capsys.readouterr().out


@pytest.mark.parametrize("term", ["id", "id ~ 3", "id == b", "id in 3", "t isna 3"])
def test_bad_where_is_one_clear_line(store_uri: str, term: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["read", store_uri, "l", "s", "--where", term]) == 4  # bad input
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--where" in err
