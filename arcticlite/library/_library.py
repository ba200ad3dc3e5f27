"""``Library``: the ArcticDB-compatible API, a façade over the engine layer.

Every public method validates its arguments, normalizes user objects (``arcticlite.normalize``)
and delegates: reads to the engine's one read pipeline (``TableEngine.plan`` / ``read``),
writes to named operations committed by ``TableEngine.apply`` (the one rebase loop), version
chain rules and snapshots to ``arcticlite.version``, clean-up and ``gc`` to the engine. The
class holds no data logic of its own: each method can be read in one place.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import pickle
import sys
from collections.abc import Callable
from types import EllipsisType
from typing import Any, TypeVar, cast

import numpy as np
import pyarrow as pa

from arcticlite import normalize as norm
from arcticlite._envelope import naming_key, unseal_pickled
from arcticlite.exceptions import (
    ArcticDbNotYetImplemented,
    ArcticException,
    ArcticInvalidApiUsageException,
    CommitStateUnknownError,
    CorruptDataError,
    FormatEOFError,
    InternalException,
    KeyNotFoundException,
    MissingKeysInStageResultsError,
    NoDataFoundException,
    NoSuchVersionException,
    PermissionException,
    SchemaException,
    StorageException,
    UnsortedDataException,
    UserInputException,
)
from arcticlite.index import EMPTY_ROOT, hex_digests
from arcticlite.library import _args as args
from arcticlite.library import _batch as batch
from arcticlite.library import _describe as describe
from arcticlite.library._lazy import LazyDataFrame, LazyDataFrameCollection, concat
from arcticlite.library._merge import (
    DEFAULT_STRATEGY,
    MergeStrategy,
    check_strategy,
    delete_spec,
    merge_spec,
    merge_strategy,
    on_columns,
)
from arcticlite.library._names import check_symbol
from arcticlite.library._options import EnterpriseLibraryOptions, LibraryOptions
from arcticlite.library._resolve import resolve
from arcticlite.library._sizes import AdminTools
from arcticlite.library._types import (
    DataError,
    DeleteRequest,
    KeyNotFoundInStageResultInfo,
    ReadInfoRequest,
    ReadRequest,
    StagedDataFinalizeMethod,
    StageResult,
    SymbolDescription,
    SymbolVersion,
    UpdatePayload,
    VersionedItem,
    VersionInfo,
    WriteMetadataPayload,
    WritePayload,
    string_format_name,
)
from arcticlite.query import QueryBuilder
from arcticlite.storage import KVStore, MemoryStore
from arcticlite.table import (
    DEFAULT_GRACE_SECONDS,
    FRAGMENTED_SEGMENT_COUNT,
    Append,
    CompactionJob,
    CompactionPlan,
    Finalize,
    FoldDeltas,
    FoldPlan,
    GcReport,
    Merge,
    Operation,
    ReadExplain,
    ReplaceRange,
    ScanPlan,
    StagedEntry,
    TableEngine,
    TableOptions,
    VerifyReport,
    Write,
    WriteMetadata,
    WritePickled,
    check_scannable,
    cleanup,
    collect_garbage,
    commit_op,
    compaction_tasks,
    consumed_staged,
    has_deltas,
    merge_sorted,
    meta_of,
    plan_compaction,
    plan_fold,
    rewrite_compaction,
    run_tasks,
    scan_schema,
    shared_choices,
    stage_table,
    staged_entries,
    staged_keys,
    staged_symbols,
    verify_library,
)
from arcticlite.version import (
    READING,
    CommitGroup,
    LibraryKeys,
    Snapshots,
    SymbolList,
    VersionRecord,
    chain,
    encode_metadata,
    note_operation,
    registry_key,
    unpickle,
)

MAX_SNAPSHOT_NAME = 254

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

#: Batch calls that only read: on a local store they run in turn in the calling thread.
_LOCAL_READS = frozenset({"read_batch", "read_metadata_batch", "get_description_batch"})
#: Batches whose writes share encoding choices (``table._segments.shared_choices``).
_SHARED_CHOICES = frozenset({"write_batch", "write_pickle_batch", "append_batch", "update_batch"})


class LibraryDeletedError(StorageException):
    """A change through a ``Library`` whose library was deleted (``Arctic.delete_library``)
    since it was opened; nothing was written."""


def _mutates(fn: F) -> F:
    """Mark a method that changes the store: on a read-only library it raises
    ``PermissionException`` naming it, before anything is read or written."""
    op = fn.__name__

    @functools.wraps(fn)
    def checked(self: Library, *args: Any, **kwargs: Any) -> Any:
        if self._read_only:
            self._refuse_write(op)
        return fn(self, *args, **kwargs)

    return cast(F, checked)


def _table_options(options: LibraryOptions) -> TableOptions:
    return TableOptions(rows_per_segment=options.rows_per_segment, columns_per_segment=options.columns_per_segment,
                        dynamic_schema=options.dynamic_schema, bloom_min_distinct=options.bloom_min_distinct,
                        bloom_max_fraction=float(options.bloom_max_fraction),
                        merge_on_read=options.merge_on_read, compaction_deltas=options.compaction_deltas,
                        compaction_delta_share=float(options.compaction_delta_share))


def _finalize_mode(mode: Any) -> StagedDataFinalizeMethod:
    if isinstance(mode, StagedDataFinalizeMethod):
        return mode
    if isinstance(mode, str) and mode.lower() in ("write", "append"):
        return StagedDataFinalizeMethod[mode.upper()]
    raise ArcticInvalidApiUsageException(
        f"mode must be StagedDataFinalizeMethod.WRITE/APPEND or 'write'/'append', got {mode!r}")


class Library:
    """A library of symbols, each a chain of immutable versions (ArcticDB's ``Library``).

    Obtain one from :meth:`Arctic.get_library` / :meth:`Arctic.create_library`; do not build
    one directly. Every method is safe to call from many threads and processes at once, on
    every backend: writes commit with create-if-absent of the next version key, and appends
    and updates rebase on a concurrent commit instead of losing it. A ``Library`` pickles as
    its connection URI and name, so lazy frames and scan plans can travel to other processes
    (not for ``mem://``, whose data lives in one process).

    Parameters
    ----------
    store : KVStore
        The store of the connection (memory, LMDB or S3).
    name : str
        The library's name.
    options : LibraryOptions
        The options it was created with.
    arctic : Arctic, optional
        The connection it came from (needed to pickle it).
    read_only : bool
        Refuse every change with ``PermissionException``.
    allow_pickle : bool
        Whether reads may unpickle stored objects that are not plain values.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").get_library("demo", create_if_missing=True)
    >>> lib
    Library(Arctic(config=MemoryStore()), path=demo, storage=MemoryStore)
    >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0]}))
    >>> "S" in lib, lib["S"].data["px"].tolist()
    (True, [1.0, 2.0])
    """

    def __init__(self, store: KVStore, name: str, options: LibraryOptions, arctic: Any = None, *,
                 read_only: bool = False, allow_pickle: bool = True) -> None:
        self._store = store
        self._name = name
        self._arctic = arctic
        self._read_only = read_only
        self._allow_pickle = allow_pickle
        self._keys = LibraryKeys(name)
        self._table = TableEngine(store, self._keys, _table_options(options))
        self._options = options
        self._engine = self._table.versions
        self._snapshots = Snapshots(store, self._keys)
        self._symbol_list = SymbolList(store, self._keys, head_of=self._engine.head, read_only=read_only)
        self._engine.journal = self._commit_journal
        self._engine.journal_intent = self._journal_intent
        #: the library's registry entry when this handle was opened (``Arctic`` sets it): a
        #: commit checks it is still there, so a deleted library's handle cannot write
        self._registry: bytes | None = None
        self._local_store = type(store).read_view is not KVStore.read_view or isinstance(store, MemoryStore)
        self._output_format: Any = None
        self._string_format: str | None = None  # ArrowOutputStringFormat name, library default

    # -- identity and options -----------------------------------------------------------------
    @property
    def _options(self) -> LibraryOptions:
        return self.__options

    @_options.setter
    def _options(self, options: LibraryOptions) -> None:
        self.__options = options
        self._table.options = _table_options(options)

    @property
    def name(self) -> str:
        """The library's name.

        Examples
        --------
        >>> import arcticlite as adb
        >>> adb.Arctic("mem://").create_library("prices").name
        'prices'
        """
        return self._name

    def options(self) -> LibraryOptions:
        """The options the library was created with (ArcticDB's ``Library.options()``).

        Returns
        -------
        LibraryOptions
            A copy: changing it changes nothing (use :meth:`Arctic.modify_library_option`).

        Examples
        --------
        >>> import arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo", adb.LibraryOptions(rows_per_segment=1000))
        >>> lib.options().rows_per_segment, lib.options().dynamic_schema
        (1000, False)
        """
        return dataclasses.replace(self._options)

    def enterprise_options(self) -> EnterpriseLibraryOptions:
        """Enterprise options as given to ``create_library`` or ``modify_library_option``
        (kept and reported as ArcticDB keeps them; arcticlite has no replication or background
        deletion).

        Returns
        -------
        EnterpriseLibraryOptions
            ``replication=False, background_deletion=False`` unless set.

        Examples
        --------
        >>> import arcticlite as adb
        >>> adb.Arctic("mem://").create_library("demo").enterprise_options()
        EnterpriseLibraryOptions(replication=False, background_deletion=False)
        """
        if self._arctic is None:
            return EnterpriseLibraryOptions()
        return self._arctic._enterprise_options(self._name)

    def __repr__(self) -> str:
        return f"Library({self._arctic!r}, path={self._name}, storage={type(self._store).__name__})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles as its ``Arctic`` connection and name (lazy frames and scan plans travel)."""
        if self._arctic is None:
            raise TypeError("a Library made without an Arctic connection cannot be pickled")
        return (self._arctic._library_for_pickle, (self._name, self._output_format, self._string_format,
                                                   self._read_only, self._allow_pickle))

    def __getitem__(self, symbol: str) -> VersionedItem:
        return self.read(symbol)

    def __contains__(self, symbol: str) -> bool:
        return self.has_symbol(symbol)

    @property
    def read_only(self) -> bool:
        """Whether this library refuses every change (``get_library(..., read_only=True)`` or
        ``Arctic(..., read_only=True)``).

        Examples
        --------
        >>> import arcticlite as adb
        >>> ac = adb.Arctic("mem://")
        >>> ac.create_library("prices").read_only, ac.get_library("prices", read_only=True).read_only
        (False, True)
        """
        return self._read_only

    # -- internals shared by the methods ---------------------------------------------------------
    def _refuse_write(self, op: str) -> None:
        raise PermissionException(
            f"{op} refused: library {self._name!r} was opened with read_only=True, so nothing in it can "
            "change; open it without read_only to write")

    def _prune_default(self, prune: bool | None) -> bool:
        return self._options.prune_previous_versions if prune is None else bool(prune)

    @staticmethod
    def _pickle_meta(metadata: Any) -> bytes | None:
        if metadata is None:
            return None
        try:
            return encode_metadata(metadata)  # plain values as JSON, the rest pickled
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as exc:
            raise UserInputException(
                f"metadata of type {type(metadata).__name__} cannot be stored: it does not pickle ({exc}); "
                "pass plain values (dict, list, str, numbers, pandas objects)") from None

    @staticmethod
    def _normalize(data: Any, index_column: Any = False, *, to_store: bool = False,
                   row_major: list[norm.RowMajorBlock] | None = None) -> tuple[pa.Table, norm.NormMeta]:
        """``to_store``: the table only goes to the segment writer (few distinct strings may
        stay dictionary-encoded on the way: ``normalize(dictionary_strings=True)``);
        ``row_major``: see :func:`arcticlite.normalize.normalize`."""
        return norm.normalize(data, index_column=index_column if index_column not in (False, None) else None,
                              dictionary_strings=to_store, row_major=row_major)

    @staticmethod
    def _check_sorted(table: pa.Table, meta: norm.NormMeta, op: str) -> str:
        s = norm.sortedness(table, meta)
        if meta.index_kind == "datetime" and table.num_rows and table.column(0).null_count:
            raise UnsortedDataException(
                f"When calling {op} with validate_index enabled, input data must be sorted: its index holds "
                f"{table.column(0).null_count} NaT, which cannot be ordered; drop or fill those rows, or pass "
                "validate_index=False to store them as they are")
        if meta.index_kind == "datetime" and s not in ("ASCENDING", "UNKNOWN"):
            raise UnsortedDataException(
                f"When calling {op} with validate_index enabled, input data must be sorted: "
                "sort the frame by its index (df.sort_index()) or pass validate_index=False"
            )
        return s

    def _check_not_deleted(self) -> None:
        """Raise ``LibraryDeletedError`` if the library this handle opened was deleted since
        (also when one of that name was created again): one read of its registry entry, at each
        commit. The engine calls it just before the commit point; a deletion racing the commit
        itself is not seen (the store's commit cannot check a key)."""
        if self._registry is None or not self._local_store:
            # not opened through an Arctic (nothing to compare with); or a remote store, where
            # the check would cost every write a request (and ArcticDB does not check there)
            return
        raw = self._store.read_if_exists(registry_key(self._name))
        if raw is not None and bytes(raw) == self._registry:
            return
        again = "" if raw is None else " (a library of that name was created again since)"
        raise LibraryDeletedError(
            f"library {self._name!r} was deleted with Arctic.delete_library after this Library handle was "
            f"opened{again}; nothing was written. Open the library again with Arctic.get_library or "
            "Arctic.create_library to use it")

    def _commit_journal(self, sym: str, head: VersionRecord | None, rec: VersionRecord) -> dict[str, bytes]:
        """:meth:`_journal`, after :meth:`_check_not_deleted` (the engine calls it just before
        each commit point)."""
        self._check_not_deleted()
        return self._journal(sym, head, rec)

    def _journal(self, sym: str, head: VersionRecord | None, rec: VersionRecord) -> dict[str, bytes]:
        """Symbol-list journal keys for a commit that changes whether ``sym`` is live; the
        version engine writes them in the commit transaction where the store allows it."""
        was_live = head is not None and head.latest_live is not None
        is_live = rec.latest_live is not None
        if was_live != is_live or head is None:
            return dict([self._symbol_list.entry(sym, rec.seq, "a" if is_live else "d")])
        return {}

    def _journal_intent(self, sym: str, head: VersionRecord | None, rec: VersionRecord) -> dict[str, bytes]:
        return {self._symbol_list.intent(sym, rec.seq, k.rsplit("/", 1)[1].split(".")[1], rec.token)[0]: b""
                for k in self._journal(sym, head, rec)}

    def _apply(self, sym: str, op: Operation, prune: bool | None = None) -> VersionRecord:
        """Commit the named operation ``op`` (the engine's rebase loop), then remove the data
        of the versions a prune made unreachable."""
        p = self._prune_default(prune)
        try:
            head, rec = self._table.apply(sym, op, prune=p)
            note_operation(op)
        except ArcticException as exc:
            # a refusal (raised while building the record, before the commit point) leaves
            # nothing behind; after a storage failure or an unknown outcome the segments stay
            # (the version may exist), and gc() removes them if it does not
            if not isinstance(exc, StorageException | CommitStateUnknownError) or isinstance(exc, LibraryDeletedError):
                op.discard()
            raise
        if p:
            killed = chain.killed_by_prune(head, rec)
            if killed:
                self._cleanup(sym, killed)
        return rec

    def _cleanup(self, sym: str, killed: set[int] | None = None) -> None:
        cleanup(self._table, self._engine, self._snapshots, sym, killed)

    def _item(self, sym: str, rec: VersionRecord, data: Any = None, **given: Any) -> VersionedItem:
        """The ``VersionedItem`` of ``rec``; a write passes ``metadata=`` (the caller's object),
        a read decodes the stored one (under the library's ``allow_pickle``)."""
        metadata = given["metadata"] if "metadata" in given else rec.user_metadata(self._allow_pickle)
        return VersionedItem(symbol=sym, library=self._name, data=data, version=rec.vid,
                             metadata=metadata, host=repr(self._store), timestamp=rec.created_ns)

    def _resolve(self, sym: str, as_of: Any, *, missing: type[Exception] = NoSuchVersionException) -> VersionRecord:
        return resolve(self._engine, self._snapshots, sym, as_of, missing=missing)

    def _resolve_to_read(self, sym: str, as_of: Any) -> VersionRecord:
        """:meth:`_resolve` for a read of the version's data: when that is the latest version,
        its index root may be fetched while the version resolves (S3: ``KVStore.prefetch``)."""
        reading = READING.set(as_of is None)
        try:
            return self._resolve(sym, as_of)
        finally:
            READING.reset(reading)

    def _index_range(self, date_range: Any) -> tuple[int, int] | None:
        if date_range is None:
            return None
        return args.date_bounds(date_range)

    def _checked_range(self, date_range: Any, op: str) -> tuple[int, int]:
        """The bounds of a date_range that changes data: a range ending before it starts is
        refused (it would commit a version that changes nothing)."""
        lo, hi = self._index_range(date_range)  # type: ignore[misc]
        if lo > hi:
            raise UserInputException(
                f"{op}: date_range {tuple(date_range)!r} ends before it starts; give (start, end) with "
                "start <= end (None for an open end). Nothing was written")
        return lo, hi

    def _worker_uri(self) -> str:
        """The URI tasks run elsewhere open the store with (its credentials included)."""
        return self._arctic._uri if self._arctic is not None else "mem://"

    def _output(self, output_format: Any) -> Any:
        return (output_format or self._output_format or getattr(self._arctic, "_output_format", None)
                or "pandas")

    def _run_batch(self, what: str, items: list[Any], fn: Any, sym_of: Any,
                   as_of_of: Any = lambda _i: None, *, grouped: bool = False) -> list[Any]:
        # reads of a local store (LMDB views, memory) are Python work that threads only share
        # out under the GIL: one after another in this thread is faster (100 reads of 10,000
        # rows: ~75 ms in turn, 110-150 ms on the batch threads); S3 requests overlap on them
        # writes of a local store wait only on their commit's fsync: a thread per core overlaps
        # those; S3 requests overlap on the (wider) batch pool
        pools = self._table.pools
        pool = (None if what in _LOCAL_READS else pools.local_batch) if self._local_store else pools.batch
        if what in _SHARED_CHOICES:  # the symbols of a batch search a column's encoding once
            memo: dict[Any, Any] = {}
            inner = fn

            def fn(item: Any) -> Any:
                with shared_choices(memo):
                    return inner(item)
        if not grouped or not self._engine.store.atomic_commit or len(items) < 2:
            return batch.run_batch(pool, items, fn, sym_of, as_of_of, what=what)
        # one transaction for the items' commits (LMDB: one sync, not one per symbol); an item
        # whose version was taken meanwhile by another writer is done again on its own. The
        # items are then Python work under the GIL: in turn in this thread, while the store
        # copies the full groups on a thread of its own, is faster than two batch threads (100
        # writes of 10,000 rows x 5: median ~490 ms vs ~565 ms)
        group, plain = CommitGroup(self._engine.store), fn
        pool = None if self._local_store else pool

        def held(pair: tuple[int, Any]) -> Any:
            with group.item(pair[0]):
                return plain(pair[1])
        out = batch.run_batch(pool, list(enumerate(items)), held, lambda pair: sym_of(pair[1]),
                              lambda pair: as_of_of(pair[1]), what=what)
        group.flush()
        for i, exc in sorted(group.redo.items()):
            out[i] = (batch.to_data_error(sym_of(items[i]), exc, as_of_of(items[i])) if exc is not None
                      else batch.run_batch(None, [items[i]], plain, sym_of, as_of_of, what=what)[0])
        return out

    # -- writes ---------------------------------------------------------------------------------
    def _writer(self, bloom_min_distinct: int | None | EllipsisType) -> TableEngine:
        """The engine of one write: the library's, or with that write's Bloom-filter threshold
        (refused with ``UserInputException`` before anything is written)."""
        if bloom_min_distinct is ...:
            return self._table
        return self._table.with_options(bloom_min_distinct=bloom_min_distinct)

    @_mutates
    def write(self, symbol: str, data: Any, metadata: Any = None, prune_previous_versions: bool | None = None,
              staged: bool = False, validate_index: bool = True, index_column: Any = False,
              recursive_normalizers: bool | None = None, *,
              bloom_min_distinct: int | None | EllipsisType = ...) -> VersionedItem | None:
        """Write ``data`` as a new version of ``symbol``.

        Creates version ``head + 1``. Safe with concurrent writers: a racing writer simply
        takes the next version id. Data segments are written before the commit point, so a
        failure leaves no visible change.

        Parameters
        ----------
        symbol : str
            The symbol's name (any non-empty Unicode string of at most 254 characters).
        data : pandas.DataFrame | pandas.Series | numpy.ndarray | pyarrow.Table | polars.DataFrame
            The data; other objects are refused (use :meth:`write_pickle`).
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
        recursive_normalizers : bool, optional
            Accepted for ArcticDB compatibility; ignored.
        bloom_min_distinct : int or None, optional
            arcticlite only: this write's Bloom-filter threshold instead of the library's
            (``LibraryOptions.bloom_min_distinct``); None writes no filters.

        Returns
        -------
        VersionedItem
            The symbol, library and new version id (``None`` with ``staged=True``).

        Raises
        ------
        UnsortedDataException
            ``validate_index`` and the DatetimeIndex is not sorted.
        ArcticUnsupportedDataTypeException
            ``data`` is not a table arcticlite can store.
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> lib.write("S", df, metadata={"source": "feed"}).version
        0
        >>> lib.write("S", df.iloc[:2]).version
        1
        >>> lib.read("S", as_of=0).metadata
        {'source': 'feed'}
        """
        sym = check_symbol(symbol)
        engine = self._writer(bloom_min_distinct)
        if staged:
            self.stage(sym, data, validate_index=validate_index, index_column=index_column,
                       bloom_min_distinct=bloom_min_distinct)
            return None
        row_major: list[norm.RowMajorBlock] = []  # a 2-D array's block: transposed segment by segment
        table, meta = self._normalize(data, index_column, to_store=True, row_major=row_major)
        sorted_ = self._check_sorted(table, meta, "write") if validate_index else norm.sortedness(table, meta)
        op = Write(engine, sym, table, meta, sorted_=sorted_, metadata=self._pickle_meta(metadata),
                   row_major=row_major)
        return self._item(sym, self._apply(sym, op, prune_previous_versions), metadata=metadata)

    @_mutates
    def write_pickle(self, symbol: str, data: Any, metadata: Any = None, prune_previous_versions: bool | None = None,
                     staged: bool = False, recursive_normalizers: bool | None = None) -> VersionedItem:
        """Write any picklable object as a new version of ``symbol``.

        Parameters
        ----------
        symbol : str
            The symbol's name.
        data : Any
            A picklable object. A DataFrame, Series or numpy array that :meth:`write` accepts
            is stored as it stores it (as ArcticDB does: appendable, queryable).
        metadata : Any, optional
            Any picklable object, returned by reads.
        prune_previous_versions : bool, optional
            Delete earlier versions after the write.
        staged, recursive_normalizers : bool
            Accepted for ArcticDB compatibility; ignored.

        Returns
        -------
        VersionedItem
            The symbol and its new version id.

        Raises
        ------
        UserInputException
            ``data`` does not pickle.
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> lib.write_pickle("config", {"tickers": ["AAPL", "MSFT"]}).version
        0
        >>> lib.read("config").data
        {'tickers': ['AAPL', 'MSFT']}
        """
        sym = check_symbol(symbol)
        pd = sys.modules.get("pandas")
        array = isinstance(data, np.ndarray) and not isinstance(data, np.ma.MaskedArray | np.matrix)
        if array or pd is not None and isinstance(data, pd.DataFrame | pd.Series):
            # a frame, series or array that normalises is stored as write stores it (appendable,
            # queryable), as ArcticDB does; only what does not normalise is pickled (and masked
            # arrays and matrices, which write would not give back as they were)
            with contextlib.suppress(ArcticDbNotYetImplemented, pa.ArrowException):
                return self.write(sym, data, metadata=metadata, prune_previous_versions=prune_previous_versions,
                                  validate_index=False)  # type: ignore[return-value]
        try:
            body = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as exc:
            raise UserInputException(f"data of type {type(data).__name__} cannot be stored: it does not pickle "
                                     f"({exc})") from None
        op = WritePickled(self._table, sym, body, self._pickle_meta(metadata))
        return self._item(sym, self._apply(sym, op, prune_previous_versions), metadata=metadata)

    @_mutates
    def append(self, symbol: str, data: Any, metadata: Any = None, prune_previous_versions: bool | None = None,
               validate_index: bool = True, index_column: Any = False, compact_data: bool = False, *,
               bloom_min_distinct: int | None | EllipsisType = ...) -> VersionedItem:
        """Append rows after the last version of ``symbol`` (creating it if missing).

        The new rows' first index value must not be before the last stored one. Safe with
        concurrent writers: if another writer commits first, the append rebases on the new
        head (its data segments are reused) and retries, so no acknowledged append is lost.
        Cost does not grow with the number of earlier appends (small appends share one open
        tail segment: docs/engine.md, "Small appends").

        Parameters
        ----------
        symbol : str
            The symbol's name.
        data : pandas.DataFrame | pandas.Series | numpy.ndarray | pyarrow.Table | polars.DataFrame
            The rows to add, with the stored columns and dtypes (any, with ``dynamic_schema``).
        metadata : Any, optional
            The new version's metadata.
        prune_previous_versions : bool, optional
            Delete earlier versions after the append.
        validate_index : bool
            Refuse rows that are unsorted or start before the stored ones.
        index_column : str, optional
            For Arrow/polars input: the column to use as index.
        compact_data : bool
            Compact the symbol after appending (:meth:`compact_data`).
        bloom_min_distinct : int or None, optional
            As for :meth:`write`.

        Returns
        -------
        VersionedItem
            The symbol and its new version id.

        Raises
        ------
        AppendOrderException
            The rows start before the last stored row (an ``UnsortedDataException``).
        SchemaException
            The columns or dtypes differ from the stored ones (without ``dynamic_schema``).
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.write("S", df)
        >>> more = pd.DataFrame({"px": [4.0]}, index=[pd.Timestamp("2024-01-04")])
        >>> lib.append("S", more).version
        1
        >>> lib.read("S").data["px"].tolist()
        [1.0, 2.0, 3.0, 4.0]
        """
        sym = check_symbol(symbol)
        engine = self._writer(bloom_min_distinct)
        table, meta = self._normalize(data, index_column, to_store=True)
        try:
            sorted_new = self._check_sorted(table, meta, "append") if validate_index else norm.sortedness(table, meta)
        except UnsortedDataException:
            base = self._engine.latest_live(sym)
            if base is not None and base.pickled:  # ArcticDB names this first
                raise InternalException(f"E_RUNTIME_ERROR Cannot append to pickled data (symbol {sym!r})") from None
            raise
        op = Append(engine, sym, table, meta, sorted_=sorted_new, metadata=self._pickle_meta(metadata),
                    validate_index=validate_index)
        rec = self._apply(sym, op, prune_previous_versions)
        if compact_data:
            return self.compact_data(sym)
        return self._item(sym, rec, metadata=metadata)

    @_mutates
    def update(self, symbol: str, data: Any, metadata: Any = None, upsert: bool = False,
               date_range: tuple[Any, Any] | None = None, prune_previous_versions: bool | None = None,
               index_column: Any = False, *,
               bloom_min_distinct: int | None | EllipsisType = ...) -> VersionedItem:
        """Replace the stored rows in ``[data.index[0], data.index[-1]]`` (or ``date_range``)
        with ``data``.

        Safe with concurrent writers: on a lost race the update is re-applied to the new head.
        Untouched segments are reused; straddling segments are trimmed without rewriting.

        Parameters
        ----------
        symbol : str
            The symbol's name.
        data : pandas.DataFrame | pandas.Series | pyarrow.Table | polars.DataFrame
            Sorted rows with a DatetimeIndex.
        metadata : Any, optional
            The new version's metadata.
        upsert : bool
            Write the symbol if it does not exist (else ``NoDataFoundException``).
        date_range : tuple, optional
            The range to replace, both ends included (default: the data's first to last index).
        prune_previous_versions : bool, optional
            Delete earlier versions after the update.
        index_column : str, optional
            For Arrow/polars input: the column to use as index.
        bloom_min_distinct : int or None, optional
            As for :meth:`write`.

        Returns
        -------
        VersionedItem
            The symbol and its new version id.

        Raises
        ------
        NoDataFoundException
            The symbol does not exist and ``upsert`` is False.
        UnsortedDataException
            ``data`` is not sorted.
        UserInputException
            ``date_range`` ends before it starts.
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.write("S", df)
        >>> fix = pd.DataFrame({"px": [20.0]}, index=[pd.Timestamp("2024-01-02")])
        >>> _ = lib.update("S", fix)
        >>> lib.read("S").data["px"].tolist()
        [1.0, 20.0, 3.0]
        """
        sym = check_symbol(symbol)
        engine = self._writer(bloom_min_distinct)
        table, meta = self._normalize(data, index_column, to_store=True)
        by_time = meta.index_kind == "datetime" or (meta.index_kind == "multi" and meta.index_hints[:1] == ("dt",))
        # a MultiIndex is updated by its first (datetime) level; other indexes only upsert a
        # symbol that does not exist yet (a plain write, as ArcticDB does)
        if not by_time and table.num_rows and not (
                upsert and self._engine.live_from_head(sym, self._engine.head(sym)) is None):
            raise InternalException(f"Update not supported for non-timeseries indexes (symbol {sym!r}); "
                                    "use write or append")
        if norm.sortedness(table, meta) not in ("ASCENDING", "UNKNOWN"):
            raise UnsortedDataException("When calling update, input data must be sorted")
        idx = (table.column(0).cast(pa.int64()).to_numpy() if by_time and table.num_rows and meta.index_columns
               else np.zeros(0, np.int64))  # (another index only upserts: a write, no range)
        if date_range is not None:
            lo, hi = self._checked_range(date_range, "update")
            a, b = np.searchsorted(idx, lo, "left"), np.searchsorted(idx, hi, "right")
            table = table.slice(int(a), max(0, int(b) - int(a)))
            if not table.num_rows:  # no new row in the range: a new version of the same rows (as ArcticDB)
                lo, hi = 1, 0
        elif len(idx):
            lo, hi = int(idx[0]), int(idx[-1])
        else:
            lo, hi = 1, 0  # empty: replaces nothing
        op = ReplaceRange(engine, sym, table, meta, lo, hi, self._pickle_meta(metadata), upsert=upsert,
                          kind="update")
        return self._item(sym, self._apply(sym, op, prune_previous_versions), metadata=metadata)

    @_mutates
    def delete_data_in_range(self, symbol: str, date_range: tuple[Any, Any],
                             prune_previous_versions: bool | None = None) -> None:
        """Remove the stored rows in the closed ``date_range`` (a new version, even if none matched).

        Parameters
        ----------
        symbol : str
            The symbol's name.
        date_range : tuple
            ``(start, end)``, both included; ``None`` for an open end.
        prune_previous_versions : bool, optional
            Delete earlier versions afterwards.

        Returns
        -------
        None

        Raises
        ------
        ArcticInvalidApiUsageException
            ``date_range`` is None.
        UserInputException
            ``date_range`` ends before it starts.
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.write("S", df)
        >>> lib.delete_data_in_range("S", (pd.Timestamp("2024-01-02"), None))
        >>> len(lib.read("S").data)
        1
        """
        sym = check_symbol(symbol)
        if date_range is None:
            raise ArcticInvalidApiUsageException("delete_data_in_range needs a date_range")
        lo, hi = self._checked_range(date_range, "delete_data_in_range")
        self._apply(sym, ReplaceRange(self._table, sym, None, None, lo, hi, None, upsert=False, kind="delete_range"),
                    prune_previous_versions)

    @_mutates
    def merge_experimental(self, symbol: str, source: Any, strategy: MergeStrategy = DEFAULT_STRATEGY,
                           on: list[str] | None = None, metadata: Any = None,
                           prune_previous_versions: bool | None = None, upsert: bool = False,
                           match_na: bool = False) -> VersionedItem:
        """Merge ``source`` into the latest version of ``symbol`` by key (ArcticDB's
        ``merge_experimental``); :meth:`merge` is the same call.

        A source row matches a stored row when the datetime index (always, for a timeseries)
        and every ``on`` column are equal. ``strategy`` says what happens:
        ``matched="update"`` replaces the non-key columns of matched stored rows with the
        source's (a stored row matched by several source rows is refused:
        ``UserInputException``); ``not_matched_by_target="insert"`` adds source rows that
        match nothing, after the stored rows of the same index value (at the end of a
        row-numbered symbol), in source order. Valid strategies: ``("update", "insert")``
        (default), ``("update", "do_nothing")``, ``("do_nothing", "insert")``; actions are
        :class:`MergeAction` members or case-insensitive strings.

        Parameters
        ----------
        symbol : str
            The symbol merged into; it must exist unless ``upsert``.
        source : pandas.DataFrame | pandas.Series
            Same columns, order and dtypes as the stored data; a DatetimeIndex sorted ascending
            for a timeseries. A symbol without a DatetimeIndex needs ``on``.
        strategy : MergeStrategy
            What to do with matched and unmatched source rows (default update and insert).
        on : list of str, optional
            Key columns besides the index (must not name the datetime index).
        metadata : Any, optional
            The new version's metadata (``None`` clears it, as ``update`` does).
        prune_previous_versions : bool, optional
            Delete earlier versions afterwards (default: the library's option).
        upsert : bool
            Create the symbol from ``source`` when it does not exist (needs an inserting strategy).
        match_na : bool
            Missing key values (NaN, None, NaT) match each other instead of nothing.

        Returns
        -------
        VersionedItem
            The new version (always a new version, even when no row changed); no data.

        Raises
        ------
        UserInputException
            A stored row is matched by several source rows, or the strategy is not valid.
        UnsortedDataException
            The source's DatetimeIndex is not sorted ascending.
        SchemaException
            The source's columns or dtypes differ from the stored ones, or the library has a
            dynamic schema.
        PermissionException
            The library or store was opened read-only.

        Notes
        -----
        Copy-on-write: only the row groups holding rows the source can match are read and
        written again; the others are reused. Dynamic-schema libraries are refused. Safe with
        concurrent writers: on a lost race the merge is computed again on the new head.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.write("S", df)
        >>> src = pd.DataFrame({"px": [20.0, 4.0]}, index=pd.to_datetime(["2024-01-02", "2024-01-04"]))
        >>> lib.merge_experimental("S", src).version
        1
        >>> lib.read("S").data["px"].tolist()
        [1.0, 20.0, 3.0, 4.0]
        """
        sym = check_symbol(symbol)
        strat = merge_strategy(strategy)
        cols = on_columns(on)
        meta_bytes = self._pickle_meta(metadata)
        table, meta = self._merge_source(source, "merge")
        spec = merge_spec(check_strategy(strat), cols, match_na)
        op = Merge(self._table, sym, table, meta, spec, metadata=meta_bytes, upsert=upsert)
        return self._item(sym, self._apply(sym, op, prune_previous_versions))

    @_mutates
    def merge(self, symbol: str, source: Any, strategy: MergeStrategy = DEFAULT_STRATEGY,
              on: list[str] | None = None, metadata: Any = None, prune_previous_versions: bool | None = None,
              upsert: bool = False, match_na: bool = False) -> VersionedItem:
        """Merge ``source`` into ``symbol`` by key: the same as :meth:`merge_experimental`.

        Parameters
        ----------
        symbol : str
            The symbol merged into; it must exist unless ``upsert``.
        source : pandas.DataFrame | pandas.Series
            Rows keyed as the stored rows (see :meth:`merge_experimental`).
        strategy : MergeStrategy
            What to do with matched and unmatched source rows (default update and insert).
        on : list of str, optional
            Key columns besides the index.
        metadata : Any, optional
            The new version's metadata (``None`` clears it).
        prune_previous_versions : bool, optional
            Delete earlier versions afterwards (default: the library's option).
        upsert : bool
            Create the symbol from ``source`` when it does not exist.
        match_na : bool
            Missing key values match each other instead of nothing.

        Returns
        -------
        VersionedItem
            The new version; no data.

        Raises
        ------
        UserInputException
            As for :meth:`merge_experimental`.
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("S", pd.DataFrame({"id": [1, 2], "px": [1.0, 2.0]}))
        >>> src = pd.DataFrame({"id": [2, 3], "px": [20.0, 30.0]})
        >>> _ = lib.merge("S", src, on=["id"])
        >>> lib.read("S").data.values.tolist()
        [[1.0, 1.0], [2.0, 20.0], [3.0, 30.0]]
        """
        return self.merge_experimental(symbol, source, strategy=strategy, on=on, metadata=metadata,
                                       prune_previous_versions=prune_previous_versions, upsert=upsert,
                                       match_na=match_na)

    @_mutates
    def delete_rows(self, symbol: str, keys: Any, on: list[str] | None = None, match_na: bool = False,
                    prune_previous_versions: bool | None = None) -> VersionedItem:
        """Delete the stored rows whose key equals a row of ``keys`` (a new version).

        The key is the datetime index (for a timeseries, always) and the ``on`` columns,
        matched as :meth:`merge` matches them. Every stored row matching any key row is
        deleted; key rows matching nothing are ignored. Copy-on-write and safe with concurrent
        writers, as :meth:`merge`.

        Parameters
        ----------
        symbol : str
            The symbol to delete rows of.
        keys : pandas.DataFrame | pandas.Series
            For a timeseries, a DatetimeIndex (any order) and the ``on`` columns; for a
            row-numbered symbol, the ``on`` columns. Other columns are ignored. Key columns
            must have the stored dtypes.
        on : list of str, optional
            Key columns besides the index; required for a symbol without a DatetimeIndex.
        match_na : bool
            Missing key values (NaN, None, NaT) match each other instead of nothing.
        prune_previous_versions : bool, optional
            Delete earlier versions afterwards (default: the library's option).

        Returns
        -------
        VersionedItem
            The new version (created even when no row matched); its metadata is kept.

        Raises
        ------
        SchemaException
            A key column is missing or has another dtype than the stored one.
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.write("S", df)
        >>> lib.delete_rows("S", pd.DataFrame(index=pd.to_datetime(["2024-01-02"]))).version
        1
        >>> lib.read("S").data["px"].tolist()
        [1.0, 3.0]
        """
        sym = check_symbol(symbol)
        cols = on_columns(on)
        table, meta = self._merge_source(keys, "delete_rows", sort=True)
        op = Merge(self._table, sym, table, meta, delete_spec(cols, match_na), metadata=None, keep_metadata=True,
                   what="delete rows")
        return self._item(sym, self._apply(sym, op, prune_previous_versions))

    def _merge_source(self, source: Any, call: str, *, sort: bool = False) -> tuple[pa.Table, norm.NormMeta]:
        if isinstance(source, np.ndarray):
            raise SchemaException(f"E_OPERATION_NOT_SUPPORTED_WITH_NUMPY_ARRAY {call} takes a DataFrame or Series "
                                  "with the stored columns, not a numpy array")
        table, meta = self._normalize(source)
        table = norm.split_nan_rows(table)[0]  # merged rows take the column's kind of missing value
        by_time = meta.index_kind == "datetime" or (meta.index_kind == "multi" and meta.index_hints[:1] == ("dt",))
        if by_time and table.num_rows:
            idx = table.column(0)
            if sort and not idx.null_count and norm.sortedness(table, meta) != "ASCENDING":
                order = np.argsort(idx.cast(pa.int64()).to_numpy(), kind="stable")
                table = table.take(pa.array(order))
            if idx.null_count or norm.sortedness(table, meta) != "ASCENDING":
                raise UnsortedDataException(
                    f"E_UNSORTED_DATA If the source data is timeseries indexed it must be sorted in ascending order: "
                    f"the {call} source's index is not" + (f" (it holds {idx.null_count} NaT)" if idx.null_count else "")
                    + "; sort it (source.sort_index()) and drop NaT rows")
        return table, meta

    @_mutates
    def write_metadata(self, symbol: str, metadata: Any, prune_previous_versions: bool | None = None) -> VersionedItem:
        """A new version with the same data and new metadata (no data is rewritten).

        Costs one small commit whatever the symbol's size. Safe with concurrent writers: it
        applies to the latest version at its commit.

        Parameters
        ----------
        symbol : str
            The symbol; when it does not exist, it is created with no data and this metadata.
        metadata : Any
            The new metadata: plain values are stored as JSON, anything else pickled; at most
            16 MiB once encoded.
        prune_previous_versions : bool, optional
            Delete earlier versions afterwards (default: the library's option).

        Returns
        -------
        VersionedItem
            The new version, carrying ``metadata``; no data.

        Raises
        ------
        ArcticDbNotYetImplemented
            The metadata is above 16 MiB once encoded (nothing is written).
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0]}), metadata={"source": "feed"})
        >>> lib.write_metadata("S", {"source": "vendor"}).version
        1
        >>> lib.read("S").metadata, lib.read("S", as_of=0).metadata
        ({'source': 'vendor'}, {'source': 'feed'})
        """
        sym = check_symbol(symbol)
        rec = self._apply(sym, WriteMetadata(self._table, sym, self._pickle_meta(metadata)), prune_previous_versions)
        return self._item(sym, rec, metadata=metadata)

    # -- reads ----------------------------------------------------------------------------------
    def read(self, symbol: str, as_of: Any = None, date_range: tuple[Any, Any] | None = None,
             row_range: tuple[int, int] | None = None, columns: list[Any] | None = None,
             query_builder: Any = None, lazy: bool = False, output_format: Any = None,
             arrow_string_format_default: Any = None, arrow_string_format_per_column: Any = None) -> VersionedItem:
        """Read a version of ``symbol``.

        Only the segments overlapping ``date_range`` / ``row_range`` / ``columns`` are fetched.
        ``query_builder`` then runs on those rows, fetching only the columns it needs; its
        leading date ranges, index comparisons and row slices narrow the segments read (see
        :mod:`arcticlite.query`).

        Parameters
        ----------
        symbol : str
            The symbol's name.
        as_of : int, str or datetime, optional
            A version id (negative counts from the end), a snapshot name or a datetime (the
            latest version created at or before it; naive means UTC). Default: the latest.
        date_range : tuple, optional
            ``(start, end)`` of the index, both included; ``None`` for an open end.
        row_range : tuple of int, optional
            ``(start, end)`` row numbers, end excluded (not with ``date_range``).
        columns : list, optional
            The columns to read (the index always comes).
        query_builder : QueryBuilder, optional
            Filters, projections, groupby / resample to apply.
        lazy : bool
            Return a :class:`LazyDataFrame` to add clauses to, then ``collect()``.
        output_format : OutputFormat or str, optional
            ``"pandas"`` (default), ``"pyarrow"`` or ``"polars"``.
        arrow_string_format_default, arrow_string_format_per_column : optional
            The Arrow string type of string columns in Arrow / polars output.

        Returns
        -------
        VersionedItem
            ``.data`` holds the rows, ``.metadata`` the user metadata, ``.version`` the id.

        Raises
        ------
        NoDataFoundException
            No such symbol, version or snapshot.
        ArcticException
            Both ``date_range`` and ``row_range`` were given.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.write("S", df)
        >>> lib.read("S", date_range=(pd.Timestamp("2024-01-02"), None)).data
                    px
        2024-01-02  2.0
        2024-01-03  3.0
        >>> q = adb.QueryBuilder()
        >>> lib.read("S", query_builder=q[q["px"] > 2.5]).data["px"].tolist()
        [3.0]
        """
        sym = check_symbol(symbol)
        args.one_range(date_range, row_range)
        self._index_range(date_range)  # bounds of a wrong type are refused before the symbol is looked up
        if lazy:
            return LazyDataFrame(self, ReadRequest(  # type: ignore[return-value]
                sym, as_of=as_of, date_range=date_range, row_range=row_range, columns=columns,
                query_builder=query_builder, output_format=output_format,
                arrow_string_format_default=arrow_string_format_default,
                arrow_string_format_per_column=arrow_string_format_per_column))
        strings = self._strings(arrow_string_format_default, arrow_string_format_per_column)
        rec = self._resolve_to_read(sym, as_of)
        data = self._read_data(sym, rec, date_range=date_range, row_range=row_range, columns=columns,
                               output_format=output_format, query_builder=query_builder, strings=strings)
        return self._item(sym, rec, data)

    def _strings(self, default: Any, per_column: Any) -> tuple[str, dict[str, str] | None]:
        """The Arrow string formats of a read: per column, then the read's default, the
        library's, the ``Arctic``'s (``ArrowOutputStringFormat``; large strings when unset)."""
        name = (string_format_name(default) or self._string_format
                or getattr(self._arctic, "_string_format", None) or "UNSPECIFIED")
        if per_column is not None and not isinstance(per_column, dict):
            raise UserInputException("arrow_string_format_per_column must be a dict of column name -> format")
        cols = None if per_column is None else {str(k): string_format_name(v) or name for k, v in per_column.items()}
        return name, cols

    def _read_data(self, sym: str, rec: VersionRecord, **kw: Any) -> Any:
        """:meth:`_read_version`; a corrupt-data error names the symbol and version too."""
        try:
            return self._read_version(sym, rec, **kw)
        except CorruptDataError as exc:
            raise type(exc)(f"symbol {sym!r} version {rec.vid} of library {self._name!r}: {exc}; restore the "
                            "key from a backup, or delete the version") from exc
        except KeyNotFoundException as exc:
            head = self._engine.head(sym)
            if head is None or not head.is_live(rec.seq):
                raise  # deleted (or pruned) while it was read
            # a live version's keys are never deleted: the store lost one (a renamed LMDB key)
            raise CorruptDataError(f"symbol {sym!r} version {rec.vid} of library {self._name!r}: a key it needs is "
                                   f"missing ({exc}); the store is corrupt: restore the key from a backup, or "
                                   "delete the version") from exc

    def _read_version(self, sym: str, rec: VersionRecord, *, date_range: Any = None,
                   row_range: tuple[int, int] | None = None, columns: list[Any] | None = None,
                   output_format: Any = None, query_builder: Any = None,
                   strings: tuple[str, dict[str, str] | None] = ("UNSPECIFIED", None)) -> Any:
        """Version ``rec`` through the engine's read pipeline (pickled data: unpickled)."""
        if rec.pickled:
            if columns is not None and not len(columns):  # first, whatever else the read asks (ArcticDB)
                raise UserInputException(
                    f"E_INVALID_USER_ARGUMENT Reading index columns is not supported with pickled data (symbol {sym!r})")
            if query_builder is not None:
                raise InternalException(f"E_RUNTIME_ERROR Cannot filter pickled data of symbol {sym!r}")
            if date_range is not None or row_range is not None or columns is not None:
                raise InternalException("E_ASSERTION_FAILURE: Cannot perform processing (columns, date_range, "
                                        f"row_range) on pickled data of symbol {sym!r}")
            if rec.index is None or rec.index.digest is None:
                return None
            leaf = self._table.index(sym).leaves(rec.index)
            key = self._keys.tdata(sym, hex_digests(leaf)[0])
            raw = self._store.read(key)
            with naming_key(key):
                if len(raw) != int(leaf[0]["nbytes"]):
                    raise FormatEOFError(f"pickled data is {len(raw)} bytes, its index says {int(leaf[0]['nbytes'])}")
                body, sealed = unseal_pickled(raw)
                what = f"the data of symbol {sym!r} version {rec.vid} (written by write_pickle)"
                if sealed:
                    return unpickle(body, allow_pickle=self._allow_pickle, what=what)
                try:  # a bare pickle of an older arcticlite: no checksum, so loading may fail
                    return unpickle(body, allow_pickle=self._allow_pickle, what=what)
                except (pickle.UnpicklingError, EOFError, ValueError, OverflowError, IndexError) as exc:
                    raise CorruptDataError(f"pickled data does not load ({type(exc).__name__}: {exc})") from exc
        given = [k for k, v in (("row_range", row_range), ("columns", columns)) if v is not None]
        if given or getattr(query_builder, "clauses", None):
            self._refuse_ndarray(sym, rec, f"a read with {' and '.join(given or ['a query_builder'])}")
        plan = self._table.plan(rec, date_range=self._index_range(date_range), row_range=args.row_range(row_range),
                                columns=columns, query_builder=query_builder, judge_when_decoding=True)
        out = self._table.read(plan, self._output(output_format), strings=strings)
        pd = sys.modules.get("pandas")
        if columns is not None and not plan.columns and pd is not None and isinstance(out, pd.Series):
            # a series read without its column: an empty series, as ArcticDB gives
            return pd.Series([], index=pd.RangeIndex(0), name=out.name, dtype=object)
        if columns is not None and len(columns) and not plan.columns and pd is not None \
                and isinstance(out, pd.DataFrame) and out.shape[1] == 0 and isinstance(out.index, pd.RangeIndex) \
                and meta_of(rec).index_kind in ("range", "none"):
            # none of the columns asked for is stored, and no index column is: no rows (ArcticDB)
            return pd.DataFrame(index=pd.RangeIndex(0))
        return out

    @staticmethod
    def _refuse_ndarray(sym: str, rec: VersionRecord, op: str) -> None:
        """ArcticDB refuses any processing of a symbol holding a numpy array (row or column
        selection, head / tail, query clauses) with ``SchemaException``: refuse ``op`` alike."""
        if not rec.pickled and rec.norm is not None and meta_of(rec).kind == "ndarray":
            raise SchemaException(
                f"E_OPERATION_NOT_SUPPORTED_WITH_NUMPY_ARRAY Cannot perform {op} on symbol {sym!r}: version "
                f"{rec.vid} holds a numpy array, which supports no processing (row_range, columns, head, tail, "
                "query_builder); read the whole array with read() and slice it in numpy")

    def _explain(self, symbol: str, query_builder: Any, *, as_of: Any = None, date_range: Any = None,
                 row_range: tuple[int, int] | None = None, columns: list[Any] | None = None) -> ReadExplain:
        """What ``read(symbol, as_of, date_range, row_range, columns, query_builder)`` prunes
        and fetches (``QueryBuilder.explain``): the read is run, its result dropped."""
        sym = check_symbol(symbol)
        args.one_range(date_range, row_range)
        rec = self._resolve(sym, as_of)
        if rec.pickled:
            raise InternalException(f"E_RUNTIME_ERROR Cannot explain a read of pickled data of symbol {sym!r}")
        return self._table.explain(rec, date_range=self._index_range(date_range), row_range=args.row_range(row_range),
                                   columns=columns, query_builder=query_builder)

    def scan(self, symbol: str, as_of: Any = None, date_range: tuple[Any, Any] | None = None,
             row_range: tuple[int, int] | None = None, columns: list[Any] | None = None,
             query_builder: Any = None) -> ScanPlan:
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
        >>> plan.to_table().num_rows
        5
        """
        sym = check_symbol(symbol)
        args.one_range(date_range, row_range)
        rec = self._resolve(sym, as_of)
        if rec.pickled:
            raise UserInputException(
                f"symbol {sym!r} version {rec.vid} holds pickled data, which has no columns to scan; use read()")
        read = self._table.plan(rec, date_range=self._index_range(date_range), row_range=args.row_range(row_range),
                                columns=columns, query_builder=query_builder)
        check_scannable(read)
        uri = self._worker_uri()
        return ScanPlan(uri=uri, library=self._name, symbol=sym, version=rec.vid, schema=scan_schema(read),
                        read=read, read_only=self._read_only, _store=self._store)

    def head(self, symbol: str, n: int = 5, as_of: Any = None, columns: list[Any] | None = None,
             lazy: bool = False, output_format: Any = None, arrow_string_format_default: Any = None,
             arrow_string_format_per_column: Any = None, **_: Any) -> VersionedItem:
        """The first ``n`` rows (all but the last ``|n|`` when negative).

        Parameters
        ----------
        symbol : str
            The symbol's name.
        n : int, default 5
            How many rows.
        as_of : int, str or datetime, optional
            The version, as for :meth:`read`.
        columns : list, optional
            The columns to read.
        lazy : bool
            Return a :class:`LazyDataFrame`.
        output_format : optional
            As for :meth:`read`.
        arrow_string_format_default, arrow_string_format_per_column : optional
            As for :meth:`read`.

        Returns
        -------
        VersionedItem

        Raises
        ------
        NoDataFoundException
            No such symbol or version.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.write("S", df)
        >>> lib.head("S", 2).data["px"].tolist()
        [1.0, 2.0]
        """
        sym = check_symbol(symbol)
        strings = self._strings(arrow_string_format_default, arrow_string_format_per_column)
        if lazy:
            return LazyDataFrame(self, ReadRequest(  # type: ignore[return-value]
                sym, as_of=as_of, columns=columns, output_format=output_format,
                arrow_string_format_default=arrow_string_format_default,
                arrow_string_format_per_column=arrow_string_format_per_column)).head(n)
        rec = self._resolve_to_read(sym, as_of)
        self._refuse_ndarray(sym, rec, "head")
        total = rec.index.rows if rec.index is not None else 0
        n = args.count(n, "n")
        rr = (0, n) if n >= 0 else (0, max(0, total + n))
        return self._item(sym, rec, self._read_data(sym, rec, row_range=rr, columns=columns,
                                                    output_format=output_format, strings=strings))

    def tail(self, symbol: str, n: int = 5, as_of: Any = None, columns: list[Any] | None = None,
             lazy: bool = False, output_format: Any = None, arrow_string_format_default: Any = None,
             arrow_string_format_per_column: Any = None, **_: Any) -> VersionedItem:
        """The last ``n`` rows (all but the first ``|n|`` when negative).

        Parameters
        ----------
        symbol : str
            The symbol's name.
        n : int, default 5
            How many rows.
        as_of : int, str or datetime, optional
            The version, as for :meth:`read`.
        columns : list, optional
            The columns to read.
        lazy : bool
            Return a :class:`LazyDataFrame`.
        output_format : optional
            As for :meth:`read`.
        arrow_string_format_default, arrow_string_format_per_column : optional
            As for :meth:`read`.

        Returns
        -------
        VersionedItem

        Raises
        ------
        NoDataFoundException
            No such symbol or version.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.write("S", df)
        >>> lib.tail("S", 1).data["px"].tolist()
        [3.0]
        """
        sym = check_symbol(symbol)
        strings = self._strings(arrow_string_format_default, arrow_string_format_per_column)
        if lazy:
            return LazyDataFrame(self, ReadRequest(  # type: ignore[return-value]
                sym, as_of=as_of, columns=columns, output_format=output_format,
                arrow_string_format_default=arrow_string_format_default,
                arrow_string_format_per_column=arrow_string_format_per_column)).tail(n)
        rec = self._resolve_to_read(sym, as_of)
        self._refuse_ndarray(sym, rec, "tail")
        total = rec.index.rows if rec.index is not None else 0
        n = args.count(n, "n")
        rr = (max(0, total - n), total) if n >= 0 else (min(total, -n), total)
        data = self._read_data(sym, rec, row_range=rr, columns=columns, output_format=output_format,
                               strings=strings)
        pd = sys.modules.get("pandas")
        if pd is not None and columns is not None and len(columns) == 0 and isinstance(data, pd.DataFrame) \
                and isinstance(data.index, pd.RangeIndex) and rr[0]:
            # ArcticDB numbers any row slice of a RangeIndex from the stored start, except the
            # tail of no columns: its labels are those of the rows it is
            ix = data.index
            data.index = pd.RangeIndex(ix.start + rr[0] * ix.step, ix.stop + rr[0] * ix.step, ix.step, name=ix.name)
        return self._item(sym, rec, data)

    def read_metadata(self, symbol: str, as_of: Any = None) -> VersionedItem:
        """The user metadata of a version (reads only the version record).

        Parameters
        ----------
        symbol : str
            The symbol's name.
        as_of : int, str or datetime, optional
            The version, as for :meth:`read`.

        Returns
        -------
        VersionedItem
            ``.metadata`` and ``.version``; ``.data`` is None.

        Raises
        ------
        NoDataFoundException
            No such symbol or version.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.write("S", df, metadata={"rows": 3})
        >>> lib.read_metadata("S").metadata
        {'rows': 3}
        """
        sym = check_symbol(symbol)
        return self._item(sym, self._resolve(sym, as_of, missing=NoDataFoundException))

    def has_symbol(self, symbol: str, as_of: Any = None) -> bool:
        """Whether ``symbol`` has a live version (or the version/snapshot ``as_of`` holds it).

        Parameters
        ----------
        symbol : str
            The symbol's name.
        as_of : int, str or datetime, optional
            A version id, a snapshot name or a time.

        Returns
        -------
        bool

        Raises
        ------
        UserInputException
            ``symbol`` is not a valid symbol name (e.g. empty).

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.write("S", df)
        >>> lib.has_symbol("S"), lib.has_symbol("T")
        (True, False)
        """
        sym = check_symbol(symbol)
        if isinstance(as_of, str):
            return sym in self._snapshots.read(as_of)["symbols"]
        try:
            self._resolve(sym, as_of)
            return True
        except NoDataFoundException:
            return as_of is not None and self._held_by_snapshot(sym, as_of)

    def _held_by_snapshot(self, sym: str, as_of: Any) -> bool:
        """Whether a deleted version that ``as_of`` (an id or a time) names is still held by a
        snapshot (ArcticDB's ``has_symbol`` counts it)."""
        head = self._engine.head(sym)
        held = {v for (s, v) in self._snapshots.by_version(sym)}
        if head is None or not held:
            return False
        if isinstance(as_of, int):
            vid = as_of if as_of >= 0 else head.top + 1 + as_of
            return head.seq_of(vid) in held
        when = norm.as_of_to_ns(as_of)
        return any(r is not None and r.created_ns <= when for r in map(lambda v: self._engine.read_record(sym, v), held))

    def get_description(self, symbol: str, as_of: Any = None) -> SymbolDescription:
        """Columns, index, row count, date range and sortedness of a version (no data read).

        Parameters
        ----------
        symbol : str
            The symbol's name.
        as_of : int, str or datetime, optional
            The version, as for :meth:`read`.

        Returns
        -------
        SymbolDescription

        Raises
        ------
        NoDataFoundException
            No such symbol or version.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.write("S", df)
        >>> d = lib.get_description("S")
        >>> d.row_count, [c.name for c in d.columns]
        (3, ['px'])
        """
        return describe.describe(self._resolve(check_symbol(symbol), as_of))

    # -- deletes --------------------------------------------------------------------------------
    @_mutates
    def delete(self, symbol: str, versions: int | list[int] | None = None) -> None:
        """Delete all versions of ``symbol`` (it leaves ``list_symbols``), or only ``versions``.

        Data still referenced by a live version or a snapshot is kept; the rest is removed.

        Parameters
        ----------
        symbol : str
            The symbol's name.
        versions : int or list of int, optional
            Only these version ids.

        Returns
        -------
        None

        Raises
        ------
        NoSuchVersionException
            A version named in ``versions`` does not exist (nothing is deleted).
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.write("S", df); _ = lib.write("S", df)
        >>> lib.delete("S", versions=[0])
        >>> [v.version for v in lib.list_versions("S")]
        [1]
        >>> lib.delete("S"); lib.list_symbols()
        []
        """
        sym = check_symbol(symbol)
        if versions is None:
            head = self._engine.head(sym)
            if head is None or head.latest_live is None:
                return
            chosen = None
        else:
            chosen = args.versions(versions)
            if not chosen:
                return
        killed: set[int] = set()
        self._table.commit(sym, chain.tombstone(sym, chosen, killed))
        self._cleanup(sym, killed)

    @_mutates
    def prune_previous_versions(self, symbol: str) -> None:
        """Delete every version of ``symbol`` but the latest (versions in snapshots keep their data).

        One commit; the data only earlier versions used is deleted afterwards. Safe with
        concurrent writers: a version committed meanwhile is the new latest and is kept.

        Parameters
        ----------
        symbol : str
            The symbol to prune.

        Raises
        ------
        StorageException
            The symbol does not exist.
        InternalException
            Every version of it was deleted.
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> for i in range(3):
        ...     _ = lib.write("S", pd.DataFrame({"px": [float(i)]}))
        >>> lib.prune_previous_versions("S")
        >>> [v.version for v in lib.list_versions("S")]
        [2]
        """
        sym = check_symbol(symbol)
        head = self._engine.head(sym)
        if head is None:
            raise StorageException(f"E_SYMBOL_NOT_FOUND: symbol {sym!r} not found")
        if head.latest_live is None:
            raise InternalException(f"E_ASSERTION_FAILURE: Failed to find latest index of symbol {sym!r}: "
                                    "every version was deleted")
        if not chain.older_live(head):
            return
        killed: set[int] = set()
        try:
            self._table.commit(sym, chain.prune(sym, killed))
        except NoSuchVersionException:
            return  # deleted meanwhile
        self._cleanup(sym, killed)

    # -- staged writes --------------------------------------------------------------------------
    @_mutates
    def stage(self, symbol: str, data: Any, validate_index: bool = True, sort_on_index: bool = False,
              sort_columns: list[str] | None = None, index_column: Any = False, *,
              job: str | None = None, bloom_min_distinct: int | None | EllipsisType = ...) -> StageResult:
        """Write ``data`` as staged segments of ``symbol``, invisible until finalized.

        Any number of processes may stage the same symbol at once (docs/scan.md); the
        returned ``StageResult`` pickles, for a finalize elsewhere. Costs the segments'
        writes and no commit: readers see nothing until :meth:`finalize_staged_data`.

        Parameters
        ----------
        symbol : str
            The symbol the data is staged for (it need not exist).
        data : pandas.DataFrame | pandas.Series | pyarrow.Table | polars.DataFrame
            A table, as for :meth:`write`.
        validate_index : bool
            Refuse an unsorted DatetimeIndex (``UnsortedDataException``).
        sort_on_index : bool
            Sort the rows by the index before staging them.
        sort_columns : list of str, optional
            Sort the rows by these columns (after the index, when ``sort_on_index``).
        index_column : str, optional
            For Arrow/polars input: the column to use as index.
        job : str, optional
            A tag (letters, digits, ``_``, ``.``) on the staged keys, so that
            ``delete_staged_data(symbol, job=...)`` can abort every entry of one job, also those
            of a worker that died before reporting.
        bloom_min_distinct : int or None, optional
            arcticlite only: the Bloom-filter threshold of these staged segments instead of the
            library's, as for :meth:`write` (a finalize keeps the staged segments, and so their
            filters).

        Returns
        -------
        StageResult
            The staged keys, to finalize exactly these with ``stage_results=[...]``.

        Raises
        ------
        UnsortedDataException
            ``validate_index`` and the DatetimeIndex is not sorted.
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> result = lib.stage("S", df.iloc[:2])
        >>> result.symbol, lib.get_staged_symbols(), lib.has_symbol("S")
        ('S', ['S'], False)
        """
        sym = check_symbol(symbol)
        engine = self._writer(bloom_min_distinct)
        table, meta = self._normalize(data, index_column, to_store=not sort_columns)
        if sort_on_index and not meta.index_columns:
            raise InternalException(
                f"E_ASSERTION_FAILURE Sort requested on index but no index supplied: the data staged for {sym!r} has "
                "row numbers (a RangeIndex), not an index to sort by; stage it without sort_on_index")
        if sort_on_index or sort_columns:
            keys = [(meta.index_columns[0], "ascending")] if sort_on_index else []
            keys += [(meta.user_to_stored([c])[0], "ascending") for c in (sort_columns or [])]
            if keys:
                table = table.sort_by(keys)
        elif validate_index:
            self._check_sorted(table, meta, "stage")
        key, segments = stage_table(engine, sym, table, meta, norm.sortedness(table, meta), job)
        return StageResult(symbol=sym, staged_keys=(key,), segment_counts=(segments,))

    def get_staged_symbols(self) -> list[str]:
        """Symbols with staged data waiting for a finalize.

        Lists the staged keys of the library (one listing of the store).

        Returns
        -------
        list of str
            Sorted symbol names.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.stage("B", pd.DataFrame({"px": [1.0]}))
        >>> _ = lib.stage("A", pd.DataFrame({"px": [2.0]}))
        >>> lib.get_staged_symbols()
        ['A', 'B']
        """
        return staged_symbols(self._table)

    @_mutates
    def delete_staged_data(self, symbol: str | StageResult | list[StageResult], *, job: str | None = None) -> None:
        """Forget staged data: of ``symbol`` (of its ``job`` only, when given), or exactly the
        given ``StageResult`` s. Its segments become unreachable and ``gc`` removes them.

        Parameters
        ----------
        symbol : str | StageResult | list of StageResult
            A symbol (all its staged data, or its ``job``'s) or the results of :meth:`stage`.
        job : str, optional
            Only the staged data tagged with this job (see :meth:`stage`).

        Raises
        ------
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.stage("S", pd.DataFrame({"px": [1.0]}))
        >>> lib.delete_staged_data("S")
        >>> lib.get_staged_symbols()
        []
        """
        if isinstance(symbol, StageResult):
            keys = list(symbol.staged_keys)
        elif isinstance(symbol, list):
            keys = [k for r in symbol for k in r.staged_keys]
        else:
            keys = staged_keys(self._table, check_symbol(symbol), job)
        self._store.delete(keys)

    @_mutates
    def finalize_staged_data(self, symbol: str, mode: Any = StagedDataFinalizeMethod.WRITE,
                             prune_previous_versions: bool | None = None, metadata: Any = None,
                             validate_index: bool = True, delete_staged_data_on_failure: bool = False,
                             stage_results: list[StageResult] | None = None) -> VersionedItem:
        """Commit staged data as one new version (``write``) or after the latest (``append``).

        Staged segments are referenced, not copied, so a finalize costs one commit and an index
        whatever the data's size. They must be ordered and non-overlapping, and in ``append``
        mode start at or after the last stored row, unless ``validate_index=False``: then they
        are committed in order of their first index value and the symbol's index is marked
        unsorted. With ``stage_results``, exactly those are committed (others stay staged).

        Parameters
        ----------
        symbol : str
            The symbol to commit the staged data of.
        mode : StagedDataFinalizeMethod or str
            ``WRITE`` (``"write"``: replaces the data) or ``APPEND`` (``"append"``).
        prune_previous_versions : bool, optional
            Delete earlier versions afterwards (default: the library's option).
        metadata : Any, optional
            The new version's metadata.
        validate_index : bool
            Refuse staged data that overlaps or is out of order.
        delete_staged_data_on_failure : bool
            Forget the staged data when the finalize fails (it stays staged otherwise).
        stage_results : list of StageResult, optional
            Commit exactly these (from :meth:`stage`), not every staged entry of the symbol.

        Returns
        -------
        VersionedItem
            The new version; no data.

        Raises
        ------
        UserInputException
            Nothing is staged for the symbol.
        MissingKeysInStageResultsError
            Some of ``stage_results`` are no longer staged (already finalized or deleted);
            nothing changes.
        UnsortedDataException
            ``validate_index`` and the staged data overlaps or is out of order.
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.stage("S", df.iloc[:2])
        >>> _ = lib.stage("S", df.iloc[2:])
        >>> lib.finalize_staged_data("S").version
        0
        >>> lib.read("S").data["px"].tolist(), lib.get_staged_symbols()
        ([1.0, 2.0, 3.0], [])
        """
        sym = check_symbol(symbol)
        append = _finalize_mode(mode) is StagedDataFinalizeMethod.APPEND
        return self._consume_staged(sym, stage_results, delete_staged_data_on_failure, lambda staged: Finalize(
            self._table, sym, staged, append=append, metadata=self._pickle_meta(metadata),
            validate_index=validate_index), prune_previous_versions, metadata)

    @_mutates
    def sort_and_finalize_staged_data(self, symbol: str, mode: Any = StagedDataFinalizeMethod.WRITE,
                                      prune_previous_versions: bool | None = None, metadata: Any = None,
                                      delete_staged_data_on_failure: bool = False,
                                      stage_results: list[StageResult] | None = None) -> VersionedItem:
        """Like :meth:`finalize_staged_data`, but staged data may interleave: it is merged and sorted.

        Costs reading and writing the staged rows once (a k-way merge of sorted runs).

        Parameters
        ----------
        symbol : str
            The symbol to commit the staged data of.
        mode : StagedDataFinalizeMethod or str
            ``WRITE`` or ``APPEND``.
        prune_previous_versions : bool, optional
            Delete earlier versions afterwards (default: the library's option).
        metadata : Any, optional
            The new version's metadata.
        delete_staged_data_on_failure : bool
            Forget the staged data when the finalize fails.
        stage_results : list of StageResult, optional
            Commit exactly these, not every staged entry of the symbol.

        Returns
        -------
        VersionedItem
            The new version; no data.

        Raises
        ------
        UserInputException
            Nothing is staged for the symbol.
        MissingKeysInStageResultsError
            Some of ``stage_results`` are no longer staged; nothing changes.
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.stage("S", df.iloc[2:])
        >>> _ = lib.stage("S", df.iloc[:2])
        >>> _ = lib.sort_and_finalize_staged_data("S")
        >>> lib.read("S").data["px"].tolist()
        [1.0, 2.0, 3.0]
        """
        sym = check_symbol(symbol)
        append = _finalize_mode(mode) is StagedDataFinalizeMethod.APPEND
        return self._consume_staged(sym, stage_results, delete_staged_data_on_failure, lambda staged: Finalize(
            self._table, sym, [merge_sorted(self._table, sym, staged,
                                            append_to=self._engine.latest_live(sym) if append else None)],
            append=append, metadata=self._pickle_meta(metadata)), prune_previous_versions, metadata)

    def _consume_staged(self, sym: str, stage_results: list[StageResult] | None, delete_on_failure: bool,
                        make: Any, prune: bool | None, metadata: Any = None) -> VersionedItem:
        """Load the staged entries, commit the operation ``make(entries)`` builds, then forget
        them (also on failure if asked: whatever stops the operation, a schema mismatch of the
        entries included)."""
        foreign = sorted({r.symbol for r in stage_results or () if r.symbol != sym})
        if foreign:
            raise UserInputException(
                f"E_STAGE_RESULT_WITH_INCORRECT_SYMBOL: stage_results of symbol(s) {foreign} cannot be finalized "
                f"into {sym!r}; pass only the results of staging {sym!r}")
        keys = None if stage_results is None else [k for r in stage_results for k in r.staged_keys]
        try:
            staged: list[StagedEntry] = staged_entries(self._table, sym, keys)
        except KeyNotFoundException:
            if stage_results is not None:
                self._missing_stage_results(sym, stage_results)
            raise
        used = consumed_staged(self._table, sym, [e.key for e in staged])
        if used:  # left by a finalize that died after its commit: already in a version
            self._store.delete(sorted(used))
            if stage_results is not None:
                self._missing_stage_results(sym, stage_results)
            staged = [e for e in staged if e.key not in used]
        if not staged:
            raise UserInputException(f"E_NO_STAGED_SEGMENTS: no staged data for symbol {sym!r}; stage() first")
        try:
            op = make(staged)
            op.consumed = [e.key for e in staged]  # named in the version record (see table CONSUMED)
            rec = self._apply(sym, op, prune)
        except Exception:
            if delete_on_failure:
                self._store.delete([e.key for e in staged])
            raise
        self._store.delete([e.key for e in staged])
        return self._item(sym, rec, metadata=metadata)

    def _missing_stage_results(self, sym: str, stage_results: list[StageResult]) -> None:
        """Raise ``MissingKeysInStageResultsError`` listing every staged segment of
        ``stage_results`` whose entry no longer exists (changes nothing)."""
        missing = []
        for i, r in enumerate(stage_results):
            if r.symbol != sym:
                continue
            gone = {k for k in r.staged_keys if not self._store.exists(k)}
            missing += [KeyNotFoundInStageResultInfo(i, s) for s in r.staged_segments if s.rsplit("#", 1)[0] in gone]
        if missing:
            raise MissingKeysInStageResultsError(
                f"{len(missing)} staged segment(s) of {sym!r} named by the stage results no longer exist (already "
                "finalized or deleted); nothing was finalized: finalize only the stage results still staged",
                missing)

    # -- maintenance ----------------------------------------------------------------------------
    def compact_data_explain_plan(self, symbol: str, rows_per_segment: int | None = None) -> CompactionPlan:
        """What :meth:`compact_data` would rewrite, without writing anything.

        Reads the symbol's index only (no data segments).

        Parameters
        ----------
        symbol : str
            The symbol to plan for.
        rows_per_segment : int, optional
            Target rows per segment (default: the library's).

        Returns
        -------
        CompactionPlan
            ``will_do_work``, the version ids before and after, and the row slices before and
            after (ArcticDB's ``CompactDataInfo``).

        Raises
        ------
        StorageException
            The symbol does not exist.
        UserInputException
            ``rows_per_segment`` is not a positive int.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("S", pd.DataFrame({"px": [0.0]}, index=[pd.Timestamp("2024-01-01")]))
        >>> for i in range(1, 5):
        ...     _ = lib.append("S", pd.DataFrame({"px": [float(i)]}, index=[pd.Timestamp("2024-01-01") + pd.Timedelta(days=i)]))
        >>> plan = lib.compact_data_explain_plan("S")
        >>> plan.will_do_work, plan.num_row_slices_before, plan.num_row_slices_after
        (True, 5, 1)
        """
        sym = check_symbol(symbol)
        head = self._engine.head(sym)
        return plan_compaction(self._table, head, self._engine.live_from_head(sym, head), sym, args.positive(rows_per_segment, "rows_per_segment"))[0]

    def is_symbol_fragmented(self, symbol: str, segment_size: int | None = None) -> bool:
        """Whether compaction would remove at least 100 segments (ArcticDB's rule).

        Reads the symbol's index only, as :meth:`compact_data_explain_plan`.

        Parameters
        ----------
        symbol : str
            The symbol to check.
        segment_size : int, optional
            Target rows per segment (default: the library's).

        Returns
        -------
        bool
            True when compacting would leave at least 100 fewer segments.

        Raises
        ------
        InternalException
            The symbol does not exist (ArcticDB's class here).

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("S", pd.DataFrame({"px": [0.0]}, index=[pd.Timestamp("2024-01-01")]))
        >>> for i in range(1, 5):
        ...     _ = lib.append("S", pd.DataFrame({"px": [float(i)]}, index=[pd.Timestamp("2024-01-01") + pd.Timedelta(days=i)]))
        >>> lib.is_symbol_fragmented("S")  # 5 segments would become 1: fewer than 100 removed
        False
        """
        sym = check_symbol(symbol)
        base = self._engine.live_from_head(sym, self._engine.head(sym))
        if base is None:  # ArcticDB's error class here (compact_data raises StorageException)
            raise InternalException(f"E_ASSERTION_FAILURE: cannot check the fragmentation of non-existent symbol {sym!r}")
        if base.pickled:  # pickled data is one blob: nothing to compact, as ArcticDB answers
            return False
        plan = self.compact_data_explain_plan(sym, segment_size)
        return plan.segments_before - plan.segments_after >= FRAGMENTED_SEGMENT_COUNT

    @_mutates
    def defragment_symbol_data(self, symbol: str, segment_size: int | None = None,
                               prune_previous_versions: bool | None = None) -> VersionedItem:
        """Deprecated ArcticDB name of :meth:`compact_data`; raises when nothing needs compacting.

        Parameters
        ----------
        symbol : str
            The symbol to compact.
        segment_size : int, optional
            Target rows per segment (default: the library's).
        prune_previous_versions : bool, optional
            Delete earlier versions afterwards (default: the library's option).

        Returns
        -------
        VersionedItem
            The compacted version; no data.

        Raises
        ------
        InternalException
            The symbol is not fragmented (:meth:`is_symbol_fragmented` is False).
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("S", pd.DataFrame({"px": [0.0]}, index=[pd.Timestamp("2024-01-01")]))
        >>> for i in range(1, 5):
        ...     _ = lib.append("S", pd.DataFrame({"px": [float(i)]}, index=[pd.Timestamp("2024-01-01") + pd.Timedelta(days=i)]))
        >>> lib.defragment_symbol_data("S")
        Traceback (most recent call last):
        ...
        arcticlite.exceptions.InternalException: E_ASSERTION_FAILURE: Nothing to compact in symbol 'S'
        """
        if not self.is_symbol_fragmented(symbol, segment_size):
            raise InternalException(f"E_ASSERTION_FAILURE: Nothing to compact in symbol {symbol!r}")
        return self.compact_data(symbol, segment_size, prune_previous_versions)

    @_mutates
    def compact_data(self, symbol: str, rows_per_segment: int | None = None,
                     prune_previous_versions: bool | None = None) -> VersionedItem:
        """Merge small segments into ``rows_per_segment``-row ones as a new version.

        A no-op returning the current version when the data is already compact. Earlier
        versions stay readable (copy-on-write). Safe with concurrent appenders: their rows are
        kept (the compaction rebases onto them); a concurrent rewrite makes it give up cleanly.

        Parameters
        ----------
        symbol : str
            The symbol's name.
        rows_per_segment : int, optional
            Target rows per segment (default: the library's).
        prune_previous_versions : bool, optional
            Delete earlier versions afterwards.

        Returns
        -------
        VersionedItem
            The new version (or the current one when there was nothing to do); no data.

        Raises
        ------
        NoDataFoundException
            No such symbol.
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.write("S", df)
        >>> for i in range(5):
        ...     _ = lib.append("S", pd.DataFrame({"px": [float(i)]}, index=[pd.Timestamp("2024-02-01") + pd.Timedelta(days=i)]))
        >>> lib.compact_data("S", rows_per_segment=100).version
        6
        >>> len(lib.read("S").data)
        8
        """
        sym = check_symbol(symbol)
        head = self._engine.head(sym)
        base = self._engine.live_from_head(sym, head)
        if has_deltas(base):  # a version with delta segments: compaction folds them
            return self.compact_deltas(sym, prune_previous_versions=prune_previous_versions)
        if base is not None and base.pickled:  # one blob: already compact (ArcticDB returns the version)
            return self._item(sym, base, metadata=None)
        plan, leaves = plan_compaction(self._table, head, base, sym, args.positive(rows_per_segment, "rows_per_segment"))
        assert base is not None
        if not plan.runs:  # ArcticDB's item of a compaction carries no data and no metadata
            return self._item(sym, base, metadata=None)
        op = rewrite_compaction(self._table, sym, base, plan, leaves)
        return self._item(sym, self._apply(sym, op, prune_previous_versions), metadata=None)

    @_mutates
    def compact_data_tasks(self, symbol: str, rows_per_segment: int | None = None) -> CompactionJob:
        """Plan :meth:`compact_data` for parallel execution (the Spark connector's maintenance
        helper).

        One picklable task per run of small or oversized row slices (per group of deltas, for a
        version with delta segments), each runnable in any process from the library's URI
        (``task.execute()`` returns its new leaf rows); then :meth:`commit_compaction` commits
        them as one version. Planning reads the index only; the tasks do the reading and writing.

        Parameters
        ----------
        symbol : str
            The symbol to compact.
        rows_per_segment : int, optional
            Target rows per segment (default: the library's).

        Returns
        -------
        CompactionJob
            ``symbol``, ``plan``, ``tasks`` and the version planned from (``base_seq``).

        Raises
        ------
        UserInputException
            ``rows_per_segment`` is not a positive int.
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb, tempfile
        >>> lib = adb.Arctic("lmdb://" + tempfile.mkdtemp()).create_library("demo")
        >>> for i in range(4):
        ...     _ = lib.append("S", pd.DataFrame({"px": [float(i)]}, index=[pd.Timestamp("2024-01-01") + pd.Timedelta(days=i)]))
        >>> job = lib.compact_data_tasks("S")
        >>> results = [task.execute() for task in job.tasks]  # anywhere: a Spark executor, a process pool
        >>> lib.commit_compaction(job, results).version
        4
        >>> len(lib.inspect_index("S"))
        1
        """
        sym = check_symbol(symbol)
        head = self._engine.head(sym)
        base = self._engine.live_from_head(sym, head)
        uri = self._worker_uri()
        if has_deltas(base):
            assert base is not None
            fold = plan_fold(self._table, sym, base, uri=uri, library=self._name)
            return CompactionJob(sym, fold, list(fold.tasks), base.seq)
        plan, leaves = plan_compaction(self._table, head, base, sym, args.positive(rows_per_segment, "rows_per_segment"))
        assert base is not None
        return CompactionJob(sym, plan, compaction_tasks(self._table, uri, self._name, sym, base, plan, leaves),
                             base.seq)

    @_mutates
    def commit_compaction(self, job: CompactionJob, results: list[Any],
                          prune_previous_versions: bool | None = None) -> VersionedItem:
        """Commit the results of ``job``'s tasks (in task order) as one new version.

        Rebased on rows appended meanwhile (copy-on-write); a symbol rewritten meanwhile makes
        it give up with ``CommitConflictError``, and the tasks' segments become garbage for
        :meth:`gc`. A job with no tasks returns the version it planned.

        Parameters
        ----------
        job : CompactionJob
            From :meth:`compact_data_tasks`.
        results : list
            What each of ``job.tasks`` returned from ``execute()``, in task order.
        prune_previous_versions : bool, optional
            Delete earlier versions afterwards (default: the library's option).

        Returns
        -------
        VersionedItem
            The compacted version (or the planned one when there was nothing to do); no data.

        Raises
        ------
        NoSuchVersionException
            The version the job was planned from was deleted.
        CommitConflictError
            The symbol was rewritten since the job was planned.
        UserInputException
            The number of results is not the number of tasks.
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb, tempfile
        >>> lib = adb.Arctic("lmdb://" + tempfile.mkdtemp()).create_library("demo")
        >>> for i in range(3):
        ...     _ = lib.append("S", pd.DataFrame({"px": [float(i)]}, index=[pd.Timestamp("2024-01-01") + pd.Timedelta(days=i)]))
        >>> job = lib.compact_data_tasks("S")
        >>> item = lib.commit_compaction(job, [task.execute() for task in job.tasks])
        >>> item.version, lib.read("S").data["px"].tolist()
        (3, [0.0, 1.0, 2.0])
        """
        sym = job.symbol
        base = self._engine.read_record(sym, job.base_seq)
        if base is None or not base.is_data:
            raise NoSuchVersionException(f"E_NO_SUCH_VERSION: the version compaction planned for {sym!r} is gone")
        if isinstance(job.plan, FoldPlan):
            if not job.plan.will_do_work:
                return self._item(sym, base, metadata=None)
            if len(results) != len(job.tasks):
                raise UserInputException(f"a compaction of {len(job.tasks)} groups got {len(results)} results")
            fold = FoldDeltas(self._table, sym, base, job.plan, list(results))
            return self._item(sym, self._apply(sym, fold, prune_previous_versions), metadata=None)
        if not job.tasks:
            return self._item(sym, base, metadata=None)
        leaves = self._table.index(sym).leaves(base.index or EMPTY_ROOT)
        op = commit_op(self._table, sym, base, job.plan, leaves, list(results))
        return self._item(sym, self._apply(sym, op, prune_previous_versions), metadata=None)

    def compaction_plan(self, symbol: str, as_of: Any = None, memory_budget: int | None = None) -> FoldPlan:
        """The groups that compacting the deltas of ``symbol`` (merges kept as delta
        segments) would fold, without writing anything.

        Parameters
        ----------
        symbol : str
            The symbol to plan for.
        as_of : int | str | datetime, optional
            The version planned (default: the latest).
        memory_budget : int, optional
            Stored bytes of base row groups one task may read (default 256 MiB): a larger group
            is split by key range into several tasks.

        Returns
        -------
        FoldPlan
            ``layers`` / ``delta_rows`` pending, ``due`` (per the library's
            ``compaction_deltas`` / ``compaction_delta_share``), ``tasks`` (one per group) and
            ``groups()`` (a row per group: base rows, index interval, changes, bytes).

        Raises
        ------
        InternalException
            The version is pickled data.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.write("S", df)
        >>> plan = lib.compaction_plan("S")
        >>> plan.layers, plan.delta_rows, len(plan.tasks)  # a plain write has no deltas
        (0, 0, 0)
        """
        sym = check_symbol(symbol)
        rec = self._resolve(sym, as_of)
        if rec.pickled:
            raise InternalException(f"Cannot compact pickled data (symbol {sym!r})")
        return plan_fold(self._table, sym, rec, uri=self._worker_uri(), library=self._name,
                         budget_bytes=self._budget(memory_budget))

    @staticmethod
    def _budget(memory_budget: int | None) -> int:
        from arcticlite.table import FOLD_BUDGET_BYTES

        budget = args.positive(memory_budget, "memory_budget")
        return FOLD_BUDGET_BYTES if budget is None else budget

    @_mutates
    def compact_deltas(self, symbol: str, workers: int = 1, memory_budget: int | None = None,
                       prune_previous_versions: bool | None = None, executor: str = "thread") -> VersionedItem:
        """Fold the delta segments of ``symbol``'s latest version into its base segments, as one
        new version (copy-on-write: readers see the version with deltas or the folded one).

        The groups of :meth:`compaction_plan` (base row groups and delta segments whose key
        ranges overlap) run as tasks, ``workers`` at a time (a thread pool), each reading only
        its row groups and their deltas; untouched row groups are reused. Safe with concurrent
        writers: a commit meanwhile that left the folded groups' inputs as they were (rows
        appended after them, a merge on row groups left untouched, new metadata) is rebased
        onto — the folded groups are reused and any new group is folded at commit; one that
        touched a folded group makes it give up with ``CommitConflictError``, keeping the
        writer's data and deleting what the tasks wrote. With no deltas, returns the latest
        version. ``compact_data`` does the same for a version with deltas.

        Parameters
        ----------
        symbol : str
            The symbol to fold.
        workers : int
            Groups folded at a time (default 1).
        memory_budget : int, optional
            Stored bytes of base row groups one task may read (default 256 MiB; see
            :meth:`compaction_plan`).
        prune_previous_versions : bool, optional
            Delete earlier versions afterwards (default: the library's option).
        executor : {"thread", "process"}
            Where the groups run: a thread pool in this process (default), or a pool of
            ``workers`` processes, each opening the library by its URI (LMDB or S3; a
            ``mem://`` library is refused with ``UserInputException``). The commit is made
            here either way. Processes pay their start (each imports arcticlite and opens the
            store: about a second or more), so they pay off for groups of many megabytes;
            as with any process pool started by forkserver or spawn, a script must call this
            under ``if __name__ == "__main__":``.

        Returns
        -------
        VersionedItem
            The folded version (or the latest, when there was nothing to fold); no data.

        Raises
        ------
        StorageException
            The symbol does not exist.
        UserInputException
            ``workers`` not a positive int, an unknown ``executor``, or processes for a
            ``mem://`` library.
        CommitConflictError
            A writer touched a folded group meanwhile (nothing was lost; run it again).
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.write("S", df)
        >>> lib.compact_deltas("S").version  # nothing to fold: the latest version
        0
        """
        sym = check_symbol(symbol)
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise UserInputException(f"workers must be a positive int, got {workers!r}")
        head = self._engine.head(sym)
        base = self._engine.live_from_head(sym, head)
        if base is None:
            raise StorageException(f"E_SYMBOL_NOT_FOUND: Cannot compact data of non-existent symbol {sym!r}")
        if executor not in ("thread", "process"):
            raise UserInputException(f"executor must be 'thread' or 'process', got {executor!r}")
        if executor == "process" and self._worker_uri().startswith("mem://"):
            raise UserInputException(
                "executor='process' runs each group in another process, which opens the library by its URI: a "
                "mem:// library lives only in this process; use executor='thread' or an LMDB or S3 library")
        uri = self._worker_uri() if executor == "process" else ""
        plan = plan_fold(self._table, sym, base, uri=uri, library=self._name, budget_bytes=self._budget(memory_budget))
        if not plan.will_do_work:
            return self._item(sym, base, metadata=None)
        results = run_tasks(plan.tasks, self._store, self._keys, workers, executor)
        fold = FoldDeltas(self._table, sym, base, plan, results)
        return self._item(sym, self._apply(sym, fold, prune_previous_versions), metadata=None)

    def gc(self, grace_period: float = DEFAULT_GRACE_SECONDS, dry_run: bool = False) -> GcReport:
        """Delete data segments and index nodes that nothing can reach, and staged entries that
        a committed version was already finalized from (left by a finalize that died after its
        commit; deleted whatever the grace period).

        Lists every key of the library and reads every live version's index: its cost grows
        with the library, not with what it deletes. Run it periodically, not after each write.

        Parameters
        ----------
        grace_period : float
            Seconds a key must have been seen unreachable (by an earlier ``gc``) before it is
            deleted, so that writers still committing are never robbed. ``0`` deletes now:
            use it only when no writer is running.
        dry_run : bool
            Report without deleting or updating the ledger.

        Returns
        -------
        GcReport
            Keys scanned, found unreachable, deleted, and deferred (unreachable for less than
            the grace period).

        Raises
        ------
        PermissionException
            The library is read-only and ``dry_run`` is False.
        CorruptDataError
            An index node of a live or snapshot-held version is missing from the store: its
            segments would look unreachable, so nothing is deleted.

        Notes
        -----
        Safe while readers and writers run (with a grace period longer than any commit).

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0]}))
        >>> lib.gc(dry_run=True).unreachable
        0
        """
        if not dry_run and self._read_only:
            self._refuse_write("gc")
        return collect_garbage(self._table, self._engine, self._snapshots, args.seconds(grace_period, "grace_period"),
                               dry_run)

    def verify(self, data: bool = True) -> VerifyReport:
        """Check the whole library for damage, changing nothing: every key is of a kind
        arcticlite writes; every ref, version record, index node, snapshot, staged entry and
        symbol-list entry opens with a valid checksum and agrees with the others; every data
        segment a live, snapshot-held or staged version needs is present and (``data``)
        decodes with valid page checksums.

        Reads check what they read; ``verify`` also finds damage in what no one reads lately
        and what a read cannot see (a key a flipped bit moved out of its prefix). It reads
        every stored byte with ``data=True``: run it like a scrub, not after each write.

        Parameters
        ----------
        data : bool
            Also decode every data segment that is needed (False: only check it is present).

        Returns
        -------
        VerifyReport
            What was checked, and ``problems``: each piece of damage, naming its key
            (``report.ok`` when there is none).

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0]}))
        >>> lib.verify().ok
        True
        """
        return verify_library(self._table, self._engine, self._snapshots, self._symbol_list, data=data)

    # -- symbols, versions, snapshots -----------------------------------------------------------
    def list_symbols(self, snapshot_name: str | None = None, regex: str | None = None) -> list[str]:
        """Symbols with a live version (or in ``snapshot_name``), filtered by ``regex``.

        Served by the symbol-list cache: one prefix listing plus the compacted keys, never a
        walk of version chains.

        Parameters
        ----------
        snapshot_name : str, optional
            The symbols of this snapshot instead.
        regex : str, optional
            Only names this regular expression matches (``re.search``).

        Returns
        -------
        list of str

        Raises
        ------
        NoDataFoundException
            No such snapshot.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> for s in ("AAPL", "AMZN", "MSFT"):
        ...     _ = lib.write(s, df)
        >>> sorted(lib.list_symbols(regex="^A"))
        ['AAPL', 'AMZN']
        """
        if snapshot_name is not None:
            syms = list(self._snapshots.read(snapshot_name)["symbols"])
        else:
            syms = self._symbol_list.symbols()
        if regex is not None:
            pat = args.regex(regex)
            syms = [s for s in syms if pat is not None and pat.search(s)]
        return syms

    @_mutates
    def reload_symbol_list(self) -> None:
        """Rebuild the symbol-list cache from the version refs.

        Lists every symbol's ref: use it only if :meth:`list_symbols` seems wrong (the list is
        kept up to date by every write and delete, also concurrent ones).

        Raises
        ------
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0]}))
        >>> lib.reload_symbol_list()
        >>> lib.list_symbols()
        ['S']
        """
        self._symbol_list.rebuild()

    @_mutates
    def compact_symbol_list(self) -> int:
        """Compact the symbol-list journal into one key.

        Each write of a new symbol and each delete adds a journal key, which
        :meth:`list_symbols` reads; compacting merges them (it also happens on its own when the
        journal grows). Safe with concurrent writers: their entries are kept.

        Returns
        -------
        int
            The number of journal keys merged.

        Raises
        ------
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("A", pd.DataFrame({"px": [1.0]}))
        >>> _ = lib.write("B", pd.DataFrame({"px": [1.0]}))
        >>> lib.compact_symbol_list() >= 0, lib.list_symbols()
        (True, ['A', 'B'])
        """
        return self._symbol_list.compact()

    def list_versions(self, symbol: str | None = None, snapshot: str | None = None, latest_only: bool = False,
                      skip_snapshots: bool = False) -> dict[SymbolVersion, VersionInfo]:
        """Versions newest first: live ones, and deleted ones still held by a snapshot.

        Parameters
        ----------
        symbol : str, optional
            Only this symbol's versions (default: every symbol's).
        snapshot : str, optional
            Only the versions this snapshot holds.
        latest_only : bool
            Only the latest version of each symbol.
        skip_snapshots : bool
            Do not fill in the snapshots holding each version.

        Returns
        -------
        dict
            ``SymbolVersion(symbol, version)`` -> ``VersionInfo(date, deleted, snapshots)``.

        Raises
        ------
        NoDataFoundException
            ``snapshot`` names no snapshot.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.write("S", df); _ = lib.append("S", df.shift(3, freq="D"))
        >>> [(v.symbol, v.version) for v in lib.list_versions("S")]
        [('S', 1), ('S', 0)]
        """
        if snapshot is not None:
            snap = self._snapshots.read(snapshot)
            # every snapshot holding each version listed, as ArcticDB lists them (none if skipped)
            holders = {} if skip_snapshots else self._snapshots.by_version(symbol)
            out: dict[SymbolVersion, VersionInfo] = {}
            for s, v in snap["symbols"].items():
                if symbol is not None and s != symbol:
                    continue
                rec = self._engine.read_record(s, int(v))
                if rec is not None:
                    names = [] if skip_snapshots else holders.get((s, rec.seq), [snapshot])
                    out[SymbolVersion(s, rec.vid)] = VersionInfo(describe.utc(rec.created_ns), False, names)
            return out
        snaps = {} if skip_snapshots else self._snapshots.by_version(symbol)
        if symbol is not None:
            syms = [check_symbol(symbol)]
        else:  # deleted symbols whose versions a snapshot holds are listed too
            syms = list(dict.fromkeys([*self.list_symbols(), *sorted({s for s, _ in snaps})]))
        out = {}
        for s in syms:
            head = self._engine.head(s)
            if head is None:
                continue
            for rec in self._engine.history(s, head):
                if not rec.is_data:
                    continue
                live = head.is_live(rec.seq)
                held = snaps.get((s, rec.seq), [])
                if not live and (latest_only or not held):
                    continue  # latest_only: the latest live version alone
                out[SymbolVersion(s, rec.vid)] = VersionInfo(describe.utc(rec.created_ns), not live, held)
                if latest_only:
                    break
        return out

    @_mutates
    def snapshot(self, snapshot_name: str, metadata: Any = None, skip_symbols: list[str] | None = None,
                 versions: dict[str, int] | None = None) -> None:
        """Record the latest version of every symbol (or ``versions``) under a name.

        Versions held by a snapshot keep their data when deleted or pruned.

        Parameters
        ----------
        snapshot_name : str
            The name (at most 254 characters, none of ``* < >``).
        metadata : Any, optional
            Returned by ``list_snapshots()``.
        skip_symbols : list of str, optional
            Symbols to leave out.
        versions : dict, optional
            ``{symbol: version}``: exactly these versions (not with a non-empty ``skip_symbols``);
            a deleted version still held by another snapshot counts. Empty: every symbol.

        Returns
        -------
        None

        Raises
        ------
        InternalException
            A snapshot of that name exists, or both ``skip_symbols`` and ``versions`` were given.
        NoSuchVersionException
            A version of ``versions`` is neither live nor held by a snapshot.
        UserInputException
            The name is empty, too long or holds ``* < >``.
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.write("S", df)
        >>> lib.snapshot("eod")
        >>> _ = lib.write("S", df.iloc[:1])
        >>> len(lib.read("S", as_of="eod").data), len(lib.read("S").data)
        (3, 1)
        """
        if not isinstance(snapshot_name, str) or not snapshot_name:
            raise UserInputException("snapshot name must be a non-empty string")
        if len(snapshot_name) > MAX_SNAPSHOT_NAME or any(c in snapshot_name for c in "*<>"):
            raise UserInputException(
                f"E_INVALID_CHAR_IN_NAME: snapshot name {snapshot_name!r} is too long or contains * < >")
        if skip_symbols and versions:
            raise InternalException("E_INVALID_ARGUMENT: give skip_symbols or versions, not both")
        if not versions:
            versions = None  # ArcticDB's rule: an empty dict (like None) snapshots every symbol
        else:
            for v in versions.values():
                args.version_id(v)
        if self._snapshots.exists(snapshot_name):
            raise InternalException(f"Snapshot with name {snapshot_name} already exists")
        self._check_not_deleted()
        # a version deleted between its choice and the snapshot's write may have lost its data
        # to the deleter's clean-up (which did not see the snapshot yet): check after writing
        for attempt in range(4):
            chosen: dict[str, int] = {}
            kept: set[str] = set()  # symbols whose chosen version only other snapshots keep
            if versions is not None:
                missing = []
                snaps: dict[tuple[str, int], list[str]] | None = None
                for s, v in versions.items():
                    head = self._engine.head(s)
                    seq = head.seq_of(int(v)) if head is not None else None
                    if head is None or seq is None:
                        missing.append((s, v))
                    elif head.is_live(seq):
                        chosen[s] = seq  # snapshots hold commit sequences
                    else:  # deleted: still a version while a snapshot keeps it (as in ArcticDB)
                        snaps = self._snapshots.by_version() if snaps is None else snaps
                        if (s, seq) in snaps:
                            chosen[s] = seq
                            kept.add(s)
                        else:
                            missing.append((s, v))
                if missing:
                    raise NoSuchVersionException(f"Specified symbol-version pairs do not exist: {missing}")
            else:
                skip = set(skip_symbols or ())
                for s in self.list_symbols():
                    rec = None if s in skip else self._engine.latest_live(s)
                    if rec is not None:
                        chosen[s] = rec.seq
            if not chosen:
                raise NoSuchVersionException("No valid symbols in the library, skipping snapshot creation")
            if not self._snapshots.create(snapshot_name, chosen, metadata):
                raise InternalException(f"Snapshot with name {snapshot_name} already exists")
            dead = [(s, v) for s, v in chosen.items() if s not in kept and not self._is_live_version(s, v)]
            if kept:  # the other snapshots must still hold them now that ours is written
                others = {k for k, names in self._snapshots.by_version().items() if set(names) - {snapshot_name}}
                dead += [(s, v) for s, v in chosen.items() if s in kept and (s, v) not in others
                         and not self._is_live_version(s, v)]
            if not dead:
                return
            self._snapshots.delete(snapshot_name)
            if versions is not None or attempt == 3:
                raise NoSuchVersionException(
                    f"Specified symbol-version pairs were deleted while the snapshot was taken: {dead}")

    def _is_live_version(self, sym: str, seq: int) -> bool:
        head = self._engine.head(sym)
        return head is not None and head.is_live(seq)

    @_mutates
    def delete_snapshot(self, snapshot_name: str) -> None:
        """Delete a snapshot; data no live version or other snapshot needs is removed.

        Parameters
        ----------
        snapshot_name : str
            The snapshot.

        Returns
        -------
        None

        Raises
        ------
        NoDataFoundException
            No such snapshot.
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.write("S", df); lib.snapshot("eod")
        >>> lib.delete_snapshot("eod"); lib.list_snapshots()
        {}
        """
        snap = self._snapshots.read(snapshot_name)
        self._snapshots.delete(snapshot_name)
        for s in snap["symbols"]:
            self._cleanup(s)

    def list_snapshots(self, load_metadata: bool = True) -> dict[str, Any] | list[str]:
        """The snapshots of the library.

        Parameters
        ----------
        load_metadata : bool, default True
            Return ``{name: metadata}``; False returns the names only.

        Returns
        -------
        dict or list of str

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.write("S", df)
        >>> lib.snapshot("eod", metadata={"day": 1})
        >>> lib.list_snapshots()
        {'eod': {'day': 1}}
        """
        names = self._snapshots.names()
        if not load_metadata:
            return names
        return {n: self._snapshots.metadata(self._snapshots.read(n), self._allow_pickle) for n in names}

    # -- introspection --------------------------------------------------------------------------
    def admin_tools(self) -> AdminTools:
        """Storage statistics of this library (ArcticDB's ``Library.admin_tools()``).

        Returns
        -------
        AdminTools
            ``get_sizes()``, ``get_sizes_by_symbol()``, ``get_sizes_for_symbol(symbol)``: keys
            and bytes by key type (each lists and sizes the library's keys).

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0]}))
        >>> sizes = lib.admin_tools().get_sizes_for_symbol("S")
        >>> sizes[adb.KeyType.TABLE_DATA].count
        1
        """
        return AdminTools(self._store, self._keys)

    def inspect_versions(self, symbol: str) -> Any:
        """Every commit of ``symbol``, newest first: kind, live, rows, segments, created.

        Reads every version record of the symbol (one small read each).

        Parameters
        ----------
        symbol : str
            The symbol.

        Returns
        -------
        pandas.DataFrame
            One row per commit: ``version``, ``commit``, ``kind`` (write, append, update, ...),
            ``live``, ``rows``, ``segments``, ``index_height``, ``deltas``, ``delta_rows``,
            ``created``.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0]}, index=[pd.Timestamp("2024-01-01")]))
        >>> _ = lib.append("S", pd.DataFrame({"px": [2.0]}, index=[pd.Timestamp("2024-01-02")]))
        >>> lib.inspect_versions("S")[["version", "kind", "live", "rows"]].values.tolist()
        [[1, 'append', True, 2], [0, 'write', True, 1]]
        """
        sym = check_symbol(symbol)
        head = self._engine.head(sym)
        return describe.versions_frame(head, list(self._engine.history(sym, head)) if head is not None else [])

    def inspect_index(self, symbol: str, as_of: Any = None) -> Any:
        """The table-index rows of a version: one per segment.

        Row range, column range, index range, key, bytes, whether it holds deltas, and whether it
        is the symbol's open tail (written plain by a small append, to be replaced by the next one
        with its rows added). Reads the version's index only.

        Parameters
        ----------
        symbol : str
            The symbol.
        as_of : int | str | datetime, optional
            The version (default: the latest).

        Returns
        -------
        pandas.DataFrame
            ``start_row``, ``end_row``, ``start_col``, ``end_col``, ``min_index``, ``max_index``,
            ``seg_offset``, ``seg_rows``, ``bytes``, ``open_tail``, ``delta``, ``key``.

        Raises
        ------
        NoSuchVersionException
            The symbol or the ``as_of`` version does not exist.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0]}))
        >>> lib.inspect_index("S")[["start_row", "end_row"]].values.tolist()
        [[0, 2]]
        """
        sym = check_symbol(symbol)
        rec = self._resolve(sym, as_of)
        return describe.index_frame(self._keys, sym, self._table.index(sym).leaves(rec.index or EMPTY_ROOT))

    def inspect_segments(self, symbol: str, as_of: Any = None) -> Any:
        """Per segment and column: rows, pages, encodings and compressed / raw bytes.

        Reads each segment's metadata (its footer), not its data.

        Parameters
        ----------
        symbol : str
            The symbol.
        as_of : int | str | datetime, optional
            The version (default: the latest).

        Returns
        -------
        pandas.DataFrame
            ``key``, ``segment_bytes``, ``column``, ``rows``, ``pages``, ``encodings``,
            ``compressed``, ``raw``; for pickled data, the rows of :meth:`inspect_index`.

        Raises
        ------
        NoSuchVersionException
            The symbol or the ``as_of`` version does not exist.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2)))
        >>> lib.inspect_segments("S")[["column", "rows"]].values.tolist()
        [['__index__', 2], ['px', 2]]
        """
        idx = self.inspect_index(symbol, as_of)
        if self._resolve(check_symbol(symbol), as_of).pickled:
            return idx
        return describe.segments_frame(self._store, idx)

    # -- batches --------------------------------------------------------------------------------
    @_mutates
    def write_batch(self, payloads: list[WritePayload], prune_previous_versions: bool | None = None,
                    validate_index: bool = True) -> list[VersionedItem | DataError]:
        """Write many symbols; parallel where the store benefits.

        A failed item comes back in place as a :class:`DataError`; the others are written.

        Parameters
        ----------
        payloads : list of WritePayload
            One per symbol (each symbol at most once).
        prune_previous_versions : bool, optional
            Delete earlier versions after each write.
        validate_index : bool
            As for :meth:`write`.

        Returns
        -------
        list of VersionedItem or DataError
            In the order of ``payloads``.

        Raises
        ------
        ArcticDuplicateSymbolsInBatchException
            A symbol appears twice.
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> items = lib.write_batch([adb.WritePayload("A", df), adb.WritePayload("B", df)])
        >>> [(i.symbol, i.version) for i in items]
        [('A', 0), ('B', 0)]
        """
        batch.check_unique(args.payloads(payloads, WritePayload, "write_batch"), "write_batch")
        batch.check_payload_data(payloads)
        batch.check_metadata_size(payloads)
        return self._run_batch("write_batch", payloads, lambda p: self.write(
            p.symbol, p.data, metadata=p.metadata, prune_previous_versions=prune_previous_versions,
            validate_index=validate_index, index_column=p.index_column), lambda p: p.symbol,
            grouped=not self._prune_default(prune_previous_versions))

    @_mutates
    def write_pickle_batch(self, payloads: list[WritePayload],
                           prune_previous_versions: bool | None = None) -> list[VersionedItem | DataError]:
        """Write many symbols' objects pickled (as :meth:`write_pickle`), in parallel where the
        store benefits.

        A failed item comes back in place as a :class:`DataError`; the others are written.

        Parameters
        ----------
        payloads : list of WritePayload
            One per symbol (each symbol at most once); ``data`` may be any picklable object.
        prune_previous_versions : bool, optional
            Delete earlier versions after each write (default: the library's option).

        Returns
        -------
        list of VersionedItem or DataError
            In the order of ``payloads``.

        Raises
        ------
        ArcticDuplicateSymbolsInBatchException
            A symbol appears twice.
        ArcticDbNotYetImplemented
            A payload's metadata is above 16 MiB once encoded (nothing of the batch is written).
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> items = lib.write_pickle_batch([adb.WritePayload("cfg", {"a": 1}), adb.WritePayload("ids", [1, 2])])
        >>> [i.version for i in items], lib.read("ids").data
        ([0, 0], [1, 2])
        """
        batch.check_unique(args.payloads(payloads, WritePayload, "write_pickle_batch"), "write_pickle_batch")
        batch.check_metadata_size(payloads)
        return self._run_batch("write_pickle_batch", payloads, lambda p: self.write_pickle(
            p.symbol, p.data, metadata=p.metadata, prune_previous_versions=prune_previous_versions),
            lambda p: p.symbol, grouped=not self._prune_default(prune_previous_versions))

    @_mutates
    def append_batch(self, append_payloads: list[WritePayload], prune_previous_versions: bool | None = None,
                     validate_index: bool = True, compact_data: bool = False) -> list[VersionedItem | DataError]:
        """Append to many symbols (as :meth:`append`), in parallel where the store benefits.

        A failed item comes back in place as a :class:`DataError`; the others are appended.
        Each append is safe with concurrent writers of its symbol (it rebases).

        Parameters
        ----------
        append_payloads : list of WritePayload
            One per symbol (each symbol at most once).
        prune_previous_versions : bool, optional
            Delete earlier versions after each append (default: the library's option).
        validate_index : bool
            As for :meth:`append`.
        compact_data : bool
            Accepted for ArcticDB compatibility; appends keep their own segments.

        Returns
        -------
        list of VersionedItem or DataError
            In the order of ``append_payloads``.

        Raises
        ------
        ArcticDuplicateSymbolsInBatchException
            A symbol appears twice.
        ArcticUnsupportedDataTypeException
            A payload's data is not a table.
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2))
        >>> _ = lib.write("A", df)
        >>> later = pd.DataFrame({"px": [3.0]}, index=[pd.Timestamp("2024-01-03")])
        >>> items = lib.append_batch([adb.WritePayload("A", later), adb.WritePayload("B", later)])
        >>> [(i.symbol, i.version) for i in items]
        [('A', 1), ('B', 0)]
        """
        batch.check_unique(args.payloads(append_payloads, WritePayload, "append_batch"), "append_batch")
        batch.check_payload_data(append_payloads)
        batch.check_metadata_size(append_payloads)
        return self._run_batch("append_batch", append_payloads, lambda p: self.append(
            p.symbol, p.data, metadata=p.metadata, prune_previous_versions=prune_previous_versions,
            validate_index=validate_index, index_column=p.index_column), lambda p: p.symbol,
            grouped=not self._prune_default(prune_previous_versions))

    @_mutates
    def update_batch(self, update_payloads: list[UpdatePayload], upsert: bool = False,
                     prune_previous_versions: bool | None = None) -> list[VersionedItem | DataError]:
        """Update many symbols (as :meth:`update`), in parallel where the store benefits.

        A failed item comes back in place as a :class:`DataError`; the others are updated.

        Parameters
        ----------
        update_payloads : list of UpdatePayload
            One per symbol (each symbol at most once), each with its own optional ``date_range``.
        upsert : bool
            Create a symbol that does not exist.
        prune_previous_versions : bool, optional
            Delete earlier versions after each update (default: the library's option).

        Returns
        -------
        list of VersionedItem or DataError
            In the order of ``update_payloads``.

        Raises
        ------
        ArcticDuplicateSymbolsInBatchException
            A symbol appears twice.
        ArcticUnsupportedDataTypeException
            A payload's data is not a table.
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2))
        >>> _ = lib.write("A", df)
        >>> fix = pd.DataFrame({"px": [20.0]}, index=[pd.Timestamp("2024-01-02")])
        >>> items = lib.update_batch([adb.UpdatePayload("A", fix), adb.UpdatePayload("missing", fix)])
        >>> items[0].version, type(items[1]).__name__, lib.read("A").data["px"].tolist()
        (1, 'DataError', [1.0, 20.0])
        """
        batch.check_unique(args.payloads(update_payloads, UpdatePayload, "update_batch"), "update_batch")
        batch.check_payload_data(update_payloads)
        batch.check_metadata_size(update_payloads)
        return self._run_batch("update_batch", update_payloads, lambda p: self._missing_as_no_data(
            p.symbol, lambda: self.update(p.symbol, p.data, metadata=p.metadata, upsert=upsert, date_range=p.date_range,
                                          prune_previous_versions=prune_previous_versions,
                                          index_column=p.index_column)), lambda p: p.symbol,
            grouped=not self._prune_default(prune_previous_versions))

    @_mutates
    def write_metadata_batch(self, write_metadata_payloads: list[WriteMetadataPayload],
                             prune_previous_versions: bool | None = None) -> list[VersionedItem | DataError]:
        """New metadata for many symbols (as :meth:`write_metadata`): no data is rewritten.

        A failed item comes back in place as a :class:`DataError`.

        Parameters
        ----------
        write_metadata_payloads : list of WriteMetadataPayload
            One per symbol (each symbol at most once).
        prune_previous_versions : bool, optional
            Delete earlier versions after each commit (default: the library's option).

        Returns
        -------
        list of VersionedItem or DataError
            In the order of ``write_metadata_payloads``.

        Raises
        ------
        ArcticDuplicateSymbolsInBatchException
            A symbol appears twice.
        ArcticDbNotYetImplemented
            A payload's metadata is above 16 MiB once encoded (nothing of the batch is written).
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2))
        >>> _ = lib.write("A", df)
        >>> _ = lib.write_metadata_batch([adb.WriteMetadataPayload("A", {"source": "feed"})])
        >>> lib.read_metadata("A").metadata
        {'source': 'feed'}
        """
        batch.check_unique(args.payloads(write_metadata_payloads, WriteMetadataPayload, "write_metadata_batch"), "write_metadata_batch")
        batch.check_metadata_size(write_metadata_payloads)
        return self._run_batch("write_metadata_batch", write_metadata_payloads, lambda p: self.write_metadata(
            p.symbol, p.metadata, prune_previous_versions=prune_previous_versions), lambda p: p.symbol)

    def read_batch(self, symbols: list[str | ReadRequest], query_builder: Any = None, lazy: bool = False,
                   output_format: Any = None, arrow_string_format_default: Any = None,
                   arrow_string_format_per_column: Any = None, **_: Any) -> list[VersionedItem | DataError]:
        """Read many symbols; failures come back in place as ``DataError``.

        Parameters
        ----------
        symbols : list of str or ReadRequest
            What to read; a ``ReadRequest`` carries ``as_of``, ``date_range``, ``columns``, …
        query_builder : QueryBuilder, optional
            Applied to every symbol without its own.
        lazy : bool
            Return a ``LazyDataFrameCollection`` whose ``collect()`` reads them.
        output_format : optional
            As for :meth:`read`.
        arrow_string_format_default, arrow_string_format_per_column : optional
            As for :meth:`read`, for every symbol; a ``ReadRequest``'s own default replaces
            the batch's, and its own per-column dict the batch's dict.

        Returns
        -------
        list of VersionedItem or DataError
            In the order of ``symbols``.

        Raises
        ------
        ArcticInvalidApiUsageException
            A ``query_builder`` was given both for the batch and for a request.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3))
        >>> _ = lib.write("A", df)
        >>> got = lib.read_batch(["A", "missing"])
        >>> len(got[0].data), type(got[1]).__name__
        (3, 'DataError')
        """
        reqs = batch.read_requests(symbols)
        if query_builder is not None and any(r.query_builder is not None for r in reqs):
            raise ArcticInvalidApiUsageException("a query_builder was given both for the batch and for a request; give one")
        for r in reqs:  # the whole batch is refused, before anything is read (ArcticDB)
            args.one_range(r.date_range, r.row_range, f" (read request of {r.symbol!r})")
        # a request's string formats: its default, else the batch's; its per-column dict, else
        # the batch's (one dict or the other, as ArcticDB)
        reqs = [r._replace(query_builder=r.query_builder or query_builder,
                           output_format=r.output_format or output_format,
                           arrow_string_format_default=r.arrow_string_format_default or arrow_string_format_default,
                           arrow_string_format_per_column=(arrow_string_format_per_column
                                                           if r.arrow_string_format_per_column is None
                                                           else r.arrow_string_format_per_column))
                for r in reqs]
        if lazy:
            return LazyDataFrameCollection(self, [LazyDataFrame(self, r) for r in reqs])  # type: ignore[return-value]
        return self._run_batch("read_batch", reqs, lambda r: self.read(
            r.symbol, as_of=r.as_of, date_range=r.date_range, row_range=r.row_range, columns=r.columns,
            query_builder=r.query_builder, output_format=r.output_format,
            arrow_string_format_default=r.arrow_string_format_default,
            arrow_string_format_per_column=r.arrow_string_format_per_column),
            lambda r: r.symbol, lambda r: r.as_of)

    def read_batch_and_join(self, symbols: list[ReadRequest | str], query_builder: Any,
                            output_format: Any = None, **_: Any) -> Any:
        """Read the symbols and join their rows: ``query_builder`` starts with
        ``concat("outer" | "inner")``; its later clauses run on the joined rows (see
        :func:`arcticlite.concat`).

        Each symbol is read as :meth:`read` would (in parallel where the store benefits), with
        its request's own ``as_of``, ``date_range``, ``columns`` and ``query_builder``.

        Parameters
        ----------
        symbols : list of str or ReadRequest
            What to read and join, in order.
        query_builder : QueryBuilder
            ``QueryBuilder().concat(join)`` and then any clauses for the joined rows.
        output_format : optional
            As for :meth:`read`.

        Returns
        -------
        VersionedItemWithJoin
            The joined data and the ``VersionedItem`` of every symbol read.

        Raises
        ------
        UserInputException
            ``query_builder`` does not start with ``concat()``.
        NoDataFoundException
            A symbol or version does not exist (a failed read raises; no ``DataError``).

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("A", pd.DataFrame({"px": [1.0]}, index=[pd.Timestamp("2024-01-01")]))
        >>> _ = lib.write("B", pd.DataFrame({"px": [2.0]}, index=[pd.Timestamp("2024-01-02")]))
        >>> joined = lib.read_batch_and_join(["A", "B"], adb.QueryBuilder().concat())
        >>> joined.data["px"].tolist(), [v.symbol for v in joined.versions]
        ([1.0, 2.0], ['A', 'B'])
        """
        if not isinstance(query_builder, QueryBuilder) or not query_builder.clauses:
            raise UserInputException("E_INVALID_USER_ARGUMENT read_batch_and_join called with no clauses: "
                                     "pass QueryBuilder().concat() (then any clauses for the joined rows)")
        (first, join), rest = query_builder.clauses[0], query_builder.clauses[1:]
        if first != "concat":
            raise UserInputException("E_INVALID_USER_ARGUMENT read_batch_and_join: the query_builder must start "
                                     "with concat(); per-symbol clauses go in each ReadRequest's query_builder")
        joined = concat([LazyDataFrame(self, r._replace(output_format=r.output_format or output_format))
                         for r in batch.read_requests(symbols)], join)
        joined.clauses = list(rest)
        return joined.collect()

    @staticmethod
    def parse_list_of_symbols(symbols: list[str | ReadInfoRequest]) -> tuple[list[str], list[Any]]:
        """Names and ``as_of`` values of ``symbols`` (names or ``ReadInfoRequest`` s).

        Parameters
        ----------
        symbols : list of str or ReadInfoRequest
            As given to :meth:`read_metadata_batch` / :meth:`get_description_batch`.

        Returns
        -------
        tuple of (list of str, list)
            The names, and the ``as_of`` of each (``None`` for a bare name).

        Raises
        ------
        ArcticInvalidApiUsageException
            An item is neither a str nor a ``ReadInfoRequest``.

        Examples
        --------
        >>> import arcticlite as adb
        >>> adb.Library.parse_list_of_symbols(["A", adb.ReadInfoRequest("B", as_of=2)])
        (['A', 'B'], [None, 2])
        """
        names: list[str] = []
        as_ofs: list[Any] = []
        for s in symbols:
            if isinstance(s, str):
                names.append(s)
                as_ofs.append(None)
            elif isinstance(s, ReadInfoRequest):
                names.append(s.symbol)
                as_ofs.append(s.as_of)
            else:
                raise ArcticInvalidApiUsageException(
                    f"Unsupported item in the symbols argument s=[{s}] type(s)=[{type(s)}]: give str or ReadInfoRequest")
        return names, as_ofs

    def read_metadata_batch(self, symbols: list[str | ReadInfoRequest]) -> list[VersionedItem | DataError]:
        """Metadata of many symbols (as :meth:`read_metadata`: no data is read).

        A failed item comes back in place as a :class:`DataError`.

        Parameters
        ----------
        symbols : list of str or ReadInfoRequest
            Names (latest version) or requests with an ``as_of``.

        Returns
        -------
        list of VersionedItem or DataError
            In the order of ``symbols``; each item's ``data`` is ``None``.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2))
        >>> _ = lib.write("A", df, metadata={"v": 0})
        >>> _ = lib.write("A", df, metadata={"v": 1})
        >>> got = lib.read_metadata_batch(["A", adb.ReadInfoRequest("A", as_of=0), "missing"])
        >>> got[0].metadata, got[1].metadata, type(got[2]).__name__
        ({'v': 1}, {'v': 0}, 'DataError')
        """
        reqs = [s if isinstance(s, ReadInfoRequest) else ReadInfoRequest(symbol=s) for s in symbols]
        return self._run_batch("read_metadata_batch", reqs, lambda r: self.read_metadata(r.symbol, as_of=r.as_of),
                               lambda r: r.symbol, lambda r: r.as_of)

    def get_description_batch(self, symbols: list[str | ReadInfoRequest]) -> list[Any]:
        """Descriptions of many symbols (as :meth:`get_description`: index and footers, no data).

        A failed item comes back in place as a :class:`DataError`.

        Parameters
        ----------
        symbols : list of str or ReadInfoRequest
            Names (latest version) or requests with an ``as_of``.

        Returns
        -------
        list of SymbolDescription or DataError
            In the order of ``symbols``.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2))
        >>> _ = lib.write("A", df)
        >>> [d.row_count for d in lib.get_description_batch(["A"])]
        [2]
        """
        reqs = [s if isinstance(s, ReadInfoRequest) else ReadInfoRequest(symbol=s) for s in symbols]
        return self._run_batch("get_description_batch", reqs, lambda r: self.get_description(r.symbol, as_of=r.as_of),
                               lambda r: r.symbol, lambda r: r.as_of)

    @_mutates
    def delete_batch(self, delete_requests: list[str | DeleteRequest]) -> list[DataError | None]:
        """Delete many symbols, or versions of them (as :meth:`delete`).

        A failed item comes back in place as a :class:`DataError`; the others are deleted.

        Parameters
        ----------
        delete_requests : list of str or DeleteRequest
            A name deletes every version of the symbol; a ``DeleteRequest`` names versions
            (an empty list of them, as in ArcticDB, deletes every version).

        Returns
        -------
        list of DataError or None
            ``None`` for each item deleted, in order.

        Raises
        ------
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"px": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2))
        >>> for s in ("A", "B", "B"):
        ...     _ = lib.write(s, df)
        >>> lib.delete_batch(["A", adb.DeleteRequest("B", [0])])
        [None, None]
        >>> lib.list_symbols(), [v.version for v in lib.list_versions("B")]
        (['B'], [1])
        """
        reqs = [d if isinstance(d, DeleteRequest) else DeleteRequest(symbol=d, version_ids=None)  # type: ignore[arg-type]
                for d in delete_requests]
        for r in reqs:  # a negative version number is refused before anything is deleted
            if r.version_ids:
                args.versions(r.version_ids)
        return self._run_batch("delete_batch", reqs, lambda r: self.delete(r.symbol, r.version_ids or None),
                               lambda r: r.symbol, lambda _r: batch.NO_VERSION_REQUEST)

    @_mutates
    def compact_data_batch(self, symbols: list[str], rows_per_segment: int | None = None,
                           prune_previous_versions: bool | None = None) -> list[Any]:
        """Compact many symbols (as :meth:`compact_data`), in parallel where the store benefits.

        A failed item comes back in place as a :class:`DataError`.

        Parameters
        ----------
        symbols : list of str
            The symbols to compact.
        rows_per_segment : int, optional
            Target rows per segment (default: the library's).
        prune_previous_versions : bool, optional
            Delete earlier versions afterwards (default: the library's option).

        Returns
        -------
        list of VersionedItem or DataError
            In the order of ``symbols``.

        Raises
        ------
        PermissionException
            The library or store was opened read-only.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> for i in range(3):
        ...     _ = lib.append("S", pd.DataFrame({"px": [float(i)]}, index=[pd.Timestamp("2024-01-01") + pd.Timedelta(days=i)]))
        >>> [i.version for i in lib.compact_data_batch(["S"])], len(lib.inspect_index("S"))
        ([3], 1)
        """
        return self._run_batch("compact_data_batch", list(symbols), lambda s: self._missing_as_no_data(
            s, lambda: self.compact_data(s, rows_per_segment, prune_previous_versions)), lambda s: s)

    def _missing_as_no_data(self, sym: str, fn: Callable[[], T]) -> T:
        """``fn()``; when it fails on a symbol without a live version, a ``NoDataFoundException``
        instead: a batch's ``DataError`` then says missing data (``E_NO_SUCH_VERSION``), as
        ArcticDB's does."""
        try:
            return fn()
        except (InternalException, StorageException) as exc:
            if isinstance(exc, NoDataFoundException) or self._engine.latest_live(sym) is not None:
                raise
            raise NoDataFoundException(str(exc)) from exc
