"""Staged writes: segments written now, committed later by a finalize (the stage side of the
scan / stage API).

``stage`` writes a table's segments (under fresh names, like any segment) and one staged entry
``stage/{sym}/{token}`` describing them: normalization metadata, schema, index bounds and the
leaf rows. Nothing is visible to readers until :class:`~arcticlite.table._ops.Finalize`
commits one version whose index points at the staged segments: no data is copied. Tokens
start with the staging time, so listing order is staging order; the rest is random, so any
number of processes (Spark tasks, their retried attempts) stage at once without collisions.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from arcticlite import normalize as norm
from arcticlite._envelope import KIND_STAGED, seal, unseal
from arcticlite.exceptions import InternalException, SchemaException, UserInputException
from arcticlite.index import ROW_DTYPE
from arcticlite.table._ops import (
    CONSUMED,
    TableEngine,
    describe_types,
    first_with_rows,
    index_bounds,
    refuse_nat,
    same_columns,
    staged_meta,
    staged_onto_pickled,
    unified,
)
from arcticlite.table._read import meta_of, schema_bytes, schema_from, schema_of
from arcticlite.table._segments import fill_missing, read_segments, write_segments
from arcticlite.version import VersionRecord, unescape

_JOB = re.compile(r"[A-Za-z0-9_.]{1,64}")


@dataclass(frozen=True, slots=True)
class StagedEntry:
    """One staged write: its key, header (``norm``, ``first``, ``last``, ``sorted``), schema and
    the leaf rows of its segments (row numbers from 0)."""

    key: str
    header: dict[str, Any]
    schema: pa.Schema
    leaves: np.ndarray

    @property
    def meta(self) -> norm.NormMeta:
        return norm.NormMeta.from_json(self.header["norm"])


def check_job(job: str | None) -> str:
    """A job tag for staged keys: letters, digits, ``_``, ``.`` (at most 64)."""
    if job is None:
        return ""
    if not isinstance(job, str) or not _JOB.fullmatch(job):
        raise UserInputException(
            f"job must be 1-64 letters, digits, '_' or '.', got {job!r} (it becomes part of staged keys)")
    return job


def stage(engine: TableEngine, sym: str, table: pa.Table, meta: norm.NormMeta, sorted_: str,
          job: str | None = None) -> tuple[str, int]:
    """Write ``table`` as staged segments of ``sym`` (sliced as the library slices writes);
    returns the staged entry's key and its number of segments."""
    leaves = write_segments(engine.store, engine.keys, sym, table, engine.layout(meta), start_row=0,
                            is_datetime=meta.index_kind == "datetime", pools=engine.pools)
    table = norm.split_nan_rows(table)[0]  # the segments hold the NaN-rows companions
    first, last = index_bounds(table, meta)
    nat = meta.index_kind == "datetime" and table.num_rows > 0 and table.column(0).null_count > 0
    return (record(engine, sym, leaves, meta, norm.value_schema(table.schema), first, last, sorted_, job, nat=nat),
            len(leaves))


def record(engine: TableEngine, sym: str, leaves: np.ndarray, meta: norm.NormMeta, schema: pa.Schema,
           first: int | None, last: int | None, sorted_: str, job: str | None = None, *, nat: bool = False) -> str:
    """Record already written segments as one staged entry; returns its key. ``job`` tags the
    key (``{time}-{job}-{random}``), so that every entry of one job can be found and aborted."""
    tag = check_job(job)
    token = f"{time.time_ns():020d}-{tag + '-' if tag else ''}{uuid.uuid4().hex[:16]}"
    key = engine.keys.staged(sym, token)
    sb = schema_bytes(schema)
    header = {"norm": meta.to_json().decode(), "first": first, "last": last,
              "sorted": sorted_, "schema_len": len(sb), "rows": len(leaves), "nat": nat}
    engine.store.write(key, seal(KIND_STAGED, header, sb + leaves.tobytes()))
    return key


