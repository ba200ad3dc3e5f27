"""The writer's bulk paths: the bulk incompressibility test, PLAIN pages written from the
Arrow buffers, and the gathering sink (background writes for a path)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pyarrow as pa

from arcticlite.format import FermionReader, FermionWriter
from arcticlite.format._encodings import (
    _incompressible_floats,
    encode_fixed,
    incompressible_many,
    plain_parts,
)
from tests.format.conftest import assert_same


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
