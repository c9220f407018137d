"""Shared helpers of the task generators: a reproducible RNG, list formatting, data loading.

Why a home-made RNG wrapper: `random.Random.random()` is the one part of Python's
`random` module whose sequence is guaranteed across versions (for the same integer
seed); `randrange`, `shuffle` and `sample` have changed their algorithms before. Every
draw here is built on `random()` only, so a seed gives the same samples on every
machine and Python version.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from functools import lru_cache
from importlib import resources
from typing import Any, Sequence, TypeVar

from parallelbench.tasks.base import GeneratorParams, Message, Task

T = TypeVar("T")

DEFAULT_SEED = 2025  # every built-in task's default seed; streams are keyed by task id too


class StableRng:
    """Seeded draws that reproduce across machines and Python versions (see module doc)."""

    def __init__(self, *key: Any) -> None:
        digest = hashlib.sha256(repr(key).encode("utf-8")).digest()
        self._rng = random.Random(int.from_bytes(digest[:8], "big"))

    def below(self, n: int) -> int:
        """A uniform integer in [0, n)."""
        if n <= 0:
            raise ValueError(f"cannot draw below {n}")
        return min(int(self._rng.random() * n), n - 1)

    def between(self, lo: int, hi: int) -> int:
        """A uniform integer in [lo, hi] (both ends included)."""
        return lo + self.below(hi - lo + 1)

    def choice(self, items: Sequence[T]) -> T:
        return items[self.below(len(items))]

    def shuffled(self, items: Sequence[T]) -> list[T]:
        """A uniformly random permutation (Fisher-Yates)."""
        out = list(items)
        for i in range(len(out) - 1, 0, -1):
            j = self.below(i + 1)
            out[i], out[j] = out[j], out[i]
        return out

    def sample(self, items: Sequence[T], k: int) -> list[T]:
        """k distinct items in random order (partial Fisher-Yates)."""
        pool = list(items)
        if k > len(pool):
            raise ValueError(f"cannot draw {k} distinct items from {len(pool)}")
        for i in range(k):
            j = i + self.below(len(pool) - i)
            pool[i], pool[j] = pool[j], pool[i]
        return pool[:k]


def sample_rng(task: Task) -> StableRng:
    """The stream that makes a task's test samples."""
    return StableRng(task.id, task.params.seed, "test")


def example_rng(task: Task) -> StableRng:
    """A separate stream for one-shot examples, so examples never share draws with tests."""
    return StableRng(task.id, task.params.seed, "example")


def format_list(items: Sequence[str]) -> str:
    """`["Susan Fox", "Philip Gray"]`: JSON-style quotes, `", "` separators."""
    return "[" + ", ".join(json.dumps(x, ensure_ascii=False) for x in items) + "]"


def mask_layout(n_items: int) -> str:
    """The infilling layout of an n-item list answer: formatting given, items masked."""
    return format_list(["[MASK]"] * n_items)


def length_plan(params: GeneratorParams, limit: int | None) -> list[int]:
    """The list length of each sample: `samples_per_length` per length, cut at `num_samples`."""
    plan = [n for n in params.lengths for _ in range(params.samples_per_length)][: params.num_samples]
    return plan if limit is None else plan[: max(limit, 0)]


def one_shot(example_prompt: str, example_answer: str, prompt: str) -> list[Message]:
    return [
        {"role": "user", "content": example_prompt},
        {"role": "assistant", "content": example_answer},
        {"role": "user", "content": prompt},
    ]


def zero_shot(prompt: str) -> list[Message]:
    return [{"role": "user", "content": prompt}]


def with_params(task: Task, suffix: str | None = None, **changes: Any) -> Task:
    """A copy of `task` with changed generator parameters (n_min, n_max, seed, ...).

    The copy gets a new id (`<id>_<suffix>`, by default built from the changes) so its
    samples never collide with the registered task's in a results store; it is not
    registered. `valid_answers(sample)` still works for its samples (answers are
    derived from sample data).
    """
    fields = {f.name for f in dataclasses.fields(GeneratorParams)}
    extra = dict(task.params.extra)
    direct = {}
    for key, value in changes.items():
        if value is None:
            continue
        if key in fields and key != "extra":
            if getattr(task.params, key) != value:
                direct[key] = value
        else:
            extra[key] = value
    if not direct and extra == task.params.extra:
        return task
    params = dataclasses.replace(task.params, extra=extra, **direct)
    if "n_min" in direct and "n_max" not in direct and params.n_max < params.n_min:
        params = dataclasses.replace(params, n_max=params.n_min)
    if params.n_min > params.n_max:
        raise ValueError(f"n_min {params.n_min} is above n_max {params.n_max}; give a valid range")
    if (task.scorer == "list_shuffle" or task.id.endswith("shuffle-cot")) and params.n_min < 2:
        # a one-item list has no order that differs from the input, so no answer would be correct
        raise ValueError(f"{task.id} needs lists of at least 2 items (n_min {params.n_min}); use --n-min 2 or more")
    if task.category == "structured":
        from parallelbench.tasks._records import check_field_range

        check_field_range(params.n_min, params.n_max)
    if "num_samples" in direct and "samples_per_length" not in direct:
        per = -(-params.num_samples // len(params.lengths))
        params = dataclasses.replace(params, samples_per_length=per)
    elif "num_samples" not in direct and ("n_min" in direct or "n_max" in direct or "samples_per_length" in direct):
        params = dataclasses.replace(params, num_samples=params.samples_per_length * len(params.lengths))
    if suffix is None:
        parts = [f"n{params.n_min}-{params.n_max}", f"s{params.seed}", f"x{params.num_samples}"]
        parts += [f"{k}{v}" for k, v in sorted(extra.items()) if task.params.extra.get(k) != v]
        suffix = "_".join(parts)
    return dataclasses.replace(task, id=f"{task.id}_{suffix}", params=params, in_paper=False)


# ---- owned data files (tasks/data/) -------------------------------------------------


def _data_text(name: str) -> str:
    try:
        return resources.files("parallelbench.tasks").joinpath("data", name).read_text(encoding="utf-8")
    except FileNotFoundError as exc:  # pragma: no cover - packaging error
        raise FileNotFoundError(
            f"task data file tasks/data/{name} is missing from the installed package; "
            "reinstall parallelbench (pip install -e .)"
        ) from exc


@lru_cache(maxsize=None)
def load_json(name: str) -> Any:
    return json.loads(_data_text(name))


@lru_cache(maxsize=None)
def load_jsonl(name: str) -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(line) for line in _data_text(name).splitlines() if line.strip())
