"""Library: batch operations. Per-item failures come back in place as ``DataError``."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from arcticlite.exceptions import (
    ArcticDuplicateSymbolsInBatchException,
    ArcticException,
    ArcticInvalidApiUsageException,
    ArcticUnsupportedDataTypeException,
    InternalException,
    MissingDataException,
    NoDataFoundException,
    NormalizationException,
    SchemaException,
    SortingException,
    StorageException,
    StreamDescriptorMismatch,
    UserInputException,
)
from arcticlite.library._library_append import AppendMixin
from arcticlite.library._types import (
    DataError,
    DeleteRequest,
    ErrorCategory,
    ErrorCode,
    ReadInfoRequest,
    ReadRequest,
    UpdatePayload,
    VersionedItem,
    VersionRequestType,
    WriteMetadataPayload,
    WritePayload,
)

T = TypeVar("T")

_BATCH_POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="arcticlite-batch")

_CATEGORIES: list[tuple[type[Exception], ErrorCode, ErrorCategory]] = [
    (NoDataFoundException, ErrorCode.E_NO_SUCH_VERSION, ErrorCategory.MISSING_DATA),
    (SortingException, ErrorCode.E_UNSORTED_DATA, ErrorCategory.SORTING),
    (StreamDescriptorMismatch, ErrorCode.E_DESCRIPTOR_MISMATCH, ErrorCategory.SCHEMA),
    (SchemaException, ErrorCode.E_DESCRIPTOR_MISMATCH, ErrorCategory.SCHEMA),
    (NormalizationException, ErrorCode.E_INCOMPATIBLE_INDEX, ErrorCategory.NORMALIZATION),
    (UserInputException, ErrorCode.E_INVALID_USER_ARGUMENT, ErrorCategory.USER_INPUT),
    (MissingDataException, ErrorCode.E_NO_SYMBOL_DATA, ErrorCategory.MISSING_DATA),
    (StorageException, ErrorCode.E_KEY_NOT_FOUND, ErrorCategory.STORAGE),
    (InternalException, ErrorCode.E_ASSERTION_FAILURE, ErrorCategory.INTERNAL),
]


def _version_request(as_of: Any) -> tuple[VersionRequestType, Any]:
    if as_of is None:
        return VersionRequestType.LATEST, None
    if isinstance(as_of, str):
        return VersionRequestType.SNAPSHOT, as_of
    if isinstance(as_of, int):
        return VersionRequestType.SPECIFIC, as_of
    return VersionRequestType.TIMESTAMP, as_of


def to_data_error(symbol: str, exc: Exception, as_of: Any = None) -> DataError:
    code, cat = ErrorCode.E_RUNTIME_ERROR, ErrorCategory.GENERIC
    for cls, c, k in _CATEGORIES:
        if isinstance(exc, cls):
            code, cat = c, k
            break
    vtype, vdata = _version_request(as_of)
    return DataError(symbol=symbol, version_request_type=vtype, version_request_data=vdata,
                     error_code=code, error_category=cat, exception_string=str(exc))


def is_normalizable(data: Any) -> bool:
    """Whether ``data`` can be written as a table (else ``write_pickle`` is needed)."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    if isinstance(data, pd.DataFrame | pd.Series | np.ndarray | pa.Table | pa.RecordBatch):
        return True
    return type(data).__module__.startswith("polars") and type(data).__name__ == "DataFrame"


def _check_unique(symbols: list[str], what: str) -> None:
    seen: set[str] = set()
    dups = sorted({s for s in symbols if s in seen or seen.add(s)})  # type: ignore[func-returns-value]
    if dups:
        raise ArcticDuplicateSymbolsInBatchException(
            f"{what}: symbols {dups} appear more than once in the batch; give each symbol once"
        )


