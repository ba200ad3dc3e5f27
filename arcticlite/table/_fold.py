"""Compaction of deltas: fold a version's delta segments into its base segments.

:func:`plan_fold` finds the *groups*: every final change of the deltas (the last one of each
row identity, :func:`~arcticlite.table._deltas.resolve`) belongs to one base row group — an
update or delete to the group holding the row it names, an insert to the group whose index
interval ``[its minimum, the next group's minimum)`` holds its index value (the first group's
interval is open below, the last one's above; inserts of a row-numbered table follow the last
row). Consecutive touched row groups form one group — the connected components of the key
ranges the changes overlap — and a group whose stored bytes exceed the memory budget is split
at row-group boundaries (each part owns the changes of its own rows and index interval, so
the parts apply every change exactly once). Each group is one :class:`FoldTask`: picklable,
run in a thread pool here or on a Spark executor, in memory bounded by its own rows. Untouched
row groups are reused as they are; :class:`FoldDeltas` commits the result as one new version
(copy-on-write: readers see the version with deltas or the folded one, never a mix).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from arcticlite import normalize as norm
from arcticlite.exceptions import CommitConflictError
from arcticlite.index import EMPTY_ROOT, ROW_DTYPE, IndexRoot
from arcticlite.storage import KVStore
from arcticlite.table._deltas import (
    DELTAS,
    Scope,
    delta_info,
    owners,
    read_applied,
    read_delta_rows,
    split_flagged,
)
from arcticlite.table._ops import SLICES, Operation, TableEngine, concat_pieces
from arcticlite.table._pools import shared
from arcticlite.table._read import meta_of, schema_of
from arcticlite.table._scan import store_for
from arcticlite.table._segments import Layout, write_segments
from arcticlite.version import LibraryKeys, VersionRecord

#: Default memory budget of one fold task: stored bytes of the base row groups it reads.
FOLD_BUDGET_BYTES = 256 << 20


@dataclass(frozen=True, slots=True)
class FoldTask:
    """The fold of one group: base rows ``scope.row_lo .. row_hi`` and the changes the scope
    owns, written again as plain segments. Picklable; runs wherever the store can be reached
    from ``uri`` (``execute(store)`` here). Returns the new leaf rows (numbered from 0)."""

    uri: str = field(repr=False)
    library: str
    symbol: str
    scope: Scope
    base_leaves: np.ndarray
    delta_leaves: np.ndarray
    schema: pa.Schema
    meta: str
    layout: Layout
    delta_changes: int = 0

    @property
    def rows(self) -> tuple[int, int]:
        return self.scope.row_lo, self.scope.row_hi

    def execute(self, store: KVStore | None = None, keys: LibraryKeys | None = None) -> np.ndarray:
        """Fold the group; ``store`` / ``keys``: where (default: opened from the URI)."""
        st = store if store is not None else store_for(self.uri)
        lk = keys if keys is not None else LibraryKeys(self.library)
        meta = norm.NormMeta.from_json(self.meta)
        n_index = len(meta.index_columns)
        is_dt = meta.index_kind == "datetime"
        table = read_applied(st, lk, self.symbol, self.base_leaves, self.delta_leaves,
                             self.schema, n_index, self.schema.names[n_index:], is_dt=is_dt, scope=self.scope,
                             pools=shared())
        return write_segments(st, lk, self.symbol, table, self.layout, start_row=0,
                              is_datetime=is_dt, pools=shared())


@dataclass(frozen=True, slots=True)
class FoldPlan:
    """What folding the deltas of one version does (``Library.compaction_plan``).

    Attributes
    ----------
    symbol : str
        The symbol.
    version : int
        The version id folded.
    base_seq : int
        Its commit sequence (the compaction gives up if the symbol moved on meanwhile).
    layers, delta_rows, delta_segments : int
        Merges kept as deltas, their rows and segments.
    base_rows, rows : int
        Rows of the base segments; rows of the version (what a read returns).
    tasks : list of FoldTask
        One per group, in row order.
    untouched_row_groups, row_groups : int
        Base row groups reused as they are, and all of them.
    due : bool
        Whether the library's options say compaction is due (``compaction_deltas`` layers or
        ``compaction_delta_share`` of the base rows in deltas).
    base_leaves : numpy.ndarray
        The base segments' index rows (not shown in its ``repr``).

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3)))
    >>> _ = lib.merge("S", pd.DataFrame({"px": [20.0]}, index=[pd.Timestamp("2024-01-02")]))
    >>> plan = lib.compaction_plan("S")
    >>> plan.layers, plan.delta_rows, plan.base_rows, plan.due
    (1, 1, 3, True)
    """

    symbol: str
    version: int
    base_seq: int
    layers: int
    delta_rows: int
    delta_segments: int
    base_rows: int
    rows: int
    tasks: list[FoldTask]
    untouched_row_groups: int
    row_groups: int
    due: bool
    base_leaves: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, dtype=ROW_DTYPE))

    @property
    def will_do_work(self) -> bool:
        """Whether there are deltas to fold.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3)))
        >>> _ = lib.merge("S", pd.DataFrame({"px": [20.0]}, index=[pd.Timestamp("2024-01-02")]))
        >>> plan = lib.compaction_plan("S")
        >>> plan.will_do_work
        True
        >>> _ = lib.compact_deltas("S")
        >>> lib.compaction_plan("S").will_do_work
        False
        """
        return self.layers > 0

    def groups(self) -> list[dict[str, Any]]:
        """One row per group (task): base rows, index interval owned, changes, stored bytes.

        Returns
        -------
        list of dict
            ``group``, ``start_row``, ``end_row``, ``index_from``, ``index_to``,
            ``base_segments``, ``delta_segments``, ``changes``, ``base_bytes``;
            ``pandas.DataFrame(plan.groups())`` makes a table of them.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3)))
        >>> _ = lib.merge("S", pd.DataFrame({"px": [20.0]}, index=[pd.Timestamp("2024-01-02")]))
        >>> plan = lib.compaction_plan("S")
        >>> [(g["start_row"], g["end_row"], g["changes"]) for g in plan.groups()]
        [(0, 3, 1)]
        """
        out = []
        for i, t in enumerate(self.tasks):
            out.append({"group": i, "start_row": t.scope.row_lo, "end_row": t.scope.row_hi,
                        "index_from": t.scope.ins_lo, "index_to": t.scope.ins_hi,
                        "base_segments": len(t.base_leaves), "delta_segments": len(t.delta_leaves),
                        "changes": t.delta_changes,
                        "base_bytes": int(t.base_leaves["nbytes"].sum()) if len(t.base_leaves) else 0})
        return out


def _group_bounds(base_lv: np.ndarray) -> tuple[np.ndarray, ...]:
    starts, first = np.unique(base_lv["start_row"], return_index=True)
    return (starts.astype(np.int64), base_lv["end_row"][first].astype(np.int64),
            base_lv["min_index"][first].astype(np.int64), base_lv["nbytes"].astype(np.int64))


def plan_fold(engine: TableEngine, sym: str, rec: VersionRecord, *, uri: str = "", library: str = "",
              budget_bytes: int = FOLD_BUDGET_BYTES) -> FoldPlan:
    """The groups and tasks of folding ``rec``'s deltas (none when it has none)."""
    info = delta_info(rec) or {"layers": 0, "delta_rows": 0, "delta_segments": 0,
                               "base_rows": rec.index.rows if rec.index else 0}
    rows = rec.index.rows if rec.index else 0
    opts = engine.options
    base_rows = int(info["base_rows"])
    due = bool(info["layers"]) and (info["layers"] >= opts.compaction_deltas
                                    or info["delta_rows"] >= opts.compaction_delta_share * max(1, base_rows))
    leaves = engine.index(sym).leaves(rec.index or EMPTY_ROOT) if info["layers"] else np.zeros(0, dtype=ROW_DTYPE)
    base_lv, delta_lv = split_flagged(leaves)
    plan: dict[str, Any] = dict(symbol=sym, version=rec.vid, base_seq=rec.seq, layers=int(info["layers"]),
                delta_rows=int(info["delta_rows"]), delta_segments=int(info.get("delta_segments", len(delta_lv))),
                base_rows=base_rows, rows=rows, due=due, base_leaves=base_lv)
    gstart, gend, gmin, _ = _group_bounds(base_lv) if len(base_lv) else (np.zeros(0, np.int64),) * 4
    ngroups = len(gstart)
    if not info["layers"]:
        return FoldPlan(**plan, tasks=[], untouched_row_groups=ngroups, row_groups=ngroups)
    meta, schema = meta_of(rec), schema_of(rec)
    n_index = len(meta.index_columns)
    is_dt = meta.index_kind == "datetime"
    # which base row group each final change belongs to (one int64 column and the index read)
    d = read_delta_rows(engine.store, engine.keys, sym, delta_lv, schema, n_index, [], pools=engine.pools)
    owner, _, _, ins = owners(d, gstart, gmin, is_dt=is_dt)
    tail = int((ins & (owner < 0)).sum())
    counts = np.bincount(owner[owner >= 0], minlength=ngroups) if ngroups else np.zeros(0, np.int64)
    touched = counts > 0
    nbytes = np.zeros(ngroups, dtype=np.int64)
    if ngroups:
        np.add.at(nbytes, np.searchsorted(gstart, base_lv["start_row"], "right") - 1, base_lv["nbytes"].astype(np.int64))
    # groups: runs of consecutive touched row groups, split where a run exceeds the budget
    runs: list[tuple[int, int]] = []
    g = 0
    while g < ngroups:
        if not touched[g]:
            g += 1
            continue
        g0, acc = g, 0
        while g < ngroups and touched[g] and (g == g0 or acc + nbytes[g] <= budget_bytes):
            acc += int(nbytes[g])
            g += 1
        runs.append((g0, g))
    layout = engine.layout(meta)
    tasks = []
    for g0, g1 in runs:
        lo = None if g0 == 0 or not is_dt else int(gmin[g0])
        hi = None if g1 == ngroups or not is_dt else int(gmin[g1])
        scope = Scope(int(gstart[g0]), int(gend[g1 - 1]), lo, hi, inserts=is_dt)
        lv = base_lv[(base_lv["start_row"] >= scope.row_lo) & (base_lv["start_row"] < scope.row_hi)]
        dl = delta_lv
        if is_dt and len(dl):  # the deltas of the group's index span
            span_lo = int(lv["min_index"].min()) if lo is None else min(lo, int(lv["min_index"].min()))
            keep = dl["max_index"] >= span_lo if lo is not None else np.ones(len(dl), dtype=bool)
            if hi is not None:
                keep &= dl["min_index"] <= max(hi, int(lv["max_index"].max()))
            dl = dl[keep]
        tasks.append(FoldTask(uri, library, sym, scope, lv, dl, schema, rec.norm or "", layout,
                              int(counts[g0:g1].sum())))
    if tail:
        end = int(gend[-1]) if ngroups else 0
        tasks.append(FoldTask(uri, library, sym, Scope(end, end, inserts=True), base_lv[:0], delta_lv, schema,
                              rec.norm or "", layout, tail))
    return FoldPlan(**plan, tasks=tasks, untouched_row_groups=int(ngroups - touched.sum()), row_groups=ngroups)


