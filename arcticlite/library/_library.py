"""``Library``: the ArcticDB-compatible API over the version engine (core operations).

Batch operations, snapshots, descriptions and staging live in mixins beside this module.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from arcticlite import normalize as norm
from arcticlite.exceptions import (
    ArcticException,
    InternalException,
    NoDataFoundException,
    NoSuchVersionException,
    StorageException,
    UnsortedDataException,
    UserInputException,
)
from arcticlite.index import ROW_DTYPE, IndexRoot, TableIndexIO, hex_digests, new_digest
from arcticlite.library._options import LibraryOptions
from arcticlite.library._types import ReadRequest, VersionedItem
from arcticlite.normalize import as_of_to_ns, to_ns_bound
from arcticlite.storage import KVStore
from arcticlite.table import (
    Layout,
    Operation,
    ScanPlan,
    TableEngine,
    TableOptions,
    Write,
    WriteMetadata,
    check_scannable,
    data_record,
    index_bounds,
    meta_of,
    scan_schema,
    schema_of,
)
from arcticlite.version import Builder, LibraryKeys, Snapshots, SymbolList, VersionRecord, chain

MAX_SYMBOL_LENGTH = 254


def check_symbol(symbol: Any) -> str:
    """Validate a symbol name; non-str names are coerced like ArcticDB does."""
    if not isinstance(symbol, str):
        if symbol is None:
            raise UserInputException("symbol must be a non-empty string, got None")
        symbol = str(symbol)
    if not symbol:
        raise UserInputException("E_INVALID_USER_ARGUMENT: symbol must be a non-empty string")
    if len(symbol) > MAX_SYMBOL_LENGTH:
        raise UserInputException(
            f"E_NAME_TOO_LONG: symbol name is {len(symbol)} characters; the limit is {MAX_SYMBOL_LENGTH}"
        )
    return symbol


def _table_options(options: LibraryOptions) -> TableOptions:
    return TableOptions(rows_per_segment=options.rows_per_segment, columns_per_segment=options.columns_per_segment,
                        dynamic_schema=options.dynamic_schema)


class LibraryCore:
    """State and core operations shared by the Library mixins."""

    def __init__(self, store: KVStore, name: str, options: LibraryOptions, arctic: Any = None) -> None:
        self._store = store
        self._name = name
        self._arctic = arctic
        self._keys = LibraryKeys(name)
        self._table = TableEngine(store, self._keys, _table_options(options))
        self._options = options
        self._engine = self._table.versions
        self._snapshots = Snapshots(store, self._keys)
        self._symbol_list = SymbolList(store, self._keys, head_of=self._engine.head)
        self._engine.journal = self._journal
        self._engine.journal_intent = self._journal_intent

    def _index_for(self, sym: str, sink: dict[str, bytes] | None = None) -> TableIndexIO:
        """Index IO for ``sym``; new nodes go to ``sink`` (written with the commit) if given."""
        return self._table.index(sym, sink)

    @property
    def _options(self) -> LibraryOptions:
        return self.__options

    @_options.setter
    def _options(self, options: LibraryOptions) -> None:
        self.__options = options
        self._table.options = _table_options(options)

    @property
    def name(self) -> str:
        """The library's name."""
        return self._name

    def options(self) -> LibraryOptions:
        """The options the library was created with."""
        return self._options

    def __repr__(self) -> str:
        return f"Library({self._arctic!r}, path={self._name}, storage={type(self._store).__name__})"

    # -- helpers ---------------------------------------------------------------------------------
    def _prune_default(self, prune: bool | None) -> bool:
        return self._options.prune_previous_versions if prune is None else bool(prune)

    def _layout(self, meta: norm.NormMeta) -> Layout:
        return self._table.layout(meta)

    @staticmethod
    def _pickle_meta(metadata: Any) -> bytes | None:
        return None if metadata is None else pickle.dumps(metadata, protocol=pickle.HIGHEST_PROTOCOL)

    def _normalize(self, data: Any, index_column: Any = False) -> tuple[pa.Table, norm.NormMeta]:
        ic = index_column if index_column not in (False, None) else None
        return norm.normalize(data, index_column=ic)

    _index_bounds = staticmethod(index_bounds)

    def _check_sorted(self, table: pa.Table, meta: norm.NormMeta, op: str) -> str:
        s = norm.sortedness(table, meta)
        if meta.index_kind == "datetime" and s not in ("ASCENDING", "UNKNOWN"):
            raise UnsortedDataException(
                f"When calling {op} with validate_index enabled, input data must be sorted: "
                "sort the frame by its index (df.sort_index()) or pass validate_index=False"
            )
        return s

    _data_record = staticmethod(data_record)

    @staticmethod
    def _meta_of(rec: VersionRecord) -> norm.NormMeta:
        return meta_of(rec)

    @staticmethod
    def _schema_of(rec: VersionRecord) -> pa.Schema:
        return schema_of(rec)

    def _journal(self, sym: str, head: VersionRecord | None, rec: VersionRecord) -> dict[str, bytes]:
        """Symbol-list journal keys for a commit that changes whether ``sym`` is live; the
        engine writes them in the commit transaction where the store allows it."""
        was_live = head is not None and head.latest_live is not None
        is_live = rec.latest_live is not None
        if was_live != is_live or head is None:
            return dict([self._symbol_list.entry(sym, rec.seq, "a" if is_live else "d")])
        return {}

    def _journal_intent(self, sym: str, head: VersionRecord | None, rec: VersionRecord) -> dict[str, bytes]:
        return {self._symbol_list.intent(sym, rec.seq, k.rsplit("/", 1)[1].split(".")[1], rec.token)[0]: b""
                for k in self._journal(sym, head, rec)}

    def _commit(self, sym: str, build: Builder, *, prune: bool = False,
                extra: Mapping[str, bytes] | None = None) -> VersionRecord:
        """Commit ``build``'s record through the engine, then clean up after a prune."""
        head, rec = self._table.commit(sym, build, prune=prune, extra=extra)
        self._after_commit(sym, head, rec, prune)
        return rec

    def _apply(self, sym: str, op: Operation, prune: bool | None = None) -> VersionRecord:
        """Commit the named operation ``op`` (the engine's rebase loop), then clean up after
        a prune."""
        p = self._prune_default(prune)
        head, rec = self._table.apply(sym, op, prune=p)
        self._after_commit(sym, head, rec, p)
        return rec

    def _after_commit(self, sym: str, head: VersionRecord | None, rec: VersionRecord, prune: bool) -> None:
        if prune:
            # the commit itself marked every earlier version dead; now remove their data
            killed = chain.killed_by_prune(head, rec)
            if killed:
                self._cleanup(sym, killed)  # type: ignore[attr-defined]

    def _item(self, sym: str, rec: VersionRecord, data: Any = None) -> VersionedItem:
        return VersionedItem(
            symbol=sym,
            library=self._name,
            data=data,
            version=rec.seq,
            metadata=rec.user_metadata(),
            host=repr(self._store),
            timestamp=rec.created_ns,
        )

    # -- resolution --------------------------------------------------------------------------------
    def _resolve(self, sym: str, as_of: Any, *, missing: type[Exception] = NoSuchVersionException) -> VersionRecord:
        """The version record ``as_of`` designates (live, or held by a snapshot)."""
        if as_of is None:
            rec = self._engine.latest_live(sym)
            if rec is None:
                raise missing(
                    f"E_NO_SUCH_VERSION: version matching query 'latest' not found for symbol {sym!r}"
                )
            return rec
        if isinstance(as_of, str):
            snap = self._snapshots.read(as_of)
            if sym not in snap["symbols"]:
                raise missing(f"E_NO_SUCH_VERSION: symbol {sym!r} is not in snapshot {as_of!r}")
            rec = self._engine.read_record(sym, int(snap["symbols"][sym]))
            if rec is None:
                raise missing(f"E_NO_SUCH_VERSION: snapshot {as_of!r} refers to a missing version of {sym!r}")
            return rec
        if isinstance(as_of, bool) or isinstance(as_of, float | np.floating):
            raise ArcticException("Unexpected combination of read parameters: as_of must be int, str or datetime")
        if isinstance(as_of, int | np.integer) and not isinstance(as_of, np.datetime64):
            if isinstance(as_of, np.integer):
                raise ArcticException("Unexpected combination of read parameters: as_of must be a Python int")
            head = self._engine.head(sym)
            seq = int(as_of)
            if seq < 0:
                # counted from the highest data version id, deleted or not (ArcticDB's rule);
                # delete/prune commits take ids here but are not versions a user wrote
                top = head
                while top is not None and not top.is_data:
                    top = self._engine.read_record(sym, top.seq - 1) if top.seq > 0 else None
                seq = (top.seq if top is not None else -1) + 1 + seq
            try:
                return self._engine.version(sym, seq, head)
            except NoSuchVersionException as exc:
                raise missing(str(exc)) from None
        when = as_of_to_ns(as_of)
        try:
            return self._engine.version_at(sym, when)
        except NoSuchVersionException as exc:
            raise missing(str(exc)) from None

    # -- write -------------------------------------------------------------------------------------
    def write(
        self,
        symbol: str,
        data: Any,
        metadata: Any = None,
        prune_previous_versions: bool | None = None,
        staged: bool = False,
        validate_index: bool = True,
        index_column: Any = False,
        recursive_normalizers: bool | None = None,
    ) -> VersionedItem | None:
        """Write ``data`` as a new version of ``symbol``.

        Creates version ``head + 1``. Safe with concurrent writers: a racing writer simply
        takes the next version id. Data segments are written before the commit point, so a
        failure leaves no visible change.

        Parameters
        ----------
        symbol : str
        data : pandas.DataFrame | pandas.Series | numpy.ndarray | pyarrow.Table | polars.DataFrame
        metadata : Any, optional
            Any picklable object, returned by reads.
        prune_previous_versions : bool, optional
            Delete earlier versions (except those held by snapshots) after the write.
        staged : bool
            Deprecated: same as :meth:`stage`.
        validate_index : bool
            Refuse an unsorted DatetimeIndex (``UnsortedDataException``).
        index_column : str, optional
            For Arrow/polars input: the column to use as index.
        """
        sym = check_symbol(symbol)
        if staged:
            self.stage(sym, data, validate_index=validate_index, index_column=index_column)  # type: ignore[attr-defined]
            return None
        table, meta = self._normalize(data, index_column)
        sorted_ = self._check_sorted(table, meta, "write") if validate_index else norm.sortedness(table, meta)
        op = Write(self._table, sym, table, meta, sorted_=sorted_, metadata=self._pickle_meta(metadata))
        return self._item(sym, self._apply(sym, op, prune_previous_versions))

    def write_pickle(
        self,
        symbol: str,
        data: Any,
        metadata: Any = None,
        prune_previous_versions: bool | None = None,
        staged: bool = False,
        recursive_normalizers: bool | None = None,
    ) -> VersionedItem:
        """Write any picklable object as a new version of ``symbol``."""
        sym = check_symbol(symbol)
        rec = self._write_pickled(sym, data, self._pickle_meta(metadata), "pickle",
                                  self._prune_default(prune_previous_versions))
        return self._item(sym, rec)

    def _write_pickled(self, sym: str, data: Any, mbytes: bytes | None, kind: str, prune: bool = False) -> VersionRecord:
        body = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
        digest = new_digest(body)
        self._store.write(self._keys.tdata(sym, digest), body)
        leaf = np.zeros(1, dtype=ROW_DTYPE)
        leaf["end_row"] = 0
        leaf["digest"] = np.frombuffer(bytes.fromhex(digest), dtype=np.uint8)
        leaf["nbytes"] = len(body)
        root = self._index_for(sym).build(leaf)
        root = IndexRoot(digest=root.digest, height=root.height, rows=0, segments=1)

        def build(head: VersionRecord | None, seq: int) -> VersionRecord:
            return VersionRecord(
                symbol=sym, seq=seq, kind=kind, created_ns=0, token="",
                dead=head.dead if head is not None else (), latest_live=seq, index=root,
                pickled=True, metadata=mbytes,
            )

        rec = self._commit(sym, build, prune=prune)
        return rec

    # -- read --------------------------------------------------------------------------------------
    def read(
        self,
        symbol: str,
        as_of: Any = None,
        date_range: tuple[Any, Any] | None = None,
        row_range: tuple[int, int] | None = None,
        columns: list[Any] | None = None,
        query_builder: Any = None,
        lazy: bool = False,
        output_format: Any = None,
        arrow_string_format_default: Any = None,
        arrow_string_format_per_column: Any = None,
    ) -> VersionedItem:
        """Read a version of ``symbol``.

        ``as_of`` is a version id (negative counts from the end), a snapshot name or a
        datetime (the latest version created at or before it; naive means UTC). Only the
        segments overlapping ``date_range`` / ``row_range`` / ``columns`` are fetched.
        ``query_builder`` (a :class:`arcticlite.QueryBuilder`) then runs on those rows, fetching
        only the columns it needs; its leading date ranges, index comparisons and row slices
        narrow the segments read (see :mod:`arcticlite.query`).
        """
        sym = check_symbol(symbol)
        if date_range is not None and row_range is not None:
            raise ArcticException("Date range and row range both specified: give only one")
        if lazy:
            from arcticlite.library._lazy import LazyDataFrame

            return LazyDataFrame(self, ReadRequest(sym, as_of=as_of, date_range=date_range,  # type: ignore[return-value]
                                                   row_range=row_range, columns=columns,
                                                   query_builder=query_builder, output_format=output_format))
        rec = self._resolve(sym, as_of)
        data = self._read_data(sym, rec, date_range=date_range, row_range=row_range, columns=columns,
                               output_format=output_format, query_builder=query_builder)
        return self._item(sym, rec, data)

    def _read_data(
        self,
        sym: str,
        rec: VersionRecord,
        *,
        date_range: Any = None,
        row_range: tuple[int, int] | None = None,
        columns: list[Any] | None = None,
        output_format: Any = None,
        query_builder: Any = None,
    ) -> Any:
        if rec.pickled:
            return self._read_pickled(sym, rec, date_range=date_range, row_range=row_range,
                                      columns=columns, query_builder=query_builder)
        ir = None
        if date_range is not None:
            ir = (to_ns_bound(date_range[0], low=True), to_ns_bound(date_range[1], low=False))
        plan = self._table.plan(rec, date_range=ir, row_range=row_range, columns=columns,
                                query_builder=query_builder)
        fmt = output_format
        if fmt is None:
            fmt = getattr(self, "_output_format", None) or getattr(self._arctic, "_output_format", None)
        return self._table.read(plan, fmt or "pandas")

    def _read_pickled(self, sym: str, rec: VersionRecord, *, date_range: Any, row_range: Any,
                      columns: Any, query_builder: Any) -> Any:
        if query_builder is not None:
            raise InternalException(f"E_RUNTIME_ERROR Cannot filter pickled data of symbol {sym!r}")
        if date_range is not None or row_range is not None or columns is not None:
            raise InternalException(
                f"E_ASSERTION_FAILURE: Cannot perform processing (columns, date_range, row_range) "
                f"on pickled data of symbol {sym!r}"
            )
        if rec.index is None or rec.index.digest is None:
            return None
        leaf = self._index_for(sym).leaves(rec.index)
        return pickle.loads(self._store.read(self._keys.tdata(sym, hex_digests(leaf)[0])))

    def scan(
        self,
        symbol: str,
        as_of: Any = None,
        date_range: tuple[Any, Any] | None = None,
        row_range: tuple[int, int] | None = None,
        columns: list[Any] | None = None,
        query_builder: Any = None,
    ) -> ScanPlan:
        """Plan a read of ``symbol`` for parallel execution: the scan / stage API.

        Resolves the version and plans the read once (the same planning as :meth:`read`:
        segments pruned by ``date_range`` / ``row_range``, ``columns`` and the statistics of
        the query's leading filters) and returns a :class:`~arcticlite.table.ScanPlan` with
        the version, the result's Arrow schema (the index as a leading column) and
        ``tasks(target_bytes=...)``: picklable groups of segments that any process can run
        with only the library's URI (``task.execute()`` yields ``pyarrow.RecordBatch`` es).

        Parameters
        ----------
        symbol : str
        as_of : int, str or datetime, optional
            As in :meth:`read`.
        date_range, row_range, columns
            As in :meth:`read`.
        query_builder : QueryBuilder, optional
            Row-wise clauses only (filters, ``apply``, ``date_range``): each task runs them on
            its own rows. Aggregations and slices after a filter raise ``UserInputException``.

        Returns
        -------
        ScanPlan

        Raises
        ------
        NoSuchVersionException
            ``as_of`` names no live version.
        UserInputException
            Pickled data (it has no columns to scan), or a query that needs all rows at once.

        Examples
        --------
        >>> import arcticlite as adb, pandas as pd
        >>> lib = adb.Arctic("mem://").get_library("scan_doc", create_if_missing=True)
        >>> _ = lib.write("s", pd.DataFrame({"x": range(5)}, index=pd.date_range("2024-01-01", periods=5)))
        >>> plan = lib.scan("s", columns=["x"])
        >>> plan.schema.names
        ['index', 'x']
        >>> sum(batch.num_rows for task in plan.tasks() for batch in task.execute(lib._store))
        5
        """
        sym = check_symbol(symbol)
        if date_range is not None and row_range is not None:
            raise ArcticException("Date range and row range both specified: give only one")
        rec = self._resolve(sym, as_of)
        if rec.pickled:
            raise UserInputException(
                f"symbol {sym!r} version {rec.seq} holds pickled data, which has no columns to scan; use read()"
            )
        ir = None
        if date_range is not None:
            ir = (to_ns_bound(date_range[0], low=True), to_ns_bound(date_range[1], low=False))
        read = self._table.plan(rec, date_range=ir, row_range=row_range, columns=columns,
                                query_builder=query_builder)
        check_scannable(read)
        uri = self._arctic.get_uri() if self._arctic is not None else "mem://"
        return ScanPlan(uri=uri, library=self._name, symbol=sym, version=rec.seq,
                        schema=scan_schema(read), read=read, _store=self._store)

    def head(self, symbol: str, n: int = 5, as_of: Any = None, columns: list[Any] | None = None,
             lazy: bool = False, output_format: Any = None, **_: Any) -> VersionedItem:
        """The first ``n`` rows (all but the last ``|n|`` when negative)."""
        sym = check_symbol(symbol)
        if lazy:
            return self._lazy(sym, as_of, columns, output_format).head(n)
        rec = self._resolve(sym, as_of)
        total = rec.index.rows if rec.index is not None else 0
        rr = (0, n) if n >= 0 else (0, max(0, total + n))
        return self._item(sym, rec, self._read_data(sym, rec, row_range=rr, columns=columns, output_format=output_format))

    def tail(self, symbol: str, n: int = 5, as_of: Any = None, columns: list[Any] | None = None,
             lazy: bool = False, output_format: Any = None, **_: Any) -> VersionedItem:
        """The last ``n`` rows (all but the first ``|n|`` when negative)."""
        sym = check_symbol(symbol)
        if lazy:
            return self._lazy(sym, as_of, columns, output_format).tail(n)
        rec = self._resolve(sym, as_of)
        total = rec.index.rows if rec.index is not None else 0
        rr = (max(0, total - n), total) if n >= 0 else (min(total, -n), total)
        return self._item(sym, rec, self._read_data(sym, rec, row_range=rr, columns=columns, output_format=output_format))

    def _lazy(self, sym: str, as_of: Any, columns: Any, output_format: Any) -> Any:
        from arcticlite.library._lazy import LazyDataFrame

        return LazyDataFrame(self, ReadRequest(sym, as_of=as_of, columns=columns, output_format=output_format))

    def __getitem__(self, symbol: str) -> VersionedItem:
        return self.read(symbol)

    def __contains__(self, symbol: str) -> bool:
        return self.has_symbol(symbol)

    def has_symbol(self, symbol: str, as_of: Any = None) -> bool:
        """Whether ``symbol`` has a live version (or the version/snapshot ``as_of`` holds it)."""
        sym = check_symbol(symbol)
        if isinstance(as_of, str):
            snap = self._snapshots.read(as_of)
            return sym in snap["symbols"]
        try:
            self._resolve(sym, as_of)
            return True
        except NoDataFoundException:
            return False

    # -- metadata ----------------------------------------------------------------------------------
    def read_metadata(self, symbol: str, as_of: Any = None) -> VersionedItem:
        """The user metadata of a version (reads only the version record)."""
        sym = check_symbol(symbol)
        rec = self._resolve(sym, as_of, missing=NoDataFoundException)
        return self._item(sym, rec)

    def write_metadata(self, symbol: str, metadata: Any, prune_previous_versions: bool | None = None) -> VersionedItem:
        """A new version with the same data and new metadata (no data is rewritten)."""
        sym = check_symbol(symbol)
        rec = self._apply(sym, WriteMetadata(self._table, sym, self._pickle_meta(metadata)), prune_previous_versions)
        return self._item(sym, rec)

    # -- delete / prune ----------------------------------------------------------------------------
    def delete(self, symbol: str, versions: int | list[int] | None = None) -> None:
        """Delete all versions of ``symbol`` (it leaves ``list_symbols``), or only ``versions``.

        Data still referenced by a live version or a snapshot is kept; the rest is removed.
        """
        sym = check_symbol(symbol)
        if versions is None:
            head = self._engine.head(sym)
            if head is None or head.latest_live is None:
                return
            self._tombstone(sym, None)
            return
        vs = [versions] if isinstance(versions, int | np.integer) else list(versions)
        if not vs:
            return
        self._tombstone(sym, [int(v) for v in vs])

    def _tombstone(self, sym: str, versions: list[int] | None) -> VersionRecord | None:
        killed: set[int] = set()
        rec = self._commit(sym, chain.tombstone(sym, versions, killed))
        self._cleanup(sym, killed)  # type: ignore[attr-defined]
        return rec

    def prune_previous_versions(self, symbol: str) -> None:
        """Delete every version but the latest (versions in snapshots keep their data)."""
        sym = check_symbol(symbol)
        head = self._engine.head(sym)
        if head is None or head.latest_live is None:
            raise StorageException(f"E_SYMBOL_NOT_FOUND: symbol {sym!r} not found")
        self._prune(sym)

    def _prune(self, sym: str) -> None:
        if not chain.older_live(self._engine.head(sym)):
            return
        killed: set[int] = set()
        try:
            self._engine.commit(sym, chain.prune(sym, killed))
        except NoSuchVersionException:
            return
        self._cleanup(sym, killed)  # type: ignore[attr-defined]


def _ts(ns: int) -> str:

    return str(pd.Timestamp(ns, unit="ns"))
