"""Differential test of column dtypes: seeded random sequences on ArcticDB and arcticlite.

The other differential tests use int64, float64, string, bool and uint16 columns. This one
replays the same kind of sequences on the other column types a user stores: float32 (with NaN),
int8, int32, uint64 (half of the values from 2**63 up), datetime64[ns] (with NaT) and Unicode
strings (accents, CJK, emoji, None), on a naive, tz-aware or row-count index, under static and
dynamic schema. Operations: writes, appends and updates (with and without ``upsert``) whose
frames sometimes change a column's dtype (int8 -> int64, int8 -> float64, float32 -> float64;
refused under static schema, where the error classes are compared) or lack columns; reads with
``columns``, ``date_range`` and ``row_range``; ``head`` / ``tail``; ``get_description`` (column
names and dtypes); ``read_batch`` with and without a query; and ``QueryBuilder`` reads: filters
(``==``, ``!=``, ``<``, ``>=``, ``isin``, ``isnotin``, ``isnull``, ``notnull``, column against
column, timestamps against numbers), projections mixing dtypes (``int8 + uint64``,
``float32 * int32``, negation, ``abs``, ``where(cond, a, b)`` with columns and literals),
group-bys on a string and an int32 key with ``sum`` / ``mean`` / ``min`` / ``max`` / ``count``,
and resamples.

After every operation both outcomes are compared as in ``test_differential.py`` (version
numbers, error classes, frames with ``assert_frame_equal``, descriptions with their dtypes).
``read_batch`` items that fail are compared by symbol only where ArcticDB gives no error
category (as in ``test_differential_batches.py``: arcticlite fills it in). Left out, because
ArcticDB's own answer is arbitrary or a documented difference (docs/compatibility.md): the row
order of a group-by (results are compared after ``sort_index``); NaT as a group key and datetime
columns aggregated by a group-by (the datetime column is never a key nor a group-by aggregate,
only resampled); group-bys on the int8 column (its type changes under dynamic schema) and on the
datetime column (naive labels under a tz-aware index); a uint64 column that becomes float64
(segments of both types are queried each in its own type); ``isin`` lists ArcticDB refuses
while the query is built (bools, int64 values mixed with values from 2**63, values beyond
uint64, ints mixed with floats); Python float literals that float32 holds only approximately,
and float literals in arithmetic on the float32 column (ArcticDB computes in float32); ``where``
on datetime columns; the ``count`` of a string column in a group-by; 0-row tz-aware frames.
Also left out under dynamic schema, where the int8 column is stored as int8, int64 or float64
segment by segment and ArcticDB evaluates each segment in its stored type: that column combined
with the uint64 one in arithmetic (``int64 + uint64`` wraps to a negative int64 in its int64
segments only), and its group-by ``min`` / ``max`` (ArcticDB 6.28.2 gives NaN for a group whose
first value is a NaN of a float64 segment followed by an int segment; in the other order, the
right answer). Staging is left out entirely: ArcticDB 6.28.2 crashes (a segmentation fault)
reading a symbol after a failed ``sort_and_finalize_staged_data`` in append mode, and
``test_differential_reads.py`` covers staging. Likewise 0-row appends under static schema carry
the symbol's columns: a 0-row append of other columns followed by a string filter crashes
ArcticDB 6.28.2.

To reproduce one seed::

    .venv/bin/python -m pytest "tests/compat/test_differential_dtypes.py::test_differential_dtypes[lmdb-seed_17]"

``ARCTICLITE_DIFF_DTYPE_SEEDS`` (default 40) sets how many seeds run per backend; 200 pass.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.compat.test_differential import Op, Raised, Returned, built, check_seed
from tests.compat.test_differential_batches import _uncategorised

N_SEEDS = int(os.environ.get("ARCTICLITE_DIFF_DTYPE_SEEDS", "40"))
N_OPS = 40
SYMBOLS = ("x", "y")
TZ = "Asia/Tokyo"
UNICODE = ("é", "日本", "😀", "Zürich", "ß", "中文字", "x😀y", "naïve")
TS = pd.Timestamp("2024-01-02")

#: The columns of every seed: name -> stored type. ``k`` and ``f`` change type in some frames.
COLUMNS = {"f": "f32", "k": "i8", "n": "i32", "u": "u64", "t": "dt", "s": "str"}
#: The types a frame may give a column instead (int -> wider int, int -> float, float32 -> float64).
CHANGES = {"k": ("i64", "f64"), "f": ("f64",)}
NUMERIC = ("f", "k", "n", "u")

pytestmark = pytest.mark.filterwarnings("ignore:Passing a BlockManager:DeprecationWarning")


def _column(kind: str, r: np.random.Generator, n: int) -> Any:
    if kind in ("f32", "f64"):
        v = r.integers(-6, 6, n).astype(np.float32 if kind == "f32" else np.float64) / 2
        v[r.random(n) < 0.2] = np.nan
        return v
    if kind == "i8":
        wide = r.random() < 0.3  # the whole int8 range now and then (-128 included)
        return r.integers(-128, 128, n).astype(np.int8) if wide else r.integers(-5, 5, n).astype(np.int8)
    if kind == "i64":
        return r.integers(-300, 300, n).astype(np.int64)
    if kind == "i32":
        return r.integers(-5, 5, n).astype(np.int32)
    if kind == "u64":
        small = r.integers(0, 9, n).astype(np.uint64)
        return np.where(r.random(n) < 0.5, small + np.uint64(2**63), small).astype(np.uint64)
    if kind == "dt":
        t = np.datetime64("2024-01-01", "ns") + r.integers(0, 5, n) * np.timedelta64(1, "D")
        t[r.random(n) < 0.2] = np.datetime64("NaT")
        return t
    if kind == "str":
        return [None if x < 0.15 else UNICODE[int(x * 100) % len(UNICODE)] for x in r.random(n)]
    raise AssertionError(kind)


@dataclass(frozen=True)
class Frame:
    """``rows`` hourly rows (or row numbers) from ``start``; ``cols`` as (name, type); values from ``seed``."""

    kind: str  # "dt", "tz" or "range"
    start: int
    rows: int
    seed: int
    cols: tuple[tuple[str, str], ...]

    def build(self, mod: Any = None) -> pd.DataFrame:  # the same frame for either engine
        r = np.random.default_rng(self.seed)
        if self.kind == "range":
            index: pd.Index = pd.RangeIndex(self.start, self.start + self.rows)
        else:
            base = pd.Timestamp("2024-01-01", tz=TZ if self.kind == "tz" else None)
            index = pd.date_range(base + pd.Timedelta(hours=self.start), periods=self.rows, freq="h")
        return pd.DataFrame({c: _column(t, r, self.rows) for c, t in self.cols}, index=index)

    def __repr__(self) -> str:
        cols = " ".join(f"{c}:{t}" for c, t in self.cols)
        return f"Frame({self.kind!r}, start={self.start}, rows={self.rows}, seed={self.seed}, cols={cols!r})"


@dataclass(frozen=True)
class Query:
    """A QueryBuilder described by a recipe (``kind`` and plain arguments), built for either engine."""

    kind: str
    args: tuple[Any, ...]

    def build(self, mod: Any) -> Any:
        q = mod.QueryBuilder()
        a = self.args

        def val(x: Any) -> Any:  # a column name (a str naming a column) or a literal
            return q[x] if isinstance(x, str) and x in COLUMNS else x

        if self.kind == "filter":
            col, op, v = a
            c = q[col]
            expr = {
                "==": lambda: c == v, "!=": lambda: c != v, "<": lambda: c < v, ">=": lambda: c >= v,
                "isin": lambda: c.isin(list(v)), "isnotin": lambda: c.isnotin(list(v)),
                "isnull": lambda: c.isnull(), "notnull": lambda: c.notnull(),
            }[op]()
            return q[expr]
        if self.kind == "cmp":
            x, op, y = a
            expr = {"<": lambda: q[x] < q[y], "==": lambda: q[x] == q[y], "!=": lambda: q[x] != q[y]}[op]()
            return q[expr]
        if self.kind == "apply":
            x, op, y = a
            ex, ey = val(x), val(y)
            expr = {"+": lambda: ex + ey, "-": lambda: ex - ey, "*": lambda: ex * ey, "/": lambda: ex / ey,
                    "neg": lambda: -ex, "abs": lambda: abs(ex)}[op]()
            q = q.apply("new", expr)
            return q[q["new"] != 0] if op in ("+", "*") and y == "n" else q
        if self.kind == "where":
            c, x, y = a
            cond = q[c].isnull() if c == "s" else q[c] > 0
            return q.apply("new", mod.where(cond, val(x), val(y)))
        if self.kind == "groupby":
            by, col, agg, filtered = a
            if filtered:
                q = q[q[col].notnull()]
            return q.groupby(by).agg({col: agg})
        if self.kind == "groupby2":
            by, x, y = a
            return q.groupby(by).agg({"mean": (x, "mean"), "max": (y, "max"), "c": (y, "count")})
        if self.kind == "resample":
            rule, cols, agg = a
            return q.resample(rule).agg({c: agg for c in cols})
        if self.kind == "head":
            col, count = a
            return q[q[col].notnull()].head(count)
        raise AssertionError(self.kind)

    def __repr__(self) -> str:
        return f"Query({self.kind!r}, {self.args!r})"


_LITERALS: dict[str, tuple[Any, ...]] = {
    "f": (0.5, -1.0, 0, 1, np.float32(0.5), 2.25, np.float64(-2.5)),
    "k": (0, 2, -1, np.int8(2), 1.5, 100, 300, -200),
    "n": (0, 2, -3, 1.5, 2**40, np.int32(-1)),
    "u": (2, 2**63, 2**63 + 3, np.uint64(2**63 + 1), -1, 0, 2**64 - 1),
    "t": (TS, pd.Timestamp("2024-01-03"), np.datetime64("2024-01-04", "ns"), TS.value, 5),
    "s": (*UNICODE, "", "nope"),
}
_ISIN: dict[str, tuple[tuple[Any, ...], ...]] = {
    "f": ((0.5, -1.0), (1.0,), (), (np.float32(1.5), np.float32(-0.5))),
    "k": ((1, 2), (-1, 300), (), (np.int8(-3), np.int8(4))),
    "n": ((1, 2), (-3, 4, 2**40), ()),
    "u": ((np.uint64(2**63), np.uint64(2)), (2**63 + 1, 2**63 + 4), (1, 2), (2**64 - 1,), ()),
    "t": ((TS,), (TS, pd.Timestamp("2024-01-04")), ()),
    "s": (("é", "日本"), ("😀", "x😀y", "ß"), (), ("nope",)),
}
#: Timestamps against numbers: ArcticDB compares a timestamp as int64 nanoseconds.
_TS_VS_NUMBERS = (("n", "<", TS), ("u", "==", TS), ("k", "!=", TS), ("f", "<", TS), ("t", ">=", 5),
                  ("t", "==", TS.value), ("u", "<", TS))


def _query(rng: random.Random, kind: str, dynamic: bool) -> Query:
    k = rng.random()
    if k < 0.4:
        col = rng.choice(list(COLUMNS))
        op = rng.choice(["==", "!=", "<", ">=", "isin", "isnotin", "isnull", "notnull"])
        if col == "s" and op in ("<", ">="):
            op = rng.choice(["==", "!="])
        if op in ("isin", "isnotin"):
            return Query("filter", (col, op, rng.choice(_ISIN[col])))
        if op in ("isnull", "notnull"):
            return Query("filter", (col, op, None))
        return Query("filter", (col, op, rng.choice(_LITERALS[col])))
    if k < 0.46:
        return Query("filter", rng.choice(_TS_VS_NUMBERS))
    if k < 0.52:
        x, y = rng.sample(NUMERIC, 2)
        return Query("cmp", (x, rng.choice(["<", "==", "!="]), y))
    if k < 0.68:
        x = rng.choice(NUMERIC)
        op = rng.choice(["+", "-", "*", "/", "neg", "abs"])
        if op in ("neg", "abs"):
            return Query("apply", (x, op, None))
        # int literals only: a float literal makes ArcticDB compute float32 columns in float32
        y = rng.choice([*NUMERIC, 2, np.int8(3), -1])
        if (x, op) == ("k", "+") and rng.random() < 0.5:
            y = "u"  # int8 + uint64
        if (x, op) == ("f", "*") and rng.random() < 0.5:
            y = "n"  # float32 * int32
        if dynamic and {x, y} == {"k", "u"}:
            y = "n"  # ArcticDB computes int64 + uint64 in its int64 segments only (wraps there)
        return Query("apply", (x, op, y))
    if k < 0.74:
        c = rng.choice(["f", "k", "n", "s"])
        x = rng.choice([*NUMERIC, 2, 0, np.int8(-1)])
        y = rng.choice([*NUMERIC, 0, -1, np.float32(1.5)])
        return Query("where", (c, x, y))
    if k < 0.78:
        return Query("head", (rng.choice(list(COLUMNS)), rng.choice([1, 3, -2])))
    if k < 0.92 or kind == "range":
        by = rng.choice(["s", "n"])
        cols = [c for c in NUMERIC if c != by]
        if rng.random() < 0.2:
            x, y = rng.sample([c for c in cols if c != "k"] if dynamic else cols, 2)
            return Query("groupby2", (by, x, y))
        agg = rng.choice(["sum", "mean", "min", "max", "count"])
        col = rng.choice(cols)
        if dynamic and col == "k" and agg in ("min", "max"):
            agg = "sum"  # ArcticDB: NaN if a group's NaN comes in a float segment before an int one
        return Query("groupby", (by, col, agg, rng.random() < 0.2))
    rule = rng.choice(["2h", "5h", "1D", "30min"])
    col = rng.choice([*NUMERIC, "t", "s"])
    if col == "s":
        agg = rng.choice(["first", "last", "count"])
    elif col == "t":
        agg = rng.choice(["min", "max", "first", "last", "count"])
    else:
        agg = rng.choice(["sum", "mean", "min", "max", "count", "first", "last"])
    cols = (col,) if agg in ("first", "last", "count") or rng.random() < 0.5 else (col, rng.choice(NUMERIC))
    return Query("resample", (rule, tuple(dict.fromkeys(cols)), agg))


def _cols(rng: random.Random, order: tuple[str, ...], dynamic: bool, allow_subset: bool = True) -> tuple[tuple[str, str], ...]:
    """The columns of a new frame: usually the seed's, sometimes one of another type or fewer."""
    types = {c: COLUMNS[c] for c in order}
    r = rng.random()
    change, subset = (0.3, 0.45) if dynamic else (0.08, 0.12)
    if r < change:
        col = rng.choice(list(CHANGES))
        types[col] = rng.choice(CHANGES[col])
    elif r < subset and allow_subset:
        keep = set(rng.sample(order, rng.randint(2, len(order) - 1)))
        types = {c: t for c, t in types.items() if c in keep}
    return tuple(types.items())


