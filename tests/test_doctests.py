"""The Examples sections of the public docstrings run, and print what they show (doctest)."""

from __future__ import annotations

import dataclasses
import doctest
import enum
import importlib
import inspect
import os
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

MODULES = ["arcticlite._errors", "arcticlite.config", "arcticlite.library._arctic", "arcticlite.library._lazy",
           "arcticlite.library._library", "arcticlite.library._options", "arcticlite.library._sizes",
           "arcticlite.library._types", "arcticlite.migrate", "arcticlite.normalize._frames", "arcticlite.plot",
           "arcticlite.progress", "arcticlite.query._builder", "arcticlite.table._compact", "arcticlite.table._fold",
           "arcticlite.table._gc", "arcticlite.table._prune", "arcticlite.table._scan"]


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_run(name: str, tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    if name == "arcticlite.plot":
        pytest.importorskip("matplotlib")  # the plot extra
    monkeypatch.chdir(str(tmp_path))  # an example that writes files writes them here
    # the examples make their stores with tempfile.mkdtemp(), as a user would: inside tmp_path,
    # so a test run leaves nothing behind in the system's temporary folder
    system_tmp = tempfile.gettempdir()
    before = set(os.listdir(system_tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("ARCTICLITE_PROGRESS", raising=False)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed (see above)"
    assert os.getcwd() == str(tmp_path)
    left = [d for d in set(os.listdir(system_tmp)) - before if os.path.exists(os.path.join(system_tmp, d, "data.mdb"))]
    assert not left, f"the examples of {name} left LMDB stores in {system_tmp}: {left}"


def _public_callables() -> Iterator[tuple[str, Any, bool]]:
    """``(name, callable, is_property_getter)`` of every public class and function of
    ``arcticlite.__all__`` and ``arcticlite.config``, of what the API reference shows besides
    (expression nodes, admin tools, the scan API, the results of maintenance calls, plot,
    progress, migration), and of the public methods and properties each of those classes
    defines itself. The exception classes are documented by the tree in ``arcticlite.exceptions``."""
    import arcticlite as adb
    from arcticlite import migrate, plot, progress, table
    from arcticlite.library import AdminTools
    from arcticlite.query import ExpressionNode

    named = [(name, getattr(adb, name)) for name in adb.__all__]
    named += [(f"{m.__name__}.{name}", getattr(m, name)) for m in (adb.config, plot, progress) for name in m.__all__]
    named += [(f"table.{name}", getattr(table, name)) for name in
              ("CompactionJob", "CompactionPlan", "FoldPlan", "GcReport", "ReadExplain", "ScanPlan", "ScanTask")]
    named += [("query.ExpressionNode", ExpressionNode), ("library.AdminTools", AdminTools),
              ("migrate.import_arcticdb", migrate.import_arcticdb)]
    for name, obj in named:
        if inspect.ismodule(obj) or not callable(obj):
            continue
        yield name, obj, False
        if inspect.isclass(obj):
            for attr, raw in vars(obj).items():
                fn = raw.__func__ if isinstance(raw, staticmethod | classmethod) else raw
                fn = fn.fget if isinstance(raw, property) else fn
                if not attr.startswith("_") and inspect.isfunction(fn):
                    yield f"{name}.{attr}", fn, isinstance(raw, property)


def _documented_names(doc: str) -> set[str]:
    """The names the Parameters (or Attributes) section of a numpydoc docstring describes."""
    lines = doc.splitlines()
    names: set[str] = set()
    inside = False
    for i, line in enumerate(lines):
        heading = i + 1 < len(lines) and lines[i + 1].strip().startswith("---")
        if heading:
            inside = line.strip() in ("Parameters", "Attributes")
        elif inside and line and not line.startswith(" ") and not line.startswith("---"):
            names |= {part.strip().lstrip("*") for part in line.split(" : ")[0].split(",")}
    return names


def _missing_sections(obj: Any, getter: bool = False) -> list[str]:
    """The numpydoc sections ``obj``'s docstring lacks: Parameters naming every parameter when
    it takes any (an enum is not constructed by users; a NamedTuple or dataclass may list its
    fields as Attributes), Returns when it returns something (a property ``getter`` says what it is in
    its summary instead), and always Examples."""
    doc = inspect.getdoc(obj) or ""
    has = {line.strip() for line, under in zip(doc.splitlines(), doc.splitlines()[1:], strict=False)
           if under.strip().startswith("---")}
    missing = []
    sig = inspect.signature(obj)
    takes = [p for p in sig.parameters.values() if p.name not in ("self", "cls") and not p.name.startswith("_")]
    if inspect.isclass(obj) and (issubclass(obj, tuple) or dataclasses.is_dataclass(obj)) and "Attributes" in has:
        has.add("Parameters")  # the fields of a NamedTuple or dataclass are its parameters
    if takes and not (inspect.isclass(obj) and issubclass(obj, enum.Enum)):
        if "Parameters" not in has:
            missing.append("Parameters")
        else:
            named = _documented_names(doc)
            missing += [f"Parameters: {p.name}" for p in takes if p.kind is not p.VAR_KEYWORD and p.name not in named]
    returns = sig.return_annotation not in (None, "None", inspect.Signature.empty) and not getter
    if not inspect.isclass(obj) and returns and not has & {"Returns", "Yields"}:
        missing.append("Returns")
    if "Examples" not in has:
        missing.append("Examples")
    return missing


def test_every_public_callable_has_parameters_returns_and_examples() -> None:
    """Every public class, function and method a user reaches from ``import arcticlite`` says
    what it takes, what it returns, and shows a call (run by the test above)."""
    found = {name: _missing_sections(obj, getter) for name, obj, getter in _public_callables()}
    assert len(found) > 150  # the walk reaches the classes' methods
    missing = {name: sections for name, sections in found.items() if sections}
    assert not missing, f"docstrings without these numpydoc sections: {missing}"
    unrun = sorted({obj.__module__ for _, obj, _ in _public_callables()} - set(MODULES))
    assert not unrun, f"add these modules to MODULES so that their examples run: {unrun}"


def test_every_library_method_that_refuses_a_read_only_library_says_so() -> None:
    """A user of a read-only library learns from the docstring which calls raise
    ``PermissionException``: every ``Library`` method that refuses one (the ones marked as
    changing the store) names it under Raises."""
    import arcticlite as adb
    from arcticlite.library._library import _mutates

    marked = _mutates(lambda self: None).__code__  # the wrapper every changing method runs through
    changing = sorted(name for name, fn in vars(adb.Library).items()
                      if inspect.isfunction(fn) and fn.__code__ is marked)
    assert {"write", "append", "delete", "snapshot", "compact_data", "delete_batch"} <= set(changing)
    silent = []
    for name in changing:
        doc = inspect.getdoc(getattr(adb.Library, name)) or ""
        raises = doc.split("Raises\n------", 1)[1].split("Examples\n--------", 1)[0] if "Raises\n------" in doc else ""
        if "PermissionException" not in raises:
            silent.append(name)
    assert not silent, f"these methods refuse a read-only library but do not say so under Raises: {silent}"


def test_the_coverage_check_sees_a_missing_section() -> None:
    def documented(x: int) -> int:
        """Twice ``x``.

        Parameters
        ----------
        x : int
            A number.

        Returns
        -------
        int
            ``2 * x``.
        """
        return 2 * x

    def half_documented(x: int, y: int) -> None:
        """Nothing.

        Parameters
        ----------
        x : int
            A number.

        Examples
        --------
        >>> half_documented(1, 2)
        """

    assert _missing_sections(documented) == ["Examples"]
    assert _missing_sections(lambda: None) == ["Examples"]
    assert _missing_sections(half_documented) == ["Parameters: y"]
