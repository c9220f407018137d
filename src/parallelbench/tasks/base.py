"""The sample and task records every other part of ParallelBench speaks.

A `Sample` is self-contained: it carries its prompt (plain and chat form), one
reference answer, the name of its scorer and every datum that scorer needs, so
an exported or imported JSONL line can be scored with no registry at hand.
A `Task` knows how to generate its samples deterministically from a seed.
This module imports nothing of the project: scorers, models and the registry
(`registry.py`) all read these records without an import circle.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

Message = dict[str, str]  # {"role": "user" | "assistant" | "system", "content": str}


@dataclass
class Sample:
    """One benchmark item, JSON-serialisable through `to_dict` / `from_dict`."""

    id: str  # stable, e.g. "waiting_line/shuffle/17"
    task: str  # task id, e.g. "waiting_line/shuffle"
    prompt: str  # the filled prompt of this item alone (no one-shot example)
    messages: list[Message]  # chat form, one-shot example turns included
    answer: str  # one correct answer as text
    scorer: str  # key into parallelbench.scoring's registry
    data: dict[str, Any] = field(default_factory=dict)  # everything the scorer needs
    # Infilling form: the answer's layout with "[MASK]" where items go, when the task has one.
    output_format: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Sample":
        names = {f.name for f in dataclasses.fields(cls)}
        missing = {"id", "task", "prompt", "messages", "answer", "scorer"} - d.keys()
        if missing:
            raise ValueError(
                f"sample line lacks {sorted(missing)}; expected the fields of "
                "`parallelbench tasks export` output"
            )
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass(frozen=True)
class GeneratorParams:
    """How many samples to make and from which seed; `n` is the list length or word count."""

    n_min: int
    n_max: int
    samples_per_length: int
    num_samples: int
    seed: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def lengths(self) -> list[int]:
        return list(range(self.n_min, self.n_max + 1))


@dataclass(frozen=True)
class Task:
    """A task: wording, shots, generation budget, scorer and generator (built in, or your own:
    `--tasks module:NAME` loads it, see docs/architecture.md). The fields in the order of the
    public contract: `Task(id, category, prompt_template, shots, max_new_tokens, scorer, params,
    generate, valid_answers, in_paper, description)`."""

    id: str
    category: str  # "waiting_line" | "text_writing" | "puzzle" | "synthetic", or any name of your own
    prompt_template: str
    shots: int  # 1 for Waiting Line and Puzzles, 0 for Text Writing
    max_new_tokens: int  # 32 for Waiting Line, 64 for Text Writing and Puzzles
    scorer: str
    params: GeneratorParams
    # (task, limit) -> samples; deterministic in task.params.seed
    generate: Callable[["Task", int | None], list[Sample]]
    # Finite set of valid answers of a sample (text), or None when not enumerable.
    valid_answers: Callable[[Sample], list[str] | None] | None = None
    in_paper: bool = False  # one of the 17 tasks of the paper's benchmark
    description: str = ""

    def samples(self, limit: int | None = None) -> list[Sample]:
        return self.generate(self, limit)
