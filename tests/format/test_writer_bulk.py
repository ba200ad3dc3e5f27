"""The writer's bulk paths: the bulk incompressibility test, PLAIN pages written from the
Arrow buffers, and the gathering sink (background writes for a path)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arcticlite.format import FermionReader, FermionWriter, decode
from arcticlite.format._encodings import (
    _incompressible_floats,
    encode_fixed,
    incompressible_many,
    plain_parts,
)
from tests.format.conftest import assert_same
from tests.format.test_properties import tables


def _arrays() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    noisy = rng.standard_normal(5000)
    with_nan = noisy.copy()
    with_nan[::5] = np.nan
    head_sorted = noisy.copy()
    head_sorted[2500:2520] = np.arange(20.0)  # monotonic over the head of the sample only
    return [
        noisy, rng.random(1024), np.round(noisy, 2), np.sort(noisy), np.full(3000, 2.5),
        with_nan, head_sorted, noisy.astype(np.float32), noisy.astype(">f8"),
        noisy[::2].copy(), noisy[:1000], rng.integers(0, 9, 4000), np.repeat(noisy[:40], 100),
    ]


def test_bulk_gate_matches_encode_fixed() -> None:
    arrays = _arrays()
    got = incompressible_many(arrays)
    for a, plain in zip(arrays, got.tolist(), strict=True):
        x = np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<")))
        single = x.dtype.kind == "f" and len(x) >= 1024 and _incompressible_floats(x)
        assert plain == single, a[:4]
        blob = encode_fixed(a)
        if plain:
            assert b"".join(plain_parts(a)) == blob
        assert encode_fixed(a, gate=False) == blob or plain


def _table(ncols: int, nrows: int) -> pa.Table:
    rng = np.random.default_rng(4)
    cols = {f"c{i}": rng.random(nrows) if i % 4 else np.round(rng.random(nrows), 2)
            for i in range(ncols)}
    cols["s"] = pa.array([None if i % 7 == 0 else f"v{i % 13}" for i in range(nrows)])
    return pa.table(cols)


def test_sinks_write_the_same_bytes(tmp_path: Path) -> None:
    t = _table(150, 10_000)  # > 8 MiB of plain pages: several background writes
    mem = FermionWriter(None)
    mem.write(t)
    expected = mem.close()
    assert expected is not None
    path = tmp_path / "t.fermion"
    with FermionWriter(path, stripe_rows=4000) as w:
        w.write(t)
    bio = io.BytesIO()
    with FermionWriter(bio, stripe_rows=4000) as w:
        w.write(t)
    assert path.read_bytes() == bio.getvalue()
    with FermionWriter(path) as w:
        w.write(t)
    assert path.read_bytes() == expected
    with FermionReader(path) as r:
        assert_same(r.read(), t)


def test_batch_mode_to_a_path(tmp_path: Path) -> None:
    t = _table(40, 30_000)
    path = tmp_path / "b.fermion"
    with FermionWriter(path, stripe_rows=20_000) as w:
        for k in range(0, t.num_rows, 7_000):
            w.append_batch(t.slice(k, 7_000))
    mem = FermionWriter(None, stripe_rows=20_000)
    for k in range(0, t.num_rows, 7_000):
        mem.append_batch(t.slice(k, 7_000))
    assert path.read_bytes() == mem.close()
    with FermionReader(path) as r:
        assert_same(r.read(), t)
        assert_same(r.read_batch(1), t.slice(7_000, 7_000))


def _encode_with(t: pa.Table, small_records: int, batches: list[int] | None, **opts: object) -> bytes:
    from arcticlite.format import _writer_cmb

    old = _writer_cmb._SMALL_CMB_RECORDS
    _writer_cmb._SMALL_CMB_RECORDS = small_records
    try:
        w = FermionWriter(None, t.schema, **opts)  # type: ignore[arg-type]
        if batches is None:
            w.write(t)
        else:
            pos = 0
            for n in batches:
                w.append_batch(t.slice(pos, n))
                pos += n
        out = w.close()
    finally:
        _writer_cmb._SMALL_CMB_RECORDS = old
    assert out is not None
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.sampled_from([64, 512, 1 << 19]), st.sampled_from([3, 50, 1 << 20]),
       st.booleans(), st.sampled_from(["size", "read", "write"]))
def test_small_and_bulk_cmb_builders_write_the_same_bytes(t: pa.Table, page_size: int, stripe_rows: int,
                                                          batch: bool, policy: str) -> None:
    """Small files get their CMBs record by record, large ones by array operations: the two
    builders must agree byte for byte on every file."""
    batches = None
    if batch:
        n = t.num_rows
        batches = [n // 3, n - n // 3] if n else []
    opts = dict(page_size=page_size, stripe_rows=stripe_rows, optimize_for=policy, parallel=False)
    small = _encode_with(t, 1 << 30, batches, **opts)
    assert small == _encode_with(t, 0, batches, **opts)
    assert_same(decode(small), t)
