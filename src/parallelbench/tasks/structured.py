"""Structured output: JSON records, any-order objects and tool calls (`structured/*`).

Trivial one token at a time, hard in parallel: a key and its value, a brace and its close,
a field that must appear once all depend on each other. Three tasks, one-shot like Waiting
Line and on the same desk, with 3 to 8 fields drawn from the Waiting Line name pools
("First Last" values) and small integers (10..99):

- `json_fields`: the fields as one JSON object, keys in the order given (one answer, C(Y|X) = 0);
- `json_any_order`: the same, keys in any order (n! answers; with one token per field, the
  paper's shuffle: C(Y|X) = n log2 n - log2 n!);
- `tool_call`: `{"name": FUNCTION, "arguments": {...}}`, arguments in the order given.

The reference answer is `json.dumps` with its default separators (`", "`, `": "`). For
`json_any_order` it lists the keys in a uniformly random order, as shuffle's reference is a
random permutation, so the one-shot example shows that any order is meant (and a model
trained on references learns the uniform distribution over orders).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial
from typing import Any

from parallelbench.tasks._answers import valid_answers_from_data
from parallelbench.tasks._common import (
    DEFAULT_SEED,
    StableRng,
    example_rng,
    length_plan,
    one_shot,
    sample_rng,
    with_params,
)
from parallelbench.tasks._records import MAX_FIELDS, MIN_FIELDS, answer_text, check_field_range
from parallelbench.tasks.base import GeneratorParams, Sample, Task

CATEGORY = "structured"
# Integer values are two-digit, 10..99: every value (a name's first and last part, or a number's
# two digits) is then two tokens of the tiny model, so an answer's length follows from its
# field count as a list's does from its item count.
NUMBERS = (10, 99)
# Field keys, each with the kind of value it holds. Single lower-case words, none of them
# "name" or "arguments" (the tool call's own keys).
NAME_KEYS = ("customer", "agent", "manager", "guest", "contact", "sender", "recipient", "driver", "owner",
             "cashier", "clerk", "supervisor")
NUMBER_KEYS = ("ticket", "age", "floor", "room", "seat", "desk", "priority", "queue", "window", "minutes",
               "party", "counter", "visits", "points")
KEYS = NAME_KEYS + NUMBER_KEYS
# Functions a tool call names.
FUNCTIONS = ("create_ticket", "book_table", "assign_seat", "call_customer", "transfer_call", "update_queue",
             "send_reminder", "schedule_visit", "open_counter", "log_visit")

_HEAD = "You are managing a waiting line at a customer service desk.\n"
PROMPTS = {
    "json_fields": _HEAD
    + "Record the following ticket as one JSON object, with the keys in the order given:\n{context}\n"
    "Please write the JSON object with the keys in the order given and provide only the JSON object.\n",
    "json_any_order": _HEAD
    + "Record the following ticket as one JSON object; the keys may come in any order:\n{context}\n"
    "Please write the JSON object with the keys in any order and provide only the JSON object.\n",
    "tool_call": _HEAD
    + 'Call the function "{function}" with the following arguments, in the order given:\n{context}\n'
    'Please write the call as one JSON object {{"name": ..., "arguments": {{...}}}} and provide only the JSON object.\n',
}
VARIANTS = tuple(PROMPTS)
SCORER_OF = {v: v for v in VARIANTS}  # scoring/structured.py registers one scorer per variant
DEFAULT_PER_LENGTH = 17  # 6 field counts x 17, cut at 100 samples (the paper's size per task)
DEFAULT_NUM_SAMPLES = 100
# Generation budget: 8 name fields take about 40 tokens of the tiny model's vocabulary and
# 60-70 of a sub-word tokenizer (a tool call 10 more); 96 leaves room for both.
MAX_NEW_TOKENS = 96

Field = tuple[str, Any]


def check_variant(variant: str) -> str:
    if variant not in PROMPTS:
        raise ValueError(f"unknown structured task {variant!r}; the structured tasks are: {', '.join(VARIANTS)}")
    return variant


def draw_fields(rng: StableRng, n: int) -> list[Field]:
    """n fields with distinct keys; names are distinct "First Last" people, numbers 10..99."""
    from parallelbench.tasks.waiting_line import draw_people

    keys = rng.sample(KEYS, n)
    people = iter(draw_people(rng, sum(k in NAME_KEYS for k in keys)))
    return [(k, next(people) if k in NAME_KEYS else rng.between(*NUMBERS)) for k in keys]


@dataclass
class Record:
    """One drawn instance: the fields as given, the reference answer's field order, the function."""

    fields: list[Field]
    answer_fields: list[Field]
    function: str | None

    @property
    def identity(self) -> tuple:
        """What makes two prompts the same (examples must differ from every test input)."""
        return (self.function, tuple(self.fields))


