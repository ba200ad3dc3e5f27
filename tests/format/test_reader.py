"""Reader behaviour: O(k) metadata, statistics, predicate pushdown, batches, range reads."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from arcticlite.exceptions import CorruptDataError, SchemaException, UserInputException
from arcticlite.format import (
    FermionReader,
    FermionWriter,
    RangeReader,
    _writer_pages,
    decode,
    encode,
)
from tests.format.conftest import assert_same


@pytest.fixture
def plain_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Store pages as 'plain' blobs (encoding id 0): the metadata tests do not need cascades."""
    monkeypatch.setattr(_writer_pages._codec, "encode_fixed",
                        lambda v, **k: b"\x00" + np.ascontiguousarray(v).tobytes())


def _counting(data: bytes) -> RangeReader:
    return RangeReader(lambda o, n: data[o : o + n], size=len(data))


def _meta_bytes(ncols: int, k: int = 10) -> tuple[int, int]:
    t = pa.table({f"c{i}": np.arange(50, dtype=np.float64) + i for i in range(ncols)})
    data = encode(t)
    rr = _counting(data)
    r = FermionReader(rr)
    cols = [f"c{i}" for i in range(0, ncols, ncols // k)]
    for c in cols:
        assert r.field(c).name == c
    metas = [r.column_meta(c) for c in cols]
    assert all(m.stripe_rows.tolist() == [50] for m in metas)
    meta = rr.bytes_requested
    got = r.read(cols)
    assert_same(got, t.select(cols))
    return meta, rr.requests


def test_metadata_cost_does_not_grow_with_column_count(plain_pages: None) -> None:
    small, _ = _meta_bytes(100)
    big, requests = _meta_bytes(10_000)
    # Both pay the 64 KiB tail prefetch; the 10,000-column file adds only O(k) small reads.
    assert big < 1.5 * small, (small, big)
    assert big < 100 * 1024


def test_open_reads_one_request_for_small_files() -> None:
    t = pa.table({"a": [1, 2, 3], "b": ["x", "y", None]})
    data = encode(t)
    rr = _counting(data)
    r = FermionReader(rr)
    assert r.num_rows == 3 and r.num_columns == 2
    assert r.schema.names == ["a", "b"]
    assert rr.requests == 1  # footer + CIT + name index + schema entries in one tail read
    r.read(["b"])
    assert rr.requests == 1  # the whole file fits in the tail prefetch


def test_page_statistics() -> None:
    t = pa.table({"x": np.arange(100_000, dtype=np.int64), "s": [f"k{i:06d}" for i in range(100_000)],
                  "f": pa.array(np.linspace(-1, 1, 100_000), mask=np.arange(100_000) % 10 == 0)})
    r = FermionReader(encode(t, page_size=64 * 1024))
    pages = [p for p in r.page_stats("x") if p["stream"] == "DATA"]
    assert len(pages) == 13
    assert pages[0]["min"] == 0 and pages[0]["max"] == 8191 and pages[0]["rows"] == 8192
    assert sum(p["rows"] for p in pages) == 100_000
    assert all(p["compressed"] > 0 and p["raw"] == p["rows"] * 8 for p in pages)
    f = [p for p in r.page_stats("f") if p["stream"] == "DATA"]
    assert f[0]["min"] == pytest.approx(-1 + 2 / 99_999)  # row 0 is null: excluded
    assert r.describe_page(pages[0]["offset"], pages[0]["compressed"])


@pytest.mark.parametrize("op,value", [("==", 70_000), ("<", 5), ("<=", 8192), (">", 99_990),
                                      (">=", 50_000), ("!=", 3), ("in", [1, 99_999]),
                                      ("between", (20_000, 20_100))])
def test_predicate_pushdown_skips_pages(op: str, value: object) -> None:
    n = 100_000
    y = np.random.default_rng(1).random(n)  # incompressible: its pages dominate the bytes
    t = pa.table({"x": np.arange(n, dtype=np.int64), "y": y})
    data = encode(t, page_size=64 * 1024)
    full = _counting(data)
    FermionReader(full).read()
    rr = _counting(data)
    got = FermionReader(rr, coalesce_gap=0).read(filter=[("x", op, value)])
    expr = {"==": pc.field("x") == value, "<": pc.field("x") < value, "<=": pc.field("x") <= value,
            ">": pc.field("x") > value, ">=": pc.field("x") >= value, "!=": pc.field("x") != value,
            "in": pc.field("x").isin(value if isinstance(value, list) else [])}.get(op)
    if op == "between":
        lo, hi = value  # type: ignore[misc]
        expr = (pc.field("x") >= lo) & (pc.field("x") <= hi)
    assert_same(got, t.filter(expr))
    if op not in ("!=", ">="):
        assert rr.bytes_requested < full.bytes_requested / 3


def test_filters_on_strings_timestamps_nulls() -> None:
    n = 50_000
    ts = pa.array(np.arange(n).astype("datetime64[s]").astype("datetime64[ns]")).cast(pa.timestamp("ns", "UTC"))
    t = pa.table({"ts": ts, "s": pa.array([None if i % 3 == 0 else f"s{i % 50:02d}" for i in range(n)]),
                  "v": pa.array(np.arange(n) % 7, mask=np.arange(n) % 5 == 0)})
    data = encode(t, page_size=16 * 1024)
    cases = [
        [("ts", ">=", pa.scalar(1000, pa.timestamp("s")).cast(pa.timestamp("ns", "UTC")))],
        [("s", "==", "s07")],
        [("s", "in", ["s01", "s49"]), ("v", "<", 3)],
        [("v", "==", 0)],
        [("v", "!=", 0)],
        [("s", "<", "s10")],
        [("ts", "between", (pa.scalar(10, pa.timestamp("ns", "UTC")), pa.scalar(10**12, pa.timestamp("ns", "UTC"))))],
    ]
    for f in cases:
        from arcticlite.format import _filter

        exp = t.filter(_filter.expression(_filter.parse(f)))
        assert_same(decode(data, filter=f), exp)
        assert_same(decode(data, columns=["v"], filter=f), exp.select(["v"]))


def test_filter_on_all_null_column_and_nan() -> None:
    t = pa.table({"a": pa.nulls(10, pa.int64()), "f": [np.nan, 1.0] * 5})
    data = encode(t)
    assert decode(data, filter=[("a", "==", 1)]).num_rows == 0
    assert decode(data, filter=[("f", "!=", 1.0)]).num_rows == 5
    assert decode(data, filter=[("f", ">", 0.5)]).num_rows == 5


def test_bad_arguments() -> None:
    data = encode(pa.table({"a": [1]}))
    with pytest.raises(SchemaException):
        decode(data, columns=["nope"])
    with pytest.raises(UserInputException):
        decode(data, filter=[("a", "~", 1)])
    with pytest.raises(UserInputException):
        FermionReader(data).read_batch(1)


def test_duplicate_column_names_and_indices() -> None:
    t = pa.Table.from_arrays([pa.array([1, 2]), pa.array(["a", "b"])], names=["x", "x"])
    data = encode(t)
    assert_same(decode(data), t)
    assert decode(data, columns=[1]).column(0).to_pylist() == ["a", "b"]
    assert decode(data, columns=["x"]).column(0).to_pylist() == [1, 2]


def test_batch_mode() -> None:
    w = FermionWriter(page_size=512, stripe_rows=200)
    tables = []
    for i in range(40):
        n = (i * 7) % 23 + 1
        tb = pa.table({"x": np.arange(n, dtype=np.int64) + i * 1000, "s": [f"b{i}"] * n,
                       "l": pa.array([[i] * (j % 3) for j in range(n)], pa.list_(pa.int32()))})
        assert w.append_batch(tb, batch_id=500 + i) == 500 + i
        tables.append(tb)
    data = w.close()
    assert data is not None
    r = FermionReader(data)
    assert r.batch_mode
    assert_same(r.read(), pa.concat_tables(tables))
    assert_same(r.read_batch(517), tables[17])
    assert r.batch_ids().tolist() == list(range(500, 540))
    t = r.read(with_batch_ids=True, row_range=(30, 60))
    ids, idx = t["batch_id"].to_numpy(), t["index_in_batch"].to_numpy()
    full = pa.concat_tables([tb.append_column("batch_id", pa.array([500 + i] * tb.num_rows))
                            .append_column("index_in_batch", pa.array(np.arange(tb.num_rows)))
                             for i, tb in enumerate(tables)])
    assert ids.tolist() == full["batch_id"].to_pylist()[30:60]
    assert idx.tolist() == full["index_in_batch"].to_pylist()[30:60]
    # a batch never straddles a page, in any stream of any column
    lens = np.array([tb.num_rows for tb in tables])
    bounds = set(np.concatenate([[0], np.cumsum(lens)]).tolist())
    for col in ("x", "s"):
        cm = r.column_meta(col)
        starts = np.concatenate([[0], np.cumsum(cm.stripe_rows.astype(np.int64))])
        for s in range(len(cm.specs)):
            for st, pages in enumerate(cm.pages[s]):
                for p in pages:
                    a = int(starts[st] + p["first_item"])
                    assert a in bounds and a + int(p["item_count"]) in bounds
    with pytest.raises(UserInputException):
        w2 = FermionWriter()
        w2.append_batch(tables[0])
        w2.write(tables[0])


def test_writer_streams_to_file(tmp_path: object) -> None:
    import pathlib

    p = pathlib.Path(str(tmp_path)) / "x.fermion"
    t = pa.table({"a": np.arange(10_000), "b": np.arange(10_000).astype(str)})
    with FermionWriter(p, stripe_rows=3000) as w:
        w.write(t.slice(0, 5000))
        w.write(t.slice(5000).to_batches()[0])
    r = FermionReader(p)
    assert r.num_stripes == 4
    assert_same(r.read(), t)
    r.close()
    with open(p, "rb") as fh:
        assert_same(decode(fh, columns=["b"]), t.select(["b"]))


def test_local_file_reads_plain_pages_in_place(tmp_path: object) -> None:
    import pathlib

    from arcticlite.exceptions import ChecksumError

    p = pathlib.Path(str(tmp_path)) / "plain.fermion"
    t = pa.table({"x": np.random.default_rng(5).random(200_000), "y": np.arange(200_000)})
    p.write_bytes(encode(t, page_size=64 * 1024))
    assert_same(decode(p), t)
    assert_same(decode(p, row_range=(70_000, 140_001), columns=["x"]), t.select(["x"]).slice(70_000, 70_001))
    page = FermionReader(p).page_stats("x")[3]
    assert page["encoding"] == 0  # random floats stay plain
    raw = bytearray(p.read_bytes())
    raw[page["offset"] + 100] ^= 0x10
    p.write_bytes(bytes(raw))
    with pytest.raises(ChecksumError):
        decode(p)
    raw[page["offset"] + 100] ^= 0x10
    raw[page["offset"]] = 7  # id byte no longer 'plain'
    p.write_bytes(bytes(raw))
    with pytest.raises(CorruptDataError):
        decode(p)
