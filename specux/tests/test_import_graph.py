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
