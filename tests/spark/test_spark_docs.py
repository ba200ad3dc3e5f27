"""The worked example of docs/spark.md runs as written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

DOC = Path(__file__).resolve().parents[2] / "docs" / "spark.md"


def test_worked_example_runs(spark: Any, tmp_path: Path) -> None:
    text = DOC.read_text()
    section = text.split("## Worked example", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    exec(compile(code.group(1), str(DOC), "exec"), {"spark": spark, "tmp": str(tmp_path)})  # noqa: S102


def test_demo_reader(spark: Any, lmdb_uri: str, lib: Any) -> None:
    import pandas as pd

    from spark_connector.demo import read_demo

    lib.write("demo", pd.DataFrame({"a": range(5)}, index=pd.date_range("2024-01-01", periods=5, name="ts")))
    assert read_demo(lmdb_uri, "lib", "demo", spark=spark) == 5
