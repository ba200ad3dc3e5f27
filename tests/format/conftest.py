"""Shared helpers for the Fermion format tests."""

from __future__ import annotations

import pyarrow as pa


def _bit_type(t: pa.DataType) -> pa.DataType:
    """``t`` with floats replaced by same-width ints (so NaN payloads and -0.0 compare exactly)."""
    if pa.types.is_float64(t):
        return pa.int64()
    if pa.types.is_float32(t):
        return pa.int32()
    if pa.types.is_float16(t):
        return pa.int16()
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_bit_type(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_bit_type(t.value_type)))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(_bit_type(t.value_type)), t.list_size)
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_bit_type(t.key_type)),
                       t.item_field.with_type(_bit_type(t.item_type)), t.keys_sorted)
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_bit_type(t.field(i).type)) for i in range(t.num_fields)])
    if pa.types.is_dictionary(t):
        return pa.dictionary(t.index_type, _bit_type(t.value_type), t.ordered)
    return t


def bitwise(table: pa.Table) -> pa.Table:
    cols = []
    for col in table.columns:
        bt = _bit_type(col.type)
        cols.append(col if bt == col.type else pa.chunked_array([c.view(bt) for c in col.chunks], type=bt))
    return pa.Table.from_arrays(cols, names=table.column_names) if cols else table


def assert_same(a: pa.Table, b: pa.Table) -> None:
    """Equal values (bit-exact floats), schema, field metadata and schema metadata."""
    assert a.schema.equals(b.schema, check_metadata=True), (a.schema, b.schema)
    assert a.num_rows == b.num_rows
    assert bitwise(a).equals(bitwise(b)), (a, b)
