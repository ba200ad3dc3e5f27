"""Object arrays of strings filled by pointer (``read_into(null_objects=True)``): the same
values as a slot-by-slot fill, and reference counts that hold up when the array is freed."""

from __future__ import annotations

import gc
import sys
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from arcticlite.exceptions import CorruptDataError
from arcticlite.format import (
    OBJECTS_BY_POINTER,
    FermionReader,
    Labels,
    encode,
    object_array,
    object_words,
)
from arcticlite.format import _layout as L

pytestmark = pytest.mark.skipif(not OBJECTS_BY_POINTER, reason="objects by pointer need CPython")

LABELS = ["NYSE", "NASDAQ", "a much longer venue name é", "", "é", "x", "ARCA"]


def _table(n: int, seed: int = 0, null_rate: float = 0.0) -> pa.Table:
    rng = np.random.default_rng(seed)
    mask = rng.random(n) < null_rate if null_rate else None
    few = [LABELS[i] for i in rng.integers(0, len(LABELS), n)]
    many = [f"label_{i:04d}" for i in rng.integers(0, 1_000, n)]
    return pa.table({"few": pa.array(few, mask=mask), "many": pa.array(many),
                     "bin": pa.array([v.encode() for v in few], pa.large_binary()),
                     "dict": pa.array(few).dictionary_encode(),
                     "f": rng.random(n)})


def _uses_hold(out: np.ndarray) -> None:
    """Every object in ``out`` is referenced at least as often as ``out`` uses it, and exactly
    that often (plus this check's own references) when nothing else holds it."""
    gc.collect()
    by_id = {id(v): v for v in out if v is not None}
    uses = Counter(id(v) for v in out if v is not None)
    for k in list(by_id):
        v = by_id[k]
        held = sys.getrefcount(v) - 3  # getrefcount's argument, by_id and v
        assert held >= uses[k], (v, held, uses[k])
        if len(v) > 1:  # not an interpreter-wide singleton: out (and by_id) hold it alone
            assert held == uses[k], (v, held, uses[k])


def test_object_array_starts_with_null_slots_that_read_as_none() -> None:
    a, null = object_array((3, 5))
    assert null and a.dtype == object and a.shape == (3, 5) and a.flags.owndata
    assert not object_words(a[1]).any()
    assert a.tolist() == [[None] * 5] * 3
    a[1, 2] = "x"
    assert a[1].tolist() == [None, None, "x", None, None]
    del a
    gc.collect()


@pytest.mark.parametrize("page_size", [256, 4096, 1 << 19])
@pytest.mark.parametrize("null_rate", [0.0, 0.1])
def test_null_objects_fill_the_same_values_as_slot_by_slot(page_size: int, null_rate: float) -> None:
    n = 20_000
    t = _table(n, null_rate=null_rate)
    r = FermionReader(encode(t, page_size=page_size, stripe_rows=7_000))
    for rr in [None, (0, n), (3, n - 5), (7_001, 13_999), (100, 101)]:
        a, b = rr or (0, n)
        for name in ("few", "many", "bin", "dict"):
            want = np.full(b - a, "poison", dtype=object)
            (wv,) = r.read_into([name], [want], row_range=rr)
            got = object_array((b - a,))[0]
            (gv,) = r.read_into([name], [got], row_range=rr, null_objects=True)
            assert got.tolist() == want.tolist() == t.column(name).to_pylist()[a:b]
            assert (gv is None and wv is None) or np.array_equal(gv, wv)
            assert object_words(got).all()  # every slot written
            _uses_hold(got)


def test_equal_values_share_objects() -> None:
    n = 50_000
    t = _table(n)
    r = FermionReader(encode(t.select(["few", "many"]), page_size=8_192))
    pages = len([p for p in r.page_stats("few") if p["stream"] == "DATA"])
    assert pages > 2
    for name, distinct in (("few", len(LABELS)), ("many", n)):
        out = object_array((n,))[0]
        r.read_into([name], [out], null_objects=True)
        assert out.tolist() == t.column(name).to_pylist()
        slot_by_slot = np.empty(n, dtype=object)
        r.read_into([name], [slot_by_slot])
        # dictionary pages: at most one object per value and page; never more than slot by slot
        assert len({id(v) for v in out}) <= min(len({id(v) for v in slot_by_slot}), distinct * pages)


