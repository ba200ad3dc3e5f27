"""The engine layer: one library's symbol data as segments under a table index.

:class:`TableEngine` plans and executes reads (one pipeline for every read path: ``_read``),
writes segments, and commits named operations (``_ops``: :class:`Write`, :class:`Append`,
:class:`ReplaceRange`, :class:`Merge`, :class:`Finalize`, :class:`Compact`, ...) that turn a head version
into the next one under one rebase loop (:meth:`TableEngine.apply`). :class:`ScanPlan` /
:class:`ScanTask` and staging are its public scan / stage API (docs/scan.md), on which the
Spark connector builds. Knows Arrow tables and normalization metadata, not the ArcticDB API.
"""

from arcticlite.table._compact import (
    FRAGMENTED_SEGMENT_COUNT,
    CompactionJob,
    CompactionPlan,
    CompactionTask,
    commit_op,
    compaction_tasks,
    plan_compaction,
)
from arcticlite.table._compact import rewrite as rewrite_compaction
from arcticlite.table._deltas import DELTAS, Scope, delta_info, has_deltas
from arcticlite.table._engine import TableEngine, TableOptions
from arcticlite.table._fold import (
    FOLD_BUDGET_BYTES,
    FoldPlan,
    FoldTask,
    plan_fold,
    run_tasks,
)
from arcticlite.table._fold_commit import FoldDeltas
from arcticlite.table._gc import DEFAULT_GRACE_SECONDS, GcReport, cleanup
from arcticlite.table._gc import gc as collect_garbage
from arcticlite.table._merge import Merge, MergeSpec
from arcticlite.table._ops import (
    Append,
    Compact,
    Finalize,
    Operation,
    ReplaceRange,
    Write,
    WriteMetadata,
    WritePickled,
    combine_sorted,
    data_record,
    index_bounds,
    merged_meta,
)
from arcticlite.table._pools import Pools
from arcticlite.table._prune import ReadExplain
from arcticlite.table._read import (
    ReadPlan,
    iloc_range,
    meta_of,
    schema_bytes,
    schema_from,
    schema_of,
    widen_dynamic_leaves,
)
from arcticlite.table._scan import ScanPlan, ScanTask, check_scannable, scan_schema
from arcticlite.table._segments import (
    OPTIMIZE_FOR,
    TAIL_BYTES,
    Layout,
    col_slices,
    is_small_append,
    read_segments,
    shared_choices,
    write_segments,
    write_tail,
)
from arcticlite.table._stage import StagedEntry, merge_sorted, staged_keys, staged_symbols
from arcticlite.table._stage import consumed as consumed_staged
from arcticlite.table._stage import entries as staged_entries
from arcticlite.table._stage import record as stage_record
from arcticlite.table._stage import stage as stage_table
from arcticlite.table._verify import VerifyReport
from arcticlite.table._verify import verify as verify_library

__all__ = [
    "DEFAULT_GRACE_SECONDS",
    "DELTAS",
    "FOLD_BUDGET_BYTES",
    "FRAGMENTED_SEGMENT_COUNT",
    "OPTIMIZE_FOR",
    "TAIL_BYTES",
    "Append",
    "Compact",
    "CompactionJob",
    "CompactionPlan",
    "CompactionTask",
    "Finalize",
    "FoldDeltas",
    "FoldPlan",
    "FoldTask",
    "GcReport",
    "Layout",
    "Merge",
    "MergeSpec",
    "Operation",
    "Pools",
    "ReadExplain",
    "ReadPlan",
    "ReplaceRange",
    "ScanPlan",
    "ScanTask",
    "Scope",
    "StagedEntry",
    "TableEngine",
    "TableOptions",
    "Write",
    "WriteMetadata",
    "VerifyReport",
    "WritePickled",
    "check_scannable",
    "cleanup",
    "col_slices",
    "collect_garbage",
    "combine_sorted",
    "commit_op",
    "compaction_tasks",
    "consumed_staged",
    "data_record",
    "delta_info",
    "iloc_range",
    "has_deltas",
    "index_bounds",
    "is_small_append",
    "merge_sorted",
    "merged_meta",
    "meta_of",
    "plan_compaction",
    "plan_fold",
    "read_segments",
    "rewrite_compaction",
    "verify_library",
    "run_tasks",
    "scan_schema",
    "schema_bytes",
    "schema_from",
    "schema_of",
    "shared_choices",
    "stage_record",
    "stage_table",
    "staged_entries",
    "staged_keys",
    "staged_symbols",
    "widen_dynamic_leaves",
    "write_segments",
    "write_tail",
]
