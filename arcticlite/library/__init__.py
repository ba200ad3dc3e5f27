"""The ArcticDB-compatible API: ``Arctic``, ``Library`` and their value types."""

from arcticlite.library._arctic import Arctic
from arcticlite.library._lazy import (
    LazyDataFrame,
    LazyDataFrameAfterJoin,
    LazyDataFrameCollection,
    VersionedItemWithJoin,
    concat,
)
from arcticlite.library._library import Library
from arcticlite.library._merge import MergeAction, MergeStrategy
from arcticlite.library._options import (
    EncodingVersion,
    EnterpriseLibraryOptions,
    LibraryOptions,
    ModifiableEnterpriseLibraryOption,
    ModifiableLibraryOption,
)
from arcticlite.library._sizes import AdminTools, Size
from arcticlite.library._types import (
    ArrowOutputStringFormat,
    DataError,
    DeleteRequest,
    ErrorCategory,
    ErrorCode,
    KeyType,
    NameWithDType,
    ReadInfoRequest,
    ReadRequest,
    RuntimeOptions,
    StagedDataFinalizeMethod,
    StageResult,
    SymbolDescription,
    SymbolVersion,
    UpdatePayload,
    VersionedItem,
    VersionInfo,
    VersionRequestType,
    WriteMetadataPayload,
    WritePayload,
)
from arcticlite.normalize import OutputFormat

__all__ = [
    "AdminTools",
    "Arctic",
    "ArrowOutputStringFormat",
    "DataError",
    "DeleteRequest",
    "EncodingVersion",
    "EnterpriseLibraryOptions",
    "ErrorCategory",
    "ErrorCode",
    "KeyType",
    "LazyDataFrame",
    "LazyDataFrameAfterJoin",
    "LazyDataFrameCollection",
    "Library",
    "LibraryOptions",
    "MergeAction",
    "MergeStrategy",
    "ModifiableEnterpriseLibraryOption",
    "ModifiableLibraryOption",
    "NameWithDType",
    "OutputFormat",
    "ReadInfoRequest",
    "ReadRequest",
    "RuntimeOptions",
    "Size",
    "StageResult",
    "StagedDataFinalizeMethod",
    "SymbolDescription",
    "SymbolVersion",
    "UpdatePayload",
    "VersionInfo",
    "VersionRequestType",
    "VersionedItem",
    "VersionedItemWithJoin",
    "WriteMetadataPayload",
    "WritePayload",
    "concat",
]
