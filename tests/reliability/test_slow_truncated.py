"""Slow and truncated S3 responses (issue 16's battery), injected by the moto server's
middleware after moto answered a GET:

* ``TRUNCATE``: the real headers (``Content-Length`` included) and half the body, then the
  connection closes;
* ``STALL``: half the body, then a pause longer than the client's read timeout (or, in one
  test, shorter: a slow answer that is still an answer);
* ``SHORT``: half the body with headers rewritten to say that is all (only the data's own
  checksums can tell).

Every read of every version, snapshot and listing then returns exactly what it returns without
faults, or raises a clean arcticlite error naming the storage key (``CorruptDataError`` for a
short body; ``StorageUnavailableError`` once the bounded retries are spent): never other data,
never a hang (each test runs under a timeout).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from arcticlite import Arctic, Library, LibraryOptions
from arcticlite.exceptions import CorruptDataError, StorageUnavailableError
from arcticlite.storage import RetryPolicy, S3Store, S3Uri, parse_uri
from arcticlite.testing.s3server import SHORT, STALL, TRUNCATE, S3TestServer

pytestmark = [pytest.mark.s3, pytest.mark.timeout(300)]

#: the client's read timeout in these tests (the URI's ``read_timeout=``), and a stall well past it
READ_TIMEOUT = 0.5
LONG_STALL = 3.0
PATIENT = RetryPolicy(max_attempts=12, base_delay=0.001, max_delay=0.02)
BRIEF = RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.01)


def df(n: int, start: str = "2024-01-01", base: int = 0) -> pd.DataFrame:
    return pd.DataFrame({"a": np.arange(base, base + n, dtype=np.int64), "b": np.linspace(0, 1, n),
                         "s": [f"r{i % 7}" for i in range(n)]},
                        index=pd.date_range(start, periods=n, freq="min"))


def connect(uri: str, retry: RetryPolicy) -> Arctic:
    parsed = parse_uri(uri + f"&read_timeout={READ_TIMEOUT}")
    assert isinstance(parsed, S3Uri) and parsed.read_timeout == READ_TIMEOUT
    return Arctic(uri, store=S3Store.from_uri(parsed, retry=retry))


def populate(lib: Library) -> None:
    lib.write("x", df(300), metadata={"v": 0})
    lib.append("x", df(50, "2024-01-02", 1000), metadata={"v": 1})
    lib.update("x", df(20, "2024-01-01 01:00", 5000))
    lib.write("y", df(40), metadata="plain")
    lib.snapshot("snap")
    lib.write("y", df(10, base=77))


def _frame(d: pd.DataFrame) -> tuple[Any, ...]:
    return (list(d.columns), [str(t) for t in d.dtypes], d.index.tolist(), [d[c].tolist() for c in d])


def reads(lib: Library) -> list[tuple[str, Callable[[], Any]]]:
    """Every read a user makes of the populated library, each as a thunk."""
    out: list[tuple[str, Callable[[], Any]]] = [
        ("list_symbols", lambda: sorted(lib.list_symbols())),
        ("list_snapshots", lambda: sorted(lib.list_snapshots())),
        ("list_versions", lambda: sorted((k.symbol, k.version) for k in lib.list_versions())),
    ]
    for sym, versions in (("x", 3), ("y", 2)):
        for v in range(versions):
            out.append((f"read {sym}@{v}", lambda s=sym, v=v: (_frame(lib.read(s, as_of=v).data),
                                                            lib.read(s, as_of=v).metadata)))
        out.append((f"tail {sym}", lambda s=sym: _frame(lib.tail(s, 5).data)))
        out.append((f"date_range {sym}", lambda s=sym: _frame(lib.read(
            s, date_range=(pd.Timestamp("2024-01-01 00:10"), pd.Timestamp("2024-01-01 00:20")), columns=["a"]).data)))
        out.append((f"snapshot {sym}", lambda s=sym: _frame(lib.read(s, as_of="snap").data)))
    return out


@pytest.fixture
def populated(s3_server: S3TestServer) -> tuple[str, dict[str, Any]]:
    """A bucket with two symbols (several versions, small segments), a snapshot, and what every
    read returns without faults."""
    uri = s3_server.new_bucket_uri()
    lib = connect(uri, PATIENT).create_library("lib", LibraryOptions(rows_per_segment=64))
    populate(lib)
    return uri, {name: fn() for name, fn in reads(lib)}


def _kind(exc: Exception) -> str:
    return "CorruptDataError" if isinstance(exc, CorruptDataError) else "StorageUnavailableError"


def run_reads(uri: str, retry: RetryPolicy, truth: dict[str, Any]) -> Counter[str]:
    """Every read from a fresh client: ``same`` or the clean error's class name; anything else
    (other data, another exception) fails the test."""
    outcomes: Counter[str] = Counter()
    try:
        lib = connect(uri, retry)["lib"]
    except (CorruptDataError, StorageUnavailableError) as exc:
        assert "'lib/" in str(exc) or "'_arctic/" in str(exc), exc  # names the key
        outcomes[_kind(exc)] += 1
        return outcomes
    for name, fn in reads(lib):
        try:
            got = fn()
        except (CorruptDataError, StorageUnavailableError) as exc:
            assert "'lib/" in str(exc) or "'_arctic/" in str(exc), (name, exc)  # names the key
            outcomes[_kind(exc)] += 1
            continue
        assert got == truth[name], name  # never other data
        outcomes["same"] += 1
    return outcomes


@pytest.mark.parametrize("fault", ["truncated", "stalled"])
def test_cut_or_stalled_responses_at_p_0_2_are_retried_and_read_exactly(
        s3_server: S3TestServer, populated: tuple[str, dict[str, Any]], fault: str) -> None:
    uri, truth = populated
    already = s3_server.injected["after"]
    status = TRUNCATE if fault == "truncated" else STALL
    s3_server.set_fault_rates(after=0.2, methods={"GET"}, after_statuses=(status,), stall_seconds=LONG_STALL, seed=3)
    outcomes = run_reads(uri, PATIENT, truth)
    injected = s3_server.injected["after"] - already
    s3_server.clear_faults()
    print(f"\n{fault} at p = 0.2: {injected} faults, outcomes {dict(outcomes)}")
    assert injected > 0
    assert outcomes == Counter(same=len(truth))


def test_a_slow_answer_within_the_timeout_is_an_answer(
        s3_server: S3TestServer, populated: tuple[str, dict[str, Any]]) -> None:
    uri, truth = populated
    s3_server.set_fault_rates(after=0.2, methods={"GET"}, after_statuses=(STALL,), stall_seconds=READ_TIMEOUT / 5)
    outcomes = run_reads(uri, BRIEF, truth)
    assert s3_server.injected["after"] > 0
    s3_server.clear_faults()
    assert outcomes == Counter(same=len(truth))


@pytest.mark.parametrize("fault", ["truncated", "stalled"])
def test_when_every_answer_is_cut_or_stalled_reads_fail_cleanly_naming_the_key(
        s3_server: S3TestServer, populated: tuple[str, dict[str, Any]], fault: str) -> None:
    uri, truth = populated
    lib = connect(uri, BRIEF)["lib"]
    lib.list_symbols()  # opened (the library config read) before the faults
    status = TRUNCATE if fault == "truncated" else STALL
    s3_server.set_fault_rates(after=1.0, methods={"GET"}, after_statuses=(status,), stall_seconds=LONG_STALL)
    try:
        for name, fn in [("read", lambda: lib.read("x")), ("tail", lambda: lib.tail("y", 3)),
                         ("list_versions", lambda: lib.list_versions("x")),
                         ("snapshot", lambda: lib.read("y", as_of="snap"))]:
            with pytest.raises(StorageUnavailableError, match=r"'lib/.*S3 did not answer after 3 attempts") as info:
                fn()
            assert "conditional write" not in str(info.value), name  # a read: nothing may have landed
    finally:
        s3_server.clear_faults()
    assert run_reads(uri, BRIEF, truth) == Counter(same=len(truth))  # and nothing was changed


def test_short_bodies_are_caught_by_checksums(
        s3_server: S3TestServer, populated: tuple[str, dict[str, Any]]) -> None:
    """Half the body with headers that say it is whole: HTTP cannot tell, so each read either
    returns exactly the data or raises ``CorruptDataError`` naming the key."""
    uri, truth = populated
    already = s3_server.injected["after"]
    total: Counter[str] = Counter()
    for seed in range(6):
        s3_server.set_fault_rates(after=0.15, methods={"GET"}, after_statuses=(SHORT,), seed=seed)
        total += run_reads(uri, BRIEF, truth)
    injected = s3_server.injected["after"] - already
    s3_server.clear_faults()
    print(f"\nshort bodies: {injected} faults, outcomes {dict(total)}")
    assert injected > 0 and total["CorruptDataError"] > 0 and total["same"] > 0
    assert set(total) <= {"same", "CorruptDataError"}


def test_read_timeout_is_taken_from_the_uri(s3_server: S3TestServer) -> None:
    store = S3Store.from_uri(parse_uri(s3_server.new_bucket_uri(read_timeout="7.5", connect_timeout="2")))  # type: ignore[arg-type]
    config = store._s3().meta.config
    assert (config.read_timeout, config.connect_timeout) == (7.5, 2.0)
    default = S3Store.from_uri(parse_uri(s3_server.new_bucket_uri()))  # type: ignore[arg-type]
    assert default._s3().meta.config.read_timeout == 60


@pytest.mark.parametrize("value", ["0", "-1", "soon", "inf"])
def test_a_bad_timeout_in_the_uri_is_refused(value: str) -> None:
    from arcticlite.exceptions import StorageUriError

    with pytest.raises(StorageUriError, match=f"read_timeout={value!r} is not a number of seconds"):
        parse_uri(f"s3://127.0.0.1:bucket?port=9&read_timeout={value}")
