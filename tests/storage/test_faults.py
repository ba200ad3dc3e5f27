"""Fault injection and retries: what lands when a call fails, and what the caller learns."""

from __future__ import annotations

import logging

import pytest

from arcticlite.exceptions import StorageUnavailableError
from arcticlite.storage import (
    FaultInjectingStore,
    LoggingStore,
    MemoryStore,
    RetryingStore,
    RetryPolicy,
)

pytestmark = pytest.mark.memory

TINY = RetryPolicy(max_attempts=40, base_delay=0.0, max_delay=0.0)


def test_fault_before_does_not_apply() -> None:
    inner = MemoryStore()
    store = FaultInjectingStore(inner, seed=0, error_rate=1.0)
    with pytest.raises(StorageUnavailableError, match="not applied"):
        store.write("k", b"v")
    assert not inner.exists("k")


def test_fault_after_applies_but_loses_the_answer() -> None:
    inner = MemoryStore()
    store = FaultInjectingStore(inner, seed=0, after_rate=1.0)
    with pytest.raises(StorageUnavailableError, match="landed"):
        store.write_if_absent("ver/1", b"mine")
    assert bytes(inner.read("ver/1")) == b"mine"  # a reader-back learns it won
    with pytest.raises(StorageUnavailableError):
        store.compare_and_swap("ver/1", b"mine", b"next")
    assert bytes(inner.read("ver/1")) == b"next"


def test_only_selected_operations_fail() -> None:
    store = FaultInjectingStore(MemoryStore(), seed=0, error_rate=1.0, ops={"write_if_absent"})
    store.write("k", b"v")
    assert bytes(store.read("k")) == b"v"
    with pytest.raises(StorageUnavailableError):
        store.write_if_absent("k2", b"v")


def test_fault_schedule_replays_from_its_seed() -> None:
    def pattern(seed: int) -> list[bool]:
        store = FaultInjectingStore(MemoryStore(), seed=seed, error_rate=0.3)
        out = []
        for i in range(100):
            try:
                store.write(f"k{i}", b"")
                out.append(True)
            except StorageUnavailableError:
                out.append(False)
        return out

    assert pattern(5) == pattern(5)
    assert pattern(5) != pattern(6)
    assert 10 < pattern(5).count(False) < 50


def test_bad_rates_and_ops_are_refused() -> None:
    with pytest.raises(ValueError, match="error_rate"):
        FaultInjectingStore(MemoryStore(), seed=0, error_rate=1.5)
    with pytest.raises(ValueError, match="unknown operations"):
        FaultInjectingStore(MemoryStore(), seed=0, ops={"wrte"})


def test_retrying_store_resolves_lost_responses_exactly_once() -> None:
    inner = MemoryStore()
    faulty = FaultInjectingStore(inner, seed=42, error_rate=0.3, after_rate=0.3)
    store = RetryingStore(faulty, TINY)
    wins = [store.write_if_absent(f"ver/{i}", f"mine-{i}".encode()) for i in range(200)]
    assert wins == [True] * 200  # every create reported won, though many answers were lost
    assert faulty.injected["after"] > 30
    losses = [store.write_if_absent(f"ver/{i}", b"other") for i in range(200)]
    assert losses == [False] * 200
    assert all(bytes(inner.read(f"ver/{i}")) == f"mine-{i}".encode() for i in range(200))


def test_retrying_store_gives_up_after_its_budget() -> None:
    store = RetryingStore(
        FaultInjectingStore(MemoryStore(), seed=0, error_rate=1.0),
        RetryPolicy(max_attempts=3, base_delay=0),
    )
    with pytest.raises(StorageUnavailableError):
        store.read("k")


def test_retry_policy_backoff_is_bounded_full_jitter() -> None:
    import random

    policy = RetryPolicy(base_delay=0.1, max_delay=1.0)
    rng = random.Random(0)
    delays = [policy.delay(a, rng) for a in range(10) for _ in range(50)]
    assert all(0.0 <= d <= 1.0 for d in delays)
    assert max(policy.delay(0, rng) for _ in range(100)) <= 0.1
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)


def test_logging_store_logs_operations_but_never_values(caplog: pytest.LogCaptureFixture) -> None:
    store = LoggingStore(MemoryStore())
    with caplog.at_level(logging.DEBUG, logger="arcticlite.storage"):
        store.write("lib/ref", b"secret-payload")
        store.write_if_absent("lib/ref", b"secret-payload")
        with pytest.raises(KeyError):
            store.read("lib/missing")
    text = caplog.text
    assert "write 'lib/ref'" in text and "write_if_absent 'lib/ref' -> False" in text
    assert "KeyNotFoundException" in text
    assert "secret-payload" not in text
