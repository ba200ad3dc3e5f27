"""Evaluate a ``QueryBuilder`` expression tree over whole Arrow columns.

A value is a :class:`Val`: a *bitset* (non-null boolean array: the result of a
comparison, ``isin``, ``isna``, ``regex_match`` or a logical operator), a *column*
(any Arrow array) or a *scalar*. Type rules follow ArcticDB: strings compare only for
(in)equality and only with strings, arithmetic needs numbers, integer results widen
(``uint8 + uint8 -> uint16``, ``int32 + int32 -> int64``), ``/`` gives float64, a missing
value is "not equal" to anything and "not in" any set.

Under dynamic schema a column may be *absent* from some rows (their segments were written
before the column existed). A plain read shows those rows backfilled (0, NaN, None), but in a
query they are missing, as in ArcticDB: comparisons (``!=`` and ``isnotin`` too) are false on
them, ``isna`` is true, arithmetic gives a missing result and aggregations skip them. The
reader marks them with a boolean column named :func:`absent_name` of the stored column.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from arcticlite.exceptions import InternalException, SchemaException, UserInputException
from arcticlite.query._builder import ExpressionNode

ArrowData: TypeAlias = Any  # pa.Array | pa.ChunkedArray (pyarrow ships no type stubs)

_CMP: dict[str, str] = {"==": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal",
                        ">": "greater", ">=": "greater_equal"}
_CMP_NAME = {"==": "EQ", "!=": "NE", "<": "LT", "<=": "LE", ">": "GT", ">=": "GE"}
_LOGIC = {"&": ("and_", "AND"), "|": ("or_", "OR"), "^": ("xor", "XOR")}
_ARITH = {"+": ("add", "ADD"), "-": ("subtract", "SUB"), "*": ("multiply", "MUL"), "/": ("divide", "DIV"),
          "**": ("power", "POW")}


#: Prefix of the boolean columns marking rows where a column is absent (dynamic schema).
_ABSENT = "\x00absent\x00"


def absent_name(stored: str) -> str:
    """Name of the boolean column marking the rows where stored column ``stored`` is absent."""
    return _ABSENT + stored


def is_absent_name(name: str) -> bool:
    """Whether ``name`` is a column made by :func:`absent_name`."""
    return name.startswith(_ABSENT)


def absent_of(marker: str) -> str:
    """The stored column whose absence the marker column ``marker`` (of :func:`absent_name`)
    marks."""
    return marker[len(_ABSENT):]


@dataclass(frozen=True, slots=True)
class Val:
    """An evaluated expression: ``kind`` is ``"bitset"``, ``"column"`` or ``"scalar"``;
    ``absent`` (columns only) marks the rows where the value is missing (dynamic schema)."""

    kind: str
    data: Any
    text: str
    absent: Any = None


def _either(a: Any, b: Any) -> Any:
    if a is None:
        return b
    return a if b is None else pc.or_(a, b)


def _present(out: Any, *vals: Val) -> Any:
    """``out`` (a bitset) false wherever an operand is absent."""
    mask = None
    for v in vals:
        mask = _either(mask, v.absent)
    return out if mask is None else pc.and_(out, pc.invert(mask))


def category(t: pa.DataType) -> str:
    """``"str"``, ``"num"``, ``"bool"``, ``"ts"``, ``"dur"``, ``"null"`` (a column with no
    values, e.g. all-None strings) or ``"other"`` for an Arrow type."""
    if pa.types.is_dictionary(t):
        return category(t.value_type)
    if pa.types.is_null(t):
        return "null"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", lambda _: False)(t):
        return "str"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return "num"
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return "ts"
    if pa.types.is_duration(t):
        return "dur"
    return "other"


def scalar_category(v: Any) -> str:
    """The category of a Python / numpy scalar, as :func:`category`."""
    if isinstance(v, str | np.str_):
        return "str"
    if isinstance(v, bool | np.bool_):
        return "bool"
    if isinstance(v, int | float | np.integer | np.floating):
        return "num"
    if isinstance(v, _dt.datetime | _dt.date | np.datetime64 | pd.Timestamp):
        return "ts"
    if isinstance(v, _dt.timedelta | np.timedelta64 | pd.Timedelta):
        return "dur"
    return "other"


def type_name(t: pa.DataType) -> str:
    """ArcticDB's name of the value type of Arrow type ``t`` (``INT64``, ``STRING``...)."""
    cat = category(t)
    if cat == "str":
        return "STRING"
    if cat == "bool":
        return "BOOL8"
    if cat == "ts":
        return "NANOSECONDS_UTC64"
    if cat == "num":
        return str(t).replace("double", "float64").replace("float", "float32").replace("float3264", "float64").upper()
    return str(t).upper()


