"""Importing arcticlite turns numpy's transparent-huge-page advice off where the kernel would
stall on it (docs/benchmarks.md, "System time"); ``ARCTICLITE_HUGEPAGES=1`` keeps it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from arcticlite.format._alloc import _compacts_on_fault

_PROBE = (
    "import numpy as np, arcticlite\n"
    "from arcticlite.format._alloc import NUMPY_ADVICE_OFF, _compacts_on_fault\n"
    "setter = np._core.multiarray._set_madvise_hugepage\n"
    "advice = setter(False); setter(advice)\n"
    "print(int(NUMPY_ADVICE_OFF), int(advice), int(_compacts_on_fault()))\n"
)


@pytest.mark.parametrize(
    ("mode", "stalls"),
    [("always defer defer+madvise [madvise] never", True), ("[always] defer madvise never", True),
     ("always [defer] defer+madvise madvise never", False), ("always defer madvise [never]", False)],
)
def test_the_kernel_setting_decides(tmp_path: Path, mode: str, stalls: bool) -> None:
    path = tmp_path / "defrag"
    path.write_text(mode + "\n")
    assert _compacts_on_fault(str(path)) is stalls
    assert _compacts_on_fault(str(tmp_path / "absent")) is False


def _probe(env: dict[str, str]) -> tuple[int, int, int]:
    base = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}  # numpy's own switch
    out = subprocess.run([sys.executable, "-c", _PROBE], env={**base, **env}, check=True,
                         capture_output=True, text=True).stdout.split()
    off, advice, stalls = (int(x) for x in out)
    return off, advice, stalls


def test_import_turns_the_advice_off_only_where_it_stalls() -> None:
    pytest.importorskip("numpy._core.multiarray")
    off, advice, stalls = _probe({"ARCTICLITE_HUGEPAGES": ""})
    assert off == stalls
    assert advice == (0 if stalls else 1)


def test_the_environment_keeps_the_advice() -> None:
    off, advice, _ = _probe({"ARCTICLITE_HUGEPAGES": "1"})
    assert (off, advice) == (0, 1)
