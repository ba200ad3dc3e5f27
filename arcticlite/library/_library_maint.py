"""Library: data compaction (``compact_data`` and ArcticDB's older defragment API).

Many small appends leave many small segments; a read then costs one fetch per segment.
Compaction merges runs of small row groups into ``rows_per_segment``-sized segments and
commits them as a new version (copy-on-write: earlier versions keep their segments, and a
reader sees either the old or the new version, never a mix). Row groups already large enough
are reused untouched. If appends land while a compaction runs, it rebases onto them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from arcticlite.exceptions import CommitConflictError, InternalException
from arcticlite.index import EMPTY_ROOT
from arcticlite.library._library import LibraryCore, check_symbol
from arcticlite.library._types import VersionedItem
from arcticlite.table import read_segments, widen_dynamic_leaves, write_segments
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


def _row_groups(leaves: np.ndarray) -> list[tuple[int, int, int]]:
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


class MaintenanceMixin(LibraryCore):
    def _plan(self, sym: str, rows_per_segment: int | None) -> tuple[VersionRecord, CompactionPlan, np.ndarray]:
        rec = self._engine.latest_live(sym)
        if rec is None:
            raise InternalException(f"No latest undeleted version found for symbol {sym!r}")
        if rec.pickled:
            raise InternalException(f"Cannot compact pickled data (symbol {sym!r})")
        target = int(rows_per_segment or self._options.rows_per_segment)
        leaves = self._index_for(sym).leaves(rec.index or EMPTY_ROOT)
        groups = _row_groups(leaves)
        runs = plan_runs(groups, target)
        per_group = {g[0]: g[2] for g in groups}
        removed = 0
        added = 0
        for a, b in runs:
            in_run = [s for s in per_group if a <= s < b]
            removed += sum(per_group[s] for s in in_run)
            width = max(per_group[s] for s in in_run)
            added += width * -(-(b - a) // target)
        plan = CompactionPlan(sym, rec.seq, target, len(leaves), len(leaves) - removed + added, tuple(runs))
        return rec, plan, leaves

    def compact_data_explain_plan(self, symbol: str, rows_per_segment: int | None = None) -> CompactionPlan:
        """What :meth:`compact_data` would rewrite, without writing anything."""
        return self._plan(check_symbol(symbol), rows_per_segment)[1]

    def is_symbol_fragmented(self, symbol: str, segment_size: int | None = None) -> bool:
        """Whether compaction would remove at least 100 segments (ArcticDB's rule)."""
        plan = self.compact_data_explain_plan(symbol, segment_size)
        return plan.segments_before - plan.segments_after >= FRAGMENTED_SEGMENT_COUNT

    def defragment_symbol_data(self, symbol: str, segment_size: int | None = None,
                               prune_previous_versions: bool | None = None) -> VersionedItem:
        """Deprecated ArcticDB name of :meth:`compact_data`; raises when nothing needs compacting."""
        if not self.is_symbol_fragmented(symbol, segment_size):
            raise InternalException(f"E_ASSERTION_FAILURE: Nothing to compact in symbol {symbol!r}")
        return self.compact_data(symbol, segment_size, prune_previous_versions)

    def compact_data(self, symbol: str, rows_per_segment: int | None = None,
                     prune_previous_versions: bool | None = None) -> VersionedItem:
        """Merge small segments into ``rows_per_segment``-row ones as a new version.

        A no-op returning the current version when the data is already compact. Earlier
        versions stay readable. Safe with concurrent appenders: their rows are kept.
        """
        sym = check_symbol(symbol)
        base, plan, leaves = self._plan(sym, rows_per_segment)
        if not plan.runs:
            return self._item(sym, base)
        meta = self._meta_of(base)
        schema = self._schema_of(base)
        n_index = len(meta.index_columns)
        layout = self._layout(meta)
        layout = type(layout)(layout.n_index, plan.rows_per_segment, layout.columns_per_segment)
        rewritten: dict[tuple[int, int], np.ndarray] = {}
        for a, b in plan.runs:
            run_leaves = leaves[(leaves["start_row"] >= a) & (leaves["end_row"] <= b)]
            if self._options.dynamic_schema:
                run_leaves = widen_dynamic_leaves(run_leaves, len(schema.names) - n_index)
            table = read_segments(self._store, self._keys, sym, run_leaves, schema, n_index,
                                  schema.names[n_index:], (a, b), dynamic=self._options.dynamic_schema)
            rewritten[(a, b)] = write_segments(self._store, self._keys, sym, table, layout, start_row=a,
                                               is_datetime=meta.index_kind == "datetime")
        covered = int(leaves["end_row"].max()) if len(leaves) else 0
        in_run = np.zeros(len(leaves), dtype=bool)
        for a, b in plan.runs:
            in_run |= (leaves["start_row"] >= a) & (leaves["end_row"] <= b)
        kept = leaves[~in_run]
        compacted = np.concatenate([kept, *rewritten.values()])
        compacted = compacted[np.lexsort((compacted["start_col"], compacted["start_row"]))]
        nodes: dict[str, bytes] = {}
        index = self._index_for(sym, nodes)

        def build(head: VersionRecord | None, seq: int) -> VersionRecord:
            nodes.clear()
            cur = self._engine.live_from_head(sym, head)
            if cur is None:
                raise CommitConflictError(f"symbol {sym!r} was deleted while compacting")
            rows = compacted
            if cur.seq != base.seq:
                cur_leaves = index.leaves(cur.index or EMPTY_ROOT)
                prefix = cur_leaves[cur_leaves["start_row"] < covered]
                if len(prefix) != len(leaves) or not np.array_equal(prefix, leaves):
                    raise CommitConflictError(
                        f"symbol {sym!r} was rewritten while compacting; run compact_data again"
                    )
                rows = np.concatenate([compacted, cur_leaves[cur_leaves["start_row"] >= covered]])
            return cur.with_(kind="compact", dead=head.dead if head else (), latest_live=seq,
                             index=index.build(rows))

        rec = self._commit(sym, build, prune=self._prune_default(prune_previous_versions), extra=nodes)
        return self._item(sym, rec)

    def compact_data_batch(self, symbols: list[str], rows_per_segment: int | None = None,
                           prune_previous_versions: bool | None = None) -> list[Any]:
        return self._run_batch(  # type: ignore[attr-defined]
            list(symbols), lambda s: self.compact_data(s, rows_per_segment, prune_previous_versions), lambda s: s
        )
