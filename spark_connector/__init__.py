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
           "pushdown_supported", "register"]

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
