"""The decoders' coverage-guided fuzz targets (``tests/format/fuzz_decoders.py``, atheris), run
for a bounded number of executions: any exception but ``CorruptDataError``, a crash, a hang
(10 s per input) or more than 2 GiB of memory of its own fails the test. ``ARCTICLITE_FUZZ_RUNS`` sets the
number of executions (default 300 per target, a few seconds)."""

from __future__ import annotations

import os
import resource
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
    # libFuzzer judges memory by the process's peak RSS, which on Linux starts from this
    # process's (a child's high-water mark carries the forking parent's across exec): the
    # 2 GiB budget is the fuzz target's own, on top of what the test session already held
    inherited_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), target, f"-runs={RUNS}", "-timeout=10",
         f"-rss_limit_mb={2048 + inherited_mb}",
         "-max_len=4096", f"-artifact_prefix={tmp_path}/", "-seed=16"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=3600)
    tail = proc.stderr[-3000:]
    assert proc.returncode == 0, tail
    assert f"Done {RUNS} runs" in proc.stderr, tail
    assert list(tmp_path.glob("crash-*")) == [] and list(tmp_path.glob("timeout-*")) == []
