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
    """The result of a read or write: symbol, library, data, version and user metadata.

    Writes return one without data (``data`` is None); reads carry the data in the format
    asked for. Its ``repr`` never prints the data.

    Parameters
    ----------
    symbol : str
        The symbol.
    library : str
        The library's name.
    data : Any
        The data read (pandas, pyarrow or polars object, or the unpickled object); None for
        the result of a write.
    version : int
        The version id.
    metadata : Any, optional
        The version's user metadata.
    host : str, optional
        The store it came from (for display).
    timestamp : int, optional
        When the version was created, in nanoseconds since the epoch (UTC).

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> item = lib.write("S", pd.DataFrame({"px": [1.0]}), metadata={"source": "feed"})
    >>> item.symbol, item.library, item.version, item.data
    ('S', 'demo', 0, None)
    >>> lib.read("S").metadata
    {'source': 'feed'}
    """

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
    """A symbol and one of its version ids: the keys of :meth:`Library.list_versions`.

    Attributes
    ----------
    symbol : str
        The symbol.
    version : int
        The version id.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("S", pd.DataFrame({"px": [1.0]}))
    >>> list(lib.list_versions("S")) == [adb.SymbolVersion("S", 0)]
    True
    >>> adb.SymbolVersion("S", 0)
    S_v0
    """
    symbol: str
    version: int

    def __repr__(self) -> str:
        return f"{self.symbol}_v{self.version}"


class VersionInfo(NamedTuple):
    """What :meth:`Library.list_versions` says of a version: when, whether deleted, which snapshots.

    Attributes
    ----------
    date : datetime.datetime
        When the version was created (UTC).
    deleted : bool
        True for a deleted version still held by a snapshot.
    snapshots : list of str
        The snapshots holding the version.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("S", pd.DataFrame({"px": [1.0]}))
    >>> lib.snapshot("eod")
    >>> info = lib.list_versions("S")[adb.SymbolVersion("S", 0)]
    >>> info.deleted, info.snapshots
    (False, ['eod'])
    """
    date: datetime
    deleted: bool
    snapshots: list[str]

    def __repr__(self) -> str:
        return f"(date={self.date}, deleted={self.deleted}, snapshots={self.snapshots})"


class DataType(enum.IntEnum):
    """The stored value types, with ArcticDB's names and numbers
    (``TypeDescriptor.data_type()``)."""
    UINT8 = 9
    UINT16 = 10
    UINT32 = 11
    UINT64 = 12
    INT8 = 17
    INT16 = 18
    INT32 = 19
    INT64 = 20
    FLOAT32 = 27
    FLOAT64 = 28
    BOOL8 = 33
    NANOSECONDS_UTC64 = 44
    ASCII_FIXED64 = 60
    UTF_FIXED64 = 68
    UTF_DYNAMIC64 = 92
    ASCII_DYNAMIC64 = 100


class ValueType(enum.IntEnum):
    """The kind of a stored value type, with ArcticDB's names and numbers
    (``TypeDescriptor.value_type``)."""
    UINT = 1
    INT = 2
    FLOAT = 3
    BOOL = 4
    NANOSECONDS_UTC = 5
    ASCII_FIXED = 7
    UTF8_FIXED = 8
    BYTES = 9
    UTF_DYNAMIC = 11
    EMPTY = 13
    BOOL_OBJECT = 14


_VALUE_TYPES = {"UINT": ValueType.UINT, "INT": ValueType.INT, "FLOAT": ValueType.FLOAT, "BOOL": ValueType.BOOL,
                "NANOSECONDS_UTC": ValueType.NANOSECONDS_UTC, "ASCII_FIXED": ValueType.ASCII_FIXED,
                "UTF_FIXED": ValueType.UTF8_FIXED, "UTF_DYNAMIC": ValueType.UTF_DYNAMIC,
                "ASCII_DYNAMIC": ValueType.BYTES}


class TypeDescriptor:
    """The stored type of a column, as ArcticDB's ``TypeDescriptor``: ``data_type()`` gives the
    :class:`DataType`, ``dimension`` 0 (a scalar per row), ``value_type`` its kind; printed
    ``TD<type=INT64, dim=0>``. arcticlite adds ``name`` (``"INT64"``) and compares equal to that
    name, so ``desc.columns[0].dtype == "INT64"`` holds. A type ArcticDB cannot store (arcticlite's
    wider types, e.g. ``DATE32[DAY]`` or ``DECIMAL128(10, 2)``) has its Arrow name, upper case, as
    ``data_type()`` and ``value_type`` ``None``.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("S", pd.DataFrame({"px": [1.0]}))
    >>> td = lib.get_description("S").columns[0].dtype
    >>> td, td.data_type(), td.dimension, td.name
    (TD<type=FLOAT64, dim=0>, <DataType.FLOAT64: 28>, 0, 'FLOAT64')
    """
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def data_type(self) -> DataType | str:
        return DataType.__members__.get(self.name, self.name)

    @property
    def dimension(self) -> int:
        return 0

    @property
    def value_type(self) -> ValueType | None:
        return _VALUE_TYPES.get(self.name.rstrip("0123456789")) if self.name in DataType.__members__ else None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TypeDescriptor):
            return self.name == other.name
        if isinstance(other, str):
            return self.name == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"TD<type={self.name}, dim=0>"