def test_freeing_the_result_gives_every_reference_back() -> None:
    n = 30_000
    t = _table(n)
    r = FermionReader(encode(t.select(["few", "many"]), page_size=16_384))
    shared = {v: sys.getrefcount(v) for v in ("", "é", "x")}
    outs = [object_array((n,))[0], object_array((n,))[0]]
    r.read_into(["few", "many"], outs, null_objects=True)
    kept = outs[1][0]  # one value held past the array
    before = sys.getrefcount(kept)
    uses = int(sum(v is kept for v in outs[1]))
    for _ in range(30):  # singletons: a wrong count would be off by thousands
        more = object_array((n,))[0]
        r.read_into(["few"], [more], null_objects=True)
        del more
    del outs
    gc.collect()
    assert sys.getrefcount(kept) == before - uses
    for v, count in shared.items():
        assert abs(sys.getrefcount(v) - count) < 10, (v, sys.getrefcount(v) - count)


def test_a_failed_read_leaves_a_freeable_array(monkeypatch: pytest.MonkeyPatch) -> None:
    n = 40_000
    t = _table(n)
    data = bytearray(encode(t.select(["few"]), page_size=8_192))
    r = FermionReader(bytes(data))
    pages = [p for p in r.page_stats("few") if p["stream"] == "DATA"]
    last = pages[-1]
    data[last["offset"] + last["compressed"] // 2] ^= 0xFF  # the last page's checksum fails
    out = object_array((n,))[0]
    with pytest.raises(CorruptDataError):
        FermionReader(bytes(data), parallel=False).read_into(["few"], [out], null_objects=True)
    written = out[object_words(out) != 0]
    assert len(written) and written.tolist() == t.column("few").to_pylist()[: len(written)]
    del written
    _uses_hold(out)
    del out
    gc.collect()
    assert L.HEADER_SIZE  # the interpreter is still standing


def test_values_far_apart_in_memory() -> None:
    """Short values live in the interpreter's small-object arenas, long ones anywhere in the
    heap or in their own mappings: terabytes apart in the address space."""
    n = 6_000
    labels = ["short value", "m" * 3_000 + "é", "L" * 40_000]
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 3, n)
    col = pa.array(np.array(labels, dtype=object)[codes], pa.large_string())
    r = FermionReader(encode(pa.table({"s": col})))
    out = object_array((n,))[0]
    r.read_into(["s"], [out], null_objects=True)
    assert all(v == labels[k] for v, k in zip(out, codes, strict=True))
    assert len({id(v) for v in out}) <= 3 * len(r.page_stats("s"))
    _uses_hold(out)


def test_calls_given_one_labels_share_its_objects() -> None:
    """The segments one thread decodes for a read share one ``Labels``: one object per value
    across all of them, every reference counted."""
    n = 30_000
    part = _table(10_000).select(["few", "many"])
    t = pa.concat_tables([part] * 3)
    files = [FermionReader(encode(part, page_size=8_192)) for _ in range(3)]  # same dictionaries
    labels = Labels()
    out = {c: object_array((n,))[0] for c in ("few", "many")}
    for k, r in enumerate(files):
        r.read_into(["few", "many"], [out["few"][k * 10_000 : (k + 1) * 10_000],
                                      out["many"][k * 10_000 : (k + 1) * 10_000]],
                    null_objects=True, labels=labels)
    del labels
    for c in ("few", "many"):
        assert out[c].tolist() == t.column(c).to_pylist()
        _uses_hold(out[c])
    # the dictionaries repeat across the files: their objects are made once
    assert len({id(v) for v in out["few"]}) <= len(LABELS) * len(files[0].page_stats("few"))
    slot_by_slot = np.empty(n, dtype=object)
    for k, r in enumerate(files):
        r.read_into(["few"], [slot_by_slot[k * 10_000 : (k + 1) * 10_000]])
    assert len({id(v) for v in out["few"]}) < len({id(v) for v in slot_by_slot})
