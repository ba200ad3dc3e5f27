"""Fixtures for the differential tests: the same store opened by ArcticDB and by arcticlite.

``engines`` (module scope, parametrised over ``memory`` / ``lmdb``)
    An :class:`EnginePair`: one ``arcticdb.Arctic`` and one ``arcticlite.Arctic`` on the same
    kind of backend (separate stores: ``mem://`` twice, or two LMDB directories).
``library_pair``
    A fresh, empty library of the same name in both engines, deleted after the test.

Skipped as a whole where ArcticDB (``arcticdb``) has no wheel or is not installed.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

_counter = itertools.count()


@dataclass
class EnginePair:
    backend: str
    arcticdb: Any
    arcticlite: Any


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("memory", marks=pytest.mark.memory),
        pytest.param("lmdb", marks=pytest.mark.lmdb),
    ],
)
def engines(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EnginePair]:
    adb = pytest.importorskip("arcticdb")
    from arcticdb.config import get_config_int, set_config_int

    import arcticlite

    # ArcticDB waits StorageLock.WaitMs (1 s) after taking the storage lock it uses to compact
    # the symbol list: once per fresh library, on the first list_symbols / snapshot. Nothing
    # else writes to these stores, so a short wait is safe and keeps each sequence fast.
    previous_wait = get_config_int("StorageLock.WaitMs")
    set_config_int("StorageLock.WaitMs", 5)
    request.addfinalizer(lambda: set_config_int("StorageLock.WaitMs", previous_wait or 1000))

    backend = str(request.param)
    if backend == "memory":
        uri_adb = uri_lite = "mem://"
    else:
        root = tmp_path_factory.mktemp("compat")
        uri_adb = f"lmdb://{os.path.join(os.fspath(root), 'arcticdb')}"
        uri_lite = f"lmdb://{os.path.join(os.fspath(root), 'arcticlite')}"
    yield EnginePair(backend, adb.Arctic(uri_adb), arcticlite.Arctic(uri_lite))


@contextlib.contextmanager
def paired_libraries(engines: EnginePair, name: str, dynamic_schema: bool = False) -> Iterator[tuple[Any, Any]]:
    """``(arcticdb_library, arcticlite_library)`` named ``name``, created with the same
    ``dynamic_schema`` in both engines, deleted afterwards."""
    import arcticdb

    import arcticlite

    libs = (
        engines.arcticdb.create_library(name, library_options=arcticdb.LibraryOptions(dynamic_schema=dynamic_schema)),
        engines.arcticlite.create_library(name, library_options=arcticlite.LibraryOptions(dynamic_schema=dynamic_schema)),
    )
    try:
        yield libs
    finally:
        for ac in (engines.arcticdb, engines.arcticlite):
            try:
                ac.delete_library(name)
            except Exception:  # noqa: BLE001 - cleanup must not mask the test's outcome
                pass


@pytest.fixture
def library_pair(engines: EnginePair) -> Iterator[tuple[Any, Any]]:
    """``(arcticdb_library, arcticlite_library)``: fresh and empty, deleted afterwards."""
    with paired_libraries(engines, f"diff_{next(_counter)}") as libs:
        yield libs
