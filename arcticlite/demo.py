"""``make demo``: arcticlite's main job on market data, in an LMDB library in a local folder.

``python -m arcticlite.demo [FOLDER] [--scale X] [--no-spark]`` generates quotes and trades of
300 tickers over three trading days (a venue string column, a ticker column), then: writes
day 1, appends days 2 and 3, corrects a slice with ``update``, reads by ``date_range`` and
columns, reads an earlier version with ``as_of``, filters with a ``QueryBuilder``, takes a
snapshot, feeds small appends and compacts them, and prints a short report (rows/s, bytes
stored vs bytes in memory) and saves the symbols' layout plots (``quotes-layout.png``,
``trades-layout.png``, when matplotlib is installed). Re-running it starts the library afresh.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd

TICKERS = 300
DAYS = ("2024-01-02", "2024-01-03", "2024-01-04")
VENUES = np.array(["XNAS", "ARCX", "BATS", "EDGX", "IEXG", "XNYS"], dtype=object)


def market_day(day: str, tickers: int, quotes_per_ticker: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One trading day (09:30–16:00 New York, in UTC) of quotes and trades of ``tickers``
    tickers, sorted by time: (quotes, trades), each with ``ticker`` and ``venue`` columns."""
    rng = np.random.default_rng(seed)
    open_ns = pd.Timestamp(f"{day} 14:30", tz="UTC").value
    session_ns = int(6.5 * 3600 * 1e9)
    n = tickers * quotes_per_ticker
    tick = rng.integers(0, tickers, n)
    when = np.sort(open_ns + rng.integers(0, session_ns, n))
    base = 20 + (np.arange(tickers) * 7.3) % 480  # each ticker its own price level
    mid = base[tick] * (1 + rng.normal(0, 0.002, n))
    spread = np.round(np.maximum(0.01, mid * 0.0004), 2)
    names = np.array([f"T{i:03d}" for i in range(tickers)], dtype=object)
    quotes = pd.DataFrame({
        "ticker": names[tick],
        "bid": np.round(mid - spread / 2, 2),
        "ask": np.round(mid + spread / 2, 2),
        "bid_size": rng.integers(1, 50, n).astype(np.int32) * 100,
        "ask_size": rng.integers(1, 50, n).astype(np.int32) * 100,
        "venue": VENUES[rng.integers(0, len(VENUES), n)],
    }, index=pd.DatetimeIndex(when, tz="UTC", name="time"))
    pick = np.sort(rng.choice(n, n // 5, replace=False))  # a trade every fifth quote
    q = quotes.iloc[pick]
    trades = pd.DataFrame({
        "ticker": q["ticker"].to_numpy(),
        "price": np.where(rng.random(len(q)) < 0.5, q["bid"], q["ask"]),
        "size": rng.integers(1, 20, len(q)).astype(np.int32) * 100,
        "venue": q["venue"].to_numpy(),
    }, index=q.index)
    return quotes, trades


def _mb(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


def main(argv: list[str] | None = None) -> int:
    import arcticlite as adb

    ap = argparse.ArgumentParser(prog="python -m arcticlite.demo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", nargs="?", default="demo-data", help="where the LMDB store goes (default demo-data)")
    ap.add_argument("--scale", type=float, default=1.0, help="quotes per ticker and day: 1,000 x SCALE")
    ap.add_argument("--no-spark", action="store_true", help="skip the last step (a read through Spark)")
    args = ap.parse_args(argv)
    folder = os.path.abspath(args.folder)
    per_ticker = max(2, int(1_000 * args.scale))
    uri = f"lmdb://{folder}"
    print(f"arcticlite {adb.__version__} demo: library 'market' in {uri}")
    ac = adb.Arctic(uri)
    if ac.has_library("market"):  # re-running starts afresh
        ac.delete_library("market")
    lib = ac.create_library("market")

    days = [market_day(d, TICKERS, per_ticker, seed=i) for i, d in enumerate(DAYS)]
    q1, t1 = days[0]
    t = time.perf_counter()
    lib.write("quotes", q1, metadata={"source": "demo", "tickers": TICKERS})
    lib.write("trades", t1)
    secs = time.perf_counter() - t
    rows_written = len(q1) + len(t1)
    print(f"write   day 1: {len(q1):,} quotes + {len(t1):,} trades of {TICKERS} tickers in {secs:.2f}s")

    t = time.perf_counter()
    for q, tr in days[1:]:
        lib.append("quotes", q)
        lib.append("trades", tr)
        rows_written += len(q) + len(tr)
    secs += time.perf_counter() - t
    print(f"append  days 2-3: quotes is now version {lib.read_metadata('quotes').version}, "
          f"{lib.get_description('quotes').row_count:,} rows")

    # a correction: the first minute of day 2's trades had their prices 1% too high
    start = pd.Timestamp(f"{DAYS[1]} 14:30", tz="UTC")
    bad = lib.read("trades", date_range=(start, start + pd.Timedelta("59s"))).data
    fixed = bad.assign(price=(bad["price"] / 1.01).round(2))
    v = lib.update("trades", fixed)
    print(f"update  trades v{v.version}: {len(fixed):,} trades of {start:%Y-%m-%d %H:%M} UTC re-priced")

    t = time.perf_counter()
    everything = lib.read("quotes").data
    read_secs = time.perf_counter() - t
    hour = lib.read("quotes", date_range=(pd.Timestamp(f"{DAYS[2]} 15:00", tz="UTC"),
                                          pd.Timestamp(f"{DAYS[2]} 15:59:59.999999999", tz="UTC")),
                    columns=["ticker", "bid", "ask"]).data
    print(f"read    all quotes: {len(everything):,} rows in {read_secs:.2f}s; one hour of day 3, 3 columns: "
          f"{len(hour):,} rows")
    day1 = lib.read("quotes", as_of=0).data
    print(f"read    as_of=0: {len(day1):,} quotes (version 0, day 1 only, unchanged by the appends)")

    q = adb.QueryBuilder()
    q = q[(q["ticker"] == "T042") & (q["venue"] == "XNAS") & (q["bid_size"] >= 2_000)]
    hits = lib.read("quotes", query_builder=q).data
    print(f"query   ticker == 'T042' & venue == 'XNAS' & bid_size >= 2000: {len(hits):,} quotes")
    print(hits.head(3).to_string())

    lib.snapshot("eod-2024-01-04", metadata={"note": "three days loaded"})
    print(f"snapshot 'eod-2024-01-04' holds {sorted(v.symbol for v in lib.list_versions(snapshot='eod-2024-01-04'))}")

    # tick by tick after the close: small appends share an open tail, then a compaction
    last = everything.index[-1]
    for i in range(20):
        tick = everything.iloc[[i]].copy()
        tick.index = pd.DatetimeIndex([last + pd.Timedelta(seconds=i + 1)], name="time")
        lib.append("quotes", tick)
    plan = lib.compact_data_explain_plan("quotes")
    print(f"append  20 single quotes: {plan.segments_before} segments; compaction would make {plan.segments_after}")
    if plan.will_do_work:
        v = lib.compact_data("quotes")
        print(f"compact quotes v{v.version}: {plan.rows_to_rewrite:,} rows rewritten")

    stored = sum(s.bytes_compressed for s in lib.admin_tools().get_sizes().values())
    in_memory = int(everything.memory_usage(deep=True).sum()) + int(
        lib.read("trades").data.memory_usage(deep=True).sum())
    on_disk = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))
    print("report")
    print(f"  written {rows_written:,} rows at {rows_written / max(secs, 1e-9):,.0f} rows/s; "
          f"read {len(everything):,} rows at {len(everything) / max(read_secs, 1e-9):,.0f} rows/s")
    print(f"  latest data in memory (pandas) {_mb(in_memory)}; every version stored {_mb(stored)} "
          f"({in_memory / max(stored, 1):.1f}x smaller); LMDB files {_mb(on_disk)}")
    _plot(lib, folder)
    if not args.no_spark:
        _spark_read(uri)
    print("demo done")
    return 0


def _plot(lib: object, folder: str) -> None:
    from arcticlite.plot import plot_layout

    for sym, what in (("quotes", "small appends, then a compaction"), ("trades", "write, two appends, an update")):
        path = os.path.join(folder, f"{sym}-layout.png")
        try:
            plot_layout(lib, sym, path, versions=4)
        except ImportError as exc:
            print(f"plot    skipped: {exc}")
            return
        print(f"plot    the layout of the last 4 versions of {sym!r} ({what}): {path}")


def _spark_read(uri: str) -> None:
    """The demo's last step: a symbol through Spark, when pyspark is installed."""
    try:
        from spark_connector.demo import read_demo
    except ImportError:
        print("spark   skipped: pyspark is not installed (pip install 'arcticlite[spark]'; needs Java 17)")
        return
    rows = read_demo(uri, "market", "trades")
    if rows is not None:
        print(f"spark   read trades through spark.read.format('arcticlite'): {rows:,} rows")


if __name__ == "__main__":
    raise SystemExit(main())
