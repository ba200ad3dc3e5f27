"""Fermion, the columnar segment format (seed 003; docs/format.md).

Public API: :func:`encode` (Arrow table -> bytes) and :func:`decode` (bytes -> Arrow table).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

__all__ = ["decode", "encode"]


def encode(table: pa.Table, **options: Any) -> bytes:
    # Bootstrap encoding until the Fermion writer lands; same signature.
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def decode(source: Any, columns: list[str] | None = None, filter: Any = None) -> pa.Table:
    t = pa.ipc.open_stream(pa.py_buffer(source)).read_all()
    if columns is not None:
        t = t.select(columns)
    return t
