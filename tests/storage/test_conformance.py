"""Every backend and every wrapper store passes the same conformance suite."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from arcticlite.storage import (
    FaultInjectingStore,
    KVStore,
    LatencyStore,
    LmdbStore,
    LoggingStore,
    MemoryStore,
    RetryingStore,
    RetryPolicy,
)
from arcticlite.testing import StoreConformance


class TestBackends(StoreConformance):
    """memory, LMDB and S3 (moto), through the ``store`` / ``uri`` fixtures of tests/conftest.py."""

    @pytest.fixture
    def store_uri(self, uri: str) -> str:
        return uri


def _inner(kind: str, tmp_path: os.PathLike[str]) -> KVStore:
    return MemoryStore() if kind == "memory" else LmdbStore(os.path.join(tmp_path, "lmdb"))


class TestFaultInjectingStoreWithoutFaults(StoreConformance):
    """With zero rates the fault injector is transparent."""

    large_value_size = 1 << 20  # the 20 MB case runs on the plain backends

    @pytest.fixture(params=["memory", "lmdb"])
    def store(
        self, request: pytest.FixtureRequest, tmp_path: os.PathLike[str]
    ) -> Iterator[KVStore]:
        with FaultInjectingStore(_inner(request.param, tmp_path), seed=1) as s:
            yield s


class TestRetryingStoreOverFaults(StoreConformance):
    """A store failing 20 % of calls before and 10 % after they land, behind bounded
    retries with read-back resolution, still behaves like a store."""

    exact_conditional_results = False
    large_value_size = 1 << 20
    thread_race_rounds = 50

    @pytest.fixture(params=["memory", "lmdb"])
    def store(
        self, request: pytest.FixtureRequest, tmp_path: os.PathLike[str]
    ) -> Iterator[KVStore]:
        faulty = FaultInjectingStore(
            _inner(request.param, tmp_path), seed=7, error_rate=0.2, after_rate=0.1
        )
        policy = RetryPolicy(max_attempts=30, base_delay=0.0005, max_delay=0.005)
        with RetryingStore(faulty, policy) as s:
            yield s


class TestLoggingAndLatencyStores(StoreConformance):
    """The logging and latency wrappers change nothing a caller can observe but time."""

    large_value_size = 1 << 20
    thread_race_rounds = 30

    @pytest.fixture(params=["logging", "latency"])
    def store(self, request: pytest.FixtureRequest) -> Iterator[KVStore]:
        inner = MemoryStore()
        wrapped: KVStore = (
            LoggingStore(inner) if request.param == "logging" else LatencyStore(inner, high=0.0002)
        )
        with wrapped as s:
            yield s
