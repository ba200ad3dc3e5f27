"""``Library.admin_tools()``: stored bytes and key counts by key type and by symbol."""

from __future__ import annotations

import pandas as pd
from enginehelpers import frame

from arcticlite import Library, Size
from arcticlite.library._types import KeyType


def stored(lib: Library, prefix: str) -> tuple[int, int]:
    sizes = [len(lib._store.read(k)) for k in lib._store.list_keys(lib._keys.root + prefix)]
    return sum(sizes), len(sizes)


def test_sizes_by_key_type_and_symbol(lib: Library) -> None:
    lib.write("a", frame(1_000))
    lib.append("a", frame(5, start="2030-01-01"))
    lib.write("b/c", frame(10))  # a name that needs escaping in keys
    lib.write("ab", frame(3))  # its ref key has a's ref key as prefix
    lib.snapshot("s")
    tools = lib.admin_tools()
    sizes = tools.get_sizes()
    assert set(sizes) == set(KeyType)
    for kt, prefix in [(KeyType.TABLE_DATA, "tdata/"), (KeyType.TABLE_INDEX, "tindex/"), (KeyType.VERSION, "ver/"),
                       (KeyType.VERSION_REF, "vref/"), (KeyType.SNAPSHOT, "snap/"), (KeyType.SYMBOL_LIST, "sl/")]:
        assert sizes[kt] == Size(*stored(lib, prefix)), kt
    assert sizes[KeyType.VERSION].count == 4 and sizes[KeyType.SNAPSHOT].count == 1
    assert sizes[KeyType.APPEND_DATA] == Size(0, 0)

    by_symbol = tools.get_sizes_by_symbol()
    assert set(by_symbol) == {"a", "b/c", "ab"}
    assert by_symbol["a"][KeyType.VERSION].count == 2
    assert by_symbol["a"][KeyType.VERSION_REF].count == 1
    for kt in (KeyType.TABLE_DATA, KeyType.TABLE_INDEX, KeyType.VERSION, KeyType.VERSION_REF):
        assert sum(s[kt].bytes_compressed for s in by_symbol.values()) == sizes[kt].bytes_compressed
    for sym in ("a", "b/c", "ab"):
        assert tools.get_sizes_for_symbol(sym) == by_symbol[sym]
    assert tools.get_sizes_for_symbol("nope") == {kt: Size(0, 0) for kt in by_symbol["a"]}


def test_staged_data_counts_as_append_data(lib: Library) -> None:
    lib.stage("st", pd.DataFrame({"x": [1, 2]}, index=pd.date_range("2024-01-01", periods=2)))
    tools = lib.admin_tools()
    assert tools.get_sizes()[KeyType.APPEND_DATA].count >= 1
    assert tools.get_sizes_for_symbol("st")[KeyType.APPEND_DATA].count >= 1
    lib.delete_staged_data("st")
    assert tools.get_sizes()[KeyType.APPEND_DATA] == Size(0, 0)
