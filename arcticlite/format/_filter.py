"""Row filters: ``[(column, op, value), ...]`` ANDed, with page pruning by min/max.

Ops: ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in``, ``not in``, ``between``
(``(lo, hi)``, both inclusive), ``isnull`` / ``notnull`` (value ignored; NaN counts as null, as
in pandas) and ``or`` (column ignored, value: a list of alternatives, each a list of terms
ANDed). Pruning is conservative (a page is skipped only when no row can match); rows are then
filtered exactly with ``pyarrow.compute``. Nulls never match a comparison.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arcticlite.exceptions import UserInputException
from arcticlite.format import _layout as L

OPS = frozenset({"==", "=", "!=", "<", "<=", ">", ">=", "in", "not in", "between", "isnull", "notnull", "or"})


@dataclass(frozen=True, slots=True)
class Term:
    column: str
    op: str
    value: Any


def parse(filter: Any) -> list[Term]:
    """Normalise a filter: one ``(col, op, value)`` tuple or a list of them (ANDed)."""
    if filter is None:
        return []
    if isinstance(filter, tuple) and len(filter) == 3 and isinstance(filter[1], str):
        filter = [filter]
    terms = []
    for t in filter:
        if not (isinstance(t, tuple | list) and len(t) == 3 and isinstance(t[0], str)):
            raise UserInputException(f"filter term {t!r} is not a (column, op, value) tuple")
        col, op, val = t
        op = "==" if op == "=" else op
        if op not in OPS:
            raise UserInputException(f"unknown filter op {op!r}; use one of {sorted(OPS)}")
        if op == "between" and not (isinstance(val, tuple | list) and len(val) == 2):
            raise UserInputException("'between' takes a (lo, hi) pair")
        if op in ("in", "not in"):
            val = list(val)
        if op == "or":
            if not isinstance(val, tuple | list) or not val:
                raise UserInputException("'or' takes a non-empty list of alternatives, each a list of terms")
            val = [parse(list(alt) if isinstance(alt, tuple | list) and alt and not isinstance(alt[0], str)
                         else alt) for alt in val]
            if any(not alt for alt in val):
                raise UserInputException("an 'or' alternative has no terms")
        terms.append(Term(col, op, val))
    return terms


def columns_of(terms: list[Term]) -> list[str]:
    """The columns ``terms`` mention (inside ``or`` terms too), in order of first mention."""
    out: list[str] = []
    for t in terms:
        if t.op == "or":
            for alt in t.value:
                out += columns_of(alt)
        else:
            out.append(t.column)
    return list(dict.fromkeys(out))


def expression(terms: list[Term]) -> pc.Expression | None:
    """The exact ``pyarrow.compute`` expression of ANDed terms."""
    expr = None
    for t in terms:
        f = pc.field(t.column)
        if t.op == "==":
            e = f == t.value
        elif t.op == "!=":
            e = f != t.value
        elif t.op == "<":
            e = f < t.value
        elif t.op == "<=":
            e = f <= t.value
        elif t.op == ">":
            e = f > t.value
        elif t.op == ">=":
            e = f >= t.value
        elif t.op in ("in", "not in"):
            if any(isinstance(v, float) for v in t.value) and all(
                    isinstance(v, int | float) and not isinstance(v, bool) for v in t.value):
                # -0.0 equals 0.0, but Arrow's sets hash their bits
                e = pc.add(f, 0.0).isin([v + 0.0 for v in t.value])
            else:
                e = f.isin(t.value)
            if t.op == "not in":
                e = ~e
        elif t.op == "isnull":
            e = f.is_null(nan_is_null=True)
        elif t.op == "notnull":
            e = ~f.is_null(nan_is_null=True)
        elif t.op == "or":
            alts = [expression(alt) for alt in t.value]
            e = alts[0]
            for a in alts[1:]:
                e = e | a  # type: ignore[operator]  # alternatives are never empty (parse)
        else:
            e = (f >= t.value[0]) & (f <= t.value[1])
        expr = e if expr is None else expr & e
    return expr


#: ``_stat_value`` of recent query values: a query judges every segment of a symbol with them.
_STAT_CACHE: dict[tuple[Any, ...], Any] = {}
_STAT_CACHE_MAX = 1024


def _stat_value(v: Any, typ: pa.DataType, kind: str) -> Any:
    """``v`` in the comparable space of the page statistics, or None (no pruning)."""
    try:
        key = (type(v), v, typ, kind)
        hash(key)
    except TypeError:
        return _convert(v, typ, kind)
    got = _STAT_CACHE.get(key, _STAT_CACHE)
    if got is _STAT_CACHE:
        got = _convert(v, typ, kind)
        if len(_STAT_CACHE) >= _STAT_CACHE_MAX:
            _STAT_CACHE.clear()
        _STAT_CACHE[key] = got
    return got


def _convert(v: Any, typ: pa.DataType, kind: str) -> Any:
    try:
        if v is None:
            return None
        if kind == "s":
            if pa.types.is_dictionary(typ):
                return None
            b = v.encode("utf-8", "surrogatepass") if isinstance(v, str) else bytes(v)
            return int.from_bytes(b[:8].ljust(8, b"\0"), "big")
        storage = typ.value_type if pa.types.is_dictionary(typ) else typ
        arr = pa.array([v]).cast(storage) if not isinstance(v, pa.Scalar) else pa.array([v.as_py()], type=v.type).cast(storage)
        if arr.null_count:
            return None
        if kind == "f":
            x = float(arr.cast(pa.float64())[0].as_py())
            return None if math.isnan(x) else x
        width = storage.bit_width
        ints = pa.Array.from_buffers(pa.int64() if width == 64 else pa.int32() if width == 32
                                     else pa.int16() if width == 16 else pa.int8(),
                                     1, arr.buffers()[:2], offset=arr.offset)
        x = ints[0].as_py()
        if kind == "u" and x < 0:
            x += 1 << width
        return x
    except (pa.ArrowException, TypeError, ValueError, OverflowError, AttributeError):
        return None


def may_match(term: Term, typ: pa.DataType, kind: str, mins: np.ndarray, maxs: np.ndarray,
              flags: np.ndarray, null_counts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Boolean mask of pages that may hold a row matching ``term`` (conservative)."""
    n = len(mins)
    has = (flags & L.FLAG_HAS_STATS) != 0
    nan = (flags & L.FLAG_HAS_NAN) != 0
    if term.op == "isnull":
        return (null_counts > 0) | nan | ~has
    empty = null_counts >= counts  # only nulls: nothing can match
    keep = ~empty
    if term.op == "notnull" or term.op == "or":
        return keep
    if term.op == "!=":  # a null differs from every value (as the query engine has it)
        keep = np.ones(n, dtype=bool)
        if not kind:
            return keep
        keep = (null_counts > 0) | nan | ~has
    if not kind:
        return keep
    dt = {"i": "<i8", "u": "<u8", "f": "<f8", "s": "<u8"}[kind]
    lo = np.frombuffer(mins.tobytes(), dtype=dt) if n else np.zeros(0, dt)
    hi = np.frombuffer(maxs.tobytes(), dtype=dt) if n else np.zeros(0, dt)
    prefix = kind == "s"

    def cmp(op: str, v: Any) -> np.ndarray | None:
        x = _stat_value(v, typ, kind)
        if x is None:
            return None
        x = np.array(x, dtype=dt)
        if op == "==":
            return (lo <= x) & (x <= hi)
        if op == "<":
            return lo <= x if prefix else lo < x
        if op == "<=":
            return lo <= x
        if op == ">":
            return hi >= x if prefix else hi > x
        if op == ">=":
            return hi >= x
        if op == "!=":
            return np.ones(n, bool) if prefix else ~((lo == x) & (hi == x))
        return None

    if term.op in ("not in",):
        return keep
    if term.op == "in":
        m = np.zeros(n, dtype=bool)
        for v in term.value:
            r = cmp("==", v)
            if r is None:
                return keep
            m |= r
    elif term.op == "between":
        a, b = cmp(">=", term.value[0]), cmp("<=", term.value[1])
        if a is None or b is None:
            return keep
        m = a & b
    else:
        r = cmp(term.op, term.value)
        if r is None:
            return np.ones(n, dtype=bool) if term.op == "!=" else keep
        m = r
    if term.op == "!=":
        return keep | (m & has)
    return keep & (m | ~has)
