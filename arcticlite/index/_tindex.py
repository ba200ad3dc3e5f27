"""The table index: one row per data segment, kept as a B-tree of immutable nodes.

A leaf row describes one segment (a row x column tile of the frame); an internal row
summarises one child node. Both use the same fixed POD dtype :data:`ROW_DTYPE`, stored as raw
little-endian bytes in a checksummed envelope and read back with ``numpy.frombuffer``.

Every node and segment key is a fresh 128-bit name (xxh3-128 of the bytes with a random seed),
never reused: versions share the nodes they have in common by reference, and a key that has
become unreachable can never become reachable again, which is what makes ``gc`` safe. An append rewrites only the rightmost path (at most ``height`` nodes of at most
:data:`FANOUT` rows), so its cost does not grow with the number of segments.

A leaf row may reference a *slice* of its segment (``seg_offset`` and ``end_row - start_row``
rows of it): update and delete_data_in_range trim segments without rewriting their data.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xxhash

from arcticlite._envelope import KIND_INDEX_NODE, seal, unseal
from arcticlite.exceptions import CorruptDataError

ROW_DTYPE = np.dtype(
    [
        ("min_index", "<i8"),  # smallest index value in the rows referenced (ns, or row number)
        ("max_index", "<i8"),  # largest index value
        ("start_row", "<i8"),  # half-open absolute row range in the version
        ("end_row", "<i8"),
        ("start_col", "<i4"),  # half-open range of data columns (0-based, index excluded)
        ("end_col", "<i4"),
        ("digest", "u1", (16,)),  # xxh3_128 of the segment (leaf) or of the child node (internal)
        ("seg_offset", "<i8"),  # leaf: first row of the segment referenced
        ("seg_rows", "<i8"),  # leaf: rows in the segment; internal: leaf rows in the subtree
        ("nbytes", "<u8"),  # leaf: bytes of the segment; internal: bytes of the subtree's data
        ("flags", "<u4"),  # bit 0: delta segment (merge-on-read); bit 1: open tail; bit 2: regular index
        ("_pad", "<u4"),
    ]
)
assert ROW_DTYPE.itemsize == 88

FANOUT = 256
#: Leaf flag: the segment holds delta rows of a merge (merge-on-read), not rows of the table;
#: such leaves follow the table's own leaves, past its last row (docs/engine.md).
FLAG_DELTA = 1
#: Leaf flag: the segment is a symbol's open tail, written uncompressed by a small append; the
#: next small append replaces it with a segment holding its rows and the new ones.
FLAG_OPEN_TAIL = 2
#: Leaf flag: the index values of the rows referenced are ``min_index + k * step`` for row
#: ``k`` of the leaf, ``step = (max_index - min_index) / (rows - 1)`` (a regular datetime index,
#: set by the writer where it holds for the whole segment): a merge finds its rows by arithmetic.
FLAG_REGULAR = 4
#: Index nodes an index IO keeps after loading them (an append walks the rightmost path twice).
_MEMO_NODES = 16

EMPTY = np.zeros(0, dtype=ROW_DTYPE)


def shifted(rows: np.ndarray, by: int, *, row_numbers_index: bool) -> np.ndarray:
    """A copy of leaf ``rows`` moved ``by`` rows down the table. When the index values are row
    numbers (no datetime index), the min/max index values move with them."""
    out = rows.copy()
    out["start_row"] += by
    out["end_row"] += by
    if row_numbers_index:
        out["min_index"] += by
        out["max_index"] += by
    return out


def new_digest(body: bytes | memoryview) -> str:
    """A fresh key name for ``body``: xxh3-128 with a random seed (unique per write)."""
    return xxhash.xxh3_128_hexdigest(body, seed=secrets.randbits(64))


def hex_digests(rows: np.ndarray) -> list[str]:
    """The digests of ``rows`` as hex strings (one per segment or node, not per data row)."""
    raw = rows["digest"].tobytes()
    return [raw[i : i + 16].hex() for i in range(0, len(raw), 16)]


@dataclass(frozen=True, slots=True)
class IndexRoot:
    """Where a version's index tree starts; ``digest`` is ``None`` for an empty table."""

    digest: str | None
    height: int
    rows: int
    segments: int

    def to_json(self) -> dict[str, object]:
        return {"digest": self.digest, "height": self.height, "rows": self.rows, "segments": self.segments}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> IndexRoot:
        return cls(
            digest=d["digest"],
            height=int(d["height"]),
            rows=int(d["rows"]),
            segments=int(d["segments"]),
        )


EMPTY_ROOT = IndexRoot(digest=None, height=0, rows=0, segments=0)


