"""Maintenance helpers run from a Spark driver."""

from __future__ import annotations

from typing import Any

from spark_connector.source import open_library


def compact(spark: Any, uri: str, library: str, symbol: str, rows_per_segment: int | None = None,
            prune_previous_versions: bool | None = None) -> Any:
    """Compact ``symbol``'s small segments into ``rows_per_segment``-row ones as one version.

    The public API has no per-group compaction a Spark task could run (a ``compact_data`` that
    rewrites chosen row ranges and returns descriptors, and a commit of those descriptors), so
    the rewrite runs on the driver through ``Library.compact_data``; ``spark`` is accepted so
    that callers need not change when the work moves to executors. Returns the
    ``VersionedItem`` of the compacted (or unchanged) version.
    """
    lib = open_library(uri, library)
    plan = lib.compact_data_explain_plan(symbol, rows_per_segment)
    if not plan.runs:
        return lib.read_metadata(symbol)
    return lib.compact_data(symbol, rows_per_segment, prune_previous_versions)