def run_tasks(tasks: list[FoldTask], store: KVStore, keys: LibraryKeys, workers: int = 1) -> list[np.ndarray]:
    """Run ``tasks`` here, ``workers`` at a time (a thread pool); results in task order."""
    if workers <= 1 or len(tasks) <= 1:
        return [t.execute(store, keys) for t in tasks]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="arcticlite-fold") as pool:
        return list(pool.map(lambda t: t.execute(store, keys), tasks))


def folded_leaves(plan: FoldPlan, results: list[np.ndarray], is_dt: bool) -> np.ndarray:
    """The leaf rows of the folded version: untouched row groups and the tasks' results, in
    row order, numbered from row 0."""
    base_lv = plan.base_leaves
    pieces: list[tuple[int, np.ndarray]] = []
    covered = np.zeros(len(base_lv), dtype=bool)
    for t, rows in zip(plan.tasks, results, strict=True):
        covered |= (base_lv["start_row"] >= t.scope.row_lo) & (base_lv["start_row"] < t.scope.row_hi)
        pieces.append((t.scope.row_lo, rows))
    rest = base_lv[~covered]
    if len(rest):
        starts = np.unique(rest["start_row"])
        for s in starts.tolist():
            pieces.append((s, rest[rest["start_row"] == s]))
    pieces.sort(key=lambda p: p[0])
    rows = concat_pieces([p for _, p in pieces], is_dt)
    return rows[np.lexsort((rows["start_col"], rows["start_row"]))]


