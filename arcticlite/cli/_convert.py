"""``convert IN OUT``: Parquet ↔ Fermion files, the direction told by the extensions, and the
``fermion from-parquet | to-parquet | inspect`` tools, all with the command line's errors and
exit codes: a missing or unreadable input is exit 5, and a failed conversion leaves no file."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from arcticlite.cli._common import BAD_INPUT, FILE_ERROR, CliError, emit_json
from arcticlite.exceptions import ArcticException

_KINDS = {".parquet": "parquet", ".pq": "parquet", ".fermion": "fermion", ".frmn": "fermion"}


def _kind(path: str, what: str) -> str:
    kind = _KINDS.get(os.path.splitext(path)[1].lower())
    if kind is None:
        raise CliError(f"{what} {path!r}: name it .parquet or .fermion", BAD_INPUT)
    return kind


def _existing(path: str) -> None:
    if not os.path.isfile(path):
        raise CliError(f"input file {path!r} does not exist (nothing was written)", FILE_ERROR)


def _atomic(src: str, dst: str, write: Callable[[str], object]) -> int:
    """``write(tmp)`` beside ``dst``, then rename it to ``dst``; a failure leaves no file.
    Returns the size written."""
    import pyarrow as pa

    _existing(src)
    tmp = f"{dst}.tmp-{os.getpid()}"
    try:
        write(tmp)
        os.replace(tmp, dst)
    except (OSError, pa.ArrowException, ArcticException) as exc:
        raise CliError(f"cannot convert {src!r} to {dst!r}: {exc} (nothing was written)", FILE_ERROR) from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return os.path.getsize(dst)


def convert(args: argparse.Namespace) -> int:
    from arcticlite.format import from_parquet, to_parquet

    src, dst = _kind(args.src, "input file"), _kind(args.dst, "output file")
    if src == dst:
        raise CliError(f"convert {args.src!r} to {args.dst!r}: one must be .parquet, the other .fermion", BAD_INPUT)
    size = _atomic(args.src, args.dst, lambda tmp: from_parquet(args.src, tmp) if src == "parquet"
                   else to_parquet(args.src, tmp))
    if args.json:
        emit_json({"input": args.src, "output": args.dst, "bytes": size})
    else:
        print(f"wrote {args.dst} ({size:,} bytes, {dst})")
    return 0


def fermion(args: argparse.Namespace) -> int:
    """``fermion from-parquet | to-parquet | inspect`` (``python -m arcticlite.format``)."""
    from arcticlite.format import from_parquet, to_parquet
    from arcticlite.format.__main__ import inspect, summary

    if args.action == "inspect":
        if not os.path.isfile(args.file):
            raise CliError(f"input file {args.file!r} does not exist", FILE_ERROR)
        try:
            if args.json:
                emit_json(summary(args.file, pages=args.pages))
            else:
                inspect(args.file, out=sys.stdout, pages=args.pages)
        except (OSError, ArcticException) as exc:
            raise CliError(f"cannot read {args.file!r} as a Fermion file: {exc}", FILE_ERROR) from None
        return 0
    if args.action == "from-parquet":
        opts = {k: v for k, v in (("page_size", args.page_size), ("stripe_rows", args.stripe_rows)) if v is not None}
        size = _atomic(args.src, args.dst, lambda tmp: from_parquet(args.src, tmp, **opts))
    else:
        comp = None if args.compression.lower() == "none" else args.compression
        size = _atomic(args.src, args.dst, lambda tmp: to_parquet(args.src, tmp, compression=comp))
    if args.json:
        emit_json({"input": args.src, "output": args.dst, "bytes": size})
    else:
        print(f"wrote {args.dst} ({size:,} bytes)")
    return 0
