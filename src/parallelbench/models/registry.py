"""Model specs -> loaded `BenchModel`s, imported lazily so a spec costs only what it uses.

Specs: ``tiny``, ``tiny-uniform`` (``tiny:<dir>`` / ``tiny-uniform:<dir>``: a folder written by
`parallelbench train` or `parallelbench finetune`), ``ideal``, ``hf:<path-or-hub-id>``, ``api:<name>``,
and ``py:<module>:<function>`` (a user factory returning a `BenchModel`; only this form
imports from the current directory, so a model under development needs no packaging, and a
stray file there never runs for the built-in models).
"""

from __future__ import annotations

import importlib
from typing import Any

from parallelbench.models.base import BenchModel

# spec (or prefix ending in ":") -> "module:function"; the function takes (argument, **options)
_LOADERS: dict[str, str] = {
    "tiny": "parallelbench.models.tiny:load",
    "tiny-uniform": "parallelbench.models.tiny:load_uniform",
    "tiny:": "parallelbench.models.tiny:load",
    "tiny-uniform:": "parallelbench.models.tiny:load_uniform",
    "ideal": "parallelbench.models.ideal:load",
    "hf:": "parallelbench.models.hf:load",
    "api:": "parallelbench.models.api:load",
    "py:": "parallelbench.models.registry:load_python",
}

VALID_FORMS = "tiny, tiny-uniform, tiny:<dir>, tiny-uniform:<dir>, ideal, hf:<path-or-hub-id>, api:<name>, py:<module>:<function>"


class ModelSpecError(ValueError):
    pass


def _loader_for(spec: str) -> tuple[str, str]:
    if spec in _LOADERS:
        return _LOADERS[spec], ""
    if ":" in spec:
        prefix, arg = spec.split(":", 1)
        target = _LOADERS.get(prefix + ":")
        if target and arg:
            return target, arg
    raise ModelSpecError(f"unknown model spec {spec!r}; valid forms: {VALID_FORMS}")


def check_spec(spec: str) -> None:
    """Raise `ModelSpecError` for a malformed spec without loading anything."""
    _loader_for(spec)
    if spec.startswith("py:") and ":" not in spec[3:]:
        raise ModelSpecError(f"model spec {spec!r} must look like py:<module>:<function>; valid forms: {VALID_FORMS}")


def load_python(arg: str, **options: Any) -> BenchModel:
    """``py:<module>:<function>``: call a user factory (with the options) that returns a BenchModel."""
    from parallelbench.userimport import import_user_module

    module_name, _, fn_name = arg.rpartition(":")
    if not module_name or not fn_name:
        raise ModelSpecError(f"model spec 'py:{arg}' must look like py:<module>:<function>; valid forms: {VALID_FORMS}")
    try:
        factory = getattr(import_user_module(module_name), fn_name)
    except (ImportError, AttributeError) as exc:
        raise ModelSpecError(f"model spec 'py:{arg}': cannot import {fn_name} from {module_name} ({exc})") from exc
    return factory(**options)


def load_model(spec: str, **options: Any) -> BenchModel:
    target, arg = _loader_for(spec)
    module_name, fn_name = target.split(":")
    try:
        module = importlib.import_module(module_name)
        fn = getattr(module, fn_name)
    except (ImportError, AttributeError) as exc:
        raise ModelSpecError(
            f"model spec {spec!r} is not available in this install ({exc}); "
            f"valid forms: {VALID_FORMS}"
        ) from exc
    return fn(arg, **options)