class RowCountDescriptor(TypeDescriptor):
    """The type of the index of a symbol with no stored index column (a RangeIndex, or a
    timestamp index begun by a 0-row write): a row count. ArcticDB gives it as a protobuf
    type descriptor printed ``value_type: INT`` (``value_type`` INT, ``size_bits`` 0); this
    prints and compares alike, and ``data_type()`` is INT64."""
    __slots__ = ()

    def __init__(self) -> None:
        super().__init__("INT64")

    @property
    def size_bits(self) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RowCountDescriptor) or str(other) == str(self)

    def __hash__(self) -> int:
        return hash(str(self))

    def __repr__(self) -> str:
        return "value_type: INT\n"


class NameWithDType(NamedTuple):
    """A column of a :class:`SymbolDescription`: its name and stored type.

    Attributes
    ----------
    name : Any
        The column's name (the index's, for an index level).
    dtype : TypeDescriptor
        Its stored type (``dtype.data_type()`` is a :class:`DataType`).

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("S", pd.DataFrame({"px": [1.0]}))
    >>> lib.get_description("S").columns[0].name
    'px'
    """
    name: Any
    dtype: Any


class SymbolDescription(NamedTuple):
    """What :meth:`Library.get_description` says of a version, without reading its data.

    Attributes
    ----------
    columns : tuple of NameWithDType
        The data columns.
    index : tuple of NameWithDType
        The index level(s).
    index_type : str
        ``"index"`` (a timestamp index), ``"multi_index"``, ``"NA"`` (none / a row number).
    row_count : int or None
        The number of rows.
    last_update_time : datetime.datetime
        When the version was created.
    date_range : tuple
        The first and last index value (NaT for an empty or non-timestamp index).
    sorted : str
        ``"ASCENDING"``, ``"DESCENDING"``, ``"UNSORTED"`` or ``"UNKNOWN"``.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0]}, index=pd.date_range("2024-01-01", periods=2)))
    >>> d = lib.get_description("S")
    >>> d.row_count, d.index_type, d.sorted, d.date_range[1]
    (2, 'index', 'ASCENDING', Timestamp('2024-01-02 00:00:00'))
    """
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
    """A symbol and its data for ``write_batch`` / ``write_pickle_batch`` / ``append_batch``.

    Parameters
    ----------
    symbol : str
        The symbol to write.
    data : Any
        A table (or, for ``write_pickle_batch``, any picklable object).
    metadata : Any, optional
        The new version's metadata.
    index_column : str, optional
        For Arrow/polars data: the column to use as index.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> df = pd.DataFrame({"px": [1.0]})
    >>> items = lib.write_batch([adb.WritePayload("A", df, metadata={"n": 1}), adb.WritePayload("B", df)])
    >>> [(i.symbol, i.version, i.metadata) for i in items]
    [('A', 0, {'n': 1}), ('B', 0, None)]
    """

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
    """A symbol and its new metadata for ``write_metadata_batch``.

    Parameters
    ----------
    symbol : str
        The symbol.
    metadata : Any
        Its new metadata.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("A", pd.DataFrame({"px": [1.0]}))
    >>> [i.version for i in lib.write_metadata_batch([adb.WriteMetadataPayload("A", {"v": 2})])]
    [1]
    """
    def __init__(self, symbol: str, metadata: Any) -> None:
        self.symbol = symbol
        self.metadata = metadata

    def __repr__(self) -> str:
        return f"WriteMetadataPayload(symbol={self.symbol!r}, metadata={self.metadata!r})"


