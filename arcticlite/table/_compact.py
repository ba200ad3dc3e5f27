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

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from arcticlite import normalize as norm
from arcticlite.exceptions import InternalException, StorageException, UserInputException
from arcticlite.index import EMPTY_ROOT
from arcticlite.storage import KVStore
from arcticlite.table._deltas import split_flagged
from arcticlite.table._ops import Compact, TableEngine, group_index_values, slice_cuts
from arcticlite.table._pools import Pools, shared
from arcticlite.table._read import meta_of, schema_of, widen_dynamic_leaves
from arcticlite.table._scan import store_for
from arcticlite.table._segments import Layout, read_segments, write_segments
from arcticlite.version import LibraryKeys, VersionRecord

#: ``is_symbol_fragmented`` is true when compaction would remove at least this many segments
FRAGMENTED_SEGMENT_COUNT = 100

def cut_leaves(engine: TableEngine, sym: str, leaves: np.ndarray, cuts: tuple[int, ...],
               meta: norm.NormMeta) -> np.ndarray:
    """``leaves`` with each row group that a row of ``cuts`` falls strictly inside split into
    leaf rows over the same segments (``seg_offset``), their index bounds read from the
    segment's index column (once per segment)."""
    if not cuts or not len(leaves):
        return leaves
    is_dt = meta.index_kind == "datetime"
    parts = []
    for start in np.unique(leaves["start_row"]):
        grp = leaves[leaves["start_row"] == start]
        end = int(grp["end_row"][0])
        inner = sorted({c for c in cuts if int(start) < c < end})
        if not inner:
            parts.append(grp)
            continue
        if is_dt:
            vals = group_index_values(engine, sym, grp, meta.index_columns[0])
        else:
            vals = np.arange(int(start), end, dtype=np.int64)
        for a, b in zip([int(start), *inner], [*inner, end], strict=True):
            piece = grp.copy()
            piece["seg_offset"] += a - int(start)
            piece["start_row"], piece["end_row"] = a, b
            piece["min_index"] = vals[a - int(start)]
            piece["max_index"] = vals[b - 1 - int(start)]
            parts.append(piece)
    return np.concatenate(parts)


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """What ``compact_data`` would do (ArcticDB's ``CompactDataInfo``, plus the runs).

    Attributes
    ----------
    symbol : str
        The symbol planned for.
    version : int
        The version compacted (``version_id_before``).
    rows_per_segment : int
        The target rows per segment.
    version_id_after : int
        The version compaction would create (the same as ``version`` when it would do
        nothing).
    row_slices_before, row_slices_after : list of int
        Row boundaries of the row slices (row groups) before and after: ``[0, 10, 20]`` is two
        slices of ten rows.
    runs : tuple of (int, int)
        The half-open row ranges that would be rewritten.
    segments_before, segments_after : int
        Segments (row slices x column slices) before and after.
    cuts : tuple of int
        Rows where the version's row slices begin inside a segment (appends that joined the
        open tail): the segment's rows are cut there before planning.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> for i in range(4):
    ...     _ = lib.append("S", pd.DataFrame({"px": [float(i)]}, index=[pd.Timestamp("2024-01-01") + pd.Timedelta(days=i)]))
    >>> plan = lib.compact_data_explain_plan("S")
    >>> plan
    CompactDataInfo(will_do_work=true, version_id_before=3, version_id_after=4, num_row_slices_before=4, num_row_slices_after=1)
    >>> plan.runs, plan.segments_before, plan.segments_after
    (((0, 4),), 4, 1)
    """

    symbol: str
    version: int
    rows_per_segment: int
    segments_before: int
    segments_after: int
    runs: tuple[tuple[int, int], ...]  # half-open row ranges to rewrite
    version_id_after: int = -1
    row_slices_before: list[int] = field(default_factory=list)
    row_slices_after: list[int] = field(default_factory=list)
    #: rows where the version's row slices begin inside a segment (appends that joined the
    #: open tail, see :data:`SLICES`): the segment's leaf rows are cut there before planning
    cuts: tuple[int, ...] = ()

    @property
    def rows_to_rewrite(self) -> int:
        """Rows compaction would read and write again (the sum of ``runs``).

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> for i in range(4):
        ...     _ = lib.append("S", pd.DataFrame({"px": [float(i)]}, index=[pd.Timestamp("2024-01-01") + pd.Timedelta(days=i)]))
        >>> plan = lib.compact_data_explain_plan("S")
        >>> plan.rows_to_rewrite
        4
        """
        return sum(b - a for a, b in self.runs)

    @property
    def will_do_work(self) -> bool:
        """Whether compaction would rewrite anything (else it returns the current version).

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> for i in range(4):
        ...     _ = lib.append("S", pd.DataFrame({"px": [float(i)]}, index=[pd.Timestamp("2024-01-01") + pd.Timedelta(days=i)]))
        >>> plan = lib.compact_data_explain_plan("S")
        >>> plan.will_do_work, lib.compact_data_explain_plan("S", rows_per_segment=1).will_do_work
        (True, False)
        """
        return bool(self.runs)

    @property
    def version_id_before(self) -> int:
        """The version compacted (ArcticDB's name of ``version``).

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> for i in range(4):
        ...     _ = lib.append("S", pd.DataFrame({"px": [float(i)]}, index=[pd.Timestamp("2024-01-01") + pd.Timedelta(days=i)]))
        >>> plan = lib.compact_data_explain_plan("S")
        >>> plan.version_id_before, plan.version_id_after
        (3, 4)
        """
        return self.version

    @property
    def num_row_slices_before(self) -> int:
        """Row slices (row groups) of the version before compaction.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> for i in range(4):
        ...     _ = lib.append("S", pd.DataFrame({"px": [float(i)]}, index=[pd.Timestamp("2024-01-01") + pd.Timedelta(days=i)]))
        >>> plan = lib.compact_data_explain_plan("S")
        >>> plan.num_row_slices_before
        4
        """
        return max(0, len(self.row_slices_before) - 1)

    @property
    def num_row_slices_after(self) -> int:
        """Row slices (row groups) compaction would leave.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> for i in range(4):
        ...     _ = lib.append("S", pd.DataFrame({"px": [float(i)]}, index=[pd.Timestamp("2024-01-01") + pd.Timedelta(days=i)]))
        >>> plan = lib.compact_data_explain_plan("S")
        >>> plan.num_row_slices_after
        1
        """
        return max(0, len(self.row_slices_after) - 1)

    def __repr__(self) -> str:
        flag = "true" if self.will_do_work else "false"
        return (f"CompactDataInfo(will_do_work={flag}, version_id_before={self.version_id_before}, "
                f"version_id_after={self.version_id_after}, num_row_slices_before={self.num_row_slices_before}, "
                f"num_row_slices_after={self.num_row_slices_after})")


