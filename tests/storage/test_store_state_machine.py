"""Each backend behaves like a dict under random operation sequences (Hypothesis)."""

from __future__ import annotations

import itertools
import os

import pytest

from arcticlite.storage import LmdbStore, MemoryStore, S3Store
from arcticlite.testing import S3TestServer, run_state_machine


@pytest.mark.memory
def test_memory_store_matches_dict_model() -> None:
    run_state_machine(MemoryStore, max_examples=60, steps=30)


@pytest.mark.lmdb
def test_lmdb_store_matches_dict_model(tmp_path: os.PathLike[str]) -> None:
    counter = itertools.count()
    run_state_machine(
        lambda: LmdbStore(os.path.join(tmp_path, f"sm{next(counter)}"), map_size=1 << 20),
        max_examples=40,
        steps=30,
    )


@pytest.mark.s3
def test_s3_store_matches_dict_model(s3_server: S3TestServer) -> None:
    bucket = s3_server.make_bucket()
    counter = itertools.count()

    def fresh() -> S3Store:  # a fresh prefix per example: an empty store, cheaply
        return S3Store(
            bucket, prefix=f"example-{next(counter)}", endpoint_url=s3_server.endpoint_url
        )

    run_state_machine(fresh, max_examples=8, steps=25)


class _LastWriterWinsStore(MemoryStore):
    """A broken store: its compare-and-swap ignores ``expected`` (ArcticDB's ref behaviour)."""

    def compare_and_swap(self, key: str, expected: object, new: bytes) -> bool:  # type: ignore[override]
        self.write(key, new)
        return True


@pytest.mark.memory
def test_state_machine_catches_a_store_that_ignores_conditions() -> None:
    with pytest.raises(AssertionError, match="compare_and_swap"):
        run_state_machine(_LastWriterWinsStore, max_examples=30, steps=20)
