"""arcticlite: versioned dataframes in LMDB or S3, with ArcticDB's API.

Switch from ArcticDB by changing one import::

    import arcticlite as adb
    ac = adb.Arctic("lmdb://./data")
    lib = ac.get_library("prices", create_if_missing=True)
    lib.write("AAPL", df)
"""

import os as _os

from arcticlite import config, exceptions, options
from arcticlite.config import set_config_from_env_vars
from arcticlite.library import (
    Arctic,
    ArrowOutputStringFormat,
    DataError,
    DeleteRequest,
    EncodingVersion,
    EnterpriseLibraryOptions,
    ErrorCategory,
    ErrorCode,
    KeyType,
    LazyDataFrame,
    LazyDataFrameAfterJoin,
    LazyDataFrameCollection,
    Library,
    LibraryOptions,
    ModifiableEnterpriseLibraryOption,
    ModifiableLibraryOption,
    NameWithDType,
    OutputFormat,
    ReadInfoRequest,
    ReadRequest,
    RuntimeOptions,
    Size,
    StagedDataFinalizeMethod,
    StageResult,
    SymbolDescription,
    SymbolVersion,
    UpdatePayload,
    VersionedItem,
    VersionedItemWithJoin,
    VersionInfo,
    VersionRequestType,
    WriteMetadataPayload,
    WritePayload,
    concat,
)
from arcticlite.query import QueryBuilder, col, where

__version__ = "0.1.0"

__all__ = [
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
    "ModifiableEnterpriseLibraryOption",
    "ModifiableLibraryOption",
    "NameWithDType",
    "OutputFormat",
    "QueryBuilder",
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
    "__version__",
    "col",
    "concat",
    "config",
    "exceptions",
    "options",
    "set_config_from_env_vars",
    "where",
]

set_config_from_env_vars(_os.environ)  # ARCTICDB_* settings, read at import as ArcticDB reads them
