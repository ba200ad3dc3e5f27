"""Process-wide settings by name, as ArcticDB's ``arcticdb.config`` / ``set_config_*`` offer them.

ArcticDB tunes its C++ engine through a map of named settings (``"SymbolList.MaxDelta"``,
``"VersionStore.NumCPUThreads"``, ...) set with :func:`set_config_int` /
:func:`set_config_string` / :func:`set_config_double`, or from environment variables
``ARCTICDB_<Section>_<Name>_<TYPE>`` (``ARCTICDB_SymbolList_MaxDelta_int=100``) read when the
package is imported or passed to :func:`set_config_from_env_vars`. arcticlite keeps the same
functions and the same names. Names are case-insensitive. Each setting of ArcticDB 6.28 falls in
one of three groups:

* **honoured** — it changes the same thing here:

  ========================================  =================================================
  ``SymbolList.MaxDelta``                    journal entries before ``list_symbols`` compacts
                                             the symbol list (default 500)
  ``VersionStore.NumCPUThreads``             threads that encode / decode pages (default: the
                                             CPU count, at most 8)
  ``VersionStore.NumIOThreads``              threads of an S3 store's request pool (default 16)
  ``S3Storage.ConnectTimeoutMs``             S3 connect timeout (default 10 s)
  ``S3Storage.RequestTimeoutMs``             S3 read timeout (default 60 s)
  ``S3Storage.MaxConnections``               S3 connection pool size
  ``S3Storage.VerifySSL``                    ``0``: do not verify the endpoint's certificate
  ========================================  =================================================

  and one of arcticlite's own: ``S3Storage.TransportChecksums`` ``1`` sends a CRC32 of every
  S3 request body and checks the one of every response (default: only where S3 requires one;
  every stored value carries checksums of its own, checked on read).

  S3 settings apply to stores opened afterwards; thread counts to the next pool started.

* **accepted, no counterpart** — settings of ArcticDB's internals with no behaviour a user sees
  here (allocator, version-map cache, read/write windows, its own symbol-list thresholds...):
  listed in :data:`INTERNAL_ONLY`. They are stored, :func:`get_config_int` returns them, and
  nothing else changes. For example ``VersionMap.ReloadInterval`` bounds how stale ArcticDB's
  cached version map may be; arcticlite keeps no such cache, so every read is as fresh as
  ArcticDB with an interval of 0.

* **refused** — ArcticDB settings that change behaviour arcticlite does not offer
  (:data:`UNSUPPORTED`): :func:`set_config_int` raises ``UserInputException``, and an environment
  variable gives a ``UserWarning`` at import, rather than being ignored.

Other names (ArcticDB has no such setting either) are stored and change nothing, as in ArcticDB.

Log levels (:func:`set_log_level`, ``ARCTICDB_<stream>_loglevel=DEBUG``,
``ARCTICDB_all_loglevel=INFO``) set the level of the ``arcticlite`` logger (``all``) or of its
child ``arcticlite.<stream>``.

Examples
--------
>>> from arcticlite import config
>>> config.set_config_int("SymbolList.MaxDelta", 100)
>>> config.get_config_int("symbollist.maxdelta")
100
>>> config.set_config_from_env_vars({"ARCTICDB_SymbolList_MaxDelta_int": "500"})
>>> config.get_config_int("SymbolList.MaxDelta")
500
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Mapping

from arcticlite.exceptions import UserInputException

__all__ = [
    "HONOURED",
    "INTERNAL_ONLY",
    "UNSUPPORTED",
    "get_config_double",
    "get_config_int",
    "get_config_string",
    "set_config_double",
    "set_config_from_env_vars",
    "set_config_int",
    "set_config_string",
    "set_log_level",
]

#: Settings that change the same thing in arcticlite (upper-cased names).
HONOURED = frozenset({
    "SYMBOLLIST.MAXDELTA", "VERSIONSTORE.NUMCPUTHREADS", "VERSIONSTORE.NUMIOTHREADS",
    "S3STORAGE.CONNECTTIMEOUTMS", "S3STORAGE.REQUESTTIMEOUTMS", "S3STORAGE.MAXCONNECTIONS",
    "S3STORAGE.VERIFYSSL",
})

#: ArcticDB settings of its C++ internals, with nothing to change here: accepted and stored.
INTERNAL_ONLY = frozenset({
    "ALLOCATOR.TRIMCOUNT", "ALLOCATOR.TRIMMININTERVALMS", "ALLOCATOR.USESLABALLOCATOR",
    "CODEC.ESTIMATEDHEADERRATIO", "S3STORAGE.USEWININET", "S3STORAGE.LOWSPEEDLIMIT",
    "STATISTICS.GENERATEONWRITE", "STORAGE.ATOMICSUPPORTTESTSUFFIX", "STORAGE.DELETEPENDINGBUFFERSIZE",
    "SYMBOLLIST.MAXCOMPACTIONTHRESHOLD", "SYMBOLLIST.MINCOMPACTIONTHRESHOLD", "SYMBOLLIST.MININTERVALNS",
    "VERSIONMAP.LOGINDIVIDUALTOMBSTONES", "VERSIONMAP.MAXREADREFTRIALS", "VERSIONMAP.MAXVERSIONBLOCKS",
    "VERSIONMAP.RELOADINTERVAL", "VERSIONMAP.UNSYNCTOLERANCE", "VERSIONSTORE.BATCHWRITEWINDOW",
    "VERSIONSTORE.NUMPROCESSINGUNITSLIVE", "VERSIONSTORE.NUMSEGMENTSLIVEDURINGCOMPACTION",
    "VERSIONSTORE.SEGMENTREADWINDOW", "AWS.LOGLEVEL",
})

#: ArcticDB settings that change behaviour arcticlite does not offer, with what to do instead.
UNSUPPORTED: Mapping[str, str] = {
    "S3STORAGE.STSTOKENEXPIRYMIN": "STS credentials come from boto3's default chain, which renews them",
    "VERSIONSTORE.NOSTRICTSYMBOLCHECK": "arcticlite accepts any Unicode symbol name up to 254 characters",
}

_LOCK = threading.Lock()
_VALUES: dict[str, int | float | str] = {}


def _name(name: str) -> str:
    if not isinstance(name, str) or not name:
        raise UserInputException(f"a config name is a non-empty string such as 'SymbolList.MaxDelta', got {name!r}")
    key = name.upper()
    if key in UNSUPPORTED:
        raise UserInputException(f"config {name!r} is not supported by arcticlite: {UNSUPPORTED[key]}")
    return key


def _set(name: str, value: int | float | str) -> None:
    key = _name(name)
    with _LOCK:
        _VALUES[key] = value


def set_config_int(name: str, value: int) -> None:
    """Set the integer setting ``name`` (see the module docstring for what each name does).

    Process-wide and thread-safe; names are case-insensitive.

    Parameters
    ----------
    name : str
        ``"Section.Name"``, as in ArcticDB.
    value : int
        The value.

    Raises
    ------
    UserInputException
        ``value`` is not an int, or ``name`` is an ArcticDB setting arcticlite refuses.

    Examples
    --------
    >>> from arcticlite import config
    >>> config.set_config_int("VersionMap.ReloadInterval", 0)
    >>> config.get_config_int("versionmap.reloadinterval")
    0
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserInputException(f"set_config_int({name!r}, ...) takes an int, got {value!r}")
    _set(name, int(value))