def entries(engine: TableEngine, sym: str, keys: list[str] | None = None) -> list[StagedEntry]:
    """The staged entries ``keys`` of ``sym`` (all of them, in staging order, when None)."""
    if keys is None:
        keys = sorted(engine.store.list_keys(engine.keys.staged_prefix(sym)))
    out = []
    for k, raw in zip(keys, engine.store.read_many(keys), strict=True):
        h, blob = unseal(raw, KIND_STAGED)
        n = int(h["schema_len"])
        out.append(StagedEntry(k, h, schema_from(bytes(blob[:n])),
                               np.frombuffer(bytes(blob[n:]), dtype=ROW_DTYPE).copy()))
    return out


def _backfilled(tables: list[pa.Table], firsts: list[int | None]) -> list[pa.Table]:
    """Dynamic schema: each table with the columns the others have, backfilled as a read backfills
    a column a segment lacks (NaN for floats, null otherwise); an integer or boolean column a
    table lacks is null there and listed under ``norm.SPARSE_KEY`` in the schema metadata, so that
    queries see those rows missing while plain reads show 0 / False, as for a segment that
    lacks the column. Columns come in the order of the tables' first index values ``firsts``
    (as ArcticDB orders them); rows stay in the tables' order."""
    by_first = sorted(range(len(tables)), key=lambda k: (firsts[k] is None, firsts[k] or 0))
    unified = pa.unify_schemas([tables[k].schema for k in by_first], promote_options="permissive")
    sparse: set[str] = set()
    out = []
    for t in tables:
        for field in unified:
            if field.name not in t.column_names:
                if pa.types.is_integer(field.type) or pa.types.is_boolean(field.type):
                    sparse.add(field.name)
                    filler = pa.nulls(t.num_rows, field.type)
                else:
                    filler = fill_missing(field.type, t.num_rows)
                t = t.append_column(field, filler)
        out.append(t.select(unified.names))
    if sparse:
        md = {**(out[0].schema.metadata or {}), norm.SPARSE_KEY: json.dumps(sorted(sparse)).encode()}
        out = [t.replace_schema_metadata(md) for t in out]
    return out


#: how far apart the clocks of a staging and a finalizing machine may be
CLOCK_SKEW_NS = 3600 * 10**9


def consumed(engine: TableEngine, sym: str, keys: list[str]) -> set[str]:
    """The staged entries among ``keys`` that a committed version of ``sym`` was already
    finalized from (left behind by a finalize that died after its commit). Reads only the
    versions committed since the oldest of them was staged."""
    if not keys:
        return set()
    names = {k.rsplit("/", 1)[-1]: k for k in keys}
    oldest = min(int(n[:20]) if n[:20].isdigit() else 0 for n in names) - CLOCK_SKEW_NS
    used: set[str] = set()
    for rec in engine.versions.history(sym):
        if rec.created_ns < oldest:
            break
        used.update(n for n in rec.extra.get(CONSUMED, ()) if n in names)
    return {names[n] for n in used}


def consumed_keys(engine: TableEngine) -> list[str]:
    """Every staged entry that a committed version was already finalized from (a finalize that
    died between its commit and the deletion of its entries left them): dead, whatever
    ``gc``'s grace period."""
    prefix = engine.keys.staged_prefix()
    by_sym: dict[str, list[str]] = {}
    for k in engine.store.list_keys(prefix):
        by_sym.setdefault(unescape(k[len(prefix):].split("/", 1)[0]), []).append(k)
    return sorted(k for sym, keys in by_sym.items() for k in consumed(engine, sym, keys))


def staged_symbols(engine: TableEngine) -> list[str]:
    """Symbols with staged entries (not counting entries a committed version already used)."""
    prefix = engine.keys.staged_prefix()
    by_sym: dict[str, list[str]] = {}
    for k in engine.store.list_keys(prefix):
        by_sym.setdefault(unescape(k[len(prefix):].split("/", 1)[0]), []).append(k)
    return sorted(sym for sym, keys in by_sym.items() if len(consumed(engine, sym, keys)) < len(keys))


