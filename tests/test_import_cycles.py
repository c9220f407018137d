"""No two modules of the package import each other (issue 15 item 7).

A static scan of every `import` / `from ... import` statement in src/parallelbench,
function-level and `if TYPE_CHECKING:` ones included: a pair of modules that name
each other is a circle of length two, which the project's style rules out.
"""

from __future__ import annotations

import ast
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
            graph[module].update(t for t in targets if t in mods and t != module)
    return graph


def two_cycles(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((a, b) for a in graph for b in graph[a] if a < b and a in graph[b])


def test_no_two_modules_import_each_other():
    cycles = two_cycles(import_graph())
    assert not cycles, "modules importing each other: " + "; ".join(f"{a} <-> {b}" for a, b in cycles)


@pytest.mark.parametrize(
    "a_src, b_src",
    [
        ("from parallelbench.b import x\n", "import parallelbench.a\n"),
        ("def f():\n    from parallelbench import b\n", "from . import a\n"),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import X\n", "from .a import Y\n"),
    ],
)
def test_scan_sees_top_level_function_level_and_relative_imports(tmp_path, a_src, b_src):
    pkg = tmp_path / "parallelbench"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(a_src)
    (pkg / "b.py").write_text(b_src)
    (pkg / "c.py").write_text("import parallelbench.a\n")  # one-way: not a cycle
    assert two_cycles(import_graph(tmp_path)) == [("parallelbench.a", "parallelbench.b")]
