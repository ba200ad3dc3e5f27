"""A Hypothesis state machine: a library against a pandas model of one symbol's version history.

Random write / append / update / delete(versions) / delete(all) / snapshot / delete_data_in_range /
prune / merge / delete_rows sequences, checking after every step that the latest read, every
live version (``as_of=id``), every snapshot (``as_of=name``), ``list_versions`` and
``has_symbol`` agree with the model, and that a failing call (append before the last row; a
merge with an unsorted source, or one that matches a stored row with several source rows
under ``"update"``) changes nothing.

Merges (ArcticDB's ``merge_experimental``: strategies update / insert / upsert, matched on the
DatetimeIndex alone or with the key column ``a``) and ``delete_rows`` take sources drawn from
stored rows and new rows, and are checked against the pandas model of
``enginehelpers.model_merge`` / ``model_delete_rows``; the library keeps them as delta
segments that every later read applies.

Version ids are ArcticDB's: every data commit takes the next id after the highest ever
written, and a delete or prune takes none; the model predicts each id.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd
import pytest
from enginehelpers import AmbiguousMerge, assert_frame_equal, model_delete_rows, model_merge
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from arcticlite import Arctic, Library, LibraryOptions
from arcticlite.exceptions import (
    AppendOrderException,
    NoSuchVersionException,
    UnsortedDataException,
    UserInputException,
)
from arcticlite.library import MergeStrategy

T0 = pd.Timestamp("2024-01-01")
SYM = "s"
COUNTER = itertools.count()


def make_frame(days: list[int], seed: int) -> pd.DataFrame:
    days = sorted(days)
    idx = pd.DatetimeIndex([T0 + pd.Timedelta(days=d) for d in days])
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.integers(-100, 100, len(days)).astype(np.int64),
                         "b": rng.random(len(days))}, index=idx)


days_st = st.lists(st.integers(0, 30), min_size=1, max_size=6)

#: update / insert / upsert
STRATEGIES = [("update", "do_nothing"), ("do_nothing", "insert"), ("update", "insert")]
ON = [[], ["a"]]
#: merges and delete_rows made (and merges refused) by the runs of this process, for the figures
KEYED: Counter[str] = Counter()


def keyed_rows(cur: pd.DataFrame, picks: list[int], new_days: list[int], seed: int, on: list[str]) -> pd.DataFrame:
    """Rows keyed like ``cur``: copies of the keys of stored rows ``picks`` (new values; with
    ``on=[]`` now and then a new ``a`` too), then rows at ``new_days``; sorted by the index."""
    rng = np.random.default_rng(seed)
    n = len(picks) + len(new_days)
    days = [cur.index[i] for i in picks] + [T0 + pd.Timedelta(days=d) for d in new_days]
    a = np.concatenate([cur["a"].to_numpy()[picks].astype(np.int64),
                        rng.integers(-100, 100, len(new_days)).astype(np.int64)])
    if not on and len(picks):
        a[: len(picks)] = np.where(rng.random(len(picks)) < 0.3, rng.integers(-100, 100, len(picks)), a[: len(picks)])
    df = pd.DataFrame({"a": a, "b": rng.random(n).round(3)}, index=pd.DatetimeIndex(days))
    return df.sort_index(kind="stable")


def same(got: pd.DataFrame, want: pd.DataFrame) -> None:
    if not len(want.columns):  # a read of no column: an empty RangeIndex of columns, as ArcticDB gives
        want = want.set_axis(pd.RangeIndex(0), axis=1)
    if len(want) == 0:
        assert len(got) == 0
        assert list(got.columns) == list(want.columns)
        return
    assert_frame_equal(got, want)


class VersionHistory(RuleBasedStateMachine):
    """Subclassed per backend with ``arctic`` and ``options`` set."""

    arctic: Arctic
    options: LibraryOptions = LibraryOptions()

    snapshots = Bundle("snapshots")

    def __init__(self) -> None:
        super().__init__()
        self.lib: Library = self.arctic.create_library(f"h{next(COUNTER)}", self.options)
        self.live: dict[int, pd.DataFrame] = {}
        self.snaps: dict[str, tuple[int, pd.DataFrame]] = {}
        self.last_id = -1

    # -- helpers ---------------------------------------------------------------------------------
    def latest(self) -> tuple[int, pd.DataFrame] | None:
        if not self.live:
            return None
        v = max(self.live)
        return v, self.live[v]

    def committed(self, version: int, df: pd.DataFrame) -> None:
        assert version == self.last_id + 1  # ids are consecutive over data commits
        self.last_id = version
        self.live[version] = df

    def consumed(self) -> None:
        """A delete / prune takes no version id (ArcticDB's numbering): the next data commit
        is still ``last_id + 1``."""

    # -- rules -----------------------------------------------------------------------------------
    @rule(days=days_st, seed=st.integers(0, 1000))
    def write(self, days: list[int], seed: int) -> None:
        df = make_frame(days, seed)
        self.committed(self.lib.write(SYM, df).version, df)

    @rule(offsets=st.lists(st.integers(0, 5), min_size=1, max_size=4), seed=st.integers(0, 1000))
    def append(self, offsets: list[int], seed: int) -> None:
        cur = self.latest()
        start = int((cur[1].index[-1] - T0).days) if cur is not None and len(cur[1]) else 0
        df = make_frame([start + o for o in offsets], seed)
        item = self.lib.append(SYM, df)
        base = cur[1] if cur is not None else df.iloc[:0]
        self.committed(item.version, pd.concat([base, df]) if len(base) else df)

    @precondition(lambda self: self.latest() is not None and len(self.latest()[1]) > 0)
    @rule(back=st.integers(1, 5), seed=st.integers(0, 1000))
    def append_before_last_row_changes_nothing(self, back: int, seed: int) -> None:
        last = int((self.latest()[1].index[-1] - T0).days)
        df = make_frame([last - back], seed)
        before = self.lib.list_versions(SYM)
        try:
            self.lib.append(SYM, df)
        except AppendOrderException:
            pass
        else:
            raise AssertionError("append before the last row was accepted")
        assert self.lib.list_versions(SYM) == before

    @precondition(lambda self: self.latest() is not None)
    @rule(days=days_st, seed=st.integers(0, 1000))
    def update(self, days: list[int], seed: int) -> None:
        df = make_frame(days, seed)
        _, cur = self.latest()
        lo, hi = df.index[0], df.index[-1]
        want = pd.concat([cur[cur.index < lo], df, cur[cur.index > hi]])
        self.committed(self.lib.update(SYM, df).version, want)

    @precondition(lambda self: self.latest() is not None)
    @rule(lo=st.integers(-2, 32), width=st.integers(0, 10))
    def delete_data_in_range(self, lo: int, width: int) -> None:
        _, cur = self.latest()
        a, b = T0 + pd.Timedelta(days=lo), T0 + pd.Timedelta(days=lo + width)
        self.lib.delete_data_in_range(SYM, (a, b))
        self.committed(self.last_id + 1, cur[(cur.index < a) | (cur.index > b)])
        assert self.lib.read(SYM).version == self.last_id

    @precondition(lambda self: self.latest() is not None)
    @rule(data=st.data(), strategy=st.sampled_from(STRATEGIES), on=st.sampled_from(ON), upsert=st.booleans(),
          seed=st.integers(0, 1000), bad=st.integers(0, 9))
    def merge(self, data: st.DataObject, strategy: tuple[str, str], on: list[str], upsert: bool, seed: int,
              bad: int) -> None:
        _, cur = self.latest()
        picks = data.draw(st.lists(st.integers(0, len(cur) - 1), max_size=4)) if len(cur) else []
        new_days = data.draw(st.lists(st.integers(-1, 32), min_size=0 if picks else 1, max_size=3))
        src = keyed_rows(cur, picks, new_days, seed, on)
        if bad > 1:  # mostly one source row per key; else repeated keys (refused where they hit a stored row)
            src = src[~pd.DataFrame({"ix": src.index, **{c: src[c] for c in on}}).duplicated().to_numpy()]
        if bad == 0 and len(set(src.index)) > 1:  # an unsorted source
            src = src.iloc[::-1].copy()
        call = lambda: self.lib.merge(SYM, src, strategy=MergeStrategy(*strategy), on=on, upsert=upsert)  # noqa: E731
        try:
            want = model_merge(cur, src, strategy, on) if src.index.is_monotonic_increasing else None
        except AmbiguousMerge:
            want = None
        if want is None:
            before = self.lib.list_versions(SYM)
            expected = UnsortedDataException if not src.index.is_monotonic_increasing else UserInputException
            with pytest.raises(expected):
                call()
            assert self.lib.list_versions(SYM) == before
            KEYED["merges refused"] += 1
            return
        self.committed(call().version, want)
        KEYED["merges"] += 1

    @precondition(lambda self: self.latest() is not None)
    @rule(data=st.data(), on=st.sampled_from(ON), seed=st.integers(0, 1000), reverse=st.booleans())
    def delete_rows(self, data: st.DataObject, on: list[str], seed: int, reverse: bool) -> None:
        _, cur = self.latest()
        picks = data.draw(st.lists(st.integers(0, len(cur) - 1), max_size=4)) if len(cur) else []
        keys = keyed_rows(cur, picks, data.draw(st.lists(st.integers(-1, 32), max_size=2)), seed, on)
        want = model_delete_rows(cur, keys, on)
        keys = keys.iloc[::-1] if reverse else keys  # the keys' order does not matter
        self.committed(self.lib.delete_rows(SYM, keys, on=on).version, want)
        KEYED["delete_rows"] += 1

    @precondition(lambda self: len(self.live) > 0)
    @rule(data=st.data())
    def delete_some_versions(self, data: st.DataObject) -> None:
        ids = data.draw(st.lists(st.sampled_from(sorted(self.live)), min_size=1, max_size=3, unique=True))
        self.lib.delete(SYM, versions=ids)
        for v in ids:
            del self.live[v]
        self.consumed()

    @precondition(lambda self: len(self.live) > 0)
    @rule()
    def delete_all(self) -> None:
        self.lib.delete(SYM)
        self.live.clear()
        self.consumed()

    @precondition(lambda self: len(self.live) > 1)
    @rule()
    def prune(self) -> None:
        v, df = self.latest()
        self.lib.prune_previous_versions(SYM)
        self.live = {v: df}
        self.consumed()

    @precondition(lambda self: len(self.live) > 0)
    @rule(target=snapshots, data=st.data())
    def snapshot(self, data: st.DataObject) -> str:
        name = f"snap{next(COUNTER)}"
        v = data.draw(st.sampled_from(sorted(self.live)))
        self.lib.snapshot(name, versions={SYM: v})
        self.snaps[name] = (v, self.live[v])
        return name

    @rule(name=snapshots)
    def read_snapshot(self, name: str) -> None:
        if name not in self.snaps:
            return
        v, df = self.snaps[name]
        item = self.lib.read(SYM, as_of=name)
        assert item.version == v
        same(item.data, df)

    @precondition(lambda self: len(self.snaps) > 0)
    @rule(data=st.data())
    def delete_snapshot(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.snaps)))
        self.lib.delete_snapshot(name)
        del self.snaps[name]

    @precondition(lambda self: self.latest() is not None)
    @rule(lo=st.integers(-1, 31), width=st.integers(0, 8))
    def read_date_range(self, lo: int, width: int) -> None:
        _, cur = self.latest()
        a, b = T0 + pd.Timedelta(days=lo), T0 + pd.Timedelta(days=lo + width)
        same(self.lib.read(SYM, date_range=(a, b)).data, cur[(cur.index >= a) & (cur.index <= b)])

    @precondition(lambda self: self.latest() is not None)
    @rule(lo=st.integers(-12, 12), hi=st.integers(-12, 12))
    def read_row_range(self, lo: int, hi: int) -> None:
        _, cur = self.latest()
        same(self.lib.read(SYM, row_range=(lo, hi)).data, cur.iloc[lo:hi])

    @precondition(lambda self: self.latest() is not None)
    @rule(n=st.integers(-6, 6), columns=st.sampled_from([None, ["a"], ["b"], []]))
    def head_tail(self, n: int, columns: list[str] | None) -> None:
        _, cur = self.latest()
        want = cur if columns is None else cur[columns]
        same(self.lib.head(SYM, n, columns=columns).data, want.iloc[:n])
        same(self.lib.tail(SYM, n, columns=columns).data, want.iloc[-n:] if n else want.iloc[:0])

    @rule(v=st.integers(0, 40))
    def read_as_of(self, v: int) -> None:
        if v in self.live:
            same(self.lib.read(SYM, as_of=v).data, self.live[v])
        else:
            with pytest.raises(NoSuchVersionException):
                self.lib.read(SYM, as_of=v)

    # -- invariants ------------------------------------------------------------------------------
    @invariant()
    def latest_matches(self) -> None:
        cur = self.latest()
        assert self.lib.has_symbol(SYM) == (cur is not None)
        assert self.lib.list_symbols() == ([SYM] if cur is not None else [])
        if cur is None:
            with pytest.raises(NoSuchVersionException):
                self.lib.read(SYM)
            return
        item = self.lib.read(SYM)
        assert item.version == cur[0]
        same(item.data, cur[1])

    @invariant()
    def versions_match(self) -> None:
        listed = self.lib.list_versions(SYM)
        live = {k.version for k, info in listed.items() if not info.deleted}
        assert live == set(self.live)
        held = {v for v, _ in self.snaps.values()}
        assert {k.version for k, info in listed.items() if info.deleted} == held - set(self.live)


def run(arctic: Arctic, max_examples: int, steps: int, options: LibraryOptions | None = None) -> None:
    machine: Any = type("Machine", (VersionHistory,), {"arctic": arctic, "options": options or LibraryOptions()})
    run_state_machine_as_test(
        machine,
        settings=settings(max_examples=max_examples, stateful_step_count=steps, deadline=None,
                          suppress_health_check=list(HealthCheck), database=None, derandomize=True),
    )


BUDGET = {"memory": (30, 25), "lmdb": (25, 20), "s3": (4, 10)}


def test_history_matches_pandas_model(uri: str, backend: str) -> None:
    examples, steps = BUDGET[backend]
    KEYED.clear()
    run(Arctic(uri), examples, steps)
    print(f"\n{backend}: {examples} examples x {steps} steps, {dict(KEYED)}")
    if examples * steps >= 500:  # S3's few steps may draw neither
        assert KEYED["merges"] > 0 and KEYED["delete_rows"] > 0


@pytest.mark.parametrize("backend", [pytest.param("memory", marks=pytest.mark.memory)])
def test_history_matches_pandas_model_tiny_segments(uri: str, backend: str) -> None:
    run(Arctic(uri), 25, 20, LibraryOptions(rows_per_segment=2, columns_per_segment=1))
