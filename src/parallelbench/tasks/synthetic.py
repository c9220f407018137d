"""Synthetic list operations of section 4: copy, replace index / random, shuffle over letters.

Items are distinct letter labels (`["A", "B", "C"]`; past 25 items two-letter labels
AA, AB, ... join the pool), the new item of a replacement is a label not in the list.
Shuffle here accepts every permutation, identity included: the paper's theory counts
all n! outcomes. `synthetic_infill/<op>` is the same task with `output_format` set to
the answer's layout (`["[MASK]", "[MASK]"]`), so only the items are generated.
"""

from __future__ import annotations

import string
from functools import partial
from itertools import product
from typing import Sequence

from parallelbench.tasks._answers import valid_answers_from_data
from parallelbench.tasks._common import DEFAULT_SEED, StableRng, with_params
from parallelbench.tasks._listops import SCORER_OF, generate_list_samples
from parallelbench.tasks.base import GeneratorParams, Task

LABELS = tuple(string.ascii_uppercase) + tuple(a + b for a, b in product(string.ascii_uppercase, repeat=2))
MAX_N = len(LABELS) - 1  # one label stays free for the replacement item

PROMPTS = {
    "copy": "Copy the following list exactly and provide only the final list:\n{context}\n",
    "replace_index": 'Replace the item at position {index} with "{word}" in the following list '
    "and provide only the final list:\n{context}\n",
    "replace_random": 'Replace one random item with "{word}" in the following list '
    "and provide only the final list:\n{context}\n",
    "shuffle": "Randomly shuffle the following list and provide only the final list:\n{context}\n",
}
OPS = tuple(PROMPTS)
DEFAULT_N = (3, 10)
DEFAULT_PER_LENGTH = 25
DEFAULT_MAX_NEW_TOKENS = 32


def _pool(n: int) -> Sequence[str]:
    if n > MAX_N:
        raise ValueError(f"synthetic lists hold at most {MAX_N} items, got n = {n}; use a smaller n")
    return LABELS[: max(26, n + 1)]


def draw_letters(rng: StableRng, n: int) -> list[str]:
    return rng.sample(_pool(n), n)


def draw_new_letter(rng: StableRng, items: Sequence[str]) -> str:
    taken = set(items)
    return rng.choice([x for x in _pool(len(items)) if x not in taken])


def _generate(task: Task, limit: int | None, *, op: str, infill: bool):
    return generate_list_samples(
        task, limit, op=op, draw_items=draw_letters, draw_word=draw_new_letter, must_differ=False, infill=infill
    )


def _make(op: str, infill: bool) -> Task:
    if op not in PROMPTS:
        raise ValueError(f"unknown synthetic operation {op!r}; choose one of {', '.join(OPS)}")
    lo, hi = DEFAULT_N
    prefix = "synthetic_infill" if infill else "synthetic"
    return Task(
        id=f"{prefix}/{op}",
        category="synthetic",
        prompt_template=PROMPTS[op],
        shots=1,
        max_new_tokens=DEFAULT_MAX_NEW_TOKENS,
        scorer=SCORER_OF[op],
        params=GeneratorParams(lo, hi, DEFAULT_PER_LENGTH, DEFAULT_PER_LENGTH * (hi - lo + 1), DEFAULT_SEED),
        generate=partial(_generate, op=op, infill=infill),
        description=f"Synthetic {op.replace('_', ' ')} over letters (section 4)"
        + ("; infilling form: formatting given, items masked." if infill else "."),
        valid_answers=valid_answers_from_data,
    )


def synthetic_task(
    op: str,
    n_min: int | None = None,
    n_max: int | None = None,
    num_samples: int | None = None,
    seed: int = DEFAULT_SEED,
    infill: bool = False,
) -> Task:
    """A synthetic task for any n range (not registered; its id names the range and seed).

    Without n the default range 3..10 is used; with only `n_min`, that single length.
    `num_samples` defaults to 25 per length; `max_new_tokens` grows with n (4 per item
    plus 8) once the default 32 is too short.
    """
    if n_min is None:
        n_min, n_max = DEFAULT_N if n_max is None else (DEFAULT_N[0], n_max)
    n_max = n_min if n_max is None else n_max
    if not 1 <= n_min <= n_max <= MAX_N:
        raise ValueError(f"need 1 <= n_min <= n_max <= {MAX_N}, got n_min={n_min}, n_max={n_max}")
    base = _make(op, infill)
    if num_samples is None:
        num_samples = DEFAULT_PER_LENGTH * (n_max - n_min + 1)
    task = with_params(base, n_min=n_min, n_max=n_max, num_samples=num_samples, seed=seed)
    if task is base:
        return base
    import dataclasses

    return dataclasses.replace(task, max_new_tokens=max(DEFAULT_MAX_NEW_TOKENS, 4 * n_max + 8))


TASKS = tuple(_make(op, infill=infill) for infill in (False, True) for op in OPS)  # registered by `tasks/builtin.py`
