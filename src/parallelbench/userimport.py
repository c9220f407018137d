"""Import user code only when a spec names it (`py:<module>:<function>`, `my_module:MyStrategy`).

Built-in models and strategies never import from the current directory, so a stray
`numpy.py` or `html.py` where a user runs `parallelbench` is never executed. A named user
module is imported with the user's directory first on `sys.path` for that import only.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from types import ModuleType
from typing import Any

_lock = threading.Lock()
_user_dir: str | None = None  # set on Ray workers: the driver's current directory


def set_user_dir(path: str | None) -> None:
    """Where user modules live (default: the current directory at import time)."""
    global _user_dir
    _user_dir = path


def user_dir() -> str:
    return _user_dir or os.getcwd()


def import_user_module(name: str) -> ModuleType:
    """`name` imported as the user asked for it: from the user's directory, else installed."""
    if name in sys.modules:
        return sys.modules[name]
    directory = user_dir()
    with _lock:
        added = directory not in sys.path
        if added:
            sys.path.insert(0, directory)
        try:
            return importlib.import_module(name)
        finally:
            if added:
                try:
                    sys.path.remove(directory)
                except ValueError:
                    pass


def load_user_attr(path: str) -> Any:
    """The object behind "module:attr" (raises ImportError or AttributeError)."""
    module_name, _, attr = path.rpartition(":")
    if not module_name or not attr:
        raise ImportError(f"{path!r} is not of the form module:name")
    return getattr(import_user_module(module_name), attr)


def drop_implicit_cwd() -> None:
    """Remove the current directory that `python -m`/`-c` put first on `sys.path`.

    Modules imported later (lazily) then come from the install, never from a file that
    happens to lie where the command runs; explicit PYTHONPATH entries are kept.
    """
    if sys.path and sys.path[0] in ("", os.getcwd()) and not getattr(sys.flags, "safe_path", False):
        del sys.path[0]
