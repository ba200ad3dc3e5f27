"""The table-index layer: a B-tree of immutable nodes, one leaf row per data segment."""

from arcticlite.index._tindex import (
    EMPTY_ROOT,
    FANOUT,
    FLAG_DELTA,
    FLAG_OPEN_TAIL,
    FLAG_REGULAR,
    ROW_DTYPE,
    IndexRoot,
    TableIndexIO,
    hex_digests,
    new_digest,
    shifted,
)

__all__ = [
    "EMPTY_ROOT",
    "FANOUT",
    "FLAG_DELTA",
    "FLAG_OPEN_TAIL",
    "FLAG_REGULAR",
    "ROW_DTYPE",
    "IndexRoot",
    "TableIndexIO",
    "hex_digests",
    "new_digest",
    "shifted",
]
