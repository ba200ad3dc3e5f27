"""The public scan API: a read plan split into tasks that any process can run.

``Library.scan(symbol, ...)`` resolves the version and plans the read once (one walk of the
table index, pruning by index range, columns and statistics) and returns a :class:`ScanPlan`.
``plan.tasks(target_bytes=...)`` cuts it into :class:`ScanTask` s — each a group of whole row
groups, a few tens of MiB of stored bytes — that pickle small and run anywhere the store can
be reached from the library's URI alone: another process, a Spark executor. Each task
fetches and decodes only its segments and the requested columns and yields
``pyarrow.RecordBatch`` es; the batches of the tasks, in order, are the rows of the read.

The output is plain Arrow (``normalize.arrow_columns``): the index is a leading column named
after the index (``index`` when unnamed; a RangeIndex is not a column), with its time zone.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np
import pyarrow as pa

from arcticlite import normalize as norm
from arcticlite.exceptions import UserInputException
from arcticlite.storage import KVStore, open_store
from arcticlite.table._deltas import Scope, part_scopes
from arcticlite.table._pools import single
from arcticlite.table._read import ReadPlan, read_arrow
from arcticlite.version import LibraryKeys

#: Query clauses a task can run on its own rows (anything else needs all rows at once).
ROW_WISE = frozenset({"filter", "project", "date_range"})

_stores: dict[tuple[int, str, bool], KVStore] = {}
_stores_lock = threading.Lock()


def store_for(uri: str, read_only: bool = False) -> KVStore:
    """One store per URI per process, shared by the tasks that run there (LMDB environments
    must not be opened twice by one process; S3 clients are costly to build). ``read_only``
    opens it as ``Arctic(uri, read_only=True)`` does (tasks of a read-only library)."""
    key = (os.getpid(), uri, read_only)
    store = _stores.get(key)
    if store is None:
        if uri.startswith("mem://"):
            raise UserInputException(
                "a scan task of a mem:// library can only run in the process that planned it: "
                "pass store= to ScanTask.execute, or use an LMDB or S3 library"
            )
        with _stores_lock:
            store = _stores.get(key)
            if store is None:
                store = _stores[key] = open_store(uri, read_only=read_only)
    return store


def _output(table: pa.Table, meta: norm.NormMeta) -> pa.Table:
    return norm.arrow_columns(table, meta)


@dataclass(frozen=True, slots=True)
class ScanTask:
    """A group of whole row groups of one scan; pickles small and runs anywhere.

    Attributes
    ----------
    uri : str
        The store's URI, as ``Arctic(uri)`` takes it (never shown in its ``repr``).
    library : str
        The library's name.
    plan : ReadPlan
        The read, restricted to this task's segments.
    rows : int
        Rows stored in this task's segments (an upper bound of what it yields).
    nbytes : int
        Stored bytes of this task's segments (all their columns).
    read_only : bool
        Open the store read-only (the scan of a library opened with ``read_only=True``).

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb, tempfile
    >>> lib = adb.Arctic("lmdb://" + tempfile.mkdtemp()).create_library("demo", adb.LibraryOptions(rows_per_segment=2))
    >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0, 3.0, 4.0, 5.0]}, index=pd.date_range("2024-01-01", periods=5)))
    >>> plan = lib.scan("S")
    >>> import pickle
    >>> task = pickle.loads(pickle.dumps(plan.tasks(target_rows=2)[1]))  # as a worker receives it
    >>> task.rows, task.segments, task.to_table().column("px").to_pylist()
    (2, 1, [3.0, 4.0])
    """

    uri: str = field(repr=False)  # may hold credentials
    library: str
    plan: ReadPlan
    rows: int
    nbytes: int
    read_only: bool = False

    @property
    def segments(self) -> int:
        """Segments this task fetches (one per row group and column slice).

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb, tempfile
        >>> lib = adb.Arctic("lmdb://" + tempfile.mkdtemp()).create_library("demo", adb.LibraryOptions(rows_per_segment=2))
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0, 3.0, 4.0, 5.0]}, index=pd.date_range("2024-01-01", periods=5)))
        >>> plan = lib.scan("S")
        >>> [task.segments for task in plan.tasks(target_rows=2)]
        [1, 1, 1]
        """
        return len(self.plan.leaves)

    def execute(self, store: KVStore | None = None, *, threads: int | None = None) -> Iterator[pa.RecordBatch]:
        """Fetch, decode and yield this task's rows as record batches.

        Parameters
        ----------
        store : KVStore, optional
            The store to read from; by default one opened from :attr:`uri` (once per process).
        threads : int, optional
            Cores the task may use. 1 decodes in the calling thread (a worker that runs one
            task per core, as a Spark executor does, gets its parallelism from running tasks
            side by side, not from threads inside each). None: the process's thread pools.

        Yields
        ------
        pyarrow.RecordBatch
            Batches of the plan's schema, in index order.

        Raises
        ------
        UserInputException
            ``threads`` is not a positive int, or the library is ``mem://`` and no ``store``
            was given outside the planning process.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb, tempfile
        >>> lib = adb.Arctic("lmdb://" + tempfile.mkdtemp()).create_library("demo", adb.LibraryOptions(rows_per_segment=2))
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0, 3.0, 4.0, 5.0]}, index=pd.date_range("2024-01-01", periods=5)))
        >>> plan = lib.scan("S")
        >>> batches = [b for task in plan.tasks() for b in task.execute(threads=1)]
        >>> sum(b.num_rows for b in batches)
        5
        """
        table = self.to_table(store, threads=threads)
        yield from table.to_batches()

    def to_table(self, store: KVStore | None = None, *, threads: int | None = None) -> pa.Table:
        """This task's rows as one Arrow table (``threads``: as for :meth:`execute`).

        Parameters
        ----------
        store : KVStore, optional
            The store to read from; by default one opened from :attr:`uri` (once per process).
        threads : int, optional
            Cores the task may use (see :meth:`execute`).

        Returns
        -------
        pyarrow.Table
            The task's rows, with the plan's schema.

        Raises
        ------
        UserInputException
            ``threads`` is not a positive int.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb, tempfile
        >>> lib = adb.Arctic("lmdb://" + tempfile.mkdtemp()).create_library("demo", adb.LibraryOptions(rows_per_segment=2))
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0, 3.0, 4.0, 5.0]}, index=pd.date_range("2024-01-01", periods=5)))
        >>> plan = lib.scan("S")
        >>> plan.tasks(target_rows=2)[-1].to_table().column("px").to_pylist()
        [5.0]
        """
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise UserInputException(f"threads={threads!r} must be a positive int or None")
        st = store if store is not None else store_for(self.uri, self.read_only)
        pools = single() if threads == 1 else None
        table, meta = read_arrow(st, LibraryKeys(self.library), self.plan, pools=pools)
        return _output(table, meta)


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """A planned read of one version of one symbol (see :meth:`arcticlite.Library.scan`).

    Planning walked the table index once; nothing else is read until tasks run. A plan
    pickles without its store: unpickled elsewhere, its tasks open the URI.

    Attributes
    ----------
    uri : str
        The store's URI (never shown in its ``repr``).
    library : str
        The library's name.
    symbol : str
        The symbol.
    version : int
        The version id the scan reads (resolved once, at planning).
    schema : pyarrow.Schema
        The schema of every batch the tasks yield: the index first (named after the index,
        ``index`` when unnamed), then the data columns.
    read : ReadPlan
        The engine's plan: segments, rows, columns, ranges, query.
    read_only : bool
        Its tasks open the store read-only (a library opened with ``read_only=True``).

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb, tempfile
    >>> lib = adb.Arctic("lmdb://" + tempfile.mkdtemp()).create_library("demo", adb.LibraryOptions(rows_per_segment=2))
    >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0, 3.0, 4.0, 5.0]}, index=pd.date_range("2024-01-01", periods=5)))
    >>> plan = lib.scan("S")
    >>> plan.version, plan.segments, plan.schema.names
    (0, 3, ['index', 'px'])
    """

    uri: str = field(repr=False)  # may hold credentials
    library: str
    symbol: str
    version: int
    schema: pa.Schema
    read: ReadPlan
    read_only: bool = False
    _store: Any = field(default=None, repr=False, compare=False)

    def __reduce__(self) -> tuple[Any, ...]:
        # the planning process's store stays behind: a plan unpickled elsewhere opens the URI
        return (ScanPlan, (self.uri, self.library, self.symbol, self.version, self.schema, self.read,
                           self.read_only))

    @property
    def segments(self) -> int:
        """Segments to fetch, after pruning.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb, tempfile
        >>> lib = adb.Arctic("lmdb://" + tempfile.mkdtemp()).create_library("demo", adb.LibraryOptions(rows_per_segment=2))
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0, 3.0, 4.0, 5.0]}, index=pd.date_range("2024-01-01", periods=5)))
        >>> plan = lib.scan("S")
        >>> lib.scan("S", date_range=(pd.Timestamp("2024-01-05"), None)).segments
        1
        """
        return len(self.read.leaves)

    @property
    def segments_considered(self) -> int:
        """Segments the index and row ranges selected, before pruning by statistics.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb, tempfile
        >>> lib = adb.Arctic("lmdb://" + tempfile.mkdtemp()).create_library("demo", adb.LibraryOptions(rows_per_segment=2))
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0, 3.0, 4.0, 5.0]}, index=pd.date_range("2024-01-01", periods=5)))
        >>> plan = lib.scan("S")
        >>> q = adb.QueryBuilder()
        >>> pruned = lib.scan("S", query_builder=q[q["px"] > 4.5])
        >>> pruned.segments_considered, pruned.segments
        (3, 1)
        """
        return self.read.segments_considered

    @property
    def nbytes(self) -> int:
        """Stored bytes of the segments to fetch.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb, tempfile
        >>> lib = adb.Arctic("lmdb://" + tempfile.mkdtemp()).create_library("demo", adb.LibraryOptions(rows_per_segment=2))
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0, 3.0, 4.0, 5.0]}, index=pd.date_range("2024-01-01", periods=5)))
        >>> plan = lib.scan("S")
        >>> plan.nbytes == sum(task.nbytes for task in plan.tasks())
        True
        """
        return int(self.read.leaves["nbytes"].sum()) if len(self.read.leaves) else 0

    def tasks(self, target_bytes: int = 64 << 20, *, target_rows: int | None = None) -> list[ScanTask]:
        """Cut the scan into tasks of about ``target_bytes`` stored bytes each, and (when
        ``target_rows`` is given) of about ``target_rows`` rows at most.

        A task holds whole row groups (all column slices of the same rows), consecutive in
        index order, so the tasks' outputs concatenated in order are the read's rows; a task
        closes at the first row group that takes it to either target. Stored bytes say what a
        task fetches; rows say what it decodes (well-compressed data is small on disk but not in
        memory). An empty scan has no tasks. Cutting reads nothing.

        Parameters
        ----------
        target_bytes : int
            Stored bytes per task (default 64 MiB).
        target_rows : int, optional
            Rows per task at most (a row group is never split).

        Returns
        -------
        list of ScanTask
            In index order.

        Raises
        ------
        UserInputException
            A target is not positive.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb, tempfile
        >>> lib = adb.Arctic("lmdb://" + tempfile.mkdtemp()).create_library("demo", adb.LibraryOptions(rows_per_segment=2))
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0, 3.0, 4.0, 5.0]}, index=pd.date_range("2024-01-01", periods=5)))
        >>> plan = lib.scan("S")
        >>> [task.rows for task in plan.tasks(target_rows=2)], len(plan.tasks())
        ([2, 2, 1], 1)
        """
        if int(target_bytes) <= 0:
            raise UserInputException(f"target_bytes must be positive, got {target_bytes!r}")
        if target_rows is not None and int(target_rows) <= 0:
            raise UserInputException(f"target_rows must be positive, got {target_rows!r}")
        max_rows = int(target_rows) if target_rows is not None else None
        leaves = self.read.leaves
        deltas = self.read.deltas
        if deltas is not None and (self.read.row_range is not None or not len(leaves)):
            # rows counted in the result (or inserts alone): one task applies every change
            if not len(leaves) and not len(deltas):
                return []
            return [ScanTask(uri=self.uri, library=self.library, plan=self.read, read_only=self.read_only,
                             rows=self.read.total_rows, nbytes=self.nbytes)]
        if not len(leaves):
            return []
        order = np.argsort(leaves["start_row"], kind="stable")
        leaves = leaves[order]
        starts = leaves["start_row"]
        bounds = np.flatnonzero(np.r_[True, starts[1:] != starts[:-1], True])
        cuts: list[tuple[int, int]] = []  # (first group, end group) of each task
        first = 0
        acc = 0
        acc_rows = 0
        for g in range(len(bounds) - 1):
            a, b = int(bounds[g]), int(bounds[g + 1])
            acc += int(leaves["nbytes"][a:b].sum())
            acc_rows += int(leaves["end_row"][a] - leaves["start_row"][a])
            if (acc >= target_bytes or (max_rows is not None and acc_rows >= max_rows)
                    or g == len(bounds) - 2):
                cuts.append((first, g + 1))
                first, acc, acc_rows = g + 1, 0, 0
        scopes: list[Scope | None] = [None] * len(cuts)
        if deltas is not None:  # each task applies the changes of its rows and index interval
            gl = leaves[bounds[:-1]]
            scopes = list(part_scopes(gl["start_row"].astype(np.int64), gl["end_row"].astype(np.int64),
                                      gl["min_index"].astype(np.int64), [c[0] for c in cuts],
                                      is_dt=self.read.meta.index_kind == "datetime"))
        tasks: list[ScanTask] = []
        for (g0, g1), scope in zip(cuts, scopes, strict=True):
            part = leaves[bounds[g0] : bounds[g1]]
            rows = int((part["end_row"] - part["start_row"])[np.r_[True, part["start_row"][1:] != part["start_row"][:-1]]].sum())
            tasks.append(ScanTask(uri=self.uri, library=self.library, plan=self.read.with_leaves(part, scope),
                                  read_only=self.read_only, rows=rows, nbytes=int(part["nbytes"].sum())))
        return tasks

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """Run every task here, in order, yielding their record batches.

        Yields
        ------
        pyarrow.RecordBatch
            Batches of :attr:`schema`, in index order; one task's segments in memory at a time.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb, tempfile
        >>> lib = adb.Arctic("lmdb://" + tempfile.mkdtemp()).create_library("demo", adb.LibraryOptions(rows_per_segment=2))
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0, 3.0, 4.0, 5.0]}, index=pd.date_range("2024-01-01", periods=5)))
        >>> plan = lib.scan("S")
        >>> sum(batch.num_rows for batch in plan.to_batches())
        5
        """
        for task in self.tasks():
            yield from task.execute(self._store)

    def to_reader(self) -> pa.RecordBatchReader:
        """The scan as a ``pyarrow.RecordBatchReader`` that fetches and decodes one task (a few
        segments) at a time: memory stays bounded by a task, whatever the symbol's size.
        DuckDB (``duckdb.from_arrow(reader)``), polars (``pl.from_arrow(reader)``),
        ``pyarrow.dataset.write_dataset(reader, ...)`` and ``pyarrow.parquet.ParquetWriter`` take it.

        Returns
        -------
        pyarrow.RecordBatchReader
            Batches of :attr:`schema`, in index order (read once).

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo", adb.LibraryOptions(rows_per_segment=2))
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3)))
        >>> reader = lib.scan("S").to_reader()
        >>> reader.schema.names
        ['index', 'px']
        >>> reader.read_all().num_rows
        3
        """
        return pa.RecordBatchReader.from_batches(self.schema, self.to_batches())

    def to_table(self) -> pa.Table:
        """The whole scan as one Arrow table (in this process).

        Returns
        -------
        pyarrow.Table
            Every row of the scan, with :attr:`schema` (an empty table when nothing matched).

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb, tempfile
        >>> lib = adb.Arctic("lmdb://" + tempfile.mkdtemp()).create_library("demo", adb.LibraryOptions(rows_per_segment=2))
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0, 3.0, 4.0, 5.0]}, index=pd.date_range("2024-01-01", periods=5)))
        >>> plan = lib.scan("S")
        >>> plan.to_table().column("px").to_pylist()
        [1.0, 2.0, 3.0, 4.0, 5.0]
        """
        parts = [task.to_table(self._store) for task in self.tasks()]
        if not parts:
            return self.schema.empty_table()
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def check_scannable(read: ReadPlan) -> None:
    """Refuse queries whose clauses need all rows at once (slices after a filter,
    aggregations): a task sees only its own rows."""
    if read.query is None:
        return
    bad = sorted({name for name, _ in read.query.clauses if name not in ROW_WISE})
    if bad:
        raise UserInputException(
            f"E_INVALID_USER_ARGUMENT a scan runs row-wise clauses (filter, apply, date_range) in "
            f"each task; this query also has {', '.join(bad)}: use Library.read for it"
        )


def scan_schema(read: ReadPlan) -> pa.Schema:
    """The schema of a scan's batches (the pipeline run on zero rows)."""
    empty = read.with_leaves(read.leaves[:0])
    if empty.deltas is not None:
        empty = replace(empty, deltas=empty.deltas[:0])
    table, meta = read_arrow(cast(KVStore, None), LibraryKeys("-"), empty)  # fetches nothing
    return _output(table, meta).schema
