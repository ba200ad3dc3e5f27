"""Conversions of user-given times (as_of, date_range bounds) to UTC nanoseconds."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pandas as pd

INT64_MIN = np.iinfo(np.int64).min
INT64_MAX = np.iinfo(np.int64).max


def _to_timestamp(value: Any) -> pd.Timestamp:
    if isinstance(value, str):
        raise TypeError(
            f"date_range bounds must be pandas.Timestamp, datetime or date, not str ({value!r})"
        )
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


def to_ns_bound(value: Any, *, low: bool) -> int:
    """A closed date_range bound as UTC ns; ``None`` is open."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return INT64_MIN if low else INT64_MAX
    return int(_to_timestamp(value).value)
