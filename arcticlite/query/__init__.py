"""Queries: the ``QueryBuilder`` API and its execution.

:class:`QueryBuilder`, :func:`col` and :func:`where` build a query (re-exported as
``arcticlite.QueryBuilder``); :func:`plan_query` decides what a query must read (columns,
row and index ranges, value filters that can prune segments) and :func:`run_query` runs its
clauses over Arrow tables.
"""

from arcticlite.query._builder import ExpressionNode, QueryBuilder, col, where
from arcticlite.query._execute import QueryPlan, plan_query, referenced_columns, run_query
from arcticlite.query._expr import absent_name

__all__ = [
    "ExpressionNode",
    "QueryBuilder",
    "QueryPlan",
    "absent_name",
    "col",
    "plan_query",
    "referenced_columns",
    "run_query",
    "where",
]
