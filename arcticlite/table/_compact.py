"""Data compaction: merge runs of small row groups into ``rows_per_segment``-sized segments.

Many small appends leave many small segments; a read then costs one fetch per segment.
:func:`plan_compaction` finds runs of consecutive small row groups; :func:`rewrite` reads each
run and writes it again as full segments, and returns the :class:`~arcticlite.table._ops.
Compact` operation that commits the new index as a new version (copy-on-write: earlier
versions keep their segments; a reader sees the old or the new version, never a mix). Row
groups already large enough are reused untouched. Rows appended while a compaction runs are
kept: the operation rebases onto them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from arcticlite.exceptions import InternalException
from arcticlite.index import EMPTY_ROOT
from arcticlite.table._ops import Compact, TableEngine
from arcticlite.table._read import meta_of, schema_of, widen_dynamic_leaves
from arcticlite.table._segments import Layout, read_segments, write_segments
from arcticlite.version import VersionRecord

#: ``is_symbol_fragmented`` is true when compaction would remove at least this many segments
FRAGMENTED_SEGMENT_COUNT = 100


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """What ``compact_data`` would do: row ranges to rewrite and the segment counts."""

    symbol: str
    version: int
    rows_per_segment: int
    segments_before: int
    segments_after: int
    runs: tuple[tuple[int, int], ...]  # half-open row ranges to rewrite

    @property
    def rows_to_rewrite(self) -> int:
        return sum(b - a for a, b in self.runs)


def row_groups(leaves: np.ndarray) -> list[tuple[int, int, int]]:
    """(start_row, end_row, number of leaf rows) per row group, in order."""
    if len(leaves) == 0:
        return []
    starts, first, counts = np.unique(leaves["start_row"], return_index=True, return_counts=True)
    ends = leaves["end_row"][first]
    return [(int(s), int(e), int(c)) for s, e, c in zip(starts, ends, counts, strict=True)]


def plan_runs(groups: list[tuple[int, int, int]], target: int) -> list[tuple[int, int]]:
    """Runs of consecutive small row groups to merge into ``target``-row segments.

    A group of at least half the target is left alone; consecutive smaller groups are merged
    while the run stays at most ``target`` rows. Runs of a single group are not rewritten.
    """
    runs: list[tuple[int, int]] = []
    cur: list[tuple[int, int, int]] = []

    def flush() -> None:
        if len(cur) > 1:
            runs.append((cur[0][0], cur[-1][1]))
        cur.clear()

    for g in groups:
        rows = g[1] - g[0]
        if rows >= target // 2:
            flush()
            continue
        if cur and (g[1] - cur[0][0]) > target:
            flush()
        cur.append(g)
    flush()
    return runs


def plan_compaction(engine: TableEngine, rec: VersionRecord | None, sym: str,
                    rows_per_segment: int | None) -> tuple[CompactionPlan, np.ndarray]:
    """The compaction plan of version ``rec`` of ``sym`` and its leaf rows."""
    if rec is None:
        raise InternalException(f"No latest undeleted version found for symbol {sym!r}")
    if rec.pickled:
        raise InternalException(f"Cannot compact pickled data (symbol {sym!r})")
    target = int(rows_per_segment or engine.options.rows_per_segment)
    leaves = engine.index(sym).leaves(rec.index or EMPTY_ROOT)
    groups = row_groups(leaves)
    runs = plan_runs(groups, target)
    per_group = {g[0]: g[2] for g in groups}
    removed = added = 0
    for a, b in runs:
        in_run = [s for s in per_group if a <= s < b]
        removed += sum(per_group[s] for s in in_run)
        added += max(per_group[s] for s in in_run) * -(-(b - a) // target)
    return CompactionPlan(sym, rec.seq, target, len(leaves), len(leaves) - removed + added, tuple(runs)), leaves


def rewrite(engine: TableEngine, sym: str, base: VersionRecord, plan: CompactionPlan,
            leaves: np.ndarray) -> Compact:
    """Rewrite the plan's runs as full segments; the operation that commits them."""
    meta, schema = meta_of(base), schema_of(base)
    n_index = len(meta.index_columns)
    dynamic = engine.options.dynamic_schema
    layout = engine.layout(meta)
    layout = Layout(layout.n_index, plan.rows_per_segment, layout.columns_per_segment)
    rewritten = []
    in_run = np.zeros(len(leaves), dtype=bool)
    for a, b in plan.runs:
        mask = (leaves["start_row"] >= a) & (leaves["end_row"] <= b)
        in_run |= mask
        run_leaves = leaves[mask]
        if dynamic:
            run_leaves = widen_dynamic_leaves(run_leaves, len(schema.names) - n_index)
        table = read_segments(engine.store, engine.keys, sym, run_leaves, schema, n_index,
                              schema.names[n_index:], (a, b), dynamic=dynamic, pools=engine.pools)
        rewritten.append(write_segments(engine.store, engine.keys, sym, table, layout, start_row=a,
                                        is_datetime=meta.index_kind == "datetime", pools=engine.pools))
    compacted = np.concatenate([leaves[~in_run], *rewritten])
    compacted = compacted[np.lexsort((compacted["start_col"], compacted["start_row"]))]
    return Compact(engine, sym, base=base, leaves=leaves, compacted=compacted)