def _td(v: Val) -> str:
    if v.kind == "bitset":
        return "TD<type=BITSET, dim=0>"
    if v.kind == "scalar":
        try:
            t = scalar_type(v.data)
        except UserInputException:
            return f"TD<type={type(v.data).__name__}, dim=0>"
        return f"TD<type={type_name(t)}, dim=0>"
    return f"TD<type={type_name(v.data.type)}, dim=0>"


def scalar_type(v: Any) -> pa.DataType:
    """ArcticDB types an integer literal by the smallest type holding it (``5`` is uint8; a
    numpy integer by the smallest of its signedness: ``np.int64(5)`` is int8)."""
    if isinstance(v, bool | np.bool_):
        return pa.bool_()
    if isinstance(v, np.floating):
        return pa.from_numpy_dtype(v.dtype)
    if isinstance(v, int | np.integer):
        signed = v.dtype.kind == "i" if isinstance(v, np.integer) else v < 0
        for t in ((np.int8, np.int16, np.int32, np.int64) if signed else (np.uint8, np.uint16, np.uint32, np.uint64)):
            info = np.iinfo(t)
            if info.min <= int(v) <= info.max:
                return pa.from_numpy_dtype(np.dtype(t))
        return pa.float64()
    if isinstance(v, float):
        return pa.float64()
    if isinstance(v, str | np.str_):
        return pa.string()
    raise UserInputException(f"E_INVALID_USER_ARGUMENT unsupported value {v!r} of type {type(v).__name__} in a query")


def _wide(v: Any, other: Val) -> Any:
    """A scalar int as Arrow compares it with the column ``other``: against a uint64 column a
    non-negative one as a uint64 (exactly; as an int64 scalar it would cast the column);
    otherwise an int beyond int64 as a float (every 64-bit value is on one side of it)."""
    if isinstance(v, int) and not isinstance(v, bool):
        if 0 <= v < 2**64 and other.kind == "column" and pa.types.is_uint64(other.data.type):
            return pa.scalar(v, pa.uint64())  # (as Arrow's int64 it would cast the column)
        if not -(2**63) <= v < 2**63:
            return float(v)
    return v


def ts_ns(v: Any) -> int:
    """Nanoseconds since the epoch (UTC; naive means UTC) of a timestamp-like value."""
    t = pd.Timestamp(v)
    if t.tzinfo is not None:
        t = t.tz_convert("UTC").tz_localize(None)
    return int(t.as_unit("ns").value)


def _ts_array(a: ArrowData) -> ArrowData:
    if pa.types.is_date(a.type):
        a = a.cast(pa.timestamp("ns"))
    if a.type != pa.timestamp("ns"):
        a = a.cast(pa.timestamp(a.type.unit)).cast(pa.timestamp("ns"))
    return a.cast(pa.int64())


def _as_ns(v: Val) -> Val:
    """``v`` as int64 nanoseconds if it is a timestamp (a column's NaT missing), else ``v``."""
    if v.kind == "column" and category(v.data.type) == "ts":
        return Val("column", _ts_array(v.data), v.text, v.absent)
    if v.kind == "scalar" and scalar_category(v.data) == "ts":
        return Val("scalar", ts_ns(v.data), v.text)
    return v


def _num_dtype(v: Val) -> np.dtype[Any]:
    t = v.data.type if v.kind == "column" else scalar_type(v.data)
    return np.dtype(t.to_pandas_dtype())


