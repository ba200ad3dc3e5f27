"""The decoders' coverage-guided fuzz targets (``tests/format/fuzz_decoders.py``, atheris), run
for a bounded number of executions: any exception but ``CorruptDataError``, a crash, a hang
(10 s per input) or more than 2 GiB of memory fails the test. ``ARCTICLITE_FUZZ_RUNS`` sets the
number of executions (default 300 per target, a few seconds)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("atheris")

RUNS = int(os.environ.get("ARCTICLITE_FUZZ_RUNS", "300"))
SCRIPT = Path(__file__).with_name("fuzz_decoders.py")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(3600)
@pytest.mark.parametrize("target", ["fermion", "record"])
def test_fuzz_target_finds_nothing(target: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), target, f"-runs={RUNS}", "-timeout=10", "-rss_limit_mb=2048",
         "-max_len=4096", f"-artifact_prefix={tmp_path}/", "-seed=16"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=3600)
    tail = proc.stderr[-3000:]
    assert proc.returncode == 0, tail
    assert f"Done {RUNS} runs" in proc.stderr, tail
    assert list(tmp_path.glob("crash-*")) == [] and list(tmp_path.glob("timeout-*")) == []