def row_groups(leaves: np.ndarray) -> list[tuple[int, int, int]]:
    """(start_row, end_row, number of leaf rows) per row group, in order."""
    if len(leaves) == 0:
        return []
    starts, first, counts = np.unique(leaves["start_row"], return_index=True, return_counts=True)
    ends = leaves["end_row"][first]
    return [(int(s), int(e), int(c)) for s, e, c in zip(starts, ends, counts, strict=True)]


def max_slice_rows(target: int) -> int:
    """The most rows a row slice may hold before compaction splits it: a third over
    ``target`` (at least one row over)."""
    return target + max(1, target // 3)


def min_slice_rows(target: int) -> int:
    """The fewest rows a row slice may hold before compaction merges it with its neighbour:
    two thirds of ``target``."""
    return (2 * target) // 3


def slice_bounds(a: int, b: int, target: int) -> list[int]:
    """Row boundaries of the slices rows ``[a, b)`` are rewritten into: one slice when they fit
    in :func:`max_slice_rows`, else as few equal slices as fit, the larger ones last (7 rows at
    target 4 give 3 + 4; 19 give 4 + 5 + 5 + 5)."""
    n = b - a
    k = max(1, math.ceil(n / max_slice_rows(target)))
    q, r = divmod(n, k)
    sizes = [q] * (k - r) + [q + 1] * r
    return [a + int(x) for x in np.concatenate([[0], np.cumsum(sizes)])]


def plan_runs(groups: list[tuple[int, int, int]], target: int) -> list[tuple[int, int]]:
    """Row ranges to rewrite, by ArcticDB's rule (measured on 2,000 layouts, target 2 to 100).

    Nothing is rewritten unless some row slice is larger than :func:`max_slice_rows`, or, with
    more than one slice, smaller than :func:`min_slice_rows`. Then the slices are grouped left
    to right: a group smaller than the minimum always takes the next slice; a larger one takes
    it when that brings the group closer to ``target`` (``2 * group + next < 2 * target``); a
    small last group joins the one before it. Groups of several slices, and groups larger than
    the maximum (split by :func:`slice_bounds`), are rewritten."""
    if not groups:
        return []
    sizes = [g[1] - g[0] for g in groups]
    lo, hi = min_slice_rows(target), max_slice_rows(target)
    if not (max(sizes) > hi or (len(sizes) > 1 and min(sizes) < lo)):
        return []
    merged: list[list[int]] = []  # [first group index, last group index, rows]
    for i, n in enumerate(sizes):
        if merged and (merged[-1][2] < lo or 2 * merged[-1][2] + n < 2 * target):
            merged[-1][1:] = [i, merged[-1][2] + n]
        else:
            merged.append([i, i, n])
    if len(merged) > 1 and merged[-1][2] < lo:
        last = merged.pop()
        merged[-1][1:] = [last[1], merged[-1][2] + last[2]]
    return [(groups[i][0], groups[j][1]) for i, j, n in merged if j > i or n > hi]


def _bounds_after(groups: list[tuple[int, int, int]], runs: list[tuple[int, int]], target: int) -> list[int]:
    bounds = {g[0] for g in groups} | ({groups[-1][1]} if groups else set())
    for a, b in runs:
        bounds = {x for x in bounds if not a < x < b} | set(slice_bounds(a, b, target))
    return sorted(bounds)


def plan_compaction(engine: TableEngine, head: VersionRecord | None, rec: VersionRecord | None, sym: str,
                    rows_per_segment: int | None) -> tuple[CompactionPlan, np.ndarray]:
    """The compaction plan of version ``rec`` (the latest live one of ``head``) of ``sym``,
    and its leaf rows."""
    if head is None or rec is None:
        raise StorageException(f"E_SYMBOL_NOT_FOUND: Cannot compact data of non-existent symbol {sym!r}")
    if rec.pickled and rec.index is not None:
        raise InternalException(f"Cannot compact pickled data (symbol {sym!r})")
    target = int(rows_per_segment or engine.options.rows_per_segment)
    original = split_flagged(engine.index(sym).leaves(rec.index or EMPTY_ROOT))[0]  # deltas: see FoldPlan
    cuts = slice_cuts(rec)
    leaves = cut_leaves(engine, sym, original, cuts, meta_of(rec)) if cuts else original
    groups = row_groups(leaves)
    runs = plan_runs(groups, target)
    per_group = {g[0]: g[2] for g in groups}
    removed = added = 0
    for a, b in runs:
        in_run = [s for s in per_group if a <= s < b]
        removed += sum(per_group[s] for s in in_run)
        added += max(per_group[s] for s in in_run) * (len(slice_bounds(a, b, target)) - 1)
    before = sorted({g[0] for g in groups} | ({groups[-1][1]} if groups else set()))
    plan = CompactionPlan(sym, rec.vid, target, len(leaves), len(leaves) - removed + added, tuple(runs),
                          version_id_after=head.top + 1 if runs else rec.vid,
                          row_slices_before=before, row_slices_after=_bounds_after(groups, runs, target),
                          cuts=cuts)
    return plan, original


@dataclass(frozen=True, slots=True)
class CompactionTask:
    """The rewrite of one run of a compaction plan: picklable, runs in any process that can
    reach the store from the library's URI (a Spark executor); returns the new leaf rows."""

    uri: str = field(repr=False)  # may hold credentials
    library: str
    symbol: str
    run: tuple[int, int]
    rows_per_segment: int
    leaves: np.ndarray  # the run's leaf rows
    schema: pa.Schema
    meta: str  # normalization JSON
    columns_per_segment: int
    dynamic: bool
    bloom_min_distinct: int | None = None  # Bloom filters of the rewritten segments (Layout)
    bloom_max_fraction: float = 0.03

    def execute(self, store: KVStore | None = None) -> np.ndarray:
        """Read the run, write it again as its new row slices; return their leaf rows (written
        segments are unreachable until the plan's commit references them)."""
        st = store if store is not None else store_for(self.uri)
        return rewrite_run(st, LibraryKeys(self.library), self.symbol, self, shared())


@dataclass(frozen=True, slots=True)
class CompactionJob:
    """A compaction planned for parallel execution: run every task anywhere (``task.execute()``),
    then commit their results once (``Library.commit_compaction``). A version with delta
    segments is compacted by folding them: ``plan`` is then a ``FoldPlan`` and the tasks its
    ``FoldTask`` s (one per group).

    Attributes
    ----------
    symbol : str
        The symbol compacted.
    plan : CompactionPlan or FoldPlan
        What the compaction rewrites.
    tasks : list of CompactionTask or FoldTask
        Picklable tasks, each runnable in any process from the library's URI.
    base_seq : int
        The commit sequence of the version compacted (the commit gives up if the symbol was
        rewritten since).

    Examples
    --------
    >>> import pickle, pandas as pd, arcticlite as adb, tempfile
    >>> lib = adb.Arctic("lmdb://" + tempfile.mkdtemp()).create_library("demo")
    >>> for i in range(3):
    ...     _ = lib.append("S", pd.DataFrame({"px": [float(i)]}, index=[pd.Timestamp("2024-01-01") + pd.Timedelta(days=i)]))
    >>> job = lib.compact_data_tasks("S")
    >>> shipped = [pickle.dumps(task) for task in job.tasks]  # to workers
    >>> results = [pickle.loads(blob).execute() for blob in shipped]
    >>> job.plan.will_do_work, lib.commit_compaction(job, results).version
    (True, 3)
    """

    symbol: str
    plan: Any  # CompactionPlan, or FoldPlan for a version with deltas
    tasks: list[Any]  # CompactionTask, or FoldTask
    base_seq: int  # commit sequence of the version compacted


def compaction_tasks(engine: TableEngine, uri: str, library: str, sym: str, base: VersionRecord,
                     plan: CompactionPlan, leaves: np.ndarray) -> list[CompactionTask]:
    """One task per run of ``plan``."""
    meta = meta_of(base)
    layout = engine.layout(meta)
    leaves = cut_leaves(engine, sym, leaves, plan.cuts, meta)
    out = []
    for a, b in plan.runs:
        mask = (leaves["start_row"] >= a) & (leaves["end_row"] <= b)
        out.append(CompactionTask(uri, library, sym, (a, b), plan.rows_per_segment, leaves[mask], schema_of(base),
                                  base.norm or "", layout.columns_per_segment, engine.options.dynamic_schema,
                                  layout.bloom_min_distinct, layout.bloom_max_fraction))
    return out


def rewrite_run(store: KVStore, keys: LibraryKeys, sym: str, task: CompactionTask, pools: Pools) -> np.ndarray:
    """The leaf rows of ``task``'s run rewritten as its new row slices (:func:`slice_bounds`)."""
    meta = norm.NormMeta.from_json(task.meta)
    schema = task.schema
    n_index = len(meta.index_columns)
    a, b = task.run
    run_leaves = task.leaves
    if task.dynamic:
        run_leaves = widen_dynamic_leaves(run_leaves, len(schema.names) - n_index)
    table = read_segments(store, keys, sym, run_leaves, schema, n_index, schema.names[n_index:], (a, b),
                          dynamic=task.dynamic, pools=pools, nan_rows=True)
    bounds = slice_bounds(a, b, task.rows_per_segment)
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        one = Layout(n_index, hi - lo, task.columns_per_segment, task.bloom_min_distinct,  # one row slice
                     task.bloom_max_fraction)
        parts.append(write_segments(store, keys, sym, table.slice(lo - a, hi - lo), one, start_row=lo,
                                    is_datetime=meta.index_kind == "datetime", pools=pools))
    return np.concatenate(parts)


def commit_op(engine: TableEngine, sym: str, base: VersionRecord, plan: CompactionPlan, leaves: np.ndarray,
              rewritten: list[np.ndarray]) -> Compact:
    """The operation committing ``rewritten`` (the tasks' results, in plan order)."""
    if len(rewritten) != len(plan.runs):
        raise UserInputException(f"a compaction of {len(plan.runs)} runs got {len(rewritten)} results")
    original = leaves
    leaves = cut_leaves(engine, sym, leaves, plan.cuts, meta_of(base))
    in_run = np.zeros(len(leaves), dtype=bool)
    for (a, b), rows in zip(plan.runs, rewritten, strict=True):
        if len(rows) and (int(rows["start_row"].min()) != a or int(rows["end_row"].max()) != b):
            raise UserInputException(f"a compaction result does not cover its run [{a}, {b})")
        in_run |= (leaves["start_row"] >= a) & (leaves["end_row"] <= b)
    compacted = np.concatenate([leaves[~in_run], *rewritten])
    compacted = compacted[np.lexsort((compacted["start_col"], compacted["start_row"]))]
    op = Compact(engine, sym, base=base, leaves=original, compacted=compacted)
    for rows in rewritten:
        op._wrote(rows)
    return op


def rewrite(engine: TableEngine, sym: str, base: VersionRecord, plan: CompactionPlan,
            leaves: np.ndarray) -> Compact:
    """Rewrite the plan's runs here; the operation that commits them."""
    tasks = compaction_tasks(engine, "", "", sym, base, plan, leaves)
    return commit_op(engine, sym, base, plan, leaves,
                     [rewrite_run(engine.store, engine.keys, sym, t, engine.pools) for t in tasks])
