"""Chain-of-thought variants of the Waiting Line tasks (the paper's appendix on CoT prompting).

`waiting_line/<op>-cot` asks the same questions as `waiting_line/<op>` (same seed, same
items, same order) with the paper's trigger phrase after the question, a 256-token
budget, and a one-shot worked example per sample. The paper's examples were written by
GPT-4.1 mini; ours are generated here from the task's operation: a step-by-step
solution of a different line of people (no name shared with the question), drawn from
a stream keyed by the sample's index, so every sample's example is deterministic.
Scoring (`scoring/cot.py`) takes the answer after the last "The answer is:" and scores
it with the base task's scorer.
"""

from __future__ import annotations

import dataclasses
from functools import partial

from parallelbench.tasks._common import StableRng, format_list, one_shot
from parallelbench.tasks._listops import OPS_WITH_WORD, ListItem, apply_op, render, sort_key
from parallelbench.tasks.base import Sample, Task
from parallelbench.tasks.cot_format import ANSWER_MARKER, COT_SCORER, COT_SUFFIX
from parallelbench.tasks.waiting_line import OPS, draw_new_person, draw_people
from parallelbench.tasks.waiting_line import TASKS as WAITING_LINE_TASKS

MAX_NEW_TOKENS = 256  # the paper raised the output limit from 32 to 256 for CoT
TRIGGER = f"Think step by step and give your final answer at the end as '{ANSWER_MARKER} {{answer}}'."
# The Waiting Line tasks with a CoT variant: all ten operations at the paper's n = 3..6.
BASE_TASKS = tuple(f"waiting_line/{op}" for op in OPS)


def with_trigger(question: str) -> str:
    """The question, a blank line, then the trigger phrase (the paper's prompt layout)."""
    return question.rstrip() + "\n\n" + TRIGGER


def _position(op: str, item: ListItem) -> int | None:
    """Where an insert / remove / replace acted (given for index ops, read off the answer otherwise)."""
    if item.index is not None:
        return item.index
    if op.startswith(("insert", "replace")):
        return item.answer.index(item.word)
    if op.startswith("remove"):
        kept = item.answer
        return next((i for i, name in enumerate(item.items) if i >= len(kept) or kept[i] != name), len(item.items) - 1)
    return None


def _numbered(items: list[str]) -> str:
    return "\n".join(f"{i}: {name}" for i, name in enumerate(items))


def worked_solution(op: str, item: ListItem) -> str:
    """A step-by-step solution of one list operation ending in "The answer is: [...]"."""
    items, word, answer = item.items, item.word, item.answer
    pos = _position(op, item)
    steps = [f"Step 1: Identify the original list:\n{format_list(items)}"]
    if op == "copy":
        steps.append(f"Step 2: Copy the {len(items)} people one by one, keeping their order:\n{format_list(answer)}")
    elif op == "sort":
        lasts = ", ".join(f"{name.partition(' ')[2] or name} ({name})" for name in items)
        steps.append(f"Step 2: Read each person's last name: {lasts}")
        order = ", ".join(sort_key(name)[0] for name in answer)
        steps.append(f"Step 3: Order the last names alphabetically: {order}")
    elif op == "reverse":
        steps.append("Step 2: Read the list from the last person to the first:\n" + format_list(answer))
    elif op == "shuffle":
        steps.append(f"Step 2: Randomly shuffle the list so that the order changes:\n{format_list(answer)}")
        differ = next((i for i, (a, b) in enumerate(zip(items, answer)) if a != b), None)
        if differ is None:  # only a one-person line (or an identity draw when allowed) gets here
            steps.append("Step 3: Check the order: it is the same as the original.")
        else:
            steps.append(
                f'Step 3: Check that the order changed: position {differ} was "{items[differ]}" and is now '
                f'"{answer[differ]}", so the shuffle is valid.'
            )
    elif op == "insert_index":
        steps.append(f"Step 2: Number the positions from 0:\n{_numbered(items)}")
        where = f'before "{items[pos]}"' if pos < len(items) else "at the end"
        steps.append(f'Step 3: Position {pos} is {where}, so "{word}" goes there.')
    elif op == "insert_random":
        steps.append(f"Step 2: Pick a random position between 0 and {len(items)}: position {pos}.")
        steps.append(f'Step 3: Put "{word}" at position {pos}.')
    elif op == "remove_index":
        steps.append(f"Step 2: Number the positions from 0:\n{_numbered(items)}")
        steps.append(f'Step 3: Position {pos} holds "{items[pos]}", who has left; remove that person.')
    elif op == "remove_random":
        steps.append(f'Step 2: Pick a random person: "{items[pos]}" at position {pos}.')
        steps.append(f'Step 3: Remove "{items[pos]}" and keep everyone else in order.')
    elif op == "replace_index":
        steps.append(f"Step 2: Number the positions from 0:\n{_numbered(items)}")
        steps.append(f'Step 3: Position {pos} holds "{items[pos]}"; replace that person with "{word}".')
    elif op == "replace_random":
        steps.append(f'Step 2: Pick a random person: "{items[pos]}" at position {pos}.')
        steps.append(f'Step 3: Replace "{items[pos]}" with "{word}" and keep everyone else in order.')
    else:
        raise ValueError(f"no worked solution for list operation {op!r}")
    if op not in ("copy", "reverse", "shuffle"):
        steps.append(f"Step {len(steps) + 1}: The resulting list has {len(answer)} people:\n{format_list(answer)}")
    return "\n\n".join(steps) + f"\n\n{ANSWER_MARKER} {format_list(answer)}"


