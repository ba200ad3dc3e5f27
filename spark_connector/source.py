"""The ``arcticlite`` PySpark data source (Python Data Source API, Spark >= 4.0).

Read: the driver plans with ``Library.scan`` (one read of the version's index) and makes one
input partition per :class:`arcticlite.table.ScanTask`; executors run their task and yield
Arrow record batches cast to the exact Arrow schema Spark expects.

Write: executors stage their rows with ``Library.stage`` (Arrow in, segments out), tagged with
the write job's id (``job=``, made on the driver), and return the picklable ``StageResult`` s;
the driver's ``commit`` finalizes exactly those results as one version
(``finalize_staged_data``, falling back to ``sort_and_finalize_staged_data`` when the
partitions' index ranges interleave); failing tasks delete what they staged, and ``abort``
deletes every staged entry of its own job (``delete_staged_data(symbol, job=...)``), never
another job's.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

import arcticlite as adb
from arcticlite.exceptions import AppendOrderException, UnsortedDataException, UserInputException
from spark_connector import types as ty

FORMAT = "arcticlite"
DEFAULT_STAGE_ROWS = 1_000_000
#: how long ``abort`` keeps deleting its job's staged entries that a killed task's Python
#: worker may still be writing (only when a task did not report)
ABORT_SETTLE_SECONDS = 1.0
#: prefix of the job tag of a Spark write (``spark.<32 hex digits>``: 38 characters)
JOB_PREFIX = "spark."

_libs: dict[tuple[int, str, str], Any] = {}
_libs_lock = threading.Lock()


def _task_cpus() -> int:
    """Cores Spark gives the running task (``spark.task.cpus``, default 1): the scan task
    decodes with that many threads, since Spark runs one task per core side by side."""
    try:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        return max(1, int(ctx.cpus())) if ctx is not None else 1
    except Exception:  # noqa: BLE001 - an older PySpark without cpus(): one core, as by default
        return 1


def one_thread_per_core() -> None:
    """In an executor's Python worker (a process that only runs Spark tasks): size
    arcticlite's encode / decode threads to the cores Spark gives a task, unless the user set
    ``VersionStore.NumCPUThreads``. Spark runs one task per core side by side; more threads
    in each would only compete for the same cores."""
    from arcticlite import config

    if config.get_config_int("VersionStore.NumCPUThreads") is None:
        config.set_config_int("VersionStore.NumCPUThreads", _task_cpus())


def open_library(uri: str, library: str) -> Any:
    """``Arctic(uri).get_library(library)``, once per process (executors reuse it)."""
    key = (os.getpid(), uri, library)
    lib = _libs.get(key)
    if lib is None:
        with _libs_lock:
            lib = _libs.get(key)
            if lib is None:
                lib = _libs[key] = adb.Arctic(uri).get_library(library)
    return lib


# ---------------------------------------------------------------------------------------------
# options


def _required(options: Any, name: str) -> str:
    value = options.get(name)
    if not value:
        raise ValueError(f"the arcticlite data source needs .option({name!r}, ...)")
    return str(value)


_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}([ T].*)?$")


def parse_as_of(value: str | None) -> Any:
    """``as_of``: digits → version id; an ISO date/datetime → that time (UTC when naive);
    anything else → a snapshot name."""
    if value is None or value == "":
        return None
    v = value.strip()
    if re.fullmatch(r"-?\d+", v):
        return int(v)
    if _DATETIME.match(v):
        ts = pd.Timestamp(v)
        if ts.tzinfo is None:
            ts = ts.tz_localize("UTC")
        return ts  # a datetime (pd.Timestamp keeps nanoseconds)
    return v


def _bound(text: str) -> pd.Timestamp | None:
    text = text.strip()
    return pd.Timestamp(text) if text and text.lower() not in ("none", "null") else None


@dataclass(frozen=True)
class ReadOptions:
    uri: str
    library: str
    symbol: str
    as_of: Any = None
    columns: tuple[str, ...] | None = None
    date_range: tuple[Any, Any] | None = None
    row_range: tuple[int, int] | None = None
    target_bytes: int | None = None
    partition_rows: int | None = None
    strict_ns: bool = False
    pushdown: bool = True
    metrics_dir: str | None = None

    @classmethod
    def parse(cls, options: Any) -> ReadOptions:
        symbol = options.get("symbol") or options.get("path")
        if not symbol:
            raise ValueError("name the symbol: .load(symbol) or .option('symbol', ...)")
        cols = options.get("columns")
        dr = options.get("date_range")
        date_range = None
        if dr:
            parts = dr.split(",")
            if len(parts) != 2:
                raise ValueError(f"date_range must be 'start,end' (either may be empty), got {dr!r}")
            date_range = (_bound(parts[0]), _bound(parts[1]))
        rr = options.get("row_range")
        row_range = None
        if rr:
            a, b = rr.split(",")
            row_range = (int(a), int(b))
        ns = (options.get("nanoseconds") or "truncate").lower()
        if ns not in ("truncate", "error"):
            raise ValueError(f"option nanoseconds must be 'truncate' or 'error', got {ns!r}")
        tb = options.get("target_bytes")
        pr = options.get("partition_rows")
        return cls(
            uri=_required(options, "uri"), library=_required(options, "library"), symbol=str(symbol),
            as_of=parse_as_of(options.get("as_of")),
            columns=tuple(c.strip() for c in cols.split(",") if c.strip()) if cols else None,
            date_range=date_range, row_range=row_range,
            target_bytes=int(tb) if tb else None, partition_rows=int(pr) if pr else None, strict_ns=ns == "error",
            pushdown=(options.get("pushdown") or "false").lower() in ("true", "1", "yes", "on"),
            metrics_dir=options.get("metrics_dir") or None,
        )

    def scan(self, columns: list[str] | None = None, query_builder: Any = None,
             date_range: tuple[Any, Any] | None = None) -> Any:
        lib = open_library(self.uri, self.library)
        cols = columns if columns is not None else (list(self.columns) if self.columns is not None else None)
        return lib.scan(self.symbol, as_of=self.as_of, date_range=date_range or self.date_range,
                        row_range=self.row_range, columns=cols, query_builder=query_builder)


# ---------------------------------------------------------------------------------------------
# filter pushdown (Spark >= 4.1)

_NS_PER_US = 1000


@dataclass(frozen=True)
class Pushed:
    """One pushed comparison: ``column op value`` (op in ==, >, >=, <, <=, in; or isna / notna,
    without a value)."""

    column: str
    op: str
    value: Any


def _literal(value: Any, spark_type: Any) -> Any:
    from pyspark.sql import types as T

    if isinstance(spark_type, (T.TimestampType, T.TimestampNTZType)):
        ts = pd.Timestamp(value)
        if isinstance(spark_type, T.TimestampType):  # Spark hands a UTC-aware datetime
            ts = ts.tz_convert("UTC") if ts.tzinfo is not None else ts.tz_localize("UTC")
        else:
            ts = ts.tz_localize(None) if ts.tzinfo is not None else ts
        return ts
    return value


def pushable(flt: Any, schema: StructType) -> Pushed | None:
    """The comparison a Spark filter stands for, if arcticlite evaluates it exactly as Spark.

    Pushed: =, <, <=, >, >=, IN on integer, string, boolean and timestamp columns; IS NULL and
    IS NOT NULL on string and timestamp columns (where a missing value is Spark's null; a float's
    NaN is not, and a dynamic-schema integer column absent from some rows reads as 0 but counts
    as missing in a query). Not pushed (Spark evaluates them after the scan): floats (Spark
    orders NaN above every number), decimals and unsigned 64-bit ints, dates, NOT, null-safe
    equality, string prefix / suffix / contains.
    """
    from pyspark.sql import datasource as ds
    from pyspark.sql import types as T

    nulls = {getattr(ds, "IsNull", None): "isna", getattr(ds, "IsNotNull", None): "notna"}
    if type(flt) in nulls and len(flt.attribute) == 1 and flt.attribute[0] in schema.names:
        col = flt.attribute[0]
        if isinstance(schema[col].dataType, (T.StringType, T.TimestampType, T.TimestampNTZType)):
            return Pushed(col, nulls[type(flt)], None)
        return None

    ops = {ds.EqualTo: "==", ds.GreaterThan: ">", ds.GreaterThanOrEqual: ">=",
           ds.LessThan: "<", ds.LessThanOrEqual: "<=", ds.In: "in"}
    op = ops.get(type(flt))
    if op is None or len(flt.attribute) != 1:
        return None
    name = flt.attribute[0]
    if name not in schema.names:
        return None
    st = schema[name].dataType
    ok = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.StringType, T.BooleanType,
          T.TimestampType, T.TimestampNTZType)
    if not isinstance(st, ok):
        return None
    is_ts = isinstance(st, (T.TimestampType, T.TimestampNTZType))
    if op == "in":
        if is_ts or not isinstance(flt.value, (list, tuple)) or any(v is None for v in flt.value):
            return None
        return Pushed(name, op, [_literal(v, st) for v in flt.value])
    if flt.value is None:
        return None
    return Pushed(name, op, _literal(flt.value, st))


def query_of(pushed: list[Pushed]) -> Any:
    """The ``QueryBuilder`` of the pushed comparisons (None if none).

    Spark sees stored nanosecond timestamps floored to the microsecond, so on timestamp
    columns ``> v`` is pushed as ``>= v + 1µs``, ``<= v`` as ``< v + 1µs`` and ``== v`` as the
    microsecond ``[v, v + 1µs)``: exactly the stored values Spark's comparison keeps.
    """
    if not pushed:
        return None
    q = adb.QueryBuilder()
    expr = None
    one_us = pd.Timedelta(_NS_PER_US, "ns")
    for p in pushed:
        c = q[p.column]
        v = p.value
        if p.op in ("isna", "notna"):
            e = c.isna() if p.op == "isna" else c.notna()
        elif isinstance(v, pd.Timestamp):
            if p.op == ">":
                e = c >= v + one_us
            elif p.op == "<=":
                e = c < v + one_us
            elif p.op == "==":
                e = (c >= v) & (c < v + one_us)
            elif p.op == ">=":
                e = c >= v
            else:
                e = c < v
        elif p.op == "in":
            e = c.isin(list(v))
        elif p.op == "==":
            e = c == v
        elif p.op == ">":
            e = c > v
        elif p.op == ">=":
            e = c >= v
        elif p.op == "<":
            e = c < v
        else:
            e = c <= v
        expr = e if expr is None else (expr & e)
    return q[expr]


# ---------------------------------------------------------------------------------------------
# read


@dataclass
class ScanPartition(InputPartition):
    """One ``ScanTask`` (a group of whole row groups), or ``None`` for an empty scan."""

    index: int
    task: Any = None


#: stored bytes a partition fetches at most (what a task reads from the store)
PARTITION_STORED_BYTES = 64 << 20
#: decoded bytes a partition holds at most (what a task builds in memory and hands to Spark)
PARTITION_DECODED_BYTES = 64 << 20


def row_width(schema: pa.Schema) -> int:
    """Decoded bytes of one row, estimated from the Arrow schema (strings count 24 bytes)."""
    width = 0
    for f in schema:
        t = f.type
        width += max(1, t.bit_width // 8) if pa.types.is_primitive(t) else 24
    return max(1, width)


def partition_rows(schema: pa.Schema) -> int:
    """Rows per Spark partition: about ``PARTITION_DECODED_BYTES`` once decoded, so that data
    that compresses well (a few bytes a row on disk) still spreads over the executors."""
    return max(1, PARTITION_DECODED_BYTES // row_width(schema))


class ArcticLiteReader(DataSourceReader):
    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        self.opts = options
        self.schema = schema
        self.names = list(schema.names)
        self.pushed: list[Pushed] = []

    def plan(self) -> Any:
        """The scan of this read (driver side): requested columns, ranges, pushed filters."""
        return self.opts.scan(columns=self.names, query_builder=query_of(self.pushed))

    def partitions(self) -> list[InputPartition]:
        plan = self.plan()
        tasks = plan.tasks(target_bytes=self.opts.target_bytes or PARTITION_STORED_BYTES,
                           target_rows=self.opts.partition_rows or partition_rows(plan.schema))
        if not tasks:
            return [ScanPartition(0, None)]
        return [ScanPartition(i, t) for i, t in enumerate(tasks)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, ScanPartition)
        target = ty.arrow_schema(self.schema)
        task = partition.task
        if task is None:
            return
        if self.opts.metrics_dir:
            record = {"partition": partition.index, "segments": task.segments, "rows": task.rows}
            path = os.path.join(self.opts.metrics_dir, f"{uuid.uuid4().hex}.json")
            with open(path, "w") as fh:
                json.dump(record, fh)
        for batch in task.execute(threads=_task_cpus()):
            if batch.num_rows == 0:
                continue
            names = batch.schema.names
            arrays = []
            for f in target:
                if f.name not in names:
                    raise UserInputException(f"column {f.name!r} is not in symbol {self.opts.symbol!r}")
                arrays.append(ty.conform(batch.column(names.index(f.name)), f.type, f.name, self.opts.strict_ns))
            yield pa.RecordBatch.from_arrays(arrays, schema=target)


class ArcticLitePushdownReader(ArcticLiteReader):
    """The reader with ``pushFilters`` (needs ``spark.sql.python.filterPushdown.enabled``)."""

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:  # noqa: N802 (Spark's name)
        self.pushed = []  # Spark may hand back a reader it already pushed filters into
        for flt in filters:
            p = pushable(flt, self.schema)
            if p is None:
                yield flt
            else:
                self.pushed.append(p)


# ---------------------------------------------------------------------------------------------
# write


@dataclass
class StagedMessage(WriterCommitMessage):
    """What one write task staged: ``StageResult`` s in the task's row order."""

    partition_id: int
    attempt: int
    results: list[Any] = field(default_factory=list)
    rows: int = 0


