"""The version layer: key names, version records, the commit protocol, the symbol list."""

from arcticlite.version._engine import VersionEngine
from arcticlite.version._keys import LibraryKeys
from arcticlite.version._records import VersionRecord
from arcticlite.version._symbol_list import SymbolList

__all__ = ["LibraryKeys", "SymbolList", "VersionEngine", "VersionRecord"]
