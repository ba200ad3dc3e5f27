"""``groupby(...).agg(...)`` and ``resample(...).agg(...)`` over Arrow tables.

Both reduce with ``pyarrow.Table.group_by``, single-threaded: groups then mostly come out in
order of first appearance, but pyarrow does not promise it (with integer keys some come out
later), so resample sorts its buckets by label afterwards; a group-by on a dictionary-encoded
string key reduces its dense codes with numpy instead (``_dense``, the same results without
hashing, in order of first appearance) where every aggregation is a number's or a count.
As in ArcticDB, NaN is skipped by every aggregation (``sum`` of nothing is 0, ``mean`` / ``min`` /
``max`` / ``first`` / ``last`` of nothing is NaN, ``count`` counts present values as
uint64), integer sums widen to int64 / uint64, and rows with a missing group key are
dropped. Values absent under dynamic schema are skipped too; an integer ``min`` / ``max`` /
``first`` / ``last`` of nothing is 0, as a plain read shows an absent integer.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from arcticlite.exceptions import SchemaException, UserInputException
from arcticlite.query import _dense
from arcticlite.query._expr import Evaluator, category, ts_ns


def _prepare(data: pa.ChunkedArray | pa.Array, op: str, column: str, clause: str, nan_to_null: bool = True) -> Any:
    cat = category(data.type)
    if op in ("sum", "mean", "min", "max") and cat not in ("num", "bool", "ts") or (op == "sum" and cat == "ts"):
        kind = "UTF_DYNAMIC64" if cat in ("str", "null") else str(data.type)
        raise SchemaException(
            f"E_UNSUPPORTED_COLUMN_TYPE {clause}: {op.capitalize()} aggregation not supported on column "
            f"{column!r} of type {kind}"
        )
    if nan_to_null and pa.types.is_floating(data.type):
        data = pc.if_else(pc.is_nan(data), pa.scalar(None, data.type), data)
    if cat == "null" and op in ("first", "last"):
        # a column without values (all-None strings): pyarrow has no first / last of the null
        # type, and the first of nothing is None, as in ArcticDB and pandas
        data = data.cast(pa.string())
    if cat == "dur" and op in ("first", "last"):  # nor of durations: as int64, cast back by _finish
        data = data.cast(pa.int64())
    if cat == "ts" and op == "mean":
        data = data.cast(pa.int64())
    if op == "mean" and pa.types.is_uint64(data.type):  # Arrow's sum of it wraps: as doubles (ArcticDB)
        data = data.cast(pa.float64(), safe=False)
    if cat == "bool" and op in ("sum", "mean"):
        data = data.cast(pa.uint64() if op == "sum" else pa.float64())
    return data


def _finish(result: pa.ChunkedArray, op: str, source_type: pa.DataType) -> pa.ChunkedArray:
    if op == "count":
        return result.cast(pa.uint64())
    if op == "sum":
        return result.fill_null(pa.scalar(0, result.type))
    if op == "mean" and category(source_type) == "ts":  # mean of timestamps is a timestamp
        return result.cast(pa.int64(), safe=False).cast(source_type)
    if op in ("first", "last") and category(source_type) == "dur":  # NaT where a bucket has none
        return result.cast(source_type)
    if pa.types.is_floating(result.type):
        return result.fill_null(pa.scalar(float("nan"), result.type))
    if pa.types.is_integer(result.type):  # a group whose values are all absent (dynamic schema)
        return result.fill_null(pa.scalar(0, result.type))
    return result


def aggregate(ev: Evaluator, keys: pa.Array | pa.ChunkedArray, specs: list[tuple[str, str, str]],
              clause: str) -> tuple[pa.ChunkedArray, list[tuple[str, pa.ChunkedArray]], dict[str, pa.Array]]:
    """Group ``ev.table`` by ``keys`` and reduce ``specs``; returns (group keys, outputs, the
    groups whose output is missing: by output name, where its column is absent from every row
    of the group (dynamic schema; ArcticDB's later clauses see no value there))."""
    dictionary = None
    absent = {column: ev.absent(column) for _, column, _ in specs}
    if pa.types.is_dictionary(keys.type):  # codes into per-segment dictionaries: group on codes
        keys, dictionary = _global_codes(keys)
        values = [_prepare(ev.column(column), op, column, clause, nan_to_null=False) for _, column, op in specs]
        if all(_dense.supported(v.type, op) for v, (_, _, op) in zip(values, specs, strict=True)) \
                and all(a is None for a in absent.values()):
            return (*_dense_aggregate(ev, keys, dictionary, specs, values), {})
    cols: dict[str, Any] = {"__key": keys}
    aggs = []
    for i, (_, column, op) in enumerate(specs):
        cols[f"__v{i}"] = _prepare(ev.column(column), op, column, clause)
        aggs.append((f"__v{i}", op if op != "count" else "count"))
        if absent[column] is not None:  # rows of the group that hold the column
            cols[f"__p{i}"] = pc.invert(absent[column]).cast(pa.uint8())
            aggs.append((f"__p{i}", "sum"))
    if pa.types.is_floating(keys.type):  # -0.0 and 0.0 are one group (0.0), as they are equal
        cols["__key"] = keys = pc.add(keys, pa.scalar(0.0, keys.type))
    t = pa.table(cols)
    if keys.null_count or pa.types.is_floating(keys.type):  # rows without a key (null / NaN) go
        t = t.filter(pc.invert(pc.is_null(keys, nan_is_null=True)))
    grouped = t.group_by("__key", use_threads=False).aggregate(aggs)
    outputs = []
    missing: dict[str, pa.Array] = {}
    for i, (name, column, op) in enumerate(specs):
        source = ev.column(column).type
        outputs.append((name, _finish(grouped.column(f"__v{i}_{op}"), op, source)))
        if absent[column] is not None:
            none = pc.equal(grouped.column(f"__p{i}_sum").combine_chunks(), 0)
            # (a group-by's sum of no value is 0, a value, unless no row read has the column)
            if none.true_count and (op != "sum" or clause != "Aggregation" or none.true_count == len(none)):
                missing[name] = none
    groups = grouped.column("__key")
    if dictionary is not None:
        groups = pa.chunked_array([dictionary.take(groups.combine_chunks())])
    return groups, outputs, missing


def _dense_aggregate(ev: Evaluator, codes: pa.ChunkedArray, dictionary: pa.Array, specs: list[tuple[str, str, str]],
                     values: list[Any]) -> tuple[pa.ChunkedArray, list[tuple[str, pa.ChunkedArray]]]:
    """:func:`aggregate` over dense codes into ``dictionary`` (numpy reductions, no hashing)."""
    split = _dense.split(codes, len(dictionary))
    order = _dense.group_order(split)
    outputs = []
    for (name, column, op), data in zip(specs, values, strict=True):
        reduced = _dense.reduce(split, order, data, op)
        outputs.append((name, _finish(pa.chunked_array([reduced]), op, ev.column(column).type)))
    return pa.chunked_array([dictionary.take(pa.array(order, pa.int32()))]), outputs


def _global_codes(keys: pa.Array | pa.ChunkedArray) -> tuple[pa.ChunkedArray, pa.Array]:
    """Dictionary-encoded ``keys`` as int32 codes into one dictionary (each chunk's
    dictionary mapped onto the distinct values of all of them): grouping the codes gives the
    groups of the values, in the same order of first appearance."""
    chunked = keys if isinstance(keys, pa.ChunkedArray) else pa.chunked_array([keys])
    unified = chunked.unify_dictionaries()
    if unified.num_chunks == 0:
        return pa.chunked_array([], pa.int32()), pa.array([], keys.type.value_type)
    dictionary = unified.chunk(0).dictionary
    codes = pa.chunked_array([c.indices.cast(pa.int32()) for c in unified.chunks], pa.int32())
    return codes, dictionary


def resample_labels(index_ns: np.ndarray, rule: Any, closed: str | None, label: str | None, offset: Any,
                    origin: Any) -> np.ndarray:
    """The bucket label (int64 ns) of every timestamp, pandas' fixed-frequency binning."""
    step = int(pd.tseries.frequencies.to_offset(rule).nanos)
    day = 86_400 * 10**9
    if isinstance(origin, str):
        if origin not in ("epoch", "start", "start_day", "end", "end_day"):
            raise UserInputException(
                f"E_INVALID_USER_ARGUMENT origin must be 'epoch', 'start', 'start_day', 'end', 'end_day' or a "
                f"timestamp, got {origin!r}"
            )
        if len(index_ns) == 0:
            anchor = 0
        elif origin == "epoch":
            anchor = 0
        elif origin == "start":
            anchor = int(index_ns[0])
        elif origin == "start_day":
            anchor = int(index_ns[0]) // day * day
        elif origin == "end":
            anchor = int(index_ns[-1])
        else:
            anchor = -(-int(index_ns[-1]) // day) * day
    else:
        anchor = ts_ns(origin)
    if offset is not None:
        anchor += int(pd.Timedelta(offset).value)
    from_end = origin in ("end", "end_day")
    closed = closed or ("right" if from_end else "left")
    label = label or ("right" if from_end else "left")
    d = index_ns.astype(np.int64) - anchor
    k = np.floor_divide(d, step) if closed == "left" else -np.floor_divide(-d, step) - 1
    left = anchor + k * step
    return left + step if label == "right" else left
