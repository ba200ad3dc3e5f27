"""Compaction of deltas: fold a version's delta segments into its base segments.

:func:`plan_fold` finds the *groups* as seed 004 plans them (:mod:`._groups`): base row
groups and delta segments whose key ranges overlap are joined (union-find), and each
component holding a delta segment is one group; the others are reused as they are. A group
whose stored base bytes exceed the memory budget is split by key range at row-group
boundaries (each part owns the changes of its own rows and index interval, so the parts apply
every change exactly once). Each group (or part) is one :class:`FoldTask`: picklable, run in a
thread or process pool here or on a Spark executor, in memory bounded by its own rows.
:class:`FoldDeltas` commits the result as one new version (copy-on-write: readers see the
version with deltas or the folded one, never a mix); a writer that committed first is rebased
onto where it left the folded groups' inputs as they were (:mod:`._fold_commit`).
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from arcticlite import normalize as norm
from arcticlite.exceptions import UserInputException
from arcticlite.index import EMPTY_ROOT, ROW_DTYPE, IndexRoot
from arcticlite.storage import KVStore
from arcticlite.table._deltas import (
    DELTAS,
    KEY,
    POS_MASK,
    SHIFT,
    Scope,
    delta_info,
    owners,
    read_applied,
    read_delta_rows,
    split_flagged,
)
from arcticlite.table._groups import (
    HIGHEST,
    LOWEST,
    base_ranges_by_time,
    components,
    split_by_budget,
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
    group: int = 0  # the component of overlapping key ranges
    part: int = 0  # its part, when split by the memory budget
    key_range: tuple[int | None, int | None] = (None, None)

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
    timeseries : bool
        Whether key ranges are index values (else row identities).
    budget_bytes : int
        The memory budget the groups were split by.

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
    timeseries: bool = False  # keys are index values (else row identities)
    budget_bytes: int = FOLD_BUDGET_BYTES

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
        """One row per task: its group (a component of overlapping key ranges) and part,
        base rows, index interval owned, segments, rows and stored bytes read (base + delta),
        changes, and key range.

        Returns
        -------
        list of dict
            ``group``, ``part``, ``start_row``, ``end_row``, ``index_from``, ``index_to``,
            ``base_segments``, ``delta_segments``, ``segments``, ``rows``, ``changes``,
            ``base_bytes``, ``bytes``, ``key_from``, ``key_to`` (index values in ns for a
            timeseries, else row identities; None: open);
            ``pandas.DataFrame(plan.groups())`` makes a table of them.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3)))
        >>> _ = lib.merge("S", pd.DataFrame({"px": [20.0]}, index=[pd.Timestamp("2024-01-02")]))
        >>> plan = lib.compaction_plan("S")
        >>> [(g["group"], g["start_row"], g["end_row"], g["segments"], g["changes"]) for g in plan.groups()]
        [(0, 0, 3, 2, 1)]
        """
        out = []
        for t in self.tasks:
            bb = int(t.base_leaves["nbytes"].sum()) if len(t.base_leaves) else 0
            db = int(t.delta_leaves["nbytes"].sum()) if len(t.delta_leaves) else 0
            drows = int((t.delta_leaves["end_row"] - t.delta_leaves["start_row"]).sum()) if len(t.delta_leaves) else 0
            out.append({"group": t.group, "part": t.part, "start_row": t.scope.row_lo, "end_row": t.scope.row_hi,
                        "index_from": t.scope.ins_lo, "index_to": t.scope.ins_hi,
                        "base_segments": len(t.base_leaves), "delta_segments": len(t.delta_leaves),
                        "segments": len(t.base_leaves) + len(t.delta_leaves),
                        "rows": t.scope.row_hi - t.scope.row_lo + drows, "changes": t.delta_changes,
                        "base_bytes": bb, "bytes": bb + db, "key_from": t.key_range[0], "key_to": t.key_range[1]})
        return out


def _group_bounds(base_lv: np.ndarray) -> tuple[np.ndarray, ...]:
    starts, first = np.unique(base_lv["start_row"], return_index=True)
    ends = base_lv["end_row"][first].astype(np.int64)
    gmax = np.maximum.reduceat(base_lv["max_index"][np.argsort(base_lv["start_row"], kind="stable")], first) \
        if len(first) else np.zeros(0, np.int64)
    return starts.astype(np.int64), ends, base_lv["min_index"][first].astype(np.int64), gmax.astype(np.int64)


def _delta_vertices(delta_lv: np.ndarray, d: pa.Table, base_rows: int, *,
                    is_dt: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Delta segments (row groups of delta leaves, by first row) and their key ranges: the
    index range for a timeseries, else the base rows their changes name (the tail,
    ``base_rows``, for inserted rows). ``d``: their rows in row order (hidden columns)."""
    dstart, first = np.unique(delta_lv["start_row"], return_index=True)
    if is_dt:
        order = np.argsort(delta_lv["start_row"], kind="stable")
        lo = np.minimum.reduceat(delta_lv["min_index"][order], first).astype(np.int64)
        hi = np.maximum.reduceat(delta_lv["max_index"][order], first).astype(np.int64)
        return dstart.astype(np.int64), lo, hi
    keys = np.asarray(d.column(KEY).to_numpy(), dtype=np.int64)
    pos = np.where((keys >> SHIFT) == 0, keys & POS_MASK, base_rows)
    seg = np.searchsorted(dstart, dstart[0] + np.arange(len(keys)), "right") - 1 if len(dstart) else pos[:0]
    lo = np.full(len(dstart), HIGHEST, dtype=np.int64)
    hi = np.full(len(dstart), LOWEST, dtype=np.int64)
    np.minimum.at(lo, seg, pos)
    np.maximum.at(hi, seg, pos)
    return dstart.astype(np.int64), lo, hi


