"""``python -m benchmarks`` (``make bench``): the engine benchmark, then the format benchmark if
present. Arguments go to the engine benchmark; ``--quick`` also goes to the format one.
``python -m benchmarks fair [...]`` runs the fair harness (``benchmarks/fair.py``) instead."""

from __future__ import annotations

import importlib.util
import runpy
import sys


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["fair"]:  # python -m benchmarks fair [...]: the fair harness only
        sys.argv = ["benchmarks.fair", *args[1:]]
        runpy.run_module("benchmarks.fair", run_name="__main__", alter_sys=True)
        return
    runs = [("benchmarks.bench_engine", args),
            ("benchmarks.bench_format", ["--quick"] if "--quick" in args else [])]
    for name, argv in runs:
        if importlib.util.find_spec(name) is None:
            continue
        print(f"== python -m {name} {' '.join(argv)}".rstrip(), flush=True)
        sys.argv = [name, *argv]
        runpy.run_module(name, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
