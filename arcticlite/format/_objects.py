"""Object arrays of strings filled by pointer: the fast path for dictionary-coded strings.

A read of a string column returns a numpy array of Python ``str`` (dtype object), as pandas and
ArcticDB do. A dictionary-coded page makes one ``str`` per dictionary entry and takes them by
code; filled one slot at a time, that costs a reference count update per row, under the GIL,
and :func:`numpy.empty` first writes ``None`` into every slot of fresh memory, also under the
GIL. On two cores both held the other decoding thread back (a 5M-row read of a 1,000-label
column spent ~50 ms of its ~140 ms holding the GIL for them).

Here instead

1. :func:`object_array` allocates the array with every slot NULL (which numpy reads as None)
   and its memory not yet touched, through numpy's own ``PyArray_NewFromDescr``;
2. :class:`Labels` writes each page's rows as the *addresses* of the page's dictionary
   objects (a ``numpy.take`` of integers, which releases the GIL, into memory mapped just
   before outside the GIL), counts the uses of each object, and
3. :meth:`Labels.flush` adds the counts to the objects' reference counts, once per object,
   before anything else can see the rows (the caller flushes before it patches nulls and
   before the array leaves the read).

The dictionary objects are made once per distinct dictionary of a column in one
:class:`Labels` (one segment): equal values share one object, as in ArcticDB's result. They
are fresh objects that no other thread can reach until the flush, so adding to their counts
races with nothing; the empty and one-character values, which CPython shares process-wide,
are excepted: their rows are assigned by numpy, which counts each reference under the GIL.

This relies on CPython's object layout (the reference count is the first word of an object)
and is used only where a self-test at import shows it holds: CPython with the GIL, not a debug
build. Everywhere else :data:`FAST` is False and callers fill object arrays one slot at a
time as before; the values returned are the same either way.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any

import numpy as np

from arcticlite.format._alloc import populate

_INTP = np.dtype(np.intp)
#: Slots of at least this many bytes are mapped (outside the GIL) before they are written.
POPULATE_MIN_BYTES = 1 << 16
#: Reference counts are added through views of at most about this many bytes.
WINDOW = 1 << 20
#: Dictionaries of up to this many values count their uses by one comparison per value.
FEW_VALUES = 8
#: A use count above this in one flush is refused (it could reach CPython's immortal range).
MAX_COUNT = 1 << 30


class _Raw:
    """``numpy.asarray`` of this is an intp view of ``n`` words at address ``addr``."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, addr: int, n: int, owner: Any = None) -> None:
        self.__array_interface__ = {"version": 3, "shape": (n,), "typestr": _INTP.str,
                                    "data": (addr, False)}
        self.owner = owner  # keeps the memory alive as long as the view


def words(a: np.ndarray) -> np.ndarray:
    """The slots of the C-contiguous 1-D object array ``a`` as a writable intp view (the
    addresses of its objects; 0 for NULL). The view keeps ``a`` alive."""
    return np.asarray(_Raw(a.ctypes.data, len(a), a))


def _new_from_descr() -> Any:
    """numpy's ``PyArray_NewFromDescr`` (C-API slot 94), or None."""
    import importlib

    try:
        try:
            umath: Any = importlib.import_module("numpy._core._multiarray_umath")
        except ImportError:  # pragma: no cover - numpy 1.x
            umath = importlib.import_module("numpy.core._multiarray_umath")
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype = ctypes.c_void_p
        get.argtypes = [ctypes.py_object, ctypes.c_char_p]
        table = get(umath._ARRAY_API, None)
        addr = ctypes.c_void_p.from_address(table + 94 * ctypes.sizeof(ctypes.c_void_p)).value
        if not addr:
            return None
        proto = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object, ctypes.py_object, ctypes.c_int,
                                  ctypes.POINTER(ctypes.c_ssize_t), ctypes.c_void_p, ctypes.c_void_p,
                                  ctypes.c_int, ctypes.py_object)
        return proto(addr)
    except Exception:  # pragma: no cover - not CPython / another numpy layout
        return None


