"""Fixtures of the engine tests (the backend fixtures ``backend`` / ``uri`` live in tests/conftest.py).

``ac``
    ``Arctic(uri)`` on the current backend (memory / LMDB / moto S3).
``library_options``
    Feature fixture, orthogonal to the backend: ``LibraryOptions()`` unless a test is
    parametrised indirectly with ``enginehelpers.ALL_OPTIONS`` (``@all_options``), which adds a
    dynamic-schema library and a library with tiny row and column slices (2 × 2), so that the
    multi-segment paths of every operation are exercised.
``lib``
    ``ac.create_library("lib", library_options)``.

Helpers (``frame``, ``assert_frame_equal``, ``versions_of``) live in ``enginehelpers.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from arcticlite import Arctic, Library, LibraryOptions


@pytest.fixture
def library_options(request: pytest.FixtureRequest) -> LibraryOptions:
    """The options of ``lib`` (``LibraryOptions()`` unless parametrised indirectly)."""
    return getattr(request, "param", LibraryOptions())


@pytest.fixture
def ac(uri: str) -> Iterator[Arctic]:
    """A connection to a fresh store on the current backend."""
    yield Arctic(uri)


@pytest.fixture
def lib(ac: Arctic, library_options: LibraryOptions) -> Library:
    """A fresh library ``"lib"`` created with ``library_options``."""
    return ac.create_library("lib", library_options)
