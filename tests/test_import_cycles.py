"""No import circles in the package, of any length (issue 15 item 7, issue 28 item 6).

A static scan of every `import` / `from ... import` statement in src/parallelbench,
function-level and `if TYPE_CHECKING:` ones included, plus `importlib.import_module`
calls with a literal name. The modules form a directed graph; any strongly connected
component of more than one module is a circle (a -> b -> c -> a as much as a <-> b),
which the project's style rules out. The failure message shows one concrete circle per
component. (Importing `pkg.mod` also runs `pkg/__init__.py`; that implicit edge is not
counted: a package's `__init__` re-exporting its own modules is not a circle.)
"""

from __future__ import annotations

import ast
from collections import deque
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def _modules(src: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is_package) for every .py file under src/parallelbench."""
    out = {}
    for path in sorted((src / "parallelbench").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_pkg)
    return out


def _absolute(module: str, is_pkg: bool, level: int, name: str | None) -> str:
    """The absolute name of a (possibly relative) `from` import's module."""
    if not level:
        return name or ""
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _literal_import(node: ast.AST) -> str | None:
    """The module of `importlib.import_module("x")` / `import_module("x")` / `__import__("x")`."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    arg = node.args[0]
    if name in ("import_module", "__import__") and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    return None


def import_graph(src: Path = SRC) -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere in its body."""
    mods = _modules(src)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for module, (path, is_pkg) in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(module, is_pkg, node.level, node.module)
                # `from pkg import sub` imports the submodule; `from mod import name` the module
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                literal = _literal_import(node)
                targets = [literal] if literal else []
            graph[module].update(t for t in targets if t in mods and t != module)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def example_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One concrete circle through the component's first module (shortest, by BFS)."""
    members = set(component)
    start = component[0]
    parent: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(graph[node] & members):
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, node, start]
            if nxt not in parent:
                parent[nxt] = node
                queue.append(nxt)
    return component  # pragma: no cover - a component always holds a circle


def test_no_import_cycles_of_any_length():
    graph = import_graph()
    cycles = import_cycles(graph)
    shown = ["; ".join([" -> ".join(example_cycle(graph, c)), f"component: {', '.join(c)}"]) for c in cycles]
    assert not cycles, "import circles: " + " | ".join(shown)


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    pkg = tmp_path / "parallelbench"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, text in files.items():
        (pkg / f"{name}.py").write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    "a_src, b_src",
    [
        ("from parallelbench.b import x\n", "import parallelbench.a\n"),
        ("def f():\n    from parallelbench import b\n", "from . import a\n"),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import X\n", "from .a import Y\n"),
        ("import importlib\ndef f():\n    return importlib.import_module('parallelbench.b')\n", "from .a import Y\n"),
    ],
)
def test_scan_sees_top_level_function_level_relative_and_literal_imports(tmp_path, a_src, b_src):
    root = _package(tmp_path, {"a": a_src, "b": b_src, "c": "import parallelbench.a\n"})  # c -> a: one-way
    assert import_cycles(import_graph(root)) == [["parallelbench.a", "parallelbench.b"]]


def test_longer_circles_are_found_and_chains_are_not(tmp_path):
    root = _package(tmp_path, {
        "a": "from parallelbench import b\n",
        "b": "def f():\n    import parallelbench.c\n",
        "c": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from parallelbench.a import X\n",
        "d": "import parallelbench.a\n",  # into the circle, not part of it
        "e": "import parallelbench.d\n",
    })
    graph = import_graph(root)
    cycles = import_cycles(graph)
    assert cycles == [["parallelbench.a", "parallelbench.b", "parallelbench.c"]]
    assert example_cycle(graph, cycles[0]) == ["parallelbench.a", "parallelbench.b", "parallelbench.c", "parallelbench.a"]


def test_two_separate_circles_are_two_components(tmp_path):
    root = _package(tmp_path, {
        "a": "import parallelbench.b\n", "b": "import parallelbench.a\n",
        "c": "import parallelbench.d\n", "d": "import parallelbench.e\n", "e": "import parallelbench.c\n",
    })
    assert import_cycles(import_graph(root)) == [
        ["parallelbench.a", "parallelbench.b"], ["parallelbench.c", "parallelbench.d", "parallelbench.e"],
    ]