def _int_result(op: str, a: np.dtype[Any], b: np.dtype[Any]) -> np.dtype[Any]:
    width = min(64, 2 * max(a.itemsize, b.itemsize) * 8)
    unsigned = a.kind == "u" and b.kind == "u" and op != "-"
    return np.dtype(f"{'u' if unsigned else ''}int{width}")


def _arith_dtype(op: str, a: np.dtype[Any], b: np.dtype[Any]) -> np.dtype[Any]:
    if op == "/":
        return np.dtype("float64")
    if a.kind == "f" or b.kind == "f":
        return np.dtype("float32") if a == b == np.dtype("float32") else np.dtype("float64")
    return _int_result(op, a, b)


def _as_array(v: Val, dtype: pa.DataType) -> Any:
    """``v`` as ``dtype``, converted as numpy converts (an int64 beyond 2**53 to the nearest
    float64, a uint64 to int64 wrapping), not refused as Arrow's checked casts refuse."""
    if v.kind == "scalar":
        return _typed_scalar(_py_scalar(v.data), dtype)
    return v.data.cast(dtype, safe=False) if v.data.type != dtype else v.data


def _typed_scalar(x: Any, dtype: pa.DataType) -> Any:
    if pa.types.is_floating(dtype) and isinstance(x, int) and not isinstance(x, bool):
        x = float(x)  # its nearest float (an int beyond any integer type too)
    try:
        return pa.scalar(x, type=dtype)
    except (pa.ArrowInvalid, OverflowError):
        src = pa.uint64() if isinstance(x, int) and x >= 2**63 else None
        return pa.array([x], src).cast(dtype, safe=False)[0]


_NAT = pa.scalar(-(2**63), pa.int64())

#: Integers of both signs compared exactly (a uint64 against an int64 fits neither).
_EXACT_INTS = pa.decimal128(20, 0)


def _compare_type(a: np.dtype[Any], b: np.dtype[Any]) -> pa.DataType | None:
    """The type two numeric operands are compared in when their types differ (None: as they
    are): float64 against a float (as numpy: an int beyond 2**53 is its nearest float), the
    wider integer type, or exact decimals for a 64-bit unsigned against a signed integer."""
    if a == b:
        return None
    if a.kind == "f" or b.kind == "f":
        return pa.float64()
    if a.kind != b.kind and 8 in (a.itemsize if a.kind == "u" else 0, b.itemsize if b.kind == "u" else 0):
        return _EXACT_INTS
    return pa.from_numpy_dtype(np.promote_types(a, b))


def _bool_of(v: Val, side: str, opname: str) -> ArrowData:
    if v.kind == "bitset":
        return v.data
    if v.kind == "column" and category(v.data.type) == "bool":
        return v.data.fill_null(False)
    if v.kind == "scalar" and isinstance(v.data, bool | np.bool_):
        return pa.scalar(bool(v.data))
    t = v.data.type if v.kind == "column" else type(v.data).__name__
    raise UserInputException(
        f"E_INVALID_USER_ARGUMENT Unexpected data type {type_name(t) if isinstance(t, pa.DataType) else t} input as "
        f"{side} operand to {opname}"
    )


