"""The score record and the scorer registry.

A scorer is a pure function ``(sample, output_text) -> Scores``. It never raises
on any output string: a malformed answer scores 0, it is not an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

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


_VERSIONS: dict[str, str] = {}  # explicit versions given at registration (part of a row's scoring provenance)


def register_scorer(name: str, *, version: str | None = None) -> Callable[[Scorer], Scorer]:
    """Register a scorer under `name`. `version` (optional) is recorded with every row it scores:
    bump it when the rules change in code the runner cannot see (data files, other modules)."""
    def deco(fn: Scorer) -> Scorer:
        _SCORERS[name] = fn
        if version is None:
            _VERSIONS.pop(name, None)
        else:
            _VERSIONS[name] = str(version)
        return fn

    return deco


def scorer_version(name: str) -> str | None:
    """The explicit version `name` was registered with, or None."""
    return _VERSIONS.get(name)


def get_scorer(name: str) -> Scorer:
    from parallelbench.scoring import builtin  # noqa: F401, PLC0415  (registers the built-in scorers once)

    if name not in _SCORERS:
        raise KeyError(f"unknown scorer {name!r}; known: {', '.join(sorted(_SCORERS))}")
    return _SCORERS[name]


def score(sample: "Sample", output: str) -> Scores:
    """Score one output against its sample with the sample's own scorer."""
    return get_scorer(sample.scorer)(sample, output)
