"""Training and validation samples for `parallelbench finetune`, from the task generators.

Every test set is generated from its task's own `params.seed`, a small integer; the
fine-tuning splits are generated from seeds hashed into [2**31, 2**32) with the split name
in the hash, so train, validation and test never share a generator state. That alone does
not rule out equal prompts (two seeds can draw the same short list), so the split is also
checked by content: any sample whose prompt is a test prompt is dropped, validation samples
equal to a training prompt are dropped, and `check_split` verifies the result, which the
command reports on screen.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from parallelbench.tasks.base import Sample, Task

SEED_BASE = 2**31
PART_SIZE = 96  # samples per generator call (Sudoku keeps its one-shot examples off one call's grids)


class SplitError(ValueError):
    """A task cannot supply the samples asked for, or a split overlaps the test set."""


def split_seed(task_id: str, split: str, part: int, seed: int) -> int:
    """A generator seed of a fine-tuning split, in [2**31, 2**32): never a test seed."""
    h = hashlib.sha256(f"parallelbench-finetune:{split}:{seed}:{task_id}:{part}".encode()).digest()
    return SEED_BASE + int.from_bytes(h[:4], "big") % SEED_BASE


def _generate(task: "Task", split: str, part: int, seed: int, k: int) -> list["Sample"]:
    """`k` samples of the task's own test distribution (its list lengths), from a split seed."""
    p = task.params
    lengths = max(1, p.n_max - p.n_min + 1)
    params = dataclasses.replace(p, samples_per_length=math.ceil(k / lengths), num_samples=k,
                                 seed=split_seed(task.id, split, part, seed))
    return dataclasses.replace(task, params=params).samples(k)[:k]


@dataclass
class Splits:
    """The fine-tuning data of some tasks, with what was dropped and why."""

    train: list["Sample"] = field(default_factory=list)
    val: list["Sample"] = field(default_factory=list)
    test_prompts: int = 0  # test prompts checked against
    dropped_test: int = 0  # generated samples equal to a test prompt
    dropped_train: int = 0  # validation samples equal to a training prompt

    def fingerprint(self) -> str:
        """Hash of every prompt and answer, in order: a resumed run must see the same data."""
        h = hashlib.sha256()
        for s in self.train + self.val:
            h.update(f"{s.task}\x00{s.prompt}\x00{s.answer}\x01".encode())
        return h.hexdigest()[:16]


def _collect(task: "Task", split: str, size: int, seed: int, exclude: set[str]) -> tuple[list["Sample"], int]:
    out: list["Sample"] = []
    dropped = 0
    part = 0
    max_parts = 3 * math.ceil(size / PART_SIZE) + 8
    while len(out) < size:
        if part >= max_parts:
            if not out:
                raise SplitError(f"every sample {task.id} generates is one of its test samples (its prompts come "
                                 "from a fixed set, whatever the seed); it cannot be fine-tuned on without training on the test set")
            raise SplitError(
                f"{task.id} gave only {len(out)} {split} samples distinct from its test set after {part} tries; "
                f"ask for fewer with --{split}-samples"
            )
        for s in _generate(task, split, part, seed, min(PART_SIZE, size - len(out))):
            if s.prompt in exclude:
                dropped += 1
            else:  # ids of their own: a test id such as waiting_line/sort/17 names a test sample
                out.append(dataclasses.replace(s, id=f"{task.id}/{split}/{len(out)}"))
        part += 1
    return out[:size], dropped


def make_splits(tasks: Sequence["Task"], train_samples: int, val_samples: int, seed: int = 0) -> Splits:
    """`train_samples` and `val_samples` per task, none equal to a test prompt of the task,
    validation none equal to a training prompt."""
    splits = Splits()
    for task in tasks:
        test = {s.prompt for s in task.samples()}
        splits.test_prompts += len(test)
        train, dropped = _collect(task, "train", train_samples, seed, test)
        splits.dropped_test += dropped
        seen = test | {s.prompt for s in train}
        val, dropped_val = _collect(task, "val", val_samples, seed, seen)
        splits.train += train
        splits.val += val
        splits.dropped_train += dropped_val  # test or training prompts
    check_split(splits, tasks)
    return splits


def check_split(splits: Splits, tasks: Sequence["Task"]) -> None:
    """Raise `SplitError` if any training or validation prompt is a test prompt of the tasks,
    or a validation prompt is a training prompt. Recomputes the test sets from scratch."""
    test = {s.prompt for t in tasks for s in t.samples()}
    leaked = [s for s in splits.train + splits.val if s.prompt in test]
    if leaked:
        raise SplitError(f"{len(leaked)} fine-tuning samples equal a test prompt (first: {leaked[0].id}); this is a bug")
    train = {s.prompt for s in splits.train}
    overlap = [s for s in splits.val if s.prompt in train]
    if overlap:
        raise SplitError(f"{len(overlap)} validation samples equal a training prompt (first: {overlap[0].id}); this is a bug")


def dump(splits: Splits, folder: str | Path) -> list[Path]:
    """train.jsonl and val.jsonl (one `Sample.to_dict()` per line, as `tasks export` writes)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, samples in (("train", splits.train), ("val", splits.val)):
        path = folder / f"{name}.jsonl"
        with path.open("w") as f:
            for s in samples:
                f.write(json.dumps(s.to_dict(), ensure_ascii=False) + "\n")
        written.append(path)
    return written
