"""Plan and run a ``QueryBuilder`` over a symbol's stored Arrow table.

:func:`plan_query` decides what to fetch: the columns the query needs (plus the index),
a row range from leading ``head`` / ``tail`` / ``row_range`` clauses, and an index range
from leading ``date_range`` clauses and conjunctive comparisons on a sorted timestamp
index. These only narrow what is read; :func:`run_query` still applies every clause it
is given, so results are exact. :func:`run_query` works on ``(table, meta)`` pairs:
filters, projections and slices keep the symbol's layout, while ``groupby`` /
``resample`` build a new frame (indexed by the group key / bucket start).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from arcticlite.exceptions import InternalException, SchemaException, UserInputException
from arcticlite.normalize import SPARSE_KEY as norm_sparse_key
from arcticlite.normalize import nan_rows_name
from arcticlite.query._agg_order import GROUPBY_OPS, RESAMPLE_OPS, parse_aggregations
from arcticlite.query._aggregate import aggregate, resample_labels
from arcticlite.query._builder import ExpressionNode, QueryBuilder
from arcticlite.query._expr import (
    Evaluator,
    absent_name,
    absent_of,
    is_absent_name,
    scalar_category,
    scalar_type,
    ts_ns,
)

_ROWWISE = ("filter", "project", "date_range")
_SLICES = ("head", "tail", "row_range")
_I64 = (int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max))


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """What to read for a query, and the clauses left to run on it.

    Attributes
    ----------
    columns : list or None
        User column names to fetch (``None``: all).
    row_range : tuple of int or None
        Absolute half-open rows to fetch.
    index_range : tuple of int or None
        Closed int64-ns bounds of a sorted timestamp index to fetch.
    clauses : list
        Clauses :func:`run_query` must still apply.
    output_columns : list or None
        The user's ``columns=`` selection to apply at the end.
    value_filters : list of tuple
        ``(stored column, op, value)`` conjuncts every output row satisfies (ops ``==``, ``!=``,
        ``<``, ``<=``, ``>``, ``>=``, ``in``, ``isnull``, ``notnull``, and ``("", "or",
        [alternatives])``), in the form ``arcticlite.format.decode(filter=)`` takes: a reader
        may skip pages or segments that cannot match. Rows it keeps are filtered exactly
        afterwards.
    code_keys : tuple of str
        Stored names of string columns the query first groups by (and uses for nothing
        else): a read may deliver them dictionary-encoded (each segment's codes into its
        dictionary), and the group-by then groups on the codes instead of hashing strings.
    """

    columns: list[Any] | None
    row_range: tuple[int, int] | None
    index_range: tuple[int, int] | None
    clauses: list[tuple[str, Any]]
    output_columns: list[Any] | None
    value_filters: tuple[tuple[str, str, Any], ...] = ()
    code_keys: tuple[str, ...] = ()
    index_unused: bool = False


def _clauses(query: Any) -> list[tuple[str, Any]]:
    if not isinstance(query, QueryBuilder):
        raise UserInputException(
            f"E_INVALID_USER_ARGUMENT query_builder must be a QueryBuilder, got {type(query).__name__}"
        )
    return list(query.clauses)


def _aggregates(clauses: list[tuple[str, Any]]) -> bool:
    return any(n == "aggregate" for n, _ in clauses)


def _names(node: Any, out: list[Any]) -> None:
    if isinstance(node, ExpressionNode):
        if node.op == "col":
            out.append(node.args[0])
        else:
            for a in node.args:
                _names(a, out)


def referenced_columns(clauses: list[tuple[str, Any]]) -> list[Any]:
    """Every column name any clause mentions (order of first mention)."""
    out: list[Any] = []
    for name, arg in clauses:
        if name == "filter":
            _names(arg, out)
        elif name == "project":
            _names(arg[1], out)
        elif name == "groupby":
            out.append(arg)
        elif name == "aggregate":
            for key, spec in arg.items():
                out.append(spec[0] if isinstance(spec, tuple | list) else key)
    return list(dict.fromkeys(out))


def _iloc(a: int | None, b: int | None, n: int) -> tuple[int, int]:
    a = 0 if a is None else (max(0, n + a) if a < 0 else a)
    b = n if b is None else (max(0, n + b) if b < 0 else b)
    a, b = min(a, n), min(b, n)
    return a, max(a, b)


def slice_window(name: str, arg: Any, n: int) -> tuple[int, int]:
    """The half-open rows a ``head`` / ``tail`` / ``row_range`` clause keeps of ``n`` rows."""
    if name == "head":
        return (0, min(arg, n)) if arg >= 0 else (0, max(0, n + arg))
    if name == "tail":
        return (n - min(arg, n), n) if arg >= 0 else (min(n, -arg), n)
    return _iloc(arg[0], arg[1], n)


def _bound(v: Any, low: bool) -> int:
    if v is None:
        return _I64[0] if low else _I64[1]
    return ts_ns(v)


def _index_bounds(node: Any, is_index: Callable[[str], bool], lo: int, hi: int) -> tuple[int, int]:
    """Narrow ``[lo, hi]`` by the conjuncts of ``node`` that compare the index with a value."""
    if not isinstance(node, ExpressionNode):
        return lo, hi
    if node.op == "&":
        lo, hi = _index_bounds(node.args[0], is_index, lo, hi)
        return _index_bounds(node.args[1], is_index, lo, hi)
    if node.op not in ("==", "<", "<=", ">", ">="):
        return lo, hi
    a, b = node.args
    op = node.op
    if isinstance(b, ExpressionNode) and not isinstance(a, ExpressionNode):
        a, b = b, a
        op = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}[op]
    if not (isinstance(a, ExpressionNode) and a.op == "col" and is_index(a.args[0])):
        return lo, hi
    if isinstance(b, ExpressionNode) or scalar_category(b) != "ts":
        return lo, hi
    v = ts_ns(b)
    if op in ("==", ">="):
        lo = max(lo, v)
    if op in ("==", "<="):
        hi = min(hi, v)
    if op == ">":
        lo = max(lo, v + 1)
    if op == "<":
        hi = min(hi, v - 1)
    return lo, hi


def _value_filters(node: Any, stored_of: Callable[[Any], str | None], out: list[tuple[str, str, Any]]) -> None:
    """Collect the conjuncts of ``node`` a reader can judge by statistics: ``col op number``
    (``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``), ``col == str`` / ``col != str``,
    ``col.isin(...)``, ``col.isna()`` / ``col.notna()`` (``isnull`` / ``notnull``), and ``a | b``
    of such conjunctions (an ``("", "or", [terms of a, terms of b])`` term)."""
    if not isinstance(node, ExpressionNode):
        return
    if node.op == "&":
        _value_filters(node.args[0], stored_of, out)
        _value_filters(node.args[1], stored_of, out)
        return
    if node.op == "|":
        alts: list[list[tuple[str, str, Any]]] = []
        for side in node.args[:2]:
            terms: list[tuple[str, str, Any]] = []
            _value_filters(side, stored_of, terms)
            if not terms:  # an alternative nothing can rule out: the OR cannot prune
                return
            alts.append(terms)
        out.append(("", "or", alts))
        return
    a, b = (node.args + (None, None))[:2]
    if not (isinstance(a, ExpressionNode) and a.op == "col"):
        return
    stored = stored_of(a.args[0])
    if stored is None:
        return
    if node.op in ("isna", "notna"):
        out.append((stored, "isnull" if node.op == "isna" else "notnull", None))
        return
    if node.op == "isin" and b and all(scalar_category(v) in ("num", "str") for v in b):
        if len({scalar_category(v) for v in b}) == 1 and not any(v != v for v in b):
            out.append((stored, "in", list(b)))
        return
    if node.op not in ("==", "!=", "<", "<=", ">", ">=") or isinstance(b, ExpressionNode):
        return
    cat = scalar_category(b)
    if (cat == "num" and b == b) or (cat == "str" and node.op in ("==", "!=")):
        out.append((stored, node.op, b.item() if isinstance(b, np.generic) else b))


def plan_query(query: Any, meta: Any, *, total_rows: int, row_range: tuple[int, int] | None,
               index_range: tuple[int, int] | None, sorted_index: bool,
               columns: list[Any] | None) -> QueryPlan:
    """Plan the read of ``query`` over a symbol described by ``meta`` (a ``NormMeta``).

    ``row_range`` / ``index_range`` are what ``read(row_range=, date_range=)`` asked for
    (already resolved); the plan narrows them. Raises ``UserInputException`` when
    ``columns`` is combined with an aggregation, as ArcticDB does.
    """
    clauses = _clauses(query)
    # as ArcticDB: refused when the resample is the first clause after the date range (a clause
    # between them makes the origin the first row it keeps), unless the range is empty (reversed)
    dated = (index_range is not None and index_range[0] <= index_range[1]) or any(n == "date_range" for n, _ in clauses)
    for k, (name, arg) in enumerate(clauses):
        if name == "resample" and dated and str(arg[4]) in ("start", "end", "start_day", "end_day") \
                and all(n == "date_range" for n, _ in clauses[:k]):
            raise UserInputException(
                'E_INVALID_USER_ARGUMENT Resampling origins ["start", "end", "start_day", "end_day"] are not '
                f"supported in conjunction with date range (origin={arg[4]!r}): use origin='epoch' or a timestamp")
    if any(n == "concat" for n, _ in clauses):
        raise UserInputException("E_INVALID_USER_ARGUMENT concat joins several symbols: use it in "
                                 "read_batch_and_join or arcticlite.concat, not in a single-symbol read")
    aggregating = _aggregates(clauses)
    if aggregating and columns is not None:
        raise UserInputException("E_INVALID_USER_ARGUMENT Cannot combine provided clauses with column selection")
    refs = referenced_columns(clauses)
    if aggregating:
        fetch: list[Any] | None = refs
    elif columns is None:
        fetch = None
    else:
        fetch = list(columns) + [r for r in refs if r not in columns]
    # leading row slices compose into the rows to read (unknown row counts after a date range)
    i = 0
    if index_range is None:
        s, e = row_range if row_range is not None else (0, total_rows)
        while i < len(clauses) and clauses[i][0] in _SLICES:
            a, b = slice_window(clauses[i][0], clauses[i][1], e - s)
            s, e = s + a, s + b
            i += 1
        if i:
            row_range = (s, e)
    # row-wise clauses before any slice or aggregation: index bounds
    if meta.index_kind == "datetime" and sorted_index and meta.index_columns:
        index_names = {n if n is not None else "index" for n in meta.index_names[:1]} | {meta.index_columns[0]}
        data_names = {u for u in meta.user_columns if isinstance(u, str)}
        shadowed = set(data_names)
        lo, hi = index_range if index_range is not None else _I64
        for name, arg in clauses[i:]:
            if name not in _ROWWISE:
                break
            if name == "project":
                shadowed.add(arg[0])
            elif name == "date_range":
                lo, hi = max(lo, _bound(arg[0], True)), min(hi, _bound(arg[1], False))
            else:
                lo, hi = _index_bounds(arg, lambda n: n in index_names and n not in shadowed, lo, hi)
        if (lo, hi) != _I64:
            index_range = (lo, hi)
    # leading filters on data columns: conjuncts a reader may use to skip pages; a projection
    # (apply) does not end them, but its column is no stored column in the filters after it
    data_stored = {u: st for st, u in zip(meta.columns, meta.user_columns, strict=True) if isinstance(u, str)}
    projected: set[Any] = set()

    def stored_of(name: Any) -> str | None:
        return None if name in projected else data_stored.get(name)

    values: list[tuple[str, str, Any]] = []
    for name, arg in clauses[i:]:
        if name == "filter":
            _value_filters(arg, stored_of, values)
        elif name == "project":
            projected.add(arg[0])
        elif name != "date_range":
            break
    code_keys: tuple[str, ...] = ()
    rest = clauses[i:]
    grouping = len(rest) >= 2 and rest[0][0] == "groupby" and rest[1][0] == "aggregate"
    if grouping and isinstance(rest[0][1], str) and rest[0][1] not in referenced_columns(rest[1:]):
        key = data_stored.get(rest[0][1])
        if key is not None and meta.user_columns.count(rest[0][1]) == 1:
            code_keys = (key,)
    # a group-by of data columns builds a new frame: the stored index is never looked at
    index_unused = grouping and all(isinstance(r, str) and r in data_stored for r in referenced_columns(rest[:2]))
    return QueryPlan(columns=fetch, row_range=row_range, index_range=index_range, clauses=rest,
                     output_columns=None if aggregating else columns, value_filters=tuple(values),
                     code_keys=code_keys, index_unused=index_unused)


class _State:
    """The frame between clauses: stored table, its meta, and user name -> stored name."""

    def __init__(self, table: pa.Table, meta: Any) -> None:
        self.table = table
        self.meta = meta
        names: dict[Any, str] = {}
        for stored, user in zip(meta.columns, meta.user_columns, strict=True):
            names.setdefault(user, stored)
        for i, stored in enumerate(meta.index_columns):
            user = meta.index_names[i] if i < len(meta.index_names) else None
            names.setdefault(user if user is not None else "index", stored)
        for stored in table.column_names:
            names.setdefault(stored, stored)
        self.names = names

    def resolve(self, name: Any) -> str | None:
        try:
            return self.names.get(name)
        except TypeError:
            return None

    def evaluator(self, clause: str) -> Evaluator:
        return Evaluator(self.table, self.resolve, clause)


def _filter(st: _State, cond: Any) -> None:
    val = st.evaluator("FilterClause").eval(cond)
    if val.kind == "bitset":
        mask = val.data
    elif val.kind == "column" and pa.types.is_boolean(val.data.type):
        mask = val.data.fill_null(False)
    else:
        raise UserInputException("E_INVALID_USER_ARGUMENT FilterClause AST would produce a column, not a bitset")
    st.table = st.table.filter(mask)


def _project(st: _State, name: str, expr: Any) -> None:
    val = st.evaluator("ProjectClause").eval(expr)
    if val.kind == "bitset":
        raise UserInputException("E_INVALID_USER_ARGUMENT ProjectClause AST would produce a bitset, not a column")
    data = val.data
    if val.kind == "scalar":
        cat = scalar_category(data)
        if cat == "ts":
            data = pa.array(np.full(st.table.num_rows, ts_ns(data), dtype="datetime64[ns]"))
        else:
            data = pa.array([data] * st.table.num_rows if cat == "str" else np.full(st.table.num_rows, data),
                            type=scalar_type(data))
    if val.absent is not None:  # missing where an input is absent: shown as a plain read shows it
        data = pc.if_else(val.absent, _backfill(data.type), data)
    stored = st.resolve(name)
    index_set = set(st.meta.index_columns)
    if stored is not None and stored in st.table.column_names and stored not in index_set:
        st.table = st.table.set_column(st.table.column_names.index(stored), stored, data)
    else:
        stored = name if name not in st.table.column_names else f"{name}__projected"
        st.table = st.table.append_column(stored, data)
        st.names[name] = stored
        if stored != name:  # named like the index: a column of that name beside it, as ArcticDB
            m = st.meta
            st.meta = replace(m, columns=(*m.columns, stored), user_columns=(*m.user_columns, name),
                              column_hints=(*m.column_hints, "") if m.column_hints else ())
    marker = absent_name(stored)
    if marker in st.table.column_names:
        st.table = st.table.drop_columns([marker])
    if val.absent is not None:
        st.table = st.table.append_column(marker, val.absent)


def _backfill(t: pa.DataType) -> pa.Scalar:
    """What a plain read shows for a missing value of type ``t`` (dynamic schema)."""
    if pa.types.is_integer(t):
        return pa.scalar(0, t)
    if pa.types.is_floating(t):
        return pa.scalar(float("nan"), t)
    if pa.types.is_boolean(t):
        return pa.scalar(False)
    return pa.scalar(None, t)


def _index_ns(st: _State, clause: str) -> np.ndarray:
    """The timestamps of the index (of its first level, for a MultiIndex whose first level is
    a DatetimeIndex) as int64 ns."""
    dated = st.meta.index_kind == "datetime" or (st.meta.index_kind == "multi" and st.meta.index_hints[:1] == ("dt",))
    if not dated or not st.meta.index_columns:
        raise SchemaException(f"E_UNSUPPORTED_INDEX_TYPE {clause} can only be applied to timeseries")
    col = st.table.column(st.meta.index_columns[0])
    return np.asarray(col.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)


def _date_range(st: _State, bounds: tuple[Any, Any]) -> None:
    idx = _index_ns(st, "DateRangeClause")
    lo, hi = _bound(bounds[0], True), _bound(bounds[1], False)
    st.table = st.table.filter(pa.array((idx >= lo) & (idx <= hi)))


def _frame(index: pd.Index, outputs: list[tuple[str, pa.ChunkedArray]]) -> tuple[pa.Table, Any]:
    from arcticlite.normalize import normalize

    # a bool aggregate of a group without values is False, as a plain read shows a missing bool
    # (ArcticDB's result); other missing values stay NaN / None
    data = {name: (arr.fill_null(False) if pa.types.is_boolean(arr.type) and arr.null_count else arr).to_pandas()
            for name, arr in outputs}
    df = pd.DataFrame({k: v.to_numpy() if isinstance(v, pd.Series) else v for k, v in data.items()}, index=index)
    if not outputs:
        df = pd.DataFrame(index=index)
    return normalize(df)


def _groupby(st: _State, key: str, aggs: dict[str, Any]) -> None:
    specs = parse_aggregations(aggs, GROUPBY_OPS, "")
    ev = st.evaluator("GroupByClause")
    keys = ev.column(key, codes=True)
    ev.clause = "AggregationClause"
    groups, outputs, missing = aggregate(ev, keys, specs, "Aggregation")
    kstored = st.resolve(key)
    if st.meta.index_columns and kstored == st.meta.index_columns[0] and st.meta.index_kind == "datetime":
        index: pd.Index = _dt_index(np.asarray(groups.cast(pa.int64()).to_numpy(), dtype=np.int64), st.meta, key)
    else:
        index = pd.Index(groups.to_pandas(), name=key)
    st.__init__(*_frame(index, outputs))  # type: ignore[misc]
    _mark_missing(st, missing)


def _mark_missing(st: _State, missing: dict[str, pa.Array]) -> None:
    """Mark the aggregates of groups that saw no value of their column (all its rows absent)
    as absent themselves: later clauses see no value there (``isna()``; every comparison
    false), while the output shows what a plain read shows (0, NaN), as ArcticDB does."""
    for name, mask in missing.items():
        stored = st.resolve(name)
        if stored is not None and stored in st.table.column_names:
            st.table = st.table.append_column(absent_name(stored), mask)


def _dt_index(ns: np.ndarray, meta: Any, name: Any) -> pd.DatetimeIndex:
    idx = pd.DatetimeIndex(ns.astype("datetime64[ns]"), name=name)
    if meta.tz is not None:
        idx = idx.tz_localize("UTC").tz_convert(meta.tz)
    return idx


def _resample(st: _State, args: tuple[Any, ...], aggs: dict[str, Any]) -> None:
    rule, closed, label, offset, origin = args
    specs = parse_aggregations(aggs, RESAMPLE_OPS, " to resample")
    idx = _index_ns(st, "ResampleClause")
    labels = resample_labels(idx, rule, closed, label, offset, origin)
    ev = st.evaluator("ResampleClause")
    groups, outputs, missing = aggregate(ev, pa.array(labels, pa.int64()), specs, "Resample")
    ns = np.asarray(groups.to_numpy(), dtype=np.int64)
    if len(ns) > 1 and (ns[1:] < ns[:-1]).any():
        # buckets come in time order (as in ArcticDB and pandas), but a hash group-by does not
        # promise to keep the order its keys first appear in, sorted labels or not
        order = np.argsort(ns, kind="stable")
        ns = ns[order]
        outputs = [(name, arr.take(pa.array(order))) for name, arr in outputs]
        missing = {name: mask.take(pa.array(order)) for name, mask in missing.items()}
    index = _dt_index(ns, st.meta, st.meta.index_names[0] if st.meta.index_names else None)
    table, meta = _frame(index, outputs)
    if st.meta.kind == "series" and len(outputs) == 1:
        # a Series resamples to a Series under its own name whatever the output is called, as
        # in ArcticDB; later clauses still find the column by that output name. Several outputs
        # stay a DataFrame (ArcticDB keeps only one of them)
        meta = replace(meta, kind="series", user_columns=st.meta.user_columns[:1])
    st.__init__(table, meta)  # type: ignore[misc]
    _mark_missing(st, missing)


def run_query(table: pa.Table, meta: Any, plan: QueryPlan, *, backfill: bool = True) -> tuple[pa.Table, Any]:
    """Apply ``plan.clauses`` to ``table`` (stored columns, index first) described by ``meta``.

    ``backfill``: the missing values of sparse integer / boolean columns come out as a plain
    read shows them (0, False); without it (Arrow output) they stay null.

    Returns the resulting table and the meta that describes it (a new one after
    ``groupby`` / ``resample``). Every step is a whole-column Arrow / numpy operation.
    """
    md = table.schema.metadata
    sparse = bool(md) and norm_sparse_key in md
    st = _State(table, meta)
    clauses = plan.clauses
    pending: tuple[str, Any] | None = None
    for name, arg in clauses:
        if name == "filter":
            _filter(st, arg)
        elif name == "project":
            _project(st, arg[0], arg[1])
        elif name in _SLICES:
            a, b = slice_window(name, arg, st.table.num_rows)
            st.table = st.table.slice(a, b - a)
        elif name == "date_range":
            _date_range(st, arg)
        elif name in ("groupby", "resample"):
            if name == "resample":
                _index_ns(st, "ResampleClause")
            pending = (name, arg)
        elif name == "aggregate":
            if pending is None:
                raise InternalException("Aggregation only makes sense after groupby or resample")
            if pending[0] == "groupby":
                _groupby(st, pending[1], arg)
            else:
                _resample(st, pending[1], arg)
            pending = None
    if plan.output_columns is not None:
        keep = set(st.meta.user_to_stored(list(plan.output_columns))) | set(st.meta.index_columns)
        keep |= {st.resolve(c) for c in plan.output_columns} - {None}  # columns a projection made
        keep |= {nan_rows_name(n) for n in keep}  # NaN-rows companions follow their columns
        st.table = st.table.select([n for n in st.table.column_names if n in keep])
    markers = [n for n in st.table.column_names if is_absent_name(n)]
    if markers:
        if not backfill:  # Arrow output: the rows of segments without a column are nulls
            for m in markers:
                name = absent_of(m)
                if name in st.table.column_names:
                    k = st.table.column_names.index(name)
                    col = st.table.column(k)
                    st.table = st.table.set_column(k, st.table.field(k), pc.if_else(
                        st.table.column(m), pa.scalar(None, col.type), col))
        st.table = st.table.drop_columns(markers)
    if sparse and backfill:
        st.table = _backfill_nulls(st.table)
    return st.table, st.meta


def _backfill_nulls(table: pa.Table) -> pa.Table:
    """``table`` with the missing values of its integer and boolean columns shown as a plain
    read shows them (0, False): the output of a query of segments with sparse columns."""
    for k, f in enumerate(table.schema):
        if (pa.types.is_integer(f.type) or pa.types.is_boolean(f.type)) and table.column(k).null_count:
            table = table.set_column(k, f, table.column(k).fill_null(_backfill(f.type)))
    return table
