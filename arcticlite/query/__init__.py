"""Execution of ``QueryBuilder`` queries (filters, projections, groupby, resample, ranges).

The builder API lives in :mod:`arcticlite._query` (re-exported as ``arcticlite.QueryBuilder``);
this package plans what a query must read and runs its clauses over Arrow tables.
"""

from arcticlite.query._execute import QueryPlan, plan_query, referenced_columns, run_query

__all__ = ["QueryPlan", "plan_query", "referenced_columns", "run_query"]
