"""Fermion value encodings: lightweight cascades, then ZSTD/LZ4 where it pays.

Public API (the container in :mod:`arcticlite.format` codes against exactly this):

- :func:`encode_fixed` / :func:`decode_fixed` for 1-D numeric arrays (ints, uints, floats;
  timestamps, durations and dates as their integer view; bool as ``uint8`` 0/1);
- :func:`encode_binary` / :func:`decode_binary` for variable-length values given as Arrow
  offsets + data bytes;
- :func:`describe` names the cascade of a blob (``"delta+for+bitpack(11)+zstd"``);
- :data:`ENCODING_NAMES` maps encoding ids to names;
- for writers encoding many float pages: :func:`incompressible_many` runs the
  incompressibility test of :func:`encode_fixed` on all of them at once, and
  :func:`plain_parts` gives the PLAIN blob of a page it marks as buffers (no copy).

Encoding is chosen per call, BtrBlocks-style: a sample of 16 runs of 64 values spread over the
array estimates the size of every scheme (recursing into the children of cascading schemes, at
most 3 levels); the best is encoded for real and kept only if smaller than plain. At the top
level the three best estimates are encoded with bit-packing, and the two best again with
byte-aligned widths stored as byte planes (what zstd models best); each is offered to ZSTD
(levels 1 and 3) and LZ4, which are kept only if they save at least 10 %. Arrays of more than
``WHOLE_CHOICE_LIMIT`` values make that choice on a contiguous chunk from their middle (a
quarter of the values, between 16Ki and 128Ki), then encode (and compress) the whole array
once with the winning scheme, mode and codec. Floats are verified
bit-exact (NaN payloads, -0.0, inf): every value that does not round-trip is a patch.

Byte-level specification
------------------------
A *blob* encodes ``count`` values of a known ``dtype`` (both supplied by the reader; children
get theirs from the parent as listed). All integers are little-endian; ``u8``/``u32``/``u64``
are unsigned; ``xN`` is N zero bytes of padding. Byte 0 of every blob is its encoding id. A
*child* is itself a complete blob; all children but the last are preceded by a length field in
the parent header, the last child runs to the end of the parent blob. Integer arithmetic is
modulo ``2 ** (8 * itemsize)``; float columns are handled as their unsigned bit patterns except
in ``plain`` and ``decimal``. Every fixed-width blob of ``count`` values is at most
``1 + count * itemsize`` bytes long (the size of ``plain``): a reader rejects any compressed
block that claims more, and every count in a header is checked against ``count`` and the
blob's length before anything is allocated.

===  ============  =========================================================================
id   name          layout after the id byte
===  ============  =========================================================================
0    plain         ``count * itemsize`` raw bytes.
1    constant      ``itemsize`` bytes: the value, repeated ``count`` times.
2    bitpack       ``width u8, x6, base u64, factor u64`` (24-byte header), then
                   ``width * ceil(count / 64)`` ``u64`` words in lane layout: with
                   ``L = ceil(count / 64)``, value ``i = j * L + l`` sits in lane ``l`` at
                   bits ``j * width ..`` counted from bit 0 of the lane's first word, and
                   word ``k`` of lane ``l`` is stored as ``u64`` number ``k * L + l``
                   (:mod:`._enc_bitpack`); value = ``base + factor * packed``. Shown as
                   ``bitpack(w)``, ``for+bitpack(w)`` when ``base != 0``, ``*gcd(f)`` when
                   ``factor != 1``.
3    narrow        ``nbytes u8 (1, 2, 4 or 8), x6, base u64, factor u64``, then
                   ``count`` unsigned ``nbytes``-byte integers; value = ``base + factor * v``.
12   split         as narrow, but the integers are stored as ``nbytes`` byte planes of
                   ``count`` bytes each (byte-stream-split: all least significant bytes
                   first), which general-purpose compressors model much better.
4    delta         ``x7, first u64``; child: ``count - 1`` differences ``x[i] - x[i-1]`` as the
                   signed integer dtype of the same itemsize. ``count >= 1``.
5    rle           ``x3, runs u32, values_len u64``; child 1 (``values_len`` bytes): ``runs``
                   run values (dtype); child 2: ``runs`` run lengths (``uint32``) summing to
                   ``count``.
6    dict          ``x3, size u32, dict_len u64``; child 1 (``dict_len`` bytes): ``size``
                   distinct values (dtype); child 2: ``count`` codes (``uint32``, < size).
7    decimal       ``exponent u8, x2, exceptions u32, ints_len u64, positions_len u64``;
                   float dtypes only. Child 1: ``count`` ``int64`` digits ``d`` (arbitrary at
                   patched positions); value =
                   ``float64(d) / 10.0 ** exponent`` (then cast to float32 for float32), the
                   rule verified bit-exactly when writing (ALP). Child 2: ``exceptions``
                   ascending positions (``uint32``); then ``exceptions * itemsize`` raw bytes:
                   the patched values. ``exponent <= 18``.
8    zstd          ``x7, raw_len u64``, then one zstd frame holding a blob of the same
                   dtype/count (``raw_len`` bytes; for binary blobs ``raw_len`` must not
                   exceed ``64 + 16 * count + 65536 * frame length``, and must equal the
                   frame's declared content size when present).
9    lz4           as zstd, with an LZ4 frame.
10   binary        variable-length values. ``lwidth u8 (4 or 8), x6, data_len u64,
                   lengths_len u64``; child (``lengths_len`` bytes): ``count`` value lengths
                   (``uint32``/``uint64``); then ``data_len`` bytes of concatenated values.
11   binary-dict   ``x3, size u32, dict_len u64``; child 1: a binary blob of ``size`` distinct
                   values; child 2: ``count`` codes (``uint32``).
===  ============  =========================================================================

Ids 8 and 9 wrap fixed-width and binary blobs alike; id 12 was added after 11 (ids are never
reused). Corrupt input raises
:class:`~arcticlite.exceptions.CorruptDataError` subclasses only: ``FormatEOFError`` when a
length points past the end, ``InvalidFileError`` for any other inconsistency.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pyarrow as pa

from arcticlite.exceptions import CorruptDataError, FormatEOFError, InvalidFileError
from arcticlite.format import _enc_binary as _bin
from arcticlite.format import _kernels
from arcticlite.format._alloc import empty
from arcticlite.format._enc_bitpack import packed_words, unpack_into
from arcticlite.format._enc_policy import (
    DISTINCT_FILES,
    REUSE_GAIN,
    REUSE_MAX,
    REUSE_SEARCHED,
    REUSE_SLACK,
)
from arcticlite.format._enc_policy import current as _policy
from arcticlite.format._enc_select import (
    MODE_BITPACK,
    MODE_NARROW,
    MODE_SPLIT,
    SCHEME_OF_ID,
    encode_candidates,
    encode_plain,
    encode_recipe,
    encode_scheme,
    is_constant,
    recipe_of,
    uniform_for,
)
from arcticlite.format._enc_spec import (
    BINARY_DICT,
    BINARY_PLAIN,
    BITPACK,
    CODE_DTYPE,
    CODEC_HDR,
    CONSTANT,
    DECIMAL,
    DECIMAL_HDR,
    DELTA,
    DELTA_HDR,
    DICT,
    ENCODING_NAMES,
    FOR_HDR,
    I64,
    LZ4,
    MAX_DECIMAL_EXPONENT,
    MAX_NESTING,
    NARROW,
    NESTED_HDR,
    PLAIN,
    RLE,
    SPLIT,
    U64,
    ZSTD,
    signed_of,
    unsigned_of,
)
from arcticlite.format._enc_wrap import (
    choose_codec,
    choose_codec_blob,
    compress_best,
    compress_if_it_pays,
    decompress,
    region,
)

__all__ = [
    "ENCODING_NAMES",
    "decode_binary",
    "decode_fixed",
    "describe",
    "encode_binary",
    "encode_binary_dictionary",
    "encode_fixed",
    "incompressible_many",
    "plain_parts",
]

_NUMERIC_KINDS = "iuf"


_READY_DTYPES = frozenset(np.dtype(f"<{k}{n}") for k in "iu" for n in (1, 2, 4, 8)) \
    | {np.dtype("<f4"), np.dtype("<f8")}
"""Dtypes :func:`encode_fixed` takes as they are (contiguous 1-D arrays need no conversion)."""


def _as_fixed_input(values: np.ndarray) -> np.ndarray:
    if type(values) is np.ndarray and values.ndim == 1 and values.dtype in _READY_DTYPES \
            and values.flags.c_contiguous:
        return values
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"encode_fixed needs a 1-D array, got {arr.ndim}-D")
    if arr.dtype == np.bool_:
        arr = arr.view(np.uint8)
    if arr.dtype.kind in "mM":
        arr = arr.view(f"<i{arr.dtype.itemsize}")
    if arr.dtype.kind not in _NUMERIC_KINDS or arr.dtype.itemsize not in (1, 2, 4, 8):
        raise ValueError(f"encode_fixed does not support dtype {arr.dtype}")
    if arr.dtype.kind == "f" and arr.dtype.itemsize == 2:
        raise ValueError("float16 is not supported")
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    return np.ascontiguousarray(arr)


def encode_fixed(values: np.ndarray, *, allow_compression: bool = True, gate: bool = True,
                 key: Any = None) -> bytes:
    """Encode a 1-D numeric array into a self-describing blob.

    Parameters
    ----------
    values : numpy.ndarray
        1-D array of int8..int64, uint8..uint64, float32 or float64 (bool, datetime64 and
        timedelta64 are accepted and stored as their integer view).
    allow_compression : bool, default True
        Whether ZSTD/LZ4 may be applied on top of the lightweight encoding.
    gate : bool, default True
        Whether to run the incompressibility test on floats. Callers that already ran it
        (:func:`incompressible_many` returned False for ``values``) pass False: the blob is
        the same, the test is not paid twice.
    key : hashable, optional
        The stream these values belong to. When the writer's policy carries a memo (a bulk
        write of many files with one schema), the stream's scheme, mode and codec are chosen
        on its first page and reused for the next :data:`~._enc_policy.REUSE_SEARCHED` pages: each
        such page is encoded once instead of searched (plain where the scheme does not pay).

    Returns
    -------
    bytes
        The blob (byte 0 = encoding id); see the module docstring for the layout.
    """
    x = _as_fixed_input(values)
    n = len(x)
    if n <= 1:
        return encode_plain(x)
    floats = x if x.dtype.kind == "f" else None
    if gate and floats is not None and n >= GATE_MIN and _incompressible_floats(floats):
        # measured floats: no cascade or codec would save 10 % (and a passing sample holds
        # two distinct values, so the array is not constant either)
        return encode_plain(x)
    xi = x.view(unsigned_of(x.dtype)) if floats is not None else x
    if is_constant(xi):
        return bytes((CONSTANT,)) + xi[:1].tobytes()
    if n <= TINY_ARRAY or not _policy().cascades:
        # a handful of values (a small append): choosing a cascade costs more than it saves
        return encode_plain(x)
    if floats is None and _arithmetic(xi):
        # a regular index, a row id: deltas over one constant step, the smallest blob any
        # search finds (and the one it finds), without the search
        return encode_scheme(xi, "delta", 0, MODE_BITPACK, None)
    if not allow_compression:
        return encode_candidates(xi, 0, MODE_BITPACK, floats, top=3)[0]
    if n > WHOLE_CHOICE_LIMIT:
        return _encode_sampled(xi, floats)
    memo = _policy().memo if key is not None else None
    if memo is not None and memo.get(DISTINCT_FILES):
        # files of unrelated data (a batch's symbols, on several threads) share a choice only
        # between pages of one signature: part of the key, so that one look-up gives a choice
        # and the signature it was searched on together
        key = (key, _signature(xi))
    entry = memo.get(key) if memo is not None else None
    if memo is not None and entry is not None and entry[4] > 0:
        scheme, mode, codec, level, left = entry[:5]
        recipe = entry[5] if len(entry) > 5 else None
        body = (encode_recipe(xi, recipe, 0, mode, floats) if recipe is not None
                else encode_scheme(xi, scheme, 0, mode, floats))
        blob = compress_if_it_pays(body, codec, level)
        # a choice that stopped paying (the data changed) is searched again on the next page;
        # one page that comes out larger is data, not a change (a size column's outlier
        # widens that page's frame of reference whatever the scheme): only two in a row are
        worse = len(entry) > 7 and len(blob) > REUSE_SLACK * entry[7] * n
        if not (worse and memo.get(DISTINCT_FILES)):  # (else: searched below, for this page)
            again = worse and len(entry) > 8 and entry[8]
            memo[key] = (scheme, mode, codec, level, 0 if again else left - 1, *entry[5:8], worse)
            return blob
    if floats is None and n >= GATE_MIN and (packed := uniform_for(xi)) is not None:
        # integers spread evenly over their range: frame of reference and bit-packing is what
        # the search finds, without the search (~0.2 ms instead of 1-5 ms a page)
        if memo is not None:
            _remember(memo, key, entry, packed, MODE_BITPACK, None, 0, recipe_of(packed), len(packed) / n)
        return packed
    if memo is not None and n >= 4 * SEARCH_SAMPLE:
        # a stream's search in a bulk write: choose on a contiguous chunk from the middle, then
        # encode the whole page once with that recipe (the choice is checked on later pages:
        # a page it stops suiting is searched again)
        got = _choose_on_middle(xi, floats, SEARCH_SAMPLE)
        if got is not None:
            chosen, mode, codec, level = got
            recipe = recipe_of(chosen)
            body = (encode_recipe(xi, recipe, 0, mode, floats) if recipe is not None
                    else encode_scheme(xi, SCHEME_OF_ID.get(chosen[0], "plain"), 0, mode, floats))
            blob = compress_if_it_pays(body, codec, level)
            _remember(memo, key, entry, chosen, mode, codec, level, recipe, len(blob) / n)
            return blob
    variants = _variants(xi, floats)
    i, codec, level, blob = choose_codec_blob([b for b, _ in variants])
    if memo is not None:
        chosen, mode = variants[i]
        _remember(memo, key, entry, chosen, mode, codec, level, recipe_of(chosen), len(blob) / n)
    return blob


def _signature(xi: np.ndarray) -> tuple[int, int]:
    """What a page's data is like, cheaply (two passes of numpy): the bit width of its range
    and the binary order of magnitude of its share of value changes. Files of unrelated data
    reuse a remembered choice only for a page of the same signature as the page it was
    searched on (a column of long runs is not encoded as the random one before it was)."""
    lo, hi = int(xi.min()), int(xi.max())
    changes = int(np.count_nonzero(xi[1:] != xi[:-1]))
    return (hi - lo).bit_length(), (64 * changes // max(1, len(xi) - 1)).bit_length()


#: A bulk write's stream searches its encoding on this many values from the middle of a page
#: (pages of at least four times as many values): the search costs a fraction of the page's
#: encoding, which then runs once with the recipe found.
SEARCH_SAMPLE = 1 << 14


def _remember(memo: dict[Any, Any], key: Any, entry: Any, chosen: bytes, mode: int, codec: int | None,
              level: int, recipe: Any, per_value: float) -> None:
    """Store a stream's search result in a bulk write's memo (see :func:`encode_fixed`)."""
    # a search that gained nothing over the choice it replaces: trust the stream's choices
    # for four times as many pages (up to REUSE_MAX)
    stale = entry is not None and len(entry) > 7 and per_value >= REUSE_GAIN * entry[7]
    span = min(4 * entry[6], REUSE_MAX) if stale else REUSE_SEARCHED
    memo[key] = (SCHEME_OF_ID.get(chosen[0], "plain"), mode, codec, level, span, recipe, span, per_value)


#: Float arrays at least this long first go through a cheap incompressibility test.
GATE_MIN = 1024
_GATE_SAMPLE_BYTES = 4096
_GATE_CODEC = pa.Codec("zstd", compression_level=1)
_GATE_POWERS = np.array([10.0**e for e in range(10)])[:, None]


def _incompressible_floats(xf: np.ndarray) -> bool:
    """Whether ``xf`` looks like measured (noisy) floats: on a contiguous 4 KiB sample from
    the middle, not monotonic, zstd saves less than 8 %, and not short decimals. Costs
    ~50 us instead of trying every cascade (~1 ms a page). (On such samples zstd saves about
    1 % less than on the whole array, so 8 % keeps every array that could pass the 10 % rule.)"""
    return bool(_incompressible_samples([_gate_sample(xf)])[0])


def _gate_sample(xf: np.ndarray) -> np.ndarray:
    """The contiguous 4 KiB from the middle of ``xf`` that the incompressibility test reads
    (little-endian, as :func:`encode_fixed` tests and stores it)."""
    mid = len(xf) // 2
    s = xf[mid : mid + _GATE_SAMPLE_BYTES // xf.itemsize]
    if s.dtype.byteorder == ">":
        return s.astype(s.dtype.newbyteorder("<"))
    return np.ascontiguousarray(s)


#: The order test first looks at this many leading values of each sample (all at once);
#: only samples monotonic over them are checked in full.
_GATE_HEAD = 17


def _incompressible_samples(samples: list[np.ndarray]) -> np.ndarray:
    """The incompressibility test of :func:`_incompressible_floats` on each sample (1-D
    contiguous float arrays of one dtype and at least ``_GATE_HEAD`` values).

    The order and decimal tests run on the heads of all samples at once: a sample whose head
    is not monotonic is not monotonic, and the decimal test reads 16 values. zstd (the costly
    part, ~20 us a call whatever the size) runs only on the samples that pass both.
    """
    heads = np.stack([s[:_GATE_HEAD] for s in samples])
    with np.errstate(all="ignore"):
        d = np.diff(heads, axis=1)
        monotonic = np.logical_or((d >= 0).all(axis=1), (d <= 0).all(axis=1))
        for i in np.flatnonzero(monotonic).tolist():  # rare: confirm on the whole sample
            ds = np.diff(samples[i])
            monotonic[i] = bool(np.all(ds >= 0) or np.all(ds <= 0))
        head = heads[:, :16].astype(np.float64)
        scaled = head[:, None, :] * _GATE_POWERS
        back = np.rint(scaled) / _GATE_POWERS
    short_decimals = (back == head[:, None, :]).all(axis=2).any(axis=1)
    out = ~(monotonic | short_decimals)
    for i in np.flatnonzero(out).tolist():
        s = samples[i]
        if _GATE_CODEC.compress(s).size <= 0.92 * s.nbytes:
            out[i] = False  # a codec may save 10 % on the whole array: try everything
    return out


def incompressible_many(arrays: list[np.ndarray]) -> np.ndarray:
    """For each array, whether :func:`encode_fixed` stores it PLAIN because of its
    incompressibility test (float arrays of at least ``GATE_MIN`` values only; False for
    every other array). The test runs on all samples at once, so a writer with thousands of
    float pages checks them in bulk.

    An array marked True encodes to exactly :func:`plain_parts` of it; one marked False can be
    passed to ``encode_fixed(..., gate=False)``, which then skips the test.
    """
    out = np.zeros(len(arrays), dtype=bool)
    groups: dict[np.dtype, tuple[list[int], list[np.ndarray]]] = {}
    for i, a in enumerate(arrays):
        if a.ndim == 1 and a.dtype.kind == "f" and a.dtype.itemsize in (4, 8) \
                and len(a) >= GATE_MIN:
            s = _gate_sample(a)
            idx, samples = groups.setdefault(s.dtype, ([], []))
            idx.append(i)
            samples.append(s)
    for idx, samples in groups.values():
        out[idx] = _incompressible_samples(samples)
    return out


_PLAIN_ID = bytes((PLAIN,))


def plain_parts(values: np.ndarray) -> tuple[bytes, memoryview]:
    """The PLAIN blob of ``values`` as two buffers, the id byte and the values' bytes (a
    byte view, no copy), e.g. for ``os.writev``."""
    return _PLAIN_ID, _as_fixed_input(values).view(np.uint8).data


#: At most this many values are stored plain (or constant) without trying cascades.
TINY_ARRAY = 128
#: Above this many values the cascade and codec are chosen on a sample of chunks.
WHOLE_CHOICE_LIMIT = 1 << 18
#: Blobs smaller than this (or 1/256 of the raw size) skip the byte-plane variants.
TINY_BLOB = 4096
#: Longest contiguous chunk (from the middle) used for that choice; shorter arrays use a
#: quarter of their values, at least ``SAMPLE_LEN // 8``.
SAMPLE_LEN = 1 << 17


def _arithmetic(xi: np.ndarray) -> bool:
    """Whether the integers ``xi`` (three or more) step by one constant (modulo their width, as
    the delta encoding computes its deltas)."""
    with np.errstate(over="ignore"):
        head = xi[1:3] - xi[:2]
        if head[0] != head[1]:
            return False
        d = xi[1:] - xi[:-1]
    return bool((d == d[0]).all())


def _variants(xi: np.ndarray, floats: np.ndarray | None) -> list[tuple[bytes, int]]:
    """Return candidate blobs with the mode that built them, for the codec choice."""
    out = [(b, MODE_BITPACK) for b in encode_candidates(xi, 0, MODE_BITPACK, floats, top=3)]
    smallest = min(len(b) for b, _ in out)
    if out[0][0][0] == PLAIN or smallest < max(TINY_BLOB, xi.nbytes // 256):
        # nothing lightweight beats plain here (nor will the byte-plane mode), or the blob is
        # already so small that the byte-plane variants are not worth building
        return out
    # byte-aligned widths as byte planes: what zstd models best (plain byte-aligned widths
    # under the ``read`` policy: LZ4 gains less from planes than reassembling them costs)
    mode = MODE_SPLIT if _policy().zstd else MODE_NARROW
    out += [(b, mode) for b in encode_candidates(xi, 0, mode, floats, top=2)]
    if 2 * min(len(b) for b, _ in out) > xi.nbytes:
        out.append((encode_plain(xi), MODE_BITPACK))
    return out


def _encode_sampled(xi: np.ndarray, floats: np.ndarray | None) -> bytes:
    """Choose scheme, mode and codec on a few contiguous chunks, then encode everything once."""
    got = _choose_on_middle(xi, floats, min(SAMPLE_LEN, max(SAMPLE_LEN // 8, len(xi) // 4)))
    if got is None:
        return compress_best([b for b, _ in _variants(xi, floats)])
    blob, mode, codec, level = got
    full = encode_scheme(xi, SCHEME_OF_ID.get(blob[0], "plain"), 0, mode, floats)
    return compress_if_it_pays(full, codec, level)


def _choose_on_middle(xi: np.ndarray, floats: np.ndarray | None, length: int
                      ) -> tuple[bytes, int, int | None, int] | None:
    """The candidate blob, mode, codec and level chosen on ``length`` contiguous values from
    the middle of ``xi`` (one chunk: concatenated chunks would fake jumps, deltas, at their
    seams); None when that chunk is constant (it tells nothing of the rest)."""
    start = (len(xi) - length) // 2
    sample = xi[start : start + length]
    if is_constant(sample):
        return None
    variants = _variants(sample, floats[start : start + length] if floats is not None else None)
    i, codec, level = choose_codec([b for b, _ in variants])
    blob, mode = variants[i]
    return blob, mode, codec, level


def _check_out(out: np.ndarray | None, dtype: np.dtype, count: int) -> np.ndarray:
    if out is None:
        return empty(count, dtype)
    if not isinstance(out, np.ndarray) or out.ndim != 1 or len(out) != count:
        raise ValueError(f"out must be a 1-D array of length {count}")
    if out.dtype != dtype:
        raise ValueError(f"out has dtype {out.dtype}, expected {dtype}")
    return out


def _sub(mv: memoryview, start: int, length: int) -> memoryview:
    if start + length > len(mv):
        raise FormatEOFError("encoded child runs past the end of its blob")
    return mv[start : start + length]


def _expect_len(mv: memoryview, need: int) -> None:
    if len(mv) < need:
        raise FormatEOFError(f"encoded block is {len(mv)} bytes, needs {need}")
    if len(mv) > need:
        raise InvalidFileError(f"encoded block is {len(mv)} bytes, expected {need}")


def _head(mv: memoryview, hdr: struct.Struct) -> tuple[Any, ...]:
    if len(mv) < hdr.size:
        raise FormatEOFError("encoded block header is truncated")
    return hdr.unpack_from(mv, 0)


def _frombuffer(mv: memoryview, dtype: np.dtype, count: int, offset: int) -> np.ndarray:
    arr = np.frombuffer(mv, dtype=dtype, count=count, offset=offset)
    return arr if arr.flags.aligned else arr.copy()


def _decode(mv: memoryview, dtype: np.dtype, count: int, out: np.ndarray, depth: int) -> None:
    """Decode the blob ``mv`` (exact bounds) of ``count`` values into ``out``."""
    if depth > MAX_NESTING:
        raise InvalidFileError("encoded blob nests too deeply")
    if len(mv) < 1:
        raise FormatEOFError("empty encoded blob")
    eid = mv[0]
    isz = dtype.itemsize
    if eid == PLAIN:
        _expect_len(mv, 1 + count * isz)
        out[...] = np.frombuffer(mv, dtype=dtype, count=count, offset=1)
        return
    if eid in (ZSTD, LZ4):
        (_, raw_len) = _head(mv, CODEC_HDR)
        if raw_len > 1 + count * isz:
            raise InvalidFileError("compressed block claims more bytes than its values need")
        inner = decompress(eid, mv[CODEC_HDR.size :], raw_len)
        _decode(inner, dtype, count, out, depth + 1)
        return
    if eid == DECIMAL:
        _decode_decimal(mv, dtype, count, out, depth)
        return
    if dtype.kind == "f":
        dtype = unsigned_of(dtype)
        out = out.view(dtype)
    if eid == CONSTANT:
        _expect_len(mv, 1 + isz)
        out[...] = np.frombuffer(mv, dtype=dtype, count=1, offset=1)[0]
    elif eid in (BITPACK, NARROW, SPLIT):
        _decode_for(mv, eid, dtype, count, out)
    elif eid == DELTA:
        (_, first) = _head(mv, DELTA_HDR)
        if count < 1:
            raise InvalidFileError("delta block of zero values")
        sd = signed_of(dtype)
        os_ = out.view(sd)
        os_[0] = np.array([first], dtype=U64).view(I64).astype(sd)[0]
        _decode(mv[DELTA_HDR.size :], sd, count - 1, os_[1:], depth + 1)
        np.cumsum(os_, dtype=sd, out=os_)
    elif eid in (RLE, DICT):
        _decode_nested(mv, eid, dtype, count, out, depth)
    else:
        raise InvalidFileError(f"unknown or misplaced encoding id {eid}")


def _decode_for(mv: memoryview, eid: int, dtype: np.dtype, count: int, out: np.ndarray) -> None:
    (_, width, base, factor) = _head(mv, FOR_HDR)
    out_u = out.view(unsigned_of(dtype))
    if eid == BITPACK:
        if width > 64:
            raise InvalidFileError(f"bit width {width} > 64")
        words = packed_words(count, width)
        _expect_len(mv, FOR_HDR.size + 8 * words)
        if width == 0:
            np.copyto(out_u, np.uint64(base), casting="unsafe")
            return
        packed = _frombuffer(mv, U64, words, FOR_HDR.size).reshape(width, -1)
        unpack_into(packed, count, width, out_u, base, factor)
        return
    if width not in (1, 2, 4, 8):
        raise InvalidFileError(f"narrow width {width} bytes")
    _expect_len(mv, FOR_HDR.size + count * width)
    if eid == SPLIT:
        planes = np.frombuffer(mv, np.uint8, count * width, FOR_HDR.size).reshape(width, count)
        arr = planes[0].astype(f"<u{width}")
        tmp = np.empty_like(arr)
        for k in range(1, width):
            np.left_shift(planes[k], 8 * k, out=tmp, dtype=arr.dtype)
            np.bitwise_or(arr, tmp, out=arr)
    else:
        arr = _frombuffer(mv, np.dtype(f"<u{width}"), count, FOR_HDR.size)
    if factor != 1:
        np.multiply(arr, np.uint64(factor), out=out_u, casting="unsafe")
        np.add(out_u, np.uint64(base), out=out_u, casting="unsafe")
    else:
        np.add(arr, np.uint64(base), out=out_u, casting="unsafe")


def _decode_nested(
    mv: memoryview, eid: int, dtype: np.dtype, count: int, out: np.ndarray, depth: int
) -> None:
    (_, size, first_len) = _head(mv, NESTED_HDR)
    if size > count or (size == 0) != (count == 0):
        raise InvalidFileError(f"{ENCODING_NAMES[eid]} block of {size} entries for {count} values")
    first = empty(size, dtype)
    _decode(_sub(mv, NESTED_HDR.size, first_len), dtype, size, first, depth + 1)
    rest = mv[NESTED_HDR.size + first_len :]
    if eid == RLE:
        lengths = empty(size, CODE_DTYPE)
        _decode(rest, CODE_DTYPE, size, lengths, depth + 1)
        if int(lengths.sum(dtype=U64)) != count:
            raise InvalidFileError("run lengths do not add up to the value count")
        out[...] = np.repeat(first, lengths)
        return
    codes = empty(count, CODE_DTYPE)
    _decode(rest, CODE_DTYPE, count, codes, depth + 1)
    np.take(first, codes, out=out, mode="clip")


def _decode_decimal(
    mv: memoryview, dtype: np.dtype, count: int, out: np.ndarray, depth: int
) -> None:
    if dtype.kind != "f":
        raise InvalidFileError("decimal encoding for a non-float column")
    (_, e, n_exc, ints_len, pos_len) = _head(mv, DECIMAL_HDR)
    if e > MAX_DECIMAL_EXPONENT or n_exc > count:
        raise InvalidFileError("bad decimal header")
    off = DECIMAL_HDR.size
    ints_mv = _sub(mv, off, ints_len)
    pos_mv = _sub(mv, off + ints_len, pos_len)
    exc_off = off + ints_len + pos_len
    _expect_len(mv, exc_off + n_exc * dtype.itemsize)
    p = 10.0**e
    if dtype.itemsize == 8:
        oi = out.view(I64)
        _decode(ints_mv, I64, count, oi, depth + 1)
        np.copyto(out, oi, casting="unsafe")  # exact: |digits| <= 2**53 when encoded
        np.divide(out, p, out=out)
    else:
        ints = empty(count, I64)
        _decode(ints_mv, I64, count, ints, depth + 1)
        out[...] = ints / p  # float64 division, then rounded to float32 (as when encoding)
    if n_exc:
        pos = np.empty(n_exc, dtype=CODE_DTYPE)
        _decode(pos_mv, CODE_DTYPE, n_exc, pos, depth + 1)
        if int(pos.max()) >= count:
            raise InvalidFileError("decimal exception position out of range")
        ud = unsigned_of(dtype)
        out.view(ud)[pos] = np.frombuffer(mv, dtype=ud, count=n_exc, offset=exc_off)


def _normalise_dtype(dtype: np.dtype) -> tuple[np.dtype, np.dtype]:
    """Return (requested dtype, working dtype used for decoding)."""
    want = np.dtype(dtype)
    work = want
    if want == np.bool_:
        work = np.dtype(np.uint8)
    elif want.kind in "mM":
        work = np.dtype(f"<i{want.itemsize}")
    if work.kind not in _NUMERIC_KINDS or work.itemsize not in (1, 2, 4, 8):
        raise ValueError(f"decode_fixed does not support dtype {want}")
    if work.byteorder == ">":
        raise ValueError("big-endian dtypes are not supported")
    return want, work


def decode_native(mv: memoryview, out: np.ndarray) -> bool:
    """Decode the FIXED blob ``mv`` into the contiguous 1-D ``out`` (its length is the value
    count) in one native call, when the kernels are built and the blob is plain, constant,
    bit-packed, narrow, byte planes or a delta over these; False (``out`` unspecified) for any
    other blob, and for every blob :func:`_decode` would refuse (it then says why)."""
    native = _kernels.NATIVE
    if native is None or not out.flags.c_contiguous:
        return False
    return bool(native.decode_fixed(mv, out.view(np.uint8), out.dtype.itemsize, len(out)))


def decode_fixed(
    blob: bytes | memoryview,
    dtype: np.dtype,
    count: int,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Decode a blob written by :func:`encode_fixed`.

    Parameters
    ----------
    blob : bytes or memoryview
        The encoded bytes (exactly one blob).
    dtype : numpy.dtype
        Dtype of the values (as passed to :func:`encode_fixed`).
    count : int
        Number of values.
    out : numpy.ndarray, optional
        1-D array of ``dtype`` and length ``count`` (may be a view into a bigger buffer) to
        decode into.

    Returns
    -------
    numpy.ndarray
        ``out`` if given, else a new array.

    Raises
    ------
    CorruptDataError
        ``FormatEOFError`` or ``InvalidFileError`` when the blob is truncated or inconsistent.
    """
    want, work = _normalise_dtype(dtype)
    if count < 0:
        raise ValueError("count must be >= 0")
    result = _check_out(out, want, count)
    target = result.view(work) if work != want else result
    mv = region(blob)
    if decode_native(mv, target):
        return result
    try:
        _decode(mv, work, count, target, 0)
    except CorruptDataError:
        raise
    except (ValueError, IndexError, TypeError, OverflowError, MemoryError, OSError) as exc:
        raise InvalidFileError(f"corrupt encoded block: {exc}") from exc
    return result


