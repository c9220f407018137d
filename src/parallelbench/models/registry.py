"""Model specs -> loaded `BenchModel`s, imported lazily so a spec costs only what it uses.

Specs: ``tiny``, ``tiny-uniform`` (``tiny:<dir>`` / ``tiny-uniform:<dir>``: a folder written by
`parallelbench train` or `parallelbench finetune`), ``ideal``, ``hf:<path-or-hub-id>``, ``api:<name>``,
and ``py:<module>:<function>`` (a user factory returning a `BenchModel`; only this form
imports from the current directory, so a model under development needs no packaging, and a
stray file there never runs for the built-in models).
"""

from __future__ import annotations

import importlib
import inspect
import typing
from typing import Any, Callable

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

# spec (or prefix ending in ":") -> "module:NAME" of the loader's declared options, a dict
# {option: True if it can change outputs}. Output-neutral options (device, batch size, threads,
# timeouts...) are left out of a row's provenance; the others are part of it. `py:` factories
# declare theirs by their signature (a factory with **kwargs accepts any option).
_OPTIONS: dict[str, str] = {
    "tiny": "parallelbench.models.tiny:TINY_OPTIONS",
    "tiny:": "parallelbench.models.tiny:TINY_OPTIONS",
    "tiny-uniform": "parallelbench.models.tiny:UNIFORM_OPTIONS",
    "tiny-uniform:": "parallelbench.models.tiny:UNIFORM_OPTIONS",
    "ideal": "parallelbench.models.ideal:OPTIONS",
    "hf:": "parallelbench.models.hf.options:OPTIONS",
    "api:": "parallelbench.models.api.options:OPTIONS",
}

# the model families whose loader has a compile path (model option compile=true; hf: checkpoints)
COMPILE_FAMILIES = "LLaDA, LLaDA-MoE, Dream / DiffuCoder, SDAR / TraDo and LLaDA 2.x, through the native implementation"


def compile_refusal(name: str, what: str) -> str:
    """The one line for compile=true given to a model without a compile path (`what` says what it
    is), naming the families that have one: the registry's check and the hf: loader both say it."""
    return (f"model {name!r}: option compile=true has a compile path only for {COMPILE_FAMILIES} "
            f"(hf:<checkpoint>); this is {what}: drop compile=true")


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


def python_factory(arg: str) -> Callable[..., BenchModel]:
    """The user factory behind ``py:<module>:<function>`` (imported, not called).

    A missing module and a module without that function are different lines."""
    from parallelbench.userimport import UserCodeError, load_named

    module_name, _, fn_name = arg.rpartition(":")
    if not module_name or not fn_name:
        raise ModelSpecError(f"model spec 'py:{arg}' must look like py:<module>:<function>; valid forms: {VALID_FORMS}")
    try:
        factory = load_named(arg, f"model spec 'py:{arg}'", "functions", inspect.isfunction)
    except UserCodeError as exc:
        raise ModelSpecError(str(exc)) from None
    if not callable(factory):
        raise ModelSpecError(f"model spec 'py:{arg}': {fn_name} in {module_name} is a {type(factory).__name__}, "
                             "not a function returning a model")
    return factory


def factory_options(arg: str, options: dict[str, Any]) -> dict[str, Any]:
    """A `py:` factory's options as its type hints declare them (int, float, bool, str, Literal,
    Optional), so `--model-opt dim=8` reaches `def make(dim: int)` as 8 and `dim=abc` is one line
    naming the option, the factory and what fits. Unannotated parameters take the value as given."""
    from parallelbench.typed_options import coerce, describe

    factory = python_factory(arg)
    try:
        hints = typing.get_type_hints(factory)
    except Exception:  # noqa: BLE001 - a hint that does not resolve: read it as written
        hints = {name: p.annotation for name, p in _signature(factory).items() if p.annotation is not p.empty}
    out = {}
    for name, value in options.items():
        hint = hints.get(name)
        if hint is None:
            out[name] = value
            continue
        try:
            out[name] = coerce(name, hint, value)
        except ValueError:
            raise ModelSpecError(
                f"model 'py:{arg}': option {name}={value!r} does not fit {factory.__name__}({name}: "
                f"{inspect.formatannotation(hint)}); give {describe(hint)}"
            ) from None
    return out


def _signature(factory: Callable) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(factory).parameters)
    except (TypeError, ValueError):  # a compiled factory without a signature
        return {}


def load_python(arg: str, **options: Any) -> BenchModel:
    """``py:<module>:<function>``: call a user factory (with the options) that returns a BenchModel."""
    return python_factory(arg)(**factory_options(arg, options))


def declared_options(spec: str) -> dict[str, bool] | None:
    """{option: can it change outputs} that the spec's loader accepts; None when it accepts any
    (a `py:` factory with **kwargs) or when this install cannot tell (its loader is missing)."""
    _, arg = _loader_for(spec)
    if spec.startswith("py:"):
        factory = python_factory(arg)  # a missing module or function is a ModelSpecError line
        try:
            params = inspect.signature(factory).parameters.values()
        except (TypeError, ValueError):  # a compiled factory without a signature: cannot tell
            return None
        if any(p.kind is p.VAR_KEYWORD for p in params):
            return None
        return {p.name: True for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    where = _OPTIONS.get(spec) or _OPTIONS.get(spec.split(":", 1)[0] + ":")
    if where is None:
        return None
    module_name, name = where.split(":")
    try:
        return dict(getattr(importlib.import_module(module_name), name))
    except (ImportError, AttributeError):  # e.g. the api extra is not installed: the loader will say
        return None


def check_options(spec: str, options: dict[str, Any]) -> None:
    """One `ModelSpecError` line naming unknown options and the valid ones, before anything loads."""
    declared = declared_options(spec)
    unknown = sorted(set(options) - set(declared)) if declared is not None else []
    if "compile" in unknown:  # a user after speed: say where compile=true works, not only that it is unknown here
        raise ModelSpecError(compile_refusal(spec, "a model without one"))
    if unknown:
        valid = ", ".join(sorted(declared)) or "none (it takes no options)"
        kind = spec.split(":", 1)[0]
        raise ModelSpecError(f"unknown {kind} model option(s) {', '.join(unknown)} for model {spec!r}; valid: {valid}")
    if spec.startswith("py:"):
        factory_options(spec[3:], options)  # values against the factory's type hints, before it runs


def output_options(spec: str, options: dict[str, Any]) -> dict[str, Any]:
    """The given options that can change outputs (all of them where the loader does not say)."""
    declared = declared_options(spec) or {}
    return {k: v for k, v in sorted(options.items()) if declared.get(k, True)}


def load_model(spec: str, **options: Any) -> BenchModel:
    target, arg = _loader_for(spec)
    check_options(spec, options)
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
