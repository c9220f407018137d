"""Waiting Line: list operations on a queue of customers' names (appendix D of the paper).

Ten operations, each one-shot, answers as `["First Last", ...]`, positions 0-based.
Three length settings: the paper's n = 3..6 (`waiting_line/<op>`), n = 15
(`waiting_line_n15/<op>`, the LLM comparison) and n = 21..24
(`waiting_line_n21_24/<op>`, the longer-output study).
"""

from __future__ import annotations

from functools import partial
from typing import Sequence

from parallelbench.tasks._answers import valid_answers_from_data
from parallelbench.tasks._common import DEFAULT_SEED, StableRng, load_json
from parallelbench.tasks._listops import SCORER_OF, generate_list_samples
from parallelbench.tasks.base import GeneratorParams, Task

_HEAD = "You are managing a waiting line at a customer service desk.\n"

# Wording of the paper's table of prompts, line breaks as in the original release.
PROMPTS = {
    "copy": _HEAD
    + "You need to record the following people in the order they arrived:\n{context}\n"
    "Please copy the list exactly and provide only the final list.\n",
    "sort": _HEAD
    + "The following people should be organized alphabetically by last name for efficient processing:\n"
    "{context}\nPlease sort the list in alphabetical order and provide only the final list.\n",
    "reverse": _HEAD
    + "The previous staff member put the waiting line in the wrong order.\n"
    "Please reverse the order of the following people in the waiting line to correct it:\n{context}\n"
    "Please reverse the order of the list and provide only the final list.\n",
    "shuffle": _HEAD
    + "The waiting line should be randomly shuffled to ensure fair service distribution:\n{context}\n"
    "Please randomly shuffle the list and provide only the final list.\n"
    "Ensure the sequence is different from the original.\n",
    "insert_index": _HEAD
    + 'A new person "{word}" is inserted into the line at position {index}:\n{context}\n'
    "Please put the new person at the specified position and provide only the final list.\n",
    "insert_random": _HEAD
    + 'A new person "{word}" is inserted into the line at a random position:\n{context}\n'
    "Please put the new person in the random position and provide only the final list.\n",
    "remove_index": _HEAD
    + "The person at position {index} has left the waiting line:\n{context}\n"
    "Please remove the person at the specified position and provide only the final list.\n",
    "remove_random": _HEAD
    + "One person has left the waiting line:\n{context}\n"
    "Please remove a random person and provide only the final list.\n",
    "replace_index": _HEAD
    + 'The person at position {index} must be replaced with "{word}":\n{context}\n'
    'Please replace the person at the specified position with "{word}" and provide only the final list.\n',
    "replace_random": _HEAD
    + 'One person in the waiting line must be replaced with "{word}":\n{context}\n'
    'Please replace one random person with "{word}" and provide only the final list.',
}
OPS = tuple(PROMPTS)

# (id prefix, n_min, n_max, samples per length, max new tokens, in the paper's 17)
SETTINGS = (
    ("waiting_line", 3, 6, 25, 32, True),
    ("waiting_line_n15", 15, 15, 100, 128, False),
    ("waiting_line_n21_24", 21, 24, 25, 128, False),
)


def draw_people(rng: StableRng, n: int, exclude: Sequence[str] = ()) -> list[str]:
    """n distinct "First Last" names from the owned name lists."""
    names = load_json("names.json")
    first, last = names["first"], names["last"]
    taken = set(exclude)
    out: list[str] = []
    while len(out) < n:
        name = f"{rng.choice(first)} {rng.choice(last)}"
        if name not in taken:
            taken.add(name)
            out.append(name)
    return out


def draw_new_person(rng: StableRng, people: Sequence[str]) -> str:
    """A person who is not in the line yet (the inserted or replacing one)."""
    return draw_people(rng, 1, exclude=people)[0]


def _generate(task: Task, limit: int | None, *, op: str):
    return generate_list_samples(task, limit, op=op, draw_items=draw_people, draw_word=draw_new_person)


def _describe(op: str, lo: int, hi: int) -> str:
    size = f"n = {lo}" if lo == hi else f"n = {lo}..{hi}"
    return f"Waiting Line {op.replace('_', ' ')} on {size} names; one-shot; 0-based positions."


def _all_tasks() -> tuple[Task, ...]:
    out = []
    for prefix, lo, hi, per_length, max_tokens, in_paper in SETTINGS:
        num = per_length * (hi - lo + 1)
        for op in OPS:
            out.append(
                Task(
                    id=f"{prefix}/{op}",
                    category="waiting_line",
                    prompt_template=PROMPTS[op],
                    shots=1,
                    max_new_tokens=max_tokens,
                    scorer=SCORER_OF[op],
                    params=GeneratorParams(lo, hi, per_length, num, DEFAULT_SEED),
                    generate=partial(_generate, op=op),
                    description=_describe(op, lo, hi),
                    valid_answers=valid_answers_from_data,
                    in_paper=in_paper,
                )
            )
    return tuple(out)


TASKS = _all_tasks()  # registered by `tasks/builtin.py`
