"""A Hypothesis state machine that checks a store against a ``dict`` model.

Every rule applies one operation to the store and to the model and compares what the store
returned with what the model predicts; :func:`run_state_machine` runs it on fresh stores::

    def test_lmdb_matches_model(tmp_path_factory):
        run_state_machine(lambda: LmdbStore(tmp_path_factory.mktemp("sm")))
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from arcticlite.exceptions import KeyNotFoundException
from arcticlite.storage import KVStore

__all__ = ["KVStoreStateMachine", "run_state_machine"]

#: Keys that exercise prefixes, unicode, spaces and LMDB's 511-byte key limit.
KEYS = [
    "a",
    "a/",
    "a/b",
    "a/b/c",
    "a/bc",
    "ab",
    "b/ü x",
    "b/😀",
    "l/" + "k" * 600,
    "l/" + "k" * 600 + "/2",
]
PREFIXES = ["", "a", "a/", "a/b", "b/", "l/", "l/" + "k" * 600, "zz"]

keys = st.sampled_from(KEYS)
values = st.binary(max_size=64)


class KVStoreStateMachine(RuleBasedStateMachine):
    """Random sequences of store operations, checked against a dict.

    Subclasses (or :func:`run_state_machine`) set :attr:`make_store`, called once per example
    to build a fresh, empty store.
    """

    make_store: Callable[[], KVStore]

    def __init__(self) -> None:
        super().__init__()
        self.store = type(self).make_store()
        self.model: dict[str, bytes] = {}

    def teardown(self) -> None:
        self.store.close()

    @rule(key=keys, value=values)
    def write(self, key: str, value: bytes) -> None:
        self.store.write(key, value)
        self.model[key] = value

    @rule(items=st.dictionaries(keys, values, max_size=4))
    def write_many(self, items: dict[str, bytes]) -> None:
        self.store.write_many(items)
        self.model.update(items)

    @rule(key=keys, value=values)
    def write_if_absent(self, key: str, value: bytes) -> None:
        expected = key not in self.model
        assert self.store.write_if_absent(key, value) is expected
        if expected:
            self.model[key] = value

    @rule(key=keys, new=values, stale=values, mode=st.sampled_from(["current", "stale", "none"]))
    def compare_and_swap(self, key: str, new: bytes, stale: bytes, mode: str) -> None:
        current = self.model.get(key)
        expected = current if mode == "current" else (None if mode == "none" else stale)
        should = expected == current if expected is not None else current is None
        assert self.store.compare_and_swap(key, expected, new) is should
        if should:
            self.model[key] = new

    @rule(
        create=st.dictionaries(keys, values, max_size=2),
        put=st.dictionaries(keys, values, max_size=2),
    )
    def commit(self, create: dict[str, bytes], put: dict[str, bytes]) -> None:
        if set(create) & set(put):
            return
        if not self.store.atomic_commit and len(create) > 1:
            return  # not atomic: a partial create is allowed there
        should = not any(k in self.model for k in create)
        assert self.store.commit(create, put) is should
        if should:
            self.model.update(create)
            self.model.update(put)

    @rule(ks=st.lists(keys, max_size=3))
    def delete(self, ks: list[str]) -> None:
        self.store.delete(ks)
        for k in ks:
            self.model.pop(k, None)

    @rule(key=keys)
    def read(self, key: str) -> None:
        if key in self.model:
            assert bytes(self.store.read(key)) == self.model[key]
        else:
            try:
                self.store.read(key)
            except KeyNotFoundException:
                pass
            else:
                raise AssertionError(f"read of deleted/absent key {key!r} succeeded")

    @rule(key=keys, offset=st.integers(0, 80), length=st.integers(0, 80))
    def read_range(self, key: str, offset: int, length: int) -> None:
        if key in self.model:
            got = bytes(self.store.read_range(key, offset, length))
            assert got == self.model[key][offset : offset + length]

    @rule(ks=st.lists(keys, max_size=4))
    def read_many(self, ks: list[str]) -> None:
        if all(k in self.model for k in ks):
            assert [bytes(v) for v in self.store.read_many(ks)] == [self.model[k] for k in ks]
        else:
            try:
                self.store.read_many(ks)
            except KeyNotFoundException:
                pass
            else:
                raise AssertionError("read_many with an absent key succeeded")

    @rule(key=keys)
    def exists(self, key: str) -> None:
        assert self.store.exists(key) is (key in self.model)

    @rule(prefix=st.sampled_from(PREFIXES))
    def list_keys(self, prefix: str) -> None:
        assert sorted(self.store.list_keys(prefix)) == sorted(
            k for k in self.model if k.startswith(prefix)
        )


def run_state_machine(
    make_store: Callable[[], KVStore],
    *,
    max_examples: int = 40,
    steps: int = 30,
    derandomize: bool = True,
) -> None:
    """Run :class:`KVStoreStateMachine` on stores from ``make_store`` (one per example).

    Parameters
    ----------
    make_store : callable
        Returns a fresh, empty store each call.
    max_examples, steps : int
        Hypothesis budget: examples, and steps per example.
    derandomize : bool, default True
        Use a fixed seed, so CI runs are reproducible.
    """
    machine = type(
        "BoundKVStoreStateMachine", (KVStoreStateMachine,), {"make_store": staticmethod(make_store)}
    )
    config = settings(
        max_examples=max_examples,
        stateful_step_count=steps,
        deadline=None,
        derandomize=derandomize,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    run_state_machine_as_test(machine, settings=config)