class UpdatePayload:
    """A symbol and the rows that replace a date range of it, for ``update_batch``.

    Parameters
    ----------
    symbol : str
        The symbol to update.
    data : pandas.DataFrame | pandas.Series | pyarrow.Table | polars.DataFrame
        The new rows (timestamp-indexed).
    metadata : Any, optional
        The new version's metadata.
    date_range : tuple, optional
        The range replaced (default: the new rows' first to last timestamp).
    index_column : str, optional
        For Arrow/polars data: the column to use as index.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("A", pd.DataFrame({"px": [1.0, 2.0, 3.0]}, index=pd.date_range("2024-01-01", periods=3)))
    >>> fix = pd.DataFrame({"px": [9.0]}, index=[pd.Timestamp("2024-01-02")])
    >>> rng = (pd.Timestamp("2024-01-02"), pd.Timestamp("2024-01-03"))
    >>> _ = lib.update_batch([adb.UpdatePayload("A", fix, date_range=rng)])
    >>> lib.read("A").data["px"].tolist()
    [1.0, 9.0]
    """
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
    """One symbol's read in ``read_batch`` / ``read_batch_and_join``, with its own arguments.

    Attributes
    ----------
    symbol : str
        The symbol to read.
    as_of : int | str | datetime, optional
        The version (id, snapshot name or time; default the latest).
    date_range : tuple, optional
        As for :meth:`Library.read`.
    row_range : tuple, optional
        As for :meth:`Library.read`.
    columns : list, optional
        The columns to read.
    query_builder : QueryBuilder, optional
        Clauses for this symbol only.
    output_format : str or OutputFormat, optional
        ``"pandas"``, ``"pyarrow"`` or ``"polars"``.
    arrow_string_format_default, arrow_string_format_per_column : optional
        As for :meth:`Library.read`.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("A", pd.DataFrame({"px": [1.0, 2.0, 3.0]}))
    >>> _ = lib.write("A", pd.DataFrame({"px": [4.0]}))
    >>> got = lib.read_batch([adb.ReadRequest("A", as_of=0, row_range=(0, 2)), "A"])
    >>> got[0].data["px"].tolist(), got[1].data["px"].tolist()
    ([1.0, 2.0], [4.0])
    """
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
    """One symbol (and version) for ``read_metadata_batch`` / ``get_description_batch``.

    Attributes
    ----------
    symbol : str
        The symbol.
    as_of : int | str | datetime, optional
        The version (default: the latest).

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("A", pd.DataFrame({"px": [1.0]}), metadata="first")
    >>> _ = lib.write("A", pd.DataFrame({"px": [1.0]}), metadata="second")
    >>> lib.read_metadata_batch([adb.ReadInfoRequest("A", as_of=0)])[0].metadata
    'first'
    """
    symbol: str
    as_of: Any = None


class DeleteRequest(NamedTuple):
    """Versions of one symbol to delete, for ``delete_batch``.

    Attributes
    ----------
    symbol : str
        The symbol.
    version_ids : list of int
        The versions to delete (``None``: every version).

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> for _ in range(3):
    ...     _ = lib.write("A", pd.DataFrame({"px": [1.0]}))
    >>> lib.delete_batch([adb.DeleteRequest("A", [0, 1])])
    [None]
    >>> [v.version for v in lib.list_versions("A")]
    [2]
    """
    symbol: str
    version_ids: list[int]


class VersionRequestType(enum.Enum):
    """How a batch item named its version (``DataError.version_request_type``).

    ``SNAPSHOT`` (a snapshot name), ``TIMESTAMP`` (a time), ``SPECIFIC`` (a version id) or
    ``LATEST`` (no ``as_of``).

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> err = lib.read_batch([adb.ReadRequest("missing", as_of=3)])[0]
    >>> err.version_request_type, err.version_request_data
    (<VersionRequestType.SPECIFIC: 2>, 3)
    """
    SNAPSHOT = 0
    TIMESTAMP = 1
    SPECIFIC = 2
    LATEST = 3


