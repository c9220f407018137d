"""The four synthetic list operations of section 4 at item level, for the ideal model.

Each list item is one token. With `formatting=True` (the paper's infilling
setup) the answer is laid out as ``[ A , B , C ]`` and the brackets and commas
are pre-filled by a template, so only the item positions are decoded; with
`formatting=False` the generation region is the n items alone. Either way the
input list is A, B, C, ... in order (by symmetry the order does not matter).
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
        return FIRST_ITEM + self.n

    @property
    def vocab(self) -> list[str]:
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
    """The answer set of `task` on a list of n items (`index` is replace_index's position)."""
    if n < 1:
        raise ValueError(f"list length n must be >= 1, got {n}")
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
