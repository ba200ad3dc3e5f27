"""Pins the public API: what ``import arcticlite as adb`` offers a user switching from ArcticDB.

A change to these lists is a change to the public API: make it on purpose, here.
"""

from __future__ import annotations

import inspect

import pytest

import arcticlite
from arcticlite import exceptions as exc

TOP_LEVEL = [
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

EXCEPTIONS = [
    "AmbiguousWriteError",
    "AppendOrderException",
    "ArcticDbNotYetImplemented",
    "ArcticDuplicateSymbolsInBatchException",
    "ArcticException",
    "ArcticInvalidApiUsageException",
    "ArcticNativeException",
    "ArcticNativeNotYetImplemented",
    "ArcticUnsupportedDataTypeException",
    "BucketNotFoundError",
    "ChecksumError",
    "CodecException",
    "CommitConflictError",
    "CommitError",
    "CommitStateUnknownError",
    "CompatibilityException",
    "ConditionalWritesUnsupportedError",
    "CorruptDataError",
    "DataTooNestedException",
    "DuplicateKeyException",
    "ErrorCategory",
    "ErrorCode",
    "FormatEOFError",
    "InternalException",
    "InvalidFileError",
    "InvalidSymbolName",
    "KeyNotFoundException",
    "LibraryNotFound",
    "LmdbMapFullError",
    "LmdbOptionsError",
    "MismatchingLibraryOptions",
    "MissingDataException",
    "MissingDependencyError",
    "MissingKeysInStageResultsError",
    "NoDataFoundException",
    "NoSuchVersionException",
    "NormalizationException",
    "PermissionException",
    "SchemaException",
    "SortingException",
    "StorageException",
    "StorageUnavailableError",
    "StorageUriError",
    "StreamDescriptorMismatch",
    "UnknownLibraryOption",
    "UnpicklingRefusedError",
    "UnsortedDataException",
    "UnsupportedKeyInDictionary",
    "UnsupportedLibraryOptionValue",
    "UnsupportedVersionError",
    "UserInputException",
]

#: ArcticDB 6.28's exception tree (reference §2), as (name, parent) pairs. Its private
#: ``_ArcticLegacyCompatibilityException`` layer is left out: user code never names it.
ARCTICDB_TREE = [
    ("UserInputException", "ArcticException"),
    ("DataTooNestedException", "UserInputException"),
    ("UnsupportedKeyInDictionary", "UserInputException"),
    ("SortingException", "ArcticException"),
    ("UnsortedDataException", "SortingException"),
    ("SchemaException", "ArcticException"),
    ("NormalizationException", "ArcticException"),
    ("InternalException", "ArcticException"),
    ("MissingDataException", "ArcticException"),
    ("CompatibilityException", "ArcticException"),
    ("CodecException", "ArcticException"),
    ("StorageException", "ArcticException"),
    ("KeyNotFoundException", "StorageException"),
    ("DuplicateKeyException", "StorageException"),
    ("PermissionException", "StorageException"),
    ("LmdbMapFullError", "StorageException"),
    ("NoDataFoundException", "ArcticException"),
    ("NoSuchVersionException", "NoDataFoundException"),
    ("StreamDescriptorMismatch", "ArcticException"),
    ("UnknownLibraryOption", "ArcticException"),
    ("UnsupportedLibraryOptionValue", "ArcticException"),
    ("ArcticDbNotYetImplemented", "ArcticException"),
    ("LibraryNotFound", "ArcticException"),
    ("MismatchingLibraryOptions", "ArcticException"),
    ("LmdbOptionsError", "ArcticException"),
    ("MissingKeysInStageResultsError", "ArcticException"),
    ("ArcticInvalidApiUsageException", "ArcticException"),
    ("ArcticDuplicateSymbolsInBatchException", "ArcticInvalidApiUsageException"),
    ("ArcticUnsupportedDataTypeException", "ArcticInvalidApiUsageException"),
]


def test_top_level_all_is_pinned_and_sorted() -> None:
    assert arcticlite.__all__ == TOP_LEVEL
    assert sorted(arcticlite.__all__) == arcticlite.__all__
    for name in arcticlite.__all__:
        assert hasattr(arcticlite, name), name


def test_exceptions_all_is_pinned_and_sorted() -> None:
    assert exc.__all__ == EXCEPTIONS
    assert sorted(exc.__all__) == exc.__all__


ERROR_ENUMS = {"ErrorCategory", "ErrorCode"}  # ArcticDB's exceptions module exports them too


def test_every_exception_is_an_arctic_exception_and_a_runtime_error() -> None:
    assert issubclass(exc.ArcticException, RuntimeError)
    for name in sorted(set(exc.__all__) - ERROR_ENUMS):
        cls = getattr(exc, name)
        assert inspect.isclass(cls) and issubclass(cls, exc.ArcticException), name
        assert issubclass(cls, RuntimeError), name


@pytest.mark.parametrize(("name", "parent"), ARCTICDB_TREE, ids=[n for n, _ in ARCTICDB_TREE])
def test_arcticdb_exception_names_keep_their_parents(name: str, parent: str) -> None:
    cls = getattr(exc, name)
    assert issubclass(cls, getattr(exc, parent))


def test_arcticdb_aliases() -> None:
    assert exc.ArcticNativeException is exc.ArcticException
    assert exc.ArcticNativeNotYetImplemented is exc.ArcticDbNotYetImplemented


def test_stream_descriptor_mismatch_is_not_a_schema_exception() -> None:
    # ArcticDB: StreamDescriptorMismatch derives from ArcticException directly (reference §2)
    assert not issubclass(exc.StreamDescriptorMismatch, exc.SchemaException)


def test_arcticlite_errors_sit_under_the_same_root() -> None:
    assert issubclass(exc.CommitConflictError, exc.CommitError)
    assert issubclass(exc.CommitStateUnknownError, exc.CommitError)
    for name in ("InvalidFileError", "FormatEOFError", "ChecksumError", "UnsupportedVersionError"):
        assert issubclass(getattr(exc, name), exc.CorruptDataError)
    assert issubclass(exc.AppendOrderException, exc.UnsortedDataException)
    assert issubclass(exc.AppendOrderException, exc.InternalException)  # what ArcticDB raises there
    assert issubclass(exc.StorageUriError, ValueError)  # ArcticDB raises ValueError on a bad URI
    assert issubclass(exc.KeyNotFoundException, KeyError)
    assert issubclass(exc.MissingDependencyError, ImportError)


def test_arcticdb_top_level_names_user_code_imports() -> None:
    for name in ("Arctic", "LibraryOptions", "QueryBuilder", "where", "col", "VersionedItem", "DataError",
                 "VersionRequestType", "ErrorCode", "ErrorCategory", "WritePayload", "UpdatePayload",
                 "ReadInfoRequest", "ReadRequest", "DeleteRequest", "StagedDataFinalizeMethod",
                 "WriteMetadataPayload", "EncodingVersion", "OutputFormat"):
        assert hasattr(arcticlite, name), name
    from arcticlite import library

    assert library.Library is arcticlite.Library


def test_lazy_names() -> None:
    for name in ("LazyDataFrame", "LazyDataFrameCollection", "LazyDataFrameAfterJoin", "concat",
                 "VersionedItemWithJoin"):
        assert hasattr(arcticlite, name), name


def test_arcticdb_top_level_names_are_all_offered() -> None:
    for name in ("LazyDataFrame", "LazyDataFrameCollection", "LazyDataFrameAfterJoin", "concat", "Size"):
        assert hasattr(arcticlite, name), name
