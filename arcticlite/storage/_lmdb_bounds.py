"""Where an LMDB data file's bytes lie in this process's memory map, and the check that a
value lies inside them before anything touches it.

LMDB maps the whole data file read-only from offset 0. A value whose length field a flipped bit
made longer reaches past the end of the file, where the map has nothing behind it: touching it
raises SIGBUS and the interpreter dies. :meth:`MapBounds.check` reads the leaf node's header next
to the found key (its size, flags and first overflow page) and refuses a value that runs past
the file, before py-lmdb is asked for it.
"""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from arcticlite.exceptions import CorruptDataError

__all__ = ["MapBounds", "file_in_map"]

_NODE = struct.Struct("<HHHH")  # an LMDB leaf node's header
_PGNO = struct.Struct("<Q")


def file_in_map(data_file: str) -> tuple[int, int] | None:
    """Where this process maps ``data_file`` from its first byte (LMDB maps the whole file
    read-only from offset 0), and where the file's bytes end in that map: past them the map
    has no file behind it, and touching it raises SIGBUS."""
    try:
        st = os.stat(data_file)
        with open("/proc/self/maps", encoding="ascii", errors="replace") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) >= 5 and int(parts[2], 16) == 0 and parts[4] == str(st.st_ino):
                    start = int(parts[0].split("-", 1)[0], 16)
                    return start, start + st.st_size
    except (OSError, ValueError):
        return None
    return None


class MapBounds:
    """The bounds of one environment's data file in this process's map (``path``: the
    environment's directory; ``page_size``: a callable giving LMDB's page size)."""

    def __init__(self, path: str, page_size: Callable[[], int]) -> None:
        self.path = path
        self._page_size = page_size
        self._bounds: tuple[int, int] | None | bool = False  # see bounds()
        self._psize: int | None = None

    def bounds(self, refresh: bool = False) -> tuple[int, int] | None:
        """``(start, end)`` addresses of the data file's bytes in this process's memory map, or
        None where they cannot be known (no ``/proc/self/maps``): values are checked to lie
        inside them before anything touches them (:meth:`check`). ``refresh``: the file may
        have grown (a stat), or the map moved (its address is read again when the file's size
        alone does not explain a value)."""
        if self._bounds is False:
            self._bounds = file_in_map(os.path.join(self.path, "data.mdb"))
        elif refresh and self._bounds is not None:
            start, _ = self._bounds  # type: ignore[misc]
            try:
                self._bounds = (start, start + os.stat(os.path.join(self.path, "data.mdb")).st_size)
            except OSError:
                self._bounds = None
        return self._bounds  # type: ignore[return-value]

    def page_size(self) -> int:
        if self._psize is None:
            self._psize = int(self._page_size())
        return self._psize

    def remap(self) -> None:
        """Find the map again (after it moved: a resize)."""
        self._bounds = file_in_map(os.path.join(self.path, "data.mdb"))

    def check(self, stored_key: Any, key: str) -> None:
        """Check, before the value is touched, that the value of the leaf node whose key
        ``stored_key`` views (in the map) lies inside the file. LMDB's leaf node: ``u16 lo,
        u16 hi`` (the value's size), ``u16 flags``, ``u16 ksize``, the key, then the value
        inline, or (flag ``F_BIGDATA``) the 8-byte number of its first overflow page, whose
        16-byte header precedes the value.

        Raises
        ------
        CorruptDataError
            The value runs past the end of the file (a damaged length field)."""
        kaddr = pa.py_buffer(stored_key).address  # nothing is read

        def holds(b: tuple[int, int] | None) -> bool:
            return b is not None and b[0] + 8 <= kaddr < b[1]

        b = self.bounds()
        if b is None:
            return
        if not holds(b):  # the file grew since (a stat), or the map moved (a resize)
            b = self.bounds(refresh=True)
            if not holds(b):
                self.remap()
                b = self.bounds()
            if b is None or not holds(b):
                return  # (a key copied out of the map: nothing to check against)
        lo, hi, flags, ksize = _NODE.unpack(ctypes.string_at(kaddr - 8, 8))
        size = lo | (hi << 16)
        if flags & 1:  # F_BIGDATA
            (pgno,) = _PGNO.unpack(ctypes.string_at(kaddr + ksize, 8))
            start = b[0] + pgno * self.page_size() + 16
        else:
            start = kaddr + ksize
        if b[0] <= start and start + size <= b[1]:
            return
        b = self.bounds(refresh=True)  # written since the file was last measured?
        if b is None or (b[0] <= start and start + size <= b[1]):
            return
        raise CorruptDataError(f"the value of {key!r} in the LMDB file at {self.path!r} claims {size:,} bytes "
                               "that run past the end of the file (a damaged length field); restore the store from "
                               "a backup")
