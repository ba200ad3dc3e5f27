"""``python -m benchmarks`` (``make bench``): the engine benchmark, then the format benchmark if
present. Arguments (e.g. ``--quick``) are passed to each."""

from __future__ import annotations

import importlib.util
import runpy
import sys


def main() -> None:
    args = sys.argv[1:]
    for name in ("benchmarks.bench_engine", "benchmarks.bench_format"):
        if importlib.util.find_spec(name) is None:
            continue
        print(f"== {name} {' '.join(args)}".rstrip(), flush=True)
        sys.argv = [name, *args]
        runpy.run_module(name, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
