"""The commands that only read: ``libraries``, ``symbols``, ``versions``, ``describe``, ``read``,
``inspect`` (and its aliases ``index`` / ``segments``), ``snapshot list``. None of them creates a
store or a library: each opens its store read-only and refuses a missing one."""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Any

import pandas as pd

import arcticlite as adb
from arcticlite.cli._common import (
    BAD_INPUT,
    FAILED,
    FILE_ERROR,
    NOT_FOUND,
    CliError,
    as_of,
    columns,
    date_range,
    emit_json,
    emit_table,
    file_format,
    open_library,
    open_store,
    records,
    require_symbol,
    where,
    write_frame,
)

#: Rows ``read`` prints when given neither ``--head``, ``--tail`` nor ``--to``.
DEFAULT_ROWS = 20


def libraries(args: argparse.Namespace) -> int:
    names = open_store(args.uri).list_libraries()
    if args.json:
        emit_json(names)
    elif names:
        print("\n".join(names))
    return 0


def verify(args: argparse.Namespace) -> int:
    """Exit 0 when nothing is damaged, 1 when something is (each problem on stdout)."""
    ac = open_store(args.uri)
    if args.library is not None:
        report = open_library(args).verify(data=not args.no_data)
        what = f"library {args.library!r}"
    else:
        report = ac.verify(data=not args.no_data)
        what = f"the store at {ac.get_uri()}"
    if args.json:
        emit_json({**dataclasses.asdict(report), "ok": report.ok})
    else:
        print(f"{what}: {report.keys:,} keys, {report.versions:,} versions, {report.segments:,} data segments "
              f"({report.bytes:,} bytes decoded), {report.unreachable:,} unreachable (gc removes them): "
              + ("no damage found" if report.ok else f"{len(report.problems):,} problem(s)"))
        for line in report.problems:
            print(f"  {line}")
    return 0 if report.ok else 1


def symbols(args: argparse.Namespace) -> int:
    lib = open_library(args)
    names = sorted(lib.list_symbols(snapshot_name=args.snapshot, regex=args.regex))
    if args.json:
        emit_json(names)
    elif names:
        print("\n".join(names))
    return 0


def versions(args: argparse.Namespace) -> int:
    lib = open_library(args)
    frame = lib.inspect_versions(args.symbol)
    if frame.empty:
        raise CliError(f"no symbol {args.symbol!r} in library {lib.name!r} (it was never written)", NOT_FOUND)
    if args.json:
        emit_json(records(frame))
    else:
        emit_table(_whole_numbers(frame))
    return 0


def _whole_numbers(frame: pd.DataFrame) -> pd.DataFrame:
    """Count columns that pandas made float because a row has none (a tombstone has no rows or
    segments) shown as whole numbers, the missing ones blank."""
    out = frame.copy()
    for name in out.columns:
        col = out[name]
        if col.dtype.kind == "f" and col.isna().any() and (col.dropna() % 1 == 0).all():
            out[name] = col.astype("Int64").astype(object).where(col.notna(), "")
    return out


def _readable_index(frame: pd.DataFrame, lib: adb.Library, symbol: str, version: Any) -> pd.DataFrame:
    """The ``min_index`` / ``max_index`` of an index table as times when the symbol is indexed by
    time (they are stored as nanoseconds)."""
    if not len(frame) or "min_index" not in frame.columns:
        return frame
    d = lib.get_description(symbol, as_of=version)
    if not d.index or "NANOSECONDS" not in d.index[0].dtype.name and "DATETIME" not in d.index[0].dtype.name:
        return frame
    tz = getattr(d.date_range[0], "tz", None)
    out = frame.copy()
    for name in ("min_index", "max_index"):
        out[name] = pd.to_datetime(out[name].astype("int64"), unit="ns", utc=tz is not None)
        if tz is not None:
            out[name] = out[name].dt.tz_convert(tz)
    return out


def _missing_symbol(lib: adb.Library, symbol: str, version: Any) -> None:
    """A symbol that was never written (or is deleted) is 'no symbol', not 'no version
    matching latest'; only checked for the latest version (a snapshot or an older version
    may hold a deleted symbol)."""
    if version is None:
        require_symbol(lib, symbol)


def _describe(lib: adb.Library, symbol: str, version: Any) -> dict[str, Any]:
    d = lib.get_description(symbol, as_of=version)
    vid = lib.read_metadata(symbol, as_of=version).version
    live = [v.version for v in lib.list_versions(symbol) if v.symbol == symbol]
    out: dict[str, Any] = {
        "symbol": symbol, "library": lib.name, "version": vid, "live_versions": len(live),
        "created": d.last_update_time.isoformat(), "rows": d.row_count, "index_type": d.index_type,
        "index": [{"name": c.name, "dtype": c.dtype.name} for c in d.index],
        "date_range": None if pd.isna(d.date_range[0]) else [str(d.date_range[0]), str(d.date_range[1])],
        "sorted": d.sorted, "columns": [{"name": c.name, "dtype": c.dtype.name} for c in d.columns],
    }
    idx = lib.inspect_index(symbol, as_of=version)
    out["segments"] = len(idx)
    out["data_bytes"] = int(idx["bytes"].sum()) if len(idx) else 0
    sizes = lib.admin_tools().get_sizes_for_symbol(symbol)
    out["stored"] = {kt.name.lower(): {"bytes": s.bytes_compressed, "keys": s.count} for kt, s in sizes.items()}
    return out


