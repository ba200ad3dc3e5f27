"""Key names of every layer (DESIGN §1).

All keys of a library share the prefix ``{lib}/``; names are escaped so that any Unicode
symbol name works and none can reach outside its library's prefix or collide with another
symbol's prefix (``a`` vs ``a/b``).
"""

from __future__ import annotations

from urllib.parse import quote, unquote

SEQ_WIDTH = 20


def escape(name: str) -> str:
    """Escape a symbol/snapshot/library name for use as one key component."""
    out = quote(name, safe="-_.~+=,;@!$'()")
    if out in (".", ".."):  # harmless in a KV store, but keep listings unambiguous
        out = out.replace(".", "%2E")
    return out


def unescape(part: str) -> str:
    return unquote(part)


class LibraryKeys:
    """Key names for one library."""

    __slots__ = ("lib", "root")

    def __init__(self, library: str) -> None:
        self.lib = library
        self.root = escape(library) + "/"

    # library
    @property
    def config(self) -> str:
        return self.root + "_config"

    # reference and version layers
    def ref(self, sym: str) -> str:
        return f"{self.root}vref/{escape(sym)}"

    @property
    def ref_prefix(self) -> str:
        return f"{self.root}vref/"

    def version(self, sym: str, seq: int) -> str:
        return f"{self.root}ver/{escape(sym)}/{seq:0{SEQ_WIDTH}d}"

    def version_prefix(self, sym: str) -> str:
        return f"{self.root}ver/{escape(sym)}/"

    # table index and data layers (fresh digest names, never reused)
    def tindex(self, sym: str, digest: str) -> str:
        return f"{self.root}tindex/{escape(sym)}/{digest}"

    def tdata(self, sym: str, digest: str) -> str:
        return f"{self.root}tdata/{escape(sym)}/{digest}"

    def tindex_prefix(self, sym: str | None = None) -> str:
        return f"{self.root}tindex/" + (f"{escape(sym)}/" if sym is not None else "")

    def tdata_prefix(self, sym: str | None = None) -> str:
        return f"{self.root}tdata/" + (f"{escape(sym)}/" if sym is not None else "")

    # symbol list
    @property
    def sl_prefix(self) -> str:
        return f"{self.root}sl/"

    def sl_journal(self, sym: str, seq: int, op: str, token: str) -> str:
        return f"{self.root}sl/j/{escape(sym)}/{seq:0{SEQ_WIDTH}d}.{op}.{token}"

    def sl_intent(self, sym: str, seq: int, op: str, token: str) -> str:
        return f"{self.root}sl/i/{escape(sym)}/{seq:0{SEQ_WIDTH}d}.{op}.{token}"

    def sl_compacted(self, token: str) -> str:
        return f"{self.root}sl/c/{token}"

    # snapshots
    def snapshot(self, name: str) -> str:
        return f"{self.root}snap/{escape(name)}"

    @property
    def snapshot_prefix(self) -> str:
        return f"{self.root}snap/"

    # staging (stage / finalize_staged_data, Spark bulk ingest)
    def staged(self, sym: str, token: str) -> str:
        return f"{self.root}stage/{escape(sym)}/{token}"

    def staged_prefix(self, sym: str | None = None) -> str:
        return f"{self.root}stage/" + (f"{escape(sym)}/" if sym is not None else "")


REGISTRY_PREFIX = "_arctic/libs/"


def registry_key(library: str) -> str:
    return REGISTRY_PREFIX + escape(library)
