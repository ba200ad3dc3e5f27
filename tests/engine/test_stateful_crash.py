"""The model-based battery (issue 16): :class:`test_stateful.VersionHistory` (write / append /
update / delete / prune / snapshot / delete_data_in_range / merge / delete_rows / reads against
a pandas model) plus stage + finalize, ``compact_data``, and the same data operations (merge
and delete_rows included) made by a client that dies at a random store call
(``arcticlite.testing.CrashingStore``). After a crash the library holds
the state before the operation or the state after it -- the model learns which from the
version list -- and every invariant of the model still holds; the staged data is exactly
what was staged and not finalized.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd
import pytest
from enginehelpers import model_delete_rows, model_merge
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule, run_state_machine_as_test
from test_stateful import ON, STRATEGIES, SYM, T0, VersionHistory, keyed_rows, make_frame

from arcticlite import Arctic, Library
from arcticlite.exceptions import ArcticException
from arcticlite.library import MergeStrategy
from arcticlite.testing import CrashingStore, SimulatedCrash

#: crashes injected, by outcome: ``before`` (nothing happened) / ``after`` (the commit landed)
CRASHES: dict[str, int] = {"before": 0, "after": 0}
#: crashes injected, by operation
CRASHED_OPS: Counter[str] = Counter()


class CrashingHistory(VersionHistory):
    def __init__(self) -> None:
        super().__init__()
        self.staged: list[pd.DataFrame] = []

    # -- helpers ---------------------------------------------------------------------------------
    def last_day(self) -> int:
        cur = self.latest()
        return int((cur[1].index[-1] - T0).days) if cur is not None and len(cur[1]) else 0

    def dying_library(self, at: int) -> tuple[Library, CrashingStore]:
        store = CrashingStore(self.arctic._store)
        lib = Arctic(self.arctic.get_uri(), store=store)[self.lib.name]
        store.crash_at = len(store.calls) + at  # the at-th call of the operation
        return lib, store

    def planned(self, op: str, seed: int) -> tuple[Any, pd.DataFrame | None]:
        """``(call, model frame after it)`` of ``op``; the frame is ``None`` when the call must
        be refused (a finalize of staged rows before the last row)."""
        cur = self.latest()
        base = cur[1] if cur is not None else make_frame([0], 0).iloc[:0]
        if op == "write":
            df = make_frame([seed % 7, 8 + seed % 5], seed)
            return (lambda lib: lib.write(SYM, df)), df
        if op == "append":
            df = make_frame([self.last_day() + 1 + seed % 3], seed)
            return (lambda lib: lib.append(SYM, df)), pd.concat([base, df]) if len(base) else df
        if op == "update":
            df = make_frame([seed % 10, seed % 10 + 2], seed)
            lo, hi = df.index[0], df.index[-1]
            return (lambda lib: lib.update(SYM, df)), pd.concat([base[base.index < lo], df, base[base.index > hi]])
        if op == "finalize":
            staged = pd.concat(self.staged)
            ok = not len(base) or staged.index[0] >= base.index[-1]
            return (lambda lib: lib.finalize_staged_data(SYM, mode="append")), \
                (pd.concat([base, staged]) if len(base) else staged) if ok else None
        if op in ("merge", "delete_rows"):
            rng = np.random.default_rng(seed)
            on = ON[seed % 2]
            picks = sorted(set(rng.integers(0, len(base), 3).tolist())) if len(base) else []
            src = keyed_rows(base, picks, [int(d) for d in rng.integers(0, 32, 1 + seed % 2)], seed, on)
            src = src[~pd.DataFrame({"ix": src.index, **{c: src[c] for c in on}}).duplicated().to_numpy()]
            if op == "delete_rows":
                return (lambda lib: lib.delete_rows(SYM, src, on=on)), model_delete_rows(base, src, on)
            strategy = STRATEGIES[seed // 2 % 3]
            return (lambda lib: lib.merge(SYM, src, strategy=MergeStrategy(*strategy), on=on)), \
                model_merge(base, src, strategy, on)
        assert op == "compact"
        return (lambda lib: lib.compact_data(SYM, rows_per_segment=3)), base

    def landed(self, op: str, after: pd.DataFrame) -> None:
        """The model after ``op`` committed (its version id is the next one)."""
        self.committed(self.last_id + 1, after)
        if op == "finalize":
            self.staged.clear()

    # -- rules -----------------------------------------------------------------------------------
    @rule(width=st.integers(1, 3), gap=st.integers(0, 2), seed=st.integers(0, 1000))
    def stage(self, width: int, gap: int, seed: int) -> None:
        start = int((self.staged[-1].index[-1] - T0).days) + 1 if self.staged else self.last_day() + 1
        df = make_frame(list(range(start + gap, start + gap + width)), seed)
        self.lib.stage(SYM, df)
        self.staged.append(df)

    @precondition(lambda self: len(self.staged) > 0)
    @rule(seed=st.integers(0, 1000))
    def finalize(self, seed: int) -> None:
        call, after = self.planned("finalize", seed)
        if after is None:
            before = self.lib.list_versions(SYM) if self.latest() is not None else {}
            with pytest.raises(ArcticException):
                call(self.lib)
            assert (self.lib.list_versions(SYM) if self.latest() is not None else {}) == before
            self.lib.delete_staged_data(SYM)
            self.staged.clear()
            return
        assert call(self.lib).version == self.last_id + 1
        self.landed("finalize", after)

    @precondition(lambda self: self.latest() is not None)
    @rule()
    def compact(self) -> None:
        item = self.lib.compact_data(SYM, rows_per_segment=3)
        if item.version != self.latest()[0]:  # a no-op when already compact
            self.landed("compact", self.latest()[1])

    # one rule per operation, so that Hypothesis draws crashes about as often as the rest
    @rule(at=st.integers(1, 10), seed=st.integers(0, 1000))
    def crash_during_write(self, at: int, seed: int) -> None:
        self.crash_during("write", at, seed)

    @rule(at=st.integers(1, 10), seed=st.integers(0, 1000))
    def crash_during_append(self, at: int, seed: int) -> None:
        self.crash_during("append", at, seed)

    @rule(at=st.integers(1, 10), seed=st.integers(0, 1000))
    def crash_during_update(self, at: int, seed: int) -> None:
        self.crash_during("update", at, seed)

    @rule(at=st.integers(1, 12), seed=st.integers(0, 1000))
    def crash_during_finalize(self, at: int, seed: int) -> None:
        self.crash_during("finalize", at, seed)

    @rule(at=st.integers(1, 12), seed=st.integers(0, 1000))
    def crash_during_compact(self, at: int, seed: int) -> None:
        self.crash_during("compact", at, seed)

    @rule(at=st.integers(1, 12), seed=st.integers(0, 1000))
    def crash_during_merge(self, at: int, seed: int) -> None:
        self.crash_during("merge", at, seed)

    @rule(at=st.integers(1, 12), seed=st.integers(0, 1000))
    def crash_during_delete_rows(self, at: int, seed: int) -> None:
        self.crash_during("delete_rows", at, seed)

    def crash_during(self, op: str, at: int, seed: int) -> None:
        if op in ("update", "compact", "merge", "delete_rows") and self.latest() is None:
            return
        if op == "finalize" and not self.staged:
            return
        call, after = self.planned(op, seed)
        if after is None:
            return  # a refused finalize: covered by the finalize rule
        before_live = set(self.live)
        lib, store = self.dying_library(at)
        try:
            item = call(lib)
        except SimulatedCrash:
            CRASHED_OPS[op] += 1
            live = {k.version for k, i in self.lib.list_versions(SYM).items() if not i.deleted} \
                if self.lib.has_symbol(SYM) else set()
            if live == before_live:
                CRASHES["before"] += 1
                return  # died before its commit point: nothing happened
            CRASHES["after"] += 1
            assert live == before_live | {self.last_id + 1}, (op, at, live, before_live)
            self.landed(op, after)
            return
        if op == "compact" and item.version != self.last_id + 1:
            return  # nothing to compact
        assert item.version == self.last_id + 1
        self.landed(op, after)

    # -- invariants ------------------------------------------------------------------------------
    @invariant()
    def staged_matches(self) -> None:
        assert self.lib.get_staged_symbols() == ([SYM] if self.staged else [])


def run(arctic: Arctic, max_examples: int, steps: int) -> None:
    machine: Any = type("Machine", (CrashingHistory,), {"arctic": arctic})
    run_state_machine_as_test(
        machine,
        settings=settings(max_examples=max_examples, stateful_step_count=steps, deadline=None,
                          suppress_health_check=list(HealthCheck), database=None, derandomize=True),
    )


# (examples, steps): S3 makes several round trips to moto per call, and every example creates
# a library in the same bucket (the session's boto3 client, as the ``ac`` fixture)
BUDGET = {"memory": (30, 25), "lmdb": (12, 20), "s3": (8, 20)}


@pytest.mark.parametrize("backend", [pytest.param("memory", marks=pytest.mark.memory),
                                     pytest.param("lmdb", marks=pytest.mark.lmdb),
                                     pytest.param("s3", marks=pytest.mark.s3)])
def test_history_with_crashes_matches_pandas_model(ac: Arctic, backend: str) -> None:
    import os

    examples, steps = BUDGET[backend]
    if os.environ.get("ARCTICLITE_BATTERY") == "full":
        examples, steps = examples * 10, steps * 2
    CRASHES.update(before=0, after=0)
    CRASHED_OPS.clear()
    run(ac, examples, steps)
    print(f"\n{backend}: {examples} examples x {steps} steps, crashes {CRASHES}, by operation {dict(CRASHED_OPS)}")
    assert CRASHES["before"] > 0 and CRASHED_OPS["merge"] + CRASHED_OPS["delete_rows"] > 0
