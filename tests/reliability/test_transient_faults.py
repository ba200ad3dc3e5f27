"""Transient S3 faults (issue 16's battery): 5xx, throttling, conflicts and connection resets
injected by the moto server's middleware on every request.

* At p = 0.05 and 0.2 every library operation of a mixed workload succeeds within the store's
  bounded retries, and every read returns exactly what the same workload reads without faults.
* When S3 keeps failing (every request refused), each mutation raises
  ``StorageUnavailableError`` and the bucket is byte-identical afterwards; when every write
  lands but loses its answer, the operation fails, and afterwards the symbol reads as before or
  as after the operation, never a mix, and ``gc`` removes whatever it left behind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from storeimage import StoreImage

from arcticlite import Arctic, Library
from arcticlite.exceptions import CommitStateUnknownError, StorageException, StorageUnavailableError
from arcticlite.storage import RetryPolicy, S3Store, S3Uri, parse_uri
from arcticlite.testing.s3server import RESET, S3TestServer

pytestmark = pytest.mark.s3

#: Per-call retry budget of the workload's store (12 attempts; at p = 0.2 a call fails 12
#: times in a row with probability < 1e-6).
PATIENT = RetryPolicy(max_attempts=12, base_delay=0.001, max_delay=0.05)
T0 = pd.Timestamp("2024-01-01")


def df(start: int, n: int, base: int = 0) -> pd.DataFrame:
    return pd.DataFrame({"a": np.arange(base, base + n, dtype=np.int64), "b": np.linspace(0, 1, n)},
                        index=pd.date_range(T0 + pd.Timedelta(days=start), periods=n))


def connect(uri: str, retry: RetryPolicy = PATIENT) -> Arctic:
    parsed = parse_uri(uri)
    assert isinstance(parsed, S3Uri)
    return Arctic(uri, store=S3Store.from_uri(parsed, retry=retry))


def workload(lib: Library) -> list[Any]:
    """Every kind of library operation; returns what its reads saw."""
    seen: list[Any] = []
    lib.write("x", df(0, 20))
    lib.append("x", df(20, 5, 100))
    lib.update("x", df(3, 4, 1000))
    lib.delete_data_in_range("x", (T0 + pd.Timedelta(days=10), T0 + pd.Timedelta(days=12)))
    lib.write_metadata("x", {"source": "feed"})
    lib.write("y", df(0, 8))
    lib.snapshot("snap", metadata={"note": 1})
    lib.write("y", df(0, 3, 50))
    lib.stage("z", df(0, 4))
    lib.stage("z", df(4, 4, 10))
    lib.finalize_staged_data("z")
    for k in range(6):
        lib.append("z", df(8 + k, 1, 20 + k))
    lib.compact_data("z")
    lib.delete("y", versions=[0])
    seen.append(lib.read("x").data)
    seen.append(lib.read("x", as_of=0).data)
    seen.append(lib.read("y", as_of="snap").data)
    seen.append(lib.read("z").data)
    seen.append(lib.read("x").metadata)
    seen.append(lib.read_metadata("x", as_of="snap").metadata)
    seen.append(lib.tail("z", 3).data)
    seen.append(sorted(lib.list_symbols()))
    seen.append(sorted((k.symbol, k.version) for k in lib.list_versions()))
    seen.append(lib.list_snapshots())
    lib.delete_snapshot("snap")
    lib.delete("y")
    seen.append(sorted(lib.list_symbols()))
    seen.append(lib.gc(grace_period=0).unreachable)
    return seen


def same(got: list[Any], want: list[Any]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        if isinstance(w, pd.DataFrame):
            pd.testing.assert_frame_equal(g, w, check_freq=False)
        else:
            assert g == w


@pytest.mark.parametrize("p", [0.05, 0.2])
def test_every_operation_succeeds_through_transient_faults(s3_server: S3TestServer, p: float) -> None:
    """Battery: the workload at fault rate ``p`` before (503 SlowDown, 500, 409 conflict, a
    connection reset: nothing applied) and ``p / 2`` after (500 or a reset once moto applied
    it) on every request: 0 failed operations, every read equal to the fault-free run."""
    want = workload(connect(s3_server.new_bucket_uri()).create_library("lib"))
    lib = connect(s3_server.new_bucket_uri()).create_library("lib")
    s3_server.set_fault_rates(before=p, after=p / 2, seed=int(p * 100),
                              before_statuses=(503, 500, 409, RESET), after_statuses=(500, RESET))
    try:
        got = workload(lib)
        injected = s3_server.injected
    finally:
        s3_server.clear_faults()
    print(f"\np={p}: faults injected {injected}")
    assert injected["before"] > 0 and injected["after"] > 0
    same(got, want)


MUTATIONS: dict[str, Callable[[Library], Any]] = {
    "write": lambda lib: lib.write("x", df(0, 6, 7)),
    "append": lambda lib: lib.append("x", df(30, 3, 9)),
    "update": lambda lib: lib.update("x", df(2, 2, 5)),
    "delete_data_in_range": lambda lib: lib.delete_data_in_range("x", (T0, T0 + pd.Timedelta(days=3))),
    "write_metadata": lambda lib: lib.write_metadata("x", {"m": 2}),
    "delete_version": lambda lib: lib.delete("x", versions=[0]),
    "delete": lambda lib: lib.delete("x"),
    "snapshot": lambda lib: lib.snapshot("s2"),
    "finalize": lambda lib: lib.finalize_staged_data("st"),
    "compact_data": lambda lib: lib.compact_data("x"),
}


def prepared(uri: str) -> Library:
    lib = connect(uri).create_library("lib")
    lib.write("x", df(0, 10))
    for k in range(3):
        lib.append("x", df(10 + k, 1, k))
    lib.stage("st", df(0, 3))
    return lib


def state(lib: Library) -> Any:
    """What a user sees: the symbols and, per symbol, each live version's data."""
    out = {}
    for sym in sorted(lib.list_symbols()):
        out[sym] = {v.version: lib.read(sym, as_of=v.version).data.to_dict()
                    for v in lib.list_versions(sym)}
    return out, sorted(lib.list_snapshots()), sorted(lib.get_staged_symbols())


