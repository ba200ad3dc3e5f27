"""No unpickling on demand: with ``allow_pickle=False`` nothing stored is loaded by running
pickle (docs/reliability.md, "Controls"). The hostile object below creates a file when it is
unpickled, as an attacker's payload would run a command."""

from __future__ import annotations

import datetime
import fractions
import pickle
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from arcticlite import Arctic, DataError, Library
from arcticlite.exceptions import ArcticInvalidApiUsageException, UnpicklingRefusedError


class Hostile:
    """Unpickling it opens (creates) ``path``: code chosen by whoever wrote the bytes runs."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> Any:
        return (open, (str(self.path), "w"))


def frame() -> pd.DataFrame:
    return pd.DataFrame({"x": [1, 2]}, index=pd.date_range("2024-01-01", periods=2))


@pytest.fixture
def planted(ac: Arctic, tmp_path: Path) -> tuple[Library, Path]:
    """A library whose data, metadata and snapshot metadata each hold a hostile pickle."""
    marker = tmp_path / "pwned"
    lib = ac.create_library("lib")
    lib.write_pickle("data", Hostile(marker))
    lib.write("meta", frame(), metadata=Hostile(marker))
    lib.write("plain", frame(), metadata={"a": [1, 2.5, "x", None, True, b"b", (1, 2), {3}, frozenset({4})],
                                          "when": datetime.datetime(2024, 1, 2, tzinfo=datetime.UTC),
                                          "span": datetime.timedelta(days=1)})
    lib.write_pickle("plain_pickled", {"rows": [1, 2, 3]})
    lib.write_pickle("fraction", fractions.Fraction(1, 3))
    lib.snapshot("snap", metadata=Hostile(marker))
    assert not marker.exists()
    return lib, marker


def test_allow_pickle_false_refuses_every_hostile_read(uri: str, planted: tuple[Library, Path]) -> None:
    _, marker = planted
    lib = Arctic(uri, allow_pickle=False)["lib"]
    refusals = {
        "read of write_pickle data": lambda: lib.read("data"),
        "read of metadata": lambda: lib.read("meta"),
        "read_metadata": lambda: lib.read_metadata("meta"),
        "head": lambda: lib.head("meta"),
        "tail": lambda: lib.tail("meta"),
        "list_snapshots": lambda: lib.list_snapshots(),
        "read of a class that is not hostile": lambda: lib.read("fraction"),
    }
    for what, call in refusals.items():
        with pytest.raises(UnpicklingRefusedError, match="allow_pickle=False") as err:
            call()
        assert "symbol" in str(err.value) or "snapshot 'snap'" in str(err.value), what
    with pytest.raises(UnpicklingRefusedError, match=r"symbol 'data' version 0 .*to load io\.open"):
        lib.read("data")
    with pytest.raises(UnpicklingRefusedError, match=r"metadata of symbol 'meta' version 0"):
        lib.read("meta")
    with pytest.raises(UnpicklingRefusedError, match=r"fractions\.Fraction"):
        lib.read("fraction")
    [item] = lib.read_batch(["meta"])
    assert isinstance(item, DataError) and "allow_pickle=False" in str(item.exception_string)
    assert not marker.exists(), "a refused read ran the pickle"
    # reads that need no unpickling work; plain values still load
    assert lib.list_snapshots(load_metadata=False) == ["snap"]
    assert "meta" in lib.list_symbols(snapshot_name="snap")
    assert lib.read_metadata("plain").metadata["a"] == [1, 2.5, "x", None, True, b"b", (1, 2), {3}, frozenset({4})]
    assert lib.read_metadata("plain").metadata["when"] == datetime.datetime(2024, 1, 2, tzinfo=datetime.UTC)
    assert lib.read("plain_pickled").data == {"rows": [1, 2, 3]}
    pd.testing.assert_frame_equal(lib.read("plain").data, frame(), check_freq=False)
    assert not marker.exists()


def test_default_stays_arcticdb_compatible_and_the_test_can_fail(uri: str, planted: tuple[Library, Path]) -> None:
    _, marker = planted
    lib = Arctic(uri)["lib"]
    assert lib.read("fraction").data == fractions.Fraction(1, 3)
    lib.read_metadata("meta").metadata.close()  # default: pickle runs, as in ArcticDB
    assert marker.exists()


def test_allow_pickle_per_library_and_it_travels_with_the_library(ac: Arctic, uri: str,
                                                                   planted: tuple[Library, Path]) -> None:
    _, marker = planted
    strict = ac.get_library("lib", allow_pickle=False)
    with pytest.raises(UnpicklingRefusedError):
        strict.read("data")
    assert ac["lib"].read("fraction").data == fractions.Fraction(1, 3)  # the connection's other libraries are not
    # a library sent to another process (lazy frames, scans) keeps the setting
    with pytest.raises(UnpicklingRefusedError):
        pickle.loads(pickle.dumps(strict)).read("meta")
    with pytest.raises(ArcticInvalidApiUsageException, match="allow_pickle=False"):
        Arctic(uri, allow_pickle=False).get_library("lib", allow_pickle=True)
    assert not marker.exists()


def test_writes_with_allow_pickle_false_return_the_callers_metadata(uri: str, planted: tuple[Library, Path]) -> None:
    lib = Arctic(uri, allow_pickle=False)["lib"]
    ts = pd.Timestamp("2024-01-01")  # not a plain value: stored, but not loaded back under allow_pickle=False
    assert lib.write("t", frame(), metadata=ts).metadata == ts
    with pytest.raises(UnpicklingRefusedError, match="metadata of symbol 't' version 0"):
        lib.read("t")
    assert Arctic(uri)["lib"].read("t").metadata == ts
