"""``QueryBuilder``: ArcticDB's query-building API (filters, projections, groupby,
resample, date / row ranges), executed by :mod:`arcticlite.query` when passed to
``Library.read(query_builder=...)`` or ``read_batch``.

As in ArcticDB, ``q[cond]`` returns a new builder, while ``apply``, ``groupby``, ``agg``,
``resample``, ``date_range``, ``head``, ``tail``, ``row_range``, ``then`` and ``prepend``
add to the builder they are called on and return it.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import numpy as np
import pandas as pd

from arcticlite.exceptions import (
    ArcticDbNotYetImplemented,
    ArcticException,
    InternalException,
    UserInputException,
)
from arcticlite.normalize import check_bound

_RESAMPLE_UNITS = "ns, us, ms, s, min, h, D"


class ExpressionNode:
    """A node of a query expression: a column, or an operation on nodes and values.

    Build nodes with ``q["col"]`` / :func:`col` and Python operators: comparisons,
    ``& | ^ ~``, ``+ - * /``, ``abs()``, unary ``-``, and the methods below. ``and``,
    ``or``, ``not`` and ``x if c else y`` are refused (use ``& | ~`` and :func:`where`).

    Parameters
    ----------
    op : str
        The operation (``"col"`` for a column reference).
    *args : Any
        Its operands: nodes or values.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("T", pd.DataFrame({"sym": ["A", "B", None, "C"], "px": [1.0, None, 3.0, 4.0]}))
    >>> q = adb.QueryBuilder()
    >>> expr = (q["px"] * 2 > 5) | q["sym"].isin(["A"])
    >>> lib.read("T", query_builder=q[expr]).data["sym"].tolist()
    ['A', None, 'C']
    """

    def __init__(self, op: str, *args: Any) -> None:
        self.op = op
        self.args = args

    def __repr__(self) -> str:
        if self.op == "col":
            return f'Column["{self.args[0]}"]'
        return f"({self.op} {' '.join(map(repr, self.args))})"

    def __getstate__(self) -> dict[str, Any]:
        return {"op": self.op, "args": self.args}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.op = state["op"]
        self.args = state["args"]

    def _bin(self, op: str, other: Any) -> ExpressionNode:
        _check_finite(other)
        return ExpressionNode(op, self, _text(other))

    def _rbin(self, op: str, other: Any) -> ExpressionNode:
        _check_finite(other)
        return ExpressionNode(op, _text(other), self)

    def __bool__(self) -> bool:
        raise UserInputException(
            "'and', 'or', 'not', and ternary ('x if y else z') operators are not supported in queries: "
            "use & | ~ (and where() for a ternary)")

    def __eq__(self, o: Any) -> ExpressionNode:  # type: ignore[override]
        if isinstance(o, _COLLECTIONS):  # == [values] is isin, as in ArcticDB
            return self.isin(o)
        return self._bin("==", o)

    def __ne__(self, o: Any) -> ExpressionNode:  # type: ignore[override]
        if isinstance(o, _COLLECTIONS):
            return self.isnotin(o)
        return self._bin("!=", o)

    def __lt__(self, o: Any) -> ExpressionNode:
        return self._bin("<", o)

    def __le__(self, o: Any) -> ExpressionNode:
        return self._bin("<=", o)

    def __gt__(self, o: Any) -> ExpressionNode:
        return self._bin(">", o)

    def __ge__(self, o: Any) -> ExpressionNode:
        return self._bin(">=", o)

    # A bool operand of & | ^ folds away when the expression is built, as in ArcticDB:
    # ``e & True`` and ``e | False`` are ``e``, ``e ^ True`` is ``~e``, ``e ^ False`` is ``e``,
    # while ``e & False`` and ``e | True`` are the plain bool (a filter on it is refused:
    # it would keep every row or none). numpy bools fold like Python bools.
    def __and__(self, o: Any) -> ExpressionNode | bool:
        b = _as_bool(o)
        if b is None:
            return self._bin("&", o)
        return self if b else False

    def __rand__(self, o: Any) -> ExpressionNode | bool:
        b = _as_bool(o)
        if b is None:
            return self._rbin("&", o)
        return self if b else False

    def __or__(self, o: Any) -> ExpressionNode | bool:
        b = _as_bool(o)
        if b is None:
            return self._bin("|", o)
        return True if b else self

    def __ror__(self, o: Any) -> ExpressionNode | bool:
        b = _as_bool(o)
        if b is None:
            return self._rbin("|", o)
        return True if b else self

    def __xor__(self, o: Any) -> ExpressionNode:
        b = _as_bool(o)
        if b is None:
            return self._bin("^", o)
        return ExpressionNode("~", self) if b else self

    def __rxor__(self, o: Any) -> ExpressionNode:
        b = _as_bool(o)
        if b is None:
            return self._rbin("^", o)
        return ExpressionNode("~", self) if b else self

    def __invert__(self) -> ExpressionNode:
        return ExpressionNode("~", self)

    def __add__(self, o: Any) -> ExpressionNode:
        return self._bin("+", o)

    def __radd__(self, o: Any) -> ExpressionNode:
        return self._rbin("+", o)

    def __sub__(self, o: Any) -> ExpressionNode:
        return self._bin("-", o)

    def __rsub__(self, o: Any) -> ExpressionNode:
        return self._rbin("-", o)

    def __mul__(self, o: Any) -> ExpressionNode:
        return self._bin("*", o)

    def __rmul__(self, o: Any) -> ExpressionNode:
        return self._rbin("*", o)

    def __truediv__(self, o: Any) -> ExpressionNode:
        return self._bin("/", o)

    def __rtruediv__(self, o: Any) -> ExpressionNode:
        return self._rbin("/", o)

    def __pow__(self, o: Any) -> ExpressionNode:
        return self._bin("**", o)

    def __rpow__(self, o: Any) -> ExpressionNode:
        return self._rbin("**", o)

    def __abs__(self) -> ExpressionNode:
        return ExpressionNode("abs", self)

    def __neg__(self) -> ExpressionNode:
        return ExpressionNode("neg", self)

    def isin(self, *values: Any) -> ExpressionNode:
        """Rows whose value is one of ``values`` (a list, set, tuple, array, or several
        arguments; order and duplicates do not matter: equal sets make equal queries).

        With Bloom filters on the column (``LibraryOptions.bloom_min_distinct``), segments that
        cannot hold any of the values are not read.

        Parameters
        ----------
        *values : Any
            The values, or one collection of them.

        Returns
        -------
        ExpressionNode
            A boolean expression.

        Raises
        ------
        UserInputException
            The values mix negative numbers with values only uint64 holds.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("T", pd.DataFrame({"sym": ["A", "B", None, "C"], "px": [1.0, None, 3.0, 4.0]}))
        >>> q = adb.QueryBuilder()
        >>> lib.read("T", query_builder=q[q["sym"].isin("A", "C")]).data["px"].tolist()
        [1.0, 4.0]
        """
        return ExpressionNode("isin", self, _flatten(values))

    def isnotin(self, *values: Any) -> ExpressionNode:
        """Rows whose value is none of ``values`` (missing values included).

        Parameters
        ----------
        *values : Any
            The values, or one collection of them.

        Returns
        -------
        ExpressionNode
            A boolean expression.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("T", pd.DataFrame({"sym": ["A", "B", None, "C"], "px": [1.0, None, 3.0, 4.0]}))
        >>> q = adb.QueryBuilder()
        >>> lib.read("T", query_builder=q[q["sym"].isnotin(["A", "C"])]).data["sym"].tolist()
        ['B', None]
        """
        return ExpressionNode("isnotin", self, _flatten(values))

    def isna(self) -> ExpressionNode:
        """Rows where the value is missing (NaN, None, NaT). ``isnull`` is the same.

        Returns
        -------
        ExpressionNode
            A boolean expression.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("T", pd.DataFrame({"sym": ["A", "B", None, "C"], "px": [1.0, None, 3.0, 4.0]}))
        >>> q = adb.QueryBuilder()
        >>> lib.read("T", query_builder=q[q["px"].isna()]).data["sym"].tolist()
        ['B']
        """
        return ExpressionNode("isna", self)

    isnull = isna

    def notna(self) -> ExpressionNode:
        """Rows where the value is present. ``notnull`` is the same.

        Returns
        -------
        ExpressionNode
            A boolean expression.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("T", pd.DataFrame({"sym": ["A", "B", None, "C"], "px": [1.0, None, 3.0, 4.0]}))
        >>> q = adb.QueryBuilder()
        >>> lib.read("T", query_builder=q[q["sym"].notna()]).data["sym"].tolist()
        ['A', 'B', 'C']
        """
        return ExpressionNode("notna", self)

    notnull = notna

    def regex_match(self, pattern: str) -> ExpressionNode:
        """Rows of a string column where ``pattern`` matches anywhere (``re.search``).

        Parameters
        ----------
        pattern : str
            A Python regular expression.

        Returns
        -------
        ExpressionNode
            A boolean expression (missing values do not match).

        Raises
        ------
        UserInputException
            ``pattern`` is not a string.
        InternalException
            ``pattern`` does not compile.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("T", pd.DataFrame({"sym": ["A", "B", None, "C"], "px": [1.0, None, 3.0, 4.0]}))
        >>> q = adb.QueryBuilder()
        >>> lib.read("T", query_builder=q[q["sym"].regex_match("^[AB]$")]).data["sym"].tolist()
        ['A', 'B']
        """
        if not isinstance(pattern, str):
            raise UserInputException(
                f"E_INVALID_USER_ARGUMENT regex_match takes a string pattern, got {type(pattern).__name__} {pattern!r}")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise InternalException(f"E_ASSERTION_FAILURE Error compiling regex {pattern}: {exc}") from None
        return ExpressionNode("regex_match", self, pattern)

    __hash__ = None  # type: ignore[assignment]


def _as_bool(value: Any) -> bool | None:
    """``value`` as a Python bool if it is a Python or numpy bool, else None."""
    return bool(value) if isinstance(value, bool | np.bool_) else None


def _check_finite(value: Any) -> None:
    if isinstance(value, float | np.floating) and value in (np.inf, -np.inf):
        raise ArcticException("Infinite values not supported in queries")


_COLLECTIONS = (list, tuple, set, frozenset, np.ndarray, pd.Index, pd.Series)
_I64_MAX = 2**63 - 1


def _text(v: Any) -> Any:
    """A bytes value as the text it encodes: ArcticDB takes ``b"a"`` in a query as the string
    ``"a"``. Bytes that are not UTF-8 stay bytes (no stored string equals them)."""
    if isinstance(v, bytes):
        try:
            return bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(v)
    return v


def _member(v: Any) -> Any:
    if isinstance(v, bytes):
        return _text(v)
    if isinstance(v, np.datetime64):
        return pd.Timestamp(v)
    if isinstance(v, np.timedelta64):
        return pd.Timedelta(v)
    if isinstance(v, np.generic):
        return v.item()
    return v


def _flatten(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """The value set of ``isin`` / ``isnotin``: flattened, numpy scalars as Python values,
    without duplicates and sorted where the values order, so that equal sets compare equal."""
    flat = tuple(values[0]) if len(values) == 1 and isinstance(values[0], _COLLECTIONS) else tuple(values)
    numbers = [v for v in flat if isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)]
    if any(isinstance(v, np.uint64) or (isinstance(v, int) and v > _I64_MAX) for v in numbers) and any(
            v < 0 for v in numbers):
        raise UserInputException(
            "E_INVALID_USER_ARGUMENT isin / isnotin values mix negative numbers with uint64 values, which have "
            "no common type; give values that all fit int64, or all non-negative")
    members = [_member(v) for v in flat]
    try:
        members = list(dict.fromkeys(members))
        members.sort()
    except TypeError:  # unhashable or unordered values: keep them as given
        pass
    return tuple(members)


def col(name: str) -> ExpressionNode:
    """A column reference, for use in ``QueryBuilder`` expressions (``col("a") > 1``).

    The same as ``q["a"]`` on a builder ``q``; it names a column, and the query fails at
    read time when the symbol has no such column.

    Parameters
    ----------
    name : str
        The column's name.

    Returns
    -------
    ExpressionNode
        Combine it with comparisons, ``& | ^ ~``, arithmetic, ``isin``, ``isna``, ...

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("T", pd.DataFrame({"px": [1.0, 2.0, 3.0]}))
    >>> q = adb.QueryBuilder()
    >>> lib.read("T", query_builder=q[adb.col("px") >= 2]).data["px"].tolist()
    [2.0, 3.0]
    """
    return ExpressionNode("col", name)


def where(cond: Any, left: Any, right: Any) -> ExpressionNode:
    """Per row, ``left`` where ``cond`` holds, else ``right`` (like ``numpy.where``).

    Parameters
    ----------
    cond : ExpressionNode
        A boolean expression (comparison, ``isin``, ... or a bool column).
    left, right : ExpressionNode or scalar
        Columns, expressions or values of compatible types.

    Returns
    -------
    ExpressionNode
        An expression for :meth:`QueryBuilder.apply` (or a filter, when boolean).

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("T", pd.DataFrame({"px": [1.0, 5.0, 3.0]}))
    >>> q = adb.QueryBuilder().apply("capped", adb.where(adb.col("px") > 2, 2.0, adb.col("px")))
    >>> lib.read("T", query_builder=q).data["capped"].tolist()
    [1.0, 2.0, 2.0]
    """
    return ExpressionNode("where", cond, left, right)


class QueryBuilder:
    """A query pipeline over one symbol, executed at read time (ArcticDB's API).

    ``q[cond]`` returns a new builder with a filter added; the other methods add their
    clause to the builder they are called on and return it, so calls chain. Pass it to
    ``Library.read(query_builder=q)``, ``read_batch``, ``head`` / ``tail`` or a
    :class:`LazyDataFrame`. A builder is a plain value: it pickles and compares by its
    clauses.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> df = pd.DataFrame({"sym": ["A", "B", "A", "C"], "px": [1.0, 2.0, 3.0, 4.0]},
    ...                   index=pd.date_range("2024-01-01", periods=4))
    >>> _ = lib.write("T", df)
    >>> q = adb.QueryBuilder()
    >>> q = q[(q["px"] > 1.5) & q["sym"].isin(["A", "B"])]
    >>> lib.read("T", query_builder=q).data
               sym   px
    2024-01-02   B  2.0
    2024-01-03   A  3.0
    >>> q = adb.QueryBuilder().groupby("sym").agg({"px": "sum", "n": ("px", "count")})
    >>> lib.read("T", query_builder=q).data.sort_index()
         n   px
    sym
    A    2  4.0
    B    1  2.0
    C    1  4.0

    Notes
    -----
    Clauses run in order on whole columns (Arrow compute); only the columns the query and
    ``columns=`` need are fetched, and leading date ranges / index comparisons / row slices
    limit the segments read, and a leading filter prunes row groups by their statistics and
    Bloom filters (see :meth:`explain`).
    """

    def __init__(self) -> None:
        self.clauses: list[tuple[str, Any]] = []

    def explain(self, lib: Any, symbol: str, *, as_of: Any = None, date_range: Any = None,
                row_range: tuple[int, int] | None = None, columns: list[Any] | None = None) -> Any:
        """What ``lib.read(symbol, ..., query_builder=self)`` skips and fetches (arcticlite only;
        ArcticDB has no equivalent).

        The read is planned and run as ``read`` would run it (its result is dropped), counting
        the segments pruned by the index range, the row groups pruned by page min/max and by
        Bloom filters, the pages skipped inside the segments kept, and the bytes fetched. It
        costs what the read costs.

        Parameters
        ----------
        lib : arcticlite.Library
            The library holding the symbol.
        symbol : str
            The symbol the query would read.
        as_of, date_range, row_range, columns
            As for ``Library.read``.

        Returns
        -------
        arcticlite.table.ReadExplain
            Its ``str()`` is a short report; ``to_dict()`` gives the figures.

        Raises
        ------
        UserInputException
            ``lib`` is not an arcticlite ``Library``.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"sym": ["A", "B", "A", "C"], "px": [1.0, 2.0, 3.0, 4.0]},
        ...                   index=pd.date_range("2024-01-01", periods=4))
        >>> _ = lib.write("T", df)
        >>> q = adb.QueryBuilder()
        >>> q = q[q["sym"] == "C"]
        >>> report = q.explain(lib, "T")
        >>> report.to_dict()["segments_total"]
        1
        """
        explain = getattr(lib, "_explain", None)
        if explain is None:
            raise UserInputException(f"explain needs an arcticlite Library, got {type(lib).__name__}")
        return explain(symbol, self, as_of=as_of, date_range=date_range, row_range=row_range, columns=columns)

    @property
    def _python_clauses(self) -> list[tuple[str, Any]]:
        # ArcticDB keeps its clauses twice (C++ and Python objects); code that empties both
        # (``q.clauses.clear(); q._python_clauses.clear()``) empties the one list here.
        return self.clauses

    def _add(self, name: str, arg: Any) -> QueryBuilder:
        self.clauses.append((name, arg))
        return self

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, str):
            return col(item)
        if not isinstance(item, ExpressionNode):
            raise UserInputException(
                f"E_INVALID_USER_ARGUMENT FilterClause AST would produce a column, not a bitset (got {item!r})"
            )
        q = copy.copy(self)
        q.clauses = self.clauses + [("filter", item)]
        return q

    def __getattr__(self, name: str) -> ExpressionNode:
        if name.startswith("__") or name == "clauses":
            raise AttributeError(name)
        return col(name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, QueryBuilder) and repr(self) == repr(other)

    __hash__ = None  # type: ignore[assignment]

    def apply(self, name: str, expr: Any) -> QueryBuilder:
        """Add (or replace) column ``name`` computed from ``expr``, per row.

        ``q["name"] = expr`` does the same.

        Parameters
        ----------
        name : str
            The output column; an existing column of that name is replaced.
        expr : ExpressionNode or scalar
            Built from columns (``q["a"]``, :func:`col`), values, arithmetic ``+ - * / **``,
            ``abs()`` and :func:`where`.

        Returns
        -------
        QueryBuilder
            This builder, with the projection added.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"sym": ["A", "B", "A", "C"], "px": [1.0, 2.0, 3.0, 4.0]},
        ...                   index=pd.date_range("2024-01-01", periods=4))
        >>> _ = lib.write("T", df)
        >>> q = adb.QueryBuilder().apply("twice", adb.col("px") * 2)
        >>> lib.read("T", query_builder=q).data["twice"].tolist()
        [2.0, 4.0, 6.0, 8.0]
        """
        return self._add("project", (name, expr))

    def groupby(self, name: str) -> QueryBuilder:
        """Group rows by the values of column ``name``; follow with :meth:`agg`.

        The result is indexed by the group column; rows whose key is missing are dropped. The
        grouping runs on whole columns (Arrow compute) after the columns are read.

        Parameters
        ----------
        name : str
            The column to group by.

        Returns
        -------
        QueryBuilder
            This builder, with the grouping added.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"sym": ["A", "B", "A", "C"], "px": [1.0, 2.0, 3.0, 4.0]},
        ...                   index=pd.date_range("2024-01-01", periods=4))
        >>> _ = lib.write("T", df)
        >>> q = adb.QueryBuilder().groupby("sym").agg({"px": "max"})
        >>> lib.read("T", query_builder=q).data.sort_index()["px"].to_dict()
        {'A': 3.0, 'B': 2.0, 'C': 4.0}
        """
        return self._add("groupby", name)

    def agg(self, aggregations: dict[str, Any]) -> QueryBuilder:
        """Aggregate each group or resample bucket.

        Parameters
        ----------
        aggregations : dict
            ``{"col": "op"}`` or ``{"out": ("col", "op")}``; ops ``sum``, ``mean``, ``min``,
            ``max``, ``count`` (and ``first``, ``last`` after :meth:`resample`).

        Returns
        -------
        QueryBuilder
            This builder, with the aggregation added.

        Raises
        ------
        ArcticException
            No :meth:`groupby` or :meth:`resample` comes before it.
        UserInputException
            An operator the grouping does not have (``first`` / ``last`` after
            :meth:`groupby`, an unknown name), or a spec that is not ``"op"`` or
            ``("col", "op")``.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"sym": ["A", "B", "A", "C"], "px": [1.0, 2.0, 3.0, 4.0]},
        ...                   index=pd.date_range("2024-01-01", periods=4))
        >>> _ = lib.write("T", df)
        >>> q = adb.QueryBuilder().groupby("sym").agg({"mean_px": ("px", "mean")})
        >>> lib.read("T", query_builder=q).data.sort_index()["mean_px"].to_dict()
        {'A': 2.0, 'B': 2.0, 'C': 4.0}
        """
        last = next((n for n, _ in reversed(self.clauses) if n in ("groupby", "resample")), None)
        if last is None:
            raise ArcticException("Aggregation only makes sense after groupby or resample")
        from arcticlite.query._agg_order import GROUPBY_OPS, RESAMPLE_OPS, parse_aggregations

        # an operator the grouping does not have is refused here, as ArcticDB does (not on read)
        parse_aggregations(dict(aggregations), GROUPBY_OPS if last == "groupby" else RESAMPLE_OPS,
                           "" if last == "groupby" else " to resample")
        return self._add("aggregate", dict(aggregations))

    def resample(self, rule: str | pd.DateOffset, closed: str | None = None, label: str | None = None,
                 offset: Any = None, origin: Any = "epoch") -> QueryBuilder:
        """Bucket a timeseries by fixed-width time bins; follow with :meth:`agg`.

        ``closed`` / ``label`` / ``offset`` / ``origin`` mean what they mean in
        ``pandas.DataFrame.resample``; empty buckets are not output.

        Parameters
        ----------
        rule : str or pandas.DateOffset
            The bin width, like ``"15min"``, ``"1h30min"`` or ``"2D"`` (fixed widths only: no
            months or business days).
        closed : {"left", "right"}, optional
            Which end of a bin is inclusive (default as pandas: left).
        label : {"left", "right"}, optional
            Which end labels a bin (default as pandas: left).
        offset : str or pandas.Timedelta, optional
            Shift of the bins from ``origin``.
        origin : str or pandas.Timestamp
            Where bins start: ``"epoch"`` (default), ``"start"``, ``"start_day"``, ``"end"``,
            ``"end_day"`` or a timestamp (only ``"epoch"`` or a timestamp together with a
            date range).

        Returns
        -------
        QueryBuilder
            This builder, with the resampling added.

        Raises
        ------
        ArcticDbNotYetImplemented
            ``rule`` is not a fixed-width frequency.
        ArcticException
            ``closed`` or ``label`` is not ``"left"``, ``"right"`` or None, or ``rule`` is not
            a positive duration.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"sym": ["A", "B", "A", "C"], "px": [1.0, 2.0, 3.0, 4.0]},
        ...                   index=pd.date_range("2024-01-01", periods=4))
        >>> _ = lib.write("T", df)
        >>> q = adb.QueryBuilder().resample("2D", origin="start").agg({"px": "sum"})
        >>> lib.read("T", query_builder=q).data["px"].tolist()
        [3.0, 7.0]
        """
        if closed not in (None, "left", "right"):
            raise ArcticException(f"closed kwarg to resample must be `left`, 'right', or None, but received {closed!r}")
        if label not in (None, "left", "right"):
            raise ArcticException(f"label kwarg to resample must be `left`, 'right', or None, but received {label!r}")
        try:
            off = pd.tseries.frequencies.to_offset(rule)
            nanos = off.nanos
        except (ValueError, TypeError) as exc:
            raise ArcticDbNotYetImplemented(
                f"Frequency string {rule!r} not yet supported. Valid frequency strings are {_RESAMPLE_UNITS}, "
                "and multiples/combinations thereof such as 1h30min"
            ) from exc
        if nanos <= 0:
            raise ArcticException(f"resample rule {rule!r} must be a positive duration")
        return self._add("resample", (rule, closed, label, offset, origin))

    def date_range(self, date_range: tuple[Any, Any]) -> QueryBuilder:
        """Keep rows whose timestamp index is in ``date_range`` (both ends inclusive).

        As the first clause it limits the segments read, as ``read(date_range=...)`` does.

        Parameters
        ----------
        date_range : tuple
            ``(start, end)``: datetimes, dates or Timestamps; ``None`` leaves that end open.

        Returns
        -------
        QueryBuilder
            This builder, with the date range added.

        Raises
        ------
        TypeError
            A bound is not a datetime, date or Timestamp.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"sym": ["A", "B", "A", "C"], "px": [1.0, 2.0, 3.0, 4.0]},
        ...                   index=pd.date_range("2024-01-01", periods=4))
        >>> _ = lib.write("T", df)
        >>> q = adb.QueryBuilder().date_range((pd.Timestamp("2024-01-02"), None))
        >>> lib.read("T", query_builder=q).data["px"].tolist()
        [2.0, 3.0, 4.0]
        """
        start, end = date_range
        check_bound(start, "start")
        check_bound(end, "end")
        return self._add("date_range", (start, end))

    def head(self, n: int = 5) -> QueryBuilder:
        """The first ``n`` rows (all but the last ``|n|`` when negative).

        As the first clause only the segments holding those rows are read.

        Parameters
        ----------
        n : int
            How many rows.

        Returns
        -------
        QueryBuilder
            This builder, with the clause added.

        Raises
        ------
        TypeError
            ``n`` is not an integer.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"sym": ["A", "B", "A", "C"], "px": [1.0, 2.0, 3.0, 4.0]},
        ...                   index=pd.date_range("2024-01-01", periods=4))
        >>> _ = lib.write("T", df)
        >>> lib.read("T", query_builder=adb.QueryBuilder().head(2)).data["px"].tolist()
        [1.0, 2.0]
        """
        return self._add("head", _int(n))

    def tail(self, n: int = 5) -> QueryBuilder:
        """The last ``n`` rows (all but the first ``|n|`` when negative).

        As the first clause only the segments holding those rows are read.

        Parameters
        ----------
        n : int
            How many rows.

        Returns
        -------
        QueryBuilder
            This builder, with the clause added.

        Raises
        ------
        TypeError
            ``n`` is not an integer.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"sym": ["A", "B", "A", "C"], "px": [1.0, 2.0, 3.0, 4.0]},
        ...                   index=pd.date_range("2024-01-01", periods=4))
        >>> _ = lib.write("T", df)
        >>> lib.read("T", query_builder=adb.QueryBuilder().tail(-3)).data["px"].tolist()
        [4.0]
        """
        return self._add("tail", _int(n))

    def row_range(self, row_range: tuple[int | None, int | None]) -> QueryBuilder:
        """Rows ``start:end`` like ``DataFrame.iloc`` (negatives count from the end).

        As the first clause only the segments holding those rows are read.

        Parameters
        ----------
        row_range : tuple of (int or None, int or None)
            ``(start, end)``, end exclusive; ``None`` leaves that end open.

        Returns
        -------
        QueryBuilder
            This builder, with the clause added.

        Raises
        ------
        TypeError
            A bound is not an integer or None.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"sym": ["A", "B", "A", "C"], "px": [1.0, 2.0, 3.0, 4.0]},
        ...                   index=pd.date_range("2024-01-01", periods=4))
        >>> _ = lib.write("T", df)
        >>> lib.read("T", query_builder=adb.QueryBuilder().row_range((1, -1))).data["px"].tolist()
        [2.0, 3.0]
        """
        start, end = row_range[0], row_range[1]
        return self._add("row_range", (None if start is None else _int(start), None if end is None else _int(end)))

    def then(self, other: QueryBuilder) -> QueryBuilder:
        """Append ``other``'s clauses to this builder (``other`` is not changed).

        Parameters
        ----------
        other : QueryBuilder
            The clauses to run after this builder's.

        Returns
        -------
        QueryBuilder
            This builder, with ``other``'s clauses at the end.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"sym": ["A", "B", "A", "C"], "px": [1.0, 2.0, 3.0, 4.0]},
        ...                   index=pd.date_range("2024-01-01", periods=4))
        >>> _ = lib.write("T", df)
        >>> q = adb.QueryBuilder()
        >>> q = q[q["sym"] == "A"]
        >>> q = q.then(adb.QueryBuilder().tail(1))
        >>> lib.read("T", query_builder=q).data["px"].tolist()
        [3.0]
        """
        self.clauses.extend(other.clauses)
        return self

    def prepend(self, other: QueryBuilder) -> QueryBuilder:
        """Put ``other``'s clauses before this builder's (``other`` is not changed).

        Parameters
        ----------
        other : QueryBuilder
            The clauses to run first.

        Returns
        -------
        QueryBuilder
            This builder, with ``other``'s clauses at the start.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> df = pd.DataFrame({"sym": ["A", "B", "A", "C"], "px": [1.0, 2.0, 3.0, 4.0]},
        ...                   index=pd.date_range("2024-01-01", periods=4))
        >>> _ = lib.write("T", df)
        >>> q = adb.QueryBuilder().head(1)
        >>> f = adb.QueryBuilder()
        >>> q = q.prepend(f[f["sym"] == "C"])
        >>> lib.read("T", query_builder=q).data["px"].tolist()
        [4.0]
        """
        self.clauses[:0] = other.clauses
        return self

    def optimise_for_speed(self) -> None:
        """Accepted for ArcticDB compatibility; arcticlite has one execution strategy.

        Examples
        --------
        >>> import arcticlite as adb
        >>> q = adb.QueryBuilder()
        >>> q.optimise_for_speed()  # changes nothing
        >>> q
        QueryBuilder()
        """

    def optimise_for_memory(self) -> None:
        """Accepted for ArcticDB compatibility; arcticlite has one execution strategy.

        Examples
        --------
        >>> import arcticlite as adb
        >>> q = adb.QueryBuilder()
        >>> q.optimise_for_memory()  # changes nothing
        >>> q
        QueryBuilder()
        """

    def concat(self, join: str = "outer") -> QueryBuilder:
        """Join several symbols row-wise; valid as the first clause of a ``read_batch_and_join``
        query (or of a :func:`arcticlite.concat` of lazy frames). Clauses after it run on the
        joined rows.

        Parameters
        ----------
        join : {"outer", "inner"}
            ``"outer"``: every column (missing ones filled as a dynamic-schema read fills them),
            ``"inner"``: only the columns every symbol has.

        Returns
        -------
        QueryBuilder
            This builder, with the join added.

        Raises
        ------
        UserInputException
            ``join`` is neither ``"outer"`` nor ``"inner"``.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("A", pd.DataFrame({"px": [1.0], "a": [1]}, index=[pd.Timestamp("2024-01-01")]))
        >>> _ = lib.write("B", pd.DataFrame({"px": [2.0], "b": [2]}, index=[pd.Timestamp("2024-01-02")]))
        >>> lib.read_batch_and_join(["A", "B"], adb.QueryBuilder().concat("inner")).data
                     px
        2024-01-01  1.0
        2024-01-02  2.0
        """
        if join not in ("outer", "inner"):
            raise UserInputException(f"E_INVALID_USER_ARGUMENT join must be 'outer' or 'inner', got {join!r}")
        return self._add("concat", join)

    def __repr__(self) -> str:
        return " | ".join(f"{n.upper()}({a!r})" for n, a in self.clauses) or "QueryBuilder()"

    def __str__(self) -> str:
        """The clauses as ArcticDB prints them: ``WHERE (Column["a"] GT Val(UINT8:3)) | ...``."""
        from arcticlite.query._text import query_text

        return query_text(self.clauses)

    def __setitem__(self, name: str, expr: Any) -> None:
        """``q["new"] = expr`` is ``q.apply("new", expr)`` (in place, as in ArcticDB)."""
        self.apply(name, expr)


def _int(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer):
        raise TypeError(f"expected an integer row count, got {type(n).__name__} {n!r}")
    return int(n)
