"""``convert IN OUT``: Parquet ↔ Fermion files, the direction told by the extensions (the
``fermion from-parquet`` / ``to-parquet`` tools with the command line's errors and exit codes)."""

from __future__ import annotations

import argparse
import os

from arcticlite.cli._common import BAD_INPUT, FILE_ERROR, CliError, emit_json
from arcticlite.exceptions import CorruptDataError

_KINDS = {".parquet": "parquet", ".pq": "parquet", ".fermion": "fermion", ".frmn": "fermion"}


def _kind(path: str, what: str) -> str:
    kind = _KINDS.get(os.path.splitext(path)[1].lower())
    if kind is None:
        raise CliError(f"{what} {path!r}: name it .parquet or .fermion", BAD_INPUT)
    return kind


def convert(args: argparse.Namespace) -> int:
    import pyarrow as pa

    from arcticlite.format import from_parquet, to_parquet

    src, dst = _kind(args.src, "input file"), _kind(args.dst, "output file")
    if src == dst:
        raise CliError(f"convert {args.src!r} to {args.dst!r}: one must be .parquet, the other .fermion", BAD_INPUT)
    if not os.path.isfile(args.src):
        raise CliError(f"input file {args.src!r} does not exist (nothing was written)", FILE_ERROR)
    tmp = f"{args.dst}.tmp-{os.getpid()}"
    try:
        if src == "parquet":
            from_parquet(args.src, tmp)
        else:
            to_parquet(args.src, tmp)
        os.replace(tmp, args.dst)
    except (OSError, pa.ArrowException, CorruptDataError) as exc:
        raise CliError(f"cannot convert {args.src!r} to {args.dst!r}: {exc} (nothing was written)",
                       FILE_ERROR) from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    size = os.path.getsize(args.dst)
    if args.json:
        emit_json({"input": args.src, "output": args.dst, "bytes": size})
    else:
        print(f"wrote {args.dst} ({size:,} bytes, {dst})")
    return 0