def generate(seed: int, n_ops: int = N_OPS) -> tuple[bool, str, list[Op]]:
    """``(dynamic_schema, index kind, operations)`` of ``seed``."""
    rng = random.Random(seed)
    dynamic = rng.random() < 0.5
    kind = rng.choice(["dt", "dt", "tz", "range"])
    order = tuple(rng.sample(list(COLUMNS), len(COLUMNS)))
    ends: dict[str, int] = {}
    ops: list[Op] = []
    names = ["write", "append", "update", "read", "read_query", "read_columns", "read_dates",
             "read_rows", "head", "tail", "describe", "batch"]
    weights = [5, 9, 5, 3, 20, 3, 3, 2, 2, 2, 3, 2]
    for i in range(n_ops):
        op = "write" if i < len(SYMBOLS) else rng.choices(names, weights)[0]  # begin with data
        if op == "update" and kind == "range":
            op = "append"  # a row-count index cannot be updated: both refuse, nothing to compare
        sym = SYMBOLS[i] if i < len(SYMBOLS) else rng.choice(SYMBOLS)
        n = rng.randint(1 if kind == "tz" else 0, 10)  # a 0-row tz-aware frame keeps its zone here
        end = ends.get(sym, 0)
        if op == "write":
            start = rng.randint(0, 5)
            ops.append(Op("write", (sym, Frame(kind, start, n, rng.randrange(10**6), _cols(rng, order, dynamic)))))
            ends[sym] = start + n
        elif op == "append":
            # a gap in a row-count index is refused: rarely there
            start = end + rng.choice([0, 0, 0, 0, 0, 1] if kind == "range" else [0, 0, 0, 1, 3])
            # a 0-row append of other columns under static schema makes ArcticDB crash later
            cols = _cols(rng, order, dynamic, allow_subset=bool(n) or dynamic)
            if not n and not dynamic:
                cols = tuple((c, COLUMNS[c]) for c in order)
            ops.append(Op("append", (sym, Frame(kind, start, n, rng.randrange(10**6), cols))))
            if kind != "range" or start == end:
                ends[sym] = start + n
        elif op == "update":
            start = rng.randint(0, max(end, 1))
            kw: tuple[tuple[str, Any], ...] = (("upsert", True),) if rng.random() < 0.3 else ()
            cols = _cols(rng, order, dynamic)
            ops.append(Op("update", (sym, Frame(kind, start, max(n, 1), rng.randrange(10**6), cols)), kw))
            ends[sym] = max(end, start + max(n, 1))
        elif op == "read":
            ops.append(Op("read", (sym,)))
        elif op == "read_query":
            ops.append(Op("read", (sym,), (("query_builder", _query(rng, kind, dynamic)),)))
        elif op == "read_columns":
            cols = rng.sample(list(COLUMNS), rng.randint(1, 3))
            ops.append(Op("read", (sym,), (("columns", cols),)))
        elif op == "read_dates":
            if kind == "range":
                continue
            base = pd.Timestamp("2024-01-01", tz=TZ if kind == "tz" else None)
            lo = base + pd.Timedelta(hours=rng.randint(-2, 10))
            hi = rng.choice([None, base + pd.Timedelta(hours=rng.randint(0, 14))])
            ops.append(Op("read", (sym,), (("date_range", (lo, hi)),)))
        elif op == "read_rows":
            ops.append(Op("read", (sym,), (("row_range", (rng.randint(-5, 8), rng.randint(-3, 14))),)))
        elif op in ("head", "tail"):
            columns = rng.choice([None, [rng.choice(list(COLUMNS))], ["s", "u"]])
            ops.append(Op(op, (sym,), (("n", rng.choice([1, 3, -2, 20])), ("columns", columns))))
        elif op == "describe":
            ops.append(Op("get_description", (sym,)))
        elif op == "batch":
            query = _query(rng, kind, dynamic) if rng.random() < 0.4 else None
            ops.append(Op("read_batch", ([*SYMBOLS, "missing"],), (("query_builder", query),)))
    return dynamic, kind, ops


