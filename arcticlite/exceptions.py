"""Every error arcticlite raises.

The names and the shape of the tree are ArcticDB's wherever ArcticDB has the same error, so
that ``except arcticdb.exceptions.X`` keeps working after switching imports. Errors ArcticDB
does not have (commit conflicts, corrupt bytes, storage faults) live beneath the same root.
All derive from ``RuntimeError``, as in ArcticDB. Backend errors (``lmdb.Error``, botocore's
``ClientError``) never escape: backends translate them with ``raise ... from exc``.

::

    ArcticException (RuntimeError)
    ├── UserInputException                      bad argument or bad data: fix the call
    │   ├── DataTooNestedException
    │   ├── UnsupportedKeyInDictionary
    │   ├── InvalidSymbolName                    symbol / snapshot / library name not allowed
    │   └── UnpicklingRefusedError              stored bytes need pickle; allow_pickle=False
    ├── SortingException
    │   └── UnsortedDataException               index not sorted where it must be
    │       └── AppendOrderException            append before the last row (also Internal)
    ├── SchemaException                         column types / names do not fit the stored ones
    ├── NormalizationException                  index kind or object kind does not fit
    ├── InternalException                       operation not possible on this symbol's state
    ├── MissingDataException
    ├── CompatibilityException
    │   └── UnsupportedVersionError             format/record written by a newer arcticlite
    │                                           (also a CorruptDataError: see below)
    ├── CodecException
    ├── StorageException                        the store failed or refused
    │   ├── KeyNotFoundException (KeyError)
    │   ├── DuplicateKeyException
    │   ├── PermissionException
    │   ├── LmdbMapFullError
    │   ├── StorageUnavailableError             transport failed after bounded retries
    │   ├── AmbiguousWriteError                 a conditional write may or may not have landed
    │   ├── BucketNotFoundError                 the URI's S3 bucket does not exist
    │   └── ConditionalWritesUnsupportedError   the endpoint ignores If-None-Match
    ├── CorruptDataError                        stored bytes fail validation: restore or delete
    │   ├── InvalidFileError                    short file, bad magic
    │   ├── FormatEOFError                      an offset points past the end
    │   ├── ChecksumError                       checksum mismatch
    │   └── UnsupportedVersionError
    ├── CommitError                             the commit protocol could not finish
    │   ├── CommitConflictError                 lost the race too many times: retry later
    │   └── CommitStateUnknownError             transport failed at the commit point
    ├── NoDataFoundException
    │   └── NoSuchVersionException
    ├── StreamDescriptorMismatch                static-schema mismatch on append / update
    ├── UnknownLibraryOption
    ├── UnsupportedLibraryOptionValue
    ├── ArcticDbNotYetImplemented               (alias ArcticNativeNotYetImplemented)
    ├── LibraryNotFound
    ├── MismatchingLibraryOptions
    ├── LmdbOptionsError                        bad lmdb:// URI
    ├── StorageUriError (ValueError)            bad or unknown URI
    ├── MissingKeysInStageResultsError
    ├── MissingDependencyError (ImportError)    an optional extra is not installed
    └── ArcticInvalidApiUsageException
        ├── ArcticDuplicateSymbolsInBatchException
        └── ArcticUnsupportedDataTypeException
"""

from __future__ import annotations

from typing import Any

from arcticlite._errors import ErrorCategory, ErrorCode

