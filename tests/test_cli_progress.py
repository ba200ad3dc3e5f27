"""Progress bars and the ``fermion`` tools' exit codes.

A bar appears on stderr only where a person watches (a terminal, or ``--progress`` /
``ARCTICLITE_PROGRESS=1``); never in a pipe, never with ``--quiet``. The ``fermion``
sub-commands answer bad files as every command does: one line, exit 5, no file left."""

from __future__ import annotations

import json
import logging
import os
import pathlib
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import arcticlite as adb
from arcticlite import progress
from arcticlite.__main__ import main


@pytest.fixture(autouse=True)
def _default_setting() -> object:
    yield
    progress.enable(None)


def _write_cmd(tmp_path: pathlib.Path, *opts: str) -> list[str]:
    """``arcticlite write`` of a file of 40 segments (rows_per_segment is 100 in the library)."""
    uri = f"lmdb://{tmp_path / 'db'}"
    lib = adb.Arctic(uri).get_library("p", create_if_missing=True,
                                      library_options=adb.LibraryOptions(rows_per_segment=100))
    assert lib.name == "p"
    src = tmp_path / "big.parquet"
    pd.DataFrame({"x": np.arange(4_000.0)}, index=pd.date_range("2024-01-01", periods=4_000, freq="s",
                                                                name="t")).to_parquet(src)
    return [sys.executable, "-m", "arcticlite", *opts, "write", uri, "p", "S", str(src)]


def _run(argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "ARCTICLITE_PROGRESS"}
    full.update(PYTHONPATH=str(pathlib.Path(adb.__file__).parent.parent), **env)
    return subprocess.run(argv, capture_output=True, text=True, env=full, timeout=120, check=False)


def test_no_bar_in_a_pipe_or_with_quiet(tmp_path: pathlib.Path) -> None:
    for opts, env in (((), {}), (("--quiet",), {"ARCTICLITE_PROGRESS": "1"}), ((), {"ARCTICLITE_PROGRESS": "0"})):
        p = _run(_write_cmd(tmp_path, *opts), **env)
        assert (p.returncode, p.stderr) == (0, ""), (opts, env, p.stderr)
        assert "wrote 4,000 rows" in p.stdout


def test_verbose_logs_what_the_write_did_on_stderr(tmp_path: pathlib.Path) -> None:
    p = _run(_write_cmd(tmp_path, "--verbose"))
    assert p.returncode == 0 and "wrote 4,000 rows" in p.stdout
    assert "INFO arcticlite: write S: 40 of 40 segments in" in p.stderr  # the library's log record, no bar
    quiet = _run(_write_cmd(tmp_path))
    assert quiet.stderr == ""


def test_progress_option_and_variable_draw_on_stderr(tmp_path: pathlib.Path) -> None:
    adb.Arctic(f"lmdb://{tmp_path / 'db'}").get_library("p", create_if_missing=True)
    for opts, env in ((("--progress",), {}), ((), {"ARCTICLITE_PROGRESS": "1"})):
        cmd = [sys.executable, "-c",
               "import sys, time\n"
               "from arcticlite import progress\n"
               "from arcticlite.__main__ import main\n"
               "assert main(sys.argv[1:]) == 0\n"
               "print('enabled', progress.enabled())\n"
               "with progress.Progress(3, 'demo', unit='step', delay=0) as bar:\n"
               "    for _ in range(3): time.sleep(0.15); bar.update(1)\n",
               *opts, "libraries", f"lmdb://{tmp_path / 'db'}"]
        p = _run(cmd, **env)
        assert p.returncode == 0, p.stderr
        assert "enabled True" in p.stdout
        assert "demo" in p.stderr and "3/3" in p.stderr  # the bar (tqdm's or the plain counter)


def test_bar_is_drawn_only_after_the_delay_and_logs_the_work(caplog: pytest.LogCaptureFixture,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    with caplog.at_level(logging.INFO, logger="arcticlite"):
        with progress.Progress(5, "quick", enabled=True, delay=60) as bar:
            bar.update(5)
    assert capsys.readouterr().err == ""  # faster than the delay: nothing drawn
    assert "quick: 5 of 5 its" in caplog.text


def test_batch_write_and_gc_log_their_progress(tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture) -> None:
    lib = adb.Arctic(f"lmdb://{tmp_path / 'db'}").create_library("p")
    payloads = [adb.WritePayload(f"s{i}", pd.DataFrame({"x": [i]})) for i in range(4)]
    with caplog.at_level(logging.INFO, logger="arcticlite"):
        assert all(not isinstance(r, adb.DataError) for r in lib.write_batch(payloads))
        lib.gc(grace_period=0)
    assert "write_batch: 4 of 4 symbols" in caplog.text
    assert "gc: scan: 4 of 4 symbols" in caplog.text


# -- fermion tools --------------------------------------------------------------------------------
def test_fermion_tools_convert_and_inspect(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "a.parquet"
    pd.DataFrame({"x": np.arange(10), "s": list("abcdefghij")}).to_parquet(src)
    fer, back = tmp_path / "a.fermion", tmp_path / "b.parquet"
    assert main(["fermion", "from-parquet", str(src), str(fer)]) == 0
    assert main(["fermion", "to-parquet", str(fer), str(back), "--compression", "none"]) == 0
    assert main(["fermion", "inspect", str(fer)]) == 0
    out = capsys.readouterr().out
    assert "rows        10 in 1 stripe" in out and f"wrote {back}" in out
    assert pd.read_parquet(back).equals(pd.read_parquet(src))
    assert main(["fermion", "inspect", str(fer), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["rows"] == 10 and [c["name"] for c in d["columns"]] == ["x", "s"]


@pytest.mark.parametrize(("argv", "code", "needle"), [
    (["from-parquet", "{tmp}/nope.parquet", "{tmp}/x.fermion"], 5, "does not exist"),
    (["from-parquet", "{tmp}/junk.fermion", "{tmp}/x.fermion"], 5, "cannot convert"),
    (["to-parquet", "{tmp}/junk.fermion", "{tmp}/x.parquet"], 5, "cannot convert"),
    (["inspect", "{tmp}/junk.fermion"], 5, "cannot read"),
    (["inspect", "{tmp}/nope.fermion"], 5, "does not exist"),
    (["frobnicate"], 2, "invalid choice"),
])
def test_fermion_tools_exit_codes_and_no_file_left(tmp_path: pathlib.Path, argv: list[str], code: int, needle: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "junk.fermion").write_bytes(b"not a fermion file")
    assert main(["fermion", *[a.format(tmp=tmp_path) for a in argv]]) == code
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert not list(tmp_path.glob("x.*")) and not list(tmp_path.glob("*.tmp-*"))
