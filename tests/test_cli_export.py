"""``read --to FILE.parquet|.arrow`` streams a symbol segment by segment
(``Library.scan(...).to_reader()``) and the file reads back as ``read`` returns it, index included."""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arcticlite as adb
from arcticlite.__main__ import main

FRAMES = {
    "named_tz_index": pd.DataFrame({"px": np.arange(50.0), "venue": ["XNAS", "ARCX"] * 25},
                                   index=pd.date_range("2024-01-01", periods=50, freq="h", tz="UTC", name="time")),
    "unnamed_index": pd.DataFrame({"q": np.arange(50, dtype=np.int32)}, index=pd.date_range("2024-01-01", periods=50)),
    "range_index": pd.DataFrame({"a": np.arange(50), "b": np.linspace(0, 1, 50)}),
}


@pytest.fixture
def uri(tmp_path: pathlib.Path) -> str:
    uri = f"lmdb://{tmp_path / 'db'}"
    lib = adb.Arctic(uri).create_library("p", adb.LibraryOptions(rows_per_segment=7))  # 8 segments each
    for name, df in FRAMES.items():
        lib.write(name, df)
    return uri


def _load(path: pathlib.Path) -> pd.DataFrame:
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pandas()
    with pa.memory_map(str(path)) as src:
        return pa.ipc.open_file(src).read_all().to_pandas()


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
@pytest.mark.parametrize("name", list(FRAMES))
def test_export_streams_every_segment_and_reads_back(uri: str, tmp_path: pathlib.Path, name: str, suffix: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / f"out{suffix}"
    assert main(["read", uri, "p", name, "--to", str(out)]) == 0
    assert f"wrote 50 rows of {name!r}" in capsys.readouterr().out
    pd.testing.assert_frame_equal(_load(out), FRAMES[name], check_freq=False)


def test_export_of_a_filtered_date_range_and_columns(uri: str, tmp_path: pathlib.Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "part.parquet"
    argv = ["read", uri, "p", "named_tz_index", "--date-range", "2024-01-01T05:00", "2024-01-02T10:00",
            "--columns", "venue", "--where", "venue == 'XNAS'", "--to", str(out)]
    assert main(argv) == 0
    df = FRAMES["named_tz_index"]
    want = df.loc["2024-01-01T05:00":"2024-01-02T10:00", ["venue"]]
    want = want[want["venue"] == "XNAS"]
    assert f"wrote {len(want)} rows" in capsys.readouterr().out
    pd.testing.assert_frame_equal(_load(out), want, check_freq=False)
    # the file loads back into a symbol with the same rows and index
    assert main(["write", uri, "p", "copy", str(out)]) == 0
    pd.testing.assert_frame_equal(adb.Arctic(uri).get_library("p").read("copy").data, want, check_freq=False)


def test_scan_reader_streams_batches_in_index_order(uri: str) -> None:
    reader = adb.Arctic(uri).get_library("p").scan("named_tz_index").to_reader()
    batches = list(reader)
    assert len(batches) >= 1 and sum(b.num_rows for b in batches) == 50
    table = pa.Table.from_batches(batches)
    assert table.column("time").to_pylist() == list(FRAMES["named_tz_index"].index)
