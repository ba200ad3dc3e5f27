"""Shared helpers for the Fermion format tests."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def arrays_equal(a: pa.Array, b: pa.Array) -> bool:
    """Logical equality with bit-exact floats (NaN payloads, -0.0), ignoring null slots."""
    if a.type != b.type or len(a) != len(b):
        return False
    t = a.type
    if len(a) == 0:
        return True
    if not pa.types.is_null(t) and not a.is_null().equals(b.is_null()):
        return False
    if pa.types.is_floating(t):
        it = {16: pa.int16(), 32: pa.int32(), 64: pa.int64()}[t.bit_width]
        return a.view(it).equals(b.view(it))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t) \
            or pa.types.is_fixed_size_list(t):
        if pa.types.is_map(t):  # keys and items of the (possibly sliced) maps, side by side
            valid = a.is_valid()  # a null slot may span entries of any length: drop null slots
            a, b = a.filter(valid), b.filter(valid)
            same = np.array_equal(np.diff(a.offsets.to_numpy()), np.diff(b.offsets.to_numpy()))
            return same and arrays_equal(a.keys, b.keys) and arrays_equal(a.items, b.items)
        la, lb = pc.list_value_length(a), pc.list_value_length(b)
        return la.equals(lb) and arrays_equal(a.flatten(), b.flatten())
    if pa.types.is_struct(t):
        fa, fb = a.flatten(), b.flatten()
        return all(arrays_equal(x, y) for x, y in zip(fa, fb, strict=True))
    if pa.types.is_dictionary(t):
        return arrays_equal(a.dictionary_decode(), b.dictionary_decode())
    return a.equals(b)


def assert_same(a: pa.Table, b: pa.Table) -> None:
    """Equal values (bit-exact floats), schema, field metadata and schema metadata."""
    assert a.schema.equals(b.schema, check_metadata=True), (a.schema, b.schema)
    assert a.num_rows == b.num_rows, (a.num_rows, b.num_rows)
    for name, x, y in zip(a.column_names, a.columns, b.columns, strict=True):
        assert arrays_equal(x.combine_chunks(), y.combine_chunks()), (name, x, y)
