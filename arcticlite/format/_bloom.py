"""Bloom filters of a Fermion file (format 1.1, docs/format.md §9).

A writer built with ``bloom_min_distinct=n`` keeps, for every integer and string/binary column
with at least ``n`` distinct non-null values in the file, a Bloom filter of those values. The
filters sit in one *bloom section* at the end of the data area (just before the CMB area); the
footer's ``bloom_length`` (formerly reserved) gives its size, so a reader finds it from the
footer alone and reads only the section (often inside the tail it prefetched anyway). A reader
of format 1.0 ignores the field and the section.

Hashing is vectorised and specified here so that another implementation computes the same
bits: integers (any width, as their int64 value; uint64 by its bit pattern) go through
``mix64`` (the splitmix64 finaliser); strings and binaries hash their bytes with a polynomial
``sum((b_j + 1) * M**j) mod 2**64`` (``M`` = the FNV-64 prime), xored with ``len * GOLDEN`` and
then ``mix64``. A value sets ``K`` bits: ``(h1 + i * h2) mod m`` for ``i < K``, with ``h1`` the
low and ``h2`` the high 32 bits of the hash (``| 1``). ``BITS_PER_VALUE`` = 10 and ``K`` = 7
give a false-positive rate of about 0.8 % (measured in tests/format/test_bloom.py).
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arcticlite.exceptions import ChecksumError, InvalidFileError
from arcticlite.format import _kernels
from arcticlite.format import _layout as L

MAGIC = b"FBLM"
BITS_PER_VALUE = 10
"""Filter bits per distinct value (with K = 7: ~0.8 % false positives)."""
K = 7
MAX_FRACTION = 0.03
"""The filters of a file take at most this share of its data area: the smallest filters
first, a column whose filter would exceed what is left gets none (a column of distinct random
integers costs 10 bits a row: 16 % of its int64 values, more once those are bit-packed)."""
KIND_INT = 0
KIND_BYTES = 1
HEADER = struct.Struct("<4sIQ")  # magic, num_entries, xxh3 of the entries
ENTRY = struct.Struct("<IBBHIIQQ")  # column, kind, k, reserved, nbytes, num_values, offset, checksum
_M = np.uint64(0x100000001B3)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_C1 = np.uint64(0xBF58476D1CE4E5B9)
_C2 = np.uint64(0x94D049BB133111EB)
_LOW32 = np.uint64(0xFFFFFFFF)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser of uint64 ``x`` (wrapping arithmetic, vectorised)."""
    z = x + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _C1
    z = (z ^ (z >> np.uint64(27))) * _C2
    return z ^ (z >> np.uint64(31))


def hash_ints(values: np.ndarray) -> np.ndarray:
    """Hashes of integer ``values`` (as their int64 / uint64 bit pattern)."""
    v = np.ascontiguousarray(values)
    if v.dtype.itemsize != 8:
        v = v.astype(np.int64)
    return mix64(v.view(np.uint64))