def encode_binary(offsets: np.ndarray, data: bytes | memoryview | np.ndarray) -> bytes:
    """Encode variable-length values given as Arrow offsets + data.

    Parameters
    ----------
    offsets : numpy.ndarray
        ``n + 1`` int32 or int64 offsets (non-decreasing; may start at a non-zero value).
    data : bytes, memoryview or numpy.ndarray
        The bytes the offsets point into.

    Returns
    -------
    bytes
        The blob; see the module docstring for the layout.
    """
    return _bin.encode_binary(offsets, data)


def encode_binary_dictionary(codes: np.ndarray, dictionary: pa.Array, key: Any = None,
                             counts: np.ndarray | None = None) -> bytes:
    """Encode values given as int ``codes`` (no nulls) into a string / binary ``dictionary``
    (a pyarrow array): the blob :func:`encode_binary` would write for them when it picks a
    dictionary, without finding the distinct values again. ``key``: as for
    :func:`encode_fixed`; ``counts``: each entry's occurrences among ``codes``, if known."""
    return _bin.encode_binary_dictionary(codes, dictionary, key, counts)


def decode_binary(
    blob: bytes | memoryview, count: int, offsets_dtype: np.dtype
) -> tuple[np.ndarray, np.ndarray]:
    """Decode a blob written by :func:`encode_binary`.

    Parameters
    ----------
    blob : bytes or memoryview
        The encoded bytes.
    count : int
        Number of values.
    offsets_dtype : numpy.dtype
        ``int32`` or ``int64``: dtype of the returned offsets.

    Returns
    -------
    tuple of numpy.ndarray
        ``(offsets, data)``: ``count + 1`` offsets starting at 0, and the data as ``uint8``
        (possibly a read-only view of ``blob``).

    Raises
    ------
    CorruptDataError
        When the blob is truncated or inconsistent.
    """
    odt = np.dtype(offsets_dtype)
    if odt not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise ValueError("offsets_dtype must be int32 or int64")
    if count < 0:
        raise ValueError("count must be >= 0")
    try:
        offsets, data = _bin.decode_binary(region(blob), count, 0, _decode, odt)
        if offsets.dtype != odt:
            if len(data) > np.iinfo(np.int32).max:
                raise InvalidFileError("binary data too large for int32 offsets")
            offsets = offsets.astype(odt)
        return offsets, data
    except CorruptDataError:
        raise
    except (ValueError, IndexError, TypeError, OverflowError, MemoryError, OSError) as exc:
        raise InvalidFileError(f"corrupt encoded block: {exc}") from exc
    except pa.ArrowException as exc:
        raise InvalidFileError(f"corrupt encoded block: {exc}") from exc


