"""Batch calls: per-item failures come back in place as ``DataError``."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, TypeVar

from arcticlite.exceptions import (
    ArcticDbNotYetImplemented,
    ArcticDuplicateSymbolsInBatchException,
    ArcticException,
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
from arcticlite.library._types import (
    DataError,
    ErrorCategory,
    ErrorCode,
    ReadRequest,
    VersionRequestType,
)
from arcticlite.normalize import as_of_to_ns
from arcticlite.progress import Progress
from arcticlite.version import encode_metadata

T = TypeVar("T")

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


NO_VERSION_REQUEST = object()
"""``as_of`` of a batch item that names no version to read (a deletion): its ``DataError`` has
no ``version_request_type``, as ArcticDB's."""


def _version_request(as_of: Any) -> tuple[VersionRequestType | None, Any]:
    if as_of is NO_VERSION_REQUEST:
        return None, None
    if as_of is None:
        return VersionRequestType.LATEST, None
    if isinstance(as_of, str):
        return VersionRequestType.SNAPSHOT, as_of
    if isinstance(as_of, int):
        return VersionRequestType.SPECIFIC, as_of
    try:  # a time: its nanoseconds since the epoch (UTC), as ArcticDB reports it
        return VersionRequestType.TIMESTAMP, as_of_to_ns(as_of)
    except (ArcticException, TypeError, ValueError, OverflowError):
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


def check_unique(symbols: list[str], what: str) -> None:
    seen: set[str] = set()
    dups = sorted({s for s in symbols if s in seen or seen.add(s)})  # type: ignore[func-returns-value]
    if dups:
        raise ArcticDuplicateSymbolsInBatchException(
            f"{what}: symbols {dups} appear more than once in the batch; give each symbol once"
        )


def run_batch(pool: Executor | None, items: list[Any], fn: Callable[[Any], T], sym_of: Callable[[Any], str],
              as_of_of: Callable[[Any], Any] = lambda _i: None, what: str = "batch") -> list[T | DataError]:
    """``fn`` of every item, in the batch pool (None: in turn, in this thread); an
    ``ArcticException`` comes back in place as a ``DataError`` (other exceptions propagate). A
    progress bar named ``what`` counts the items done (on terminals only:
    :mod:`arcticlite.progress`)."""
    if len(items) <= 1:
        return [_one(fn, sym_of, as_of_of, i) for i in items]
    with Progress(len(items), what, unit="symbol") as bar:
        def one(item: Any) -> T | DataError:
            try:
                return _one(fn, sym_of, as_of_of, item)
            finally:
                bar.update(1)

        return list(pool.map(one, items)) if pool is not None else [one(i) for i in items]


def _one(fn: Callable[[Any], T], sym_of: Callable[[Any], str], as_of_of: Callable[[Any], Any],
         item: Any) -> T | DataError:
    try:
        return fn(item)
    except ArcticException as exc:
        return to_data_error(sym_of(item), exc, as_of_of(item))


def check_payload_data(payloads: list[Any]) -> None:
    """Refuse payloads whose data is not a table (``write_pickle_batch`` takes those)."""
    for p in payloads:
        if not is_normalizable(p.data):
            raise ArcticUnsupportedDataTypeException(
                f"symbol {p.symbol!r}: data of type {type(p.data).__name__} cannot be written as a "
                "table; use write_pickle_batch"
            )


def check_metadata_size(payloads: list[Any]) -> None:
    """Refuse the whole batch, before anything is written, when one payload's metadata is above
    :data:`~arcticlite.version.MAX_METADATA_BYTES` once encoded (ArcticDB raises too, and writes
    none of the batch). Metadata that does not encode at all is left to the item (a ``DataError``)."""
    for p in payloads:
        try:
            encode_metadata(getattr(p, "metadata", None), f"the metadata of symbol {p.symbol!r}")
        except ArcticDbNotYetImplemented:
            raise
        except Exception:  # noqa: BLE001 - it does not pickle: the item's own DataError says so
            continue


def read_requests(symbols: list[str | ReadRequest]) -> list[ReadRequest]:
    """Symbols given as names or ``ReadRequest``s, as requests."""
    return [s if isinstance(s, ReadRequest) else ReadRequest(symbol=s) for s in symbols]
