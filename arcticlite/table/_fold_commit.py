"""The commit of a compaction of deltas, and its rebase onto a writer that committed first.

:class:`FoldDeltas` commits the folded groups (:mod:`._fold`) as one new version. When another
commit landed after the version folded, :func:`rebase_fold` plans the new head again and
reuses every folded group whose inputs (base row groups and delta segments) are unchanged; a
new group is folded at commit; a changed one makes the compaction give up (docs/engine.md,
"Compaction of deltas", the rebase rule).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from arcticlite.exceptions import CommitConflictError
from arcticlite.table._deltas import delta_info
from arcticlite.table._fold import FoldPlan, FoldTask, folded_leaves, folded_record, plan_fold
from arcticlite.table._ops import Operation, TableEngine
from arcticlite.table._read import meta_of
from arcticlite.version import VersionRecord


def _inputs(t: FoldTask) -> tuple[bytes, ...]:
    """What a task's result depends on: its base leaf rows (segments and rows) and the set of
    delta segments it reads (their row numbers move when rows are appended before them)."""
    b, d = t.base_leaves, t.delta_leaves
    base = [np.ascontiguousarray(b[f]).tobytes() for f in ("digest", "start_row", "end_row", "seg_offset", "start_col")]
    order = np.lexsort((d["start_col"], *np.ascontiguousarray(d["digest"]).T[::-1]))
    return (*base, np.ascontiguousarray(d["digest"][order]).tobytes(),
            np.ascontiguousarray(d["start_col"][order]).tobytes())


def rebase_fold(engine: TableEngine, sym: str, plan: FoldPlan, results: list[np.ndarray], head: VersionRecord,
                wrote: Any) -> tuple[FoldPlan, list[np.ndarray]]:
    """The fold of ``head`` (a version committed after the one ``plan`` folded) reusing
    ``results``: it is planned again, and each of its groups whose inputs (base row groups
    and delta segments) are those of a folded group takes that group's result. A new group
    (a later merge's deltas on row groups the fold left untouched) is folded here (its
    segments passed to ``wrote``). If a folded group's inputs changed — the writer rewrote
    its row groups or added deltas overlapping it — the fold gives up
    (``CommitConflictError``): nothing of the writer's is lost, and the caller discards what
    the fold wrote."""
    if delta_info(head) is None:
        raise CommitConflictError(
            f"symbol {sym!r} was rewritten while its deltas were compacted (version {head.vid} has no deltas: the "
            "writer folded or replaced them); nothing was lost: run the compaction again if needed")
    done = {_inputs(t): r for t, r in zip(plan.tasks, results, strict=True)}
    again = plan_fold(engine, sym, head, budget_bytes=plan.budget_bytes)
    new_results: list[np.ndarray | None] = [done.pop(_inputs(t), None) for t in again.tasks]
    if done:
        raise CommitConflictError(
            f"symbol {sym!r} was written while its deltas were compacted (version {head.vid} changed rows or deltas "
            f"of {len(done)} of the {len(plan.tasks)} groups folded); nothing was lost: run the compaction again")
    out = []
    for t, r in zip(again.tasks, new_results, strict=True):
        out.append(r if r is not None else wrote(t.execute(engine.store, engine.keys)))
    return again, out


class FoldDeltas(Operation):
    """Commit a fold (:func:`plan_fold` and its tasks' results) as the next version. A
    metadata-only commit meanwhile is rebased onto as it is; a data commit meanwhile (an
    append keeping the deltas, another merge) is rebased onto by :func:`rebase_fold` where it
    left the folded groups' inputs as they were, and otherwise makes the fold give up
    (``CommitConflictError``), keeping the writer's data — run the compaction again."""

    def __init__(self, engine: TableEngine, sym: str, base: VersionRecord, plan: FoldPlan,
                 results: list[np.ndarray]) -> None:
        super().__init__(engine, sym)
        self.base, self.plan, self.results = base, plan, list(results)
        for r in results:
            self._wrote(r)
        self.is_dt = meta_of(base).index_kind == "datetime"
        self.leaves = folded_leaves(plan, results, self.is_dt)
        self._rebased: dict[int, np.ndarray] = {}
        self.rebased_onto: int | None = None  # the version the last build was rebased onto

    def reads_deltas(self, base: VersionRecord) -> bool:
        return True

    def build(self, head: VersionRecord | None, base: VersionRecord | None, seq: int) -> VersionRecord:
        sym = self.sym
        if base is None:
            raise CommitConflictError(f"symbol {sym!r} was deleted while its deltas were compacted")
        same = base.seq == self.base.seq or (
            base.index == self.base.index and base.schema == self.base.schema and base.norm == self.base.norm)
        leaves = self.leaves
        self.rebased_onto = None
        if not same:
            if base.schema != self.base.schema or base.norm != self.base.norm:
                raise CommitConflictError(
                    f"symbol {sym!r} was written with another schema while its deltas were compacted (version "
                    f"{base.vid}); nothing was lost: run the compaction again")
            if base.seq not in self._rebased:
                plan, results = rebase_fold(self.engine, sym, self.plan, self.results, base, self._wrote)
                self._rebased = {base.seq: folded_leaves(plan, results, self.is_dt)}
            leaves = self._rebased[base.seq]
            self.rebased_onto = base.vid
        root = self.engine.index(sym, self.sink).build(leaves)
        rec = folded_record(self.engine, sym, base, leaves, root)
        return rec.with_(kind="compact", dead=head.dead if head else (), latest_live=seq)
