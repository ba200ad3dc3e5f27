"""Compaction of deltas under a concurrent writer (a real second process on LMDB, and a
thread): a writer that commits while the groups are being folded is rebased onto when it left
the folded groups' inputs as they were (rows appended after them, a merge on row groups the
fold left untouched); when it touched a folded group the compaction gives up and leaves
nothing behind. The writer's data is never lost and the result always equals the model (the
same operations merged copy-on-write)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from arcticlite import Arctic, Library, LibraryOptions
from arcticlite.exceptions import CommitConflictError
from arcticlite.index import hex_digests
from arcticlite.table import _fold
from arcticlite.version import LibraryKeys

pytestmark = [pytest.mark.lmdb, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

START = pd.Timestamp("2024-01-01")

WRITER = textwrap.dedent("""
    import sys
    import pandas as pd
    import arcticlite
    uri, action, days = sys.argv[1], sys.argv[2], [float(d) for d in sys.argv[3].split(",")]
    lib = arcticlite.Arctic(uri).get_library("mor")
    start = pd.Timestamp("2024-01-01")
    frame = pd.DataFrame({"v": [-7.0 - d for d in days]}, index=start + pd.to_timedelta(days, "D"))
    if action == "append":
        lib.append("x", frame)
    else:
        lib.merge("x", frame)
""")


def frame(days: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"v": [-7.0 - d for d in days]}, index=START + pd.to_timedelta(days, "D"))


def setup(tmp_path: Path) -> tuple[str, Library, Library]:
    uri = f"lmdb://{tmp_path / 'db'}"
    ac = Arctic(uri)
    mor = ac.create_library("mor", LibraryOptions(rows_per_segment=10))
    cow = ac.create_library("cow", LibraryOptions(rows_per_segment=10, merge_on_read=False))
    df = pd.DataFrame({"v": np.arange(100.0)}, index=pd.date_range(START, periods=100, freq="D"))
    for lib in (mor, cow):
        lib.write("x", df)
        lib.merge("x", frame([21, 24]))  # group: row group 2
        lib.merge("x", frame([55, 57.5]))  # group: row group 5
    return uri, mor, cow


def write_from_another_process(uri: str, action: str, days: list[float]) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-c", WRITER, uri, action, ",".join(map(str, days))], env=env,
                          capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()


def during_first_task(monkeypatch: pytest.MonkeyPatch, writer: Callable[[], None]) -> list[str]:
    """Run ``writer`` (to its commit) right after the compaction's first group is folded;
    returns the list the segments the compaction's tasks write are added to."""
    real = _fold.FoldTask.execute
    written: list[str] = []

    def execute(self: _fold.FoldTask, store: object = None, keys: object = None) -> np.ndarray:
        out = real(self, store, keys)  # type: ignore[arg-type]
        if not written:
            writer()
        written.extend(LibraryKeys("mor").tdata("x", d) for d in hex_digests(out))
        return out

    monkeypatch.setattr(_fold.FoldTask, "execute", execute)
    return written


def keys_of(lib: Library) -> set[str]:
    return set(lib._store.list_keys(f"{lib.name}/tdata/")) | set(lib._store.list_keys(f"{lib.name}/tindex/"))


@pytest.mark.parametrize(("action", "days"), [("append", [120, 121, 122]),  # rows after the folded groups
                                              ("merge", [83, 84])])  # deltas on a row group the fold left alone
def test_a_writer_that_left_the_groups_alone_is_rebased_onto(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             action: str, days: list[float]) -> None:
    uri, mor, cow = setup(tmp_path)
    getattr(cow, action)("x", frame(days))
    folded = during_first_task(monkeypatch, lambda: write_from_another_process(uri, action, days))
    item = mor.compact_deltas("x")
    assert item.version == 4  # committed on top of the writer's version 3
    assert mor.compaction_plan("x", as_of=3).layers == 2 + (action == "merge")
    pd.testing.assert_frame_equal(mor.read("x").data, cow.read("x").data)  # the writer's rows are there
    assert not mor.inspect_index("x")["delta"].any()  # every delta folded, the writer's too
    assert folded and set(folded) <= keys_of(mor)  # the groups folded before the writer's commit are reused
    if action == "append":  # the writer's new segments are reused as they are
        appended = set(mor.inspect_index("x", as_of=3).query("not delta")["key"]) - set(
            mor.inspect_index("x", as_of=2)["key"])
        assert appended and appended <= set(mor.inspect_index("x")["key"])
    monkeypatch.undo()
    report = mor.gc(grace_period=0)
    assert report.deleted == 0  # nothing left unreachable


@pytest.mark.parametrize(("action", "days"), [("merge", [22.5, 26]),  # deltas overlapping a folded group
                                              ("append", [99])])  # an append that makes the writer fold first
def test_a_writer_that_touched_a_group_makes_compaction_give_up_cleanly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, action: str, days: list[float]) -> None:
    uri, mor, cow = setup(tmp_path)
    if action == "append":
        last = float((cow.read("x").data.index[-1] - START).days)
        days = [last + i for i in range(12)]  # from the last row's time on: the writer folds first
    getattr(cow, action)("x", frame(days))
    before = keys_of(mor)
    folded = during_first_task(monkeypatch, lambda: write_from_another_process(uri, action, days))
    with pytest.raises(CommitConflictError, match="nothing was lost"):
        mor.compact_deltas("x")
    after_writer = mor.read("x")
    assert after_writer.version == 3  # the writer's version is the latest, no compaction committed
    pd.testing.assert_frame_equal(after_writer.data, cow.read("x").data)
    assert keys_of(mor) >= before
    assert folded and not set(folded) & keys_of(mor)  # the fold's segments are gone
    monkeypatch.undo()
    mor.gc(grace_period=0)
    pd.testing.assert_frame_equal(mor.read("x").data, cow.read("x").data)
    mor.compact_deltas("x")  # a fresh compaction then succeeds
    pd.testing.assert_frame_equal(mor.read("x").data, cow.read("x").data)


def test_compaction_beside_a_writer_thread_never_loses_its_rows(tmp_path: Path) -> None:
    uri, mor, cow = setup(tmp_path)
    writer_lib = Arctic(uri).get_library("mor")
    stop = threading.Event()
    written: list[pd.DataFrame] = []

    def appender() -> None:
        day = 200
        while not stop.is_set() and day < 260:
            f = frame([day])
            writer_lib.append("x", f)
            written.append(f)
            day += 1
            if day % 3 == 0:
                m = frame([day - 100.5])  # an insert among the base rows: a new group or a conflict
                writer_lib.merge("x", m)
                written.append(m)

    thread = threading.Thread(target=appender)
    thread.start()
    outcomes = []
    try:
        for _ in range(6):
            try:
                mor.compact_deltas("x")
                outcomes.append("committed")
            except CommitConflictError:
                outcomes.append("gave up")
    finally:
        stop.set()
        thread.join()
    for f in written:  # the model: the same operations in the same order, copy-on-write
        if len(f) == 1 and f.index[0] >= START + pd.Timedelta(days=200):
            cow.append("x", f)
        else:
            cow.merge("x", f)
    pd.testing.assert_frame_equal(mor.read("x").data, cow.read("x").data)
    assert "committed" in outcomes
