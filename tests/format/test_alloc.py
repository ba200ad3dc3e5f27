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


_WRITES = (
    "import resource, sys, numpy as np\n"
    "from arcticlite.storage import open_store\n"
    "from arcticlite.format._alloc import MALLOC_TUNED\n"
    "store = open_store('lmdb://' + sys.argv[1])\n"
    "vals = [np.random.default_rng(i).bytes(6_000_000 + i * 10_000) for i in range(20)]\n"
    "f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
    "for i, v in enumerate(vals):\n"
    "    store.write_many({f'k{i}': v})\n"
    "print(int(MALLOC_TUNED), resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)\n"
)


def _segment_writes(tmp_path: Path, env: dict[str, str]) -> tuple[int, int]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    out = subprocess.run([sys.executable, "-c", _WRITES, str(tmp_path)], env={**base, **env}, check=True,
                         capture_output=True, text=True).stdout.split()
    return int(out[0]), int(out[1])


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's malloc")
def test_segment_sized_writes_reuse_their_buffers(tmp_path: Path) -> None:
    """Writing 20 segment-sized values (6 MB, 1,500 pages each) costs a few page faults, not a
    fresh mapping per value; ARCTICLITE_MALLOC_TUNING=0 leaves malloc as it was."""
    tuned, faults = _segment_writes(tmp_path / "a", {})
    assert tuned == 1
    assert faults < 1_500  # less than one value's pages for all twenty
    untouched, _ = _segment_writes(tmp_path / "b", {"ARCTICLITE_MALLOC_TUNING": "0"})
    assert untouched == 0
    assert _segment_writes(tmp_path / "c", {"MALLOC_MMAP_THRESHOLD_": "65536"})[0] == 0  # the user's own setting wins


def test_prefault_never_changes_what_was_written() -> None:
    """The prefaulting thread maps pages while a decoder writes them: values the decoder wrote
    stay."""
    import threading

    import numpy as np

    from arcticlite.format import PREFAULT_MIN_BYTES, empty, prefault

    n = PREFAULT_MIN_BYTES // 8 + 4096
    arr = empty(n, np.float64)
    arr[: n // 2] = np.arange(n // 2)  # written before the prefault reaches it
    stop = threading.Event()
    chunk = 1 << 16
    ranges = ((arr.ctypes.data + i * 8, chunk * 8) for i in range(0, n, chunk))
    t = threading.Thread(target=prefault, args=(ranges, stop))
    t.start()
    arr[n // 2 :] = -1.0  # written while it runs
    t.join()
    np.testing.assert_array_equal(arr[: n // 2], np.arange(n // 2))
    assert (arr[n // 2 :] == -1.0).all()
    if sys.platform == "linux":
        fresh = empty(n, np.float64)
        done = prefault(iter([(fresh.ctypes.data, fresh.nbytes)]), threading.Event())
        assert done >= fresh.nbytes - 8192  # whole pages inside the range


def test_populate_maps_pages_without_changing_them() -> None:
    """Mapping a result's pages before a decoder writes them keeps what is already there and
    leaves the arrays writable, whatever their alignment and wherever they come from."""
    import numpy as np

    from arcticlite.format import PREFAULT_MIN_BYTES, empty, populate
    from arcticlite.format._alloc import SMALL_PAGES_MIN_BYTES

    n = (8 << 20) // 8
    for result in (None, PREFAULT_MIN_BYTES, SMALL_PAGES_MIN_BYTES):
        arr = empty(n, np.float64, result_bytes=result)
        arr[: n // 2] = np.arange(n // 2)
        done = populate([arr[: n // 2], arr[n // 2 :], arr[3:10], arr[:0]])
        np.testing.assert_array_equal(arr[: n // 2], np.arange(n // 2))
        arr[n // 2 :] = -1.0
        assert (arr[n // 2 :] == -1.0).all()
        assert arr.flags.writeable and arr.flags.c_contiguous
        if sys.platform == "linux":
            assert done >= arr.nbytes - 3 * 4096  # whole pages inside each range