@dataclass(frozen=True)
class WriteOptions:
    uri: str
    library: str
    symbol: str
    index_column: str | None
    stage_rows: int
    if_exists: str  # "append" / "overwrite" (Spark's mode) or "error" / "ignore"

    @classmethod
    def parse(cls, options: Any, overwrite: bool) -> WriteOptions:
        symbol = options.get("symbol") or options.get("path")
        if not symbol:
            raise ValueError("name the symbol: .save(symbol) or .option('symbol', ...)")
        ie = (options.get("if_exists") or "").lower().replace("_", "")
        if ie in ("", "append", "overwrite"):
            ie = "overwrite" if overwrite else "append"
        elif ie in ("error", "errorifexists"):
            ie = "error"
        elif ie != "ignore":
            raise ValueError(f"if_exists must be 'error' or 'ignore', got {ie!r}")
        return cls(uri=_required(options, "uri"), library=_required(options, "library"),
                   symbol=str(symbol), index_column=options.get("index_column") or None,
                   stage_rows=int(options.get("stage_rows") or DEFAULT_STAGE_ROWS), if_exists=ie)


class SymbolExistsError(UserInputException):
    """``errorifexists``: the symbol already has a live version."""


class ArcticLiteWriter(DataSourceArrowWriter):
    def __init__(self, options: WriteOptions, schema: StructType, overwrite: bool) -> None:
        self.opts = options
        self.schema = schema
        self.overwrite = overwrite
        self.skip = False
        # made on the driver, pickled with the writer to every task: tags what this job stages
        self.job = new_job_tag()
        if options.if_exists in ("error", "ignore"):
            lib = open_library(options.uri, options.library)
            if lib.has_symbol(options.symbol):
                if options.if_exists == "error":
                    raise SymbolExistsError(f"symbol {options.symbol!r} already exists in library "
                                            f"{options.library!r} (mode errorifexists)")
                self.skip = True

    def _stage(self, lib: Any, batches: list[pa.RecordBatch]) -> Any:
        table = ty.to_store(pa.Table.from_batches(batches))
        ic = self.opts.index_column
        if ic is not None and ic not in table.column_names:
            raise UserInputException(f"index_column {ic!r} is not a column of the DataFrame")
        return lib.stage(self.opts.symbol, table, index_column=ic or False, validate_index=False,
                         sort_on_index=ic is not None, job=self.job)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedMessage:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        pid = ctx.partitionId() if ctx is not None else 0
        attempt = ctx.attemptNumber() if ctx is not None else 0
        msg = StagedMessage(pid, attempt)
        if self.skip:
            for _ in iterator:
                pass
            return msg
        one_thread_per_core()
        lib = open_library(self.opts.uri, self.opts.library)
        pending: list[pa.RecordBatch] = []
        n = 0
        try:
            for batch in iterator:
                if batch.num_rows == 0:
                    continue
                pending.append(batch)
                n += batch.num_rows
                if n >= self.opts.stage_rows:
                    msg.results.append(self._stage(lib, pending))
                    msg.rows += n
                    pending, n = [], 0
            if pending:
                msg.results.append(self._stage(lib, pending))
                msg.rows += n
        except BaseException:
            # a failing attempt removes what it staged: nothing of it stays reachable
            if msg.results:
                try:
                    lib.delete_staged_data(msg.results)
                except Exception:  # noqa: BLE001 - the original error matters more
                    pass
            raise
        return msg

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.skip:
            return
        msgs = sorted((m for m in messages if isinstance(m, StagedMessage)), key=lambda m: m.partition_id)
        results = [r for m in msgs for r in m.results]
        lib = open_library(self.opts.uri, self.opts.library)
        mode = "write" if self.overwrite else "append"
        if not results:
            if self.overwrite or not lib.has_symbol(self.opts.symbol):
                empty = ty.to_store(ty.arrow_schema(self.schema).empty_table())
                lib.write(self.opts.symbol, empty, index_column=self.opts.index_column or False)
            self._forget_job(lib)
            return
        try:
            try:
                lib.finalize_staged_data(self.opts.symbol, mode=mode, stage_results=results)
            except AppendOrderException:
                raise
            except UnsortedDataException:
                # partitions' index ranges interleave: merge them (rewrites the staged rows)
                lib.sort_and_finalize_staged_data(self.opts.symbol, mode=mode, stage_results=results)
        except BaseException:
            self._forget_job(lib)
            raise
        # entries of this job that were not committed (an attempt Spark did not pick, e.g. a
        # speculative duplicate) are left over: delete them too
        self._forget_job(lib)

    def _forget_job(self, lib: Any) -> None:
        """Delete every staged entry of this job (best effort)."""
        try:
            lib.delete_staged_data(self.opts.symbol, job=self.job)
        except Exception:  # noqa: BLE001 - an error of the job itself matters more
            pass

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Delete every staged entry of this job, and nothing of another job.

        Reported results are deleted as listed; then every entry tagged with this job's id
        (``delete_staged_data(symbol, job=...)``), which covers tasks that failed or were killed
        before reporting. A killed task's Python worker may still be staging while ``abort``
        runs, so when a task did not report, the job's entries are deleted again for
        ``ABORT_SETTLE_SECONDS``. Their segments become unreachable and ``Library.gc()``
        removes them.
        """
        if self.skip:
            return
        lib = open_library(self.opts.uri, self.opts.library)
        results = [r for m in messages if isinstance(m, StagedMessage) for r in m.results]
        if results:
            lib.delete_staged_data(results)
        lib.delete_staged_data(self.opts.symbol, job=self.job)
        if any(not isinstance(m, StagedMessage) for m in messages) or not messages:
            deadline = time.monotonic() + ABORT_SETTLE_SECONDS
            while time.monotonic() < deadline:
                time.sleep(0.25)
                lib.delete_staged_data(self.opts.symbol, job=self.job)


def new_job_tag() -> str:
    """A fresh tag for the staged entries of one Spark write job."""
    return JOB_PREFIX + uuid.uuid4().hex


# ---------------------------------------------------------------------------------------------
# the data source


class ArcticLiteDataSource(DataSource):
    """``spark.read.format("arcticlite")`` / ``df.write.format("arcticlite")``."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        opts = ReadOptions.parse(self.options)
        plan = opts.scan()
        return ty.spark_schema(plan.schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        opts = ReadOptions.parse(self.options)
        cls = ArcticLitePushdownReader if opts.pushdown else ArcticLiteReader
        return cls(opts, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        return ArcticLiteWriter(WriteOptions.parse(self.options, overwrite), schema, overwrite)