class Evaluator:
    """Evaluates expressions against ``table``; ``resolve`` maps a user column name to a
    stored one (or ``None``); ``clause`` names the clause in error messages."""

    def __init__(self, table: pa.Table, resolve: Callable[[str], str | None], clause: str) -> None:
        self.table = table
        self.resolve = resolve
        self.clause = clause

    def column(self, name: Any, *, codes: bool = False) -> ArrowData:
        """The stored column for user name ``name`` (null where absent), or ``SchemaException``.
        ``codes``: a dictionary-encoded column of strings stays dictionary-encoded (a group-by
        groups on its codes) where no row is absent."""
        stored = self.resolve(name)
        if stored is None or stored not in self.table.column_names:
            raise SchemaException(
                f"E_COLUMN_DOESNT_EXIST {self.clause} requires column {name!r} to exist in input data"
            )
        data = self.table.column(stored)
        if codes and pa.types.is_dictionary(data.type) and self.absent(name) is None and (
                pa.types.is_large_string(data.type.value_type) or pa.types.is_string(data.type.value_type)
                or pa.types.is_large_binary(data.type.value_type) or pa.types.is_binary(data.type.value_type)):
            return data
        if pa.types.is_dictionary(data.type):
            if self.clause == "FilterClause":
                raise UserInputException(
                    f"E_INVALID_USER_ARGUMENT FilterClause: column {name!r} is categorical, which filters do not "
                    "support (as in ArcticDB); convert it with .astype(str) before writing, or filter after reading")
            data = data.cast(data.type.value_type)
        mask = self.absent(name)
        if mask is not None:
            data = pc.if_else(mask, pa.scalar(None, data.type), data)
        return data

    def absent(self, name: Any) -> Any:
        """The rows where column ``name`` is absent (a boolean column), or None."""
        stored = self.resolve(name)
        marker = absent_name(stored) if stored is not None else None
        if marker is None or marker not in self.table.column_names:
            return None
        return self.table.column(marker)

    def eval(self, node: Any) -> Val:
        """Evaluate ``node`` (an :class:`ExpressionNode` or a scalar)."""
        if not isinstance(node, ExpressionNode):
            if isinstance(node, np.datetime64 | _dt.datetime | _dt.date):
                node = pd.Timestamp(node)
            return Val("scalar", node, repr(node))
        op, args = node.op, node.args
        if op == "col":
            return Val("column", self.column(args[0]), f'Column["{args[0]}"]', self.absent(args[0]))
        if op in _CMP:
            return self._compare(op, self.eval(args[0]), self.eval(args[1]))
        if op in _LOGIC:
            a, b = self.eval(args[0]), self.eval(args[1])
            fn, name = _LOGIC[op]
            out = getattr(pc, fn)(_bool_of(a, "left", name), _bool_of(b, "right", name))
            return Val("bitset", out, f"({a.text} {name} {b.text})")
        if op == "~":
            a = self.eval(args[0])
            return Val("bitset", pc.invert(_bool_of(a, "left", "NOT")), f"NOT {a.text}")
        if op in _ARITH:
            return self._arith(op, self.eval(args[0]), self.eval(args[1]))
        if op in ("abs", "neg"):
            return self._unary(op, self.eval(args[0]))
        if op in ("isin", "isnotin"):
            return self._isin(op, self.eval(args[0]), args[1])
        if op in ("isna", "notna"):
            a = self.eval(args[0])
            if a.kind != "column":
                raise UserInputException(f"E_INVALID_USER_ARGUMENT {op} needs a column, got {a.text}")
            mask = pc.is_null(a.data, nan_is_null=True)
            return Val("bitset", mask if op == "isna" else pc.invert(mask), f"{op.upper()}({a.text})")
        if op == "regex_match":
            a, pattern = self.eval(args[0]), args[1]
            if a.kind == "column" and category(a.data.type) == "null" and isinstance(pattern, str):
                return Val("bitset", self._const(False), f"REGEX({a.text})")
            if a.kind != "column" or category(a.data.type) != "str" or not isinstance(pattern, str):
                raise UserInputException(
                    f"E_INVALID_USER_ARGUMENT Unexpected data types {_td(a)} {type(pattern).__name__} input to REGEX_MATCH"
                )
            return Val("bitset", pc.match_substring_regex(a.data, pattern).fill_null(False), f"REGEX({a.text})")
        if op == "where":
            return self._where(self.eval(args[0]), self.eval(args[1]), self.eval(args[2]))
        raise UserInputException(f"E_INVALID_USER_ARGUMENT unknown query operation {op!r}")

    # -- operations --------------------------------------------------------------------------------
    def _operand_cat(self, v: Val) -> str:
        if v.kind == "bitset":
            return "bool"
        if v.kind == "column":
            return category(v.data.type)
        return scalar_category(v.data)

    def _compare(self, op: str, a: Val, b: Val) -> Val:
        ca, cb = self._operand_cat(a), self._operand_cat(b)
        text = f"{a.text} {_CMP_NAME[op]} {b.text}"
        if {ca, cb} == {"ts", "num"} and "bitset" not in (a.kind, b.kind):
            # as ArcticDB: a timestamp against a number is its int64 nanoseconds (NaT missing)
            a, b, ca, cb = _as_ns(a), _as_ns(b), "num", "num"
        if "null" in (ca, cb):  # a column without values: nothing equals, everything differs
            return Val("bitset", _present(self._const(op == "!="), a, b), text)
        if op in ("==", "!=") and ((ca == "str" and a.kind == "column" and _raw_bytes(b))
                                   or (cb == "str" and b.kind == "column" and _raw_bytes(a))):
            # bytes that are not UTF-8 (the builder decodes the others): equal to no stored string
            return Val("bitset", _present(self._const(op == "!="), a, b), text)
        bad = ca != cb or ca == "other" or (ca == "str" and op not in ("==", "!=")) or (a.kind == b.kind == "scalar")
        if bad:
            raise UserInputException(
                f"E_INVALID_USER_ARGUMENT Invalid comparison {a.text} ({_td(a)}) {_CMP_NAME[op]} {b.text} ({_td(b)})"
            )
        if ca == "ts":
            x: Any = _ts_array(a.data) if a.kind == "column" else pa.scalar(ts_ns(a.data), pa.int64())
            y: Any = _ts_array(b.data) if b.kind == "column" else pa.scalar(ts_ns(b.data), pa.int64())
        elif ca == "num" and (t := _compare_type(_num_dtype(a), _num_dtype(b))) is not None:
            x, y = _as_array(a, t), _as_array(b, t)
        else:
            x = a.data if a.kind != "scalar" else _wide(_py_scalar(a.data), b)
            y = b.data if b.kind != "scalar" else _wide(_py_scalar(b.data), a)
        out = getattr(pc, _CMP[op])(x, y)
        return Val("bitset", _present(out.fill_null(op == "!="), a, b), text)

    def _arith(self, op: str, a: Val, b: Val) -> Val:
        fn, name = _ARITH[op]
        shifted = self._shift_time(op, a, b)
        if shifted is not None:
            return shifted
        # as in ArcticDB, timestamp columns take part in arithmetic as int64 nanoseconds (NaT
        # as numpy's int64 view of it, the smallest int64)
        if a.kind == "column" and category(a.data.type) == "ts":
            a = Val("column", _ts_array(a.data).fill_null(_NAT), a.text, a.absent)
        if b.kind == "column" and category(b.data.type) == "ts":
            b = Val("column", _ts_array(b.data).fill_null(_NAT), b.text, b.absent)
        if self._operand_cat(a) != "num" or self._operand_cat(b) != "num" or a.kind == "bitset" or b.kind == "bitset":
            raise UserInputException(
                f"E_INVALID_USER_ARGUMENT Non-numeric operand provided to binary operation: "
                f"{a.text} ({_td(a)}) {name} {b.text} ({_td(b)})"
            )
        if op == "**":
            dt = pa.from_numpy_dtype(self._pow_dtype(a, b))
        else:
            dt = pa.from_numpy_dtype(_arith_dtype(op, _num_dtype(a), _num_dtype(b)))
        text = f"({a.text} {name} {b.text})"
        if a.kind == b.kind == "scalar":
            return Val("scalar", getattr(pc, fn)(_as_array(a, dt), _as_array(b, dt)).as_py(), text)
        return Val("column", getattr(pc, fn)(_as_array(a, dt), _as_array(b, dt)), text, _either(a.absent, b.absent))

    def _shift_time(self, op: str, a: Val, b: Val) -> Val | None:
        """``timestamp +/- duration`` and ``duration + timestamp``: a timestamp column."""
        ca, cb = self._operand_cat(a), self._operand_cat(b)
        if not ((ca == "ts" and cb == "dur" and op in "+-") or (ca == "dur" and cb == "ts" and op == "+")):
            return None
        if a.kind == b.kind == "scalar":
            return None
        ts, dur = (a, b) if ca == "ts" else (b, a)
        x = _ts_array(ts.data) if ts.kind == "column" else pa.scalar(ts_ns(ts.data), pa.int64())
        if dur.kind == "column":
            y: Any = dur.data.cast(pa.duration("ns")).cast(pa.int64())
        else:
            y = pa.scalar(int(pd.Timedelta(dur.data).value), pa.int64())
        out = (pc.subtract if op == "-" else pc.add)(x, y).cast(pa.timestamp("ns"))
        return Val("column", out, f"({a.text} {_ARITH[op][1]} {b.text})", _either(a.absent, b.absent))

    @staticmethod
    def _pow_dtype(a: Val, b: Val) -> np.dtype[Any]:
        """ArcticDB's result types of ``**``: an integer column to an integer power stays a
        64-bit integer (unsigned for unsigned columns); anything else is float64; a floating
        point exponent is refused."""
        ta, tb = _num_dtype(a), _num_dtype(b)
        if tb.kind == "f":
            raise UserInputException(
                f"E_INVALID_USER_ARGUMENT POW operator does not support floating point exponents, got {type_name(pa.from_numpy_dtype(tb))}")
        if a.kind == "column" and b.kind == "scalar" and ta.kind in "iu":
            return np.dtype("uint64" if ta.kind == "u" else "int64")
        return np.dtype("float64")

    def _unary(self, op: str, a: Val) -> Val:
        name = op.upper()
        if self._operand_cat(a) != "num" or a.kind == "bitset":
            raise UserInputException(f"E_INVALID_USER_ARGUMENT Cannot perform unary operation {name}({a.text}) ({_td(a)})")
        if a.kind == "scalar":
            return Val("scalar", abs(a.data) if op == "abs" else -a.data, f"{name}({a.text})")
        dt = _num_dtype(a)
        data = a.data
        if (op == "neg" and dt.kind == "u") or (dt.kind == "i" and dt.itemsize < 8):
            # into the next wider signed type (as ArcticDB): -int8(-128) is 128, not -128 again;
            # a uint64 beyond int64 wraps as ArcticDB's (two's complement)
            data = data.cast(pa.from_numpy_dtype(np.dtype(f"int{min(64, dt.itemsize * 16)}")), safe=False)
        return Val("column", pc.abs(data) if op == "abs" else pc.negate(data), f"{name}({a.text})", a.absent)

    def _isin(self, op: str, a: Val, values: tuple[Any, ...]) -> Val:
        name = "ISIN" if op == "isin" else "ISNOTIN"
        if a.kind != "column":
            raise UserInputException(f"E_INVALID_USER_ARGUMENT {name} needs a column, got {a.text}")
        untyped = [v for v in values if scalar_category(v) == "other" and not isinstance(v, bytes)]
        if untyped:
            # ArcticDB's set of values is a numpy array, which holds None / NA (or any value of no
            # numpy type) only as objects: refused as an internal error, whatever the column
            v = untyped[0]
            hint = "; look for missing values with isna() / notna()" if v is None or v is pd.NA else ""
            raise InternalException(
                f"E_ASSERTION_FAILURE {name} of {a.text}: a set of values cannot hold {v!r} (of type "
                f"{type(v).__name__}){hint}")
        cat = category(a.data.type)
        if cat == "str":
            # as in ArcticDB, NaN beside strings is ignored (ArcticDB's set holds it as the text
            # "nan"; NaN alone is refused as a set of numbers), and bytes are strings: those the
            # builder could not decode as UTF-8 are in the set but equal no stored string
            values = tuple(v for v in values if not _is_nan(v)) or values
            cats = {"str" if isinstance(v, bytes) else scalar_category(v) for v in values}
        else:
            cats = {scalar_category(v) for v in values}
        if cat in ("num", "ts") and len(cats | {cat}) > 1 and cats <= {"num", "ts"}:
            # as ArcticDB: timestamps among numbers are their int64 nanoseconds
            values = tuple(ts_ns(v) if scalar_category(v) == "ts" else v for v in values)
            a, cat, cats = _as_ns(a), "num", {"num"}
        if cat != "null" and cats - {cat}:
            kinds = ", ".join(sorted(cats - {cat}))
            raise UserInputException(
                f"E_INVALID_USER_ARGUMENT Cannot check membership '{name}' of {a.text} ({_td(a)}) in set of values of "
                f"kind {kinds}"
            )
        data = a.data
        if not values or cat == "null":
            mask = self._const(False)
        else:
            if cat == "ts":
                data = _ts_array(data)
                vs = pa.array([ts_ns(v) for v in values], pa.int64())
            elif cat == "num":
                pyvals = [_py_scalar(v) for v in values]
                if pa.types.is_integer(data.type) and all(isinstance(v, int) for v in pyvals):
                    if data.type == pa.uint64():
                        vs = pa.array([v for v in pyvals if 0 <= v < 2**64], pa.uint64())
                    else:
                        data = data.cast(pa.int64())
                        vs = pa.array([v for v in pyvals if -(2**63) <= v < 2**63], pa.int64())
                else:  # (+ 0.0: -0.0 and 0.0 are equal, and Arrow's sets hash their bits)
                    data = pc.add(data.cast(pa.float64(), safe=False), 0.0)
                    # NaN equals nothing, in a set too (ArcticDB): isin never matches it
                    vs = pa.array([float(v) + 0.0 for v in pyvals if float(v) == float(v)], pa.float64())
            else:
                vs = pa.array([_py_scalar(v) for v in values if not isinstance(v, bytes)], data.type)
            mask = pc.is_in(data, value_set=vs).fill_null(False)
        return Val("bitset", _present(mask if op == "isin" else pc.invert(mask), a), f"{name}({a.text})")

    def _const(self, value: bool) -> pa.Array:
        return pa.array(np.full(self.table.num_rows, value, dtype=bool))

    def _where(self, c: Val, a: Val, b: Val) -> Val:
        cond = _bool_of(c, "condition", "TERNARY")
        ca, cb = self._operand_cat(a), self._operand_cat(b)
        text = f"WHERE({c.text}, {a.text}, {b.text})"
        if ca != cb:
            raise UserInputException(
                f"E_INVALID_USER_ARGUMENT Invalid ternary operands {a.text} ({_td(a)}) and {b.text} ({_td(b)})"
            )
        if ca == "num":
            # as ArcticDB: floats against floats keep the columns' width (a float value takes
            # it), a float against an integer is float64, integers promote as numpy promotes
            # (a value as its smallest type: 0 is uint8, so int8 and 0 make int16)
            da, db = _num_dtype(a), _num_dtype(b)
            if da.kind == db.kind == "f":
                widths = [d.itemsize for d, v in ((da, a), (db, b)) if v.kind == "column"]
                dt = pa.float32() if widths and max(widths) == 4 else pa.float64()
            elif da.kind == "f" or db.kind == "f":
                dt = pa.float64()
            else:
                dt = pa.from_numpy_dtype(np.promote_types(da, db))
        elif ca == "str":
            dt = pa.string()
        elif ca == "bool":
            dt = pa.bool_()
        else:
            ta = a.data.type if a.kind == "column" else None
            tb = b.data.type if b.kind == "column" else None
            dt = ta or tb or pa.timestamp("ns")
        xa = _as_array(a if a.kind != "bitset" else Val("column", a.data, a.text), dt)
        xb = _as_array(b if b.kind != "bitset" else Val("column", b.data, b.text), dt)
        out = pc.if_else(cond, xa, xb)
        if isinstance(out, pa.Scalar):
            out = pa.array([out.as_py()] * len(self.table), dt)
        absent = None
        if a.absent is not None or b.absent is not None:
            no = pa.scalar(False)
            absent = pc.if_else(cond, a.absent if a.absent is not None else no,
                                b.absent if b.absent is not None else no)
        return Val("column", out, text, absent)


def _py_scalar(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v


def _raw_bytes(v: Val) -> bool:
    """Whether ``v`` is a bytes literal (one the builder could not decode as UTF-8)."""
    return v.kind == "scalar" and isinstance(v.data, bytes)


def _is_nan(v: Any) -> bool:
    return isinstance(v, float | np.floating) and v != v
