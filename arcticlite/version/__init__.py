"""The version layer: key names, version records, the commit protocol, the symbol list,
and the rules of a version chain (tombstones, prune, snapshots)."""

from arcticlite.version import _chain as chain
from arcticlite.version._chain import Builder
from arcticlite.version._engine import READING, VersionEngine, pid_token
from arcticlite.version._group import CommitGroup, note_operation
from arcticlite.version._keys import (
    DELETING_PREFIX,
    REGISTRY_PREFIX,
    LibraryKeys,
    deleting_key,
    escape,
    registry_key,
    unescape,
)
from arcticlite.version._records import (
    MAX_METADATA_BYTES,
    VersionRecord,
    add_ranges,
    decode_metadata,
    encode_metadata,
    unpickle,
)
from arcticlite.version._snapshots import Snapshots
from arcticlite.version._symbol_list import SymbolList

__all__ = [
    "DELETING_PREFIX",
    "MAX_METADATA_BYTES",
    "READING",
    "REGISTRY_PREFIX",
    "Builder",
    "CommitGroup",
    "LibraryKeys",
    "Snapshots",
    "SymbolList",
    "VersionEngine",
    "VersionRecord",
    "add_ranges",
    "chain",
    "escape",
    "pid_token",
    "deleting_key",
    "registry_key",
    "unescape",
    "decode_metadata",
    "encode_metadata",
    "note_operation",
    "unpickle",
]
