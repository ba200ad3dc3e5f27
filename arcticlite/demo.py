"""``make demo``: arcticlite's main job on an embedded LMDB library in a local folder.

Writes a day of quotes, appends to it, corrects a slice with ``update``, reads it back by
date range, column and version, takes a snapshot, and shows what is stored.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
import pandas as pd


def _quotes(start: str, n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    idx = pd.date_range(start, periods=n, freq="1s", tz="UTC")
    mid = 100 + np.cumsum(rng.integers(-2, 3, n)) / 100
    return pd.DataFrame(
        {
            "bid": np.round(mid - 0.01, 2),
            "ask": np.round(mid + 0.01, 2),
            "size": rng.integers(1, 50, n) * 100,
            "venue": rng.choice(["XNAS", "ARCX", "BATS", "EDGX"], n),
        },
        index=idx,
    )


def main(argv: list[str] | None = None) -> int:
    import arcticlite as adb

    argv = sys.argv[1:] if argv is None else argv
    folder = os.path.abspath(argv[0] if argv else "demo-data")
    uri = f"lmdb://{folder}"
    print(f"arcticlite {adb.__version__} demo: library 'quotes' in {uri}")
    ac = adb.Arctic(uri)
    if "quotes" in ac.list_libraries():
        ac.delete_library("quotes")
    lib = ac.create_library("quotes", adb.LibraryOptions(rows_per_segment=20_000))

    day = _quotes("2024-01-02 09:30", 50_000, seed=1)
    t = time.perf_counter()
    v = lib.write("AAPL", day, metadata={"source": "demo", "rows": len(day)})
    assert v is not None
    print(f"write   AAPL v{v.version}: {len(day):,} rows x {day.shape[1]} columns in {time.perf_counter() - t:.3f}s")

    more = _quotes(str(day.index[-1] + pd.Timedelta(seconds=1)), 10_000, seed=2)
    t = time.perf_counter()
    for i in range(10):
        v = lib.append("AAPL", more.iloc[i * 1000 : (i + 1) * 1000])
    print(f"append  AAPL v{v.version}: 10 appends of 1,000 rows in {time.perf_counter() - t:.3f}s "
          "(earlier segments are reused, not rewritten)")

    fix = day.iloc[100:200].copy()
    fix["bid"] -= 1.0
    v = lib.update("AAPL", fix)
    print(f"update  AAPL v{v.version}: replaced rows {fix.index[0]} .. {fix.index[-1]}")

    hour = lib.read("AAPL", date_range=(pd.Timestamp("2024-01-02 10:00", tz="UTC"),
                                         pd.Timestamp("2024-01-02 10:59:59", tz="UTC")))
    print(f"read    date_range of one hour -> {len(hour.data):,} rows")
    cols = lib.read("AAPL", columns=["bid", "ask"], row_range=(0, 5)).data
    print("read    columns=['bid','ask'], row_range=(0, 5):")
    print(cols.to_string())
    old = lib.read("AAPL", as_of=0).data
    print(f"read    as_of=0 -> {len(old):,} rows (version 0 is unchanged); latest has "
          f"{lib.get_description('AAPL').row_count:,} rows")

    lib.snapshot("eod-2024-01-02", metadata={"note": "end of day"})
    lib.write("MSFT", _quotes("2024-01-02 09:30", 5_000, seed=3))
    print(f"symbols {lib.list_symbols()}; snapshots {lib.list_snapshots()}")
    print("versions of AAPL:")
    for sv, info in lib.list_versions("AAPL").items():
        print(f"  {sv}: {info.date:%Y-%m-%d %H:%M:%S} snapshots={info.snapshots}")
    desc = lib.get_description("AAPL")
    print(f"describe AAPL: {len(desc.columns)} columns, rows={desc.row_count:,}, "
          f"range={desc.date_range[0]} .. {desc.date_range[1]}, sorted={desc.sorted}")

    store = lib._store
    keys = list(store.list_keys("quotes/"))
    kinds: dict[str, int] = {}
    for k in keys:
        kinds[k.split("/")[1]] = kinds.get(k.split("/")[1], 0) + 1
    print(f"stored  {len(keys)} keys: " + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())))
    _spark_read(uri)
    print("demo done")
    return 0


def _spark_read(uri: str) -> None:
    """The demo's last step: the same symbol through Spark, when pyspark is installed."""
    try:
        from spark_connector.demo import read_demo
    except ImportError:
        print("spark   skipped: pyspark is not installed (pip install 'arcticlite[spark]'; needs Java 17)")
        return
    rows = read_demo(uri, "quotes", "AAPL")
    if rows is not None:
        print(f"spark   read AAPL through spark.read.format('arcticlite'): {rows:,} rows")


if __name__ == "__main__":
    raise SystemExit(main())
