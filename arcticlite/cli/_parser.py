"""The argument parser: one sub-command per action, each with an example in its ``--help``."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from arcticlite.cli import _bench, _convert, _read, _write

Command = Callable[[argparse.Namespace], int]

_RAW = argparse.RawDescriptionHelpFormatter


def _common() -> argparse.ArgumentParser:
    """The options every command takes (before or after its name)."""
    c = argparse.ArgumentParser(add_help=False)
    g = c.add_mutually_exclusive_group()
    g.add_argument("-q", "--quiet", dest="progress", action="store_false", default=argparse.SUPPRESS,
                   help="no progress bars (default: shown on a terminal; env ARCTICLITE_PROGRESS=0|1)")
    g.add_argument("--progress", dest="progress", action="store_true", default=argparse.SUPPRESS,
                   help="progress bars on stderr even when it is not a terminal")
    c.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                   help="log what the library does (the 'arcticlite' logger at INFO) on stderr")
    return c


_COMMON = _common()


def _add(sub: argparse._SubParsersAction, name: str, fn: Command, help: str, example: str,
         *, library: bool = True, symbol: bool = False, listing: bool = False,
         aliases: tuple[str, ...] = ()) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(name, help=help, description=help, formatter_class=_RAW,
                                                epilog=f"example:\n  {example}", aliases=list(aliases),
                                                parents=[_COMMON])
    p.add_argument("uri", help="the store, as given to Arctic(): lmdb:///path, s3://..., mem://")
    if library:
        p.add_argument("library", help="library name")
    if symbol:
        p.add_argument("symbol", help="symbol name")
    if listing:
        p.add_argument("--json", action="store_true", help="print JSON (for scripts) instead of a table")
    p.set_defaults(fn=fn)
    return p


def _as_of(p: argparse.ArgumentParser) -> None:
    p.add_argument("--as-of", default=None, metavar="VERSION|TIME|SNAPSHOT",
                   help="a version id (negative counts back), an ISO time (2024-01-31T09:30, UTC) or a snapshot "
                        "name (a snapshot named like a date wins); default: the latest version")


def _date_range(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--date-range", nargs=2, metavar=("START", "END"), default=None,
                   help=f"{what}, both ends included (ISO dates or times; '-' for an open end)")


def _plot_options(p: argparse.ArgumentParser, how: str) -> None:
    what = ("draw the layout to FILE (.png, .svg or .pdf) instead of printing it: segments over rows and "
            "column slices, version by version (needs matplotlib: pip install 'arcticlite[plot]')")
    if how == "plot":
        p.add_argument("plot", metavar="FILE", help=what)
    else:
        p.add_argument("--plot", default=None, metavar="FILE", help=what)
    p.add_argument("--versions", type=int, default=4, metavar="N", help="how many versions to draw (default 4)")


def _input(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a Parquet (.parquet), CSV (.csv) or Arrow IPC (.arrow, .feather) file")
    p.add_argument("--format", choices=("parquet", "csv", "arrow"), default=None,
                   help="the file's format (default: from its extension)")
    p.add_argument("--index-column", default=None, metavar="COL",
                   help="the column to index by (ISO date strings in a CSV become timestamps)")
    p.add_argument("--prune", action="store_true", default=None, help="prune the previous versions")
    p.add_argument("--json", action="store_true", help="print the new version as JSON")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="arcticlite", formatter_class=_RAW, parents=[_COMMON],
        description="Look into, load and maintain an arcticlite store (the URIs of Arctic(uri)).",
        epilog="example:\n  arcticlite write lmdb://./data prices AAPL aapl.parquet --index-column time\n"
               "  arcticlite read lmdb://./data prices AAPL --date-range 2024-01-01 2024-01-31 --columns px\n\n"
               "exit codes: 0 ok, 1 failed, 2 bad command line, 3 not found, 4 bad input, 5 file error,\n"
               "6 read-only, 7 commit conflict (see docs/cli.md)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add(sub, "libraries", _read.libraries, "list the libraries of a store",
         "arcticlite libraries lmdb://./data --json", library=False, listing=True)
    s = _add(sub, "symbols", _read.symbols, "list the symbols of a library",
             "arcticlite symbols lmdb://./data prices --regex '^AA'", listing=True)
    s.add_argument("--regex", default=None, help="only symbols matching this regular expression (search)")
    s.add_argument("--snapshot", default=None, help="the symbols of a snapshot")
    _add(sub, "versions", _read.versions, "every commit of a symbol, newest first",
         "arcticlite versions lmdb://./data prices AAPL", symbol=True, listing=True)
    d = _add(sub, "describe", _read.describe, "schema, rows, index range, versions and sizes of a symbol",
             "arcticlite describe lmdb://./data prices AAPL --as-of 3", symbol=True, listing=True)
    _as_of(d)
    r = _add(sub, "read", _read.read, "print a symbol's data, or export it to a file",
             "arcticlite read lmdb://./data prices AAPL --date-range 2024-01-01 - --columns px --to aapl.parquet",
             symbol=True, listing=True)
    _as_of(r)
    _date_range(r, "only rows in this index range")
    r.add_argument("--columns", default=None, metavar="A,B", help="only these columns (comma-separated)")
    n = r.add_mutually_exclusive_group()
    n.add_argument("--head", type=int, default=None, metavar="N", help="the first N rows")
    n.add_argument("--tail", type=int, default=None, metavar="N", help="the last N rows")
    r.add_argument("--rows", type=int, default=None, metavar="N", help=argparse.SUPPRESS)  # the old --head
    r.add_argument("--where", action="append", default=[], metavar="TERM",
                   help="filter, ANDed when repeated: 'COL OP VALUE' (== != < <= > >=), 'COL in [V, ...]', "
                        "'COL isna', 'COL notna'")
    r.add_argument("--explain", action="store_true",
                   help="print what the read prunes and fetches (QueryBuilder.explain) instead of rows")
    r.add_argument("--to", default=None, metavar="FILE",
                   help="write every selected row to FILE (.parquet, .csv or .arrow) instead of printing")
    r.add_argument("--format", choices=("parquet", "csv", "arrow"), default=None,
                   help="the --to file's format (default: from its extension)")
    for name, hlp in (("inspect", "a version's layout: version -> index -> segments, with sizes and encodings"),
                      ("index", "the table-index rows of a version (one per segment; part of inspect)"),
                      ("segments", "per segment and column: pages, encodings, bytes (part of inspect)")):
        c = _add(sub, name, _read.inspect, hlp, f"arcticlite {name} lmdb://./data prices AAPL --as-of 0"
                 + ("\n  arcticlite inspect lmdb://./data prices AAPL --plot aapl.png" if name == "inspect" else ""),
                 symbol=True, listing=True)
        _as_of(c)
        if name == "inspect":
            _plot_options(c, "--plot")
    c = _add(sub, "plot", _read.plot, "draw a symbol's layout, version by version, to a PNG/SVG (needs matplotlib)",
             "arcticlite plot lmdb://./data prices AAPL aapl.png --versions 6", symbol=True)
    _as_of(c)
    _plot_options(c, "plot")
    for name, fn, verb in (("write", _write.write, "write a file as a new version of a symbol (creating the "
                                                   "store and library if needed)"),
                           ("append", _write.append, "append a file's rows to a symbol (creating it if needed)")):
        c = _add(sub, name, fn, verb,
                 f"arcticlite {name} lmdb://./data prices AAPL aapl.csv --index-column time", symbol=True)
        _input(c)
    u = _add(sub, "update", _write.update, "replace the rows of a symbol in the index range of a file's rows",
             "arcticlite update lmdb://./data prices AAPL fix.parquet --index-column time", symbol=True)
    _input(u)
    u.add_argument("--upsert", action="store_true", help="write the symbol if it does not exist")
    _date_range(u, "the range to replace (default: the file's first to last index)")
    x = _add(sub, "delete", _write.delete, "delete a symbol, some of its versions, or its rows in a date range",
             "arcticlite delete lmdb://./data prices AAPL --version 0 --version 1", symbol=True)
    x.add_argument("--version", type=int, action="append", default=[], metavar="N",
                   help="delete only this version (repeatable)")
    _date_range(x, "delete only the rows in this range (a new version)")
    x.add_argument("--prune", action="store_true", default=None, help="prune the previous versions")
    x.add_argument("--json", action="store_true", help="print the result as JSON")
    sn = sub.add_parser("snapshot", help="create, list or delete snapshots", description="Named sets of versions.",
                        formatter_class=_RAW, parents=[_COMMON], epilog="example:\n  arcticlite snapshot create lmdb://./data prices eod")
    ss = sn.add_subparsers(dest="action", required=True, metavar="ACTION")
    c = _add(ss, "create", _write.snapshot, "record the latest version of every symbol under a name",
             "arcticlite snapshot create lmdb://./data prices eod-2024-01-31 --version AAPL=3", listing=True)
    c.add_argument("name", help="snapshot name")
    c.add_argument("--skip", action="append", default=[], metavar="SYMBOL", help="leave out this symbol (repeatable)")
    c.add_argument("--version", action="append", default=[], metavar="SYMBOL=N",
                   help="snapshot only these versions (repeatable)")
    _add(ss, "list", _read.snapshot_list, "the snapshots of a library and the versions they hold",
         "arcticlite snapshot list lmdb://./data prices --json", listing=True)
    c = _add(ss, "delete", _write.snapshot, "delete a snapshot (data no version needs is removed)",
             "arcticlite snapshot delete lmdb://./data prices eod-2024-01-31")
    c.add_argument("name", help="snapshot name")
    k = _add(sub, "compact", _write.compact,
             "merge small segments of a symbol (or of every symbol); fold the delta segments of merges",
             "arcticlite compact lmdb://./data prices AAPL --plan", listing=True)
    k.add_argument("symbol", nargs="?", default=None, help="symbol name (default: every symbol)")
    k.add_argument("--plan", action="store_true", help="only print what would be rewritten (and the groups of "
                   "deltas that would be folded)")
    k.add_argument("--workers", type=int, default=1, metavar="N",
                   help="fold groups of deltas N at a time (default 1)")
    k.add_argument("--processes", action="store_true",
                   help="fold the groups in N worker processes instead of threads (LMDB or S3)")
    k.add_argument("--rows-per-segment", type=int, default=None, metavar="N",
                   help="target rows per segment (default: the library's)")
    g = _add(sub, "gc", _write.gc, "delete unreachable segments and index nodes",
             "arcticlite gc lmdb://./data prices --dry-run", listing=True)
    g.add_argument("--grace", type=float, default=3600.0, help="seconds a key must stay unreachable (default 3600)")
    g.add_argument("--dry-run", action="store_true", help="report without deleting")
    v = _add(sub, "verify", _read.verify, "check a store (or one library) for damage; changes nothing",
             "arcticlite verify lmdb://./data --library prices", library=False, listing=True)
    v.add_argument("--library", default=None, help="check this library only (default: the whole store)")
    v.add_argument("--no-data", action="store_true",
                   help="check that data segments are present without decoding them (faster)")
    cv = sub.add_parser("convert", help="convert a file between Parquet and Fermion (by their extensions)",
                        description="Convert a Parquet file to Fermion or back; the extensions (.parquet, "
                                    ".fermion) give the direction.", formatter_class=_RAW, parents=[_COMMON],
                        epilog="example:\n  arcticlite convert trades.parquet trades.fermion")
    cv.add_argument("src", help="the input file (.parquet or .fermion)")
    cv.add_argument("dst", help="the output file (.fermion or .parquet)")
    cv.add_argument("--json", action="store_true", help="print the result as JSON")
    cv.set_defaults(fn=_convert.convert)
    m = sub.add_parser("import-arcticdb", help="copy an ArcticDB store into an arcticlite store (needs arcticdb)",
                       formatter_class=_RAW, parents=[_COMMON],
                       epilog="example:\n  arcticlite import-arcticdb lmdb://./arcticdb_store lmdb://./data")
    m.add_argument("source", help="the ArcticDB store's URI, e.g. lmdb:///data/old")
    m.add_argument("target", help="the arcticlite store's URI, e.g. lmdb:///data/new")
    m.add_argument("--library", action="append", help="a library to copy (repeatable; default: all)")
    m.add_argument("--all-versions", action="store_true", help="every live version, not only the latest")
    b = sub.add_parser("bench", formatter_class=_RAW, parents=[_COMMON],
                       help="time a built-in workload on arcticlite, Parquet and ArcticDB (if installed)",
                       description="Time writing and reading a generated frame (10 columns: floats, ints, a "
                                   "venue string; a 1-second DatetimeIndex) on arcticlite (LMDB), Parquet "
                                   "files and, if installed, ArcticDB (LMDB). Every run is a fresh process "
                                   "importing only its engine; the engines' order alternates run by run; "
                                   "os.sync() before each timed call; median and min-max of the runs.",
                       epilog="example:\n  arcticlite bench --quick\n"
                              "  arcticlite bench --rows 5000000 --runs 7 --out bench.json --plot bench.png")
    b.add_argument("--quick", action="store_true", help="100,000 rows and 3 runs (default: 1,000,000 and 5)")
    b.add_argument("--rows", type=int, default=None, metavar="N", help="rows of the frame")
    b.add_argument("--runs", type=int, default=None, metavar="N", help="timed runs per engine and operation")
    b.add_argument("--engines", default=None, metavar="A,B",
                   help="among arcticlite, arcticdb, parquet (default: every one installed)")
    b.add_argument("--ops", default=None, metavar="A,B",
                   help="among write, read, date_range, columns (default: all)")
    b.add_argument("--dir", default=None, metavar="DIR", help="where the stores go (default: a temporary folder)")
    b.add_argument("--out", default=None, metavar="FILE.json", help="also write the results as JSON")
    b.add_argument("--plot", default=None, metavar="FILE.png", help="also draw them as a chart (needs matplotlib)")
    b.add_argument("--json", action="store_true", help="print JSON instead of the table")
    b.set_defaults(fn=_bench.bench)
    f = sub.add_parser("fermion", help="Fermion file tools (from-parquet, to-parquet, inspect)",
                       description="Convert Parquet files to Fermion and back, or show a Fermion file's layout.",
                       formatter_class=_RAW, parents=[_COMMON],
                       epilog="example:\n  arcticlite fermion inspect trades.fermion --pages")
    fs = f.add_subparsers(dest="action", required=True, metavar="ACTION")
    a = fs.add_parser("from-parquet", help="convert a Parquet file to Fermion", formatter_class=_RAW,
                      epilog="example:\n  arcticlite fermion from-parquet trades.parquet trades.fermion")
    a.add_argument("src", help="the Parquet file")
    a.add_argument("dst", help="the Fermion file to write")
    a.add_argument("--page-size", type=int, default=None, metavar="BYTES", help="target page size")
    a.add_argument("--stripe-rows", type=int, default=None, metavar="N", help="rows per stripe")
    a.add_argument("--json", action="store_true", help="print the file written as JSON")
    b2 = fs.add_parser("to-parquet", help="convert a Fermion file to Parquet", formatter_class=_RAW,
                       epilog="example:\n  arcticlite fermion to-parquet trades.fermion trades.parquet")
    b2.add_argument("src", help="the Fermion file")
    b2.add_argument("dst", help="the Parquet file to write")
    b2.add_argument("--compression", default="zstd", help="Parquet codec (zstd, snappy, none; default zstd)")
    b2.add_argument("--json", action="store_true", help="print the file written as JSON")
    i = fs.add_parser("inspect", help="print schema, columns, pages, encodings and sizes", formatter_class=_RAW,
                      epilog="example:\n  arcticlite fermion inspect trades.fermion --json")
    i.add_argument("file", help="the Fermion file")
    i.add_argument("--pages", action="store_true", help="list every page")
    i.add_argument("--json", action="store_true", help="print JSON (for scripts) instead of a table")
    f.set_defaults(fn=_convert.fermion)
    return p
