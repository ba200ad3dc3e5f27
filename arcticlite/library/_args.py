"""Validation of the arguments of ``Library`` methods that are not names: a wrong type or
value raises a clear ``UserInputException`` (what was wrong, what to give) before anything is
read or written, never a ``TypeError`` from deep inside."""

from __future__ import annotations

import numbers
import re
from typing import Any

from arcticlite.exceptions import ArcticException, UserInputException
from arcticlite.normalize import to_ns_bound


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def count(value: Any, name: str) -> int:
    """An integer argument such as ``head``'s ``n``."""
    if not _is_int(value):
        raise UserInputException(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    return int(value)


def row_range(value: Any) -> tuple[int, int] | None:
    """``None`` or ``(start, end)`` integers."""
    if value is None:
        return None
    if not isinstance(value, tuple | list) or len(value) != 2 or not all(v is None or _is_int(v) for v in value):
        raise UserInputException(f"row_range must be (start, end) integers, got {value!r}")
    return value[0], value[1]


def one_range(date_range: Any, row_range: Any, where: str = "") -> None:
    """A read gives ``date_range`` or ``row_range``, not both (ArcticDB's ``ArcticException``);
    ``where`` names the request in the message."""
    if date_range is not None and row_range is not None:
        raise ArcticException(f"Date range and row range both specified{where}: give only one")


def date_bounds(value: Any) -> tuple[int, int]:
    """The closed nanosecond bounds of a ``date_range`` ``(start, end)``; ``None`` is open."""
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise UserInputException(
            f"date_range must be (start, end) timestamps (None for an open end), got {value!r}")
    try:  # a bound of a wrong type raises to_ns_bound's TypeError, which names the types to give
        return to_ns_bound(value[0], low=True), to_ns_bound(value[1], low=False)
    except (ValueError, OverflowError) as exc:
        raise UserInputException(f"date_range {tuple(value)!r}: {exc}") from None


def versions(value: Any) -> list[int]:
    """Version ids: one integer or a list of them."""
    items = [value] if _is_int(value) else value
    if not isinstance(items, list | tuple | set | range) or not all(_is_int(v) for v in items):
        raise UserInputException(f"versions must be a version id or a list of them, got {value!r}")
    return [version_id(v) for v in items]


def version_id(value: Any) -> int:
    """A version number to delete or snapshot: version numbers are never negative (ArcticDB's
    ``TypeError``; a negative ``as_of`` of a read counts back from the latest instead)."""
    if not _is_int(value) or value < 0:
        raise TypeError(f"a version number must be an int of 0 or more, got {value!r}; version "
                        "numbers count up from 0 (list_versions shows them)")
    return int(value)


def regex(value: Any) -> re.Pattern[str] | None:
    """A compiled ``regex`` (search semantics)."""
    if value is None:
        return None
    try:
        return re.compile(value)
    except (re.error, TypeError) as exc:
        raise UserInputException(f"regex {value!r} is not a valid regular expression: {exc}") from None


def positive(value: Any, name: str) -> int | None:
    """``None`` or a positive integer (``rows_per_segment``)."""
    if value is None:
        return None
    if not _is_int(value) or value <= 0:
        raise UserInputException(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def seconds(value: Any, name: str) -> float:
    """A non-negative number of seconds."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not float(value) >= 0:
        raise UserInputException(f"{name} must be a non-negative number of seconds, got {value!r}")
    return float(value)


def payloads(items: Any, cls: type, what: str) -> list[str]:
    """The symbols of a batch of ``cls`` payloads (each item checked)."""
    if not isinstance(items, list | tuple):
        raise UserInputException(f"{what} takes a list of {cls.__name__}, got {type(items).__name__}")
    for i, p in enumerate(items):
        if not isinstance(p, cls):
            raise UserInputException(f"{what}: item {i} is a {type(p).__name__}, not a {cls.__name__}")
    return [p.symbol for p in items]
