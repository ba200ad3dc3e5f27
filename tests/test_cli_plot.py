"""Pictures: ``arcticlite inspect SYMBOL --plot`` / ``arcticlite plot`` draw a symbol's layout
version by version; ``arcticlite.plot.plot_layout`` is the function behind them. Without
matplotlib the command says how to install it."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import arcticlite as adb
from arcticlite.__main__ import main

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def uri(tmp_path: pathlib.Path) -> str:
    uri = f"lmdb://{tmp_path / 'db'}"
    lib = adb.Arctic(uri).create_library("p", adb.LibraryOptions(rows_per_segment=100, columns_per_segment=2))
    idx = pd.date_range("2024-01-01", periods=260, freq="min")
    df = pd.DataFrame({f"c{i}": np.arange(260.0) * i for i in range(3)}, index=idx)
    lib.write("S", df.iloc[:250])
    for i in range(250, 260):  # small appends: an open tail
        lib.append("S", df.iloc[i:i + 1])
    lib.write_pickle("P", {"a": 1})
    return uri


def test_inspect_plot_draws_each_version(uri: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "layout.png"
    assert main(["inspect", uri, "p", "S", "--plot", str(out), "--versions", "3"]) == 0
    assert "drew 3 version(s) of 'S'" in capsys.readouterr().out
    assert out.read_bytes()[:8] == PNG
    svg = tmp_path / "layout.svg"
    assert main(["plot", uri, "p", "S", str(svg), "--as-of", "0", "--versions", "5"]) == 0
    assert "drew 1 version(s)" in capsys.readouterr().out  # only version 0 is at or before as_of=0
    assert svg.read_text().lstrip().startswith("<?xml") and "<svg" in svg.read_text()


def test_plot_layout_panels_name_versions_rows_and_new_segments(uri: str) -> None:
    pytest.importorskip("matplotlib")
    from arcticlite.plot import plot_layout

    lib = adb.Arctic(uri).get_library("p")
    fig = plot_layout(lib, "S", versions=2)
    titles = [ax.get_title(loc="left") for ax in fig.axes if ax.get_title(loc="left")]
    assert titles[0].startswith("S v10: 260 rows") and titles[1].startswith("S v9: 259 rows")
    assert "(2 new)" in titles[0]  # the append rewrote the open tail: one segment per column slice


def test_plot_layout_shows_the_rows_a_newer_version_appended(uri: str) -> None:
    pytest.importorskip("matplotlib")
    from arcticlite.plot import plot_layout

    lib = adb.Arctic(uri).get_library("p")
    fig = plot_layout(lib, "S", versions=4)
    panels = [ax for ax in fig.axes if ax.get_title(loc="left")]
    # every panel spans the newest version's 260 rows, so its appended tail is not cut off by the
    # older, shorter versions drawn below it
    assert [ax.get_xlim() for ax in panels] == [(0.0, 260.0)] * 4
    newest = panels[0]
    assert max(p.get_x() + p.get_width() for p in newest.patches) == pytest.approx(260.0)
    assert all(float(t).is_integer() for t in newest.get_yticks())  # whole column slices


@pytest.mark.parametrize(("argv", "code", "needle"), [
    (["plot", "{uri}", "p", "P", "{tmp}/x.png"], 4, "pickled object"),
    (["plot", "{uri}", "p", "nope", "{tmp}/x.png"], 3, "no symbol 'nope'"),
    (["plot", "{uri}", "p", "S", "{tmp}/x.txt"], 4, "name it .png, .svg or .pdf"),
])
def test_plot_refuses_bad_input_and_writes_nothing(uri: str, tmp_path: pathlib.Path, argv: list[str], code: int,
                                                   needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    argv = [a.format(uri=uri, tmp=tmp_path) for a in argv]
    assert main(argv) == code
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
    assert not list(tmp_path.glob("x.*"))


def test_without_matplotlib_the_error_says_how_to_install_it(uri: str, tmp_path: pathlib.Path) -> None:
    code = ("import sys; sys.modules['matplotlib'] = None\n"  # as if it were not installed
            "from arcticlite.__main__ import main\n"
            f"sys.exit(main(['plot', {uri!r}, 'p', 'S', {str(tmp_path / 'x.png')!r}]))")
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(adb.__file__).parent.parent)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert proc.returncode == 1
    assert "pip install 'arcticlite[plot]'" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "x.png").exists()


def test_plot_layout_counts_the_merge_deltas_pending(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("matplotlib")
    from arcticlite.library import MergeAction, MergeStrategy
    from arcticlite.plot import plot_layout

    lib = adb.Arctic("mem://").create_library("p", adb.LibraryOptions(rows_per_segment=50))
    idx = pd.date_range("2024-01-01", periods=200, freq="h")
    lib.write("S", pd.DataFrame({"px": np.arange(200.0)}, index=idx))
    lib.merge("S", pd.DataFrame({"px": [-1.0, -2.0]}, index=[idx[10], idx[120]]),
              strategy=MergeStrategy(MergeAction.UPDATE, MergeAction.DO_NOTHING))
    fig = plot_layout(lib, "S", tmp_path / "m.png", versions=1)
    title = fig.axes[0].get_title(loc="left")
    assert title.startswith("S v1: 200 rows") and "2 delta rows pending" in title
    assert (tmp_path / "m.png").read_bytes()[:8] == PNG