def hash_bytes(offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
    """Hashes of the byte strings ``data[offsets[i]:offsets[i+1]]`` (vectorised over all bytes)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    n = len(offsets) - 1
    lengths = np.diff(offsets)
    total = int(offsets[-1] - offsets[0]) if n >= 0 else 0
    if total:
        b = data[int(offsets[0]) : int(offsets[-1])].astype(np.uint64) + np.uint64(1)
        starts = offsets[:-1] - offsets[0]
        pos = np.arange(total, dtype=np.int64) - np.repeat(starts, lengths)
        powers = np.full(int(lengths.max()), _M, dtype=np.uint64)
        powers[0] = 1
        powers = np.cumprod(powers, dtype=np.uint64)
        cs = np.concatenate([np.zeros(1, np.uint64), np.cumsum(b * powers[pos], dtype=np.uint64)])
        poly = cs[starts + lengths] - cs[starts]
    else:
        poly = np.zeros(n, dtype=np.uint64)
    return mix64(poly ^ (lengths.astype(np.uint64) * _GOLDEN))


def _positions(h: np.ndarray, nbits: int) -> np.ndarray:
    h1 = h & _LOW32
    h2 = (h >> np.uint64(32)) | np.uint64(1)
    i = np.arange(K, dtype=np.uint64)
    return (h1[:, None] + i[None, :] * h2[:, None]) % np.uint64(nbits)


def filter_bytes(count: int) -> int:
    """Bytes of the filter of ``count`` distinct values (its entry in the section included)."""
    return max(64, -(-count * BITS_PER_VALUE // 64) * 64) // 8 + ENTRY.size


def build(hashes: np.ndarray) -> bytes:
    """The filter bits (little-endian bit order) of distinct value ``hashes``.

    The positions are those of :func:`_positions`, computed as ``p_0 = h1 mod m``,
    ``p_i = (p_(i-1) + (h2 mod m)) mod m`` (the same values: ``h1 + i * h2`` never wraps in
    64 bits), which needs two divisions per value instead of ``K``."""
    nbits = max(64, -(-len(hashes) * BITS_PER_VALUE // 64) * 64)
    m = np.uint64(nbits)
    p = ((hashes & _LOW32) % m).astype(np.int64)
    step = (((hashes >> np.uint64(32)) | np.uint64(1)) % m).astype(np.int64)
    bits = np.zeros(nbits, dtype=bool)
    bits[p] = True
    for _ in range(1, K):
        p += step
        p -= nbits * (p >= nbits)
        bits[p] = True
    return np.packbits(bits, bitorder="little").tobytes()


#: Up to this many hashes, :func:`contains` probes the filter with Python integers (a query's
#: few values: numpy's per-call costs would be most of the work).
_FEW_HASHES = 8


def contains(bits: bytes | memoryview, hashes: np.ndarray) -> np.ndarray:
    """Per hash: whether the filter ``bits`` may hold it (False proves absence)."""
    if len(hashes) <= _FEW_HASHES:
        raw = memoryview(bits)
        if raw.format != "B" or raw.ndim != 1:
            raw = raw.cast("B")
        nbits = 8 * len(raw)
        out = np.zeros(len(hashes), dtype=bool)
        for j, h in enumerate(hashes.tolist()):
            h1, h2 = h & 0xFFFFFFFF, (h >> 32) | 1  # as _positions: h1 + i * h2 never wraps
            out[j] = all(raw[p >> 3] >> (p & 7) & 1 for p in ((h1 + i * h2) % nbits for i in range(K)))
        return out
    arr = np.frombuffer(bits, dtype=np.uint8)
    pos = _positions(hashes, 8 * len(arr)).astype(np.int64)
    return ((arr[pos >> 3] >> (pos & 7)) & 1).astype(bool).all(axis=1)


# -- column values --------------------------------------------------------------------------
def kind_of(typ: pa.DataType) -> int | None:
    """The hash kind of a column type, None when it gets no filter."""
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    if pa.types.is_integer(typ):
        return KIND_INT
    if (pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_binary(typ)
            or pa.types.is_large_binary(typ)):
        return KIND_BYTES
    return None


def distinct(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    """The distinct non-null values of ``col`` (a dictionary column: of its dictionaries)."""
    if pa.types.is_dictionary(col.type):
        chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
        dicts = [c.dictionary for c in chunks]
        col = pa.concat_arrays(dicts) if dicts else pa.array([], col.type.value_type)
    if col.null_count:
        col = col.drop_null()
    out = pc.unique(col)  # a ChunkedArray is not concatenated first (no copy of the values)
    return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out


#: Values an evenly spaced sample of a column holds, to tell a column of distinct values.
_SAMPLE = 1024


def filter_values(col: pa.ChunkedArray | pa.Array) -> tuple[pa.Array | pa.ChunkedArray, int]:
    """What a filter of ``col`` is built from: ``(values, count)``, the values to hash and the
    number of distinct values to size the filter for.

    Usually :func:`distinct`. When an evenly spaced sample of ``_SAMPLE`` non-null values holds
    no value twice, the column is (almost) all distinct values: its non-null values are hashed
    as they are (a value twice sets the same bits) and counted, which skips a hash table of
    every value. (A sample of 1,024 values of a column that is 95 % distinct already holds
    about six repeats.)"""
    if pa.types.is_dictionary(col.type) or len(col) < 4 * _SAMPLE:
        u = distinct(col)
        return u, len(u)
    if col.null_count:
        col = col.drop_null()
    small = _small_range_distinct(col)
    if small is not None:
        return small, len(small)
    n = len(col)
    idx = np.arange(_SAMPLE, dtype=np.int64) * (n - 1) // (_SAMPLE - 1)
    if _integer_array(col):  # numpy's sort of 1,024 values: a fraction of a take and a hash table
        s = np.sort(_one_chunk(col).to_numpy()[idx])
        repeats = bool((s[1:] == s[:-1]).any())
    else:
        repeats = len(pc.unique(col.take(pa.array(idx)))) < _SAMPLE
    if repeats:
        u = distinct(col)
        return u, len(u)
    return col, n


def _integer_array(col: pa.ChunkedArray | pa.Array) -> bool:
    """Whether ``col`` is one chunk of null-free integers (readable as numpy without a copy)."""
    return (pa.types.is_integer(col.type) and not col.null_count
            and (not isinstance(col, pa.ChunkedArray) or col.num_chunks == 1))


def _one_chunk(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    return col.chunk(0) if isinstance(col, pa.ChunkedArray) else col


def _small_range_distinct(col: pa.ChunkedArray | pa.Array) -> pa.Array | None:
    """The distinct values of a null-free integer column whose values span fewer than
    four per row (sizes, counts, prices in ticks), found by marking them in a table of the
    range: cheaper than hashing every value (and than the sample test). None otherwise."""
    typ = col.type
    if not _integer_array(col):
        return None
    v = np.ascontiguousarray(_one_chunk(col).to_numpy())
    lo, hi = _kernels.min_max(v)
    if hi - lo >= 4 * len(v):
        return None
    present = _kernels.presence(v, lo, hi - lo + 1)
    # offsets + lo in the column's own dtype (lo may not fit int64: a uint64 column above 2**63)
    return pa.array(np.flatnonzero(present).astype(v.dtype) + v.dtype.type(lo), type=typ)


def hashes_of(values: pa.Array | pa.ChunkedArray, kind: int) -> np.ndarray:
    """Hashes of the (non-null) Arrow ``values``."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if kind == KIND_INT:
        typ = values.type
        if pa.types.is_uint64(typ):
            return hash_ints(values.to_numpy(zero_copy_only=False).astype(np.uint64).view(np.int64))
        if not values.null_count:  # (numpy widens exactly: a narrower int or uint fits int64)
            return hash_ints(values.to_numpy(zero_copy_only=False).astype(np.int64))
        return hash_ints(values.cast(pa.int64()).to_numpy(zero_copy_only=False))
    arr = values.cast(pa.large_binary())
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return hash_bytes(offsets, data)


#: Hashes of recent query values: a query judges every segment of a symbol with the same ones.
_QUERY_CACHE: dict[tuple[Any, ...], np.ndarray | None] = {}
_QUERY_CACHE_MAX = 256


def query_hashes(values: list[Any], typ: pa.DataType, kind: int) -> np.ndarray | None:
    """Hashes of query ``values`` compared with a column of type ``typ``; None when one of
    them cannot be put in the column's value space exactly (then nothing is pruned)."""
    try:
        key = (kind, typ, *((type(v), v) for v in values))
        hash(key)
    except TypeError:
        return _query_hashes(values, typ, kind)
    got = _QUERY_CACHE.get(key, _QUERY_CACHE)
    if got is _QUERY_CACHE:
        got = _query_hashes(values, typ, kind)
        if got is not None:
            got.flags.writeable = False
        if len(_QUERY_CACHE) >= _QUERY_CACHE_MAX:
            _QUERY_CACHE.clear()
        _QUERY_CACHE[key] = got
    return got  # type: ignore[return-value]


def _query_hashes(values: list[Any], typ: pa.DataType, kind: int) -> np.ndarray | None:
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    try:
        if kind == KIND_INT:
            ints = []
            for v in values:
                if isinstance(v, bool | np.bool_):
                    return None
                if isinstance(v, float | np.floating):
                    if not float(v).is_integer():
                        return None
                    v = int(v)
                if not isinstance(v, int | np.integer):
                    return None
                ints.append(int(v))
            arr = pa.array(ints, type=typ)
            return hashes_of(arr, kind)
        out = []
        for v in values:
            if isinstance(v, str):
                out.append(v.encode("utf-8", "surrogatepass"))
            elif isinstance(v, bytes):
                out.append(v)
            else:
                return None
        return hashes_of(pa.array(out, pa.large_binary()), kind)
    except (pa.ArrowException, OverflowError, ValueError, TypeError):
        return None


# -- the section ----------------------------------------------------------------------------
def section(filters: list[tuple[int, int, int, bytes]]) -> bytes:
    """The bloom section of ``(column, kind, num_values, bits)`` filters."""
    base = HEADER.size + ENTRY.size * len(filters)
    entries, blobs, off = [], [], base
    for column, kind, nvals, bits in filters:
        entries.append(ENTRY.pack(column, kind, K, 0, len(bits), nvals, off, L.checksum(bits)))
        blobs.append(bits)
        off += len(bits)
    ent = b"".join(entries)
    return HEADER.pack(MAGIC, len(filters), L.checksum(ent)) + ent + b"".join(blobs)


class Directory:
    """The parsed entries of a bloom section: ``column -> (kind, k, offset, nbytes, checksum)``
    (offsets absolute in the file)."""

    def __init__(self, head: bytes | memoryview, start: int, length: int, num_columns: int) -> None:
        magic, n, digest = HEADER.unpack_from(head)
        if magic != MAGIC:
            raise InvalidFileError("bad bloom section magic")
        size = HEADER.size + ENTRY.size * n
        if size > length or len(head) < size:
            raise InvalidFileError("bloom section entries overrun the section")
        ent = bytes(head[HEADER.size : size])
        if L.checksum(ent) != digest:
            raise ChecksumError("bloom section checksum mismatch; the segment is corrupt")
        self.entries: dict[int, tuple[int, int, int, int, int]] = {}
        for j in range(n):
            column, kind, k, _, nbytes, _nv, off, cks = ENTRY.unpack_from(ent, j * ENTRY.size)
            if column >= num_columns or k != K or kind not in (KIND_INT, KIND_BYTES) or not nbytes \
                    or off < size or off + nbytes > length:
                raise InvalidFileError("bad bloom section entry")
            self.entries[column] = (kind, k, start + off, nbytes, cks)
        self.size = size
