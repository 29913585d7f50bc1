"""Imports run one way: no module of specux (nor of kernelkit or vidmag, checked here too since they share the
rule) imports, at module level, a module that imports it back, directly or through others.

A circle works until someone imports the modules in another order; then a name is missing half-way through an
import. The graph is read from the source (``ast``), module-level statements only (an import inside a
function runs later, when both modules are complete, and is how a lower module reaches a higher one at call
time). ``from pkg import sub`` depends on ``pkg.sub`` only when ``sub`` is a module (the package's
``__init__`` is then run first, but that is Python's order, not a circle of ours).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "specux": ROOT / "specux" / "src" / "specux",
    "kernelkit": ROOT / "kernelkit" / "src" / "kernelkit",
    "vidmag": ROOT / "vidmag" / "src" / "vidmag",
}


def _modules(root: Path) -> dict[str, Path]:
    out = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Module-level statements, looking into ``if`` / ``try`` (not into functions or classes)."""
    out: list[ast.stmt] = []
    for node in body:
        if isinstance(node, ast.If):
            out += _top_level(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            out += _top_level(node.body + node.orelse + node.finalbody)
        else:
            out.append(node)
    return out


def import_graph(package: str, root: Path) -> dict[str, set[str]]:
    """Each module of ``package`` -> the modules of ``package`` it imports at module level."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        deps: set[str] = set()
        for node in _top_level(ast.parse(path.read_text(encoding="utf-8")).body):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = name.split(".") if is_package else name.split(".")[:-1]
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join([*parts, base] if base else parts)
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
                deps |= set(subs)
                if len(subs) < len(node.names):
                    deps.add(base)
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
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
    return found


def test_the_finder_sees_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_import_circle(package: str) -> None:
    graph = import_graph(package, PACKAGES[package])
    assert len(graph) > 10  # the walk found the package's modules
    assert circles(graph) == []


# --- layers: torch/ never imports the public fronts; the cpu backend loads no torch -------------------------


def _imported(path: Path, name: str, *, top_level_only: bool) -> set[str]:
    """Every module ``path`` (module ``name`` of specux) imports, as absolute names; with ``top_level_only``,
    the module-level statements only, else every import anywhere (a function's import runs too, later).
    ``from pkg import sub`` counts as ``pkg.sub`` as well as ``pkg``, so ``from specux import ops`` is
    seen."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = _top_level(tree.body) if top_level_only else list(ast.walk(tree))
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".") if is_package else name.split(".")[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}
    return out


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def fronts_imported(root: Path, package: str) -> dict[str, set[str]]:
    """Modules of ``package`` under ``root`` -> the ``specux.ops`` modules they import (anywhere)."""
    found = {}
    for name, path in _modules(root).items():
        if _within(name, package):
            hits = {m for m in _imported(path, name, top_level_only=False) if _within(m, "specux.ops")}
            if hits:
                found[name] = hits
    return found


def test_the_layer_check_sees_a_front_import(tmp_path: Path) -> None:
    pkg = tmp_path / "specux" / "torch"
    pkg.mkdir(parents=True)
    (tmp_path / "specux" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from specux.ops.stft import stft\n")
    (pkg / "b.py").write_text("from specux import ops\n")
    (pkg / "c.py").write_text("from specux._backends.cpu.stft import _stft_numpy\n")
    found = fronts_imported(tmp_path / "specux", "specux.torch")
    assert set(found) == {"specux.torch.a", "specux.torch.b"}


def test_torch_never_imports_the_public_fronts() -> None:
    # DESIGN.md: torch/ calls the backends' kernels and adjoints (specux._backends.cpu: the chroma ops'
    # tuning estimate too) and the validation of specux._spec, never specux.ops, not even inside a function
    assert fronts_imported(PACKAGES["specux"], "specux.torch") == {}


def test_the_cpu_backend_imports_no_torch_at_module_level() -> None:
    root = PACKAGES["specux"]
    modules = {n: p for n, p in _modules(root).items() if _within(n, "specux._backends.cpu")}
    assert len(modules) > 5  # the package and its kernel / adjoint modules
    direct = {
        name: hits
        for name, path in modules.items()
        if (hits := {m for m in _imported(path, name, top_level_only=True) if _within(m, "torch")})
    }
    assert direct == {}
    # nor through anything they import: a fresh interpreter loads every module and no torch
    code = "; ".join(
        [
            "import importlib, sys",
            f"[importlib.import_module(m) for m in {sorted(modules)!r}]",
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))",
        ]
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root.parent), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == "[]"