def _sorted_groups(op: Op, data: Any) -> Any:
    query = dict(op.kwargs).get("query_builder")
    if query is not None and query.kind.startswith("groupby") and isinstance(data, pd.DataFrame):
        return data.sort_index()  # ArcticDB's group order comes from its hash partitions
    return data


def _normalise(op: Op, result: Any) -> Any:
    if op.name in ("write", "append", "update"):
        return ("version", result.version)
    if op.name == "get_description":
        return ("description", result.row_count, tuple(result.date_range),
                tuple((c.name, str(c.dtype)) for c in result.columns),
                tuple((i.name, str(i.dtype)) for i in result.index))
    if op.name == "read_batch":
        return [("error", r.symbol, None if r.error_category is None else str(r.error_category))
                if not hasattr(r, "data") else ("item", r.symbol, r.version, _sorted_groups(op, r.data))
                for r in result]
    return ("item", result.version, result.metadata, _sorted_groups(op, result.data))


def run_op(lib: Any, mod: Any, op: Op) -> Raised | Returned:
    try:
        args = [built(a, mod) for a in op.args]
        kwargs = {k: built(v, mod) for k, v in op.kwargs}
        return Returned(_normalise(op, getattr(lib, op.name)(*args, **kwargs)))
    except Exception as exc:  # noqa: BLE001 - every error is an outcome to compare
        return Raised(exc)


def _adjust(op: Op, expected: Raised | Returned, actual: Raised | Returned) -> Raised | Returned:
    if op.name == "read_batch" and isinstance(expected, Returned) and isinstance(actual, Returned):
        # ArcticDB leaves the category of a query's DataError None; only its symbol is compared then
        return Returned(_uncategorised(expected.value, actual.value))
    return actual


def test_generator_is_deterministic() -> None:
    assert generate(5) == generate(5)
    assert generate(5) != generate(6)


@pytest.mark.parametrize("seed", [pytest.param(s, id=f"seed_{s}") for s in range(N_SEEDS)])
def test_differential_dtypes(seed: int, engines: Any) -> None:
    pytest.importorskip("arcticdb")
    dynamic, kind, ops = generate(seed)
    check_seed(engines, "test_differential_dtypes", seed, ops, run_op, dynamic=dynamic, kind=kind, adjust=_adjust)
