"""The Examples sections of the public docstrings run, and print what they show (doctest)."""

from __future__ import annotations

import doctest
import importlib
import os

import pytest

MODULES = ["arcticlite.library._arctic", "arcticlite.library._library", "arcticlite.library._types",
           "arcticlite.migrate", "arcticlite.plot", "arcticlite.progress", "arcticlite.query._builder",
           "arcticlite.table._scan"]


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_run(name: str, tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(str(tmp_path))  # an example that writes files writes them here
    monkeypatch.delenv("ARCTICLITE_PROGRESS", raising=False)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed (see above)"
    assert os.getcwd() == str(tmp_path)


def test_library_methods_have_numpydoc_sections() -> None:
    """The methods a first session uses have Parameters, Returns and a runnable Examples section."""
    import arcticlite as adb

    core = ["write", "write_pickle", "append", "update", "delete_data_in_range", "read", "head", "tail",
            "read_metadata", "has_symbol", "get_description", "delete", "list_symbols", "list_versions",
            "snapshot", "list_snapshots", "delete_snapshot", "compact_data", "write_batch", "read_batch", "gc"]
    missing = [f"{m}: {sec}" for m in core for sec in ("Parameters\n", "Returns\n", "Examples\n" if m != "gc" else "")
               if sec not in (getattr(adb.Library, m).__doc__ or "")]
    assert not missing, missing
