"""The table-index layer: a B-tree of immutable nodes, one leaf row per data segment."""

from arcticlite.index._tindex import EMPTY_ROOT, FANOUT, ROW_DTYPE, IndexRoot, TableIndexIO

__all__ = ["EMPTY_ROOT", "FANOUT", "ROW_DTYPE", "IndexRoot", "TableIndexIO"]
