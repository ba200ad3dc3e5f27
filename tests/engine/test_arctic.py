"""``Arctic``: library management and URIs, on every backend (reference §1)."""

from __future__ import annotations

import os
from typing import Any

import pandas as pd
import pytest
from enginehelpers import assert_frame_equal, effective_options, frame

from arcticlite import Arctic, Library, LibraryOptions, ModifiableLibraryOption
from arcticlite.exceptions import (
    ArcticException,
    ArcticInvalidApiUsageException,
    LibraryNotFound,
    LmdbOptionsError,
    MismatchingLibraryOptions,
    UnsupportedLibraryOptionValue,
    UserInputException,
)


def test_create_library_returns_a_usable_library(ac: Arctic) -> None:
    lib = ac.create_library("prices")
    assert isinstance(lib, Library)
    assert lib.name == "prices"
    assert lib.options() == effective_options(LibraryOptions())
    lib.write("s", frame(3))
    assert_frame_equal(lib.read("s").data, frame(3))
    assert "prices" in repr(lib)


def test_create_library_keeps_its_options(ac: Arctic) -> None:
    opts = LibraryOptions(dynamic_schema=True, rows_per_segment=10, columns_per_segment=3,
                          prune_previous_versions=True)
    ac.create_library("x", opts)
    assert ac.get_library("x").options() == effective_options(opts)
    assert ac["x"].options() == effective_options(opts)


def test_create_existing_library_raises_value_error(ac: Arctic) -> None:
    ac.create_library("lib")
    with pytest.raises(ValueError, match="already exists"):
        ac.create_library("lib")
    assert ac.list_libraries() == ["lib"]


@pytest.mark.parametrize("name", ["", "a*b", "a<b", "a>b", "x" * 256])
def test_bad_library_names_raise_user_input(ac: Arctic, name: str) -> None:
    with pytest.raises(UserInputException):
        ac.create_library(name)
    assert ac.list_libraries() == []


def test_get_library(ac: Arctic) -> None:
    with pytest.raises(LibraryNotFound):
        ac.get_library("missing")
    with pytest.raises(LibraryNotFound):
        ac["missing"]
    assert not ac.has_library("missing")
    lib = ac.get_library("new", create_if_missing=True)
    assert lib.name == "new"
    assert ac.has_library("new")
    assert ac.get_library("new", create_if_missing=True).name == "new"  # existing: opened


def test_get_library_options_need_create_if_missing(ac: Arctic) -> None:
    with pytest.raises(ArcticInvalidApiUsageException):
        ac.get_library("x", library_options=LibraryOptions(dynamic_schema=True))
    assert not ac.has_library("x")
    ac.create_library("y")
    with pytest.raises(ArcticInvalidApiUsageException):
        ac.get_library("y", library_options=LibraryOptions())


def test_get_library_create_if_missing_with_options(ac: Arctic) -> None:
    opts = LibraryOptions(dynamic_schema=True)
    lib = ac.get_library("x", create_if_missing=True, library_options=opts)
    assert lib.options() == effective_options(opts)
    # same options: fine; different options: MismatchingLibraryOptions
    assert ac.get_library("x", create_if_missing=True, library_options=opts).options() == effective_options(opts)
    with pytest.raises(MismatchingLibraryOptions):
        ac.get_library("x", create_if_missing=True, library_options=LibraryOptions())
    assert ac.get_library("x").options() == effective_options(opts)


def test_list_has_contains_getitem(ac: Arctic) -> None:
    assert ac.list_libraries() == []
    for n in ("b", "a", "c.d", "c/d"):
        ac.create_library(n)
    assert set(ac.list_libraries()) == {"a", "b", "c.d", "c/d"}
    assert "a" in ac and "zz" not in ac
    assert ac.has_library("c.d")
    assert isinstance(ac["b"], Library) and ac["b"].name == "b"


def test_dotted_and_slashed_library_names_are_separate(ac: Arctic) -> None:
    # ArcticDB on LMDB maps a.b and a/b to one directory (reference §1, "gotcha");
    # arcticlite escapes library names, so they are distinct libraries.
    a, b = ac.create_library("a.b"), ac.create_library("a/b")
    a.write("s", frame(2))
    assert b.list_symbols() == []
    assert not b.has_symbol("s")


