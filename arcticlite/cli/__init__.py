"""The command line: ``arcticlite`` / ``python -m arcticlite`` (docs/cli.md).

It uses arcticlite's public API only, on the URIs ``Arctic(uri)`` takes::

    arcticlite libraries  URI                       [--json]
    arcticlite symbols    URI LIB [--regex R] [--snapshot S] [--json]
    arcticlite versions   URI LIB SYM [--json]
    arcticlite describe   URI LIB SYM [--as-of V] [--json]
    arcticlite read       URI LIB SYM [--as-of V] [--date-range START END] [--columns a,b]
                          [--head N | --tail N] [--where TERM ...] [--explain]
                          [--to out.parquet|out.csv|out.arrow] [--json]
    arcticlite inspect    URI LIB SYM [--as-of V] [--json]   (aliases: index, segments)
    arcticlite write      URI LIB SYM FILE [--index-column C] [--format F] [--prune]
    arcticlite append     URI LIB SYM FILE [--index-column C] [--format F] [--prune]
    arcticlite update     URI LIB SYM FILE [--index-column C] [--upsert] [--date-range S E]
    arcticlite delete     URI LIB SYM [--version N ...] [--date-range S E]
    arcticlite snapshot   create URI LIB NAME [--skip SYM] [--version SYM=N] | list URI LIB | delete URI LIB NAME
    arcticlite compact    URI LIB [SYM] [--plan] [--rows-per-segment N] [--json]
    arcticlite gc         URI LIB [--grace SECONDS] [--dry-run] [--json]
    arcticlite verify     URI [--library LIB] [--no-data] [--json]
    arcticlite convert    IN.parquet OUT.fermion | IN.fermion OUT.parquet [--json]
    arcticlite fermion    {from-parquet,to-parquet,inspect} ...
    arcticlite import-arcticdb SOURCE_URI TARGET_URI [--library L]

``--as-of`` is a version id, an ISO time (``2024-01-31T09:30``; UTC unless it has an offset)
or a snapshot name. A command that only reads opens the store read-only and never creates a
store or a library; only ``write`` and ``append`` create them.

Exit codes (an error is one line on stderr, ``arcticlite: ...``, and changes nothing):

=====  ==================================================================================
0      success
1      failed: storage unavailable, corrupt data, or another arcticlite error
2      bad command line (unknown command or option, missing argument): see ``--help``
3      not found: no store at the URI, no such library, symbol, version or snapshot
4      bad input: a rejected argument or data (unsorted index, schema mismatch, bad --where)
5      file error: the input file is missing or unreadable, the output cannot be written
6      read-only: the store or library refuses writes
7      commit conflict: concurrent writers won repeatedly; retry
=====  ==================================================================================
"""

from __future__ import annotations

import sys

from arcticlite.cli._app import main

__all__ = ["main"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
