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

__all__ = ["NATIVE", "native_enabled"]


def _load() -> ModuleType | None:
    if os.environ.get("ARCTICLITE_NATIVE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    try:
        return importlib.import_module("arcticlite.format._native")
    except ImportError:  # not built (no C compiler at install): the numpy code serves
        return None


#: The native module, or None when the numpy code serves (not built, or turned off).
NATIVE: ModuleType | None = _load()


def native_enabled() -> bool:
    """Whether the value encodings use the native kernels in this process."""
    return NATIVE is not None
