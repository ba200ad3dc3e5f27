"""The order of the output columns of an aggregation, as ArcticDB gives it.

ArcticDB receives ``agg({...})`` as a C++ ``std::unordered_map`` keyed by output column name
(filled in the dict's order, after a ``reserve`` of its size) and emits one column per entry
in the map's iteration order. Users see that order in ``data.columns``, and code switching
from ArcticDB may rely on it (``df.columns[0]``, ``assert_frame_equal`` of a stored result), so
:func:`output_order` reproduces it: GCC's ``std::hash<std::string>`` (MurmurHash2, 64-bit,
seed ``0xc70f6907``), the bucket count a ``reserve(n)`` picks, and the node list where a key
goes first in its bucket and a key of an empty bucket goes first in the list. Two aggregations
come out reversed unless their names share a bucket; twelve come out in an order no simpler
rule gives (``tests/query/test_aggregations.py`` keeps both).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arcticlite.exceptions import UserInputException

_MASK = (1 << 64) - 1
_MUL = (0xC6A4A793 << 32) + 0x5BD1E995
_SEED = 0xC70F6907
#: libstdc++'s bucket counts for a request below 14 (``_Prime_rehash_policy::_M_next_bkt``).
_FAST_BUCKETS = (2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13)


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def string_hash(data: bytes) -> int:
    """``std::hash<std::string>`` of ``data`` in libstdc++ on a 64-bit machine."""
    n = len(data)
    aligned = n & ~7
    h = (_SEED ^ (n * _MUL)) & _MASK
    for p in range(0, aligned, 8):
        word = (_shift_mix((int.from_bytes(data[p:p + 8], "little") * _MUL) & _MASK) * _MUL) & _MASK
        h = ((h ^ word) * _MUL) & _MASK
    if n & 7:
        h = ((h ^ int.from_bytes(data[aligned:], "little")) * _MUL) & _MASK
    h = (_shift_mix(h) * _MUL) & _MASK
    return _shift_mix(h)


def _is_prime(k: int) -> bool:
    return k > 1 and all(k % d for d in range(2, int(k ** 0.5) + 1))


def bucket_count(n: int) -> int:
    """The buckets of a map after ``reserve(n)`` (every prime is in libstdc++'s list below
    100; above, the next prime stands in for its sparser list)."""
    n = max(1, n)
    if n < len(_FAST_BUCKETS):
        return _FAST_BUCKETS[n]
    while not _is_prime(n):
        n += 1
    return n


def output_order(names: Sequence[str]) -> list[int]:
    """Positions into ``names`` (distinct output column names, in the dict's order) in the
    order ArcticDB outputs them."""
    buckets = bucket_count(len(names))
    nodes: list[tuple[int, int]] = []  # (bucket, position in names), in the map's list order
    for pos, name in enumerate(names):
        b = string_hash(str(name).encode("utf-8")) % buckets
        first = next((i for i, (nb, _) in enumerate(nodes) if nb == b), 0)
        nodes.insert(first, (b, pos))
    return [pos for _, pos in nodes]


GROUPBY_OPS = ("sum", "mean", "min", "max", "count")
RESAMPLE_OPS = (*GROUPBY_OPS, "first", "last")


def parse_aggregations(aggs: dict[str, Any], allowed: tuple[str, ...], where: str) -> list[tuple[str, str, str]]:
    """``[(output name, input column, op)]`` from ``{"col": "op"}`` / ``{"out": ("col", "op")}``,
    in ArcticDB's order of the output columns (:func:`output_order`: ``agg({"f":
    "sum", "i": "sum"})`` gives the columns ``i``, ``f``)."""
    out = []
    for name, spec in aggs.items():
        if isinstance(spec, tuple | list):
            if len(spec) != 2:
                raise UserInputException(
                    f"E_INVALID_USER_ARGUMENT aggregation for {name!r} must be 'op' or ('column', 'op'), got {spec!r}"
                )
            column, op = spec
        else:
            column, op = name, spec
        if not isinstance(op, str) or op.lower() not in allowed:
            raise UserInputException(f"E_INVALID_USER_ARGUMENT Unknown aggregation operator provided{where}: {op}")
        out.append((name, column, op.lower()))
    return [out[i] for i in output_order([name for name, _, _ in out])]
