"""arcticlite's Spark connector: the ``arcticlite`` PySpark data source (Spark >= 4.0).

>>> import spark_connector
>>> spark_connector.register(spark)                       # doctest: +SKIP
>>> df = (spark.read.format("arcticlite").option("uri", "lmdb:///data")
...       .option("library", "prices").load("AAPL"))       # doctest: +SKIP

See docs/spark.md.
"""

from __future__ import annotations

from typing import Any

from spark_connector.maintenance import compact
from spark_connector.source import FORMAT, ArcticLiteDataSource, SymbolExistsError
from spark_connector.types import UnsupportedTypeError

__all__ = ["FORMAT", "ArcticLiteDataSource", "SymbolExistsError", "UnsupportedTypeError", "compact",
           "pushdown_supported", "register", "save"]

_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def pushdown_supported(spark: Any) -> bool:
    """Whether this Spark offers filters to Python data sources (4.1 and later)."""
    major, minor = (int(x) for x in spark.version.split(".")[:2])
    return (major, minor) >= (4, 1)


def register(spark: Any, pushdown: bool = True) -> None:
    """Register the ``arcticlite`` format with ``spark`` (and enable filter pushdown on 4.1+).

    With ``pushdown=False`` on Spark 4.1+ the conf is set to false and every read must pass
    ``.option("pushdown", "false")`` (Spark refuses a reader with ``pushFilters`` otherwise).
    """
    spark.dataSource.register(ArcticLiteDataSource)
    if pushdown_supported(spark):
        spark.conf.set(_PUSHDOWN_CONF, "true" if pushdown else "false")


def save(df: Any, symbol: str, *, uri: str, library: str, mode: str = "errorifexists", **options: Any) -> None:
    """``df.write.format("arcticlite")...save(symbol)`` with every Spark save mode.

    Spark's Python data sources accept only ``append`` and ``overwrite``; this helper maps
    ``errorifexists`` (the default, raising :class:`SymbolExistsError` when the symbol has a
    live version) and ``ignore`` (writing nothing then) onto ``append`` with the ``if_exists``
    option. Extra keyword arguments become options (``index_column="ts"``).
    """
    m = mode.lower().replace("_", "")
    w = df.write.format(FORMAT).option("uri", uri).option("library", library)
    for k, v in options.items():
        w = w.option(k, str(v))
    if m in ("errorifexists", "error", "default"):
        w = w.option("if_exists", "error").mode("append")
    elif m == "ignore":
        w = w.option("if_exists", "ignore").mode("append")
    elif m in ("append", "overwrite"):
        w = w.mode(m)
    else:
        raise ValueError(f"unknown save mode {mode!r}")
    w.save(symbol)