class BatchMixin(AppendMixin):
    def _run_batch(self, items: list[Any], fn: Callable[[Any], T], sym_of: Callable[[Any], str],
                   as_of_of: Callable[[Any], Any] = lambda _i: None) -> list[T | DataError]:
        def one(item: Any) -> T | DataError:
            try:
                return fn(item)
            except ArcticException as exc:
                return to_data_error(sym_of(item), exc, as_of_of(item))

        if len(items) <= 1:
            return [one(i) for i in items]
        return list(_BATCH_POOL.map(one, items))

    def _check_payload_data(self, payloads: list[Any]) -> None:
        for p in payloads:
            if not is_normalizable(p.data):
                raise ArcticUnsupportedDataTypeException(
                    f"symbol {p.symbol!r}: data of type {type(p.data).__name__} cannot be written as a "
                    "table; use write_pickle_batch"
                )

    def write_batch(self, payloads: list[WritePayload], prune_previous_versions: bool | None = None,
                    validate_index: bool = True) -> list[VersionedItem | DataError]:
        """Write many symbols; parallel where the store benefits."""
        _check_unique([p.symbol for p in payloads], "write_batch")
        self._check_payload_data(payloads)
        return self._run_batch(
            payloads,
            lambda p: self.write(p.symbol, p.data, metadata=p.metadata,  # type: ignore[arg-type, return-value]
                                 prune_previous_versions=prune_previous_versions,
                                 validate_index=validate_index, index_column=p.index_column),
            lambda p: p.symbol,
        )

    def write_pickle_batch(self, payloads: list[WritePayload],
                           prune_previous_versions: bool | None = None) -> list[VersionedItem | DataError]:
        _check_unique([p.symbol for p in payloads], "write_pickle_batch")
        return self._run_batch(
            payloads,
            lambda p: self.write_pickle(p.symbol, p.data, metadata=p.metadata,
                                        prune_previous_versions=prune_previous_versions),
            lambda p: p.symbol,
        )

    def append_batch(self, append_payloads: list[WritePayload], prune_previous_versions: bool | None = None,
                     validate_index: bool = True, compact_data: bool = False) -> list[VersionedItem | DataError]:
        _check_unique([p.symbol for p in append_payloads], "append_batch")
        self._check_payload_data(append_payloads)
        return self._run_batch(
            append_payloads,
            lambda p: self.append(p.symbol, p.data, metadata=p.metadata,
                                  prune_previous_versions=prune_previous_versions,
                                  validate_index=validate_index, index_column=p.index_column),
            lambda p: p.symbol,
        )

    def update_batch(self, update_payloads: list[UpdatePayload], upsert: bool = False,
                     prune_previous_versions: bool | None = None) -> list[VersionedItem | DataError]:
        _check_unique([p.symbol for p in update_payloads], "update_batch")
        self._check_payload_data(update_payloads)
        return self._run_batch(
            update_payloads,
            lambda p: self.update(p.symbol, p.data, metadata=p.metadata, upsert=upsert,  # type: ignore[attr-defined]
                                  date_range=p.date_range,
                                  prune_previous_versions=prune_previous_versions,
                                  index_column=p.index_column),
            lambda p: p.symbol,
        )

    def write_metadata_batch(self, write_metadata_payloads: list[WriteMetadataPayload],
                             prune_previous_versions: bool | None = None) -> list[VersionedItem | DataError]:
        _check_unique([p.symbol for p in write_metadata_payloads], "write_metadata_batch")
        return self._run_batch(
            write_metadata_payloads,
            lambda p: self.write_metadata(p.symbol, p.metadata,
                                          prune_previous_versions=prune_previous_versions),
            lambda p: p.symbol,
        )

    def read_batch(self, symbols: list[str | ReadRequest], query_builder: Any = None, lazy: bool = False,
                   output_format: Any = None, **_: Any) -> list[VersionedItem | DataError]:
        """Read many symbols; failures come back in place as ``DataError``. With ``lazy=True``,
        a ``LazyDataFrameCollection`` whose ``collect()`` reads them."""
        reqs = _read_requests(symbols)
        if query_builder is not None and any(r.query_builder is not None for r in reqs):
            raise ArcticInvalidApiUsageException(
                "a query_builder was given both for the batch and for a request; give one"
            )
        if lazy:
            from arcticlite.library._lazy import LazyDataFrame, LazyDataFrameCollection

            frames = [LazyDataFrame(self, r._replace(query_builder=r.query_builder or query_builder,
                                                     output_format=r.output_format or output_format))
                      for r in reqs]
            return LazyDataFrameCollection(self, frames)  # type: ignore[return-value]
        return self._run_batch(
            reqs,
            lambda r: self.read(r.symbol, as_of=r.as_of, date_range=r.date_range,
                                row_range=r.row_range, columns=r.columns,
                                query_builder=r.query_builder or query_builder,
                                output_format=r.output_format or output_format),
            lambda r: r.symbol,
            lambda r: r.as_of,
        )

    def read_batch_and_join(self, symbols: list[ReadRequest | str], query_builder: Any,
                            output_format: Any = None, **_: Any) -> Any:
        """Read the symbols and join their rows: ``query_builder`` starts with
        ``concat("outer" | "inner")``; its later clauses run on the joined rows (see
        :func:`arcticlite.concat`). Returns a ``VersionedItemWithJoin``; a failed read raises."""
        from arcticlite.library._lazy import LazyDataFrame, concat
        from arcticlite.query import QueryBuilder

        if not isinstance(query_builder, QueryBuilder) or not query_builder.clauses:
            raise UserInputException("E_INVALID_USER_ARGUMENT read_batch_and_join called with no clauses: "
                                     "pass QueryBuilder().concat() (then any clauses for the joined rows)")
        (first, join), rest = query_builder.clauses[0], query_builder.clauses[1:]
        if first != "concat":
            raise UserInputException("E_INVALID_USER_ARGUMENT read_batch_and_join: the query_builder must start "
                                     "with concat(); per-symbol clauses go in each ReadRequest's query_builder")
        reqs = _read_requests(symbols)
        joined = concat([LazyDataFrame(self, r._replace(output_format=r.output_format or output_format))
                         for r in reqs], join)
        joined.clauses = list(rest)
        return joined.collect()

    def read_metadata_batch(self, symbols: list[str | ReadInfoRequest]) -> list[VersionedItem | DataError]:
        reqs = [s if isinstance(s, ReadInfoRequest) else ReadInfoRequest(symbol=s) for s in symbols]
        return self._run_batch(reqs, lambda r: self.read_metadata(r.symbol, as_of=r.as_of),
                               lambda r: r.symbol, lambda r: r.as_of)

    def get_description_batch(self, symbols: list[str | ReadInfoRequest]) -> list[Any]:
        reqs = [s if isinstance(s, ReadInfoRequest) else ReadInfoRequest(symbol=s) for s in symbols]
        return self._run_batch(reqs, lambda r: self.get_description(r.symbol, as_of=r.as_of),  # type: ignore[attr-defined]
                               lambda r: r.symbol, lambda r: r.as_of)

    def delete_batch(self, delete_requests: list[str | DeleteRequest]) -> list[DataError | None]:
        reqs = [d if isinstance(d, DeleteRequest) else DeleteRequest(symbol=d, version_ids=None) for d in delete_requests]  # type: ignore[arg-type]
        return self._run_batch(reqs, lambda r: self.delete(r.symbol, r.version_ids),
                               lambda r: r.symbol)


def _read_requests(symbols: list[str | ReadRequest]) -> list[ReadRequest]:
    """Symbols given as names or ``ReadRequest``s, as requests."""
    return [s if isinstance(s, ReadRequest) else ReadRequest(symbol=s) for s in symbols]
