"""Fixtures of the reliability battery (docs/reliability.md); the backend fixtures ``backend`` /
``uri`` / ``s3_server`` live in tests/conftest.py.

``ac``
    ``Arctic(uri)`` on the current backend (LMDB / moto S3; ``mem://`` cannot be re-opened).
``image``
    ``image(uri)`` -> :class:`storeimage.StoreImage`, every key and value of the store (and,
    for LMDB, the digest of its data file), to assert that an operation changed nothing.

Helpers live in ``storeimage.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from storeimage import StoreImage

from arcticlite import Arctic


@pytest.fixture(params=[pytest.param("lmdb", marks=pytest.mark.lmdb), pytest.param("s3", marks=pytest.mark.s3)])
def backend(request: pytest.FixtureRequest) -> str:
    """``"lmdb"`` or ``"s3"``: stores a second connection can open (not ``mem://``)."""
    return str(request.param)


@pytest.fixture
def ac(uri: str) -> Arctic:
    """A writable connection to a fresh store."""
    return Arctic(uri)


@pytest.fixture
def image() -> Callable[[str], StoreImage]:
    return StoreImage.of
