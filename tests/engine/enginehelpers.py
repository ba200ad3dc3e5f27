"""Helpers shared by the engine tests (import as ``from enginehelpers import ...``)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd
import pytest

from arcticlite import EncodingVersion, Library, LibraryOptions

ALL_OPTIONS = [
    pytest.param(LibraryOptions(), id="static"),
    pytest.param(LibraryOptions(dynamic_schema=True), id="dynamic"),
    pytest.param(LibraryOptions(rows_per_segment=2, columns_per_segment=2), id="tiles2x2"),
]

#: Parametrise a test over :data:`ALL_OPTIONS` (through the ``library_options`` fixture).
all_options = pytest.mark.parametrize("library_options", ALL_OPTIONS, indirect=True)


def frame(n: int = 5, start: Any = "2024-01-01", freq: str = "D", cols: tuple[str, ...] = ("a", "b"),
          seed: int = 0, base: int = 0) -> pd.DataFrame:
    """A small DatetimeIndex frame: int column ``a`` (base, base+1, ...), float ``b``, ..."""
    rng = np.random.default_rng(seed)
    idx = pd.date_range(start, periods=n, freq=freq)
    data: dict[str, Any] = {}
    for i, c in enumerate(cols):
        if i % 2 == 0:
            data[c] = np.arange(base, base + n, dtype=np.int64)
        else:
            data[c] = rng.random(n)
    return pd.DataFrame(data, index=idx)


def assert_frame_equal(a: pd.DataFrame, b: pd.DataFrame, **kw: Any) -> None:
    kw.setdefault("check_freq", False)
    pd.testing.assert_frame_equal(a, b, **kw)


def versions_of(lib: Library, sym: str) -> list[int]:
    """Live (and snapshot-held) version ids of ``sym``, ascending."""
    return sorted(v.version for v in lib.list_versions(sym))


# -- multiprocessing workers (importable by spawned children) ---------------------------------------
APPEND_TS = pd.Timestamp("2024-01-01")


def append_worker(uri: str, lib_name: str, sym: str, tag: int, n: int, barrier: Any) -> None:
    """Append ``n`` one-row batches (column ``tag`` = this worker, ``seq`` = 0..n-1), all at the
    same timestamp so that no append depends on the order of the others."""
    from arcticlite import Arctic

    lib = Arctic(uri)[lib_name]
    barrier.wait()
    for k in range(n):
        df = pd.DataFrame({"tag": np.array([tag], dtype=np.int64), "seq": np.array([k], dtype=np.int64)},
                          index=pd.DatetimeIndex([APPEND_TS]))
        lib.append(sym, df)


def endless_append_worker(uri: str, lib_name: str, sym: str, started: Any) -> None:
    """Append one-row batches (``seq`` = 0, 1, ...) until killed."""
    from arcticlite import Arctic

    lib = Arctic(uri)[lib_name]
    k = 0
    while True:
        df = pd.DataFrame({"seq": np.array([k], dtype=np.int64)}, index=pd.DatetimeIndex([APPEND_TS]))
        lib.append(sym, df)
        k += 1
        if k == 3:
            started.set()


def effective_options(options: LibraryOptions) -> LibraryOptions:
    """``options`` as a library reports them: the encoding version filled in (V1), as ArcticDB does."""
    if options.encoding_version is not None:
        return options
    return dataclasses.replace(options, encoding_version=EncodingVersion.V1)
