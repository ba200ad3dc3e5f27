"""Shared fixtures for every test package.

Backends
--------
``backend``
    Parametrised over ``"memory"``, ``"lmdb"``, ``"s3"`` (marked ``memory`` / ``lmdb`` / ``s3``,
    so ``pytest -m "not s3"`` skips S3).
``uri``
    A fresh, empty store's URI for the current ``backend``: ``mem://``, ``lmdb://<tmp_path>/…``,
    or ``s3://127.0.0.1:<fresh bucket>?port=<port>&region=us-east-1`` (ArcticDB's form; HTTP).
    Use it to build an ``Arctic(uri)``; ``open_store(uri)`` re-opens the *same* store (except
    ``mem://``, which is new on every open).
``store``
    ``open_store(uri)``, closed after the test.
``store_uri``
    Same as ``uri``; the conformance suite uses it to re-open the store in other processes.

S3
--
``s3_server`` (session)
    An :class:`arcticlite.testing.S3TestServer`: moto on 127.0.0.1 at a free port, requests
    serialised (exact conditional writes). ``s3_server.endpoint_url``,
    ``s3_server.new_bucket_uri()`` (fresh bucket → ``s3://`` URI), ``s3_server.make_bucket()``,
    ``s3_server.client()``, and fault injection (``fail_next``, ``set_fault_rates``,
    ``clear_faults``). Faults are cleared after every test.

``AWS_*`` variables are set to dummy values at import time, before any boto3 use, so no test
can reach a real cloud account.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

for _name, _value in {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_EC2_METADATA_DISABLED": "true",
}.items():
    os.environ[_name] = _value
os.environ.pop("AWS_PROFILE", None)
os.environ.pop("AWS_ENDPOINT_URL", None)
os.environ.pop("AWS_ENDPOINT_URL_S3", None)

from arcticlite.storage import KVStore, open_store  # noqa: E402
from arcticlite.testing.s3server import S3TestServer  # noqa: E402

BACKENDS = [
    pytest.param("memory", marks=pytest.mark.memory),
    pytest.param("lmdb", marks=pytest.mark.lmdb),
    pytest.param("s3", marks=pytest.mark.s3),
]


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3TestServer]:
    """moto's S3 on 127.0.0.1 (free port), one request at a time, for the whole session."""
    server = S3TestServer(serialise=True).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_uri(s3_server: S3TestServer) -> Iterator[str]:
    """A fresh bucket on the test server, as an ``s3://`` URI; faults cleared afterwards."""
    yield s3_server.new_bucket_uri()
    s3_server.clear_faults()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """``"memory"``, ``"lmdb"`` or ``"s3"``."""
    return str(request.param)


@pytest.fixture
def uri(backend: str, tmp_path: os.PathLike[str], request: pytest.FixtureRequest) -> str:
    """URI of a fresh, empty store on ``backend``."""
    if backend == "memory":
        return "mem://"
    if backend == "lmdb":
        return f"lmdb://{os.path.join(os.fspath(tmp_path), 'lmdb')}"
    return str(request.getfixturevalue("s3_uri"))


@pytest.fixture
def store_uri(uri: str) -> str:
    """The URI of ``store`` (to re-open the same store, e.g. in another process)."""
    return uri


@pytest.fixture
def store(uri: str) -> Iterator[KVStore]:
    """``open_store(uri)``: a fresh, empty store on ``backend``; closed after the test."""
    s = open_store(uri)
    try:
        yield s
    finally:
        s.close()
