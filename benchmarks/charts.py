"""Charts of the benchmark results: ``python -m benchmarks.charts [RESULTS_DIR] [--out docs/img]``.

Reads every ``*.json`` in ``benchmarks/results/`` (or RESULTS_DIR) that one of the benchmark
commands wrote, and draws one PNG per file into ``docs/img/``, named after the file (needs
matplotlib):

* ``arcticlite bench --out X.json``: per operation, each engine's median time with min-max
  whiskers (``arcticlite.plot.plot_bench``) -> ``bench-X.png``;
* ``python -m benchmarks.fair``: per scenario, the ratio ArcticDB / arcticlite of the medians
  (log scale; > 1: arcticlite faster) with the min-max of the per-run ratios -> ``fair-X.png``
  (``X.png`` when X starts with the kind);
* ``python -m benchmarks.bench_pushdown``: per query, each engine's median read time ->
  ``pushdown-X.png``.

Other JSON files are skipped (and named). docs/benchmarks.md shows the charts.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def kind(data: Any) -> str | None:
    """Which benchmark wrote ``data`` (None: not one this script draws)."""
    if not isinstance(data, dict):
        return None
    results = data.get("results")
    if isinstance(results, list) and results and isinstance(results[0], dict):
        if "engine" in results[0] and "median" in results[0]:
            return "bench"
        if "scenario" in results[0] and "rows" in results[0]:
            return "fair"
    if isinstance(data.get("queries"), dict):
        return "pushdown"
    return None


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _fair(data: dict[str, Any], path: Path) -> None:
    plt = _pyplot()
    rows = [(r["label"], row) for r in data["results"] for row in r["rows"][:1] if row.get("ratio")]
    fig, ax = plt.subplots(figsize=(9, 0.9 + 0.32 * len(rows)), layout="constrained")
    ys = list(range(len(rows)))
    ratios = [row["ratio"] for _, row in rows]
    lo = [r - min(row.get("run_ratios") or [r]) for r, (_, row) in zip(ratios, rows, strict=True)]
    hi = [max(row.get("run_ratios") or [r]) - r for r, (_, row) in zip(ratios, rows, strict=True)]
    ax.barh(ys, ratios, xerr=[lo, hi], capsize=2, color=["tab:green" if r >= 1 else "tab:red" for r in ratios])
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yticks(ys)
    ax.set_yticklabels([label for label, _ in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("ArcticDB / arcticlite, ratio of the medians (> 1: arcticlite faster); whiskers: per-run min-max")
    m = data.get("machine", {})
    scale = next((a for a in str(data.get("command", "")).split("--scale ")[1:2]), "1").split()[0]
    ax.set_title(f"fair benchmark: scale {scale}, {data.get('runs')} runs, {m.get('cpu_count', '?')} CPUs, "
                 f"{m.get('date_utc', '')[:16]} UTC", fontsize=8)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _pushdown(data: dict[str, Any], path: Path) -> None:
    plt = _pyplot()
    queries = list(data["queries"])
    engines = sorted({e for q in data["queries"].values() for e in q["median"]})
    fig, ax = plt.subplots(figsize=(8, 1 + 0.5 * len(queries) * len(engines)), layout="constrained")
    h = 0.8 / len(engines)
    for j, e in enumerate(engines):
        med = [data["queries"][q]["median"][e] * 1e3 for q in queries]
        times = [data["queries"][q]["times"][e] for q in queries]
        lo = [m - min(t) * 1e3 for m, t in zip(med, times, strict=True)]
        hi = [max(t) * 1e3 - m for m, t in zip(med, times, strict=True)]
        ax.barh([i + j * h for i in range(len(queries))], med, height=h, xerr=[lo, hi], capsize=3, label=e)
    ax.set_yticks([i + h * (len(engines) - 1) / 2 for i in range(len(queries))])
    ax.set_yticklabels(queries)
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds per filtered read (median; whiskers: min-max)")
    ax.set_title(f"selective reads: {data.get('rows', 0):,} rows, layout {data.get('layout')}, "
                 f"{data.get('runs')} runs", fontsize=9)
    ax.legend()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def draw(results_dir: Path, out_dir: Path) -> list[Path]:
    """Draw every result file of ``results_dir`` into ``out_dir``; return the charts written."""
    from arcticlite.plot import plot_bench

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for src in sorted(results_dir.glob("*.json")):
        try:
            data = json.loads(src.read_text())
        except (OSError, ValueError):
            data = None
        k = kind(data)
        if k is None:
            print(f"skipped {src} (not a result this script draws)", file=sys.stderr)
            continue
        assert isinstance(data, dict)
        dst = out_dir / f"{src.stem if src.stem.startswith(k) else f'{k}-{src.stem}'}.png"
        if k == "bench":
            _pyplot().close(plot_bench(data, dst))
        elif k == "fair":
            _fair(data, dst)
        else:
            _pushdown(data, dst)
        written.append(dst)
        print(f"{src} -> {dst}")
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.charts", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="?", default=str(ROOT / "benchmarks" / "results"),
                    help="folder of result JSON files (default: benchmarks/results)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "img"), help="folder of the charts (default: docs/img)")
    args = ap.parse_args(argv)
    if not draw(Path(args.results), Path(args.out)):
        print(f"no result files to draw in {args.results}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
