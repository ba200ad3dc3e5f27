"""Maintenance helpers run from a Spark driver."""

from __future__ import annotations

from typing import Any

from spark_connector.source import open_library


def _execute(task: Any) -> Any:
    """Run one ``CompactionTask`` on an executor: its new leaf rows (a numpy structured array)."""
    return task.execute()


def compact(spark: Any, uri: str, library: str, symbol: str, rows_per_segment: int | None = None,
            prune_previous_versions: bool | None = None) -> Any:
    """Compact ``symbol``'s small (or oversized) row slices into ``rows_per_segment``-row ones
    as one new version, the rewrite running on Spark's executors.

    The driver plans with ``Library.compact_data_tasks`` (one picklable ``CompactionTask`` per
    run of row slices to rewrite); Spark runs one task per ``CompactionTask`` (each reads its
    run from the store and writes the new segments, returning their leaf rows); the driver
    commits every result once with ``Library.commit_compaction`` (rebased on rows appended
    meanwhile; a symbol rewritten meanwhile raises ``CommitConflictError``). Returns the
    ``VersionedItem`` of the compacted version, or of the current one when there is nothing to
    do (no Spark job then). If a task fails, nothing is committed; the segments the other
    tasks wrote are unreachable and ``Library.gc()`` removes them.

    A version holding merges as delta segments (merge on read) is compacted by folding them:
    the tasks are then the ``FoldTask`` s of ``Library.compaction_plan`` (one per group of
    row groups the deltas touch) and the commit gives up with ``CommitConflictError`` if the
    symbol was written meanwhile (``rows_per_segment`` is the library's then).
    """
    lib = open_library(uri, library)
    job = lib.compact_data_tasks(symbol, rows_per_segment)
    if not job.tasks:
        return lib.commit_compaction(job, [], prune_previous_versions)
    n = len(job.tasks)
    results = spark.sparkContext.parallelize(job.tasks, n).map(_execute).collect()
    return lib.commit_compaction(job, results, prune_previous_versions)
