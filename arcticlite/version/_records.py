"""Version records and refs: the immutable commit log of a symbol (DESIGN §1, §2).

Every commit of a symbol -- write, append, update, metadata, tombstone -- creates one version
record at a deterministic key ``ver/{sym}/{seq:020d}``: ``seq`` is the *commit sequence*. The
version id a user sees (``vid``) is ArcticDB's: data commits take ids 0, 1, 2, ... and a
standalone delete or prune takes none, so the two differ after a tombstone. Each record
carries the map between them (``vmap``: breakpoints ``(vid, seq)`` from which on ``seq = seq0 +
vid - vid0``; empty while they are equal), so ``read(as_of=7)`` is still one lookup, and the
highest id ever written (``top``: the next write takes ``top + 1``, deleted ids included). Each
record also carries the cumulative set of dead seqs (deleted versions and tombstone records)
as closed ranges, so the head record alone says which versions are live. The ref holds a copy
of the head record plus a unique token: it is a hint that readers follow forward.

Records written before version ids were separated have none of ``vid`` / ``top`` / ``vmap``:
they read as ``vid = seq`` and ``top = seq`` (the numbering they were written with), and later
commits continue from there.
"""

from __future__ import annotations

import base64
import datetime
import io
import json
import logging
import pickle
from dataclasses import dataclass, field, replace
from typing import Any

from arcticlite._envelope import KIND_REF, KIND_VERSION, seal, unseal
from arcticlite.exceptions import (
    ArcticDbNotYetImplemented,
    CorruptDataError,
    UnpicklingRefusedError,
)
from arcticlite.index import IndexRoot

Ranges = tuple[tuple[int, int], ...]

#: The only classes a restricted load may name: harmless values, no code runs.
_PLAIN_CLASSES = {("datetime", n): getattr(datetime, n) for n in ("date", "datetime", "time", "timedelta", "timezone")}


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        cls = _PLAIN_CLASSES.get((module, name))
        if cls is None:
            raise UnpicklingRefusedError(f"{module}.{name}")
        return cls


def unpickle(data: bytes | bytearray | memoryview, *, allow_pickle: bool, what: str) -> Any:
    """``pickle.loads(data)``; with ``allow_pickle=False`` a loader that cannot import or call
    anything: plain values (dict, list, tuple, set, str, bytes, numbers, bool, None and
    ``datetime`` values) load, anything else raises :class:`UnpicklingRefusedError` naming
    ``what`` and the class it would have loaded."""
    if allow_pickle:
        return pickle.loads(data)
    try:
        return _PlainUnpickler(io.BytesIO(data)).load()
    except UnpicklingRefusedError as exc:
        raise UnpicklingRefusedError(
            f"{what} is not plain values: reading it would run pickle to load {exc}, and this library "
            "was opened with allow_pickle=False. Read it with allow_pickle=True only if you trust "
            "whoever wrote the store") from None

#: Stored metadata that starts with this is JSON (plain values); anything else is a pickle.
JSON_METADATA = b"arcticlite-json\n"


def _plain(value: Any) -> bool:
    """Whether ``value`` is made only of what JSON round-trips exactly: dicts with str keys,
    lists, str, finite float, int, bool and None (a tuple, a set or a NaN is not)."""
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    if type(value) is list:
        return all(_plain(v) for v in value)
    if type(value) is dict:
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


#: Largest user metadata of one version or snapshot, as stored (ArcticDB's cap: 16 MiB). It is
#: read whole by every ``read_metadata`` / ``list_versions`` of it, and held in memory with it.
MAX_METADATA_BYTES = 16 * 1024 * 1024
#: Above this, a stored metadata is logged as a warning (as ArcticDB does).
WARN_METADATA_BYTES = 8 * 1024 * 1024

_log = logging.getLogger("arcticlite")


def encode_metadata(value: Any, what: str = "metadata") -> bytes | None:
    """Stored bytes of user metadata: plain values (see :func:`_plain`) as JSON, which reads
    back without pickle, anything else pickled (raises what ``pickle.dumps`` raises).

    More than :data:`MAX_METADATA_BYTES` once encoded raises :class:`ArcticDbNotYetImplemented`
    (ArcticDB's class) naming the size, the limit and ``what``; callers encode before they
    write, so a refused metadata changes nothing.
    """
    if value is None:
        return None
    if _plain(value):
        raw = JSON_METADATA + json.dumps(value, separators=(",", ":"), allow_nan=False).encode()
    else:
        raw = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    if len(raw) > MAX_METADATA_BYTES:
        raise ArcticDbNotYetImplemented(
            f"{what} is {len(raw):,} bytes ({len(raw) / 2**20:.1f} MiB) once encoded, above the limit of "
            f"{MAX_METADATA_BYTES:,} bytes (16 MiB) per version; nothing was written. Store the large object "
            "as a symbol of its own (write or write_pickle) and keep its name in the metadata")
    if len(raw) > WARN_METADATA_BYTES:
        _log.warning("%s is %d bytes, above the warning size of %d bytes; it cannot exceed %d bytes",
                     what, len(raw), WARN_METADATA_BYTES, MAX_METADATA_BYTES)
    return raw


def decode_metadata(data: bytes | bytearray | memoryview, *, allow_pickle: bool, what: str) -> Any:
    """User metadata from :func:`encode_metadata`'s bytes (JSON), or pickled (as :func:`unpickle`,
    also for stores written before JSON metadata)."""
    raw = bytes(data)
    if raw.startswith(JSON_METADATA):
        return json.loads(raw[len(JSON_METADATA):])
    return unpickle(raw, allow_pickle=allow_pickle, what=what)


DATA_KINDS = frozenset(
    {"write", "append", "update", "metadata", "delete_range", "compact", "finalize", "pickle"}
)
TOMBSTONE_KINDS = frozenset({"tombstone", "tombstone_all"})