def plan_fold(engine: TableEngine, sym: str, rec: VersionRecord, *, uri: str = "", library: str = "",
              budget_bytes: int = FOLD_BUDGET_BYTES) -> FoldPlan:
    """The groups and tasks of folding ``rec``'s deltas (none when it has none): base row
    groups and delta segments whose key ranges overlap form one group (:mod:`._groups`), one
    task each, split by key range where the group's base bytes exceed ``budget_bytes``."""
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
                base_rows=base_rows, rows=rows, due=due, base_leaves=base_lv,
                timeseries=meta_of(rec).index_kind == "datetime" if rec.norm else False, budget_bytes=budget_bytes)
    gstart, gend, gmin, gmax = _group_bounds(base_lv) if len(base_lv) else (np.zeros(0, np.int64),) * 4
    ngroups = len(gstart)
    if not info["layers"] or not len(delta_lv):
        return FoldPlan(**plan, tasks=[], untouched_row_groups=ngroups, row_groups=ngroups)
    meta, schema = meta_of(rec), schema_of(rec)
    n_index = len(meta.index_columns)
    is_dt = meta.index_kind == "datetime"
    # which base row group each final change belongs to (one int64 column and the index read)
    d = read_delta_rows(engine.store, engine.keys, sym, delta_lv, schema, n_index, [], pools=engine.pools)
    owner, _, _, ins = owners(d, gstart, gmin, is_dt=is_dt)
    tail_changes = int((ins & (owner < 0)).sum())
    counts = np.bincount(owner[owner >= 0], minlength=ngroups) if ngroups else np.zeros(0, np.int64)
    nbytes = np.zeros(ngroups, dtype=np.int64)
    if ngroups:
        np.add.at(nbytes, np.searchsorted(gstart, base_lv["start_row"], "right") - 1, base_lv["nbytes"].astype(np.int64))
    # vertices: base row groups, (row-numbered) the tail, delta segments; joined where key ranges overlap
    if is_dt:
        blo, bhi = base_ranges_by_time(gmin, gmax)
    else:
        blo, bhi = gstart.copy(), gend - 1
        blo, bhi = np.append(blo, base_rows), np.append(bhi, HIGHEST)  # the tail
    nbase = len(blo)
    dstart, dlo, dhi = _delta_vertices(delta_lv, d, base_rows, is_dt=is_dt)
    label = components(np.concatenate([blo, dlo]), np.concatenate([bhi, dhi]))
    layout = engine.layout(meta)
    tasks: list[FoldTask] = []
    touched = np.zeros(ngroups, dtype=bool)
    for comp_no, comp in enumerate(np.unique(label[nbase:])):
        members = np.flatnonzero(label[:nbase] == comp)
        groups = members[members < ngroups]
        with_tail = not is_dt and ngroups in members
        dsel = np.isin(delta_lv["start_row"], dstart[label[nbase:] == comp])
        comp_deltas = delta_lv[dsel]
        touched[groups] = True
        runs = split_by_budget(groups, nbytes, budget_bytes) or [(ngroups, ngroups)]
        for part, (g0, g1) in enumerate(runs):
            last_run = part == len(runs) - 1
            if g0 == g1:  # the tail alone: rows inserted after the last base row
                end = int(gend[-1]) if ngroups else 0
                scope = Scope(end, end, inserts=True)
                key_lo, key_hi = base_rows, HIGHEST
            else:
                lo = None if g0 == 0 or not is_dt else int(gmin[g0])
                hi = None if g1 == ngroups or not is_dt else int(gmin[g1])
                scope = Scope(int(gstart[g0]), int(gend[g1 - 1]), lo, hi, inserts=is_dt or (with_tail and last_run))
                key_lo, key_hi = int(blo[g0]), int(bhi[g1 - 1])
                if with_tail and last_run:
                    key_hi = HIGHEST
            dl = comp_deltas
            if len(runs) > 1:  # the deltas of this part's key range
                own = np.isin(dstart, np.unique(comp_deltas["start_row"]))
                near = own & (dhi >= key_lo) & (dlo <= key_hi)
                dl = comp_deltas[np.isin(comp_deltas["start_row"], dstart[near])]
            lv = base_lv[(base_lv["start_row"] >= scope.row_lo) & (base_lv["start_row"] < scope.row_hi)]
            changes = int(counts[g0:g1].sum()) + (tail_changes if (g0 == g1 or (with_tail and last_run)) else 0)
            tasks.append(FoldTask(uri, library, sym, scope, lv, dl, schema, rec.norm or "", layout, changes,
                                  group=comp_no, part=part, key_range=_shown_range(lv, dl, key_lo, key_hi, is_dt)))
    tasks.sort(key=lambda t: (t.scope.row_lo, t.scope.row_hi))
    return FoldPlan(**plan, tasks=tasks, untouched_row_groups=int(ngroups - touched.sum()), row_groups=ngroups)


