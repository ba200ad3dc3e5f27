"""``python -m arcticlite`` and the ``arcticlite`` console script: see :mod:`arcticlite.cli`
(commands, ``--as-of`` rules, exit codes) and docs/cli.md."""

from __future__ import annotations

from arcticlite.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
