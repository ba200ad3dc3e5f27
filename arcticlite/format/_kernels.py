"""Which kernels the value encodings use: the optional native module, or numpy.

``arcticlite.format._native`` (``_native.c``, built by ``pip install`` when a C compiler is
present) does bit-packing, unpacking, min/max and the decimal split each in one pass without
the GIL; the numpy code does the same in several numpy calls under it. Both give the same
bytes (``tests/format/test_kernels.py`` compares them), so the choice changes speed only.

``ARCTICLITE_NATIVE=0`` in the environment makes a process use numpy even when the module is
built (to compare the two, or to rule the native code out while chasing a problem).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import numpy as np

__all__ = ["MASK64", "NATIVE", "byte_cuts", "code_counts", "codes_in_range", "factorize_words", "min_max", "native_enabled", "presence"]


def _load() -> ModuleType | None:
    if os.environ.get("ARCTICLITE_NATIVE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    try:
        return importlib.import_module("arcticlite.format._native")
    except ImportError:  # not built (no C compiler at install): the numpy code serves
        return None


#: Unsigned 64-bit patterns: what the kernels take for bases and factors.
MASK64 = (1 << 64) - 1

#: The native module, or None when the numpy code serves (not built, or turned off).
NATIVE: ModuleType | None = _load()


def native_enabled() -> bool:
    """Whether the value encodings use the native kernels in this process."""
    return NATIVE is not None


def min_max(x: np.ndarray) -> tuple[int, int]:
    """The smallest and largest of the non-empty integer array ``x``, as Python ints (one pass
    with the native kernels, two numpy reductions without)."""
    native = NATIVE
    if native is not None and x.flags.c_contiguous and x.dtype.kind in "iu":
        lo, hi = native.minmax(x, x.dtype.itemsize, x.dtype.kind == "i")
        return int(lo), int(hi)
    return int(x.min()), int(x.max())


def _offsets(x: np.ndarray, lo: int) -> np.ndarray:
    ud = np.dtype(f"<u{x.dtype.itemsize}")
    base = np.array(lo & ((1 << (8 * x.dtype.itemsize)) - 1), dtype=ud)
    return (x.view(ud) - base).astype(np.intp)


def presence(x: np.ndarray, lo: int, size: int) -> np.ndarray:
    """A ``bool`` table of ``size`` entries, True at ``v - lo`` for every value ``v`` of the
    integer array ``x`` (all of which lie in ``lo .. lo + size - 1``): the distinct values of a
    small-range column are ``lo + flatnonzero(table)``."""
    table = np.zeros(size, dtype=bool)
    native = NATIVE
    if native is not None and x.flags.c_contiguous and x.dtype.kind in "iu":
        if not native.mark(x, x.dtype.itemsize, lo & MASK64, table):
            raise ValueError(f"a value lies outside {lo} .. {lo + size - 1}")
        return table
    table[_offsets(x, lo)] = True
    return table


def codes_in_range(x: np.ndarray, lo: int, table: np.ndarray) -> np.ndarray:
    """``table[v - lo]`` for every value ``v`` of the integer array ``x`` (``table`` a
    ``uint32`` array covering their range), as a new ``uint32`` array."""
    native = NATIVE
    if native is not None and x.flags.c_contiguous and x.dtype.kind in "iu" and table.dtype == np.uint32:
        out = np.empty(len(x), dtype=np.uint32)
        if not native.lookup(x, x.dtype.itemsize, lo & MASK64, np.ascontiguousarray(table), out):
            raise ValueError(f"a value lies outside {lo} .. {lo + len(table) - 1}")
        return out
    return table[_offsets(x, lo)].astype(np.uint32, copy=False)


def factorize_words(words: np.ndarray, max_uniques: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``(codes, uniques)`` of the 8-byte words ``words`` (``int64``/``uint64``, e.g. object
    addresses): ``int32`` codes by order of first appearance, as ``pandas.factorize`` gives;
    None when there are more than ``max_uniques`` distinct words."""
    native = NATIVE
    if native is not None and words.flags.c_contiguous and words.flags.aligned:
        codes = np.empty(len(words), dtype=np.int32)
        uniques = np.empty(max(0, min(max_uniques, len(words))), dtype=np.uint64)
        got = native.factorize(words, codes, uniques)
        if got < 0:
            return None
        return codes, uniques[:got].view(words.dtype)
    import pandas as pd  # (only the fallback needs it)

    where, uniq = pd.factorize(words)
    if len(uniq) > max_uniques:
        return None
    return where.astype(np.int32), uniq


def byte_cuts(codes: np.ndarray, lens: np.ndarray, page_size: int, per_page: int) -> list[int] | None:
    """Page boundaries ``[0, ..., n]`` of dictionary ``codes`` whose values are ``lens[code]``
    bytes long: a page ends before the row that would take it past ``page_size`` bytes (at
    least one row a page) or at ``per_page`` rows. None without the native kernels (the caller
    cuts by cumulative lengths)."""
    native = NATIVE
    if native is None or codes.dtype.itemsize != 4 or codes.dtype.kind not in "iu":
        return None
    codes = np.ascontiguousarray(codes).view(np.uint32)
    lens = np.ascontiguousarray(lens, dtype=np.int64)
    out = np.empty(len(codes) + 1, dtype=np.int64)
    k = native.byte_cuts(codes, lens, page_size, max(1, per_page), out)
    return out[:k].tolist()


def code_counts(codes: np.ndarray, size: int) -> np.ndarray:
    """Occurrences of each of ``0 .. size - 1`` among the non-negative integer ``codes`` (as
    ``numpy.bincount(codes, minlength=size)``, int64); ValueError for a code of ``size`` or
    more. One pass with the native kernels (numpy converts the codes to int64 first)."""
    native = NATIVE
    if native is not None and codes.dtype.itemsize == 4 and codes.dtype.kind in "iu" and codes.flags.c_contiguous:
        out = np.zeros(size, dtype=np.int64)
        native.count_codes(codes.view(np.uint32), out)
        return out
    out = np.bincount(codes, minlength=size)
    if len(out) > size:
        raise ValueError("a code is beyond the dictionary")
    return out
