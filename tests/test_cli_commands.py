"""Every ``arcticlite`` sub-command end to end on a real LMDB store (issue 17): what a user sees
(rows, JSON, files written), exit codes, and a store left unchanged by commands that read."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arcticlite as adb
from arcticlite.__main__ import main
from arcticlite.storage import open_store

LIB = "prices"


def _frame(start: str, n: int) -> pd.DataFrame:
    return pd.DataFrame({"px": np.arange(n, dtype=float), "venue": ["X", "Y"] * (n // 2) + ["X"] * (n % 2)},
                        index=pd.date_range(start, periods=n, freq="D", name="time"))


@pytest.fixture
def uri(tmp_path: pathlib.Path) -> str:
    uri = f"lmdb://{tmp_path / 'db'}"
    lib = adb.Arctic(uri).create_library(LIB, adb.LibraryOptions(rows_per_segment=4))
    lib.write("AAPL", _frame("2024-01-01", 10))
    lib.append("AAPL", _frame("2024-02-01", 3))
    lib.write("MSFT", _frame("2024-01-01", 5))
    lib.write_pickle("blob", {"a": 1})
    lib.snapshot("snap0")
    return uri


def _lib(uri: str) -> adb.Library:
    return adb.Arctic(uri).get_library(LIB)


def _contents(uri: str) -> dict[str, bytes]:
    with open_store(uri) as store:
        return {k: bytes(store.read(k)) for k in store.list_keys("")}


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# -- commands that read ---------------------------------------------------------------------------
READING = [
    ["libraries", "{uri}"],
    ["libraries", "{uri}", "--json"],
    ["symbols", "{uri}", LIB, "--regex", "^A"],
    ["symbols", "{uri}", LIB, "--snapshot", "snap0", "--json"],
    ["versions", "{uri}", LIB, "AAPL", "--json"],
    ["describe", "{uri}", LIB, "AAPL"],
    ["describe", "{uri}", LIB, "AAPL", "--as-of", "0", "--json"],
    ["read", "{uri}", LIB, "AAPL"],
    ["read", "{uri}", LIB, "AAPL", "--date-range", "2024-01-03", "2024-01-05", "--columns", "px", "--json"],
    ["read", "{uri}", LIB, "AAPL", "--tail", "2", "--as-of", "snap0"],
    ["read", "{uri}", LIB, "AAPL", "--where", "px > 5", "--explain"],
    ["read", "{uri}", LIB, "blob"],
    ["read", "{uri}", LIB, "blob", "--json"],
    ["describe", "{uri}", LIB, "blob"],
    ["inspect", "{uri}", LIB, "blob"],
    ["inspect", "{uri}", LIB, "AAPL"],
    ["inspect", "{uri}", LIB, "AAPL", "--json"],
    ["index", "{uri}", LIB, "AAPL", "--as-of", "0"],
    ["segments", "{uri}", LIB, "AAPL", "--json"],
    ["snapshot", "list", "{uri}", LIB, "--json"],
    ["compact", "{uri}", LIB, "--plan", "--json"],
    ["gc", "{uri}", LIB, "--dry-run", "--json"],
]


def _fill(argv: list[str], uri: str) -> list[str]:
    return [a.format(uri=uri) for a in argv]


@pytest.mark.parametrize("argv", READING, ids=lambda a: " ".join(a[:1] + a[3:]))
def test_a_reading_command_succeeds_and_changes_nothing(uri: str, argv: list[str],
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    before = _contents(uri)
    code, out, err = _run(_fill(argv, uri), capsys)
    assert (code, err) == (0, "")
    assert out.strip()
    if "--json" in argv:
        json.loads(out)
    assert _contents(uri) == before


@pytest.mark.parametrize("argv", READING, ids=lambda a: " ".join(a[:1] + a[3:]))
def test_a_reading_command_never_creates_a_store(tmp_path: pathlib.Path, argv: list[str],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope"
    code, out, err = _run(_fill(argv, f"lmdb://{missing}"), capsys)
    assert code == 3 and "no arcticlite store" in err and err.count("\n") == 1
    assert not missing.exists()


@pytest.mark.parametrize("argv", [a for a in READING if a[0] != "libraries"], ids=lambda a: a[0])
def test_a_reading_command_never_creates_a_library(uri: str, argv: list[str],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    argv = [("nolib" if a == LIB else a) for a in _fill(argv, uri)]
    before = _contents(uri)
    code, _, err = _run(argv, capsys)
    assert code == 3 and "no library 'nolib'" in err
    assert _contents(uri) == before


def test_listings_print_what_the_library_holds(uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["libraries", uri, "--json"], capsys)[1:] == ('[\n  "prices"\n]\n', "")
    assert json.loads(_run(["symbols", uri, LIB, "--json"], capsys)[1]) == ["AAPL", "MSFT", "blob"]
    assert _run(["symbols", uri, LIB, "--regex", "^(A|M)"], capsys)[1].split() == ["AAPL", "MSFT"]
    versions = json.loads(_run(["versions", uri, LIB, "AAPL", "--json"], capsys)[1])
    assert [(v["version"], v["kind"], v["rows"]) for v in versions] == [(1, "append", 13), (0, "write", 10)]
    d = json.loads(_run(["describe", uri, LIB, "AAPL", "--json"], capsys)[1])
    assert (d["version"], d["rows"], d["live_versions"], d["segments"]) == (1, 13, 2, 4)
    assert d["date_range"] == ["2024-01-01 00:00:00", "2024-02-03 00:00:00"]
    assert [c["name"] for c in d["columns"]] == ["px", "venue"] and d["index"][0]["name"] == "time"
    assert d["stored"]["table_data"]["bytes"] > 0
    text = _run(["describe", uri, LIB, "AAPL", "--as-of", "0"], capsys)[1]
    assert "rows       10" in text and "px" in text and "2024-01-10" in text
    snaps = json.loads(_run(["snapshot", "list", uri, LIB, "--json"], capsys)[1])
    assert snaps == [{"name": "snap0", "symbols": {"AAPL": 1, "MSFT": 0, "blob": 0}}]


def test_read_selects_rows_and_columns(uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    rows = json.loads(_run(["read", uri, LIB, "AAPL", "--date-range", "2024-01-03", "2024-01-05",
                            "--columns", "px", "--json"], capsys)[1])
    assert rows == [{"time": f"2024-01-0{d}T00:00:00.000000000", "px": float(d - 1)} for d in (3, 4, 5)]
    out = _run(["read", uri, LIB, "AAPL", "--tail", "2"], capsys)[1].splitlines()
    assert len(out) == 2 + 2 and "2024-02-03" in out[-1] and "2024-02-02" in out[-2]  # header lines + 2 rows
    out = _run(["read", uri, LIB, "AAPL", "--head", "3", "--date-range", "2024-01-05", "-"], capsys)[1]
    assert "2024-01-05" in out and "2024-01-07" in out and "2024-01-08" not in out
    assert "2024-01-10" in _run(["read", uri, LIB, "AAPL", "--as-of", "0"], capsys)[1]
    assert "2024-02-01" not in _run(["read", uri, LIB, "AAPL", "--as-of", "0"], capsys)[1]
    assert "{'a': 1}" in _run(["read", uri, LIB, "blob"], capsys)[1]  # a pickled symbol
    assert json.loads(_run(["read", uri, LIB, "blob", "--json"], capsys)[1])["repr"] == "{'a': 1}"
    assert "one pickled object" in _run(["inspect", uri, LIB, "blob"], capsys)[1]
    # --as-of takes an ISO time as a time, not a snapshot name
    assert "2024-02-03" in _run(["read", uri, LIB, "AAPL", "--as-of", "2100-01-01"], capsys)[1]
    code, _, err = _run(["read", uri, LIB, "AAPL", "--as-of", "2000-01-01"], capsys)
    assert code == 3 and "Snapshot" not in err
    assert "no live version created at or before 2000-01-01T00:00:00+00:00" in err  # the time, readable
    _lib(uri).snapshot("2024-01-31", versions={"AAPL": 0})  # named like a date, as ArcticDB users often do
    assert "2024-02-01" not in _run(["read", uri, LIB, "AAPL", "--as-of", "2024-01-31"], capsys)[1]
    assert json.loads(_run(["describe", uri, LIB, "AAPL", "--as-of", "2024-01-31", "--json"], capsys)[1])["rows"] == 10


@pytest.mark.parametrize("suffix", ["parquet", "csv", "arrow"])
def test_read_to_a_file_and_write_it_back(uri: str, tmp_path: pathlib.Path, suffix: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / f"out.{suffix}"
    code, text, _ = _run(["read", uri, LIB, "AAPL", "--date-range", "2024-01-02", "2024-02-02", "--to", str(out)],
                         capsys)
    assert code == 0 and "wrote 11 rows" in text
    expected = _lib(uri).read("AAPL", date_range=(pd.Timestamp("2024-01-02"), pd.Timestamp("2024-02-02"))).data
    if suffix == "parquet":
        got = pq.read_table(out).to_pandas()
    elif suffix == "arrow":
        got = pa.ipc.open_file(pa.memory_map(str(out))).read_all().to_pandas()
    else:
        got = pd.read_csv(out, index_col="time", parse_dates=["time"])
    pd.testing.assert_frame_equal(got, expected, check_freq=False, check_index_type=False, check_dtype=False)
    # and back in, as a new symbol
    extra = [] if suffix != "csv" else ["--index-column", "time"]
    code, text, _ = _run(["write", uri, LIB, "COPY", str(out), *extra, "--json"], capsys)
    assert code == 0 and json.loads(text) == {"symbol": "COPY", "library": LIB, "version": 0, "rows": 11}
    copy = _lib(uri).read("COPY").data
    assert isinstance(copy.index, pd.DatetimeIndex) and list(copy["px"]) == list(expected["px"])


def test_write_creates_store_and_library_then_append_update_delete(tmp_path: pathlib.Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    uri = f"lmdb://{tmp_path / 'new'}"
    csv = tmp_path / "a.csv"
    _frame("2024-01-01", 6).reset_index().to_csv(csv, index=False)
    assert _run(["write", uri, "fresh", "S", str(csv), "--index-column", "time"], capsys)[:2] == (
        0, "wrote 6 rows: 'S' is now version 0 in library 'fresh'\n")
    more = tmp_path / "b.parquet"
    _frame("2024-01-07", 2).to_parquet(more)
    assert _run(["append", uri, "fresh", "S", str(more)], capsys)[0] == 0
    fix = tmp_path / "fix.arrow"
    with pa.OSFile(str(fix), "wb") as sink:
        t = pa.Table.from_pandas(pd.DataFrame({"px": [100.0], "venue": ["Z"]},
                                              index=pd.DatetimeIndex(["2024-01-03"], name="time")))
        with pa.ipc.new_file(sink, t.schema) as w:
            w.write_table(t)
    assert _run(["update", uri, "fresh", "S", str(fix)], capsys)[0] == 0
    lib = adb.Arctic(uri).get_library("fresh")
    df = lib.read("S").data
    assert len(df) == 8 and df.loc["2024-01-03", "px"] == 100.0 and df.index[-1] == pd.Timestamp("2024-01-08")
    assert _run(["delete", uri, "fresh", "S", "--date-range", "2024-01-01", "2024-01-02"], capsys)[0] == 0
    assert len(lib.read("S").data) == 6
    assert _run(["delete", uri, "fresh", "S", "--version", "0"], capsys)[0] == 0
    assert 0 not in {v.version for v in lib.list_versions("S")}
    assert _run(["delete", uri, "fresh", "S"], capsys)[1] == "deleted every version of 'S'\n"
    assert lib.list_symbols() == []


def test_tables_read_as_a_user_expects(uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    lib = _lib(uri)
    lib.delete("MSFT", versions=[0])  # a tombstone commit: no rows, no segments
    lib.write("MSFT", _frame("2024-03-01", 2))
    out = _run(["versions", uri, LIB, "MSFT"], capsys)[1]
    assert "nan" not in out.lower() and ".0 " not in out  # whole numbers, blanks where a tombstone has none
    assert [line.split()[:3] for line in out.splitlines()[1:]] == [["1", "2", "write"], ["1", "tombstone", "False"],
                                                                    ["0", "0", "write"]]
    index = _run(["index", uri, LIB, "AAPL", "--as-of", "0"], capsys)[1]
    assert "2024-01-01" in index and "2024-01-10" in index  # times, not nanoseconds
    assert str(pd.Timestamp("2024-01-01").value) not in index
    assert "2024-01-10" in _run(["inspect", uri, LIB, "AAPL", "--as-of", "0"], capsys)[1]
    # --json keeps the stored numbers
    assert json.loads(_run(["index", uri, LIB, "AAPL", "--json"], capsys)[1])[0]["min_index"] == \
        pd.Timestamp("2024-01-01").value
    gc = _run(["gc", uri, LIB, "--dry-run"], capsys)[1]
    assert "keys scanned in library 'prices': 0 unreachable" in gc and "dry run" in gc
    assert _run(["symbols", uri, LIB, "--regex", "^ZZ"], capsys)[1:] == ("", "")  # nothing, not a blank line


@pytest.mark.parametrize("command", ["describe", "read", "inspect", "index", "segments"])
def test_a_symbol_never_written_is_named_as_such(uri: str, command: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run([command, uri, LIB, "NOPE"], capsys)
    assert code == 3 and err == "arcticlite: no symbol 'NOPE' in library 'prices'; 'arcticlite symbols URI prices' " \
                                "lists them\n"


def test_a_reader_that_stops_early_is_not_an_error(uri: str) -> None:
    lib = _lib(uri)
    lib.write("BIG", pd.DataFrame({"px": np.arange(50_000.0)}, index=pd.date_range("2024", periods=50_000, freq="s")))
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(adb.__file__).parent.parent)}
    proc = subprocess.Popen([sys.executable, "-m", "arcticlite", "read", uri, LIB, "BIG", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline() == b"[\n"  # as `arcticlite read ... | head -1` would
    proc.stdout.close()
    assert proc.wait(timeout=120) == 0
    assert proc.stderr.read() == b""


def test_snapshot_create_list_delete(uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["snapshot", "create", uri, LIB, "eod", "--version", "AAPL=0", "--json"], capsys)
    assert code == 0 and json.loads(out) == {"name": "eod", "symbols": {"AAPL": 0}}
    assert "eod  AAPL@0" in _run(["snapshot", "list", uri, LIB], capsys)[1]
    assert "2024-02-01" not in _run(["read", uri, LIB, "AAPL", "--as-of", "eod"], capsys)[1]
    assert _run(["snapshot", "delete", uri, LIB, "eod"], capsys)[0] == 0
    assert _lib(uri).list_snapshots(load_metadata=False) == ["snap0"]
    code, _, err = _run(["snapshot", "delete", uri, LIB, "eod"], capsys)
    assert code == 3 and "no snapshot 'eod'" in err


def test_compact_plan_then_compact(uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = _contents(uri)
    plan = json.loads(_run(["compact", uri, LIB, "AAPL", "--plan", "--rows-per-segment", "100", "--json"], capsys)[1])
    assert plan[0]["will_do_work"] and plan[0]["segments_before"] == 4 and plan[0]["segments_after"] == 1
    assert _contents(uri) == before
    out = _run(["compact", uri, LIB, "AAPL", "--rows-per-segment", "100"], capsys)[1]
    assert out == "AAPL: version 2 rewrote 13 rows, 4 -> 1 segments\n"
    assert len(_lib(uri).inspect_index("AAPL")) == 1
    assert "is compact" in _run(["compact", uri, LIB, "AAPL", "--rows-per-segment", "100", "--plan"], capsys)[1]


def test_compact_plan_shows_delta_groups_then_folds_them(uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    lib = _lib(uri)
    data = lib.read("AAPL").data
    for row in (1, 9):  # two merges whose key ranges overlap different row groups: two groups
        src = data.iloc[[row]].copy()
        src["px"] = -1.0
        lib.merge("AAPL", src)
    versions = json.loads(_run(["versions", uri, LIB, "AAPL", "--json"], capsys)[1])
    assert versions[0]["deltas"] == 2 and versions[0]["delta_rows"] == 2  # pending, per version
    assert versions[2]["deltas"] == 0
    index = json.loads(_run(["index", uri, LIB, "AAPL", "--json"], capsys)[1])
    assert sum(r["delta"] for r in index) == 2
    before = _contents(uri)
    out = _run(["compact", uri, LIB, "AAPL", "--plan"], capsys)[1]
    assert out.startswith("AAPL: version 3 has 2 merges as deltas (2 rows, compaction due); 2 groups (2 tasks) to "
                          "fold, 2 of 4 row groups untouched\n")
    assert ("  group 0.0: rows 0-4, keys 2024-01-01 00:00:00 to 2024-01-04 00:00:00, 1 base + 1 delta segments, "
            "5 rows, ") in out
    assert ("  group 1.0: rows 8-10, keys 2024-01-09 00:00:00 to 2024-01-10 00:00:00, 1 base + 1 delta segments, "
            "3 rows, ") in out
    plan = json.loads(_run(["compact", uri, LIB, "AAPL", "--plan", "--json"], capsys)[1])
    assert [(g["group"], g["segments"], g["rows"], g["changes"]) for g in plan[0]["groups"]] == [(0, 2, 5, 1),
                                                                                               (1, 2, 3, 1)]
    assert _contents(uri) == before
    out = _run(["compact", uri, LIB, "AAPL", "--workers", "2", "--processes"], capsys)[1]  # in worker processes
    assert out == "AAPL: version 3 has 2 merges as deltas (2 rows, compaction due); folded into version 4 (2 groups)\n"
    assert list(_lib(uri).read("AAPL").data["px"].iloc[[1, 9]]) == [-1.0, -1.0]
    assert _run(["compact", uri, LIB, "AAPL", "--workers", "0"], capsys)[0] != 0


def test_inspect_shows_version_index_and_segments(uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = _run(["inspect", uri, LIB, "AAPL"], capsys)[1]
    assert out.startswith("version 1 of 'AAPL': append, 13 rows in 4 segments")
    assert "index (4 segments" in out and "encodings" in out and "venue" in out
    j = json.loads(_run(["inspect", uri, LIB, "AAPL", "--as-of", "0", "--json"], capsys)[1])
    assert j["version"]["version"] == 0 and len(j["index"]) == 3
    assert {s["column"] for s in j["segments"]} >= {"px", "venue"} and all(s["compressed"] > 0 for s in j["segments"])


@pytest.mark.parametrize(("argv", "code", "needle"), [
    (["versions", "{uri}", LIB, "NOPE"], 3, "no symbol 'NOPE'"),
    (["describe", "{uri}", LIB, "NOPE"], 3, "NOPE"),
    (["read", "{uri}", LIB, "AAPL", "--as-of", "7"], 3, "NoSuchVersion"),
    (["delete", "{uri}", LIB, "NOPE"], 3, "no symbol 'NOPE'"),
    (["delete", "{uri}", LIB, "AAPL", "--version", "9"], 3, "no live version 9"),
    (["update", "{uri}", LIB, "NOPE", "{tmp}/in.parquet"], 3, "no symbol 'NOPE'"),
    (["write", "{uri}", LIB, "X", "{tmp}/missing.parquet"], 5, "does not exist"),
    (["write", "{uri}", LIB, "X", "{tmp}/in.txt"], 4, ".parquet, .csv or .arrow"),
    (["write", "{uri}", LIB, "X", "{tmp}/bad.parquet"], 5, "not readable as parquet"),
    (["write", "{uri}", LIB, "X", "{tmp}/in.parquet", "--index-column", "zz"], 4, "--index-column 'zz'"),
    (["append", "{uri}", LIB, "AAPL", "{tmp}/in.parquet"], 4, "AppendOrderException"),
    (["read", "{uri}", LIB, "AAPL", "--date-range", "2024-02-01", "2024-01-01"], 4, "start is after the end"),
    (["read", "{uri}", LIB, "AAPL", "--date-range", "soon", "-"], 4, "not a date"),
    (["read", "{uri}", LIB, "blob", "--columns", "a"], 4, "pickled"),
    (["read", "{uri}", LIB, "AAPL", "--columns", "px,vneue"], 4, "--columns: no column 'vneue' in 'AAPL' (columns: px, venue)"),
    (["read", "{uri}", LIB, "AAPL", "--columns", "nope", "--to", "{tmp}/out.parquet"], 4, "no column 'nope'"),
    (["compact", "{uri}", LIB, "blob"], 4, "pickled object"),
    (["read", "{uri}", LIB, "AAPL", "--to", "{tmp}/out.xlsx"], 4, "cannot tell the format"),
    (["read", "{uri}", LIB, "AAPL", "--to", "{tmp}/no/such/dir/out.csv"], 5, "cannot write"),
    (["snapshot", "create", "{uri}", LIB, "snap0"], 4, "snapshot 'snap0' already exists in library 'prices'"),
    (["snapshot", "create", "{uri}", LIB, "s2", "--version", "AAPL:1"], 4, "SYMBOL=VERSION"),
    (["read", "{uri}", LIB, "AAPL", "--head", "2", "--tail", "2"], 2, "not allowed with"),
    (["frobnicate", "{uri}"], 2, "invalid choice"),
])
def test_bad_input_is_one_clear_line_and_changes_nothing(uri: str, tmp_path: pathlib.Path, argv: list[str], code: int,
                                                         needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    _frame("2024-01-01", 3).to_parquet(tmp_path / "in.parquet")
    (tmp_path / "in.txt").write_text("x")
    (tmp_path / "bad.parquet").write_text("not parquet")
    before = _contents(uri)
    argv = [a.format(uri=uri, tmp=tmp_path) for a in argv]
    got, out, err = _run(argv, capsys)
    assert got == code and needle in err, err
    if code != 2:
        assert err.startswith("arcticlite: ") and err.count("\n") == 1
    assert _contents(uri) == before
    assert not list(tmp_path.glob("out.*")) and not list(tmp_path.glob("*.tmp-*"))


def test_write_of_a_bad_file_creates_no_store(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope"
    assert main(["write", f"lmdb://{missing}", LIB, "S", str(tmp_path / "absent.csv")]) == 5
    assert not missing.exists()


@pytest.mark.parametrize("command", [[], ["read"], ["describe"], ["write"], ["snapshot", "create"], ["compact"],
                                     ["inspect"], ["gc"], ["symbols"], ["bench"], ["plot"], ["fermion"],
                                     ["fermion", "inspect"], ["convert"], ["import-arcticdb"]])
def test_help_everywhere_has_an_example(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "example:" in out and "arcticlite" in out


def test_python_dash_m_end_to_end(tmp_path: pathlib.Path) -> None:
    uri = f"lmdb://{tmp_path / 'db'}"
    src = tmp_path / "in.parquet"
    _frame("2024-01-01", 4).to_parquet(src)

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": str(pathlib.Path(adb.__file__).parent.parent)}
        return subprocess.run([sys.executable, "-m", "arcticlite", *argv], capture_output=True, text=True, env=env,
                              timeout=120, check=False)

    w = run("write", uri, LIB, "S", str(src))
    assert (w.returncode, w.stderr) == (0, "") and "wrote 4 rows" in w.stdout
    r = run("read", uri, LIB, "S", "--tail", "1", "--json")
    assert r.returncode == 0 and json.loads(r.stdout) == [{"time": "2024-01-04T00:00:00.000000000", "px": 3.0,
                                                           "venue": "Y"}]
    missing = run("describe", f"lmdb://{tmp_path / 'nope'}", LIB, "S")
    assert missing.returncode == 3 and missing.stderr.startswith("arcticlite: no arcticlite store")
    assert not (tmp_path / "nope").exists()


def test_the_arcticlite_command_is_this_main(uri: str) -> None:
    """The ``arcticlite`` console script that ``pip install`` makes (setup.cfg) runs this ``main``."""
    import configparser
    from importlib.metadata import entry_points

    cfg = configparser.ConfigParser()
    cfg.read(pathlib.Path(adb.__file__).parent.parent / "setup.cfg")
    if cfg.has_option("options.entry_points", "console_scripts"):  # a source tree (not a wheel's install)
        assert cfg["options.entry_points"]["console_scripts"].split() == ["arcticlite", "=", "arcticlite.__main__:main"]
    installed = entry_points(group="console_scripts", name="arcticlite")
    if not installed:
        pytest.skip("arcticlite is not installed (no console script)")
    code = ("import sys; from importlib.metadata import entry_points\n"
            "(ep,) = entry_points(group='console_scripts', name='arcticlite')\n"
            "sys.exit(ep.load()(sys.argv[1:]))")
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(adb.__file__).parent.parent)}
    proc = subprocess.run([sys.executable, "-c", code, "symbols", uri, LIB, "--json"], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert (proc.returncode, proc.stderr) == (0, "") and json.loads(proc.stdout) == ["AAPL", "MSFT", "blob"]


@pytest.mark.s3
def test_the_local_s3_server_prints_a_uri_the_cli_works_on(tmp_path: pathlib.Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(adb.__file__).parent.parent)}
    proc = subprocess.Popen([sys.executable, "-m", "arcticlite.testing", "--bucket", "trial"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(2)]
        assert "bucket 'trial'" in lines[0], lines
        uri = lines[1].split("'")[1]
        assert uri.startswith("s3://127.0.0.1:trial?port=") and "access=testing" in uri
        src = tmp_path / "in.parquet"
        _frame("2024-01-01", 3).to_parquet(src)
        assert _run(["write", uri, LIB, "S", str(src)], capsys)[0] == 0
        assert json.loads(_run(["libraries", uri, "--json"], capsys)[1]) == [LIB]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.s3
def test_a_missing_bucket_is_not_found(s3_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    gone = s3_uri.replace("s3://127.0.0.1:", "s3://127.0.0.1:no-such-bucket-", 1)
    code, _, err = _run(["libraries", gone], capsys)
    assert code == 3 and "does not exist (S3 said NoSuchBucket)" in err


@pytest.mark.s3
def test_every_command_on_s3(s3_uri: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.parquet"
    _frame("2024-01-01", 6).to_parquet(src)
    more = tmp_path / "more.csv"
    _frame("2024-01-07", 2).reset_index().to_csv(more, index=False)
    assert _run(["write", s3_uri, LIB, "S", str(src)], capsys)[0] == 0
    assert _run(["append", s3_uri, LIB, "S", str(more), "--index-column", "time"], capsys)[0] == 0
    assert _run(["snapshot", "create", s3_uri, LIB, "snap0"], capsys)[0] == 0
    before = _contents(s3_uri)
    for argv in READING:
        argv = [{"AAPL": "S", "blob": "S"}.get(a, a) for a in argv]
        code, out, err = _run(_fill(argv, s3_uri), capsys)
        assert (code, err) == (0, ""), argv
        if "--json" in argv:
            json.loads(out)
    assert _contents(s3_uri) == before
    code, _, err = _run(["describe", s3_uri, "nolib", "S"], capsys)
    assert code == 3 and "no library 'nolib'" in err and _contents(s3_uri) == before
    d = json.loads(_run(["describe", s3_uri, LIB, "S", "--json"], capsys)[1])
    assert (d["rows"], d["version"]) == (8, 1)
    out = tmp_path / "out.arrow"
    assert _run(["read", s3_uri, LIB, "S", "--columns", "px", "--to", str(out)], capsys)[0] == 0
    assert pa.ipc.open_file(pa.memory_map(str(out))).read_all().column("px").to_pylist() == [*range(6), 0, 1]
    assert _run(["snapshot", "create", s3_uri, LIB, "eod"], capsys)[0] == 0
    assert _run(["compact", s3_uri, LIB, "--rows-per-segment", "100"], capsys)[0] == 0
    assert json.loads(_run(["gc", s3_uri, LIB, "--dry-run", "--json"], capsys)[1])["dry_run"] is True
    assert _run(["delete", s3_uri, LIB, "S"], capsys)[0] == 0
    assert json.loads(_run(["symbols", s3_uri, LIB, "--json"], capsys)[1]) == []


@pytest.mark.s3
def test_writing_commands_on_s3(s3_uri: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    """write / append / update from Arrow IPC, CSV and Parquet, reads by version, snapshot and
    time, exports, delete of versions and rows, snapshot delete, compaction, gc and the plot, on S3."""
    first = tmp_path / "first.arrow"
    t = pa.Table.from_pandas(_frame("2024-01-01", 6).reset_index(), preserve_index=False)
    with pa.OSFile(str(first), "wb") as sink, pa.ipc.new_file(sink, t.schema) as w:
        w.write_table(t)
    more = tmp_path / "more.csv"
    _frame("2024-01-07", 2).reset_index().to_csv(more, index=False)
    fix = tmp_path / "fix.parquet"
    fixed = _frame("2024-01-03", 1)
    fixed["px"] = 100.0
    fixed.to_parquet(fix)
    code, out, _ = _run(["write", s3_uri, LIB, "S", str(first), "--index-column", "time", "--json"], capsys)
    assert code == 0 and json.loads(out) == {"symbol": "S", "library": LIB, "version": 0, "rows": 6}
    assert _run(["append", s3_uri, LIB, "S", str(more), "--index-column", "time"], capsys)[0] == 0
    assert _run(["snapshot", "create", s3_uri, LIB, "before-fix"], capsys)[0] == 0
    assert _run(["update", s3_uri, LIB, "S", str(fix)], capsys)[1] == "updated 1 rows: 'S' is now version 2 in " \
                                                                       f"library '{LIB}'\n"
    versions = json.loads(_run(["versions", s3_uri, LIB, "S", "--json"], capsys)[1])
    assert [(v["version"], v["kind"], v["rows"]) for v in versions] == [(2, "update", 8), (1, "append", 8),
                                                                         (0, "write", 6)]

    def px(*extra: str) -> list[float]:
        code, out, err = _run(["read", s3_uri, LIB, "S", "--columns", "px", "--json", *extra], capsys)
        assert (code, err) == (0, ""), err
        return [r["px"] for r in json.loads(out)]

    assert px() == [0.0, 1.0, 100.0, 3.0, 4.0, 5.0, 0.0, 1.0]
    assert px("--as-of", "before-fix")[2] == 2.0 and len(px("--as-of", "0")) == 6
    created = pd.Timestamp(versions[1]["created"]).tz_convert(None).isoformat()
    assert px("--as-of", created)[2] == 2.0  # an ISO time: the version current then
    assert px("--date-range", "2024-01-03", "2024-01-04") == [100.0, 3.0]
    assert px("--head", "2") == [0.0, 1.0] and px("--tail", "1") == [1.0]
    for suffix in ("parquet", "csv"):
        out = tmp_path / f"out.{suffix}"
        assert _run(["read", s3_uri, LIB, "S", "--to", str(out)], capsys)[1] == f"wrote 8 rows of 'S' to {out}\n"
    assert pq.read_table(tmp_path / "out.parquet").to_pandas()["px"].tolist() == px()
    assert pd.read_csv(tmp_path / "out.csv")["px"].tolist() == px()
    assert _run(["delete", s3_uri, LIB, "S", "--date-range", "2024-01-01", "2024-01-02"], capsys)[0] == 0
    assert px() == [100.0, 3.0, 4.0, 5.0, 0.0, 1.0]
    assert _run(["delete", s3_uri, LIB, "S", "--version", "0"], capsys)[0] == 0
    live = [v["version"] for v in json.loads(_run(["versions", s3_uri, LIB, "S", "--json"], capsys)[1]) if v["live"]]
    assert live == [3, 2, 1]
    assert _run(["snapshot", "delete", s3_uri, LIB, "before-fix"], capsys)[0] == 0
    assert json.loads(_run(["snapshot", "list", s3_uri, LIB, "--json"], capsys)[1]) == []
    plan = json.loads(_run(["compact", s3_uri, LIB, "S", "--plan", "--json"], capsys)[1])
    assert plan[0]["symbol"] == "S" and "new_version" not in plan[0]
    if plan[0]["will_do_work"]:
        assert _run(["compact", s3_uri, LIB, "S"], capsys)[0] == 0
    assert px() == [100.0, 3.0, 4.0, 5.0, 0.0, 1.0]
    assert _run(["delete", s3_uri, LIB, "S", "--version", "1"], capsys)[0] == 0
    report = json.loads(_run(["gc", s3_uri, LIB, "--grace", "0", "--json"], capsys)[1])
    assert report["dry_run"] is False and report["deleted"] == report["unreachable"]
    assert px() == [100.0, 3.0, 4.0, 5.0, 0.0, 1.0]
    if importlib.util.find_spec("matplotlib") is not None:
        png = tmp_path / "layout.png"
        assert _run(["inspect", s3_uri, LIB, "S", "--plot", str(png)], capsys)[0] == 0
        assert png.read_bytes()[:4] == b"\x89PNG"


def test_convert_parquet_to_fermion_and_back(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, fer, back = tmp_path / "a.parquet", tmp_path / "a.fermion", tmp_path / "b.parquet"
    _frame("2024-01-01", 7).to_parquet(src)
    assert _run(["convert", str(src), str(fer)], capsys)[0] == 0
    code, out, _ = _run(["convert", str(fer), str(back), "--json"], capsys)
    assert code == 0 and json.loads(out)["bytes"] == back.stat().st_size
    assert pq.read_table(back).to_pandas()["px"].tolist() == pq.read_table(src).to_pandas()["px"].tolist()
    (tmp_path / "junk.fermion").write_bytes(b"junk")
    for argv, code, needle in ((["nope.parquet", "x.fermion"], 5, "does not exist"),
                               (["a.parquet", "x.parquet"], 4, "one must be .parquet"),
                               (["a.csv", "x.fermion"], 4, "name it .parquet or .fermion"),
                               (["junk.fermion", "x.parquet"], 5, "cannot convert")):
        got, _, err = _run(["convert", *(str(tmp_path / a) for a in argv)], capsys)
        assert got == code and needle in err and err.count("\n") == 1
    assert not list(tmp_path.glob("x.*")) and not list(tmp_path.glob("*.tmp-*"))


def test_the_cli_uses_only_public_modules() -> None:
    """The command line sits above the library (docs/architecture.md): it imports arcticlite's
    public names and public packages, never a private module outside its own package."""
    import ast

    root = pathlib.Path(adb.__file__).parent
    bad = []
    for path in [root / "__main__.py", *sorted((root / "cli").glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                if name.startswith("arcticlite") and not name.startswith("arcticlite.cli") and \
                        any(part.startswith("_") and part != "__main__" for part in name.split(".")):
                    bad.append(f"{path.name} imports {name}")
    assert not bad, bad


@pytest.mark.s3
def test_a_write_the_store_refuses_exits_6(s3_server: object, s3_uri: str, tmp_path: pathlib.Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.parquet"
    _frame("2024-01-01", 3).to_parquet(src)
    assert _run(["write", s3_uri, LIB, "S", str(src)], capsys)[0] == 0
    before = _contents(s3_uri)
    s3_server.fail_next(50, status=403, methods={"PUT"})  # type: ignore[attr-defined]
    later = tmp_path / "later.parquet"
    _frame("2024-02-01", 3).to_parquet(later)
    code, _, err = _run(["append", s3_uri, LIB, "S", str(later)], capsys)
    s3_server.clear_faults()  # type: ignore[attr-defined]
    assert code == 6 and "PermissionException" in err and "access denied" in err
    assert _contents(s3_uri) == before