def test_delete_library(ac: Arctic) -> None:
    lib = ac.create_library("lib")
    other = ac.create_library("other")
    lib.write("s", frame(3))
    other.write("s", frame(4))
    lib.snapshot("snap")
    ac.delete_library("lib")
    assert not ac.has_library("lib")
    assert ac.list_libraries() == ["other"]
    with pytest.raises(LibraryNotFound):
        ac.get_library("lib")
    ac.delete_library("lib")  # missing: a silent no-op
    ac.delete_library("never")
    # a new library of the same name starts empty; the other library is untouched
    again = ac.create_library("lib")
    assert again.list_symbols() == []
    assert again.list_snapshots() == {}
    assert not again.has_symbol("s")
    assert_frame_equal(other.read("s").data, frame(4))


def test_get_uri_returns_uri_unchanged(ac: Arctic, uri: str) -> None:
    assert ac.get_uri() == uri
    assert "Arctic(" in repr(ac)


def test_reopen_sees_libraries_and_data(ac: Arctic, uri: str, backend: str) -> None:
    lib = ac.create_library("lib", LibraryOptions(dynamic_schema=True))
    lib.write("s", frame(3), metadata={"m": 1})
    again = Arctic(uri)
    if backend == "memory":
        # each Arctic("mem://") is a separate, empty store (as in ArcticDB)
        assert again.list_libraries() == []
        return
    assert again.list_libraries() == ["lib"]
    lib2 = again["lib"]
    assert lib2.options() == effective_options(LibraryOptions(dynamic_schema=True))
    item = lib2.read("s")
    assert_frame_equal(item.data, frame(3))
    assert item.metadata == {"m": 1}


def test_modify_library_option(ac: Arctic, uri: str, backend: str) -> None:
    lib = ac.create_library("lib")
    ac.modify_library_option(lib, ModifiableLibraryOption.PRUNE_PREVIOUS_VERSIONS, True)
    assert lib.options().prune_previous_versions is True
    lib.write("s", frame(2))
    lib.write("s", frame(3))
    assert [v.version for v in lib.list_versions("s")] == [1]  # library default now prunes
    ac.modify_library_option(lib, ModifiableLibraryOption.ROWS_PER_SEGMENT, 7)
    assert ac.get_library("lib").options().rows_per_segment == 7
    if backend != "memory":
        assert Arctic(uri)["lib"].options().prune_previous_versions is True


def test_library_options_validation() -> None:
    with pytest.raises(UnsupportedLibraryOptionValue):
        LibraryOptions(rows_per_segment=0)
    with pytest.raises(UnsupportedLibraryOptionValue):
        LibraryOptions(columns_per_segment=-1)
    with pytest.raises(TypeError):
        LibraryOptions(True)  # type: ignore[misc]  # keyword-only, as in ArcticDB
    assert LibraryOptions() == LibraryOptions()
    assert LibraryOptions(dedup=True) != LibraryOptions()
    assert repr(LibraryOptions()) == (
        "LibraryOptions(dynamic_schema=False, dedup=False, rows_per_segment=100000, columns_per_segment=127, "
        "encoding_version=0, recursive_normalizers=False, prune_previous_versions=False)"
    )


def test_libraries_are_isolated(ac: Arctic) -> None:
    a, b = ac.create_library("a"), ac.create_library("b")
    a.write("s", frame(3))
    b.write("s", frame(5))
    a.snapshot("snap")
    assert_frame_equal(a.read("s").data, frame(3))
    assert_frame_equal(b.read("s").data, frame(5))
    assert b.list_snapshots() == {}
    ac.delete_library("a")
    assert_frame_equal(b.read("s").data, frame(5))


# -- URIs -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("uri", ["foo://bar", "", "lmdb", "azure-ish://x"])
def test_unknown_uri_raises_value_error(uri: str) -> None:
    with pytest.raises(ValueError, match="Invalid URI"):
        Arctic(uri)


def test_bad_uri_errors_are_arctic_exceptions() -> None:
    with pytest.raises(ArcticException):
        Arctic("nope://x")


