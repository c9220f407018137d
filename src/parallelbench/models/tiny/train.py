"""Training loop of the tiny model: masked (absorbing-state) or uniform-transition diffusion.

Reproducible by construction: the batch, the noise and the learning rate of step s depend
only on (seed, s), and a checkpoint holds the model, the optimiser and the step, so a run
stopped and resumed ends with the same weights as an uninterrupted one (on the same
machine and thread count). Checkpoints are written atomically (temp file + rename).

Checkpoint selection never looks at test samples: with `validate_every` set, the model is
decoded every that many steps (and at the last step) on a validation stream
(`data.validation_split`: validation seeds, test prompts removed), and the weights with the
best mean validation accuracy are the ones exported. Without it (the default, and the
shipped run), the last step is exported: nothing is selected at all. `config.json` records
which of the two happened (`selection`).
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import torch
import torch.nn.functional as F

from parallelbench.models.tiny.data import (
    EOS_WEIGHT,
    HeldOutGuard,
    TrainingStream,
    collate,
    extra_pieces,
    training_tasks,
    validation_split,
    vocabulary_pairs,
)
from parallelbench.models.tiny.model import TinyConfig, TinyDenoiser, alphabetical_ranks
from parallelbench.models.tokenizer import WordTokenizer

CHECKPOINT = "checkpoint.pt"
TOKENIZER = "tokenizer.json"
CONFIG = "config.json"
WEIGHTS = "model.pt"
LOG = "train_log.jsonl"
BEST = "best.pt"  # weights of the best validation accuracy so far (with validate_every)


@dataclass
class TrainConfig:
    out: str = "runs/tiny"
    steps: int = 11000
    minutes: float | None = None  # stop (with a checkpoint) after this wall time
    transition: str = "masked"  # "masked" | "uniform"
    seed: int = 0
    batch_size: int = 64
    lr: float = 2e-3
    warmup: int = 200
    weight_decay: float = 0.01
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    d_ff: int = 512
    rope: bool = True  # rotary positions instead of a learned position table
    tie: bool = False  # share the token embedding with the output head
    list_pos: int = 64  # size of the list-position embedding (0: none); see TinyConfig
    segments: bool = True  # prompt / answer segment embedding; see TinyConfig
    pointer: bool = True  # pointer-generator output over the prompt; see TinyConfig
    coverage: bool = True  # how often each token already stands in the answer; see TinyConfig
    neighbours: bool = True  # embeddings of the previous and next token ids; see TinyConfig
    grid: int = 8  # size of the grid row / column embeddings (0: none); see TinyConfig
    grid_bias: bool = True  # same-row / same-column attention biases; see TinyConfig
    grid_exclude: bool = True  # learned same-row / same-column candidate elimination; see TinyConfig
    rank: bool = True  # alphabetical-rank features of every token; see TinyConfig.token_rank
    grid_clean: float = 0.0  # share of rows whose grid codes are read from the clean answer
    field_key: bool = True  # field-key embedding of `key: value` fields; see TinyConfig.field_key
    field_count: bool = True  # field-count embedding (needs field_key); see TinyConfig.field_count
    init_from: str | None = None  # warm start: a trained model folder whose weights seed this run's
    task_weights: dict[str, float] | None = None  # per-task chunk shares replacing data.TASK_WEIGHT
    chunk_per_task: int = 512
    checkpoint_every: int = 250
    log_every: int = 25
    threads: int = 2
    tasks: list[str] | None = None  # task ids; None = every training task
    vocab_chunks: int = 4  # training chunks scanned for the vocabulary ...
    vocab_samples: int = 512  # ... of this many samples per task each
    stop_at: int | None = None  # stop early at this step (with a checkpoint), as if interrupted
    validate_every: int = 0  # decode the validation stream every N steps and export the best (0: export the last step)
    validate_samples: int = 16  # validation samples per training task
    extra: dict = field(default_factory=dict)


def lr_at(cfg: TrainConfig, step: int) -> float:
    """Linear warm-up, then cosine decay to a tenth of the peak at `cfg.steps`."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = min(1.0, (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup))
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


