"""``str(QueryBuilder)``: the clauses in ArcticDB's text form, e.g.
``WHERE (Column["a"] GT Val(UINT8:3)) | ROWRANGE: HEAD, n=5``.

Values are shown with the type ArcticDB gives a literal: the smallest integer type holding it
(signed for negative values and numpy signed integers), ``FLOAT32`` for a Python float,
``NANOSECONDS_UTC64`` for timestamps (UTC), ``INT64`` nanoseconds for durations.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import numpy as np
import pandas as pd

_OPS = {"==": "EQ", "!=": "NE", "<": "LT", "<=": "LE", ">": "GT", ">=": "GE", "&": "AND", "|": "OR", "^": "XOR",
        "+": "ADD", "-": "SUB", "*": "MUL", "/": "DIV", "**": "POW"}
_UNARY = {"~": "NOT", "abs": "ABS", "neg": "NEG", "isna": "ISNULL", "notna": "NOTNULL"}
_I64_MAX = 2**63 - 1


def _int_type(v: int, signed: bool) -> str:
    for bits in (8, 16, 32, 64):
        if signed and -(2 ** (bits - 1)) <= v < 2 ** (bits - 1):
            return f"INT{bits}"
        if not signed and 0 <= v < 2**bits:
            return f"UINT{bits}"
    return "UINT64" if v > 0 else "INT64"


def _timestamp(v: Any) -> str:
    t = pd.Timestamp(v)
    if t is pd.NaT:
        return "NaT"
    if t.tzinfo is not None:
        t = t.tz_convert("UTC").tz_localize(None)
    ns = int(t.as_unit("ns").value)
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{ns % 10**9:09d}"


def value_text(v: Any) -> str:
    """``Val(TYPE:value)`` of a literal."""
    if isinstance(v, bool | np.bool_):
        return f"Val(BOOL8:{'true' if v else 'false'})"
    if isinstance(v, np.integer):
        return f"Val({_int_type(int(v), v.dtype.kind == 'i' or int(v) < 0)}:{int(v)})"
    if isinstance(v, int):
        return f"Val({_int_type(v, v < 0)}:{v})"
    if isinstance(v, np.floating):
        return f"Val(FLOAT{v.dtype.itemsize * 8}:{v})"
    if isinstance(v, float):
        with np.errstate(over="ignore"):
            return f"Val(FLOAT32:{np.float32(v)})"
    if isinstance(v, str | np.str_):
        return f'Val(UTF_DYNAMIC64:"{v}")'
    if v is pd.NaT or isinstance(v, _dt.datetime | _dt.date | np.datetime64 | pd.Timestamp):
        return f"Val(NANOSECONDS_UTC64:{_timestamp(v)})"
    if isinstance(v, _dt.timedelta | np.timedelta64 | pd.Timedelta):
        return f"Val(INT64:{int(pd.Timedelta(v).value)})"
    return f"Val({v!r})"


def _value_set(values: tuple[Any, ...]) -> str:
    if any(isinstance(v, str) for v in values) or not values:
        kind = "UTF_DYNAMIC64"
    elif any(isinstance(v, float) for v in values):
        kind = "FLOAT64"
    elif any(isinstance(v, int) and not isinstance(v, bool) and v > _I64_MAX for v in values):
        kind = "UINT64"
    else:
        kind = "INT64"
    return f"ValueSet({kind},n={len(values)})"


def expr_text(node: Any) -> str:
    """ArcticDB's text of an expression node (or a literal)."""
    op = getattr(node, "op", None)
    if op is None:
        return value_text(node)
    args = node.args
    if op == "col":
        return f'Column["{args[0]}"]'
    if op in _OPS:
        return f"({expr_text(args[0])} {_OPS[op]} {expr_text(args[1])})"
    if op in _UNARY:
        return f"{_UNARY[op]}({expr_text(args[0])})"
    if op in ("isin", "isnotin"):
        return f"({expr_text(args[0])} {op.upper()} {_value_set(args[1])})"
    if op == "regex_match":
        return f"({expr_text(args[0])} REGEX_MATCH Regex({args[1]}))"
    if op == "where":
        return f"{expr_text(args[1])} if {expr_text(args[0])} else {expr_text(args[2])}"
    return f"{op.upper()}({', '.join(expr_text(a) for a in args)})"


def _bound(v: Any, low: bool) -> int:
    if v is None:
        return int((pd.Timestamp.min if low else pd.Timestamp.max).value)
    t = pd.Timestamp(v)
    if t.tzinfo is not None:
        t = t.tz_convert("UTC").tz_localize(None)
    return int(t.as_unit("ns").value)


def _rows(start: int | None, end: int | None) -> str:
    if start is None and end is not None and end >= 0:
        return f"ROWRANGE: HEAD, n={end}"
    if end is None and start is not None and start < 0:
        return f"ROWRANGE: TAIL, n={-start}"
    return f"ROWRANGE: RANGE, start={0 if start is None else start}, end={'' if end is None else end}"


def clause_text(name: str, arg: Any) -> str:
    """ArcticDB's text of one clause."""
    if name == "filter":
        return f"WHERE {'IDENTITY(' + expr_text(arg) + ')' if getattr(arg, 'op', None) == 'col' else expr_text(arg)}"
    if name == "project":
        return f'PROJECT Column["{arg[0]}"] = {expr_text(arg[1])}'
    if name == "groupby":
        return f'GROUPBY Column["{arg}"]'
    if name == "aggregate":
        parts = []
        for out in sorted(arg, key=str):
            spec = arg[out]
            column, op = (spec[0], spec[1]) if isinstance(spec, tuple | list) else (out, spec)
            parts.append(f"{out}: ({column}, {str(op).lower()}), ")
        return "AGGREGATE {" + "".join(parts) + "}"
    if name == "resample":
        return f"RESAMPLE({arg[0]})"
    if name == "date_range":
        return f"DATE RANGE {_bound(arg[0], True)} - {_bound(arg[1], False)}"
    if name == "head":
        return f"ROWRANGE: HEAD, n={arg}"
    if name == "tail":
        return f"ROWRANGE: TAIL, n={arg}"
    if name == "row_range":
        return _rows(arg[0], arg[1])
    if name == "concat":
        return "CONCAT"
    return f"{name.upper()}({arg!r})"


def query_text(clauses: list[tuple[str, Any]]) -> str:
    """The clauses joined by ``" | "``."""
    return " | ".join(clause_text(n, a) for n, a in clauses)
