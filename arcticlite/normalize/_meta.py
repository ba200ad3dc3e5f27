"""``NormMeta``: how a stored Arrow table maps back to what the user wrote.

Persisted as JSON next to each version; versioned with ``format_version`` and refused when newer
than this reader knows (:class:`~arcticlite.exceptions.UnsupportedVersionError`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd

from arcticlite.exceptions import CorruptDataError, UnsupportedVersionError

__all__ = ["FORMAT_VERSION", "NormMeta", "decode_label", "encode_label"]

#: Version of the JSON layout written by :meth:`NormMeta.to_json`.
FORMAT_VERSION = 1

_KINDS = frozenset(["dataframe", "series", "ndarray", "arrow", "polars"])
_INDEX_KINDS = frozenset(["datetime", "range", "other", "multi", "none"])


def encode_label(label: Any) -> Any:
    """Encode a column / index / series label as a JSON value, keeping its Python type.

    ``str`` and ``None`` stay as they are; ints, floats, bools, Timestamps and tuples are tagged
    objects. Anything else is stored as its ``str()`` (tag ``"s"``).
    """
    if label is None or isinstance(label, str):
        return label
    if isinstance(label, bool | np.bool_):
        return {"b": bool(label)}
    if isinstance(label, int | np.integer):
        return {"i": int(label)}
    if isinstance(label, float | np.floating):
        return {"f": repr(float(label))}
    if isinstance(label, pd.Timestamp | np.datetime64):
        ts = pd.Timestamp(label)
        return {"ts": int(ts.as_unit("ns").value), "tz": None if ts.tz is None else str(ts.tz)}
    if isinstance(label, tuple):
        return {"t": [encode_label(x) for x in label]}
    return {"s": str(label)}


def decode_label(value: Any) -> Any:
    """Inverse of :func:`encode_label`."""
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, dict) or len(value) not in (1, 2):
        raise CorruptDataError(f"bad label in normalization metadata: {value!r}")
    if "b" in value:
        return bool(value["b"])
    if "i" in value:
        return int(value["i"])
    if "f" in value:
        return float(value["f"])
    if "ts" in value:
        ts = pd.Timestamp(int(value["ts"]), unit="ns")
        return ts if value.get("tz") is None else ts.tz_localize("UTC").tz_convert(value["tz"])
    if "t" in value:
        return tuple(decode_label(x) for x in value["t"])
    if "s" in value:
        return str(value["s"])
    raise CorruptDataError(f"bad label in normalization metadata: {value!r}")


_LABEL_FIELDS = frozenset(["user_columns", "index_names", "columns_name"])


@dataclass(frozen=True, slots=True, kw_only=True)
class NormMeta:
    """How the stored Arrow table of one version maps back to the user's object.

    Attributes
    ----------
    kind : str
        ``"dataframe"``, ``"series"``, ``"ndarray"``, ``"arrow"`` or ``"polars"``: what was
        written and what a pandas-format read returns (arrow / polars give a DataFrame).
    index_kind : str
        ``"datetime"``, ``"range"``, ``"other"`` (one non-datetime level), ``"multi"`` or
        ``"none"`` (Arrow / polars data without an index column: a row count).
    index_columns : tuple of str
        Stored names of the index column(s); they come first in the table. ``()`` for
        ``"range"`` and ``"none"``.
    index_names : tuple
        The user's names of the index levels (``None`` when unnamed); one entry for
        ``"range"`` too.
    index_hints : tuple of str
        Per index column: ``"dt"`` for a timestamp index stored as naive-UTC ``timestamp('ns')``
        (its tz and unit are ``tz`` / ``index_unit``), otherwise a column hint (see
        :mod:`arcticlite.normalize._columns`).
    range_start, range_step : int
        Start and step of a RangeIndex as written.
    tz : str or None
        Time zone of the datetime index (``None`` = naive). Values are stored in UTC.
    tz_library : str
        Where the index tz object came from (``"zoneinfo"``, ``"dateutil"``, ``"datetime"``,
        ``"pytz"``) when pandas would not rebuild an equal one from ``tz``; else ``""``.
    index_unit : str
        Unit of the datetime index as written (``"ns"``, ``"us"``, ``"ms"``, ``"s"``); the
        stored column is always nanoseconds.
    index_position : int
        Arrow / polars input: where the index column was among the input's columns.
    columns : tuple of str
        Stored (Arrow) names of the data columns, unique, in storage order.
    user_columns : tuple
        The user's labels of the data columns (may be ints, may repeat), same order. For a
        Series, its name.
    column_hints : tuple of str
        Per data column, how to rebuild the pandas dtype (``""`` = Arrow's default).
    columns_name : Any
        ``DataFrame.columns.name``.
    columns_dtype : str
        dtype of ``DataFrame.columns`` (``"object"``, ``"int64"``, ...).
    shape : tuple of int or None
        ndarray shape as written (row count as written; reads may slice rows).
    dtype : str or None
        ndarray dtype (``numpy.dtype.str``).
    written_empty : bool
        The symbol's data line began with a 0-row write (a frame or Series with a datetime or
        RangeIndex); appends and updates keep it. ``get_description`` then lists the index as
        a timestamp column too, as ArcticDB describes such symbols.
    format_version : int
        Layout version of this record.
    """

    kind: str
    index_kind: str
    index_columns: tuple[str, ...] = ()
    index_names: tuple[Any, ...] = ()
    index_hints: tuple[str, ...] = ()
    range_start: int = 0
    range_step: int = 1
    tz: str | None = None
    tz_library: str = ""
    index_unit: str = "ns"
    index_position: int = 0
    columns: tuple[str, ...] = ()
    user_columns: tuple[Any, ...] = ()
    column_hints: tuple[str, ...] = ()
    columns_name: Any = None
    columns_dtype: str = "object"
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    written_empty: bool = False
    format_version: int = FORMAT_VERSION

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"unknown kind {self.kind!r}")
        if self.index_kind not in _INDEX_KINDS:
            raise ValueError(f"unknown index_kind {self.index_kind!r}")
        if len(self.columns) != len(self.user_columns):
            raise ValueError("columns and user_columns differ in length")
        if self.column_hints and len(self.column_hints) != len(self.columns):
            raise ValueError("column_hints and columns differ in length")
        if len(set(self.columns) | set(self.index_columns)) != len(self.columns) + len(
            self.index_columns
        ):
            raise ValueError("stored column names must be unique")
        if self.range_step == 0:
            raise ValueError("range_step must not be 0")

    # ------------------------------------------------------------------ helpers
    def hint(self, stored: str) -> str:
        """Hint of the data column ``stored`` (``""`` if unknown or none)."""
        try:
            i = self.columns.index(stored)
        except ValueError:
            return ""
        return self.column_hints[i] if self.column_hints else ""

    def user_label(self, stored: str) -> Any:
        """User label of the data column ``stored`` (the stored name itself if unknown)."""
        try:
            return self.user_columns[self.columns.index(stored)]
        except ValueError:
            return stored

    def describe(self, stored: list[str]) -> tuple[list[Any], list[str]]:
        """User labels and hints of the data columns ``stored``, in one O(n) pass.

        Columns this record does not know (added under dynamic schema) get their stored name
        as label and no hint.
        """
        hints = self.column_hints or ("",) * len(self.columns)
        info = dict(zip(self.columns, zip(self.user_columns, hints, strict=True), strict=True))
        pairs = [info.get(n, (n, "")) for n in stored]
        return [p[0] for p in pairs], [p[1] for p in pairs]

    def user_to_stored(self, names: list[Any]) -> list[str]:
        """Map user column labels to stored names.

        Parameters
        ----------
        names : list
            Labels as the user gives them to ``read(columns=...)``.

        Returns
        -------
        list of str
            Stored names in **storage order** (not request order). Unknown labels are dropped
            silently, as ArcticDB does; a repeated label selects every column that has it.
        """
        wanted = []
        for n in names:
            try:
                hash(n)
            except TypeError:
                continue
            wanted.append(n)
        want = set(wanted)
        texts = {w for w in wanted if isinstance(w, str)}
        # ``0 == False == 0.0`` in Python sets; require the same type family too. An int label
        # is also found by its text (``"0"`` for ``0``), as ArcticDB, which stores it as text
        return [
            s
            for s, u in zip(self.columns, self.user_columns, strict=True)
            if (u in want and any(_same_label(u, w) for w in wanted))
            or (texts and isinstance(u, int | np.integer) and not isinstance(u, bool) and str(u) in texts)
            or (u is None and self.kind == "series" and s in texts)  # an unnamed Series' column "0"
        ]

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> bytes:
        """Serialise to UTF-8 JSON (stable key order)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in ("user_columns", "index_names"):
                v = [encode_label(x) for x in v]
            elif f.name == "columns_name":
                v = encode_label(v)
            elif isinstance(v, tuple):
                v = list(v)
            out[f.name] = v
        return json.dumps(out, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()

    @classmethod
    def from_json(cls, b: bytes | str) -> NormMeta:
        """Parse :meth:`to_json` output.

        Raises
        ------
        UnsupportedVersionError
            The record was written by a newer arcticlite.
        CorruptDataError
            The bytes are not a normalization record.
        """
        try:
            raw = json.loads(b)
        except (ValueError, UnicodeDecodeError) as exc:
            raise CorruptDataError(f"normalization metadata is not JSON: {exc}") from exc
        if not isinstance(raw, dict) or not isinstance(raw.get("format_version"), int):
            raise CorruptDataError("normalization metadata has no format_version")
        if raw["format_version"] > FORMAT_VERSION:
            raise UnsupportedVersionError(
                f"normalization metadata format_version {raw['format_version']} is newer than "
                f"this arcticlite supports ({FORMAT_VERSION}); upgrade arcticlite to read it"
            )
        kwargs: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in raw:
                continue
            v = raw[f.name]
            if f.name in ("user_columns", "index_names"):
                v = tuple(decode_label(x) for x in v)
            elif f.name == "columns_name":
                v = decode_label(v)
            elif isinstance(v, list):
                v = tuple(v)
            kwargs[f.name] = v
        try:
            return cls(**kwargs)
        except (TypeError, ValueError) as exc:
            raise CorruptDataError(f"bad normalization metadata: {exc}") from exc


def _same_label(a: Any, b: Any) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, bool | np.bool_) != isinstance(b, bool | np.bool_):
        return False
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False