T_MIN = 0.05  # smallest masking ratio drawn (see masked_diffusion_loss)


def masked_diffusion_loss(
    model: TinyDenoiser, batch: dict[str, torch.Tensor], gen: torch.Generator, grid_clean: float = 0.0
) -> torch.Tensor:
    """MDLM/LLaDA objective: per row a masking ratio t, each maskable answer position masked
    with probability t, cross-entropy on the masked positions weighted by 1/t, normalised by
    the number of answer positions. The prompt is never masked.

    Variance reduction (same expectation over t in [T_MIN, 1]): t is drawn log-uniformly
    (stratified over the batch) instead of uniformly, with the importance weight folded in,
    so every masked token carries the same weight ln(1/T_MIN) = (1/t) / q(t). Drawn
    uniformly, the few rows with tiny t (one masked token, usually an [EOS], weighted up to
    1/t = 1000) dominate each batch's gradient and the model never learns to copy."""
    canvas, maskable = batch["canvas"], batch["maskable"]
    b = canvas.shape[0]
    u = (torch.rand((), generator=gen) + torch.arange(b) / b) % 1.0
    t = T_MIN**u
    noise = (torch.rand(canvas.shape, generator=gen) < t[:, None]) & maskable
    inputs = canvas.masked_fill(noise, model.mask_id)
    extra = {}
    if grid_clean > 0:
        # these rows read their grid codes from the clean answer (see TinyDenoiser.forward)
        clean = torch.rand(b, generator=gen) < grid_clean
        extra["layout"] = torch.where(clean[:, None], canvas, inputs)
    logits = model(inputs, attention_mask=batch["attention"], positions=noise, **extra)
    ce = F.cross_entropy(logits, canvas[noise], reduction="none")
    # The [EOS] padding is most of an answer; at full weight it swamps the few content tokens.
    w = torch.where(canvas[noise] == model.eos_id, EOS_WEIGHT, 1.0)
    return (ce * w).sum() * math.log(1 / T_MIN) / batch["answer"].sum()


def _loss_fn(transition: str) -> Callable:
    if transition == "masked":
        return masked_diffusion_loss
    if transition == "uniform":
        from parallelbench.models.tiny.uniform import uniform_diffusion_loss

        return uniform_diffusion_loss
    raise ValueError(f"unknown transition {transition!r}; use 'masked' or 'uniform'")


def build_tokenizer(tasks: Sequence, cfg: TrainConfig) -> WordTokenizer:
    pairs = vocabulary_pairs(tasks, cfg.seed, cfg.vocab_chunks, cfg.vocab_samples)
    return WordTokenizer.build(pairs, extra_pieces())


def model_config(cfg: TrainConfig, tok: WordTokenizer) -> TinyConfig:
    """The network's shape for a training config and its tokenizer."""
    return TinyConfig(
        vocab_size=tok.vocab_size, mask_id=tok.mask_id, eos_id=tok.eos_id, pad_id=tok.pad_id,
        sep_id=tok.sep_id, rope=cfg.rope, tie=cfg.tie, list_pos=cfg.list_pos,
        segments=cfg.segments, pointer=cfg.pointer, coverage=cfg.coverage, neighbours=cfg.neighbours, list_open_id=tok.index.get('["'),
        d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads, d_ff=cfg.d_ff,
        grid=cfg.grid, grid_bias=cfg.grid_bias and cfg.grid > 0,
        grid_exclude=cfg.grid_exclude and cfg.grid_bias and cfg.grid > 0,
        token_rank=alphabetical_ranks(tok.tokens) if cfg.rank else None, **(grid_token_ids(tok) if cfg.grid else {}),
        **(field_token_ids(tok, cfg.field_count) if cfg.field_key else {}),
    )


# Key separators (`": "` / `": ` in a JSON answer; in the prompt's `key: "Name"` / `key: 12`
# lines the phrase `: "` and a bare `:`, the space before a digit being a token of its own) and
# field ends (comma pieces, closing braces, `{"`).
FIELD_SEPARATORS = ('": "', '": ', ': "', ": ", ":")
FIELD_ENDS = ('", "', ', "', '"}', "}", '{"', "{")