_NEW = _new_from_descr()
_OBJECT = np.dtype(object)


def _null_array(shape: tuple[int, ...]) -> np.ndarray:
    dims = (ctypes.c_ssize_t * len(shape))(*shape)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(_OBJECT))  # the call steals a reference
    out: np.ndarray = _NEW(np.ndarray, _OBJECT, len(shape), dims, None, None, 0, None)
    return out


class _Refs:
    """Adds to the reference counts of fixed objects (which the caller alone holds: no other
    thread may touch them meanwhile), given by their addresses.

    The counts are added through views of small windows of memory around the objects (one
    per run of addresses less than :data:`WINDOW` bytes apart), by fancy indexing, which reads
    and writes the indexed words only; the windows are worked out once."""

    __slots__ = ("_windows",)

    def __init__(self, addrs: np.ndarray) -> None:
        self._windows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        if not len(addrs):
            return
        order = np.argsort(addrs, kind="stable")
        at = addrs[order]
        if len(at) > 1 and not (np.diff(at) > 0).all():
            raise ValueError("an object given twice")
        cuts = [0, *(np.flatnonzero(np.diff(at) > WINDOW) + 1).tolist(), len(at)]
        for s, e in zip(cuts[:-1], cuts[1:], strict=True):
            lo = int(at[s])
            view = np.asarray(_Raw(lo, (int(at[e - 1]) - lo) // 8 + 1))
            self._windows.append((view, (at[s:e] - lo) // 8, order[s:e]))

    def add(self, counts: np.ndarray) -> None:
        """Add ``counts[i]`` to the count of object ``i`` (in the order given)."""
        for view, idx, members in self._windows:
            view[idx] += counts[members]


def _add_refs(addrs: np.ndarray, counts: np.ndarray) -> None:
    """Add ``counts`` to the reference counts of the distinct objects at ``addrs`` (see
    :class:`_Refs`)."""
    _Refs(addrs).add(counts)


def _self_test() -> bool:
    """Whether this interpreter and numpy work as this module assumes."""
    if _NEW is None or sys.implementation.name != "cpython" or hasattr(sys, "gettotalrefcount"):
        return False
    import sysconfig

    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        return False
    try:
        a = _null_array((2, 3))
        if a.dtype != _OBJECT or a.shape != (2, 3) or not a.flags.owndata or not a.flags.c_contiguous:
            return False
        if words(a.reshape(-1)).any():
            return False
        probe = "".join(["arctic", "lite probe"])  # a fresh object no one else holds
        before = sys.getrefcount(probe)
        _add_refs(np.array([id(probe)], dtype=_INTP), np.array([3], dtype=_INTP))
        ok = sys.getrefcount(probe) == before + 3
        _add_refs(np.array([id(probe)], dtype=_INTP), np.array([-3], dtype=_INTP))
        return ok and sys.getrefcount(probe) == before
    except Exception:  # pragma: no cover - a layout this module does not know
        return False


FAST = _self_test()
"""Whether object arrays can be filled by pointer here (see the module docstring)."""


def object_array(shape: tuple[int, ...]) -> tuple[np.ndarray, bool]:
    """An object array of ``shape`` and whether its slots are NULL (with :data:`FAST`), else
    one filled with None (:func:`numpy.empty`). A NULL slot reads as None; the memory of a
    NULL-filled array is mapped only when first written (:func:`populate`)."""
    if FAST:
        return _null_array(shape), True
    return np.empty(shape, dtype=_OBJECT), False


class _Dict:
    """The objects of one dictionary and the uses of each not yet counted."""

    __slots__ = ("objs", "addrs", "ptrs", "shared", "own", "refs", "pending")

    def __init__(self, objs: np.ndarray, lengths: np.ndarray) -> None:
        self.objs = objs  # holds one reference to each until the flush
        self.addrs = words(objs).copy()  # the objects' addresses, read from the array's slots
        # empty and one-character values (up to 2 bytes: one Latin-1 character in UTF-8) may
        # be interpreter-wide singletons that any thread may touch at any time: they are
        # written by numpy's own object assignment (counted under the GIL), not by pointer
        self.shared = np.flatnonzero(lengths <= 2)
        self.own = np.flatnonzero(lengths > 2)
        self.refs: _Refs | None = None  # few values: added one by one (see flush)
        if len(self.own) > FEW_VALUES:
            try:
                self.refs = _Refs(self.addrs[self.own])  # a dictionary's values are distinct
            except ValueError:  # one object for two values: write them all by assignment
                self.shared, self.own = np.arange(len(objs)), self.own[:0]
        elif len(set(self.addrs[self.own].tolist())) < len(self.own):
            self.shared, self.own = np.arange(len(objs)), self.own[:0]
        self.ptrs = self.addrs.copy()
        self.ptrs[self.shared] = 0  # left NULL by the take, then assigned
        self.pending = np.zeros(len(objs), dtype=np.int64)


class Labels:
    """Fills NULL slots of object arrays (from :func:`object_array`) with dictionary values.

    One per decoding of a segment, or one per thread for the segments of one read (the objects
    are then shared by those segments; the slots filled from one instance must all be written
    by one thread, so that no other thread can reach its objects before their counts are
    added); thread-safe. Every :meth:`take` must be followed by a
    :meth:`flush` before the filled slots are read, overwritten or freed (until then they hold
    references that are not counted yet), also when decoding fails.
    """

    __slots__ = ("_lock", "_dicts", "_order")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._dicts: dict[tuple[Any, bytes, bytes], _Dict] = {}
        self._order: list[_Dict] = []

    def objects(self, kind: Any, offsets: np.ndarray, data: np.ndarray, make: Any) -> _Dict:
        """The (shared) objects of the dictionary of values of Arrow type ``kind`` given as
        int64 ``offsets`` + uint8 ``data``; ``make()`` converts it to an object array (of
        distinct objects) when it is new."""
        key = (kind, offsets.tobytes(), data.tobytes())
        with self._lock:
            d = self._dicts.get(key)
        if d is not None:
            return d
        d = _Dict(make(), np.diff(offsets))
        with self._lock:
            first = self._dicts.setdefault(key, d)
            if first is d:
                self._order.append(d)
        return first

    def take(self, d: _Dict, codes: np.ndarray, dst: np.ndarray) -> None:
        """``dst[i] = d.objs[codes[i]]`` for NULL slots ``dst`` (codes checked in range)."""
        if len(codes) >= MAX_COUNT:
            raise ValueError("too many rows for one page")
        if dst.nbytes >= POPULATE_MIN_BYTES:  # a large NULL-filled array: not mapped yet
            populate((dst,))
        k = len(d.objs)
        if k <= FEW_VALUES:  # a comparison per value (outside the GIL) beats bincount's passes
            eq = np.empty(len(codes), dtype=bool)
            counts = np.array([np.count_nonzero(np.equal(codes, v, out=eq)) for v in range(k)],
                              dtype=np.int64)
            at = codes
        else:
            at = codes.astype(_INTP, copy=False)
            counts = np.bincount(at, minlength=k)
        if len(counts) > k or int(counts.sum()) != len(codes):
            raise ValueError("dictionary code out of range")
        np.take(d.ptrs, at, out=words(dst), mode="clip")
        for v in d.shared[counts[d.shared] != 0].tolist():
            dst[codes == v] = d.objs[v]  # NULL slots: one reference added per slot
        with self._lock:
            d.pending[d.own] += counts[d.own]

    def flush(self) -> None:
        """Count the uses written so far (idempotent)."""
        with self._lock:
            for d in self._order:
                pending = d.pending
                if not pending.any():
                    continue
                if int(pending.max()) >= MAX_COUNT:
                    raise ValueError("too many uses of one value in one read")
                if d.refs is not None:
                    d.refs.add(pending[d.own])  # unused values get 0: theirs alone, unchanged
                else:  # objects no other thread can reach: no update can race with these
                    for i in d.own[pending[d.own] != 0].tolist():
                        ref = ctypes.c_ssize_t.from_address(int(d.addrs[i]))
                        ref.value += int(pending[i])
                pending[:] = 0
