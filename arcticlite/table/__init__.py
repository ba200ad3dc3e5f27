"""The engine layer: one library's symbol data as segments under a table index.

:class:`TableEngine` plans and executes reads (:mod:`._read`: one pipeline for every read
path), writes segments, and commits named operations that turn a head version into the next
one. :class:`ScanPlan` / :class:`ScanTask` and the staging functions are its public scan /
stage API (docs/scan.md): what the Spark connector and other parallel readers and writers
build on. Knows Arrow tables and normalization metadata, not the ArcticDB API.
"""

from arcticlite.table._engine import TableEngine, TableOptions
from arcticlite.table._ops import (
    Append,
    Operation,
    Write,
    WriteMetadata,
    combine_sorted,
    data_record,
    index_bounds,
    merged_meta,
)
from arcticlite.table._pools import Pools
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
    write_segments,
    write_tail,
)

__all__ = [
    "Append",
    "OPTIMIZE_FOR",
    "TAIL_BYTES",
    "Layout",
    "Operation",
    "Pools",
    "ReadPlan",
    "ScanPlan",
    "ScanTask",
    "TableEngine",
    "TableOptions",
    "Write",
    "WriteMetadata",
    "check_scannable",
    "col_slices",
    "combine_sorted",
    "data_record",
    "iloc_range",
    "index_bounds",
    "is_small_append",
    "merged_meta",
    "meta_of",
    "read_segments",
    "schema_bytes",
    "schema_from",
    "scan_schema",
    "schema_of",
    "widen_dynamic_leaves",
    "write_segments",
    "write_tail",
]
