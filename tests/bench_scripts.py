"""A benchmarks/ script imported as a module, for the tests of the official-code verifications."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_script(name: str):
    """benchmarks/<name>.py as a module (its folder on sys.path for the shared parts it imports)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def opt_in(*names: str) -> tuple[str, ...] | None:
    """The values of the environment variables an opt-in comparison needs, or None when one is unset."""
    values = tuple(os.environ.get(n) or "" for n in names)
    return values if all(values) else None
