"""The sample and task records every other part of ParallelBench speaks.

A `Sample` is self-contained: it carries its prompt (plain and chat form), one
reference answer, the name of its scorer and every datum that scorer needs, so
an exported or imported JSONL line can be scored with no registry at hand.
A `Task` knows how to generate its samples deterministically from a seed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

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
    """A registered task: wording, shots, generation budget, scorer and generator."""

    id: str
    category: str  # "waiting_line" | "text_writing" | "puzzle" | "synthetic"
    prompt_template: str
    shots: int  # 1 for Waiting Line and Puzzles, 0 for Text Writing
    max_new_tokens: int  # 32 for Waiting Line, 64 for Text Writing and Puzzles
    scorer: str
    params: GeneratorParams
    # (task, limit) -> samples; deterministic in task.params.seed
    generate: Callable[["Task", int | None], list[Sample]]
    description: str = ""
    # Finite set of valid answers of a sample (text), or None when not enumerable.
    valid_answers: Callable[[Sample], list[str] | None] | None = None
    in_paper: bool = False  # one of the 17 tasks of the paper's benchmark

    def samples(self, limit: int | None = None) -> list[Sample]:
        return self.generate(self, limit)


_REGISTRY: dict[str, Task] = {}
COT_SUFFIX = "-cot"  # `<task>-cot`: the chain-of-thought variant of a task (`tasks/cot.py`)


def register(task: Task) -> Task:
    if task.id in _REGISTRY:
        raise ValueError(f"task id {task.id!r} is registered twice")
    _REGISTRY[task.id] = task
    return task


def registry() -> dict[str, Task]:
    from parallelbench.tasks import builtin  # noqa: F401, PLC0415  (fills the registry once)

    return _REGISTRY


def get_task(task_id: str) -> Task:
    tasks = registry()
    if task_id not in tasks and task_id.endswith(COT_SUFFIX):
        have = [t for t in tasks if t.endswith(COT_SUFFIX)]
        raise KeyError(
            f"{task_id[: -len(COT_SUFFIX)]!r} has no chain-of-thought variant; CoT variants exist for: "
            f"{', '.join(have)}"
        )
    if task_id not in tasks:
        close = [t for t in tasks if task_id.split("/")[-1] in t][:5]
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise KeyError(
            f"unknown task {task_id!r}.{hint} Run `parallelbench tasks list` for every id."
        )
    return tasks[task_id]


def resolve_tasks(spec: str | Iterable[str]) -> list[Task]:
    """Task specs -> tasks, in order, without repeats.

    A spec item is a task id, "paper" (the 17 tasks of the paper), "cot" (every
    chain-of-thought variant, `<task>-cot`), or a family: an id
    prefix such as "waiting_line_n15" or a category such as "waiting_line". A family
    selects its paper tasks when it has any (so "waiting_line" is the paper's 10 tasks,
    not the n = 15 and n = 21..24 variants) and all of its tasks otherwise.
    """
    items = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s.strip()]
    if not items:
        raise KeyError("no task given; name task ids, a family such as waiting_line, or paper")
    tasks = registry()
    out: list[Task] = []
    for item in items:
        if item == "paper":
            out += [t for t in tasks.values() if t.in_paper]
        elif item == "cot":
            out += [t for t in tasks.values() if t.id.endswith(COT_SUFFIX)]
        elif item in tasks:
            out.append(tasks[item])
        else:
            family = [t for t in tasks.values() if t.id.startswith(item.rstrip("/") + "/")]
            family = family or [t for t in tasks.values() if t.category == item]
            if not family:
                out.append(get_task(item))  # raises with a hint
            paper = [t for t in family if t.in_paper]
            out += paper or family
    seen: dict[str, Task] = {}
    for t in out:
        seen.setdefault(t.id, t)
    return list(seen.values())
