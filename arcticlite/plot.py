"""Pictures (needs matplotlib: ``pip install 'arcticlite[plot]'``).

* :func:`plot_layout`: how a symbol is stored, version by version: each segment a box over
  the rows it holds (x) and its column slice (y), its colour its stored bytes per row; boxes a
  version shares with the previous one drawn pale, the ones it wrote in full colour, the open
  tail of small appends hatched, the delta segments of merges not yet compacted crossed in red.
  Fragmentation (many thin boxes), the open tail, pending deltas and what each version
  rewrote are visible at a glance. ``arcticlite inspect SYMBOL --plot out.png`` draws it.
* :func:`plot_bench`: the results of ``arcticlite bench`` as bars (median, min–max whiskers).

Both write PNG, SVG or PDF, as the file name says, and return the matplotlib ``Figure``.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["plot_bench", "plot_layout"]

INSTALL = "pip install 'arcticlite[plot]' (or: pip install matplotlib)"


def _pyplot() -> Any:
    """matplotlib's pyplot on a backend that needs no display, or a clear ImportError."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError(f"drawing needs matplotlib, which is not installed: {INSTALL}") from None
    if "matplotlib.pyplot" not in __import__("sys").modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: str | os.PathLike[str] | None) -> None:
    if path is None:
        return
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext not in (".png", ".svg", ".pdf"):
        raise ValueError(f"cannot draw to {os.fspath(path)!r}: name it .png, .svg or .pdf")
    fig.savefig(path, dpi=120, bbox_inches="tight")


def plot_layout(lib: Any, symbol: str, path: str | os.PathLike[str] | None = None, *, versions: int = 4,
                as_of: Any = None) -> Any:
    """Draw the segments of the last ``versions`` live versions of ``symbol`` (up to ``as_of``).

    Parameters
    ----------
    lib : Library
        The library holding the symbol.
    symbol : str
        The symbol to draw; it must hold a table (a pickled object has no segments).
    path : str or path-like, optional
        Where to save the picture (``.png``, ``.svg`` or ``.pdf``); not saved when None.
    versions : int, default 4
        How many versions to draw, newest at the top.
    as_of : int, str or datetime, optional
        The newest version to draw (as ``Library.read``'s ``as_of``); default: the latest.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, one panel per version.

    Raises
    ------
    ImportError
        matplotlib is not installed (the message says how to install it).
    NoDataFoundException
        No such symbol or version.
    ValueError
        ``path`` has an extension other than .png, .svg or .pdf, or ``versions`` < 1.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> from arcticlite.plot import plot_layout
    >>> lib = adb.Arctic("mem://").create_library("demo", adb.LibraryOptions(rows_per_segment=50))
    >>> df = pd.DataFrame({"px": range(120)}, index=pd.date_range("2024-01-01", periods=120, freq="min"))
    >>> _ = lib.write("S", df)
    >>> _ = lib.append("S", df.shift(120, freq="min").head(3))
    >>> fig = plot_layout(lib, "S", "layout.png", versions=2)
    >>> [ax.get_title(loc="left").split(",")[0] for ax in fig.axes[:2]]
    ['S v1: 123 rows', 'S v0: 120 rows']
    """
    if versions < 1:
        raise ValueError(f"versions={versions}: draw at least one version")
    plt = _pyplot()
    from matplotlib import cm, colors
    from matplotlib.patches import Rectangle
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    newest = lib.read_metadata(symbol, as_of=as_of).version
    live = sorted(v.version for v in lib.list_versions(symbol) if v.version <= newest)
    shown = list(reversed(live[-versions:]))  # newest first
    frames = {v: lib.inspect_index(symbol, as_of=v) for v in shown}
    if not len(frames[shown[0]].columns) or "start_row" not in frames[shown[0]].columns:
        raise ValueError(f"symbol {symbol!r} holds a pickled object: it has no segments to draw")
    older = {v: (set(frames[prev]["key"]) if prev in frames else
                 set(lib.inspect_index(symbol, as_of=prev)["key"]) if prev is not None else set())
             for v, prev in ((v, max((p for p in live if p < v), default=None)) for v in shown)}
    per_row = [float(b) / max(int(r), 1) for f in frames.values() for b, r in zip(f["bytes"], f["seg_rows"],
                                                                                 strict=True)]
    norm = colors.Normalize(vmin=min(per_row, default=0.0), vmax=max(per_row, default=1.0) or 1.0)
    cmap = cm.get_cmap("viridis") if hasattr(cm, "get_cmap") else plt.get_cmap("viridis")
    fig, axes = plt.subplots(len(shown), 1, figsize=(10, 1.2 + 1.6 * len(shown)), squeeze=False, sharex=True,
                             layout="constrained")
    # the panels share their x axis: it spans the longest version drawn, so that the rows a newer
    # version appended are not cut off by the limits of an older one
    widest = max((int(f["end_row"].max()) for f in frames.values() if len(f)), default=0)
    for ax, v in zip(axes[:, 0], shown, strict=True):
        f = frames[v]
        ncols = int(f["end_col"].max()) if len(f) else 1
        least = 0.004 * widest  # a few rows stay visible
        for row in f.itertuples(index=False):  # one box per segment (a few thousand at most)
            new = row.key not in older[v]
            color = cmap(norm(float(row.bytes) / max(int(row.seg_rows), 1)))
            width = max(float(row.end_row - row.start_row), least)
            delta = bool(getattr(row, "delta", False))  # merge-on-read rows not yet folded in
            ax.add_patch(Rectangle((row.end_row - width, row.start_col), width,
                                   row.end_col - row.start_col, facecolor=color, alpha=1.0 if new else 0.3,
                                   edgecolor="red" if delta else "black", linewidth=1.2 if delta else 0.6,
                                   hatch="xx" if delta else "///" if row.open_tail else None))
        rows = int(f["end_row"].max()) if len(f) else 0
        span = ""
        if len(f) and f["min_index"].dtype.kind in "iu" and f["min_index"].min() > 10**17:  # nanoseconds: times
            import pandas as pd

            first, last = pd.Timestamp(int(f["min_index"].min())), pd.Timestamp(int(f["max_index"].max()))
            span = f"\nindex {first:%Y-%m-%d %H:%M} .. {last:%Y-%m-%d %H:%M}"
        n_new = sum(k not in older[v] for k in f["key"])
        deltas = f[f["delta"]] if "delta" in f.columns else f.iloc[:0]
        pending = f", {int(deltas['seg_rows'].sum()):,} delta rows pending" if len(deltas) else ""
        ax.set_title(f"{symbol} v{v}: {rows - int(deltas['seg_rows'].sum()):,} rows, {len(f)} segments "
                     f"({n_new} new){pending}, {int(f['bytes'].sum()):,} bytes{span}", fontsize=9, loc="left")
        ax.set_xlim(0, max(widest, 1))
        ax.set_ylim(0, max(ncols, 1))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # whole columns and rows
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}"))
        ax.set_ylabel("columns")
    axes[-1, 0].set_xlabel("rows (pale: shared with the previous version; hatched: open tail; red, crossed: "
                           "merge deltas pending; segments of a few rows drawn wider)")
    fig.colorbar(cm.ScalarMappable(norm=norm, cmap=cmap), ax=axes[:, 0].tolist(), label="stored bytes per row",
                 shrink=0.8)
    _save(fig, path)
    return fig


