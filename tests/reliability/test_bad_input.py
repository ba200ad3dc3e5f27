"""The battery's "Bad input" part (docs/reliability.md): every public ``Library`` method given
wrong types, unsorted or overlapping indexes, schema mismatches, unsupported dtypes, hostile
names, NaN/NaT in indexes -> an arcticlite error saying what was wrong, no new version, and the
store's keys and values byte-identical before and after (a real LMDB store)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from storeimage import StoreImage

from arcticlite import Arctic, Library, WritePayload
from arcticlite.exceptions import (
    AppendOrderException,
    ArcticDbNotYetImplemented,
    ArcticException,
    ArcticUnsupportedDataTypeException,
    InvalidSymbolName,
    NormalizationException,
    StreamDescriptorMismatch,
    UnsortedDataException,
    UserInputException,
)

pytestmark = pytest.mark.lmdb

IDX = pd.date_range("2024-01-01", periods=5)
DF = pd.DataFrame({"x": np.arange(5), "y": np.arange(5.0)}, index=IDX)
UNSORTED = DF.iloc[[1, 0, 2, 3, 4]]
LATER = DF.set_axis(IDX + pd.Timedelta(days=30))
NAT = pd.DataFrame({"x": [1, 2], "y": [1.0, 2.0]}, index=pd.DatetimeIndex(["2025-01-01", None]))


def later_unsorted() -> pd.DataFrame:
    return UNSORTED.set_axis(UNSORTED.index + pd.Timedelta(days=30))


#: name -> (call, error class, words the message must hold)
CASES: dict[str, tuple[Callable[[Library, Arctic], Any], type[Exception], str]] = {
    # wrong types
    "write: symbol None": (lambda lib, ac: lib.write(None, DF), UserInputException, "non-empty string"),
    "write: a str as data": (lambda lib, ac: lib.write("s", "text"), ArcticUnsupportedDataTypeException, "write_pickle"),
    "write: a dict as data": (lambda lib, ac: lib.write("s", {"a": 1}), ArcticUnsupportedDataTypeException, "write_pickle"),
    "append: a list as data": (lambda lib, ac: lib.append("s", [1, 2]), ArcticUnsupportedDataTypeException, "cannot be normalized"),
    "update: a dict as data": (lambda lib, ac: lib.update("s", {"a": 1}), ArcticUnsupportedDataTypeException, "cannot be normalized"),
    "stage: an int as data": (lambda lib, ac: lib.stage("s", 5), ArcticUnsupportedDataTypeException, "cannot be normalized"),
    "write_pickle: unpicklable data": (lambda lib, ac: lib.write_pickle("u", lambda: 1), UserInputException, "does not pickle"),
    "write: unpicklable metadata": (lambda lib, ac: lib.write("s", DF, metadata=lambda: 1), UserInputException, "does not pickle"),
    "write_metadata: symbol None": (lambda lib, ac: lib.write_metadata(None, {}), UserInputException, "non-empty string"),
    "read: as_of an object": (lambda lib, ac: lib.read("s", as_of=object()), ArcticException, "not a version id"),
    "read: row_range a str": (lambda lib, ac: lib.read("s", row_range="ab"), UserInputException, "row_range must be"),
    "read: date_range of 3": (lambda lib, ac: lib.read("s", date_range=(1, 2, 3)), UserInputException, "date_range must be"),
    "head: n a str": (lambda lib, ac: lib.head("s", n="5"), UserInputException, "n must be an integer"),
    "tail: n a float": (lambda lib, ac: lib.tail("s", n=2.5), UserInputException, "n must be an integer"),
    "scan: row_range a float": (lambda lib, ac: lib.scan("s", row_range=(0.5, 2)), UserInputException, "row_range"),
    "delete: versions a str": (lambda lib, ac: lib.delete("s", versions="abc"), UserInputException, "versions must be"),
    "list_symbols: a bad regex": (lambda lib, ac: lib.list_symbols(regex="("), UserInputException, "not a valid regular"),
    "compact_data: rows_per_segment -1": (lambda lib, ac: lib.compact_data("s", rows_per_segment=-1), UserInputException, "positive integer"),
    "compact_data: rows_per_segment a str": (lambda lib, ac: lib.compact_data("s", rows_per_segment="x"), UserInputException, "positive integer"),
    "gc: grace_period a str": (lambda lib, ac: lib.gc(grace_period="x"), UserInputException, "seconds"),
    "delete_data_in_range: a str": (lambda lib, ac: lib.delete_data_in_range("s", "2024"), UserInputException, "date_range must be"),
    "delete_data_in_range: str bounds": (lambda lib, ac: lib.delete_data_in_range("s", ("a", "b")), TypeError, "DateRange bounds must be datetime"),
    "update: date_range of 1": (lambda lib, ac: lib.update("s", DF, date_range=(1,)), UserInputException, "date_range must be"),
    "update: reversed date_range": (lambda lib, ac: lib.update("s", DF, date_range=(IDX[3], IDX[1])), UserInputException, "ends before it starts"),
    "write_batch: a str item": (lambda lib, ac: lib.write_batch(["x"]), UserInputException, "not a WritePayload"),
    "update_batch: a WritePayload": (lambda lib, ac: lib.update_batch([WritePayload("s", DF)]), UserInputException, "not a UpdatePayload"),
    "append_batch: not a list": (lambda lib, ac: lib.append_batch(WritePayload("s", LATER)), UserInputException, "takes a list"),
    "write_metadata_batch: a dict": (lambda lib, ac: lib.write_metadata_batch([{"s": 1}]), UserInputException, "not a WriteMetadataPayload"),
    "snapshot: name an int": (lambda lib, ac: lib.snapshot(123), UserInputException, "non-empty string"),
    "finalize: nothing staged": (lambda lib, ac: lib.finalize_staged_data("nothing"), UserInputException, "stage() first"),
    "modify_library_option: unknown": (lambda lib, ac: ac.modify_library_option(lib, "nope", 1), ArcticException, "cannot be modified"),
    "get_library: options without create": (lambda lib, ac: ac.get_library("lib", library_options="x"), ArcticException, "create_if_missing"),
    # unsorted or overlapping indexes
    "write: unsorted index": (lambda lib, ac: lib.write("s", UNSORTED), UnsortedDataException, "sort_index"),
    "append: unsorted index": (lambda lib, ac: lib.append("s", later_unsorted()), UnsortedDataException, "sort_index"),
    "append: overlapping the stored rows": (lambda lib, ac: lib.append("s", DF), AppendOrderException, "ending at 2024-01-05"),
    "update: unsorted index": (lambda lib, ac: lib.update("s", UNSORTED), UnsortedDataException, "must be sorted"),
    "stage: unsorted index": (lambda lib, ac: lib.stage("s", UNSORTED), UnsortedDataException, "sort_index"),
    # schema mismatches
    "append: other columns": (lambda lib, ac: lib.append("s", pd.DataFrame({"z": [1]}, index=[LATER.index[0]])), StreamDescriptorMismatch, "dynamic_schema=True"),
    "append: other dtype": (lambda lib, ac: lib.append("s", pd.DataFrame({"x": ["a"], "y": [1.0]}, index=[LATER.index[0]])), StreamDescriptorMismatch, "'x'"),
    "update: other columns": (lambda lib, ac: lib.update("s", pd.DataFrame({"z": [1]}, index=[IDX[1]])), StreamDescriptorMismatch, "differ from the stored"),
    "append: timestamps to a row-numbered symbol": (lambda lib, ac: lib.append("r", DF), NormalizationException, "Row count index"),
    # unsupported dtypes
    "write: complex column": (lambda lib, ac: lib.write("c", pd.DataFrame({"x": [1 + 2j]})), ArcticDbNotYetImplemented, "complex128"),
    "write: dicts in a column": (lambda lib, ac: lib.write("o", pd.DataFrame({"x": [{"a": 1}, 3]})), ArcticDbNotYetImplemented, "dict"),
    "write: PeriodIndex": (lambda lib, ac: lib.write("p", pd.DataFrame({"x": [1]}, index=pd.period_range("2024", periods=1))), ArcticDbNotYetImplemented, "PeriodIndex"),
    # NaN / NaT in indexes
    "write: NaT in the index": (lambda lib, ac: lib.write("n", NAT), UnsortedDataException, "NaT"),
    "append: NaT in the index": (lambda lib, ac: lib.append("s", NAT), UnsortedDataException, "NaT"),
    "update: NaT in the index": (lambda lib, ac: lib.update("s", NAT), UnsortedDataException, "sorted"),
    "stage: NaT in the index": (lambda lib, ac: lib.stage("s", NAT), UnsortedDataException, "NaT"),
    "write_metadata: 32 MiB": (lambda lib, ac: lib.write_metadata("s", {"blob": b"\x00" * (32 << 20)}),
                               ArcticDbNotYetImplemented, "16,777,216 bytes"),
    # hostile and huge names
    "write: 10 kB symbol": (lambda lib, ac: lib.write("x" * 10_000, DF), UserInputException, "limit is 254"),
    "write: empty symbol": (lambda lib, ac: lib.write("", DF), UserInputException, "non-empty"),
    "write: symbol over the key limit": (lambda lib, ac: lib.write("\u00e9" * 200, DF), InvalidSymbolName, "1,024 bytes"),
    "create_library: 10 kB name": (lambda lib, ac: ac.create_library("x" * 10_000), UserInputException, "limit is 255"),
    "create_library: control character": (lambda lib, ac: ac.create_library("a\x00b"), UserInputException, "not allowed"),
    "create_library: reserved name": (lambda lib, ac: ac.create_library("_arctic"), UserInputException, "reserved"),
    "snapshot: 10 kB name": (lambda lib, ac: lib.snapshot("x" * 10_000), UserInputException, "too long"),
}


@pytest.fixture
def populated(tmp_path: Any) -> tuple[Arctic, Library, str]:
    uri = f"lmdb://{tmp_path / 'store'}"
    ac = Arctic(uri)
    lib = ac.create_library("lib")
    lib.write("s", DF, metadata={"m": 1})
    lib.write("r", pd.DataFrame({"x": [1, 2]}))
    lib.snapshot("snap")
    return ac, lib, uri


def _versions(lib: Library) -> dict[Any, Any]:
    return {k: v.date for k, v in lib.list_versions().items()}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_refused_clearly_and_changes_nothing(populated: tuple[Arctic, Library, str], case: str) -> None:
    ac, lib, uri = populated
    call, error, words = CASES[case]
    before, versions = StoreImage.of(uri), _versions(lib)
    with pytest.raises(error) as err:
        call(lib, ac)
    assert words in str(err.value), f"{case}: {err.value}"
    assert _versions(lib) == versions and sorted(ac.list_libraries()) == ["lib"]
    StoreImage.of(uri).assert_same(before)


HOSTILE_NAMES = ["a/b", "../x", "..", ".", "/", "a\x00b", "line\nbreak", "tab\there", "\x07bell", "%2F", "lib/../s",
                 "sym\u202ereversed", "\U0001f600", " ", "*", "<>"]


def test_hostile_symbol_names_stay_inside_their_library(populated: tuple[Arctic, Library, str]) -> None:
    """Names with path separators, ``..``, control characters are legal symbols (as in
    ArcticDB's unrestricted mode): each is stored under its own escaped key, inside the library's
    prefix, reads back, and deleting it touches nothing else."""
    ac, lib, uri = populated
    other = ac.create_library("other")
    other.write("s", DF)
    before = StoreImage.of(uri)
    for name in HOSTILE_NAMES:
        lib.write(name, DF, metadata=name)
        assert lib.read(name).metadata == name
        pd.testing.assert_frame_equal(lib.read(name).data, DF, check_freq=False)
    after = StoreImage.of(uri)
    assert all(k.startswith("lib/") for k in after.values.keys() - before.values.keys())
    assert sorted(lib.list_symbols()) == sorted(["r", "s", *HOSTILE_NAMES])
    for name in HOSTILE_NAMES:
        lib.delete(name)
    lib.gc(grace_period=0)
    final = StoreImage.of(uri).values
    # every key that was there is unchanged; what is left of the deleted symbols is their
    # version chain (records, refs, symbol-list entries), no data, all inside the library
    assert {k: final.get(k) for k in before.values if not k.startswith(("lib/_gc/", "lib/sl/"))} == \
        {k: v for k, v in before.values.items() if not k.startswith(("lib/_gc/", "lib/sl/"))}
    assert all(k.startswith(("lib/ver/", "lib/vref/", "lib/sl/", "lib/_gc/")) for k in final.keys() - before.values.keys())
    pd.testing.assert_frame_equal(other.read("s").data, DF, check_freq=False)


def test_large_metadata_round_trips(populated: tuple[Arctic, Library, str]) -> None:
    """Metadata up to the 16 MiB cap round-trips (above it: refused, as ArcticDB does)."""
    _, lib, _ = populated
    big = {"blob": b"\x00" * (12 << 20), "rows": list(range(100_000))}
    lib.write_metadata("s", big)
    assert lib.read_metadata("s").metadata == big
    pd.testing.assert_frame_equal(lib.read("s").data, DF, check_freq=False)
