"""Library options (ArcticDB's ``LibraryOptions``), persisted in the library config."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass
from typing import Any

from arcticlite.exceptions import UnsupportedLibraryOptionValue, UserInputException


class EncodingVersion(enum.IntEnum):
    """ArcticDB's segment encoding versions, accepted for compatibility: arcticlite always
    writes Fermion segments, and reports the encoding a library was created with.

    Examples
    --------
    >>> import arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo", adb.LibraryOptions(encoding_version=adb.EncodingVersion.V2))
    >>> lib.options().encoding_version
    <EncodingVersion.V2: 1>
    """
    V1 = 0
    V2 = 1


class ModifiableLibraryOption(enum.Enum):
    """Library options :meth:`Arctic.modify_library_option` can change after creation:
    ``DEDUP``, ``ROWS_PER_SEGMENT``, ``COLUMNS_PER_SEGMENT``, ``RECURSIVE_NORMALIZERS``,
    ``PRUNE_PREVIOUS_VERSIONS``.

    Examples
    --------
    >>> import arcticlite as adb
    >>> ac = adb.Arctic("mem://")
    >>> lib = ac.create_library("demo")
    >>> ac.modify_library_option(lib, adb.ModifiableLibraryOption.PRUNE_PREVIOUS_VERSIONS, True)
    >>> lib.options().prune_previous_versions
    True
    """
    DEDUP = 1
    ROWS_PER_SEGMENT = 2
    COLUMNS_PER_SEGMENT = 3
    RECURSIVE_NORMALIZERS = 4
    PRUNE_PREVIOUS_VERSIONS = 5


class ModifiableEnterpriseLibraryOption(enum.Enum):
    """ArcticDB's modifiable enterprise options (``REPLICATION``, ``BACKGROUND_DELETION``):
    ``Arctic.modify_library_option`` sets them (bools) and ``Library.enterprise_options()``
    reports them, as in ArcticDB; arcticlite has neither feature.

    Examples
    --------
    >>> import arcticlite as adb
    >>> [o.name for o in adb.ModifiableEnterpriseLibraryOption]
    ['REPLICATION', 'BACKGROUND_DELETION']
    """
    REPLICATION = 1
    BACKGROUND_DELETION = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class EnterpriseLibraryOptions:
    """ArcticDB's enterprise options of a library: kept with the library and reported by
    ``Library.enterprise_options()``, as ArcticDB keeps them; arcticlite has no replication or
    background deletion, so they change nothing else.

    Parameters
    ----------
    replication : bool
        Kept and reported only.
    background_deletion : bool
        Kept and reported only.

    Examples
    --------
    >>> import arcticlite as adb
    >>> ac = adb.Arctic("mem://")
    >>> lib = ac.create_library("demo", enterprise_library_options=adb.EnterpriseLibraryOptions())
    >>> lib.enterprise_options()
    EnterpriseLibraryOptions(replication=False, background_deletion=False)
    """
    replication: bool = False
    background_deletion: bool = False


@dataclass(slots=True, kw_only=True)
class LibraryOptions:
    """Options of a library, fixed at creation (some modifiable with
    ``Arctic.modify_library_option``).

    Parameters
    ----------
    dynamic_schema : bool
        Allow columns to appear, disappear and widen across appends/updates. Under dynamic
        schema ``columns_per_segment`` is ignored (one column slice).
    dedup : bool
        Accepted for compatibility. arcticlite shares segments between versions by reference
        (appends, metadata writes and updates never rewrite untouched data).
    rows_per_segment, columns_per_segment : int
        Tile size of data segments.
    encoding_version : EncodingVersion, optional
        Accepted for compatibility; arcticlite always writes Fermion segments.
    recursive_normalizers : bool
        Accepted for compatibility.
    prune_previous_versions : bool
        Default of the per-call ``prune_previous_versions`` argument.
    bloom_min_distinct : int or None
        arcticlite only (default 16): each new segment carries a Bloom filter of every integer
        or string column with at least this many distinct values in it (integer columns
        sorted within the segment excepted), so that ``==`` / ``isin`` queries skip the
        segments that cannot hold the values; about 10 bits per distinct value, ~0.8 % false
        positives. None writes no filters. ``write`` / ``append`` / ``update`` take the same
        keyword for one call.
    bloom_max_fraction : float
        arcticlite only (default 0.03): the Bloom filters of a segment take at most this share
        of its data, the smallest first; a column whose filter does not fit gets none. At the
        default a column of distinct random integers (10 bits a row) gets none; raise it (up to
        1.0) to filter such columns (e.g. ``id == x`` on unsorted unique ids).
    merge_on_read : bool
        arcticlite only (default True): ``merge`` / ``merge_experimental`` / ``delete_rows``
        write their changes as delta segments applied by reads, instead of rewriting the row
        groups they touch (False: copy-on-write). Results are the same either way.
    compaction_deltas, compaction_delta_share : int, float
        arcticlite only: compaction of a symbol's deltas is *due* (``compaction_plan(...).due``)
        once it has at least ``compaction_deltas`` delta layers (merges kept as deltas) or its
        delta rows reach ``compaction_delta_share`` of its base rows (defaults 32 and 0.1).

    Raises
    ------
    UnsupportedLibraryOptionValue
        A value is out of range (see :meth:`validate`).

    Examples
    --------
    >>> import arcticlite as adb
    >>> ac = adb.Arctic("mem://")
    >>> lib = ac.create_library("demo", adb.LibraryOptions(dynamic_schema=True, rows_per_segment=50_000))
    >>> lib.options().dynamic_schema, lib.options().rows_per_segment
    (True, 50000)
    """

    dynamic_schema: bool = False
    dedup: bool = False
    rows_per_segment: int = 100_000
    columns_per_segment: int = 127
    encoding_version: EncodingVersion | None = None
    recursive_normalizers: bool = False
    prune_previous_versions: bool = False
    bloom_min_distinct: int | None = 16
    bloom_max_fraction: float = 0.03
    merge_on_read: bool = True
    compaction_deltas: int = 32
    compaction_delta_share: float = 0.1

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Refuse values a library cannot use (checked again when a library is created: the
        options are mutable, as ArcticDB's are).

        Raises
        ------
        UnsupportedLibraryOptionValue
            A segment size, ``bloom_min_distinct``, ``compaction_deltas`` or
            ``compaction_delta_share`` is not positive, or ``bloom_max_fraction`` is not
            between 0 and 1.
        UserInputException
            A flag is not a bool.

        Examples
        --------
        >>> import arcticlite as adb
        >>> opts = adb.LibraryOptions()
        >>> opts.rows_per_segment = 0
        >>> opts.validate()
        Traceback (most recent call last):
        ...
        arcticlite.exceptions.UnsupportedLibraryOptionValue: LibraryOptions.rows_per_segment must be a positive int, got 0
        """
        for name in ("rows_per_segment", "columns_per_segment"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise UnsupportedLibraryOptionValue(
                    f"LibraryOptions.{name} must be a positive int, got {v!r}"
                )
        b = self.bloom_min_distinct
        if b is not None and (isinstance(b, bool) or not isinstance(b, int) or b < 1):
            raise UnsupportedLibraryOptionValue(
                f"LibraryOptions.bloom_min_distinct must be a positive int or None (no Bloom filters), got {b!r}")
        m = self.bloom_max_fraction
        if isinstance(m, bool) or not isinstance(m, (int, float)) or not 0 <= m <= 1:
            raise UnsupportedLibraryOptionValue(
                f"LibraryOptions.bloom_max_fraction must be a number between 0 and 1, got {m!r}")
        c = self.compaction_deltas
        if isinstance(c, bool) or not isinstance(c, int) or c < 1:
            raise UnsupportedLibraryOptionValue(f"LibraryOptions.compaction_deltas must be a positive int, got {c!r}")
        f = self.compaction_delta_share
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not f > 0:
            raise UnsupportedLibraryOptionValue(
                f"LibraryOptions.compaction_delta_share must be a positive number, got {f!r}")
        for name in ("dynamic_schema", "dedup", "recursive_normalizers", "prune_previous_versions", "merge_on_read"):
            if not isinstance(getattr(self, name), bool):
                raise UserInputException(f"LibraryOptions.{name} must be a bool")

    def __repr__(self) -> str:
        ev = 0 if self.encoding_version is None else int(self.encoding_version)
        return (
            f"LibraryOptions(dynamic_schema={self.dynamic_schema}, dedup={self.dedup}, "
            f"rows_per_segment={self.rows_per_segment}, columns_per_segment={self.columns_per_segment}, "
            f"encoding_version={ev}, recursive_normalizers={self.recursive_normalizers}, "
            f"prune_previous_versions={self.prune_previous_versions})"
        )

    def to_json(self) -> dict[str, Any]:
        """The options as JSON values, as stored in the library's config.

        Returns
        -------
        dict
            One entry per field; ``encoding_version`` as an int or None.

        Examples
        --------
        >>> import arcticlite as adb
        >>> d = adb.LibraryOptions(dynamic_schema=True).to_json()
        >>> d["dynamic_schema"], d["rows_per_segment"], d["encoding_version"]
        (True, 100000, None)
        """
        d = asdict(self)
        d["encoding_version"] = None if self.encoding_version is None else int(self.encoding_version)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LibraryOptions:
        """Options from :meth:`to_json`'s values; keys this version does not know are ignored, and
        missing ones take their defaults (so older and newer configs read).

        Parameters
        ----------
        d : dict
            As :meth:`to_json` returns.

        Returns
        -------
        LibraryOptions
            Validated options.

        Raises
        ------
        UnsupportedLibraryOptionValue
            A value is out of range.

        Examples
        --------
        >>> import arcticlite as adb
        >>> adb.LibraryOptions.from_json({"rows_per_segment": 10, "future_option": 1}).rows_per_segment
        10
        """
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        if known.get("encoding_version") is not None:
            known["encoding_version"] = EncodingVersion(known["encoding_version"])
        return cls(**known)
