"""One ``local[2]`` SparkSession for the Spark connector tests (skipped without pyspark).

The session binds to 127.0.0.1 with the UI off; its Python workers run this interpreter
(``sys.executable``) with the repository on ``PYTHONPATH``, so executors import the same
``arcticlite`` and ``spark_connector``. Each test gets a fresh LMDB library; S3 tests use the
session's moto server (``s3_uri`` from tests/conftest.py).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import arcticlite as adb

try:
    import pyspark  # noqa: F401

    HAVE_PYSPARK = True
except ImportError:  # pragma: no cover - depends on the environment
    HAVE_PYSPARK = False

REPO = str(Path(__file__).resolve().parents[2])


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: needs pyspark and Java (a local[2] SparkSession)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/spark/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    if not HAVE_PYSPARK:
        pytest.skip("pyspark is not installed (pip install -e '.[spark]')")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java 17 or 21 (no java on PATH)")
    tmp = tempfile.mkdtemp(prefix="arcticlite-spark-")
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p] + [REPO]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    from pyspark.sql import SparkSession

    import spark_connector

    session = (
        SparkSession.builder.master("local[2]")
        .appName("arcticlite-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "1g")
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.local.dir", tmp)
        .config("spark.sql.warehouse.dir", os.path.join(tmp, "warehouse"))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("OFF")
    spark_connector.register(session)
    try:
        yield session
    finally:
        session.stop()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def lmdb_uri(tmp_path: Path) -> str:
    return f"lmdb://{tmp_path / 'db'}"


@pytest.fixture
def lib(lmdb_uri: str) -> Any:
    """A fresh library ``"lib"`` with small segments (100 rows), so tests see many segments."""
    return adb.Arctic(lmdb_uri).get_library(
        "lib", create_if_missing=True, library_options=adb.LibraryOptions(rows_per_segment=100)
    )


@pytest.fixture
def reader(spark: Any, lmdb_uri: str) -> Any:
    """``spark.read.format("arcticlite")`` on the test's library."""
    return lambda: spark.read.format("arcticlite").option("uri", lmdb_uri).option("library", "lib")


@pytest.fixture
def writer(lmdb_uri: str) -> Any:
    """``df.write.format("arcticlite")`` on the test's library."""
    return lambda df: df.write.format("arcticlite").option("uri", lmdb_uri).option("library", "lib")
