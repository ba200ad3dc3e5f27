"""Moving from ArcticDB: copy an ArcticDB store's libraries into an arcticlite store.

arcticlite does not read ArcticDB's storage format (its keys and segment encoding are its own),
so a store ArcticDB wrote is refused when opened (``Arctic`` says so and points here). Copying
goes through an installed ``arcticdb`` (``pip install arcticdb``): every symbol is read with it
and written with arcticlite, with its metadata::

    from arcticlite.migrate import import_arcticdb
    import_arcticdb("lmdb:///data/arcticdb_store", "lmdb:///data/arcticlite_store")

or ``arcticlite import-arcticdb lmdb:///data/arcticdb_store lmdb:///data/arcticlite_store``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from arcticlite.exceptions import MissingDependencyError
from arcticlite.library import Arctic, LibraryOptions
from arcticlite.progress import Progress

__all__ = ["import_arcticdb"]


def _is_table(data: Any) -> bool:
    return isinstance(data, pd.DataFrame | pd.Series | np.ndarray | pa.Table)


def import_arcticdb(source_uri: str, target_uri: str, libraries: Sequence[str] | None = None, *,
                    all_versions: bool = False, progress: Callable[[str], None] | None = print) -> dict[str, int]:
    """Copy libraries of the ArcticDB store ``source_uri`` into the arcticlite store ``target_uri``.

    Parameters
    ----------
    source_uri : str
        The URI ``arcticdb.Arctic`` opens the old store with.
    target_uri : str
        The arcticlite store to write (libraries are created with the same ``dynamic_schema``).
    libraries : list of str, optional
        The libraries to copy (default: all). A library that exists in the target is added to.
    all_versions : bool, default False
        Copy every live version of each symbol, oldest first (version ids are then renumbered
        0, 1, 2, … where ArcticDB's had gaps from deletions); by default only the latest.
    progress : callable, optional
        Called with one line per symbol copied (default: ``print``; ``None`` for silence). A
        progress bar counts the symbols on terminals (:mod:`arcticlite.progress`).

    Returns
    -------
    dict
        Versions written, per library.

    Raises
    ------
    MissingDependencyError
        arcticdb is not installed.

    Examples
    --------
    >>> from arcticlite.migrate import import_arcticdb
    >>> import_arcticdb("lmdb:///tmp/old", "lmdb:///tmp/new")  # doctest: +SKIP
    """
    try:
        import arcticdb
    except ImportError as exc:
        raise MissingDependencyError(
            "importing an ArcticDB store reads it through arcticdb: pip install arcticdb") from exc
    src = arcticdb.Arctic(source_uri)
    dst = Arctic(target_uri)
    written: dict[str, int] = {}
    for name in libraries if libraries is not None else src.list_libraries():
        s = src.get_library(name)
        d = dst.get_library(name, create_if_missing=True,
                            library_options=None if dst.has_library(name) else
                            LibraryOptions(dynamic_schema=bool(s.options().dynamic_schema)))
        count = 0
        syms = sorted(s.list_symbols())
        bar = Progress(len(syms), f"import {name}", unit="symbol")
        for sym in syms:
            if all_versions:
                listed = s.list_versions(sym)
                ids: list[Any] = sorted(v.version for v, info in listed.items() if not info.deleted)
            else:
                ids = [None]
            for vid in ids:
                item = s.read(sym, as_of=vid)
                if _is_table(item.data):
                    d.write(sym, item.data, metadata=item.metadata, validate_index=False)
                else:
                    d.write_pickle(sym, item.data, metadata=item.metadata)
                count += 1
            if progress is not None:
                progress(f"{name}/{sym}: {len(ids)} version{'s' if len(ids) != 1 else ''}")
            bar.update(1)
        bar.close()
        written[name] = count
    return written
