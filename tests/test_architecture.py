"""The package's shape (docs/architecture.md): layers import one way, no package reaches into
another's private modules, no module imports itself back through a cycle, and the top-level
public names are exactly ``arcticlite.__all__``."""

from __future__ import annotations

import ast
import pathlib
import types
from collections.abc import Iterator

import arcticlite

ROOT = pathlib.Path(arcticlite.__file__).parent

#: Layers, lowest first: a package may import the base modules and the packages before it.
LAYERS = ["storage", "format", "index", "version", "normalize", "query", "table", "library", "testing"]
#: Modules every layer may use: the exception tree, the sealed-record envelope, progress bars,
#: named settings.
BASE = {"arcticlite.exceptions", "arcticlite._errors", "arcticlite._envelope", "arcticlite.progress",
        "arcticlite.config"}
#: Top-level modules above every layer (the public façade, `options` under ArcticDB's module name,
#: the command line, the demo).
TOP = {"arcticlite", "arcticlite.__main__", "arcticlite.demo", "arcticlite.options"}


def _modules() -> Iterator[tuple[str, str, pathlib.Path]]:
    """(module, its package, path) of every module of arcticlite."""
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
            yield ".".join(parts), ".".join(parts), path
        else:
            yield ".".join(parts), ".".join(parts[:-1]), path


def _imports(path: pathlib.Path) -> list[str]:
    """Every ``arcticlite`` module this file imports (at any depth, type-only imports too)."""
    out: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("arcticlite"):
                for a in node.names:  # a submodule imported by name, else the module itself
                    full = f"{node.module}.{a.name}"
                    out.append(full if full in _KNOWN else node.module)
        elif isinstance(node, ast.Import):
            out.extend(a.name for a in node.names if a.name.startswith("arcticlite"))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return out


_KNOWN = {name for name, _, _ in _modules()}


def _module_of(name: str) -> str:
    """The module an imported dotted name refers to (dropping a trailing attribute)."""
    while name not in _KNOWN and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def test_no_package_imports_another_packages_private_module() -> None:
    bad = []
    for module, package, path in _modules():
        for name in _imports(path):
            parts = name.split(".")
            for i, part in enumerate(parts):
                if part.startswith("_") and not part.startswith("__"):
                    owner = ".".join(parts[:i])
                    if owner not in (package, "arcticlite"):
                        bad.append(f"{module} imports {name}")
                    break
    assert not bad, "\n".join(bad)


def test_layers_import_one_way() -> None:
    rank = {name: i for i, name in enumerate(LAYERS)}
    bad = []
    for module, _, path in _modules():
        mine = _layer(module)
        for name in _imports(path):
            target = _module_of(name)
            if target in BASE or target == module:
                continue
            if mine is None:
                continue  # the top-level façade may import any layer
            theirs = _layer(target)
            if theirs is None or rank[theirs] > rank[mine]:
                bad.append(f"{module} ({mine}) imports {target} ({theirs or 'top level'})")
    assert not bad, "\n".join(bad)


def test_no_import_cycles() -> None:
    graph: dict[str, set[str]] = {}
    for module, _, path in _modules():
        graph[module] = {_module_of(n) for n in _imports(path)} - {module}
    # a package's __init__ re-exports its modules: edges into a package mean its modules
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if n.startswith(m + ".") or m.startswith(n + "."):
                continue  # a package and its own modules
            if state.get(n) == 1:
                cycles.append(stack[stack.index(n):] + [n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_every_public_top_level_name_is_in_all() -> None:
    public = {n for n in dir(arcticlite) if not n.startswith("_")}
    submodules = {n for n in public if isinstance(getattr(arcticlite, n), types.ModuleType) and n != "exceptions"}
    missing = sorted((public - submodules) - set(arcticlite.__all__))
    assert not missing, f"public names not in arcticlite.__all__: {missing}"
    absent = sorted(n for n in arcticlite.__all__ if not hasattr(arcticlite, n))
    assert not absent, f"names in __all__ that arcticlite lacks: {absent}"


def test_every_package_lists_its_public_names() -> None:
    import importlib

    for module, package, _path in _modules():
        if module != package or module in TOP:
            continue
        mod = importlib.import_module(module)
        names = getattr(mod, "__all__", None)
        assert names is not None, f"{module} has no __all__"
        absent = [n for n in names if not hasattr(mod, n)]
        assert not absent, f"{module}.__all__ names what it lacks: {absent}"
