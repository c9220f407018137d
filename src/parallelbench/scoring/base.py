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
# "default": valid solutions of the prompt as written; "paper": the paper metric's behaviour
# exactly, so a published number can be recomputed (docs/scoring.md lists where they differ).
SCORING_MODES: tuple[str, ...] = ("default", "paper")
_PAPER_SCORERS: dict[str, Scorer] = {}  # a scorer's paper-mode variant, where it has one


_VERSIONS: dict[str, str] = {}  # explicit versions given at registration (part of a row's scoring provenance)


def check_mode(mode: str) -> str:
    """`mode` itself, or a ValueError naming the valid modes."""
    if mode not in SCORING_MODES:
        raise ValueError(f"unknown scoring mode {mode!r}; valid: {', '.join(SCORING_MODES)}")
    return mode


def register_scorer(name: str, *, mode: str = "default", version: str | None = None) -> Callable[[Scorer], Scorer]:
    """Register `fn` as scorer `name`; ``mode="paper"`` registers its paper-mode variant
    (a scorer without one scores the same in both modes). `version` (optional) is recorded
    with every row it scores: bump it when the rules change in code the runner cannot see."""
    table = _PAPER_SCORERS if check_mode(mode) == "paper" else _SCORERS

    def deco(fn: Scorer) -> Scorer:
        table[name] = fn
        if table is _SCORERS:  # a new default scorer replaces the old one in both modes
            _PAPER_SCORERS.pop(name, None)
            if version is None:
                _VERSIONS.pop(name, None)
            else:
                _VERSIONS[name] = str(version)
        return fn

    return deco


def scorer_version(name: str) -> str | None:
    """The explicit version `name` was registered with, or None."""
    return _VERSIONS.get(name)


def get_scorer(name: str, mode: str = "default") -> Scorer:
    from parallelbench.scoring import builtin  # noqa: F401, PLC0415  (registers the built-in scorers once)

    check_mode(mode)
    if name not in _SCORERS:
        raise KeyError(f"unknown scorer {name!r}; known: {', '.join(sorted(_SCORERS))}")
    return _PAPER_SCORERS.get(name, _SCORERS[name]) if mode == "paper" else _SCORERS[name]


def score(sample: "Sample", output: str, *, mode: str = "default") -> Scores:
    """Score one output against its sample with the sample's own scorer, in `mode`."""
    return get_scorer(sample.scorer, mode)(sample, output)
