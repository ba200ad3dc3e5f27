"""`make demo`: the main job on an embedded LMDB library in a local folder."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    folder = argv[0] if argv else "demo-data"
    print(f"arcticlite demo in {folder} (engine not yet present)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