def draw_record(rng: StableRng, n: int, variant: str) -> Record:
    fields = draw_fields(rng, n)
    function = rng.choice(FUNCTIONS) if variant == "tool_call" else None
    answer = rng.shuffled(fields) if variant == "json_any_order" else list(fields)
    return Record(fields, answer, function)


def context_lines(fields: list[Field]) -> str:
    """`customer: "Susan Fox"` / `age: 42`, one field per line (strings quoted as in JSON)."""
    return "\n".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in fields)


def render(variant: str, record: Record) -> str:
    return PROMPTS[variant].format(context=context_lines(record.fields), function=record.function)


def sample_data(variant: str, record: Record) -> dict[str, Any]:
    """Everything the scorer needs: the target fields (as [key, value] pairs, in the given order)."""
    pairs = [[k, v] for k, v in record.fields]
    if variant == "tool_call":
        return {"n": len(pairs), "name": record.function, "arguments": pairs}
    return {"n": len(pairs), "fields": pairs, "ordered": variant == "json_fields"}


def _generate(task: Task, limit: int | None, *, variant: str) -> list[Sample]:
    """Test samples from the task's stream, one-shot examples from a separate one (an example
    equal to any test input is redrawn); both consumed in sample order, so `limit` gives a prefix."""
    p = task.params
    check_field_range(p.n_min, p.n_max)
    rng = sample_rng(task)
    tests = [draw_record(rng, n, variant) for n in length_plan(p, None)]
    seen = {t.identity for t in tests}
    erng = example_rng(task)
    out: list[Sample] = []
    for i, t in enumerate(tests if limit is None else tests[: max(limit, 0)]):
        while True:
            ex = draw_record(erng, erng.between(p.n_min, p.n_max), variant)
            if ex.identity not in seen:
                break
        prompt = render(variant, t)
        out.append(
            Sample(
                id=f"{task.id}/{i}",
                task=task.id,
                prompt=prompt,
                messages=one_shot(render(variant, ex), answer_text(variant, ex.answer_fields, ex.function), prompt),
                answer=answer_text(variant, t.answer_fields, t.function),
                scorer=SCORER_OF[variant],
                data=sample_data(variant, t),
            )
        )
    return out


DESCRIPTIONS = {
    "json_fields": "the given fields as one JSON object, keys in the order given (one answer; C(Y|X) = 0)",
    "json_any_order": "the given fields as one JSON object, keys in any order (n! answers; shuffle's C(Y|X))",
    "tool_call": 'a function call {"name": ..., "arguments": {...}}, arguments in the order given (C(Y|X) = 0)',
}


def _make(variant: str) -> Task:
    check_variant(variant)
    return Task(
        id=f"{CATEGORY}/{variant}",
        category=CATEGORY,
        prompt_template=PROMPTS[variant],
        shots=1,
        max_new_tokens=MAX_NEW_TOKENS,
        scorer=SCORER_OF[variant],
        params=GeneratorParams(MIN_FIELDS, MAX_FIELDS, DEFAULT_PER_LENGTH, DEFAULT_NUM_SAMPLES, DEFAULT_SEED),
        generate=partial(_generate, variant=variant),
        description=f"Structured output: {DESCRIPTIONS[variant]}; 3-8 fields (names and 10-99); one-shot.",
        valid_answers=valid_answers_from_data,
    )


def structured_task(
    variant: str,
    n_min: int | None = None,
    n_max: int | None = None,
    num_samples: int | None = None,
    seed: int = DEFAULT_SEED,
) -> Task:
    """A structured task for another field range or seed (not registered; its id names them).

    Unknown variants and field counts outside 3..8 are one-line ValueErrors."""
    base = {t.id: t for t in TASKS}[f"{CATEGORY}/{check_variant(variant)}"]
    n_min = base.params.n_min if n_min is None else n_min
    n_max = n_min if n_max is None and n_min != base.params.n_min else (base.params.n_max if n_max is None else n_max)
    check_field_range(n_min, n_max)
    return with_params(base, n_min=n_min, n_max=n_max, num_samples=num_samples, seed=seed)


TASKS = tuple(_make(v) for v in VARIANTS)  # registered by `tasks/builtin.py`