def add_ranges(ranges: Ranges, items: list[tuple[int, int]]) -> Ranges:
    """Union of closed integer ranges, merged and sorted."""
    allr = sorted(list(ranges) + items)
    out: list[list[int]] = []
    for a, b in allr:
        if out and a <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return tuple((a, b) for a, b in out)


def in_ranges(ranges: Ranges, x: int) -> bool:
    return any(a <= x <= b for a, b in ranges)


def seq_of_vid(vmap: Ranges, vid: int) -> int:
    """The commit sequence of version id ``vid`` under the breakpoints ``vmap``."""
    seq = vid
    for v0, s0 in vmap:
        if v0 > vid:
            break
        seq = s0 + vid - v0
    return seq


@dataclass(frozen=True, slots=True, kw_only=True)
class VersionRecord:
    """One commit of a symbol. Immutable once created."""

    symbol: str
    seq: int
    kind: str
    created_ns: int
    token: str
    dead: Ranges = ()
    latest_live: int | None = None
    # data versions only
    index: IndexRoot | None = None
    norm: str | None = None  # NormMeta JSON
    schema: bytes | None = None  # Arrow IPC schema of the stored table
    first_index: int | None = None
    last_index: int | None = None
    sorted: str = "UNKNOWN"
    pickled: bool = False
    metadata: bytes | None = None  # pickled user metadata
    extra: dict[str, Any] = field(default_factory=dict)
    # version ids (ArcticDB's numbering); see the module docstring
    vid: int = -1  # this data version's id; -1 for a tombstone
    top: int = -1  # the highest version id written so far (deleted ones included)
    vmap: Ranges = ()  # breakpoints (vid, seq) where seq - vid changes

    @property
    def is_data(self) -> bool:
        return self.kind in DATA_KINDS

    def is_live(self, seq: int) -> bool:
        """Whether version ``seq`` is live as of this record (which must be the head)."""
        return 0 <= seq <= self.seq and not in_ranges(self.dead, seq)

    def seq_of(self, vid: int) -> int | None:
        """The commit sequence of version id ``vid`` as of this record (the head), or None
        when no such id was ever written."""
        if vid < 0 or vid > self.top:
            return None
        return seq_of_vid(self.vmap, vid)

    def user_metadata(self, allow_pickle: bool = True) -> Any:
        """The user metadata (see :func:`decode_metadata`; :func:`unpickle` for ``allow_pickle``)."""
        if self.metadata is None:
            return None
        return decode_metadata(self.metadata, allow_pickle=allow_pickle,
                               what=f"the metadata of symbol {self.symbol!r} version {self.vid}")

    def with_(self, **kw: Any) -> VersionRecord:
        return replace(self, **kw)

    # -- codec -------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        schema = self.schema or b""
        meta = self.metadata
        header = {
            "symbol": self.symbol,
            "seq": self.seq,
            "kind": self.kind,
            "created_ns": self.created_ns,
            "token": self.token,
            "dead": [list(r) for r in self.dead],
            "latest_live": self.latest_live,
            "index": self.index.to_json() if self.index is not None else None,
            "norm": self.norm,
            "schema_len": len(schema),
            "meta_len": -1 if meta is None else len(meta),
            "first_index": self.first_index,
            "last_index": self.last_index,
            "sorted": self.sorted,
            "pickled": self.pickled,
            "extra": self.extra,
            "vid": self.vid,
            "top": self.top,
            "vmap": [list(r) for r in self.vmap],
        }
        return seal(KIND_VERSION, header, schema + (meta or b""))

    @classmethod
    def from_bytes(cls, data: Any) -> VersionRecord:
        h, blob = unseal(data, KIND_VERSION)
        try:
            slen = int(h["schema_len"])
            mlen = int(h["meta_len"])
            if slen + max(mlen, 0) != len(blob):
                raise CorruptDataError("version record blob size does not match its header")
            return cls(
                symbol=h["symbol"],
                seq=int(h["seq"]),
                kind=h["kind"],
                created_ns=int(h["created_ns"]),
                token=h["token"],
                dead=tuple((int(a), int(b)) for a, b in h["dead"]),
                latest_live=h["latest_live"],
                index=IndexRoot.from_json(h["index"]) if h["index"] is not None else None,
                norm=h["norm"],
                schema=bytes(blob[:slen]) if slen else None,
                first_index=h["first_index"],
                last_index=h["last_index"],
                sorted=h["sorted"],
                pickled=bool(h["pickled"]),
                metadata=None if mlen < 0 else bytes(blob[slen:]),
                extra=h.get("extra") or {},
                **_ids(h),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptDataError(f"version record is malformed: {exc}") from exc


def _ids(h: dict[str, Any]) -> dict[str, Any]:
    """Version-id fields of a header; records written before ids were separated from the
    commit sequence number their data versions by ``seq``."""
    if "top" not in h:
        seq = int(h["seq"])
        return {"vid": seq if h["kind"] in DATA_KINDS else -1, "top": seq, "vmap": ()}
    return {"vid": int(h["vid"]), "top": int(h["top"]), "vmap": tuple((int(a), int(b)) for a, b in h["vmap"])}


def ref_bytes(record: VersionRecord, token: str) -> bytes:
    """The ref body: the head record plus a unique token (so equal heads differ in ETag)."""
    body = record.to_bytes()
    return seal(KIND_REF, {"token": token, "seq": record.seq}, body)


def parse_ref(data: Any) -> VersionRecord:
    _h, blob = unseal(data, KIND_REF)
    return VersionRecord.from_bytes(blob)


def b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode()


def unb64(s: str | None) -> bytes | None:
    return None if s is None else base64.b64decode(s)