def folded_record(engine: TableEngine, sym: str, rec: VersionRecord, leaves: np.ndarray,
                  index_root: IndexRoot) -> VersionRecord:
    """``rec`` without deltas: its data as ``leaves`` under ``index_root``."""
    is_dt = meta_of(rec).index_kind == "datetime"
    extra = {k: v for k, v in rec.extra.items() if k not in (DELTAS, SLICES)}
    return rec.with_(index=index_root, extra=extra,
                     first_index=int(leaves["min_index"].min()) if is_dt and len(leaves) else
                     (None if is_dt else rec.first_index),
                     last_index=int(leaves["max_index"].max()) if is_dt and len(leaves) else
                     (None if is_dt else rec.last_index))


def fold_now(engine: TableEngine, sym: str, rec: VersionRecord, op: Operation) -> VersionRecord:
    """``rec`` with its deltas folded here (segments and index nodes written, remembered by
    ``op`` so that a refused operation deletes them): the base of an operation that works on
    plain row groups (append, update, ...) — such an operation compacts first."""
    plan = plan_fold(engine, sym, rec)
    results = [op._wrote(r) for r in run_tasks(plan.tasks, engine.store, engine.keys)]
    leaves = folded_leaves(plan, results, meta_of(rec).index_kind == "datetime")
    nodes: dict[str, bytes] = {}
    root = engine.index(sym, nodes).build(leaves)
    engine.store.write_many(nodes)
    op.written += list(nodes)
    return folded_record(engine, sym, rec, leaves, root)