def test_lmdb_uri_query_parameters(tmp_path: os.PathLike[str]) -> None:
    with pytest.raises(LmdbOptionsError, match="foo"):
        Arctic(f"lmdb://{tmp_path}/x?foo=1")
    with pytest.raises(LmdbOptionsError):
        Arctic(f"lmdb://{tmp_path}/x?map_size=lots")
    ac = Arctic(f"lmdb://{tmp_path}/x?map_size=64MB")
    ac.create_library("lib").write("s", frame(2))
    assert_frame_equal(ac["lib"].read("s").data, frame(2))


def test_lmdb_relative_path_resolves_against_cwd(tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    ac = Arctic("lmdb://rel")
    ac.create_library("lib").write("s", frame(2))
    assert os.path.isdir(os.path.join(os.fspath(tmp_path), "rel"))
    assert ac.get_uri() == "lmdb://rel"
    assert_frame_equal(Arctic(f"lmdb://{tmp_path}/rel")["lib"].read("s").data, frame(2))


def test_s3_uri_rejects_unknown_parameter() -> None:
    with pytest.raises(ValueError, match="bogus"):
        Arctic("s3://127.0.0.1:bucket?bogus=1")


def test_mem_uri_accepts_any_suffix_and_is_private() -> None:
    a, b = Arctic("mem://"), Arctic("mem://whatever")
    a.create_library("lib").write("s", pd.DataFrame({"x": [1]}))
    assert b.list_libraries() == []


def test_output_format_defaults(uri: str) -> None:
    import pyarrow as pa

    ac = Arctic(uri, output_format="pyarrow")
    lib = ac.create_library("lib")
    lib.write("s", frame(2))
    assert isinstance(lib.read("s").data, pa.Table)
    assert isinstance(lib.read("s", output_format="pandas").data, pd.DataFrame)  # per call wins
    pl = pytest.importorskip("polars")
    plib = Arctic(uri).get_library("p", create_if_missing=True, output_format="polars")
    plib.write("s", frame(2))
    assert isinstance(plib.read("s").data, pl.DataFrame)


def test_s3_uri_with_credentials_works_and_hides_them(s3_server: Any) -> None:
    """ArcticDB's ``s3://host:bucket?access=..&secret=..`` form: the store opens with those
    credentials, and neither ``get_uri()``, ``repr`` nor a scan plan's printout shows them."""
    uri = s3_server.new_bucket_uri(access="AKIAEXAMPLE", secret="hunter2")
    ac = Arctic(uri)
    lib = ac.get_library("creds", create_if_missing=True)
    lib.write("s", pd.DataFrame({"x": [1, 2]}))
    assert lib.read("s").data["x"].tolist() == [1, 2]
    shown = [ac.get_uri(), repr(ac), repr(lib), repr(lib._store)]
    assert not any("hunter2" in s or "AKIAEXAMPLE" in s for s in shown)
    assert "secret=***" in ac.get_uri()
    assert lib.scan("s").to_table().num_rows == 2


def test_options_report_the_effective_encoding_version() -> None:
    from arcticlite import EncodingVersion

    lib = Arctic("mem://").create_library("ev")
    assert lib.options().encoding_version == EncodingVersion.V1


def test_library_options_are_mutable_until_a_library_is_created_as_in_arcticdb() -> None:
    opts = LibraryOptions()
    opts.dynamic_schema = True
    ac = Arctic("mem://")
    lib = ac.create_library("m", opts)
    assert lib.options().dynamic_schema is True
    lib.options().dynamic_schema = False  # a copy: the library is not changed by it
    assert lib.options().dynamic_schema is True
    opts.rows_per_segment = 0
    with pytest.raises(UnsupportedLibraryOptionValue):
        ac.create_library("bad", opts)
    assert not ac.has_library("bad")


@pytest.mark.parametrize("name", ["_arctic", "_arcticlite_probe"])
def test_names_of_the_stores_own_records_are_refused(name: str) -> None:
    ac = Arctic("mem://")
    ac.create_library("kept")
    with pytest.raises(UserInputException, match="reserved"):
        ac.create_library(name)
    with pytest.raises(UserInputException, match="reserved"):
        ac.get_library(name, create_if_missing=True)
    assert ac.list_libraries() == ["kept"]  # the registry is intact
