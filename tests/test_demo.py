"""``make demo`` at a small scale: every step runs on a real LMDB store, the report is printed,
the layout picture is saved, and running it again is safe."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

import arcticlite as adb
from arcticlite.demo import main


def test_demo_runs_twice_and_reports(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "demo-data"
    for _ in range(2):  # re-running starts the library afresh
        assert main([str(folder), "--scale", "0.02", "--no-spark"]) == 0
        out = capsys.readouterr().out
        assert "write   day 1: 6,000 quotes + 1,200 trades of 300 tickers" in out
        assert "append  days 2-3: quotes is now version 2, 18,000 rows" in out
        assert "read    as_of=0: 6,000 quotes" in out
        assert "query   ticker == 'T042'" in out and "snapshot 'eod-2024-01-04' holds ['quotes', 'trades']" in out
        assert "rows/s" in out and "smaller); LMDB files" in out and out.rstrip().endswith("demo done")
    lib = adb.Arctic(f"lmdb://{folder}").get_library("market")
    assert lib.get_description("quotes").row_count == 18_020  # three days and 20 single quotes
    assert lib.list_snapshots() == {"eod-2024-01-04": {"note": "three days loaded"}}
    if importlib.util.find_spec("matplotlib"):
        for sym in ("quotes", "trades"):
            assert (folder / f"{sym}-layout.png").read_bytes()[:4] == b"\x89PNG"
