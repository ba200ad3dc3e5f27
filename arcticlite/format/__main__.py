"""``python -m arcticlite.format``: convert to/from Parquet and inspect Fermion files.

::

    python -m arcticlite.format from-parquet IN.parquet OUT.fermion [--page-size N]
    python -m arcticlite.format to-parquet IN.fermion OUT.parquet [--compression zstd]
    python -m arcticlite.format inspect FILE [--pages] [--json]

A bad or missing input file is one line on stderr and exit 1; a failed conversion leaves no file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any, TextIO

import pyarrow as pa

from arcticlite.exceptions import ArcticException
from arcticlite.format._parquet import from_parquet, to_parquet
from arcticlite.format._reader import FermionReader


def summary(path: str, pages: bool = False) -> dict[str, Any]:
    """The layout of a Fermion file as plain data (what ``inspect`` prints and ``--json``
    gives): file, version, rows, stripes, page size, metadata areas, and per column its type,
    nulls, pages, stored and raw bytes and encodings (and every page when ``pages``)."""
    with FermionReader(path) as r:
        out: dict[str, Any] = {
            "file": path, "bytes": r.range_reader.size, "version": f"{r.version[0]}.{r.version[1]}",
            "rows": r.num_rows, "stripes": r.num_stripes, "batch_mode": bool(r.batch_mode),
            "page_size": int(r.footer["page_size"]),
            "metadata_bytes": {"cmb_area": int(r.footer["cmb_area_length"]), "schema": int(r.footer["schema_length"]),
                               "name_index": int(r.footer["name_index_slots"]) * 16,
                               "cit": r.footer.cit_entries * 64},
            "schema_metadata": [k.decode("utf-8", "replace") for k in (r.metadata or {})],
            "columns": [],
        }
        for i in range(r.num_columns):
            f = r.field(i)
            cm = r.column_meta(i)
            stats = r.page_stats(i) if not cm.all_null else []
            enc = Counter(r.describe_page(s["offset"], s["compressed"]) for s in stats if s["stream"] != "VALIDITY")
            col: dict[str, Any] = {
                "column": i, "name": f.name, "type": str(f.type), "nulls": int(cm.null_count), "pages": len(stats),
                "stored_bytes": int(sum(s["compressed"] for s in stats)), "raw_bytes": int(sum(s["raw"] for s in stats)),
                "all_null": bool(cm.all_null), "encodings": dict(enc.most_common()),
            }
            if pages:
                col["page_list"] = [{**{k: (v if isinstance(v, str | int | float | None) else str(v))
                                        for k, v in s.items()},
                                     "encoding": r.describe_page(s["offset"], s["compressed"])} for s in stats]
            out["columns"].append(col)
    return out


def inspect(path: str, out: TextIO = sys.stdout, pages: bool = False) -> None:
    """Print the layout of a Fermion file: schema, columns, pages, encodings and sizes."""
    d = summary(path, pages=pages)
    p = out.write
    m = d["metadata_bytes"]
    p(f"file        {path} ({d['bytes']:,} bytes)\n")
    p(f"version     {d['version']}\n")
    p(f"rows        {d['rows']:,} in {d['stripes']} stripe(s){'; batch mode' if d['batch_mode'] else ''}\n")
    p(f"page size   {d['page_size']:,} bytes\n")
    p(f"metadata    CMB area {m['cmb_area']:,} B, schema {m['schema']:,} B, name index {m['name_index']:,} B, "
      f"CIT {m['cit']:,} B\n")
    if d["schema_metadata"]:
        p(f"schema meta {', '.join(d['schema_metadata'])}\n")
    p("\n  # column                          type                       nulls   pages"
      "   stored B      raw B  ratio  encodings\n")
    for c in d["columns"]:
        stored, raw = c["stored_bytes"], c["raw_bytes"]
        encs = "ALL NULL (no CMB)" if c["all_null"] else ", ".join(
            f"{k}×{v}" if v > 1 else k for k, v in list(c["encodings"].items())[:4])
        ratio = f"{raw / stored:5.1f}" if stored else "    -"
        p(f"{c['column']:3d} {c['name'][:30]:30s}  {c['type'][:26]:26s} {c['nulls']:7,d} "
          f"{c['pages']:7d} {stored:10,d} {raw:10,d}  {ratio}  {encs}\n")
        for s in c.get("page_list", []):
            p(f"      stripe {s['stripe']} node {s['node']} {s['stream']:9s} page {s['page']:4d}"
              f" rows {s['rows']:8,d} nulls {s['nulls']:6,d} {s['compressed']:9,d} B"
              f" / {s['raw']:9,d} B  min {s['min']} max {s['max']}  {s['encoding']}\n")


def _atomic(dst: str, write: Callable[[str], object]) -> None:
    """``write(tmp)`` beside ``dst``, then rename it: a failed conversion leaves no file."""
    tmp = f"{dst}.tmp-{os.getpid()}"
    try:
        write(tmp)
        os.replace(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m arcticlite.format", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("from-parquet", help="convert a Parquet file to Fermion")
    a.add_argument("src")
    a.add_argument("dst")
    a.add_argument("--page-size", type=int, default=None)
    a.add_argument("--stripe-rows", type=int, default=None)
    b = sub.add_parser("to-parquet", help="convert a Fermion file to Parquet")
    b.add_argument("src")
    b.add_argument("dst")
    b.add_argument("--compression", default="zstd")
    c = sub.add_parser("inspect", help="print schema, columns, pages, encodings and sizes")
    c.add_argument("file")
    c.add_argument("--pages", action="store_true", help="list every page")
    c.add_argument("--json", action="store_true", help="print JSON instead of the table")
    args = ap.parse_args(argv)
    src = args.file if args.cmd == "inspect" else args.src
    if not os.path.isfile(src):
        print(f"error: input file {src!r} does not exist", file=sys.stderr)
        return 1
    try:
        if args.cmd == "from-parquet":
            opts = {k: v for k, v in (("page_size", args.page_size),
                                      ("stripe_rows", args.stripe_rows)) if v is not None}
            _atomic(args.dst, lambda tmp: from_parquet(args.src, tmp, **opts))
        elif args.cmd == "to-parquet":
            comp = None if args.compression.lower() == "none" else args.compression
            _atomic(args.dst, lambda tmp: to_parquet(args.src, tmp, compression=comp))
        elif args.json:
            print(json.dumps(summary(args.file, pages=args.pages), indent=2, default=str))
        else:
            inspect(args.file, pages=args.pages)
    except (ArcticException, OSError, pa.ArrowException) as exc:  # a bad input file: one line, no traceback
        print(f"error: {src}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
