"""Command line: ``arcticlite`` / ``python -m arcticlite``.

Look at what a store holds (libraries, symbols, versions, index rows, segments and their
encodings), collect garbage, and convert between Fermion and Parquet::

    arcticlite libraries  lmdb://./data
    arcticlite symbols    lmdb://./data prices
    arcticlite versions   lmdb://./data prices AAPL
    arcticlite index      lmdb://./data prices AAPL [--as-of 3]
    arcticlite segments   lmdb://./data prices AAPL [--as-of 3]
    arcticlite read       lmdb://./data prices AAPL [--as-of 3] [--rows 10]
                          [--where 'ticker == "T1"' ...] [--explain]
    arcticlite gc         lmdb://./data prices [--grace 3600] [--dry-run]
    arcticlite fermion    {from-parquet,to-parquet,inspect} ...
    arcticlite import-arcticdb lmdb://./arcticdb_store lmdb://./data [--library prices]
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import pandas as pd


def _as_of(value: str | None) -> Any:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return value  # a snapshot name


_WHERE_OPS = ("==", "!=", "<=", ">=", "<", ">")


def _where(terms: list[str]) -> Any:
    """A ``QueryBuilder`` filtering on the ANDed ``--where`` terms: ``COL OP VALUE`` (OP one of
    ``== != < <= > >=``), ``COL in [V, ...]``, ``COL isna`` / ``COL notna``; values are Python
    literals (``42``, ``1.5``, ``"text"``). None without terms."""
    import ast
    import re

    from arcticlite import QueryBuilder
    from arcticlite.exceptions import UserInputException

    if not terms:
        return None
    q = QueryBuilder()
    cond = None
    for term in terms:
        m = re.fullmatch(r"\s*([^\s=!<>]+)\s*(==|!=|<=|>=|<|>|\s+in\s+|\s+isna|\s+notna)\s*(.*)", term)
        if m is None:
            raise UserInputException(f"--where {term!r}: write COL OP VALUE (OP one of {' '.join(_WHERE_OPS)}), "
                                     "COL in [V, ...], COL isna or COL notna")
        col, op, text = m.group(1), m.group(2).strip(), m.group(3).strip()
        if op in ("isna", "notna"):
            if text:
                raise UserInputException(f"--where {term!r}: {op} takes no value")
            e = q[col].isna() if op == "isna" else q[col].notna()
        else:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                raise UserInputException(f"--where {term!r}: {text!r} is not a literal; quote strings "
                                         "('ticker == \"T1\"')") from None
            if op == "in":
                if not isinstance(value, list | tuple | set):
                    raise UserInputException(f"--where {term!r}: 'in' takes a list, e.g. [1, 2]")
                e = q[col].isin(list(value))
            else:
                e = {"==": q[col] == value, "!=": q[col] != value, "<": q[col] < value, "<=": q[col] <= value,
                     ">": q[col] > value, ">=": q[col] >= value}[op]
        cond = e if cond is None else cond & e
    return q[cond]


def _refuse_missing_store(uri: str) -> None:
    """A command that reads never creates the store it is pointed at (an ``lmdb://`` folder
    that does not exist is an error, not a new empty store)."""
    import os

    from arcticlite.exceptions import UserInputException
    from arcticlite.storage import LmdbUri, parse_uri

    parsed = parse_uri(uri)
    if isinstance(parsed, LmdbUri) and not os.path.exists(os.path.join(parsed.path, "data.mdb")):
        raise UserInputException(f"no arcticlite store at {parsed.path!r} (nothing was created); check the URI")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="arcticlite", description="Inspect and maintain an arcticlite store.")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("libraries", help="list libraries").add_argument("uri")
    s = sub.add_parser("symbols", help="list symbols of a library")
    s.add_argument("uri")
    s.add_argument("library")
    for name, hlp in (("versions", "every commit of a symbol"), ("index", "table-index rows of a version"),
                      ("segments", "segments, columns, encodings and sizes of a version"),
                      ("read", "print a version's data")):
        c = sub.add_parser(name, help=hlp)
        c.add_argument("uri")
        c.add_argument("library")
        c.add_argument("symbol")
        if name != "versions":
            c.add_argument("--as-of", default=None, help="version id or snapshot name")
        if name == "read":
            c.add_argument("--rows", type=int, default=20, help="rows to print (head)")
            c.add_argument("--where", action="append", default=[], metavar="TERM",
                           help="filter, ANDed when repeated: 'COL OP VALUE' (== != < <= > >=), "
                                "'COL in [V, ...]', 'COL isna', 'COL notna'")
            c.add_argument("--explain", action="store_true",
                           help="print what the read prunes and fetches (QueryBuilder.explain) instead of rows")
    g = sub.add_parser("gc", help="delete unreachable segments and index nodes")
    g.add_argument("uri")
    g.add_argument("library")
    g.add_argument("--grace", type=float, default=3600.0, help="seconds (default 3600)")
    g.add_argument("--dry-run", action="store_true")
    m = sub.add_parser("import-arcticdb", help="copy an ArcticDB store into an arcticlite store (needs arcticdb)")
    m.add_argument("source", help="the ArcticDB store's URI, e.g. lmdb:///data/old")
    m.add_argument("target", help="the arcticlite store's URI, e.g. lmdb:///data/new")
    m.add_argument("--library", action="append", help="a library to copy (repeatable; default: all)")
    m.add_argument("--all-versions", action="store_true", help="every live version, not only the latest")
    sub.add_parser("fermion", help="Fermion tools (from-parquet, to-parquet, inspect)", add_help=False)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "fermion":
        from arcticlite.format.__main__ import main as fermion_main

        return int(fermion_main(argv[1:]) or 0)
    args = _parser().parse_args(argv)
    import arcticlite as adb
    from arcticlite.exceptions import ArcticException

    pd.set_option("display.width", 200)
    pd.set_option("display.max_columns", 20)
    if args.command == "import-arcticdb":
        from arcticlite.migrate import import_arcticdb

        try:
            done = import_arcticdb(args.source, args.target, args.library, all_versions=args.all_versions)
        except ArcticException as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"copied {sum(done.values())} versions of {len(done)} libraries")
        return 0
    try:
        _refuse_missing_store(args.uri)  # every command below only reads (gc deletes garbage)
        ac = adb.Arctic(args.uri, read_only=args.command != "gc" or args.dry_run)
        if args.command == "libraries":
            print("\n".join(ac.list_libraries()))
            return 0
        lib = ac.get_library(args.library)
        if args.command == "symbols":
            print("\n".join(sorted(lib.list_symbols())))
        elif args.command == "versions":
            print(lib.inspect_versions(args.symbol).to_string(index=False))
        elif args.command == "index":
            print(lib.inspect_index(args.symbol, _as_of(args.as_of)).to_string(index=False))
        elif args.command == "segments":
            print(lib.inspect_segments(args.symbol, _as_of(args.as_of)).to_string(index=False))
        elif args.command == "read":
            q = _where(args.where)
            if args.explain:
                from arcticlite import QueryBuilder

                print((q if q is not None else QueryBuilder()).explain(lib, args.symbol, as_of=_as_of(args.as_of)))
            elif q is not None:
                print(lib.read(args.symbol, as_of=_as_of(args.as_of), query_builder=q.head(args.rows)).data)
            else:
                print(lib.head(args.symbol, args.rows, as_of=_as_of(args.as_of)).data)
        elif args.command == "gc":
            print(lib.gc(grace_period=args.grace, dry_run=args.dry_run))
    except ArcticException as exc:
        print(f"arcticlite: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