def field_token_ids(tok: WordTokenizer, count: bool = False) -> dict:
    """The tokens of the field-key embedding (see TinyConfig.field_key): separators, and field
    ends (the pieces above and every token holding a line break); off without separators.
    `count` also turns on the field-count embedding, which counts the same separators."""
    seps = [tok.index[w] for w in FIELD_SEPARATORS if w in tok.index]
    ends = sorted({tok.index[w] for w in FIELD_ENDS if w in tok.index} | {i for w, i in tok.index.items() if "\n" in w})
    return {"field_key": bool(seps), "field_sep_ids": seps, "field_end_ids": ends, "field_count": bool(seps) and count}


def grid_token_ids(tok: WordTokenizer) -> dict:
    """The tokens that shape a grid (see TinyConfig.grid): line breaks (any token holding a
    newline), the row break (the newline token itself, which ends a row after a cell: our
    grids are written one row per line), the skipped separator (a comma) and the cells
    (single letters and digits)."""
    def ids(word: str) -> list[int] | None:
        return [tok.index[word]] if word in tok.index else None

    return {
        "grid_line_ids": [i for w, i in tok.index.items() if "\n" in w],
        "grid_row_ids": ids("\n"),
        "grid_skip_ids": ids(","),
        "grid_cell_ids": sorted(i for w, i in tok.index.items() if len(w) == 1 and w.isalnum()),
    }


def validation_accuracy(model: TinyDenoiser, tok: WordTokenizer, validation: Sequence) -> float:
    """Mean over tasks of the exact score on their validation samples: greedy, one token per
    step, most confident position first (the accuracy table's judged column)."""
    from parallelbench.decoding import build_strategy
    from parallelbench.models.diffusion import DiffusionTextModel
    from parallelbench.scoring import score

    was_training = model.training
    model.eval()
    try:
        bench = DiffusionTextModel(model, tok, name="tiny-validation", batch_size=64)
        strategy = build_strategy("confidence-topk", k=1)
        means = []
        with torch.no_grad():
            for task, samples in validation:
                gens = bench.generate(samples, strategy, max_new_tokens=task.max_new_tokens, seed=0)
                means.append(sum(score(x, g.text).score for x, g in zip(samples, gens)) / len(samples))
    finally:
        model.train(was_training)
    return sum(means) / len(means)


