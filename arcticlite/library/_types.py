"""Value types of the Library API, named and shaped as in ArcticDB."""

from __future__ import annotations

import enum
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from arcticlite._errors import ErrorCategory, ErrorCode


@dataclass(slots=True)
class VersionedItem:
    """The result of a read or write: symbol, library, data, version and user metadata."""

    symbol: str
    library: str
    data: Any
    version: int
    metadata: Any = None
    host: str | None = None
    timestamp: int | None = None

    def __iter__(self) -> Iterator[Any]:
        warnings.warn("Unpacking a VersionedItem is deprecated", DeprecationWarning, stacklevel=2)
        yield from (self.symbol, self.library, self.data, self.version, self.metadata, self.host)

    def __repr__(self) -> str:
        return (
            f"VersionedItem(symbol={self.symbol!r}, library={self.library!r}, data=n/a, "
            f"version={self.version}, metadata={self.metadata!r}, host={self.host!r}, "
            f"timestamp={self.timestamp})"
        )


class SymbolVersion(NamedTuple):
    symbol: str
    version: int

    def __repr__(self) -> str:
        return f"{self.symbol}_v{self.version}"


class VersionInfo(NamedTuple):
    date: datetime
    deleted: bool
    snapshots: list[str]

    def __repr__(self) -> str:
        return f"(date={self.date}, deleted={self.deleted}, snapshots={self.snapshots})"


class NameWithDType(NamedTuple):
    name: Any
    dtype: Any


class SymbolDescription(NamedTuple):
    columns: tuple[NameWithDType, ...]
    index: tuple[NameWithDType, ...]  # type: ignore[assignment]  # ArcticDB's field name
    index_type: str
    row_count: int | None
    last_update_time: datetime
    date_range: tuple[Any, Any]
    sorted: str

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SymbolDescription):
            return NotImplemented
        import pandas as pd

        def same(a: Any, b: Any) -> bool:
            return (pd.isna(a) and pd.isna(b)) or a == b

        return (
            self.columns == other.columns
            and self.index == other.index
            and self.index_type == other.index_type
            and self.row_count == other.row_count
            and self.last_update_time == other.last_update_time
            and all(same(a, b) for a, b in zip(self.date_range, other.date_range, strict=True))
            and self.sorted == other.sorted
        )

    def __hash__(self) -> int:
        return hash((self.columns, self.index, self.index_type, self.row_count, self.sorted))


class WritePayload:
    """A symbol and its data for ``write_batch`` / ``append_batch``."""

    def __init__(self, symbol: str, data: Any, metadata: Any = None, index_column: Any = False) -> None:
        self.symbol = symbol
        self.data = data
        self.metadata = metadata
        self.index_column = index_column

    def __iter__(self) -> Iterator[Any]:
        yield from (self.symbol, self.data, self.metadata)

    def __repr__(self) -> str:
        return f"WritePayload(symbol={self.symbol!r}, data_id={id(self.data)}, metadata={self.metadata!r})"


class WriteMetadataPayload:
    def __init__(self, symbol: str, metadata: Any) -> None:
        self.symbol = symbol
        self.metadata = metadata

    def __repr__(self) -> str:
        return f"WriteMetadataPayload(symbol={self.symbol!r}, metadata={self.metadata!r})"


class UpdatePayload:
    def __init__(
        self,
        symbol: str,
        data: Any,
        metadata: Any = None,
        date_range: tuple[Any, Any] | None = None,
        index_column: Any = False,
    ) -> None:
        self.symbol = symbol
        self.data = data
        self.metadata = metadata
        self.date_range = date_range
        self.index_column = index_column

    def __repr__(self) -> str:
        return f"UpdatePayload(symbol={self.symbol!r}, data_id={id(self.data)}, date_range={self.date_range})"


class ReadRequest(NamedTuple):
    symbol: str
    as_of: Any = None
    date_range: Any = None
    row_range: Any = None
    columns: Any = None
    query_builder: Any = None
    output_format: Any = None
    arrow_string_format_default: Any = None
    arrow_string_format_per_column: Any = None


class ReadInfoRequest(NamedTuple):
    symbol: str
    as_of: Any = None


class DeleteRequest(NamedTuple):
    symbol: str
    version_ids: list[int]


class VersionRequestType(enum.Enum):
    SNAPSHOT = 0
    TIMESTAMP = 1
    SPECIFIC = 2
    LATEST = 3