def _shown_range(lv: np.ndarray, dl: np.ndarray, key_lo: int, key_hi: int,
                 is_dt: bool) -> tuple[int | None, int | None]:
    """The key range a task covers, as shown: the smallest and largest index value of its
    segments (timeseries), else its first and last row identity (None: open, the tail)."""
    if is_dt:
        lo = [int(x["min_index"].min()) for x in (lv, dl) if len(x)]
        hi = [int(x["max_index"].max()) for x in (lv, dl) if len(x)]
        return (min(lo), max(hi)) if lo else (None, None)
    return key_lo, None if key_hi == HIGHEST else key_hi


EXECUTORS = ("thread", "process")


def _execute(task: FoldTask) -> np.ndarray:
    return task.execute()  # in a worker process: the store opened from the task's URI


def run_tasks(tasks: list[FoldTask], store: KVStore, keys: LibraryKeys, workers: int = 1,
              executor: str = "thread") -> list[np.ndarray]:
    """Run ``tasks``, ``workers`` at a time; results in task order. ``executor="thread"``: a
    thread pool here, on ``store``; ``"process"``: a pool of ``workers`` processes (started
    clean by forkserver where the platform has it, else spawn), each opening the store from
    the tasks' URI (an LMDB or S3 library; the tasks must have been planned with it)."""
    if executor not in EXECUTORS:
        raise UserInputException(f"executor must be one of {EXECUTORS}, got {executor!r}")
    if executor == "process" and tasks:
        if any(not t.uri or t.uri.startswith("mem://") for t in tasks):
            raise UserInputException(
                "executor='process' runs each group in another process, which opens the library by its URI: a "
                "mem:// library lives only in this process; use executor='thread' or an LMDB or S3 library")
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        with ProcessPoolExecutor(max_workers=max(1, min(workers, len(tasks))), mp_context=ctx) as procs:
            return list(procs.map(_execute, tasks))
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
