"""Training data for the tiny model, made by the benchmark's own task generators.

Each task is re-seeded from a training stream: seeds are drawn from [2**31, 2**32), while
every test set uses its task's own `params.seed` (a small integer), so no training chunk
can share a generator state with a test set. On top of that, any training sample whose
prompt equals a test prompt is dropped (`HeldOutGuard`), and a test asserts disjointness.

A training example is (prompt ids, answer ids padded with [EOS] to the task's generation
length, which answer positions may be masked). Infilling tasks (samples with an
`output_format`) only ever mask the item positions: the formatting tokens are given, as in
the paper's figure-3 experiments.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

if TYPE_CHECKING:
    import torch

    from parallelbench.models.tokenizer import WordTokenizer
    from parallelbench.tasks.base import Sample, Task

TRAIN_PREFIXES = ("waiting_line/", "puzzle/", "synthetic/", "synthetic_infill/", "structured/")
# Training list lengths: the test range n = 3..6 (synthetic 2..10) "and a little beyond".
TRAIN_N = {"waiting_line": (2, 8), "synthetic": (2, 12)}
# Harder tasks get more of each batch; copying is learned within a few hundred steps.
# Sorting is the slowest to learn; the puzzles need fewer steps since the grid exclusion
# (TinyConfig.grid_exclude) reads used symbols off directly.
TASK_WEIGHT = {
    "sort": 7.0, "sudoku": 5.0, "latin_square": 3.0, "shuffle": 2.0, "replace_random": 1.5,
    "insert_random": 1.5, "insert_index": 1.5, "replace_index": 1.5, "copy": 0.5,
    # Structured output: records of up to 41 tokens, learned more slowly than a list (600-step
    # pilots: 33-60% on json_fields where Waiting Line copy was at 90-100%); any order as shuffle.
    "json_fields": 1.5, "tool_call": 1.5, "json_any_order": 3.0,
}
SEED_BASE = 2**31
EOS_WEIGHT = 0.1  # loss weight of [EOS] padding targets (both training objectives)
LENGTH_BAND = 16  # batches hold examples whose prompt + answer lengths share a band this wide


def training_tasks(ids: Iterable[str] | None = None) -> list["Task"]:
    """The tasks the tiny model learns: Waiting Line, the puzzles, synthetic list ops, structured output.

    Not the chain-of-thought variants (`<task>-cot`): their prose is outside the tiny vocabulary.
    """
    from parallelbench.tasks import registry

    reg = registry()
    if ids is not None:
        return [reg[i] for i in ids]
    return [t for t in reg.values() if t.id.startswith(TRAIN_PREFIXES) and not t.id.endswith("-cot")]


def task_weight(task: "Task", overrides: dict[str, float] | None = None) -> float:
    """The task's share of each chunk: TASK_WEIGHT, or `overrides` by task id or short name."""
    short = task.id.split("/")[-1]
    for name in (task.id, short):
        if overrides and name in overrides:
            return float(overrides[name])
    return TASK_WEIGHT.get(short, 1.0)


def train_seed(task_id: str, chunk: int, seed: int) -> int:
    """A seed of the training stream, in [2**31, 2**32): disjoint from every test seed."""
    h = hashlib.sha256(f"parallelbench-tiny-train:{seed}:{task_id}:{chunk}".encode()).digest()
    return SEED_BASE + int.from_bytes(h[:4], "big") % SEED_BASE


def train_split(task: "Task", chunk: int, seed: int, size: int, part_size: int = 96) -> list["Sample"]:
    """`size` fresh samples of `task` from the training stream (seed, chunk).

    Generated in parts of at most `part_size` samples, each from its own training seed:
    generators such as Sudoku's keep their one-shot examples off the solution grids of
    the whole call, so one huge call could run out of grids.
    """
    p = task.params
    n_min, n_max = TRAIN_N.get(task.category, (p.n_min, p.n_max))
    lengths = n_max - n_min + 1
    out: list["Sample"] = []
    part = 0
    while len(out) < size:
        k = min(part_size, size - len(out))
        params = dataclasses.replace(
            p,
            n_min=n_min,
            n_max=n_max,
            samples_per_length=math.ceil(k / lengths),
            num_samples=k,
            seed=train_seed(task.id, chunk * 10_000 + part, seed),
        )
        out += dataclasses.replace(task, params=params).samples(k)
        part += 1
    return out[:size]


