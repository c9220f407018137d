"""The four synthetic list operations of section 4 at item level, for the ideal model,
and the three structured tasks at field level.

Each list item is one token. With `formatting=True` (the paper's infilling
setup) the answer is laid out as ``[ A , B , C ]`` and the brackets and commas
are pre-filled by a template, so only the item positions are decoded; with
`formatting=False` the generation region is the n items alone. Either way the
input list is A, B, C, ... in order (by symmetry the order does not matter).

The structured tasks are the same at field level (one token per `"key": value` field, as
the ideal model's tokenizer writes them): `json_fields` is ``{ A , B , C }`` in the given
order (copy's answer set), `json_any_order` every order of the fields (shuffle's, so every
decode matches shuffle's token for token), `tool_call` ``{ N , R { A , B , C } }`` with the
name field N and the arguments key R given like the punctuation.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch

from parallelbench.models.ideal.model import AnswerSet, IdealModel

MASK, EOS, BOS, OPEN, COMMA, CLOSE, REPLACEMENT = range(7)
FIRST_ITEM = 7
SPECIAL_TEXTS = ["<mask>", "<eos>", "<bos>", "[", ",", "]", "F"]
# Structured tasks at field level (see the module docstring): list tasks they share answer sets with.
FIELD_TASKS = {"json_fields": "copy", "json_any_order": "shuffle", "tool_call": "copy"}
# Shuffle answer sets are built in memory; 9! = 362,880 rows is the largest we allow.
MAX_ANSWERS = 400_000


def item_text(i: int) -> str:
    """A, B, ..., Z, then A1, B1, ... (never "F", which is the replacement item)."""
    letters = [c for c in "ABCDEGHIJKLMNOPQRSTUVWXYZ"]
    return letters[i % len(letters)] + (str(i // len(letters)) if i >= len(letters) else "")


@dataclass
class SyntheticTask:
    """One instance of a list operation: its valid answers and how to decode them."""

    task: str
    n: int
    answers: torch.Tensor  # [A, L] full generation region (formatting included when given)
    template: torch.Tensor  # [L]: MASK at item positions, formatting tokens elsewhere
    item_positions: list[int]

    @property
    def vocab_size(self) -> int:
        return FIRST_ITEM + self.n + (2 if self.task == "tool_call" else 0)

    @property
    def vocab(self) -> list[str]:
        if self.task in FIELD_TASKS:  # braces, fields "a": 1, "b": 2 ...; a tool call's name and arguments key
            texts = ["<mask>", "<eos>", "<bos>", "{", ",", "}", "F"] + [f'"{chr(97 + i % 26)}{i // 26 or ""}": {i}' for i in range(self.n)]
            return texts + (['"name": "f"', '"arguments":'] if self.task == "tool_call" else [])
        return SPECIAL_TEXTS + [item_text(i) for i in range(self.n)]

    def answer_set(self) -> AnswerSet:
        return AnswerSet(self.answers)

    def model(self, batch_size: int, *, noise_std: float = 0.0, seed: int = 0, edits: bool = False,
              block_causal: bool = False) -> IdealModel:
        """An ideal model whose `batch_size` rows all share this task's one answer set (`edits`:
        written slots get their leave-one-out conditional; `block_causal`: its block-causal face)."""
        return IdealModel(
            [self.answer_set()],
            vocab_size=self.vocab_size,
            mask_id=MASK,
            eos_id=EOS,
            row_sets=torch.zeros(batch_size, dtype=torch.long),
            noise_std=noise_std,
            seed=seed,
            edits=edits,
            block_causal=block_causal,
        )

    def is_valid(self, tokens: torch.Tensor) -> torch.Tensor:
        """Bool [N]: which decoded generation regions [N, L] are valid answers."""
        valid = {tuple(row) for row in self.answers.tolist()}
        return torch.tensor([tuple(row) in valid for row in tokens.tolist()], dtype=torch.bool)

    def text(self, tokens) -> str:
        return " ".join(self.vocab[t] for t in tokens)


def _item_rows(task: str, n: int, index: int) -> torch.Tensor:
    items = list(range(FIRST_ITEM, FIRST_ITEM + n))
    if task == "copy":
        return torch.tensor([items])
    if task == "replace_index":
        if not 0 <= index < n:
            raise ValueError(f"replace index {index} is outside a list of length {n}")
        row = list(items)
        row[index] = REPLACEMENT
        return torch.tensor([row])
    if task == "replace_random":
        rows = torch.tensor([items] * n)
        rows[torch.arange(n), torch.arange(n)] = REPLACEMENT
        return rows
    if task == "shuffle":
        if math.factorial(n) > MAX_ANSWERS:
            raise ValueError(
                f"shuffle with n={n} has {math.factorial(n):,} answers; the ideal model enumerates "
                f"at most {MAX_ANSWERS:,} (n <= 9)"
            )
        return torch.tensor(list(itertools.permutations(items)))
    raise ValueError(f"unknown synthetic task {task!r}; choose copy, replace_index, replace_random or shuffle")


def synthetic_task(task: str, n: int, *, formatting: bool = True, index: int = 0) -> SyntheticTask:
    """The answer set of `task` on a list of n items or n fields (`index` is replace_index's position)."""
    if n < 1:
        raise ValueError(f"list length n must be >= 1, got {n}")
    if task in FIELD_TASKS:
        return _field_task(task, n, formatting)
    rows = _item_rows(task, n, index)
    if not formatting:
        return SyntheticTask(task, n, rows, torch.full((n,), MASK), list(range(n)))
    length = 2 * n + 1
    item_positions = list(range(1, length, 2))
    layout = torch.full((length,), COMMA)
    layout[0], layout[-1] = OPEN, CLOSE
    template = layout.clone()
    template[item_positions] = MASK
    answers = layout.repeat(rows.shape[0], 1)
    answers[:, item_positions] = rows
    return SyntheticTask(task, n, answers, template, item_positions)


def _field_task(task: str, n: int, formatting: bool) -> SyntheticTask:
    """A structured task at field level: its list twin's rows, laid out as a JSON object."""
    rows = _item_rows(FIELD_TASKS[task], n, 0)
    if task == "tool_call":  # the name field first, then the arguments
        name, args_key = FIRST_ITEM + n, FIRST_ITEM + n + 1
        rows = torch.cat([torch.full((rows.shape[0], 1), name), rows], 1)
    else:
        args_key = None
    if not formatting:
        return SyntheticTask(task, n, rows, torch.full((rows.shape[1],), MASK), list(range(rows.shape[1])))
    layout: list[int] = [OPEN]
    fields: list[int] = []
    for j in range(rows.shape[1]):
        if j and not (task == "tool_call" and j == 1):
            layout.append(COMMA)
        if task == "tool_call" and j == 1:
            layout += [COMMA, args_key, OPEN]
        fields.append(len(layout))
        layout.append(MASK)
    layout += [CLOSE, CLOSE] if task == "tool_call" else [CLOSE]
    template = torch.tensor(layout)
    answers = template.repeat(rows.shape[0], 1)
    answers[:, fields] = rows
    return SyntheticTask(task, n, answers, template, fields)