class FoldDeltas(Operation):
    """Commit a fold (:func:`plan_fold` and its tasks' results) as the next version. The symbol
    must still be at the version folded (its data unchanged: a metadata-only commit is
    rebased onto); a concurrent data commit makes the fold give up (``CommitConflictError``)
    and keeps the writer's data — run the compaction again."""

    def __init__(self, engine: TableEngine, sym: str, base: VersionRecord, plan: FoldPlan,
                 results: list[np.ndarray]) -> None:
        super().__init__(engine, sym)
        self.base, self.plan = base, plan
        for r in results:
            self._wrote(r)
        self.leaves = folded_leaves(plan, results, meta_of(base).index_kind == "datetime")

    def reads_deltas(self, base: VersionRecord) -> bool:
        return True

    def build(self, head: VersionRecord | None, base: VersionRecord | None, seq: int) -> VersionRecord:
        sym = self.sym
        if base is None:
            raise CommitConflictError(f"symbol {sym!r} was deleted while its deltas were compacted")
        same = base.seq == self.base.seq or (
            base.index == self.base.index and base.schema == self.base.schema and base.norm == self.base.norm)
        if not same:
            raise CommitConflictError(
                f"symbol {sym!r} was written while its deltas were compacted (version {base.vid}); nothing was "
                "lost: run the compaction again")
        root = self.engine.index(sym, self.sink).build(self.leaves)
        rec = folded_record(self.engine, sym, base, self.leaves, root)
        return rec.with_(kind="compact", dead=head.dead if head else (), latest_live=seq)
