"""Parquet conversion both ways and the ``python -m arcticlite.format`` command line."""

from __future__ import annotations

import io
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arcticlite
from arcticlite.format import decode, encode, from_parquet, to_parquet
from arcticlite.format.__main__ import inspect, main
from tests.format.conftest import assert_same


def _table() -> pa.Table:
    n = 20_000
    rng = np.random.default_rng(3)
    return pa.table({
        "ts": pa.array(np.cumsum(rng.integers(1, 5000, n)).astype("datetime64[ns]")).cast(pa.timestamp("ns", "UTC")),
        "px": np.round(100 + np.cumsum(rng.integers(-1, 2, n)) * 0.01, 2),
        "venue": pa.array(rng.choice(["XNYS", "XNAS", "BATS"], n)).dictionary_encode(),
        "tags": pa.array([["a"] * (i % 3) for i in range(n)]),
        "s": pa.array([None if i % 11 == 0 else f"row{i}" for i in range(n)]),
    }).replace_schema_metadata({"origin": "test"})


def test_roundtrip_through_parquet(tmp_path: pathlib.Path) -> None:
    t = _table()
    pq.write_table(t, tmp_path / "a.parquet", row_group_size=3000)
    from_parquet(tmp_path / "a.parquet", tmp_path / "a.fermion", stripe_rows=7000)
    back = decode((tmp_path / "a.fermion").read_bytes())
    assert_same(back, pq.read_table(tmp_path / "a.parquet"))
    to_parquet(tmp_path / "a.fermion", tmp_path / "b.parquet", compression="snappy")
    assert_same(pq.read_table(tmp_path / "b.parquet"), pq.read_table(tmp_path / "a.parquet"))
    data = from_parquet(str(tmp_path / "a.parquet"))
    assert isinstance(data, bytes)
    sink = io.BytesIO()
    to_parquet(data, sink)
    assert pq.read_table(io.BytesIO(sink.getvalue())).num_rows == t.num_rows


def test_empty_parquet(tmp_path: pathlib.Path) -> None:
    t = _table().slice(0, 0)
    pq.write_table(t, tmp_path / "e.parquet")
    data = from_parquet(tmp_path / "e.parquet")
    assert decode(data).num_rows == 0
    to_parquet(data, tmp_path / "e2.parquet")
    assert pq.read_table(tmp_path / "e2.parquet").schema.names == t.schema.names


def test_cli(tmp_path: pathlib.Path) -> None:
    t = _table()
    pq.write_table(t, tmp_path / "in.parquet")
    assert main(["from-parquet", str(tmp_path / "in.parquet"), str(tmp_path / "x.fermion")]) == 0
    assert main(["to-parquet", str(tmp_path / "x.fermion"), str(tmp_path / "out.parquet")]) == 0
    assert_same(pq.read_table(tmp_path / "out.parquet"), pq.read_table(tmp_path / "in.parquet"))
    out = io.StringIO()
    inspect(str(tmp_path / "x.fermion"), out, pages=True)
    text = out.getvalue()
    for word in ("rows        20,000", "venue", "DATA", "px", "stripe"):
        assert word in text
    (tmp_path / "bad.fermion").write_bytes(b"not a fermion file" * 20)
    assert main(["inspect", str(tmp_path / "bad.fermion")]) == 1
    proc = subprocess.run([sys.executable, "-m", "arcticlite.format", "inspect", str(tmp_path / "x.fermion")],
                          capture_output=True, text=True, check=True)
    assert "ts" in proc.stdout and "timestamp[ns, tz=UTC]" in proc.stdout


def test_cli_refuses_a_bad_or_missing_file_in_one_line_and_writes_nothing(tmp_path: pathlib.Path) -> None:
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    (tmp_path / "bad.fermion").write_bytes(b"junk" * 10)
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(arcticlite.__file__).parent.parent)}
    for argv in (["from-parquet", "bad.parquet", "out.fermion"], ["from-parquet", "nope.parquet", "out.fermion"],
                 ["to-parquet", "bad.fermion", "out.parquet"], ["inspect", "nope.fermion"]):
        proc = subprocess.run([sys.executable, "-m", "arcticlite.format", *argv], capture_output=True, text=True,
                              cwd=tmp_path, env=env, check=False)
        assert proc.returncode == 1 and proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1, argv
        assert "Traceback" not in proc.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.fermion", "bad.parquet"], argv


def test_cli_inspect_json(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    pq.write_table(_table(), tmp_path / "in.parquet")
    assert main(["from-parquet", str(tmp_path / "in.parquet"), str(tmp_path / "x.fermion")]) == 0
    assert main(["inspect", str(tmp_path / "x.fermion"), "--json", "--pages"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["rows"] == 20_000 and [c["name"] for c in d["columns"]] == ["ts", "px", "venue", "tags", "s"]
    px = d["columns"][1]
    assert px["pages"] == len(px["page_list"]) >= 1 and px["stored_bytes"] < px["raw_bytes"]
    assert sum(px["encodings"].values()) == px["pages"]


def test_encode_accepts_record_batch() -> None:
    t = _table()
    assert_same(decode(encode(t.to_batches()[0])), t.slice(0, t.to_batches()[0].num_rows))