def _atomic_save(obj, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


class CheckpointError(ValueError):
    """A checkpoint.pt that `--resume` cannot read (refused by weights_only, truncated, foreign)."""


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def train(cfg: TrainConfig, resume: bool = False, progress: bool = True) -> Path:
    """Train (or resume) into `cfg.out`; returns the folder holding the exported model."""
    torch.set_num_threads(cfg.threads)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    tasks = training_tasks(cfg.tasks)
    ckpt_path = out / CHECKPOINT
    state = None
    if resume and ckpt_path.exists():
        try:  # weights_only: a planted checkpoint can hold tensors and numbers, never code
            state = torch.load(ckpt_path, map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001 - unpickling refused, truncated or foreign file
            reason = " ".join(str(exc).split())[:160]
            raise CheckpointError(
                f"{ckpt_path} is not a training checkpoint this version can resume ({type(exc).__name__}: {reason}); "
                "delete it or drop --resume to start afresh"
            ) from None
        # Checkpoints from before the grid embedding existed trained without it.
        saved = TrainConfig(**{"grid": 0, "grid_bias": False, "grid_clean": 0.0, "grid_exclude": False, "rank": False,
                               "field_key": False, "field_count": False, **state["train_config"]})
        # The run's identity comes from the checkpoint; only the stopping rule may change.
        saved.steps, saved.minutes, saved.out, saved.stop_at = cfg.steps, cfg.minutes, cfg.out, cfg.stop_at
        cfg = saved
        tok = WordTokenizer.load(out / TOKENIZER)
    else:
        if resume:
            raise FileNotFoundError(
                f"--resume given but {ckpt_path} does not exist; drop --resume to start afresh"
            )
        tok = build_tokenizer(tasks, cfg)
        tok.save(out / TOKENIZER)
    torch.manual_seed(cfg.seed)
    mcfg = model_config(cfg, tok)
    model = TinyDenoiser(mcfg)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=cfg.lr, betas=(0.9, 0.98),
    )
    step, elapsed = 0, 0.0
    best = None  # {"step", "accuracy"} of the best validation so far
    if state is None and cfg.init_from:
        warm_start(model, tok, Path(cfg.init_from))
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        step, elapsed = state["step"], state["elapsed"]
        best = state.get("best")
    guard = HeldOutGuard(tasks)
    validation = [(t, validation_split(t, cfg.validate_samples, guard)) for t in tasks] if cfg.validate_every else None
    stream = TrainingStream(
        tok, tasks, cfg.seed, cfg.batch_size, cfg.chunk_per_task, guard=guard, weights=cfg.task_weights
    )
    loss_fn = _loss_fn(cfg.transition)
    # the uniform loss has no [MASK] tokens to scramble the grid codes
    loss_extra = {"grid_clean": cfg.grid_clean} if cfg.grid_clean and cfg.transition == "masked" else {}

    def checkpoint() -> None:
        _atomic_save(
            {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step,
             "elapsed": elapsed, "train_config": asdict(cfg), "model_config": mcfg.to_dict(), "best": best},
            ckpt_path,
        )

    start = time.time() - elapsed
    deadline = None if cfg.minutes is None else time.time() + 60 * cfg.minutes
    log = (out / LOG).open("a")
    bar = _Progress(enabled=progress, total=cfg.steps, done=step)
    model.train()
    running = None
    try:
        while step < cfg.steps:
            if deadline is not None and time.time() >= deadline:
                break
            if cfg.stop_at is not None and step >= cfg.stop_at:
                break
            batch = collate(stream.batch(step), tok.pad_id)
            gen = torch.Generator().manual_seed(cfg.seed * 1_000_003 + step)
            for g in opt.param_groups:
                g["lr"] = lr_at(cfg, step)
            loss = loss_fn(model, batch, gen, **loss_extra)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            value = float(loss.detach())
            running = value if running is None else 0.98 * running + 0.02 * value
            elapsed = time.time() - start
            bar.update(step, running)
            if step % cfg.log_every == 0 or step == cfg.steps:
                log.write(json.dumps({"step": step, "loss": round(value, 5), "avg": round(running, 5),
                                      "lr": lr_at(cfg, step - 1), "elapsed": round(elapsed, 1)}) + "\n")
                log.flush()
            if validation is not None and (step % cfg.validate_every == 0 or step == cfg.steps):
                accuracy = validation_accuracy(model, tok, validation)
                log.write(json.dumps({"step": step, "valid_accuracy": round(accuracy, 5)}) + "\n")
                log.flush()
                if best is None or accuracy > best["accuracy"]:
                    best = {"step": step, "accuracy": accuracy}
                    _atomic_save({k: v.detach().clone() for k, v in model.state_dict().items()}, out / BEST)
            if step % cfg.checkpoint_every == 0:
                checkpoint()
    finally:
        bar.close()
        log.close()
    checkpoint()
    if validation is not None and best is not None and (out / BEST).exists():
        selection = {"rule": "best mean validation accuracy (confidence top-k, k = 1, greedy) on the validation "
                             "stream, disjoint from the test sets", "step": best["step"],
                     "valid_accuracy": round(best["accuracy"], 5), "samples_per_task": cfg.validate_samples}
        last = {k: v.detach().clone() for k, v in model.state_dict().items()}
        model.load_state_dict(torch.load(out / BEST, map_location="cpu", weights_only=True))
        export(model, tok, out, cfg, step, elapsed, selection)
        model.load_state_dict(last)
    else:
        export(model, tok, out, cfg, step, elapsed, {"rule": "last step (no checkpoint selection)", "step": step})
    return out


def _source_token(token: str, old: dict[str, int]) -> int | None:
    """The old vocabulary's token whose rows seed a new token's: the same text, or the text
    without the JSON quotes a splitter-4 name carries (`"Susan` <- `Susan`), or the prompt's
    old `: "` for its new `: `."""
    for cand in (token, token.strip('"'), token.lstrip('"'), token.rstrip('"'), token + '"'):
        if cand in old:
            return old[cand]
    return None


def warm_start(model: TinyDenoiser, tok: WordTokenizer, folder: Path) -> dict:
    """Load a trained model's weights into a new network whose vocabulary may differ.

    Parameters of equal shape are copied; rows indexed by token (embeddings, the output
    head) are copied by token text (`_source_token`), so a tokenizer change keeps what the
    old network knew about every word; new parameters keep their initialisation (zero for the
    field-count embedding). Returns counts of what was carried over, for the log."""
    from parallelbench.models.tiny import FILES, MASKED

    for prefix in ("", MASKED):  # a `parallelbench train` folder, or the shipped weights/ folder
        _, weights, tokenizer = (folder / (prefix + name) for name in FILES)
        if weights.exists():
            break
    else:
        raise FileNotFoundError(f"--init-from {folder}: no model.pt (a `parallelbench train` folder) or "
                                "masked-model.pt (the shipped weights) there; pass a trained model folder")
    old_tok = WordTokenizer.load(tokenizer)
    old = torch.load(weights, map_location="cpu", weights_only=True)
    sources = [_source_token(t, old_tok.index) for t in tok.tokens]
    rows = torch.tensor([-1 if i is None else i for i in sources])
    carried = {"copied": 0, "by_token": 0, "new": 0, "tokens_seeded": int((rows >= 0).sum()),
               "tokens": len(tok.tokens)}
    state = model.state_dict()
    with torch.no_grad():
        for name, value in state.items():
            src = old.get(name)
            if src is None:
                carried["new"] += 1
                continue
            src = src.to(value.dtype)
            if src.shape == value.shape and value.shape[:1] != (len(tok.tokens),):
                value.copy_(src)
                carried["copied"] += 1
            elif value.dim() >= 1 and value.shape[0] == len(tok.tokens) and src.shape[0] == len(old_tok.tokens) \
                    and src.shape[1:] == value.shape[1:]:
                keep = rows >= 0
                value[keep] = src[rows[keep]]
                carried["by_token"] += 1
            else:
                carried["new"] += 1
    model.load_state_dict(state)
    return carried


def export(
    model: TinyDenoiser, tok: WordTokenizer, out: Path, cfg: TrainConfig, step: int, elapsed: float, selection: dict | None = None
) -> None:
    """Write the shippable files: fp16 weights (a plain torch state dict, loaded with
    weights_only=True), model config, tokenizer, training facts (which step was exported
    and by what rule: `selection`)."""
    tensors = {k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items()}
    _atomic_save(tensors, out / WEIGHTS)
    info = {
        "model": model.cfg.to_dict(),
        "transition": cfg.transition,
        "train": {**asdict(cfg), "steps_done": step, "seconds": round(elapsed, 1),
                  "torch": torch.__version__, "threads": cfg.threads},
        "parameters": model.num_parameters(),
        "selection": selection or {"rule": "last step (no checkpoint selection)", "step": step},
    }
    _atomic_write(out / CONFIG, json.dumps(info, indent=1))
    if not (out / TOKENIZER).exists():
        tok.save(out / TOKENIZER)


class _Progress:
    """A Rich progress bar when wanted, silent otherwise (background runs log to train_log.jsonl)."""

    def __init__(self, enabled: bool, total: int, done: int):
        self.p = None
        if enabled:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)

            self.p = Progress(TextColumn("training"), BarColumn(), MofNCompleteColumn(),
                              TextColumn("loss {task.fields[loss]}"), TimeElapsedColumn(),
                              TimeRemainingColumn())
            self.p.start()
            self.task = self.p.add_task("train", total=total, completed=done, loss="-")

    def update(self, step: int, loss: float) -> None:
        if self.p is not None:
            self.p.update(self.task, completed=step, loss=f"{loss:.3f}")

    def close(self) -> None:
        if self.p is not None:
            self.p.stop()
