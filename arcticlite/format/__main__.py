"""``python -m arcticlite.format``: convert to/from Parquet and inspect Fermion files.

::

    python -m arcticlite.format from-parquet IN.parquet OUT.fermion [--page-size N]
    python -m arcticlite.format to-parquet IN.fermion OUT.parquet [--compression zstd]
    python -m arcticlite.format inspect FILE [--pages]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import TextIO

from arcticlite.exceptions import ArcticException
from arcticlite.format._parquet import from_parquet, to_parquet
from arcticlite.format._reader import FermionReader


def inspect(path: str, out: TextIO = sys.stdout, pages: bool = False) -> None:
    """Print the layout of a Fermion file: schema, columns, pages, encodings and sizes."""
    with FermionReader(path) as r:
        size = r.range_reader.size
        p = out.write
        p(f"file        {path} ({size:,} bytes)\n")
        p(f"version     {r.version[0]}.{r.version[1]}\n")
        p(f"rows        {r.num_rows:,} in {r.num_stripes} stripe(s)"
          f"{'; batch mode' if r.batch_mode else ''}\n")
        p(f"page size   {int(r.footer['page_size']):,} bytes\n")
        p(f"metadata    CMB area {int(r.footer['cmb_area_length']):,} B, schema "
          f"{int(r.footer['schema_length']):,} B, name index "
          f"{int(r.footer['name_index_slots']) * 16:,} B, CIT {r.footer.cit_entries * 64:,} B\n")
        if r.metadata:
            keys = ", ".join(k.decode("utf-8", "replace") for k in r.metadata)
            p(f"schema meta {keys}\n")
        p("\n  # column                          type                       nulls   pages"
          "   stored B      raw B  ratio  encodings\n")
        for i in range(r.num_columns):
            f = r.field(i)
            cm = r.column_meta(i)
            stats = r.page_stats(i) if not cm.all_null else []
            stored = sum(s["compressed"] for s in stats)
            raw = sum(s["raw"] for s in stats)
            enc = Counter(r.describe_page(s["offset"], s["compressed"]) for s in stats
                          if s["stream"] != "VALIDITY")
            encs = "ALL NULL (no CMB)" if cm.all_null else ", ".join(
                f"{k}×{v}" if v > 1 else k for k, v in enc.most_common(4))
            ratio = f"{raw / stored:5.1f}" if stored else "    -"
            p(f"{i:3d} {f.name[:30]:30s}  {str(f.type)[:26]:26s} {cm.null_count:7,d} "
              f"{len(stats):7d} {stored:10,d} {raw:10,d}  {ratio}  {encs}\n")
            if pages:
                for s in stats:
                    p(f"      stripe {s['stripe']} node {s['node']} {s['stream']:9s} page {s['page']:4d}"
                      f" rows {s['rows']:8,d} nulls {s['nulls']:6,d} {s['compressed']:9,d} B"
                      f" / {s['raw']:9,d} B  min {s['min']} max {s['max']}"
                      f"  {r.describe_page(s['offset'], s['compressed'])}\n")


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
    args = ap.parse_args(argv)
    try:
        if args.cmd == "from-parquet":
            opts = {k: v for k, v in (("page_size", args.page_size),
                                      ("stripe_rows", args.stripe_rows)) if v is not None}
            from_parquet(args.src, args.dst, **opts)
        elif args.cmd == "to-parquet":
            comp = None if args.compression.lower() == "none" else args.compression
            to_parquet(args.src, args.dst, compression=comp)
        else:
            inspect(args.file, pages=args.pages)
    except (ArcticException, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