def describe(blob: bytes | memoryview) -> str:
    """Describe the cascade of encodings of a blob, e.g. ``"delta+for+bitpack(11)+zstd"``.

    Parameters
    ----------
    blob : bytes or memoryview
        A blob from :func:`encode_fixed` or :func:`encode_binary`.

    Returns
    -------
    str
        Human-readable description.
    """
    try:
        return _describe(region(blob), 0)
    except CorruptDataError:
        raise
    except Exception as exc:  # noqa: BLE001 - introspection of corrupt bytes
        raise InvalidFileError(f"corrupt encoded block: {exc}") from exc


def _describe(mv: memoryview, depth: int) -> str:
    if depth > MAX_NESTING:
        raise InvalidFileError("encoded blob nests too deeply")
    if len(mv) < 1:
        raise FormatEOFError("empty encoded blob")
    eid = mv[0]
    if eid in (PLAIN, CONSTANT):
        return ENCODING_NAMES[eid]
    if eid in (BITPACK, NARROW, SPLIT):
        (_, width, base, factor) = _head(mv, FOR_HDR)
        w = width if eid == BITPACK else 8 * width
        name = f"{ENCODING_NAMES[eid]}({w})"
        if factor != 1:
            name += f"*gcd({factor})"
        return ("for+" if base else "") + name
    if eid == DELTA:
        return "delta+" + _describe(mv[DELTA_HDR.size :], depth + 1)
    if eid in (RLE, DICT, BINARY_DICT):
        (_, size, first_len) = _head(mv, NESTED_HDR)
        first = _describe(_sub(mv, NESTED_HDR.size, first_len), depth + 1)
        codes = _describe(mv[NESTED_HDR.size + first_len :], depth + 1)
        name = "rle" if eid == RLE else "dict"
        kind = "values" if eid == RLE else "dict"
        codes_kind = "lengths" if eid == RLE else "codes"
        return f"{name}({size}; {kind}={first}; {codes_kind}={codes})"
    if eid == DECIMAL:
        (_, e, n_exc, ints_len, _pos_len) = _head(mv, DECIMAL_HDR)
        inner = _describe(_sub(mv, DECIMAL_HDR.size, ints_len), depth + 1)
        patches = f"+patches({n_exc})" if n_exc else ""
        return f"decimal({e})+{inner}{patches}"
    if eid in (ZSTD, LZ4):
        (_, raw_len) = _head(mv, CODEC_HDR)
        unwrapped = decompress(eid, mv[CODEC_HDR.size :], raw_len)
        return _describe(unwrapped, depth + 1) + "+" + ENCODING_NAMES[eid]
    if eid == BINARY_PLAIN:
        return _bin.describe_plain(mv, depth, _describe)
    raise InvalidFileError(f"unknown encoding id {eid}")
