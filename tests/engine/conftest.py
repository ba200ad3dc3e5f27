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
from typing import Any

import pytest

from arcticlite import Arctic, Library, LibraryOptions


@pytest.fixture
def library_options(request: pytest.FixtureRequest) -> LibraryOptions:
    """The options of ``lib`` (``LibraryOptions()`` unless parametrised indirectly)."""
    return getattr(request, "param", LibraryOptions())


@pytest.fixture(scope="session")
def s3_client(s3_server: Any) -> Any:
    """One boto3 client for the test server, shared by the ``ac`` fixtures of S3 tests: each
    new boto3 session parses botocore's S3 model (~0.6 s), which would dominate the S3 suite.
    Tests that call ``Arctic(uri)`` themselves still exercise the default client path."""
    from arcticlite.storage import S3Store, parse_uri

    return S3Store.from_uri(parse_uri(s3_server.new_bucket_uri()))._s3()  # type: ignore[arg-type]


@pytest.fixture
def ac(uri: str, backend: str, request: pytest.FixtureRequest) -> Iterator[Arctic]:
    """A connection to a fresh store on the current backend."""
    if backend == "s3":
        from arcticlite.storage import S3Store, parse_uri

        store = S3Store.from_uri(parse_uri(uri), client=request.getfixturevalue("s3_client"))  # type: ignore[arg-type]
        yield Arctic(uri, store=store)
        return
    yield Arctic(uri)


@pytest.fixture
def lib(ac: Arctic, library_options: LibraryOptions) -> Library:
    """A fresh library ``"lib"`` created with ``library_options``."""
    return ac.create_library("lib", library_options)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the non-default ``library_options`` (dynamic schema, tiny tiles) on memory and LMDB
    only: they exercise the engine's paths, which do not depend on the backend, and S3 round
    trips are the slow part of the suite. Every method still runs on S3 with default options."""
    keep, drop = [], []
    for item in items:
        cs = getattr(item, "callspec", None)
        if (cs is not None and cs.params.get("backend") == "s3" and "library_options" in cs.params
                and cs.params["library_options"] != LibraryOptions()):
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