class TableIndexIO:
    """Reads and writes index nodes through two callbacks (so this layer knows no store).

    ``write_nodes(dict[key_digest_hex, bytes])`` persists new nodes; ``read_node(digest_hex)``
    returns a node's bytes.
    """

    def __init__(
        self,
        read_node: Callable[[str], bytes | memoryview],
        write_nodes: Callable[[dict[str, bytes]], None],
        read_nodes: Callable[[Sequence[str]], list[bytes | memoryview]] | None = None,
        key_of: Callable[[str], str] | None = None,
    ) -> None:
        self._key_of = key_of or (lambda digest: f"index node {digest}")
        self._read = read_node
        self._read_many = read_nodes or (lambda ds: [read_node(d) for d in ds])
        self._write = write_nodes
        self._memo: dict[str, tuple[int, np.ndarray]] = {}  # nodes are immutable

    # -- node codec ------------------------------------------------------------------------
    @staticmethod
    def _encode(rows: np.ndarray, level: int) -> tuple[str, bytes]:
        body = seal(KIND_INDEX_NODE, {"level": level, "count": len(rows)}, rows.tobytes())
        return new_digest(body), body

    @staticmethod
    def _decode(data: bytes | memoryview) -> tuple[int, np.ndarray]:
        header, blob = unseal(data, KIND_INDEX_NODE)
        count = int(header["count"])
        if len(blob) != count * ROW_DTYPE.itemsize:
            raise CorruptDataError("table index node size does not match its row count")
        return int(header["level"]), np.frombuffer(blob, dtype=ROW_DTYPE)

    def _node(self, data: bytes | memoryview, digest: str) -> tuple[int, np.ndarray]:
        """:meth:`_decode`; a corrupt node's error names its storage key."""
        try:
            return self._decode(data)
        except CorruptDataError as exc:
            raise type(exc)(f"{exc} (storage key {self._key_of(digest)!r})") from exc

    def load(self, digest: str) -> tuple[int, np.ndarray]:
        hit = self._memo.get(digest)
        if hit is None:
            hit = self._node(self._read(digest), digest)
            if len(self._memo) >= _MEMO_NODES:
                self._memo.clear()
            self._memo[digest] = hit
        return hit

    def _rightmost_path(self, root: IndexRoot) -> list[np.ndarray]:
        path: list[np.ndarray] = []
        digest = root.digest
        for _ in range(root.height):
            assert digest is not None
            _, node = self.load(digest)
            path.append(node)
            digest = node[-1]["digest"].tobytes().hex()
        return path

    def last_leaf_rows(self, root: IndexRoot, n: int) -> np.ndarray:
        """The last ``n`` leaf rows, if the rightmost leaf node holds that many (else fewer)."""
        if root.digest is None or n <= 0:
            return EMPTY
        return self._rightmost_path(root)[-1][-n:]

    # -- building ----------------------------------------------------------------------------
    @staticmethod
    def _summary(rows: np.ndarray, digest: str) -> np.ndarray:
        s = np.zeros(1, dtype=ROW_DTYPE)
        s["min_index"] = rows["min_index"].min()
        s["max_index"] = rows["max_index"].max()
        s["start_row"] = rows["start_row"].min()
        s["end_row"] = rows["end_row"].max()
        s["start_col"] = rows["start_col"].min()
        s["end_col"] = rows["end_col"].max()
        s["digest"] = np.frombuffer(bytes.fromhex(digest), dtype=np.uint8)
        s["nbytes"] = rows["nbytes"].sum()
        return s

    def _write_level(self, rows: np.ndarray, level: int, out: dict[str, bytes]) -> np.ndarray:
        """Split ``rows`` into nodes of at most FANOUT rows; return their summary rows."""
        summaries = []
        for i in range(0, len(rows), FANOUT):
            part = rows[i : i + FANOUT]
            d, body = self._encode(part, level)
            out[d] = body
            s = self._summary(part, d)
            s["seg_rows"] = part["seg_rows"].sum() if level > 0 else len(part)
            summaries.append(s)
        return np.concatenate(summaries) if summaries else EMPTY

    def _finish(self, level_rows: np.ndarray, level: int, out: dict[str, bytes]) -> IndexRoot:
        # level_rows: summaries of nodes at `level - 1`; grow upwards until one root remains
        while len(level_rows) > 1:
            level_rows = self._write_level(level_rows, level, out)
            level += 1
        self._write(out)
        root = level_rows[0]
        return IndexRoot(
            digest=root["digest"].tobytes().hex(),
            height=level,
            rows=int(root["end_row"]),
            segments=int(root["seg_rows"]),
        )

    def build(self, rows: np.ndarray) -> IndexRoot:
        """Write a fresh tree over ``rows`` (leaf rows sorted by start_row, start_col)."""
        if len(rows) == 0:
            return EMPTY_ROOT
        out: dict[str, bytes] = {}
        return self._finish(self._write_level(rows, 0, out), 1, out)

    def append(self, root: IndexRoot, new_rows: np.ndarray, replace_last: int = 0) -> IndexRoot:
        """Add leaf rows after the last ones, rewriting only the rightmost path; with
        ``replace_last``, the last that many leaf rows (all in the rightmost leaf node, see
        :meth:`last_leaf_rows`) are dropped first."""
        if root.digest is None:
            return self.build(new_rows)
        if len(new_rows) == 0 and not replace_last:
            return root
        path = self._rightmost_path(root)
        leaf = path[-1]
        if replace_last:
            if replace_last > len(leaf) or not len(new_rows):
                raise ValueError("replace_last must name rows of the rightmost leaf and be replaced")
            leaf = leaf[: len(leaf) - replace_last]
        out: dict[str, bytes] = {}
        entries = self._write_level(np.concatenate([leaf, new_rows]), 0, out)
        level = 1
        for parent in reversed(path[:-1]):
            entries = self._write_level(np.concatenate([parent[:-1], entries]), level, out)
            level += 1
        return self._finish(entries, level, out)

    # -- reading -----------------------------------------------------------------------------
    def leaves(
        self,
        root: IndexRoot,
        *,
        row_range: tuple[int, int] | None = None,
        index_range: tuple[int, int] | None = None,
        col_range: tuple[int, int] | None = None,
    ) -> np.ndarray:
        """Leaf rows overlapping the given half-open row range, closed index range and
        half-open column range (each optional), in row-then-column order."""
        if root.digest is None:
            return EMPTY
        frontier = [root.digest]
        for _level in range(root.height):
            nodes = [self._node(b, d)[1] for b, d in zip(self._read_many(frontier), frontier, strict=True)]
            rows = np.concatenate(nodes) if len(nodes) > 1 else nodes[0]
            mask = np.ones(len(rows), dtype=bool)
            if row_range is not None:
                mask &= (rows["end_row"] > row_range[0]) & (rows["start_row"] < row_range[1])
            if index_range is not None:
                mask &= (rows["max_index"] >= index_range[0]) & (rows["min_index"] <= index_range[1])
            if col_range is not None:
                mask &= (rows["end_col"] > col_range[0]) & (rows["start_col"] < col_range[1])
            rows = rows[mask]
            if _level == root.height - 1:
                return rows
            frontier = hex_digests(rows)
            if not frontier:
                return EMPTY
        return EMPTY

    def _read_present(self, digests: list[str]) -> list[bytes | memoryview | None]:
        from arcticlite.exceptions import KeyNotFoundException

        try:
            return list(self._read_many(digests))
        except KeyNotFoundException:
            out: list[bytes | memoryview | None] = []
            for d in digests:
                try:
                    out.append(self._read(d))
                except KeyNotFoundException:
                    out.append(None)
            return out

    def node_digests(self, roots: Iterable[IndexRoot], seen: set[str] | None = None,
                     *, strict: bool = False) -> tuple[set[str], set[str]]:
        """All node digests and leaf (segment) digests reachable from ``roots``.

        Nodes in ``seen`` are not descended again (versions share most of their nodes). A
        node that is not in the store is skipped (an earlier clean-up removed it) -- unless
        ``strict``: the roots are versions that must be kept, whose leaves a caller is about to
        spare from deletion, and a missing node would make them look unreachable; then
        :class:`CorruptDataError` names it.
        """
        seen = set() if seen is None else seen
        nodes: set[str] = set()
        segments: set[str] = set()
        frontier = [r.digest for r in roots if r.digest is not None and r.digest not in seen]
        while frontier:
            frontier = [d for d in dict.fromkeys(frontier) if d not in seen]
            if not frontier:
                break
            seen.update(frontier)
            nodes.update(frontier)
            nxt: list[str] = []
            for data, digest in zip(self._read_present(frontier), frontier, strict=True):
                if data is None:
                    if strict:
                        raise CorruptDataError(
                            f"index node {self._key_of(digest)!r} of a version that is kept is missing from the "
                            "store; nothing was deleted (its segments would have looked unreachable); restore the "
                            "store from a backup, or delete the versions that use it")
                    continue  # already removed by an earlier clean-up
                level, rows = self._node(data, digest)
                digests = hex_digests(rows)
                if level == 0:
                    segments.update(digests)
                else:
                    nxt.extend(digests)
            frontier = nxt
        return nodes, segments