def _test_item(op: str, sample: Sample) -> ListItem:
    """The base sample's question and reference answer as a `ListItem`."""
    data = sample.data
    expected = data.get("expected")
    if expected is None:
        from parallelbench.scoring.parse import parse_list_lenient  # noqa: PLC0415

        expected = parse_list_lenient(sample.answer) or []
    return ListItem(list(data["input"]), data.get("word"), data.get("index"), list(expected), sample.scorer, data)


def _example(task: Task, op: str, index: int, question: ListItem) -> ListItem:
    """The sample's one-shot example: people disjoint from the question's, own stream per index."""
    rng = StableRng(task.id, task.params.seed, "cot-example", index)
    p = task.params
    taken = list(question.items) + ([question.word] if question.word else [])
    items = draw_people(rng, rng.between(p.n_min, p.n_max), exclude=taken)
    word = draw_new_person(rng, taken + items) if op in OPS_WITH_WORD else None
    return apply_op(op, items, word, rng)


def _generate(task: Task, limit: int | None, *, base: Task, op: str) -> list[Sample]:
    """The base task's samples (same params, so the same questions) turned into CoT samples."""
    base_id = task.id.replace(COT_SUFFIX, "", 1)  # a `with_params` copy keeps the base's id suffix
    base_task = dataclasses.replace(base, id=base_id, params=task.params)
    out = []
    for i, s in enumerate(base_task.samples(limit)):
        question = _test_item(op, s)
        example = _example(task, op, i, question)
        prompt = with_trigger(s.prompt)
        out.append(
            Sample(
                id=f"{task.id}/{i}",
                task=task.id,
                prompt=prompt,
                messages=one_shot(render(task.prompt_template, example), worked_solution(op, example), prompt),
                answer=worked_solution(op, question),
                scorer=COT_SCORER,
                data={**s.data, "base_task": base_id, "base_scorer": s.scorer, "base_answer": s.answer},
                output_format=None,
            )
        )
    return out


def cot_task(base: Task) -> Task:
    """The CoT variant of a registered Waiting Line task (not registered by this call)."""
    op = base.id.rsplit("/", 1)[-1]
    return Task(
        id=base.id + COT_SUFFIX,
        category=base.category,
        prompt_template=base.prompt_template.rstrip() + "\n\n" + TRIGGER.replace("{", "{{").replace("}", "}}"),
        shots=1,
        max_new_tokens=MAX_NEW_TOKENS,
        scorer=COT_SCORER,
        params=base.params,
        generate=partial(_generate, base=base, op=op),
        description=f"{base.description.rstrip('.')}; chain-of-thought prompt, worked one-shot example, 256 tokens.",
        valid_answers=None,  # any reasoning may precede the answer: no finite set of outputs
        in_paper=False,
    )


_BY_ID = {t.id: t for t in WAITING_LINE_TASKS}
TASKS = tuple(cot_task(_BY_ID[base_id]) for base_id in BASE_TASKS)  # registered by `tasks/builtin.py`
