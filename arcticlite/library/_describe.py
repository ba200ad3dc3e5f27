"""What a version holds, without reading its data: ``get_description`` and the inspection
frames (``inspect_versions`` / ``inspect_index`` / ``inspect_segments``, in the spirit of
Databend's ``fuse_snapshot`` / ``fuse_segment`` / ``fuse_block``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from arcticlite import format as fermion
from arcticlite.index import FLAG_DELTA, FLAG_OPEN_TAIL, hex_digests
from arcticlite.library._types import (
    NameWithDType,
    RowCountDescriptor,
    SymbolDescription,
    TypeDescriptor,
)
from arcticlite.normalize import type_name
from arcticlite.storage import KVStore
from arcticlite.table import DELTAS, meta_of, schema_of
from arcticlite.version import LibraryKeys, VersionRecord


def utc(ns: int) -> pd.Timestamp:
    return pd.Timestamp(ns, unit="ns", tz="UTC")


def _td(typ: pa.DataType | str) -> TypeDescriptor:
    """The type descriptor of a stored type; a column of None only (Arrow's null type) is
    described as the string column it reads as, as ArcticDB describes it."""
    if isinstance(typ, str):
        return TypeDescriptor(typ)
    return TypeDescriptor("UTF_DYNAMIC64" if pa.types.is_null(typ) else type_name(typ))


def describe(rec: VersionRecord) -> SymbolDescription:
    """Columns, index, row count, date range and sortedness of the data version ``rec``."""
    when = utc(rec.created_ns)
    nat = (np.datetime64("NaT"), np.datetime64("NaT"))
    if rec.pickled:
        return SymbolDescription(
            columns=(NameWithDType("bytes", _td("UINT64")),), index=(), index_type="NA",
            row_count=None, last_update_time=when, date_range=nat, sorted="UNKNOWN",
        )
    meta = meta_of(rec)
    schema = schema_of(rec)
    n_index = len(meta.index_columns)
    cols = tuple(NameWithDType(u, _td(schema.field(n_index + i).type)) for i, u in enumerate(meta.user_columns))
    if meta.index_kind in ("range", "none"):
        index: tuple[NameWithDType, ...] = (NameWithDType(meta.index_names[0] if meta.index_names else None,
                                                          RowCountDescriptor()),)
        itype = "index"
    else:
        names = meta.index_names or tuple(meta.index_columns)
        index = tuple(NameWithDType(n, _td(schema.field(i).type)) for i, n in enumerate(names))
        itype = "multi_index" if meta.index_kind == "multi" else "index"
    if meta.kind in ("series", "ndarray"):
        index, itype = (), "NA"
    if meta.kind == "series":  # as ArcticDB: an unnamed Series is column "0"
        cols = tuple(NameWithDType("0" if c.name is None else c.name, c.dtype) for c in cols)
    if meta.kind == "ndarray" and cols:  # one column named "ndarray" (of any shape), as ArcticDB describes it
        cols = (NameWithDType("ndarray", cols[0].dtype),)
    # as ArcticDB: the timestamp index of a Series, or of a line begun by a 0-row write, is
    # listed as the first column (the latter's index then a row count)
    label = meta.index_names[0] if meta.index_names and meta.index_names[0] is not None else "index"
    if meta.written_empty or (meta.kind == "series" and meta.index_kind == "datetime"):
        cols = (NameWithDType(label, _td("NANOSECONDS_UTC64")), *cols)
    elif meta.kind == "series" and meta.index_kind == "other" and n_index == 1:  # its index column too
        cols = (NameWithDType(label, _td(schema.field(0).type)), *cols)
    elif meta.kind == "series" and meta.index_kind == "multi":  # its levels: ArcticDB's stored names
        names = meta.index_names or tuple(meta.index_columns)
        levels = tuple(NameWithDType(("index" if n is None else n) if k == 0
                                     else f"__fkidx__{k}" if n is None else f"__idx__{n}", _td(schema.field(k).type))
                       for k, n in enumerate(names))
        cols = (*levels, *cols)
    if meta.written_empty and index:
        index = (NameWithDType(label, RowCountDescriptor()),)
    dr: tuple[Any, Any] = nat
    # a timestamp index, or a MultiIndex whose first level is one (ArcticDB: the range of that level)
    timed = meta.index_kind == "datetime" or meta.index_kind == "multi" and tuple(meta.index_hints[:1]) == ("dt",)
    if timed and rec.first_index is not None and rec.last_index is not None and rec.sorted != "UNSORTED":
        a, b = pd.Timestamp(rec.first_index, unit="ns"), pd.Timestamp(rec.last_index, unit="ns")
        if meta.tz and meta.kind != "series":  # a Series' range is in naive UTC (ArcticDB)
            a, b = a.tz_localize("UTC").tz_convert(meta.tz), b.tz_localize("UTC").tz_convert(meta.tz)
        dr = (a, b)
    rows = rec.index.rows if rec.index is not None else 0
    if meta.kind == "ndarray" and meta.shape and len(meta.shape) > 1:
        rows *= int(np.prod(meta.shape[1:]))  # as ArcticDB: the values of a 2-D array
    return SymbolDescription(columns=cols, index=index, index_type=itype, row_count=rows,
                             last_update_time=when, date_range=dr, sorted=rec.sorted)


def versions_frame(head: VersionRecord | None, history: list[VersionRecord]) -> pd.DataFrame:
    """Every commit newest first: version id (none for a delete), commit sequence, kind, live,
    rows, segments, created."""
    return pd.DataFrame([{
        "version": rec.vid if rec.is_data else None,
        "commit": rec.seq,
        "kind": rec.kind,
        "live": head.is_live(rec.seq) if head is not None else False,
        "rows": rec.index.rows if rec.index is not None else None,
        "segments": rec.index.segments if rec.index is not None else None,
        "index_height": rec.index.height if rec.index is not None else None,
        "deltas": int(rec.extra.get(DELTAS, {}).get("layers", 0)) if rec.is_data else None,
        "delta_rows": int(rec.extra.get(DELTAS, {}).get("delta_rows", 0)) if rec.is_data else None,
        "created": utc(rec.created_ns),
    } for rec in history])


def index_frame(keys: LibraryKeys, sym: str, leaves: np.ndarray) -> pd.DataFrame:
    """One row per segment of a version's table index."""
    df = pd.DataFrame({
        "start_row": leaves["start_row"], "end_row": leaves["end_row"],
        "start_col": leaves["start_col"], "end_col": leaves["end_col"],
        "min_index": leaves["min_index"], "max_index": leaves["max_index"],
        "seg_offset": leaves["seg_offset"], "seg_rows": leaves["seg_rows"],
        "bytes": leaves["nbytes"],
        "open_tail": (leaves["flags"] & FLAG_OPEN_TAIL) != 0,
        "delta": (leaves["flags"] & FLAG_DELTA) != 0,
    })
    df["key"] = [keys.tdata(sym, d) for d in hex_digests(leaves)]
    return df


def segments_frame(store: KVStore, index: pd.DataFrame) -> pd.DataFrame:
    """Per segment of ``index`` (an :func:`index_frame`) and column: rows, pages, encodings,
    compressed and raw bytes (reads segment metadata only)."""
    rows = []
    for key, nbytes in zip(index["key"], index["bytes"], strict=True):
        reader = fermion.FermionReader(store.read(key))
        try:
            for name in reader.column_names:
                pages = [p for p in reader.page_stats(name) if p["stream"] == "DATA"] or reader.page_stats(name)
                rows.append({
                    "key": key.rsplit("/", 1)[-1], "segment_bytes": int(nbytes), "column": name,
                    "rows": reader.num_rows, "pages": len(pages),
                    "encodings": ",".join(sorted({fermion.ENCODING_NAMES.get(int(p["encoding"]), str(p["encoding"]))
                                                  for p in pages})),
                    "compressed": sum(p["compressed"] for p in pages),
                    "raw": sum(p["raw"] for p in pages),
                })
        finally:
            reader.close()
    return pd.DataFrame(rows)
