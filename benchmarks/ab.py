"""Two revisions of arcticlite side by side: is a change slower? (A/B of the engine paths)

``python -m benchmarks.ab OLD_REV [NEW_REV] [--rounds 3] [--rows 2000000]`` exports both git
revisions to temporary directories and runs the same worker against each in fresh processes,
alternated (A B B A per round), with ``sync`` before each: a write of ``rows`` x 10 float64,
its read (best of 5), a one-hour ``date_range`` (best of 20), 300 small appends (median), and a
filtered query (best of 3). Prints the median and min-max per revision and the ratio new / old
(below 1: the new revision is faster). Compare only within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

WORKER = r'''
import json, os, sys, tempfile, time
import numpy as np, pandas as pd
import arcticlite as adb

def best(fn, n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter(); fn(); out.append(time.perf_counter() - t0)
    return min(out)

rows = int(sys.argv[1])
d = tempfile.mkdtemp(dir=os.getcwd())  # inside the runner's temporary directory
lib = adb.Arctic(f"lmdb://{d}").get_library("b", create_if_missing=True)
rng = np.random.default_rng(0)
df = pd.DataFrame({f"c{i}": rng.random(rows) for i in range(10)}, index=pd.date_range("2020", periods=rows, freq="s"))
os.sync()
t0 = time.perf_counter(); lib.write("w", df); tw = time.perf_counter() - t0
tr = best(lambda: lib.read("w").data, 5)
a, b = df.index[rows // 2], df.index[rows // 2 + 3599]
td = best(lambda: lib.read("w", date_range=(a, b)).data, 20)
lib.write("a", df.iloc[:10])
ts = []
for i in range(300):
    chunk = df.iloc[10 + i * 10: 20 + i * 10]
    t0 = time.perf_counter(); lib.append("a", chunk); ts.append(time.perf_counter() - t0)
q = adb.QueryBuilder(); q = q[q["c0"] > 0.99]
tq = best(lambda: lib.read("w", query_builder=q).data, 3)
print(json.dumps({"write_s": tw, "read_s": tr, "date_range_ms": td * 1e3,
                  "append_ms": float(np.median(ts)) * 1e3, "query_s": tq}))
'''


def _export(rev: str, into: str) -> str:
    path = os.path.join(into, rev.replace("/", "_"))
    os.makedirs(path)
    archive = subprocess.run(["git", "archive", rev, "arcticlite"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", path], input=archive, check=True)
    return path


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new", nargs="?", default="HEAD")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rows", type=int, default=2_000_000)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"old": _export(args.old, tmp), "new": _export(args.new, tmp)}
        script = os.path.join(tmp, "worker.py")
        with open(script, "w") as f:
            f.write(WORKER)
        results: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
        for _ in range(args.rounds):
            for which in ("old", "new", "new", "old"):
                os.sync()
                env = {**os.environ, "PYTHONPATH": trees[which]}
                out = subprocess.run([sys.executable, script, str(args.rows)], env=env, check=True,
                                     capture_output=True, text=True, cwd=tmp).stdout
                results[which].append(json.loads(out.strip().splitlines()[-1]))
    print(f"{'metric':<16}{'old ' + args.old:>28}{'new ' + args.new:>28}{'new/old':>10}")
    for key in results["old"][0]:
        o = [r[key] for r in results["old"]]
        n = [r[key] for r in results["new"]]
        fmt = lambda v: f"{statistics.median(v):.4g} ({min(v):.3g}-{max(v):.3g})"  # noqa: E731
        print(f"{key:<16}{fmt(o):>28}{fmt(n):>28}{statistics.median(n) / statistics.median(o):>10.2f}")


if __name__ == "__main__":
    main()
