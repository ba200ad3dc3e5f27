"""``arcticlite bench``: it runs the built-in workload from the installed package and prints (or
writes) its table. No assertion on the times themselves."""

from __future__ import annotations

import importlib.util
import json
import pathlib

import pytest

from arcticlite.__main__ import main


def test_bench_prints_a_table_of_every_engine_and_operation(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--quick", "--rows", "2000", "--runs", "1", "--ops", "read,columns"]) == 0
    out = capsys.readouterr().out
    engines = ["arcticlite", "parquet"] + (["arcticdb"] if importlib.util.find_spec("arcticdb") else [])
    assert "2,000 rows x 10 columns, 1 runs each" in out and "median ms" in out
    for label in ("read all rows", "read 2 of 10 columns"):
        lines = [line for line in out.splitlines() if line.startswith(label)]
        assert sorted(line.split()[len(label.split())] for line in lines) == sorted(engines)
    assert "stored bytes: arcticlite" in out


def test_bench_json_and_results_file(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "bench.json"
    plot = ["--plot", str(tmp_path / "bench.png")] if importlib.util.find_spec("matplotlib") else []
    code = main(["bench", "--rows", "1000", "--runs", "2", "--engines", "arcticlite,parquet", "--json",
                 "--out", str(out_file), "--dir", str(tmp_path), *plot])
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out_file.read_text())
    assert (printed["rows"], printed["runs"], printed["engines"]) == (1000, 2, ["arcticlite", "parquet"])
    got = {(r["op"], r["engine"]) for r in printed["results"]}
    assert got == {(op, e) for op in ("write", "read", "date_range", "columns") for e in ("arcticlite", "parquet")}
    for r in printed["results"]:
        assert len(r["seconds"]) == 2 and r["min"] <= r["median"] <= r["max"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["bench.json"] + (["bench.png"] if plot else []))
    if plot:  # the chart: a PNG
        assert (tmp_path / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(("argv", "needle"), [(["--engines", "duckdb"], "choose among arcticlite"),
                                              (["--ops", "scan"], "choose among write"),
                                              (["--rows", "3"], "--rows must be at least 10")])
def test_bench_refuses_bad_options(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", *argv]) == 4
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