def validation_seed(task_id: str, part: int) -> int:
    """A seed of the validation stream, in [2**31, 2**32) like the training stream's (so it
    is disjoint from every test seed) but from its own hash namespace."""
    h = hashlib.sha256(f"parallelbench-tiny-valid:{task_id}:{part}".encode()).digest()
    return SEED_BASE + int.from_bytes(h[:4], "big") % SEED_BASE


def validation_split(task: "Task", size: int, guard: "HeldOutGuard | None" = None, part_size: int = 32) -> list["Sample"]:
    """`size` samples of `task` for checkpoint selection, disjoint from its test set.

    Drawn at the test set's own lengths (n_min..n_max: the distribution the benchmark
    measures) from validation seeds; any sample whose prompt equals a test prompt is
    dropped (`guard`, default: this task's test set), so selecting on it never looks at a
    test sample. Deterministic: the same task and size give the same samples.
    """
    guard = guard or HeldOutGuard([task])
    p = task.params
    out: list["Sample"] = []
    part = 0
    while len(out) < size:
        if part > 1000:
            raise ValueError(f"{task.id}: could not draw {size} validation samples outside its test set")
        k = min(part_size, size - len(out))
        lengths = p.n_max - p.n_min + 1
        params = dataclasses.replace(
            p, samples_per_length=math.ceil(k / lengths), num_samples=k, seed=validation_seed(task.id, part)
        )
        out += [s for s in dataclasses.replace(task, params=params).samples(k) if guard.keep(s)]
        part += 1
    return out[:size]


class HeldOutGuard:
    """Remembers every test prompt of the training tasks and rejects training samples equal to one."""

    def __init__(self, tasks: Sequence["Task"]):
        self.prompts = {s.prompt for t in tasks for s in t.samples()}

    def keep(self, sample: "Sample") -> bool:
        return sample.prompt not in self.prompts


@dataclass
class Example:
    prompt: list[int]
    target: list[int]  # gen_length ids, [EOS]-padded
    maskable: list[bool]  # which target positions the noise may corrupt
    task: int  # index into the task list


def encode_sample(tok: "WordTokenizer", sample: "Sample", gen_length: int, task_index: int) -> Example:
    prompt = tok.encode_prompt(sample.prompt)
    target = tok.encode_answer(sample.answer, gen_length)
    if sample.output_format:
        maskable = [i == tok.mask_id for i in template_for(tok, sample, gen_length)]
    else:
        maskable = [True] * gen_length
    return Example(prompt, target, maskable, task_index)