def describe(args: argparse.Namespace) -> int:
    lib = open_library(args)
    version = as_of(args.as_of, lib)
    _missing_symbol(lib, args.symbol, version)
    d = _describe(lib, args.symbol, version)
    if args.json:
        emit_json(d)
        return 0
    index = ", ".join(f"{'(unnamed)' if c['name'] is None else c['name']} {c['dtype']}" for c in d["index"]) or "none"
    span = f"{d['date_range'][0]} .. {d['date_range'][1]}" if d["date_range"] else "-"
    total = sum(s["bytes"] for s in d["stored"].values())
    rows = "unknown (pickled)" if d["rows"] is None else f"{d['rows']:,}"
    print(f"symbol     {d['symbol']} (library {d['library']})")
    print(f"version    {d['version']} ({d['live_versions']} live), created {d['created']}")
    print(f"rows       {rows}")
    print(f"index      {index} ({d['index_type']}, {d['sorted'].lower()})")
    print(f"range      {span}")
    print(f"segments   {d['segments']:,} holding {d['data_bytes']:,} bytes")
    print(f"stored     {total:,} bytes in all versions: "
          + ", ".join(f"{k} {v['bytes']:,} B / {v['keys']} keys" for k, v in d["stored"].items() if v["keys"]))
    print("columns")
    width = max((len(str(c["name"])) for c in d["columns"]), default=0)
    for c in d["columns"]:
        print(f"  {str(c['name']):{width}}  {c['dtype']}")
    return 0


def read(args: argparse.Namespace) -> int:
    lib = open_library(args)
    version = as_of(args.as_of, lib)
    dr, cols = date_range(args.date_range), columns(args.columns)
    if args.rows is not None and (args.head is not None or args.tail is not None):
        raise CliError("--rows is --head: give one of --rows, --head, --tail", BAD_INPUT)
    head = args.rows if args.rows is not None else args.head
    q = where(args.where)
    if args.explain:
        print((q if q is not None else adb.QueryBuilder()).explain(lib, args.symbol, as_of=version, date_range=dr,
                                                                   columns=cols))
        return 0
    _missing_symbol(lib, args.symbol, version)
    desc = lib.get_description(args.symbol, as_of=version)
    if desc.row_count is None:  # pickled: no table to slice
        if dr is not None or cols is not None or q is not None or args.to:
            raise CliError(f"symbol {args.symbol!r} holds a pickled object, not a table: read it without "
                           "--date-range, --columns, --where or --to", BAD_INPUT)
        data = lib.read(args.symbol, as_of=version).data
        if args.json:
            emit_json({"symbol": args.symbol, "pickled": True, "repr": repr(data)})
        else:
            print(repr(data))
        return 0
    if cols is not None:  # Library.read ignores unknown names, as ArcticDB does; a typed name is a typo here
        known = [str(c.name) for c in desc.columns]
        unknown = [c for c in cols if c not in known and c not in {str(i.name) for i in desc.index}]
        if unknown:
            raise CliError(f"--columns: no column {', '.join(map(repr, unknown))} in {args.symbol!r} (columns: "
                           f"{', '.join(known)})", BAD_INPUT)
    if args.to and head is None and args.tail is None:
        rows = export(lib, args, version, dr, cols, q)
        if rows is not None:
            print(f"wrote {rows:,} rows of {args.symbol!r} to {args.to}")
            return 0
    shown = None
    if head is None and args.tail is None and not args.to and not args.json:
        head, shown = DEFAULT_ROWS, DEFAULT_ROWS
    if head is not None or args.tail is not None:
        q = q if q is not None else adb.QueryBuilder()
        q = q.head(head) if head is not None else q.tail(args.tail)
    df = lib.read(args.symbol, as_of=version, date_range=dr, columns=cols, query_builder=q).data
    if args.to:
        write_frame(df, args.to, args.format)
        print(f"wrote {len(df):,} rows of {args.symbol!r} to {args.to}")
    elif args.json:
        emit_json(records(df.reset_index() if not isinstance(df.index, pd.RangeIndex) else df))
    else:
        print(df.to_string())
        if shown is not None and len(df) == shown:
            print(f"(first {shown} rows; --head N / --tail N for others, --to FILE for all)")
    return 0


