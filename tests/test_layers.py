"""The package's floors: imports point down, no module depends on itself in a circle, and no
module writes into another's namespace.

``lint-imports`` checks the layers declared in ``pyproject.toml``. The cycle check parses
every module, imports inside functions included (only ``if TYPE_CHECKING:`` blocks are
left out), so a lazy import cannot hide a cycle.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "funcgrad"

def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports, anywhere in its body."""
    tree = ast.parse(path.read_text())
    hidden = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
              and getattr(block.test, "id", "") == "TYPE_CHECKING" for stmt in block.body for node in ast.walk(stmt)}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module or ""
            submodules = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
            out.update(submodules)
            if target in modules and len(submodules) < len(node.names):
                out.add(target)
    out.discard(name)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert _cycles(graph) == []


def test_the_cycle_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    modules = _modules()
    source = tmp_path / "probe.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import array\n"
                      "def f():\n    from .ops import creation\n")
    found = _imports("funcgrad.probe", source, modules)
    assert "funcgrad.ops.creation" in found  # imported inside a function
    assert "funcgrad.array" not in found  # only under TYPE_CHECKING
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _imports_inside_functions(path: Path) -> list[str]:
    """The funcgrad modules a file imports inside a function (relative or absolute)."""
    found = []
    for fn in ast.walk(ast.parse(path.read_text())):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if (isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("funcgrad"))) or (
                        isinstance(node, ast.Import) and any(a.name.startswith("funcgrad") for a in node.names)):
                    found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_imports_inside_functions_are_only_optional_dependencies(tmp_path: Path) -> None:
    """A lazy import of the package's own modules would hide an upward reach; only optional
    dependencies (CuPy, SciPy, scikit-learn, matplotlib) are imported where they are used."""
    assert [f for path in _modules().values() for f in _imports_inside_functions(path)] == []
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    import numpy\n    from .ops import creation\n")
    assert _imports_inside_functions(probe) == ["probe.py:3: from .ops import creation"]


def _module_aliases(name: str, path: Path, modules: dict[str, Path]) -> tuple[ast.Module, set[str]]:
    """The parsed module, and the names it binds to other modules of the package."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update(a.asname or a.name.split(".")[0] for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module or ""
            aliases.update(a.asname or a.name for a in node.names if f"{target}.{a.name}" in modules)
    return tree, aliases


def _foreign_assignments(name: str, path: Path, modules: dict[str, Path]) -> list[str]:
    """``other_module.x = ...`` (or ``setattr(other_module, ...)``) anywhere in a module."""
    tree, aliases = _module_aliases(name, path, modules)
    found = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setattr" and node.args:
            targets = [ast.Attribute(value=node.args[0], attr="?")]
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in aliases:
                found.append(f"{name}:{node.lineno}: {t.value.id}.{t.attr}")
    return found


def test_no_module_sets_another_modules_globals() -> None:
    """A floor that needs something from above gets it through the data it is handed (or
    a function of its own that the upper floor calls, ``array.provide``), never by the
    upper floor writing into its namespace."""
    modules = _modules()
    found = [f for name, path in modules.items() for f in _foreign_assignments(name, path, modules)]
    assert found == []


def test_the_assignment_check_sees_one(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text("from .primitives import core as _core\n_core._Array = object\n")
    modules = {"funcgrad.primitives.core": source, "funcgrad.mod": source}
    assert _foreign_assignments("funcgrad.mod", source, modules) == ["funcgrad.mod:2: _core._Array"]


def test_layers_point_down() -> None:
    """The import-linter contract in pyproject.toml (the floors of docs/architecture.md)."""
    lint = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(lint).exists():
        pytest.skip("import-linter is not installed (pip install 'funcgrad[test]')")
    result = subprocess.run([lint, "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_reverse_mode_does_not_import_the_compiler() -> None:
    """``fg.grad``'s and the tape's modules reach none of the compile pipeline (nor the IR it
    traces into): backward plans plug in from above (``autodiff.graph.use_backward_plans``)."""
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("funcgrad", exclude_type_checking_imports=True)
    pipeline = graph.find_children("funcgrad.transforms.compiler") | {"funcgrad.transforms.ir"}
    assert "funcgrad.transforms.compiler.plans" in pipeline
    for module in ("funcgrad.transforms.autodiff.interpreters", "funcgrad.transforms.autodiff.tape"):
        assert not graph.find_upstream_modules(module) & pipeline, module


def _private_names_crossing(path: Path) -> list[str]:
    """``from .x import _name`` and ``module._name`` of a funcgrad module: a private name used
    outside its own module (aliases made private here, ``import x as _x``, are not)."""
    tree = ast.parse(path.read_text())
    modules, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("funcgrad")):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{path.name}:{node.lineno}: {alias.name}")
                if alias.name.islower():
                    modules.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules \
                and node.attr.startswith("_") and not node.attr.startswith("__"):
            found.append(f"{path.name}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_private_name_crosses_modules() -> None:
    found = [f for path in sorted((ROOT / "funcgrad").rglob("*.py")) for f in _private_names_crossing(path)]
    assert found == []


def test_the_private_name_check_sees_one(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text("from .core import _REGISTRY\nfrom . import lax\nlax._NAMES\n")
    assert _private_names_crossing(source) == ["mod.py:1: _REGISTRY", "mod.py:3: lax._NAMES"]
