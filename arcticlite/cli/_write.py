"""The commands that change a store: ``write``, ``append``, ``update``, ``delete``,
``snapshot create|delete``, ``compact``, ``gc``. Only ``write`` and ``append`` create a store
or a library; the others refuse a missing one. Bad input is refused before anything is
written."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import pandas as pd

from arcticlite.cli._common import (
    BAD_INPUT,
    NOT_FOUND,
    CliError,
    date_range,
    emit_json,
    open_library,
    read_frame,
    require_symbol,
)
from arcticlite.progress import Progress


def _report(args: argparse.Namespace, verb: str, item: Any, rows: int) -> int:
    if args.json:
        emit_json({"symbol": item.symbol, "library": item.library, "version": item.version, "rows": rows})
    else:
        print(f"{verb} {rows:,} rows: {item.symbol!r} is now version {item.version} in library {item.library!r}")
    return 0


def write(args: argparse.Namespace) -> int:
    df = read_frame(args.file, args.format, args.index_column)  # before opening: a bad file creates nothing
    lib = open_library(args, writes=True, creates=True)
    return _report(args, "wrote", lib.write(args.symbol, df, prune_previous_versions=args.prune), len(df))


def append(args: argparse.Namespace) -> int:
    df = read_frame(args.file, args.format, args.index_column)
    lib = open_library(args, writes=True, creates=True)
    return _report(args, "appended", lib.append(args.symbol, df, prune_previous_versions=args.prune), len(df))


def update(args: argparse.Namespace) -> int:
    df = read_frame(args.file, args.format, args.index_column)
    dr = date_range(args.date_range)
    lib = open_library(args, writes=True)
    if not args.upsert:
        require_symbol(lib, args.symbol)
    item = lib.update(args.symbol, df, upsert=args.upsert, date_range=dr, prune_previous_versions=args.prune)
    return _report(args, "updated", item, len(df))


def delete(args: argparse.Namespace) -> int:
    dr = date_range(args.date_range)
    if dr is not None and args.version:
        raise CliError("give --date-range or --version, not both", BAD_INPUT)
    lib = open_library(args, writes=True)
    require_symbol(lib, args.symbol)
    if dr is not None:
        before = lib.get_description(args.symbol).row_count or 0
        lib.delete_data_in_range(args.symbol, dr, prune_previous_versions=args.prune)
        item = lib.read_metadata(args.symbol)
        return _report(args, "deleted", item, before - (lib.get_description(args.symbol).row_count or 0))
    if args.version:
        live = {v.version for v in lib.list_versions(args.symbol)}
        gone = sorted(set(args.version) - live)
        if gone:
            raise CliError(f"symbol {args.symbol!r} has no live version {', '.join(map(str, gone))} (live: "
                           f"{', '.join(map(str, sorted(live)))}); nothing was deleted", NOT_FOUND)
    lib.delete(args.symbol, args.version or None)
    what = f"versions {', '.join(map(str, args.version))} of" if args.version else "every version of"
    if args.json:
        emit_json({"symbol": args.symbol, "deleted_versions": args.version or "all"})
    else:
        print(f"deleted {what} {args.symbol!r}")
    return 0


def snapshot(args: argparse.Namespace) -> int:
    lib = open_library(args, writes=True)
    if args.action == "create":
        versions = None
        if args.version:
            versions = {}
            for pair in args.version:
                sym, sep, vid = pair.rpartition("=")
                if not sep or not sym or not vid.lstrip("-").isdigit():
                    raise CliError(f"--version {pair!r}: write SYMBOL=VERSION, e.g. --version AAPL=3", BAD_INPUT)
                versions[sym] = int(vid)
        if args.name in lib.list_snapshots(load_metadata=False):  # a name is taken once (snapshots never change)
            raise CliError(f"snapshot {args.name!r} already exists in library {lib.name!r}; pick another name or "
                           "'arcticlite snapshot delete' it first", BAD_INPUT)
        lib.snapshot(args.name, skip_symbols=args.skip or None, versions=versions)
        held = {v.symbol: v.version for v in lib.list_versions(snapshot=args.name)}
        if args.json:
            emit_json({"name": args.name, "symbols": held})
        else:
            print(f"created snapshot {args.name!r} of {len(held)} symbols")
    else:
        if args.name not in lib.list_snapshots(load_metadata=False):
            raise CliError(f"no snapshot {args.name!r} in library {lib.name!r}; 'arcticlite snapshot list' lists "
                           "them", NOT_FOUND)
        lib.delete_snapshot(args.name)
        print(f"deleted snapshot {args.name!r}")
    return 0


def _plan(p: Any) -> dict[str, Any]:
    return {"symbol": p.symbol, "version": p.version, "rows_per_segment": p.rows_per_segment,
            "will_do_work": p.will_do_work, "segments_before": p.segments_before, "segments_after": p.segments_after,
            "rows_to_rewrite": p.rows_to_rewrite}


def _key(value: int | None, timeseries: bool) -> str:
    if value is None:
        return "..."
    return str(pd.Timestamp(value, unit="ns")) if timeseries else f"row {value:,}"


def compact(args: argparse.Namespace) -> int:
    lib = open_library(args, writes=not args.plan)
    if args.symbol:
        require_symbol(lib, args.symbol)
        if lib.get_description(args.symbol).row_count is None:
            raise CliError(f"symbol {args.symbol!r} holds a pickled object: it has no segments to compact", BAD_INPUT)
    # every symbol holding a table (a pickled object has no segments to compact)
    syms = [args.symbol] if args.symbol else [s for s in sorted(lib.list_symbols())
                                              if lib.get_description(s).row_count is not None]
    if args.workers < 1:
        raise CliError(f"--workers must be at least 1, got {args.workers}", BAD_INPUT)
    out = []
    with Progress(len(syms), "compact", unit="symbol") as bar:
        for sym in syms:
            fold = lib.compaction_plan(sym)
            if fold.will_do_work:  # merges kept as delta segments: compaction folds them
                row: dict[str, Any] = {
                    "symbol": sym, "version": fold.version, "will_do_work": True, "deltas": fold.layers,
                    "delta_rows": fold.delta_rows, "due": fold.due, "groups": fold.groups(),
                    "timeseries": fold.timeseries,
                    "untouched_row_groups": fold.untouched_row_groups, "row_groups": fold.row_groups}
                if not args.plan:
                    row["new_version"] = lib.compact_deltas(sym, workers=args.workers,
                                                           executor="process" if args.processes else "thread").version
            else:
                plan = lib.compact_data_explain_plan(sym, args.rows_per_segment)
                row = _plan(plan)
                if not args.plan and plan.will_do_work:
                    row["new_version"] = lib.compact_data(sym, args.rows_per_segment).version
            out.append(row)
            bar.update(1)
    if args.json:
        emit_json(out)
        return 0
    for r in out:
        if "deltas" in r:
            head = (f"{r['symbol']}: version {r['version']} has {r['deltas']} merges as deltas ({r['delta_rows']:,} "
                    f"rows{', compaction due' if r['due'] else ''}); ")
            if args.plan:
                ngroups = len({g["group"] for g in r["groups"]})
                print(head + f"{ngroups} groups ({len(r['groups'])} tasks) to fold, {r['untouched_row_groups']} of "
                      f"{r['row_groups']} row groups untouched")
                for g in r["groups"]:
                    print(f"  group {g['group']}.{g['part']}: rows {g['start_row']:,}-{g['end_row']:,}, keys "
                          f"{_key(g['key_from'], r['timeseries'])} to {_key(g['key_to'], r['timeseries'])}, "
                          f"{g['base_segments']} base + {g['delta_segments']} delta segments, {g['rows']:,} rows, "
                          f"{g['bytes']:,} bytes, {g['changes']:,} changes")
            else:
                print(head + f"folded into version {r['new_version']} ({len({g['group'] for g in r['groups']})} groups)")
            continue
        if not r["will_do_work"]:
            print(f"{r['symbol']}: version {r['version']} is compact ({r['segments_before']} segments)")
        elif args.plan:
            print(f"{r['symbol']}: would rewrite {r['rows_to_rewrite']:,} rows of version {r['version']}, "
                  f"{r['segments_before']} -> {r['segments_after']} segments")
        else:
            print(f"{r['symbol']}: version {r['new_version']} rewrote {r['rows_to_rewrite']:,} rows, "
                  f"{r['segments_before']} -> {r['segments_after']} segments")
    return 0


def gc(args: argparse.Namespace) -> int:
    lib = open_library(args, writes=not args.dry_run)
    report = lib.gc(grace_period=args.grace, dry_run=args.dry_run)
    if args.json:
        emit_json({"dry_run": args.dry_run, **dataclasses.asdict(report)})
        return 0
    young = (f"; {report.deferred:,} unreachable for less than the grace period ({args.grace:g} s) are kept "
             "for a later gc" if report.deferred else "")
    if args.dry_run:
        print(f"{report.keys_scanned:,} keys scanned in library {lib.name!r}: {report.unreachable:,} unreachable, "
              f"{report.unreachable - report.deferred:,} of them would be deleted{young} (dry run: nothing deleted)")
    else:
        print(f"{report.keys_scanned:,} keys scanned in library {lib.name!r}: {report.unreachable:,} unreachable, "
              f"{report.deleted:,} deleted{young}")
    return 0
