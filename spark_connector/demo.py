"""The last step of ``make demo``: read the demo symbol through Spark (when pyspark is installed)."""

from __future__ import annotations

import os
import sys
from typing import Any


def read_demo(uri: str, library: str, symbol: str, spark: Any = None) -> int | None:
    """Read ``symbol`` through the ``arcticlite`` Spark format, print it, return its row count.

    Returns None (and prints why) when pyspark or Java is missing. Starts a ``local[2]``
    session on 127.0.0.1 (UI off) unless ``spark`` is given, and stops the one it started.
    """
    try:
        import pyspark  # noqa: F401
    except ImportError:
        print("pyspark is not installed (pip install 'arcticlite[spark]'): skipping the Spark read")
        return None
    import shutil

    if spark is None and shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        print("Spark needs Java 17 or 21: skipping the Spark read")
        return None
    import spark_connector

    own = spark is None
    if own:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        spark = (SparkSession.builder.master("local[2]").appName("arcticlite-demo")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
                 .config("spark.sql.session.timeZone", "UTC").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
    try:
        spark_connector.register(spark)
        df = spark.read.format("arcticlite").option("uri", uri).option("library", library).load(symbol)
        print(f"Spark reads {library}/{symbol}:")
        df.printSchema()
        # the whole result, then its head: show(5) would stop reading a Python worker midway,
        # which makes PySpark's worker daemon print a BrokenPipe traceback
        rows = df.toPandas()
        print(rows.head(5).to_string(index=False))
        n = len(rows)
        print(f"{n} rows through Spark")
        return n
    finally:
        if own:
            spark.stop()
