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
from typing import Any, Callable

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


class UserCodeError(ImportError):
    """A named user module or name that cannot be used; the message is one line for the user."""


def short_error(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    text = text if len(text) <= 200 else text[:197] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def import_named_module(module_name: str, what: str) -> ModuleType:
    """`import_user_module`, or one `UserCodeError` line that says which of two things went wrong:
    no such module, or the module was found and failing while it was imported."""
    try:
        return import_user_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise UserCodeError(
                f"{what}: no module named {module_name!r} in {user_dir()} or among the installed packages; run from "
                f"the folder that holds {module_name.split('.')[0]}.py, or install it"
            ) from None
        raise UserCodeError(f"{what}: importing {module_name} failed ({short_error(exc)})") from None
    except Exception as exc:  # noqa: BLE001 - the user's module: any error on import becomes one line
        raise UserCodeError(f"{what}: importing {module_name} failed ({short_error(exc)})") from None


def load_named(path: str, what: str, kind: str, fits: Callable[[Any], bool]) -> Any:
    """The object behind "module:NAME"; a missing module and a missing NAME are different lines.

    A missing NAME lists what the module defines that `fits` (e.g. its Strategy classes), `kind`
    naming them in the message ("Strategy classes", "functions").
    """
    module_name, _, attr = path.rpartition(":")
    module = import_named_module(module_name, what)
    if not hasattr(module, attr):
        found = sorted(k for k, v in vars(module).items()
                       if not k.startswith("_") and getattr(v, "__module__", module_name) == module_name and fits(v))
        where = getattr(module, "__file__", None)
        shown = f"module {module_name} ({where})" if where else f"module {module_name}"
        have = f"; its {kind}: {', '.join(found)}" if found else f"; it defines no {kind}"
        raise UserCodeError(f"{what}: {shown} has no {attr!r}{have}")
    return getattr(module, attr)


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
