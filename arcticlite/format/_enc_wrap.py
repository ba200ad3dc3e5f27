"""General-purpose compression (ZSTD / LZ4 through ``pyarrow.Codec``) for encoded blobs.

``pyarrow.Codec.compress`` / ``decompress`` run the C++ codec without the GIL, so pages can be
(de)compressed from a thread pool.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from arcticlite.exceptions import FormatEOFError, InvalidFileError
from arcticlite.format._enc_policy import current as _policy
from arcticlite.format._enc_spec import CODEC_HDR, LZ4, ZSTD

__all__ = [
    "MIN_SAVING",
    "ZSTD_LEVELS",
    "choose_codec",
    "choose_codec_blob",
    "compress_best",
    "compress_if_it_pays",
    "decompress",
    "region",
    "wrap",
]

#: Compression is kept only if it saves at least this fraction of the bytes.
MIN_SAVING = 0.10
#: LZ4 (much faster to decode) is preferred when within this factor of ZSTD's size.
LZ4_SLACK = 1.05
#: Variants this many times larger than the smallest one are not offered to the codec.
MAX_VARIANT_SPREAD = 3.0
#: ZSTD levels tried per variant.
ZSTD_LEVELS = (1, 3)
_ZSTD_LEVELS = {lvl: pa.Codec("zstd", compression_level=lvl) for lvl in ZSTD_LEVELS}
_LZ4 = pa.Codec("lz4")
_CODECS = {ZSTD: _ZSTD_LEVELS[1], LZ4: _LZ4}
_PROBE = 1 << 14
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def region(blob: bytes | memoryview | bytearray | np.ndarray) -> memoryview:
    """Return ``blob`` as a flat read-only byte memoryview (no copy when possible)."""
    mv = blob.data if isinstance(blob, np.ndarray) else memoryview(blob)
    if not mv.c_contiguous:
        mv = memoryview(mv.tobytes())
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    return mv


def wrap(eid: int, blob: bytes, level: int = 1) -> bytes:
    """Compress ``blob`` with codec ``eid`` (ZSTD at ``level``, or LZ4) into a wrapper blob."""
    codec = _ZSTD_LEVELS[level] if eid == ZSTD else _LZ4
    return CODEC_HDR.pack(eid, len(blob)) + codec.compress(blob, asbytes=True)


def _worth_trying(blob: bytes) -> bool:
    """Probe a 16 KiB slice of a large blob: skip compression of incompressible bytes."""
    if len(blob) <= 4 * _PROBE:
        return True
    mid = len(blob) // 2
    probe = _ZSTD_LEVELS[1].compress(blob[mid : mid + _PROBE], asbytes=True)
    return len(probe) <= (1 - MIN_SAVING / 2) * _PROBE


def _choose_lz4(variants: list[bytes]) -> tuple[int, int | None, int, bytes]:
    """The smallest of ``variants`` and their LZ4 wrappers (the ``read`` policy)."""
    smallest = min(len(v) for v in variants)
    best: tuple[int, int | None, int, bytes] = (0, None, 0, variants[0])
    for i, v in enumerate(variants):
        cand: tuple[int, int | None, int, bytes] = (i, None, 0, v)
        if 64 <= len(v) <= MAX_VARIANT_SPREAD * smallest:
            lz = wrap(LZ4, v)
            if len(lz) <= (1 - MIN_SAVING) * len(v):
                cand = (i, LZ4, 0, lz)
        if len(cand[3]) < len(best[3]):
            best = cand
    return best


def _choose(variants: list[bytes]) -> tuple[int, int | None, int, bytes]:
    if not _policy().zstd:
        return _choose_lz4(variants)
    order = sorted(range(len(variants)), key=lambda i: len(variants[i]))
    smallest = len(variants[order[0]])
    unique: list[int] = []
    for i in order:
        v = variants[i]
        if not any(len(variants[u]) == len(v) and variants[u] == v for u in unique):
            unique.append(i)
    best: tuple[int, int | None, int, bytes] = (unique[0], None, 0, variants[unique[0]])
    tried: list[tuple[int, int]] = []
    for i in unique:
        v = variants[i]
        if len(v) < 64 or len(v) > MAX_VARIANT_SPREAD * smallest or not _worth_trying(v):
            continue
        z = wrap(ZSTD, v, ZSTD_LEVELS[0])
        tried.append((len(z), i))
        if len(z) <= (1 - MIN_SAVING) * len(v) and len(z) < len(best[3]):
            best = (i, ZSTD, ZSTD_LEVELS[0], z)
    tried.sort()
    for _, i in tried[:1]:
        v = variants[i]
        for level in ZSTD_LEVELS[1:]:
            z = wrap(ZSTD, v, level)
            if len(z) <= (1 - MIN_SAVING) * len(v) and len(z) < len(best[3]):
                best = (i, ZSTD, level, z)
    if best[1] is not None:
        lz = wrap(LZ4, variants[best[0]])
        if len(lz) <= LZ4_SLACK * len(best[3]):
            best = (best[0], LZ4, 0, lz)
    return best


def choose_codec(variants: list[bytes]) -> tuple[int, int | None, int]:
    """Pick the smallest of ``variants`` and their ZSTD/LZ4 wrappers.

    A wrapper counts only where it saves at least :data:`MIN_SAVING` of its input. Variants
    more than :data:`MAX_VARIANT_SPREAD` times the smallest are not compressed; the others
    are tried with ZSTD level 1, the best of them again at the higher levels of
    :data:`ZSTD_LEVELS` (low levels often win on lightweight-encoded data), and LZ4 replaces
    ZSTD when within :data:`LZ4_SLACK` of its size (it decodes several times faster). Under
    the ``read`` policy (:mod:`._enc_policy`) LZ4 is the only codec tried.

    Parameters
    ----------
    variants : list of bytes
        Alternative encodings of the same values.

    Returns
    -------
    tuple of (int, int or None, int)
        Index of the chosen variant, codec id (``ZSTD``, ``LZ4`` or None for none), level.
    """
    i, codec, level, _ = _choose(variants)
    return i, codec, level


def choose_codec_blob(variants: list[bytes]) -> tuple[int, int | None, int, bytes]:
    """:func:`choose_codec` and the blob it chooses (:func:`compress_best`), in one pass."""
    return _choose(variants)


def compress_best(variants: list[bytes]) -> bytes:
    """Return the smallest of ``variants`` and their ZSTD/LZ4 wrappers (see :func:`choose_codec`).

    Parameters
    ----------
    variants : list of bytes
        Alternative encodings of the same values.

    Returns
    -------
    bytes
        The chosen blob.
    """
    return _choose(variants)[3]


def compress_if_it_pays(blob: bytes, codec: int | None, level: int) -> bytes:
    """Wrap ``blob`` with ``codec`` if that saves at least :data:`MIN_SAVING`."""
    if codec is None or len(blob) < 64:
        return blob
    z = wrap(codec, blob, level)
    return z if len(z) <= (1 - MIN_SAVING) * len(blob) else blob


def _zstd_content_size(frame: memoryview) -> int | None:
    """Return the content size declared in a zstd frame header, if any."""
    if len(frame) < 6 or bytes(frame[:4]) != _ZSTD_MAGIC:
        raise InvalidFileError("bad zstd frame magic")
    fhd = frame[4]
    fcs_flag = fhd >> 6
    single = (fhd >> 5) & 1
    did_size = (0, 1, 2, 4)[fhd & 3]
    fcs_size = (single, 2, 4, 8)[fcs_flag]
    if fcs_size == 0:
        return None
    pos = 5 + (0 if single else 1) + did_size
    if len(frame) < pos + fcs_size:
        raise FormatEOFError("truncated zstd frame header")
    value = int.from_bytes(frame[pos : pos + fcs_size], "little")
    return value + 256 if fcs_size == 2 else value


def decompress(eid: int, frame: memoryview, raw_len: int) -> memoryview:
    """Decompress one ZSTD/LZ4 frame that must hold exactly ``raw_len`` bytes.

    The caller has already bounded ``raw_len``; the declared zstd content size is checked
    against it before any allocation.
    """
    if eid == ZSTD:
        declared = _zstd_content_size(frame)
        if declared is not None and declared != raw_len:
            raise InvalidFileError("zstd frame size does not match the block header")
    try:
        out = _CODECS[eid].decompress(pa.py_buffer(frame), decompressed_size=raw_len)
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise InvalidFileError(f"corrupt compressed block: {exc}") from exc
    if out.size != raw_len:
        raise InvalidFileError("decompressed block has the wrong size")
    return memoryview(out)
