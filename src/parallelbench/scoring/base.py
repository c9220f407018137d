"""The score record and the scorer registry.

A scorer is a pure function ``(sample, output_text) -> Scores``. It never raises
on any output string: a malformed answer scores 0, it is not an error. The
package (`parallelbench/scoring/__init__.py`) registers the built-in scorers on
import, so this module never imports them (no import circle).

Scorers from your own module (`@register_scorer("name")` anywhere outside this
package) are held to the same contract: one that raises, or returns something that
is not a `Scores` in [0, 1], scores 0 for that output with the error kept in
``meta["error"]``, and the run goes on. A built-in scorer's name cannot be taken.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from parallelbench.tasks.base import Sample


@dataclass
class Scores:
    score: float  # the task's headline score in [0, 1]
    components: dict[str, float] = field(default_factory=dict)  # every named score in [0, 1]
    meta: dict[str, str] = field(default_factory=dict)  # backends and their versions

    def flat(self) -> dict[str, float | str]:
        return {"score": self.score, **self.components, **{f"meta.{k}": v for k, v in self.meta.items()}}


Scorer = Callable[["Sample", str], Scores]
_SCORERS: dict[str, Scorer] = {}
# "default": valid solutions of the prompt as written; "paper": the paper metric's behaviour
# exactly, so a published number can be recomputed (docs/scoring.md lists where they differ).
SCORING_MODES: tuple[str, ...] = ("default", "paper")
_PAPER_SCORERS: dict[str, Scorer] = {}  # a scorer's paper-mode variant, where it has one
_VERSIONS: dict[str, str] = {}  # explicit versions given at registration (part of a row's scoring provenance)
_PACKAGE = "parallelbench."


def _is_builtin(fn: Any) -> bool:
    return str(getattr(fn, "__module__", "")).startswith(_PACKAGE)


def check_mode(mode: str) -> str:
    """`mode` itself, or a ValueError naming the valid modes."""
    if mode not in SCORING_MODES:
        raise ValueError(f"unknown scoring mode {mode!r}; valid: {', '.join(SCORING_MODES)}")
    return mode


def register_scorer(name: str, *, mode: str = "default", version: str | None = None) -> Callable[[Scorer], Scorer]:
    """Decorator: make ``fn`` the scorer that samples naming ``name`` are scored with.

    ``mode="paper"`` registers its paper-mode variant (a scorer without one scores the same in
    both modes). `version` (optional) is recorded with every row it scores: bump it when the
    rules change in code the runner cannot see. Returns ``fn`` unchanged; a scorer from outside
    the package is registered behind the never-raise guard (`guarded`) and cannot take a
    built-in scorer's name.
    """
    table = _PAPER_SCORERS if check_mode(mode) == "paper" else _SCORERS

    def deco(fn: Scorer) -> Scorer:
        if _is_builtin(fn):
            table[name] = fn
        else:
            taken = _SCORERS.get(name)
            if taken is not None and _is_builtin(taken):
                raise ValueError(f"scorer name {name!r} belongs to a built-in scorer; register yours under another name")
            table[name] = guarded(name, fn)
        if table is _SCORERS:  # a new default scorer replaces the old one in both modes
            _PAPER_SCORERS.pop(name, None)
            if version is None:
                _VERSIONS.pop(name, None)
            else:
                _VERSIONS[name] = str(version)
        return fn

    return deco


def guarded(name: str, fn: Scorer) -> Scorer:
    """``fn`` held to the scorer contract: any exception or malformed result scores 0 with the reason."""

    @functools.wraps(fn)
    def scorer(sample: "Sample", output: str) -> Scores:
        try:
            result = fn(sample, output)
        except Exception as exc:  # noqa: BLE001 - the contract: a scorer never stops a run
            return _failed(name, f"raised {_one_line(exc)}")
        problem = _malformed(result)
        if problem:
            return _failed(name, problem)
        return Scores(float(result.score), {str(k): float(v) for k, v in result.components.items()},
                      {str(k): str(v) for k, v in result.meta.items()})

    return scorer


def _failed(name: str, why: str) -> Scores:
    return Scores(score=0.0, components={}, meta={"error": f"scorer {name!r} {why}"})


def _in_unit(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and 0 <= value <= 1


def _malformed(result: Any) -> str | None:
    if not isinstance(result, Scores):
        return f"returned {type(result).__name__} ({str(result)[:60]}), not parallelbench.scoring.Scores"
    if not _in_unit(result.score):
        return f"returned score {result.score!r}, not a number in [0, 1]"
    if not isinstance(result.components, dict) or not isinstance(result.meta, dict):
        return "returned Scores whose components or meta is not a dict"
    for key, value in result.components.items():
        if not _in_unit(value):
            return f"returned component {key}={value!r}, not a number in [0, 1]"
    return None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    text = text if len(text) <= 300 else text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def scorer_version(name: str) -> str | None:
    """The explicit version `name` was registered with, or None."""
    return _VERSIONS.get(name)


def get_scorer(name: str, mode: str = "default") -> Scorer:
    check_mode(mode)
    if name not in _SCORERS:
        raise KeyError(f"unknown scorer {name!r}; known: {', '.join(sorted(_SCORERS))}")
    return _PAPER_SCORERS.get(name, _SCORERS[name]) if mode == "paper" else _SCORERS[name]


def score(sample: "Sample", output: str, *, mode: str = "default") -> Scores:
    """Score one output against its sample with the sample's own scorer, in `mode`."""
    return get_scorer(sample.scorer, mode)(sample, output)
