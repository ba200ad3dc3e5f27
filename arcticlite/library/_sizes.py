"""``Library.admin_tools()``: stored bytes and key counts by key type and by symbol."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from arcticlite.library._names import check_symbol
from arcticlite.library._types import KeyType
from arcticlite.storage import KVStore
from arcticlite.version import LibraryKeys, unescape


class Size(NamedTuple):
    """Stored bytes and number of keys (``AdminTools`` results).

    Attributes
    ----------
    bytes_compressed : int
        Stored bytes of the keys (compressed data plus arcticlite's envelope).
    count : int
        Number of keys.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("S", pd.DataFrame({"px": [1.0, 2.0]}))
    >>> size = lib.admin_tools().get_sizes_for_symbol("S")[adb.KeyType.TABLE_DATA]
    >>> size.count, size.bytes_compressed > 0
    (1, True)
    """

    bytes_compressed: int
    count: int  # type: ignore[assignment]  # ArcticDB's field name (shadows tuple.count)


#: Key types that belong to one symbol (always present in per-symbol results).
SYMBOL_KEY_TYPES = (KeyType.VERSION_REF, KeyType.VERSION, KeyType.TABLE_INDEX, KeyType.TABLE_DATA,
                    KeyType.APPEND_DATA)
_BY_PREFIX = {k.value: k for k in KeyType}


class AdminTools:
    """What a library stores, by key type and by symbol (``Library.admin_tools()``, as in
    ArcticDB). Sizes are the stored bytes of each key (compressed data plus arcticlite's
    envelope); S3 and memory take them from their listing, LMDB from each value.

    Each call lists the keys it reports on (one listing per prefix): cheap for one symbol,
    proportional to the library's key count for the others.

    Parameters
    ----------
    store : KVStore
        The library's store.
    keys : LibraryKeys
        The library's key names.

    Examples
    --------
    >>> import pandas as pd, arcticlite as adb
    >>> lib = adb.Arctic("mem://").create_library("demo")
    >>> _ = lib.write("A", pd.DataFrame({"px": [1.0, 2.0]}))
    >>> _ = lib.write("B", pd.DataFrame({"px": [3.0]}))
    >>> tools = lib.admin_tools()
    >>> sorted(tools.get_sizes_by_symbol())
    ['A', 'B']
    """

    def __init__(self, store: KVStore, keys: LibraryKeys) -> None:
        self._store = store
        self._keys = keys

    def _scan(self, prefixes: list[str]) -> Iterator[tuple[KeyType, str | None, int]]:
        root = self._keys.root
        for prefix in prefixes:
            for key, n in self._store.list_sizes(prefix):
                kind, _, rest = key[len(root):].partition("/")
                kt = _BY_PREFIX.get(kind)
                if kt is None:
                    continue
                sym = None
                if kt in SYMBOL_KEY_TYPES and rest:
                    sym = unescape(rest if kt is KeyType.VERSION_REF else rest.split("/", 1)[0])
                yield kt, sym, n

    @staticmethod
    def _add(out: dict[KeyType, Size], kt: KeyType, n: int) -> None:
        s = out[kt]
        out[kt] = Size(s.bytes_compressed + n, s.count + 1)

    def get_sizes(self) -> dict[KeyType, Size]:
        """Stored bytes and key count of every key type in the library (every type present).

        Returns
        -------
        dict of KeyType to Size
            One entry per :class:`KeyType`, zero for the types the library has no keys of.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("A", pd.DataFrame({"px": [1.0, 2.0]}))
        >>> _ = lib.write("B", pd.DataFrame({"px": [3.0]}))
        >>> tools = lib.admin_tools()
        >>> sizes = tools.get_sizes()
        >>> sizes[adb.KeyType.TABLE_DATA].count, sizes[adb.KeyType.APPEND_DATA].count
        (2, 0)
        """
        out = {kt: Size(0, 0) for kt in KeyType}
        for kt, _, n in self._scan([self._keys.root]):
            self._add(out, kt, n)
        return out

    def get_sizes_by_symbol(self) -> dict[str, dict[KeyType, Size]]:
        """Per symbol, the stored bytes and key count of its version refs, versions, index
        nodes, data segments and staged data.

        Returns
        -------
        dict of str to dict of KeyType to Size
            Symbols with at least one key; every per-symbol key type present.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("A", pd.DataFrame({"px": [1.0, 2.0]}))
        >>> _ = lib.write("B", pd.DataFrame({"px": [3.0]}))
        >>> tools = lib.admin_tools()
        >>> tools.get_sizes_by_symbol()["B"][adb.KeyType.VERSION].count
        1
        """
        out: dict[str, dict[KeyType, Size]] = {}
        for kt, sym, n in self._scan([self._keys.root]):
            if sym is not None:
                self._add(out.setdefault(sym, {k: Size(0, 0) for k in SYMBOL_KEY_TYPES}), kt, n)
        return out

    def get_sizes_for_symbol(self, symbol: str) -> dict[KeyType, Size]:
        """:meth:`get_sizes_by_symbol` for one symbol (only its keys are listed).

        Parameters
        ----------
        symbol : str
            The symbol (it need not exist: every size is then zero).

        Returns
        -------
        dict of KeyType to Size
            Its version refs, versions, index nodes, data segments and staged data.

        Examples
        --------
        >>> import pandas as pd, arcticlite as adb
        >>> lib = adb.Arctic("mem://").create_library("demo")
        >>> _ = lib.write("A", pd.DataFrame({"px": [1.0, 2.0]}))
        >>> _ = lib.write("B", pd.DataFrame({"px": [3.0]}))
        >>> tools = lib.admin_tools()
        >>> tools.get_sizes_for_symbol("A")[adb.KeyType.TABLE_DATA].count
        1
        >>> tools.get_sizes_for_symbol("missing")[adb.KeyType.TABLE_DATA]
        Size(bytes_compressed=0, count=0)
        """
        sym = check_symbol(symbol)
        keys = self._keys
        out = {k: Size(0, 0) for k in SYMBOL_KEY_TYPES}
        prefixes = [keys.ref(sym), keys.version_prefix(sym), keys.tindex_prefix(sym), keys.tdata_prefix(sym),
                    keys.staged_prefix(sym)]
        for kt, found, n in self._scan(prefixes):
            if found == sym:  # the ref key is a prefix of longer symbols' refs
                self._add(out, kt, n)
        return out
