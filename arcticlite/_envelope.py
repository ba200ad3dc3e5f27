"""Checksummed envelope for every small stored value (version records, refs, index nodes,
symbol-list entries, snapshots, library config).

LMDB does not checksum values, so every value carries its own xxh3 checksum::

    offset  size  field
    0       4     magic  b"ALv1"
    4       2     format_version (u16 LE)
    6       2     kind (u16 LE)
    8       4     header length H (u32 LE)
    12      8     blob length B (u64 LE)
    20      H     header: UTF-8 JSON object
    20+H    B     blob: opaque bytes (pickled metadata, POD arrays, ...)
    20+H+B  8     xxh3_64 of bytes [0, 20+H+B) (u64 LE)
"""

from __future__ import annotations

import contextlib
import json
import struct
from collections.abc import Iterator
from typing import Any

import xxhash

from arcticlite.exceptions import (
    ChecksumError,
    CorruptDataError,
    FormatEOFError,
    InvalidFileError,
    UnsupportedVersionError,
)


@contextlib.contextmanager
def naming_key(key: str) -> Iterator[None]:
    """A :class:`CorruptDataError` raised inside names the storage key of the bytes, so that an
    operator can find and restore them."""
    try:
        yield
    except CorruptDataError as exc:
        if key in str(exc):
            raise
        raise type(exc)(f"{exc} (storage key {key!r})") from exc


MAGIC = b"ALv1"
FORMAT_VERSION = 1
_HEAD = struct.Struct("<4sHHIQ")

KIND_CONFIG = 1
KIND_VERSION = 2
KIND_REF = 3
KIND_INDEX_NODE = 4
KIND_SNAPSHOT = 5
KIND_SYMBOL_LIST = 6
KIND_REGISTRY = 7
KIND_STAGED = 8
KIND_PICKLED = 9

_KIND_NAMES = {
    KIND_CONFIG: "library config",
    KIND_VERSION: "version record",
    KIND_REF: "version ref",
    KIND_INDEX_NODE: "table index node",
    KIND_SNAPSHOT: "snapshot",
    KIND_SYMBOL_LIST: "symbol list",
    KIND_REGISTRY: "library registry entry",
    KIND_STAGED: "staged segment",
    KIND_PICKLED: "pickled data",
}


def seal(kind: int, header: dict[str, Any], blob: bytes | memoryview = b"") -> bytes:
    """Serialise ``header`` (JSON-able) and ``blob`` into a checksummed value."""
    h = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    body = _HEAD.pack(MAGIC, FORMAT_VERSION, kind, len(h), len(blob)) + h + bytes(blob)
    return body + xxhash.xxh3_64_digest(body)[::-1]


def unseal(data: Any, kind: int, *, what: str = "") -> tuple[dict[str, Any], memoryview]:
    """Validate and open a value written by :func:`seal`; raise a ``CorruptDataError`` if bad."""
    label = what or _KIND_NAMES.get(kind, "value")
    mv = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
    n = len(mv)
    if n < _HEAD.size + 8:
        raise InvalidFileError(f"{label} is {n} bytes, too short to be valid; the key is corrupt")
    magic, version, k, hlen, blen = _HEAD.unpack_from(mv, 0)
    if magic != MAGIC:
        raise InvalidFileError(f"{label} has bad magic {bytes(magic)!r}; the key is corrupt")
    def newer() -> UnsupportedVersionError:
        return UnsupportedVersionError(f"{label} has format version {version}, newer than this "
                                       f"arcticlite understands ({FORMAT_VERSION}); upgrade "
                                       "arcticlite to read it")

    end = _HEAD.size + hlen + blen
    if end + 8 != n:
        if version > FORMAT_VERSION:  # a layout this version does not know
            raise newer()
        raise FormatEOFError(f"{label} declares {end + 8} bytes but holds {n}; the key is corrupt")
    stored = bytes(mv[end:n])[::-1]
    if xxhash.xxh3_64_digest(mv[:end]) != stored:
        # checked before the version: a flipped version field is corruption, not a newer writer
        raise ChecksumError(f"{label} fails its checksum; the stored bytes are corrupt")
    if version > FORMAT_VERSION:
        raise newer()
    if k != kind:
        raise InvalidFileError(f"expected a {label} but found kind {k}; the key is corrupt")
    try:
        header = json.loads(bytes(mv[_HEAD.size : _HEAD.size + hlen]))
    except ValueError as exc:  # checksum passed, so this is a writer bug or a forgery
        raise InvalidFileError(f"{label} header is not valid JSON") from exc
    return header, mv[_HEAD.size + hlen : end]


def seal_pickled(body: bytes) -> bytes:
    """The stored form of ``write_pickle`` data: the pickle in a checksummed envelope."""
    return seal(KIND_PICKLED, {}, body)


def unseal_pickled(data: Any) -> tuple[memoryview, bool]:
    """The pickle of a value :func:`seal_pickled` wrote (validated: ``CorruptDataError`` if
    bad), and whether it was sealed. Values written before pickles were sealed are bare
    pickles (they start with the pickle opcode PROTO, never with :data:`MAGIC`) and are
    returned as they are, unchecked."""
    mv = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
    if bytes(mv[:4]) != MAGIC:
        return mv, False
    return unseal(mv, KIND_PICKLED)[1], True
