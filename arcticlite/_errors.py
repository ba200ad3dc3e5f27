"""Error codes and categories (ArcticDB's names), shared by exceptions and batch results."""

from __future__ import annotations

import enum


class ErrorCategory(enum.Enum):
    """ArcticDB's category of a failure (``DataError.error_category``): which kind of
    problem an item of a batch met (missing data, schema, storage, user input, ...).

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> lib.read_batch(["missing"])[0].error_category
    <ErrorCategory.MISSING_DATA: 3>
    """
    GENERIC = 0
    INTERNAL = 1
    NORMALIZATION = 2
    MISSING_DATA = 3
    SCHEMA = 4
    STORAGE = 5
    SORTING = 6
    USER_INPUT = 7
    COMPATIBILITY = 8
    CODEC = 9


class ErrorCode(enum.Enum):
    """ArcticDB's numbered error codes (``DataError.error_code``; the ``E_...`` prefix of many
    exception messages).

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> lib.read_batch(["missing"])[0].error_code
    <ErrorCode.E_NO_SUCH_VERSION: 3000>
    """
    E_INVALID_RANGE = 1000
    E_INVALID_ARGUMENT = 1001
    E_ASSERTION_FAILURE = 1002
    E_RUNTIME_ERROR = 1003
    E_STORED_CONFIG_ERROR = 1004
    E_INCOMPATIBLE_OBJECTS = 2000
    E_UNIMPLEMENTED_INPUT_TYPE = 2001
    E_UPDATE_NOT_SUPPORTED = 2002
    E_INCOMPATIBLE_INDEX = 2003
    E_WRONG_SHAPE = 2004
    E_NO_SUCH_VERSION = 3000
    E_NO_SYMBOL_DATA = 3001
    E_DESCRIPTOR_MISMATCH = 4000
    E_COLUMN_DOESNT_EXIST = 4001
    E_UNSUPPORTED_COLUMN_TYPE = 4002
    E_UNSUPPORTED_INDEX_TYPE = 4003
    E_KEY_NOT_FOUND = 5000
    E_DUPLICATE_KEY = 5001
    E_SYMBOL_NOT_FOUND = 5002
    E_PERMISSION = 5003
    E_RESOURCE_NOT_FOUND = 5004
    E_UNSORTED_DATA = 6000
    E_INVALID_USER_ARGUMENT = 7000
    E_INVALID_DECIMAL_STRING = 7001
    E_INVALID_CHAR_IN_NAME = 7002
    E_NAME_TOO_LONG = 7003
    E_NO_STAGED_SEGMENTS = 7004
    E_UNRECOGNISED_COLUMN_STATS_VERSION = 8000
    E_DECODE_ERROR = 9000