@pytest.mark.parametrize("op", sorted(MUTATIONS))
def test_an_operation_s3_keeps_refusing_fails_cleanly(s3_server: S3TestServer, op: str) -> None:
    """Every request refused (503 SlowDown, never applied): the mutation raises
    ``StorageUnavailableError`` naming the request, and the bucket is byte-identical."""
    uri = s3_server.new_bucket_uri()
    prepared(uri)
    lib = connect(uri, RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.002))["lib"]
    before = StoreImage.of(uri)
    s3_server.set_fault_rates(before=1.0)
    try:
        with pytest.raises(StorageUnavailableError, match="did not answer after 3 attempts"):
            MUTATIONS[op](lib)
    finally:
        s3_server.clear_faults()
    StoreImage.of(uri).assert_same(before)


@pytest.mark.parametrize("op", sorted(MUTATIONS))
def test_an_operation_whose_answers_are_all_lost_is_all_or_nothing(s3_server: S3TestServer, op: str) -> None:
    """Every write lands and loses its answer (500 after moto applied it; reads answer): the
    mutation fails or succeeds, and afterwards a fresh client sees the state before or the state
    after it -- never a mix -- and ``gc`` leaves no unreachable key behind."""
    uri = s3_server.new_bucket_uri()
    ref = s3_server.new_bucket_uri()
    prepared(uri)
    reference = prepared(ref)
    old = state(reference)
    MUTATIONS[op](reference)
    new = state(reference)
    lib = connect(uri, RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.002))["lib"]
    s3_server.set_fault_rates(after=1.0, methods={"PUT", "POST", "DELETE"})
    try:
        MUTATIONS[op](lib)
    except (StorageException, CommitStateUnknownError):
        pass
    finally:
        s3_server.clear_faults()
    fresh = connect(uri)["lib"]
    got = state(fresh)
    assert got in (old, new), op
    fresh.gc(grace_period=0)
    assert fresh.gc(grace_period=0, dry_run=True).unreachable == 0
    assert state(fresh) == got