def template_for(tok: "WordTokenizer", sample: "Sample", gen_length: int) -> list[int]:
    """The infilling canvas of a sample: formatting given, [MASK] on the answer's items."""
    slots = sample.output_format.count("[MASK]")
    fixed = len(tok.encode(sample.output_format.replace("[MASK]", "")))
    per_item = max(1, (len(tok.encode(sample.answer)) - fixed) // max(slots, 1))
    return tok.encode_template(sample.output_format, gen_length, tokens_per_item=per_item)


class TrainingStream:
    """Deterministic stream of batches: the batch of step s depends only on (seed, s)."""

    def __init__(
        self,
        tok: "WordTokenizer",
        tasks: Sequence["Task"],
        seed: int,
        batch_size: int,
        chunk_per_task: int = 512,
        guard: HeldOutGuard | None = None,
        weights: dict[str, float] | None = None,
    ):
        self.tok, self.tasks, self.seed = tok, list(tasks), seed
        self.weights = weights
        self.batch_size, self.chunk_per_task = batch_size, chunk_per_task
        self.guard = guard or HeldOutGuard(self.tasks)
        self._chunk_index = -1
        self._chunk: list[Example] = []
        total = sum(task_weight(t, weights) * chunk_per_task for t in self.tasks)
        self.steps_per_chunk = max(1, int(total // batch_size))

    def chunk(self, c: int) -> list[Example]:
        if c != self._chunk_index:
            examples: list[Example] = []
            for i, task in enumerate(self.tasks):
                size = int(round(task_weight(task, self.weights) * self.chunk_per_task))
                for s in train_split(task, c, self.seed, size):
                    if self.guard.keep(s):
                        examples.append(encode_sample(self.tok, s, task.max_new_tokens, i))
            self._chunk_index, self._chunk = c, examples
        return self._chunk

    def batch(self, step: int) -> list[Example]:
        """Examples of one generation length and one band of total lengths (so little
        padding: a Sudoku prompt is three times a Latin square's), drawn with replacement;
        a band is picked with probability proportional to its size, so the task mixture
        stays that of the chunk."""
        import torch

        c = step // self.steps_per_chunk
        examples = self.chunk(c)
        groups: dict[tuple[int, int], list[int]] = {}
        for i, e in enumerate(examples):
            band = (len(e.prompt) + len(e.target)) // LENGTH_BAND
            groups.setdefault((len(e.target), band), []).append(i)
        keys = sorted(groups)
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + step)
        sizes = torch.tensor([len(groups[k]) for k in keys], dtype=torch.float)
        members = groups[keys[int(torch.multinomial(sizes, 1, generator=g))]]
        picks = torch.randint(len(members), (self.batch_size,), generator=g).tolist()
        return [examples[members[i]] for i in picks]


def collate(examples: Sequence[Example], pad_id: int) -> dict[str, "torch.Tensor"]:
    """Right-padded canvas (prompt then answer) with the answer region marked."""
    import torch

    length = max(len(e.prompt) + len(e.target) for e in examples)
    b = len(examples)
    canvas = torch.full((b, length), pad_id, dtype=torch.long)
    attention = torch.zeros((b, length), dtype=torch.bool)
    answer = torch.zeros((b, length), dtype=torch.bool)
    maskable = torch.zeros((b, length), dtype=torch.bool)
    for r, e in enumerate(examples):
        p, g = len(e.prompt), len(e.target)
        canvas[r, :p] = torch.tensor(e.prompt)
        canvas[r, p : p + g] = torch.tensor(e.target)
        attention[r, : p + g] = True
        answer[r, p : p + g] = True
        maskable[r, p : p + g] = torch.tensor(e.maskable)
    return {"canvas": canvas, "attention": attention, "answer": answer, "maskable": maskable}


def vocabulary_pairs(tasks: Sequence["Task"], seed: int, chunks: int = 4, size: int = 512):
    """(prompt, answer) pairs of the first training chunks: the tokenizer's vocabulary source."""
    guard = HeldOutGuard(tasks)
    for task in tasks:
        for c in range(chunks):
            for s in train_split(task, c, seed, size):
                if guard.keep(s):
                    yield s.prompt, s.answer
                    if s.output_format:
                        yield s.output_format.replace("[MASK]", ""), ""


def extra_pieces() -> list[str]:
    """Every name of the Waiting Line name lists (first bare, last with its space), every
    puzzle / list symbol and every structured key and function name, so the vocabulary never
    depends on which ones a sample drew."""
    import json
    import string
    from importlib import resources

    pieces = [p + c for c in string.ascii_uppercase + string.digits for p in ("", " ")]
    try:
        names = json.loads((resources.files("parallelbench.tasks") / "data" / "names.json").read_text())
    except (FileNotFoundError, ModuleNotFoundError):
        return pieces
    pieces += list(names.get("first", [])) + [" " + last for last in names.get("last", [])]
    from parallelbench.models.tokenizer import split_pieces
    from parallelbench.tasks.structured import FUNCTIONS, KEYS

    pieces += list(KEYS) + list(FUNCTIONS)
    # a name as a JSON value carries its quotes (`"Susan`, ` Fox"`; splitter 4): every first
    # and every last name once in a one-field record
    firsts, lasts = names.get("first", []), names.get("last", [])
    for i in range(max(len(firsts), len(lasts))):
        pieces.append('{"customer": "%s %s"}' % (firsts[i % len(firsts)], lasts[i % len(lasts)]))

    return [p for x in pieces for p in split_pieces(x)]