def staged_keys(engine: TableEngine, sym: str, job: str | None = None) -> list[str]:
    """Keys of the staged entries of ``sym`` (of one ``job`` only, when given)."""
    keys = list(engine.store.list_keys(engine.keys.staged_prefix(sym)))
    if job is None:
        return keys
    tag = f"-{check_job(job)}-"
    return [k for k in keys if tag in k.rsplit("/", 1)[-1][20:]]


def merge_sorted(engine: TableEngine, sym: str, staged: list[StagedEntry],
                 append_to: VersionRecord | None = None) -> StagedEntry:
    """The rows of ``staged`` merged, sorted by index and rewritten as one (unrecorded) entry.

    ``append_to``: the version the merged rows are to be appended to, whose columns the staged
    ones are checked against first. Refusals come in ArcticDB's order: static schema, the
    stored columns, a non-datetime index, the staged frames' columns against each other;
    dynamic schema, columns without a common type (staged, then stored), then the index."""
    refuse_nat(sym, staged)
    lead = first_with_rows(staged)
    meta = lead.meta
    n_index = len(meta.index_columns)
    not_datetime = InternalException(
        f"E_ASSERTION_FAILURE Sort merge only supports datetime indexed data. The staged data of {sym!r} does "
        "not have a datetime index: finalize it with finalize_staged_data")
    static = not engine.options.dynamic_schema
    if append_to is not None and append_to.pickled:
        raise staged_onto_pickled(sym)
    stored = append_to if append_to is not None and append_to.norm is not None else None
    if static:
        if stored is not None:
            try:
                norm.common_schema(meta_of(stored), schema_of(stored), meta, lead.schema, dynamic=False)
            except Exception as exc:
                raise SchemaException(str(exc)) from exc
        if meta.index_kind != "datetime":
            raise not_datetime
        for e in staged[1:]:
            if not same_columns(staged[0].schema, e.schema):
                raise SchemaException(
                    f"E_DESCRIPTOR_MISMATCH staged data of {sym!r} has differing columns or types: "
                    f"{describe_types(staged[0].schema, n_index)} vs {describe_types(e.schema, n_index)}; stage frames "
                    "with identical columns and dtypes, or use a dynamic-schema library"
                )
    else:  # columns without a common type (staged vs staged, then vs stored), then the index
        schema = staged[0].schema
        for e in staged[1:]:
            schema = unified(sym, schema, e.schema)
        if stored is not None:
            have = schema_of(stored)
            for f in schema:
                if f.name in have.names and f.name not in meta.index_columns:
                    norm.common_type(f.name, have.field(f.name).type, f.type)
            if meta_of(stored).index_kind != "datetime":
                raise not_datetime  # nor is the stored data's (ArcticDB)
        if meta.index_kind != "datetime":
            raise not_datetime
    tables = [read_segments(engine.store, engine.keys, sym, e.leaves, e.schema, n_index,
                            e.schema.names[n_index:], None, pools=engine.pools, nan_rows=True) for e in staged]
    try:
        if len(tables) > 1 and engine.options.dynamic_schema:
            tables = _backfilled(tables, [s.header["first"] for s in staged])
        table = pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]
    except (pa.ArrowTypeError, pa.ArrowInvalid) as exc:
        raise SchemaException(f"E_DESCRIPTOR_MISMATCH staged data of {sym!r} cannot be combined: {exc}") from None
    if meta.index_columns:
        table = table.sort_by([(meta.index_columns[0], "ascending")])
    leaves = write_segments(engine.store, engine.keys, sym, table, engine.layout(meta), start_row=0,
                            is_datetime=meta.index_kind == "datetime", pools=engine.pools)
    table = norm.split_nan_rows(table)[0]
    if table.schema.metadata and norm.SPARSE_KEY in table.schema.metadata:  # the segments' own listing
        table = table.replace_schema_metadata({k: v for k, v in table.schema.metadata.items() if k != norm.SPARSE_KEY})
    first, last = index_bounds(table, meta)
    if engine.options.dynamic_schema:
        meta = staged_meta(meta, staged, table.schema)
    header = {"norm": meta.to_json().decode(), "first": first, "last": last, "sorted": norm.sortedness(table, meta)}
    return StagedEntry("", header, table.schema, leaves)
