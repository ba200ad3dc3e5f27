"""Key names of every layer (DESIGN §1).

All keys of a library share the prefix ``{lib}/``; names are escaped so that any Unicode
symbol name works and none can reach outside its library's prefix or collide with another
symbol's prefix (``a`` vs ``a/b``).
"""

from __future__ import annotations

from urllib.parse import quote, unquote

from arcticlite.exceptions import InvalidSymbolName

SEQ_WIDTH = 20


def escape(name: str) -> str:
    """Escape a symbol/snapshot/library name for use as one key component."""
    out = quote(name, safe="-_.~+=,;@!$'()")
    if out in (".", ".."):  # harmless in a KV store, but keep listings unambiguous
        out = out.replace(".", "%2E")
    return out


def unescape(part: str) -> str:
    return unquote(part)


#: S3's limit on the length of a key; names that would exceed it are refused on every backend.
MAX_KEY_BYTES = 1024
#: Bytes the longest key of a symbol adds to the library and symbol names: ``stage/<sym>/``
#: with a token of up to 64 characters of job name, a time and a random part.
KEY_OVERHEAD = 160


class LibraryKeys:
    """Key names for one library."""

    __slots__ = ("lib", "root")

    def __init__(self, library: str) -> None:
        self.lib = library
        self.root = escape(library) + "/"

    def _name(self, name: str, what: str = "symbol") -> str:
        """``name`` escaped for a key, refused (before anything is written) if its longest key
        would exceed :data:`MAX_KEY_BYTES`: S3's limit, applied on every backend alike."""
        out = escape(name)
        if len(self.root) + len(out) + KEY_OVERHEAD > MAX_KEY_BYTES:
            raise InvalidSymbolName(
                f"{what} name of {len(name)} characters is {len(out.encode())} bytes in storage keys, too long for "
                f"library {self.lib!r}: keys are limited to {MAX_KEY_BYTES:,} bytes (S3's limit, applied on every "
                f"backend), which leaves {MAX_KEY_BYTES - KEY_OVERHEAD - len(self.root)} bytes; use a shorter name "
                "(characters other than ASCII letters, digits and -_.~+=,;@!$'() are escaped: 3 bytes per UTF-8 byte)")
        return out

    # library
    @property
    def config(self) -> str:
        return self.root + "_config"

    # reference and version layers
    def ref(self, sym: str) -> str:
        return f"{self.root}vref/{self._name(sym)}"

    @property
    def ref_prefix(self) -> str:
        return f"{self.root}vref/"

    def version(self, sym: str, seq: int) -> str:
        return f"{self.root}ver/{self._name(sym)}/{seq:0{SEQ_WIDTH}d}"

    def version_prefix(self, sym: str) -> str:
        return f"{self.root}ver/{self._name(sym)}/"

    # table index and data layers (fresh digest names, never reused)
    def tindex(self, sym: str, digest: str) -> str:
        return f"{self.root}tindex/{self._name(sym)}/{digest}"

    def tdata(self, sym: str, digest: str) -> str:
        return f"{self.root}tdata/{self._name(sym)}/{digest}"

    def tindex_prefix(self, sym: str | None = None) -> str:
        return f"{self.root}tindex/" + (f"{self._name(sym)}/" if sym is not None else "")

    def tdata_prefix(self, sym: str | None = None) -> str:
        return f"{self.root}tdata/" + (f"{self._name(sym)}/" if sym is not None else "")

    # symbol list
    @property
    def sl_prefix(self) -> str:
        return f"{self.root}sl/"

    def sl_journal(self, sym: str, seq: int, op: str, token: str) -> str:
        return f"{self.root}sl/j/{self._name(sym)}/{seq:0{SEQ_WIDTH}d}.{op}.{token}"

    def sl_intent(self, sym: str, seq: int, op: str, token: str) -> str:
        return f"{self.root}sl/i/{self._name(sym)}/{seq:0{SEQ_WIDTH}d}.{op}.{token}"

    def sl_compacted(self, token: str) -> str:
        return f"{self.root}sl/c/{token}"

    # snapshots
    def snapshot(self, name: str) -> str:
        return f"{self.root}snap/{self._name(name, 'snapshot')}"

    @property
    def snapshot_prefix(self) -> str:
        return f"{self.root}snap/"

    # staging (stage / finalize_staged_data, Spark bulk ingest)
    def staged(self, sym: str, token: str) -> str:
        return f"{self.root}stage/{self._name(sym)}/{token}"

    def staged_prefix(self, sym: str | None = None) -> str:
        return f"{self.root}stage/" + (f"{self._name(sym)}/" if sym is not None else "")


REGISTRY_PREFIX = "_arctic/libs/"


def registry_key(library: str) -> str:
    return REGISTRY_PREFIX + escape(library)


#: Where ``delete_library`` marks a library it is deleting, before its first delete.
DELETING_PREFIX = "_arctic/deleting/"


def deleting_key(library: str) -> str:
    """The marker of a deletion in progress: a library whose registry entry is gone while its
    keys remain and no marker says why has lost the entry to corruption."""
    return DELETING_PREFIX + escape(library)