def plot_bench(results: dict[str, Any], path: str | os.PathLike[str] | None = None) -> Any:
    """Draw ``arcticlite bench`` results: per operation, each engine's median time as a bar with
    its min–max as a whisker.

    Parameters
    ----------
    results : dict
        What ``arcticlite bench --out FILE.json`` writes (``rows``, ``runs``, ``engines``,
        ``results``: one ``{"op", "engine", "median", "min", "max"}`` per operation and engine).
    path : str or path-like, optional
        Where to save the chart (``.png``, ``.svg`` or ``.pdf``).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ImportError
        matplotlib is not installed.
    ValueError
        ``path`` has another extension.

    Examples
    --------
    >>> from arcticlite.plot import plot_bench
    >>> res = {"rows": 10, "runs": 1, "engines": ["arcticlite"], "results": [
    ...     {"op": "read", "engine": "arcticlite", "median": 0.01, "min": 0.01, "max": 0.01}]}
    >>> fig = plot_bench(res, "bench.png")
    >>> fig.axes[0].get_legend_handles_labels()[1]
    ['arcticlite']
    """
    plt = _pyplot()
    engines = list(results["engines"])
    ops = list(dict.fromkeys(r["op"] for r in results["results"]))
    by = {(r["op"], r["engine"]): r for r in results["results"]}
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.5 * len(ops) * len(engines)), layout="constrained")
    height = 0.8 / max(len(engines), 1)
    for j, e in enumerate(engines):
        ys = [i + j * height for i in range(len(ops))]
        med = [by[(o, e)]["median"] * 1e3 for o in ops]
        lo = [m - by[(o, e)]["min"] * 1e3 for m, o in zip(med, ops, strict=True)]
        hi = [by[(o, e)]["max"] * 1e3 - m for m, o in zip(med, ops, strict=True)]
        ax.barh(ys, med, height=height, xerr=[lo, hi], capsize=3, label=e)
    ax.set_yticks([i + height * (len(engines) - 1) / 2 for i in range(len(ops))])
    labels = {"write": "write all rows", "read": "read all rows", "date_range": "read a 10% date range",
              "columns": "read 2 of 10 columns"}
    ax.set_yticklabels([labels.get(o, o) for o in ops])
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds (median of the runs; whiskers: min-max)")
    ax.set_title(f"arcticlite bench: {results['rows']:,} rows x 10 columns, {results['runs']} runs, "
                 "fresh process per run", fontsize=9)
    ax.legend()
    _save(fig, path)
    return fig
