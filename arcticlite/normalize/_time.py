"""Conversions of user-given times (as_of, date_range bounds) to UTC nanoseconds."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pandas as pd

INT64_MIN = np.iinfo(np.int64).min
INT64_MAX = np.iinfo(np.int64).max


#: What a date_range bound may be (besides None): ArcticDB takes datetimes and Timestamps; a
#: ``datetime.date`` (midnight) and a ``numpy.datetime64`` are taken too (docs/compatibility.md).
_BOUND_TYPES = (dt.datetime, dt.date, pd.Timestamp, np.datetime64)


def _to_timestamp(value: Any) -> pd.Timestamp:
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    ts = pd.Timestamp(value)
    if ts.tzinfo is not None:
        ts = ts.tz_convert("UTC").tz_localize(None)  # naive means UTC
    return ts


def as_of_to_ns(value: Any) -> int:
    """A datetime-like ``as_of`` as UTC ns (naive is taken as UTC)."""
    if not isinstance(value, dt.datetime | dt.date | np.datetime64 | pd.Timestamp):
        from arcticlite.exceptions import ArcticException

        raise ArcticException(
            f"Unexpected combination of read parameters: as_of={value!r} is not a version id, "
            "snapshot name or datetime"
        )
    return int(_to_timestamp(value).value)


def check_bound(value: Any, which: str) -> None:
    """Refuse a date_range bound (``which``: "start" / "end") that is not a time or None,
    with ArcticDB's ``TypeError``."""
    if value is not None and not isinstance(value, _BOUND_TYPES):
        raise TypeError(
            f"DateRange bounds must be datetime, date or Timestamps, DateRange.{which}={type(value)}({value})")


def to_ns_bound(value: Any, *, low: bool) -> int:
    """A closed date_range bound as UTC ns; ``None`` (or NaT) is open. Anything but a time
    (an integer, a string, a float) raises ArcticDB's ``TypeError``: an integer would otherwise
    be taken as nanoseconds since 1970, and a string's parse would depend on pandas."""
    check_bound(value, "start" if low else "end")
    if value is None or pd.isna(value):
        return INT64_MIN if low else INT64_MAX
    return int(_to_timestamp(value).value)