__all__ = [
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


class ArcticException(RuntimeError):
    """Root of every arcticlite error."""


ArcticNativeException = ArcticException


class UserInputException(ArcticException):
    """An argument or the data given is not acceptable; fix the call."""


class DataTooNestedException(UserInputException):
    pass


class UnsupportedKeyInDictionary(UserInputException):
    pass


class InvalidSymbolName(UserInputException):
    """A symbol, snapshot or library name is not allowed."""


class UnpicklingRefusedError(UserInputException):
    """Stored data or metadata can only be read by running ``pickle`` (it names a class or a
    function), and the connection or library was opened with ``allow_pickle=False``."""


class SortingException(ArcticException):
    pass


class UnsortedDataException(SortingException):
    """The index is not sorted where the operation needs it sorted."""


class SchemaException(ArcticException):
    """Column names or types do not fit the stored ones."""


class NormalizationException(ArcticException):
    """The index kind or object kind does not fit the stored symbol."""


class InternalException(ArcticException):
    """The operation is not possible on the symbol in its current state."""


class AppendOrderException(UnsortedDataException, InternalException):
    """New rows would start before the last stored row (ArcticDB raises InternalException here;
    this class is both, so either ``except`` clause works)."""


class MissingDataException(ArcticException):
    pass


class CompatibilityException(ArcticException):
    pass


class CodecException(ArcticException):
    pass


class StorageException(ArcticException):
    """The key-value store failed or refused an operation."""


class BucketNotFoundError(StorageException):
    """The S3 bucket the URI names does not exist (S3 said NoSuchBucket)."""


class KeyNotFoundException(StorageException, KeyError):
    """A key that must exist is absent."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return RuntimeError.__str__(self)


class DuplicateKeyException(StorageException):
    pass


class PermissionException(StorageException):
    pass


class LmdbMapFullError(StorageException):
    pass


class StorageUnavailableError(StorageException):
    """The store did not answer after bounded retries (network, throttling, 5xx)."""


class AmbiguousWriteError(StorageException):
    """A conditional write may or may not have landed.

    Raised when a retried conditional request is refused (412) after an earlier attempt whose
    response was lost. The caller must read the key back and compare it with what it wrote.
    """

    def __init__(self, message: str, *, key: str = "") -> None:
        super().__init__(message)
        self.key = key


class ConditionalWritesUnsupportedError(StorageException):
    """The endpoint ignores ``If-None-Match``/``If-Match``: multi-writer commits are unsafe."""


class CorruptDataError(ArcticException):
    """Stored bytes failed validation (checksum, magic, bounds). Restore or delete the key."""


class InvalidFileError(CorruptDataError):
    """Not a valid file: too short, or bad magic."""


class FormatEOFError(CorruptDataError):
    """An offset or length in the metadata points past the end of the data."""


class ChecksumError(CorruptDataError):
    """A checksum did not match the bytes it covers."""


class UnsupportedVersionError(CorruptDataError, CompatibilityException):
    """Written by a newer arcticlite (or not arcticlite at all); upgrade to read it."""


class CommitError(ArcticException):
    """The commit protocol could not complete."""


class CommitConflictError(CommitError):
    """Other writers won the race for the next version too many times; retry later."""


class CommitStateUnknownError(CommitError):
    """The store failed at the commit point: the version may or may not exist. Nothing was deleted."""


class NoDataFoundException(ArcticException):
    """The symbol, version or snapshot asked for does not exist."""


class NoSuchVersionException(NoDataFoundException):
    """No live version matches the request."""


class StreamDescriptorMismatch(ArcticException):
    """Under static schema, the columns of new data differ from the stored ones."""


class UnknownLibraryOption(ArcticException):
    pass


class UnsupportedLibraryOptionValue(ArcticException):
    pass


class ArcticDbNotYetImplemented(ArcticException):
    """The data or operation is not supported."""


ArcticNativeNotYetImplemented = ArcticDbNotYetImplemented


class LibraryNotFound(ArcticException):
    pass


class MismatchingLibraryOptions(ArcticException):
    pass


class LmdbOptionsError(ArcticException):
    pass


class StorageUriError(ArcticException, ValueError):
    """A URI is malformed, has an unknown scheme, or an unknown parameter."""


class MissingKeysInStageResultsError(ArcticException):
    """A finalize was given stage results whose staged data no longer exists (already finalized
    or deleted); nothing was committed or deleted. ``stage_results_with_missing_keys`` lists one
    entry per missing staged segment (``.stage_result_index``: position in the list given,
    ``.missing_key``)."""

    def __init__(self, msg: str, stage_results_with_missing_keys: Any = ()) -> None:
        super().__init__(msg)
        self.msg = msg
        self.stage_results_with_missing_keys = list(stage_results_with_missing_keys)


class MissingDependencyError(ArcticException, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class ArcticInvalidApiUsageException(ArcticException):
    pass


class ArcticDuplicateSymbolsInBatchException(ArcticInvalidApiUsageException):
    pass


class ArcticUnsupportedDataTypeException(ArcticInvalidApiUsageException):
    pass