def export(lib: adb.Library, args: argparse.Namespace, version: Any, dr: Any, cols: Any, q: Any) -> int | None:
    """``read --to FILE.parquet|.arrow``: stream the rows to the file a few segments at a time
    (``Library.scan(...).to_reader()``), so that a symbol larger than memory exports; the file
    carries pandas metadata, so ``write`` restores the index. Returns the rows written, or None
    when the file's format is CSV (written through pandas)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    fmt = file_format(args.to, args.format, "--to")
    if fmt == "csv":
        return None
    empty = lib.head(args.symbol, 0, as_of=version, columns=cols).data  # the pandas types, no rows
    target = pa.Schema.from_pandas(empty, preserve_index=not isinstance(empty.index, pd.RangeIndex))
    reader = lib.scan(args.symbol, as_of=version, date_range=dr, columns=cols, query_builder=q).to_reader()
    # the scan's columns: the index first (named "index" when unnamed), then the data; pandas
    # puts its index columns (named __index_level_0__ when unnamed) last
    index_cols = [c for c in (target.pandas_metadata or {}).get("index_columns", []) if isinstance(c, str)]
    names = index_cols + reader.schema.names[len(index_cols):]
    if sorted(names) != sorted(target.names):
        return None
    got = dict(zip(names, reader.schema.types, strict=True))
    # the stored types where pandas has none (an empty object column), pandas' order and metadata
    schema = pa.schema([pa.field(t.name, got[t.name] if pa.types.is_null(t.type) else t.type) for t in target],
                       metadata=target.metadata)
    tmp = f"{args.to}.tmp-{os.getpid()}"
    rows = 0
    try:
        with (pq.ParquetWriter(tmp, schema) if fmt == "parquet" else pa.ipc.new_file(tmp, schema)) as w:
            for batch in reader:
                part = pa.Table.from_batches([batch]).rename_columns(names).select(schema.names).cast(schema)
                w.write_table(part)
                rows += part.num_rows
        os.replace(tmp, args.to)
    except (OSError, pa.ArrowException) as exc:
        raise CliError(f"cannot write {args.to!r}: {exc}", FILE_ERROR) from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return rows


def inspect(args: argparse.Namespace) -> int:
    """``inspect``: version → index → segments; ``index`` and ``segments`` print one part."""
    lib = open_library(args)
    version = as_of(args.as_of, lib)
    if getattr(args, "plot", None):
        return plot(args, lib, version)
    _missing_symbol(lib, args.symbol, version)
    if args.command == "index":
        frame = lib.inspect_index(args.symbol, version)
    elif args.command == "segments":
        frame = lib.inspect_segments(args.symbol, version)
    else:
        vid = lib.read_metadata(args.symbol, as_of=version).version
        hist = lib.inspect_versions(args.symbol)
        rec = hist[hist["version"] == vid]
        idx = lib.inspect_index(args.symbol, version)
        pickled = lib.get_description(args.symbol, as_of=version).row_count is None
        segs = pd.DataFrame() if pickled else lib.inspect_segments(args.symbol, version)
        if args.json:
            emit_json({"version": records(rec)[0] if len(rec) else {"version": vid},
                       "index": records(idx), "segments": records(segs)})
            return 0
        r = rec.iloc[0] if len(rec) else None
        print(f"version {vid} of {args.symbol!r}" + (
            f": {r['kind']}, {int(r['rows']):,} rows in {int(r['segments'])} segments, index height "
            f"{int(r['index_height'])}, created {r['created']}" if r is not None and pd.notna(r["rows"]) else ""))
        print(f"\nindex ({len(idx)} segments, {int(idx['bytes'].sum()) if len(idx) else 0:,} bytes)")
        emit_table(idx if pickled else _readable_index(idx, lib, args.symbol, version))
        if pickled:
            print("\nsegments: one pickled object (no columns, pages or encodings)")
        else:
            print("\nsegments (per column: pages, encodings, compressed and raw bytes)")
            emit_table(segs)
        return 0
    if args.json:
        emit_json(records(frame))
    else:
        emit_table(_readable_index(frame, lib, args.symbol, version) if args.command == "index" else frame)
    return 0


def plot(args: argparse.Namespace, lib: Any = None, version: Any = None) -> int:
    """``inspect --plot FILE`` / ``plot``: draw the layout of the last ``--versions`` versions."""
    if lib is None:
        lib = open_library(args)
        version = as_of(args.as_of, lib)
    require_symbol(lib, args.symbol)
    if lib.get_description(args.symbol, as_of=version).row_count is None:
        raise CliError(f"symbol {args.symbol!r} holds a pickled object: it has no segments to draw", BAD_INPUT)
    try:
        from arcticlite.plot import plot_layout

        fig = plot_layout(lib, args.symbol, args.plot, versions=args.versions, as_of=version)
    except ImportError as exc:
        raise CliError(str(exc), FAILED) from None
    print(f"drew {len(fig.axes) - 1} version(s) of {args.symbol!r} to {args.plot}")
    return 0


def snapshot_list(args: argparse.Namespace) -> int:
    lib = open_library(args)
    names = sorted(lib.list_snapshots(load_metadata=False))
    if args.json:
        emit_json([{"name": n, "symbols": {v.symbol: v.version for v in lib.list_versions(snapshot=n)}}
                   for n in names])
    else:
        for n in names:
            held = lib.list_versions(snapshot=n)
            print(f"{n}  " + ", ".join(f"{v.symbol}@{v.version}" for v in sorted(held, key=lambda v: v.symbol)))
    return 0