def set_config_double(name: str, value: float) -> None:
    """Set the floating-point setting ``name``.

    Parameters
    ----------
    name : str
        ``"Section.Name"``, as in ArcticDB.
    value : float
        The value (an int is taken as a float).

    Raises
    ------
    UserInputException
        ``value`` is not a number, or ``name`` is refused.

    Examples
    --------
    >>> from arcticlite import config
    >>> config.set_config_double("Example.Ratio", 0.5)
    >>> config.get_config_double("Example.Ratio")
    0.5
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UserInputException(f"set_config_double({name!r}, ...) takes a float, got {value!r}")
    _set(name, float(value))


def set_config_string(name: str, value: str) -> None:
    """Set the string setting ``name``.

    Parameters
    ----------
    name : str
        ``"Section.Name"``, as in ArcticDB.
    value : str
        The value.

    Raises
    ------
    UserInputException
        ``value`` is not a str, or ``name`` is refused.

    Examples
    --------
    >>> from arcticlite import config
    >>> config.set_config_string("Example.Label", "eu")
    >>> config.get_config_string("example.label")
    'eu'
    """
    if not isinstance(value, str):
        raise UserInputException(f"set_config_string({name!r}, ...) takes a str, got {value!r}")
    _set(name, value)


def _get(name: str, kind: type) -> int | float | str | None:
    value = _VALUES.get(name.upper())
    if value is None:
        return None
    try:
        return kind(value)
    except ValueError:
        return None


def get_config_int(name: str) -> int | None:
    """The integer setting ``name``, or None when it was never set.

    Parameters
    ----------
    name : str
        ``"Section.Name"``, case-insensitive.

    Returns
    -------
    int or None
        The value, or None when unset (or not an int).

    Examples
    --------
    >>> from arcticlite import config
    >>> config.get_config_int("Example.NeverSet") is None
    True
    """
    return _get(name, int)  # type: ignore[return-value]


def get_config_double(name: str) -> float | None:
    """The floating-point setting ``name``, or None when it was never set.

    Parameters
    ----------
    name : str
        ``"Section.Name"``, case-insensitive.

    Returns
    -------
    float or None
        The value, or None when unset (or not a number).

    Examples
    --------
    >>> from arcticlite import config
    >>> config.set_config_int("Example.Count", 3)
    >>> config.get_config_double("Example.Count")
    3.0
    """
    return _get(name, float)  # type: ignore[return-value]


def get_config_string(name: str) -> str | None:
    """The string setting ``name``, or None when it was never set.

    Parameters
    ----------
    name : str
        ``"Section.Name"``, case-insensitive.

    Returns
    -------
    str or None
        The value (any setting, as a string), or None when unset.

    Examples
    --------
    >>> from arcticlite import config
    >>> config.set_config_int("Example.Count", 3)
    >>> config.get_config_string("Example.Count")
    '3'
    """
    return _get(name, str)  # type: ignore[return-value]


def set_log_level(default_level: str = "INFO", specific_log_levels: Mapping[str, str] | None = None) -> None:
    """Set the level of the ``arcticlite`` logger, and of ``arcticlite.<name>`` for each entry
    of ``specific_log_levels`` (``{"storage": "DEBUG"}``). Levels are logging names
    (``"DEBUG"``, ``"INFO"``, ``"WARN"``, ``"ERROR"``, ``"CRITICAL"``, ``"OFF"``).

    Parameters
    ----------
    default_level : str
        The level of the ``arcticlite`` logger.
    specific_log_levels : dict of str to str, optional
        Levels of its child loggers, by stream name.

    Raises
    ------
    UserInputException
        A level name is unknown.

    Examples
    --------
    >>> import logging
    >>> from arcticlite import config
    >>> config.set_log_level("WARN", {"storage": "DEBUG"})
    >>> logging.getLogger("arcticlite").level == logging.WARNING
    True
    >>> logging.getLogger("arcticlite.storage").level == logging.DEBUG
    True
    >>> for name in ("arcticlite", "arcticlite.storage"):  # back to the defaults
    ...     logging.getLogger(name).setLevel(logging.NOTSET)
    """
    logging.getLogger("arcticlite").setLevel(_level(default_level))
    for stream, level in (specific_log_levels or {}).items():
        logging.getLogger(f"arcticlite.{stream.lower()}").setLevel(_level(level))


def _level(name: str) -> int:
    upper = str(name).upper()
    if upper == "OFF":
        return logging.CRITICAL + 10
    if upper == "TRACE":
        return logging.DEBUG
    level = logging.getLevelName("WARNING" if upper == "WARN" else upper)
    if not isinstance(level, int):
        raise UserInputException(f"unknown log level {name!r}: use DEBUG, INFO, WARN, ERROR, CRITICAL or OFF")
    return level


_TYPES = ("INT", "FLOAT", "STR", "LOGLEVEL")


def set_config_from_env_vars(env_vars: Mapping[str, str] | None) -> None:
    """Apply the settings named by the ``ARCTICDB_*`` entries of ``env_vars``.

    ``ARCTICDB_<Section>_<Name>_<TYPE>=<value>`` sets ``<Section>.<Name>`` with the type
    ``INT``, ``FLOAT`` or ``STR`` (the default when the last word is no type);
    ``ARCTICDB_<stream>_LOGLEVEL`` sets a log level (``all`` for the ``arcticlite`` logger).
    arcticlite calls this with ``os.environ`` when it is imported, as ArcticDB does. A value
    that does not parse, or a setting arcticlite refuses, gives a ``UserWarning`` naming the
    variable; the other variables still apply.

    Parameters
    ----------
    env_vars : mapping of str to str, optional
        Environment variables (``os.environ`` or a dict); other entries are ignored, and
        ``None`` does nothing.

    Examples
    --------
    >>> import arcticlite as adb
    >>> adb.set_config_from_env_vars({"ARCTICDB_VersionMap_ReloadInterval_int": "5", "HOME": "/root"})
    >>> adb.config.get_config_int("VersionMap.ReloadInterval")
    5
    """
    if env_vars is None:
        return
    levels: dict[str, str] = {}
    for raw, value in env_vars.items():
        key = raw.upper()
        prefix = next((p for p in ("ARCTICDB_", "ARCTIC_NATIVE_") if key.startswith(p)), None)
        if prefix is None:
            continue
        words = key[len(prefix):].split("_")
        kind = words[-1] if words[-1] in _TYPES and len(words) > 1 else "STR"
        name = ".".join(words[:-1] if kind == words[-1] else words)
        try:
            if kind == "LOGLEVEL":
                _level(value)
                levels[name] = value
            elif kind == "INT":
                set_config_int(name, int(value))
            elif kind == "FLOAT":
                set_config_double(name, float(value))
            else:
                set_config_string(name, value)
        except (ValueError, UserInputException) as exc:
            warnings.warn(f"environment variable {raw}={value!r} not applied: {exc}", UserWarning, stacklevel=2)
    default = levels.pop("ALL", None)
    if default is not None:
        logging.getLogger("arcticlite").setLevel(_level(default))
    for stream, level in levels.items():
        logging.getLogger(f"arcticlite.{stream.lower()}").setLevel(_level(level))
