"""``main``: parse, run one command, turn its errors into one line and an exit code."""

from __future__ import annotations

import logging
import os
import sys

import pandas as pd

from arcticlite.cli._common import BAD_INPUT, FAILED, CliError, error, exit_code
from arcticlite.exceptions import ArcticException


def _import_arcticdb(source: str, target: str, libraries: list[str] | None, all_versions: bool) -> int:
    from arcticlite import progress
    from arcticlite.migrate import import_arcticdb

    # one line per symbol in a pipe or a log; a progress bar instead on a terminal
    done = import_arcticdb(source, target, libraries, all_versions=all_versions,
                           progress=None if progress.enabled() else print)
    print(f"copied {sum(done.values())} versions of {len(done)} libraries")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: ``sys.argv[1:]``) and return its exit code."""
    from arcticlite.cli._parser import parser

    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a bad command line (2)
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    from arcticlite import progress

    progress.enable(getattr(args, "progress", None))  # --quiet / --progress; else env, else a terminal
    if getattr(args, "verbose", False):  # the library's log records (what each long operation did) on stderr
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log = logging.getLogger("arcticlite")
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    pd.set_option("display.width", 200)
    pd.set_option("display.max_columns", 20)
    try:
        if args.command == "import-arcticdb":
            return _import_arcticdb(args.source, args.target, args.library, args.all_versions)
        return int(args.fn(args))
    except BrokenPipeError:  # the reader of a pipe stopped early (arcticlite read ... | head): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so that flushing stdout at exit does not fail again
        return 0
    except CliError as exc:
        error(str(exc))
        return exc.code
    except ArcticException as exc:
        error(f"{type(exc).__name__}: {exc}")
        return exit_code(exc)
    except (ValueError, TypeError) as exc:  # an argument pandas or pyarrow refused
        error(f"{type(exc).__name__}: {exc}")
        return BAD_INPUT
    except OSError as exc:
        error(f"{type(exc).__name__}: {exc}")
        return FAILED