@dataclass(slots=True)
class DataError:
    """A per-item failure returned in place by the batch methods.

    The other items of the batch are unaffected; ``error_code`` and ``error_category`` are
    ArcticDB's, derived from the exception the item raised.

    Parameters
    ----------
    symbol : str
        The item's symbol.
    version_request_type : VersionRequestType, optional
        How the item named its version.
    version_request_data : Any, optional
        The version id, snapshot name or time it named.
    error_code : ErrorCode, optional
        ArcticDB's code of the failure.
    error_category : ErrorCategory, optional
        ArcticDB's category of the failure.
    exception_string : str
        The exception's message.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> err = lib.read_batch(["missing"])[0]
    >>> err.symbol, err.error_category, err.version_request_type
    ('missing', <ErrorCategory.MISSING_DATA: 3>, <VersionRequestType.LATEST: 3>)
    """

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
    (``CATEGORICAL`` / ``DICTIONARY_ENCODED``: a polars ``Categorical``).

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("S", pd.DataFrame({"venue": ["X", "Y", "X"]}))
    >>> t = lib.read("S", output_format="pyarrow",
    ...              arrow_string_format_default=adb.ArrowOutputStringFormat.SMALL_STRING).data
    >>> str(t.schema.field("venue").type)
    'string'
    """

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
    """Kinds of stored keys (names as in ArcticDB; arcticlite's layout is in docs/engine.md).

    The keys of the dictionaries ``Library.admin_tools()`` returns.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("S", pd.DataFrame({"px": [1.0]}))
    >>> sizes = lib.admin_tools().get_sizes()
    >>> sizes[adb.KeyType.VERSION].count
    1
    """

    VERSION_REF = "vref"
    VERSION = "ver"
    TABLE_INDEX = "tindex"
    TABLE_DATA = "tdata"
    SYMBOL_LIST = "sl"
    SNAPSHOT = "snap"
    APPEND_DATA = "stage"
    LIBRARY_CONFIG = "_config"


class StagedDataFinalizeMethod(enum.Enum):
    """How :meth:`Library.finalize_staged_data` commits staged data: ``WRITE`` replaces the
    symbol's data, ``APPEND`` adds after its last row.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("S", pd.DataFrame({"px": [1.0]}, index=[pd.Timestamp("2024-01-01")]))
    >>> _ = lib.stage("S", pd.DataFrame({"px": [2.0]}, index=[pd.Timestamp("2024-01-02")]))
    >>> _ = lib.finalize_staged_data("S", adb.StagedDataFinalizeMethod.APPEND)
    >>> lib.read("S").data["px"].tolist()
    [1.0, 2.0]
    """
    WRITE = 1
    APPEND = 2


@dataclass(frozen=True, slots=True)
class StageResult:
    """What ``stage`` wrote: pass it to ``finalize_staged_data(stage_results=...)``.

    A small picklable value: workers that stage data return it to the process that
    finalizes, which commits exactly the results it was given.

    Parameters
    ----------
    symbol : str
        The symbol staged for.
    staged_keys : tuple of str
        The staged entries' keys.
    segment_counts : tuple of int
        Segments per staged entry.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> a = lib.stage("S", pd.DataFrame({"px": [1.0]}, index=[pd.Timestamp("2024-01-01")]))
    >>> b = lib.stage("S", pd.DataFrame({"px": [2.0]}, index=[pd.Timestamp("2024-01-02")]))
    >>> _ = lib.finalize_staged_data("S", stage_results=[a])
    >>> lib.read("S").data["px"].tolist(), lib.get_staged_symbols()
    ([1.0], ['S'])
    """

    symbol: str
    staged_keys: tuple[str, ...] = field(default_factory=tuple)
    segment_counts: tuple[int, ...] = field(default_factory=tuple)

    @property
    def staged_segments(self) -> list[str]:
        """One name per staged segment (as ArcticDB; ``stage`` splits the data by the library's
        ``rows_per_segment`` / ``columns_per_segment``): ``{staged key}#{i}``.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo", adb.LibraryOptions(rows_per_segment=2))
        >>> result = lib.stage("S", pd.DataFrame({"px": [1.0, 2.0, 3.0]}))
        >>> [name.rsplit("#", 1)[1] for name in result.staged_segments]
        ['0', '1']
        """
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

    Parameters
    ----------
    output_format : str or OutputFormat
        What reads return (default ``"pandas"``).
    arrow_string_format_default : ArrowOutputStringFormat
        The Arrow type of string columns in Arrow / polars output.

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
        """Set what reads return.

        Parameters
        ----------
        output_format : str or OutputFormat
            ``"pandas"``, ``"pyarrow"`` or ``"polars"``.

        Examples
        --------
        >>> import arcticlite as adb
        >>> opts = adb.RuntimeOptions()
        >>> opts.set_output_format(adb.OutputFormat.POLARS)
        >>> opts.output_format
        <OutputFormat.POLARS: 'POLARS'>
        """
        self.output_format = output_format

    def set_arrow_string_format_default(self, arrow_string_format_default: Any) -> None:
        """Set the Arrow type of string columns in Arrow / polars output.

        Parameters
        ----------
        arrow_string_format_default : ArrowOutputStringFormat
            ``LARGE_STRING`` (default), ``SMALL_STRING`` or dictionary-encoded.

        Examples
        --------
        >>> import arcticlite as adb
        >>> opts = adb.RuntimeOptions()
        >>> opts.set_arrow_string_format_default(adb.ArrowOutputStringFormat.SMALL_STRING)
        >>> opts.arrow_string_format_default
        <ArrowOutputStringFormat.SMALL_STRING: 'SMALL_STRING'>
        """
        self.arrow_string_format_default = arrow_string_format_default

    def __repr__(self) -> str:
        return (f"RuntimeOptions(output_format={self.output_format!r}, "
                f"arrow_string_format_default={self.arrow_string_format_default!r})")