@dataclass(slots=True)
class DataError:
    """A per-item failure returned in place by the batch methods."""

    symbol: str
    version_request_type: VersionRequestType | None = None
    version_request_data: Any = None
    error_code: ErrorCode | None = None
    error_category: ErrorCategory | None = None
    exception_string: str = ""

    def __str__(self) -> str:
        return (
            f"DataError(symbol={self.symbol!r}, version_request_type={self.version_request_type}, "
            f"version_request_data={self.version_request_data}, error_code={self.error_code}, "
            f"error_category={self.error_category}, exception_string={self.exception_string})"
        )


class ArrowOutputStringFormat(enum.Enum):
    """The Arrow type of string columns in Arrow and polars output (ArcticDB's names):
    ``LARGE_STRING`` (``UNSPECIFIED``, the default), ``SMALL_STRING``, or dictionary-encoded
    (``CATEGORICAL`` / ``DICTIONARY_ENCODED``: a polars ``Categorical``)."""

    UNSPECIFIED = "UNSPECIFIED"
    CATEGORICAL = "CATEGORICAL"
    DICTIONARY_ENCODED = "DICTIONARY_ENCODED"
    LARGE_STRING = "LARGE_STRING"
    SMALL_STRING = "SMALL_STRING"


def string_format_name(value: Any) -> str | None:
    """The ``ArrowOutputStringFormat`` name ``value`` designates (an enum member, its name, or
    the Arrow type ``pa.large_string()`` / ``pa.string()`` / a dictionary of strings); None for
    None. Anything else raises ``ValueError`` naming it, as ArcticDB does."""
    if value is None:
        return None
    if isinstance(value, ArrowOutputStringFormat):
        return value.name
    if isinstance(value, str) and value.upper() in ArrowOutputStringFormat.__members__:
        return value.upper()
    try:
        import pyarrow as pa

        if isinstance(value, pa.DataType):
            if pa.types.is_large_string(value):
                return "LARGE_STRING"
            if pa.types.is_string(value):
                return "SMALL_STRING"
            if pa.types.is_dictionary(value):
                return "DICTIONARY_ENCODED"
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        pass
    raise ValueError(f"Unknown ArrowOutputStringFormat: {value}")


class KeyType(enum.Enum):
    """Kinds of stored keys (names as in ArcticDB; arcticlite's layout is in docs/engine.md)."""

    VERSION_REF = "vref"
    VERSION = "ver"
    TABLE_INDEX = "tindex"
    TABLE_DATA = "tdata"
    SYMBOL_LIST = "sl"
    SNAPSHOT = "snap"
    APPEND_DATA = "stage"
    LIBRARY_CONFIG = "_config"


class StagedDataFinalizeMethod(enum.Enum):
    WRITE = 1
    APPEND = 2


@dataclass(frozen=True, slots=True)
class StageResult:
    """What ``stage`` wrote: pass it to ``finalize_staged_data(stage_results=...)``."""

    symbol: str
    staged_keys: tuple[str, ...] = field(default_factory=tuple)
    segment_counts: tuple[int, ...] = field(default_factory=tuple)

    @property
    def staged_segments(self) -> list[str]:
        """One name per staged segment (as ArcticDB; ``stage`` splits the data by the library's
        ``rows_per_segment`` / ``columns_per_segment``): ``{staged key}#{i}``."""
        counts = self.segment_counts or (1,) * len(self.staged_keys)
        return [f"{key}#{i}" for key, n in zip(self.staged_keys, counts, strict=True) for i in range(max(n, 1))]


@dataclass(frozen=True, slots=True)
class KeyNotFoundInStageResultInfo:
    """A staged segment named by a stage result that no longer exists (an entry of
    ``MissingKeysInStageResultsError.stage_results_with_missing_keys``)."""

    stage_result_index: int
    missing_key: str


class RuntimeOptions:
    """Options of reads that can change at run time (ArcticDB's ``RuntimeOptions``): the output
    format (``"pandas"``, ``"pyarrow"``, ``"polars"``) and the default Arrow string format.

    Examples
    --------
    >>> import arcticlite as adb
    >>> opts = adb.RuntimeOptions(output_format="pyarrow")
    >>> opts.set_output_format("pandas")
    >>> opts.output_format
    'pandas'
    """

    def __init__(self, *, output_format: Any = "pandas",
                 arrow_string_format_default: Any = ArrowOutputStringFormat.UNSPECIFIED) -> None:
        self.output_format = output_format
        self.arrow_string_format_default = arrow_string_format_default

    def set_output_format(self, output_format: Any) -> None:
        self.output_format = output_format

    def set_arrow_string_format_default(self, arrow_string_format_default: Any) -> None:
        self.arrow_string_format_default = arrow_string_format_default

    def __repr__(self) -> str:
        return (f"RuntimeOptions(output_format={self.output_format!r}, "
                f"arrow_string_format_default={self.arrow_string_format_default!r})")
