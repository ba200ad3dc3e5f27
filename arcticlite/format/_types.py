"""Arrow types as Fermion node trees (Decomposed Columnar Streams, seed 003).

A column's type is walked depth first; each node of the walk owns up to three streams
(VALIDITY, OFFSETS, DATA) laid out exactly like the Arrow buffers of that node, so a decoded
node becomes an Arrow array with ``pa.Array.from_buffers`` (no Dremel levels).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from arcticlite.exceptions import ArcticUnsupportedDataTypeException
from arcticlite.format._layout import (
    DTYPE_CODES,
    KIND_BINARY,
    KIND_BITMAP,
    KIND_FIXED,
    KIND_LENGTHS,
    STREAM_DATA,
    STREAM_OFFSETS,
    STREAM_VALIDITY,
)

# node kinds
FIXED = "fixed"  # numeric / temporal values (one numpy dtype)
BYTES = "bytes"  # fixed width opaque values (decimal, fixed_size_binary) stored as uint8
BOOL = "bool"
BINARY = "binary"  # string / binary / large_*
NULL = "null"
LIST = "list"  # list / large_list / map: validity + lengths, one child
FSL = "fixed_size_list"
STRUCT = "struct"
DICT = "dict"  # validity + indices; child = dictionary values (own length)

FLAT_KINDS = frozenset({FIXED, BYTES, BOOL, BINARY, NULL, DICT})
"""Kinds whose rows can be decoded page-selectively (row ranges, predicate pushdown)."""


@dataclass(slots=True)
class StreamSpec:
    stream_type: int
    kind: int
    dtype: np.dtype[Any]  # value dtype for FIXED/LENGTHS, offsets dtype for BINARY, uint8 else
    dtype_code: int = 0

    def __post_init__(self) -> None:
        self.dtype_code = DTYPE_CODES.get(self.dtype.name, 0)


@dataclass(slots=True)
class Node:
    index: int
    type: pa.DataType
    kind: str
    dtype: np.dtype[Any] | None = None  # storage dtype of DATA (FIXED) / lengths (LIST)
    width: int = 0  # byte width (BYTES) or list size (FSL)
    stats: str = ""  # "i", "u", "f" or "s" (prefix) when min/max are kept
    children: list[int] = field(default_factory=list)
    streams: list[int] = field(default_factory=list)  # indices into the column's stream list


def _fixed_dtype(t: pa.DataType) -> np.dtype[Any] | None:
    if pa.types.is_integer(t) or pa.types.is_floating(t) and t.bit_width > 16:
        return np.dtype(t.to_pandas_dtype())
    if pa.types.is_float16(t):
        return np.dtype("<u2")
    if pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_date64(t) \
            or pa.types.is_time64(t):
        return np.dtype("<i8")
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return np.dtype("<i4")
    return None


@functools.lru_cache(maxsize=4096)
def build_nodes(t: pa.DataType) -> tuple[list[Node], list[StreamSpec]]:
    """Depth-first node list and stream list for a column of type ``t`` (shared: read only)."""
    nodes: list[Node] = []
    streams: list[StreamSpec] = []

    def add_stream(node: Node, stream_type: int, kind: int, dtype: Any) -> None:
        node.streams.append(len(streams))
        streams.append(StreamSpec(stream_type, kind, np.dtype(dtype)))

    def walk(t: pa.DataType) -> int:
        node = Node(len(nodes), t, NULL)
        nodes.append(node)
        dt = _fixed_dtype(t)
        if pa.types.is_null(t):
            return node.index
        add_stream(node, STREAM_VALIDITY, KIND_BITMAP, np.uint8)
        if dt is not None:
            node.kind, node.dtype = FIXED, dt
            if not pa.types.is_float16(t):
                node.stats = "f" if dt.kind == "f" else ("u" if dt.kind == "u" else "i")
            add_stream(node, STREAM_DATA, KIND_FIXED, dt)
        elif pa.types.is_boolean(t):
            node.kind = BOOL
            add_stream(node, STREAM_DATA, KIND_BITMAP, np.uint8)
        elif pa.types.is_decimal(t) or pa.types.is_fixed_size_binary(t):
            node.kind, node.width = BYTES, t.byte_width
            add_stream(node, STREAM_DATA, KIND_FIXED, np.uint8)
        elif pa.types.is_string(t) or pa.types.is_binary(t):
            node.kind, node.stats = BINARY, "s"
            add_stream(node, STREAM_DATA, KIND_BINARY, np.int32)
        elif pa.types.is_large_string(t) or pa.types.is_large_binary(t):
            node.kind, node.stats = BINARY, "s"
            add_stream(node, STREAM_DATA, KIND_BINARY, np.int64)
        elif pa.types.is_map(t):
            node.kind, node.dtype = LIST, np.dtype(np.int32)
            add_stream(node, STREAM_OFFSETS, KIND_LENGTHS, np.int32)
            node.children.append(walk(pa.struct([t.key_field, t.item_field])))
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            node.kind = LIST
            node.dtype = np.dtype(np.int64 if pa.types.is_large_list(t) else np.int32)
            add_stream(node, STREAM_OFFSETS, KIND_LENGTHS, node.dtype)
            node.children.append(walk(t.value_type))
        elif pa.types.is_fixed_size_list(t):
            node.kind, node.width = FSL, t.list_size
            node.children.append(walk(t.value_type))
        elif pa.types.is_struct(t):
            node.kind = STRUCT
            for i in range(t.num_fields):
                node.children.append(walk(t.field(i).type))
        elif pa.types.is_dictionary(t):
            node.kind, node.dtype = DICT, np.dtype(t.index_type.to_pandas_dtype())
            add_stream(node, STREAM_DATA, KIND_FIXED, node.dtype)
            node.children.append(walk(t.value_type))
        else:
            raise ArcticUnsupportedDataTypeException(
                f"Fermion cannot store Arrow type {t}; cast it to a supported type "
                "(numbers, bool, temporal, string/binary, decimal, list, struct, map, dictionary)"
            )
        return node.index

    walk(t)
    return nodes, streams


def serialize_field(f: pa.Field) -> bytes:
    """One schema entry: the Arrow IPC serialization of a one-field schema."""
    return pa.schema([f]).serialize().to_pybytes()


def deserialize_field(blob: bytes | memoryview) -> pa.Field:
    s = pa.ipc.read_schema(pa.py_buffer(blob))
    if len(s) != 1:
        raise ValueError("schema entry must hold exactly one field")
    return s.field(0)


def serialize_schema_meta(meta: dict[bytes, bytes] | None) -> bytes:
    return pa.schema([], metadata=meta).serialize().to_pybytes()


def deserialize_schema_meta(blob: bytes | memoryview) -> dict[bytes, bytes] | None:
    return pa.ipc.read_schema(pa.py_buffer(blob)).metadata
