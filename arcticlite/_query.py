"""``QueryBuilder``: ArcticDB's query-building API.

Queries can be built (filters, projections, groupby, resample, ranges) exactly as with
ArcticDB; executing them is not implemented yet, and ``read(query_builder=...)`` raises
``ArcticDbNotYetImplemented`` saying so.
"""

from __future__ import annotations

import copy
from typing import Any


class ExpressionNode:
    """A node of a query expression (column, literal or operation)."""

    def __init__(self, op: str, *args: Any) -> None:
        self.op = op
        self.args = args

    def __repr__(self) -> str:
        if self.op == "col":
            return f'Column["{self.args[0]}"]'
        return f"({self.op} {' '.join(map(repr, self.args))})"

    def _bin(self, op: str, other: Any) -> ExpressionNode:
        return ExpressionNode(op, self, other)

    def __eq__(self, o: Any) -> ExpressionNode:  # type: ignore[override]
        return self._bin("==", o)

    def __ne__(self, o: Any) -> ExpressionNode:  # type: ignore[override]
        return self._bin("!=", o)

    def __lt__(self, o: Any) -> ExpressionNode:
        return self._bin("<", o)

    def __le__(self, o: Any) -> ExpressionNode:
        return self._bin("<=", o)

    def __gt__(self, o: Any) -> ExpressionNode:
        return self._bin(">", o)

    def __ge__(self, o: Any) -> ExpressionNode:
        return self._bin(">=", o)

    def __and__(self, o: Any) -> ExpressionNode:
        return self._bin("&", o)

    def __or__(self, o: Any) -> ExpressionNode:
        return self._bin("|", o)

    def __xor__(self, o: Any) -> ExpressionNode:
        return self._bin("^", o)

    def __invert__(self) -> ExpressionNode:
        return ExpressionNode("~", self)

    def __add__(self, o: Any) -> ExpressionNode:
        return self._bin("+", o)

    def __sub__(self, o: Any) -> ExpressionNode:
        return self._bin("-", o)

    def __mul__(self, o: Any) -> ExpressionNode:
        return self._bin("*", o)

    def __truediv__(self, o: Any) -> ExpressionNode:
        return self._bin("/", o)

    def __abs__(self) -> ExpressionNode:
        return ExpressionNode("abs", self)

    def __neg__(self) -> ExpressionNode:
        return ExpressionNode("neg", self)

    def isin(self, *values: Any) -> ExpressionNode:
        return ExpressionNode("isin", self, values)

    def isnotin(self, *values: Any) -> ExpressionNode:
        return ExpressionNode("isnotin", self, values)

    def isna(self) -> ExpressionNode:
        return ExpressionNode("isna", self)

    isnull = isna

    def notna(self) -> ExpressionNode:
        return ExpressionNode("notna", self)

    notnull = notna

    def regex_match(self, pattern: str) -> ExpressionNode:
        return ExpressionNode("regex_match", self, pattern)

    __hash__ = None  # type: ignore[assignment]


def col(name: str) -> ExpressionNode:
    """A column reference, for use in ``QueryBuilder`` expressions."""
    return ExpressionNode("col", name)


def where(cond: Any, left: Any, right: Any) -> ExpressionNode:
    return ExpressionNode("where", cond, left, right)


class QueryBuilder:
    """Builds a query pipeline (ArcticDB's API). Execution is not implemented yet."""

    def __init__(self) -> None:
        self.clauses: list[tuple[str, Any]] = []

    def _add(self, name: str, arg: Any) -> QueryBuilder:
        q = copy.copy(self)
        q.clauses = self.clauses + [(name, arg)]
        return q

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, str):
            return col(item)
        return self._add("filter", item)

    def apply(self, name: str, expr: Any) -> QueryBuilder:
        return self._add("project", (name, expr))

    def groupby(self, name: str) -> QueryBuilder:
        return self._add("groupby", name)

    def agg(self, aggregations: dict[str, Any]) -> QueryBuilder:
        return self._add("aggregate", aggregations)

    def resample(self, rule: str, closed: str | None = None, label: str | None = None,
                 offset: Any = None, origin: Any = "epoch") -> QueryBuilder:
        return self._add("resample", (rule, closed, label, offset, origin))

    def date_range(self, date_range: tuple[Any, Any]) -> QueryBuilder:
        return self._add("date_range", date_range)

    def head(self, n: int = 5) -> QueryBuilder:
        return self._add("head", n)

    def tail(self, n: int = 5) -> QueryBuilder:
        return self._add("tail", n)

    def row_range(self, row_range: tuple[int, int]) -> QueryBuilder:
        return self._add("row_range", row_range)

    def then(self, other: QueryBuilder) -> QueryBuilder:
        q = copy.copy(self)
        q.clauses = self.clauses + other.clauses
        return q

    def prepend(self, other: QueryBuilder) -> QueryBuilder:
        return other.then(self)

    def __repr__(self) -> str:
        return " | ".join(f"{n.upper()}({a!r})" for n, a in self.clauses) or "QueryBuilder()"
