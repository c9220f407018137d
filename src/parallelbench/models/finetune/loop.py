"""The fine-tuning loop shared by the LoRA (hf:) and full (tiny) back ends.

Epochs over a fixed training set in an order drawn from (seed, epoch); each optimiser step
takes `batch_size` examples, split into `grad_accum` micro-batches; AdamW with linear
warm-up and cosine decay over the planned steps (epochs x steps per epoch, capped by
`max_steps`). The noise of step s depends only on (seed, s), and a checkpoint after every
epoch holds the trainable weights, the optimiser and the position, so a resumed run ends
with the weights an uninterrupted one would have (same machine and threads).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import torch

CHECKPOINT = "finetune-checkpoint.pt"


@dataclass
class FinetuneConfig:
    base: str
    tasks: list[str]
    train_samples: int
    val_samples: int
    epochs: int
    batch_size: int
    lr: float
    warmup: float
    max_steps: int | None = None
    grad_accum: int = 1
    weight_decay: float = 0.0
    rank: int = 0  # LoRA only
    alpha: int = 0
    dropout: float = 0.0
    val_decode: int = 64  # validation samples per task decoded one by one each epoch
    seed: int = 0
    model_options: dict = field(default_factory=dict)
    stop_after: int | None = None  # tests: stop after this epoch, as if interrupted


class Backend(Protocol):
    """What the loop needs from a model: trainable parameters, a loss, a decoder and an export."""

    def parameters(self) -> list[torch.nn.Parameter]: ...
    def loss(self, examples: Sequence[Any], gen: torch.Generator) -> torch.Tensor: ...
    def train_mode(self, on: bool) -> None: ...
    def trainable_state(self) -> dict[str, torch.Tensor]: ...
    def load_trainable_state(self, state: dict[str, torch.Tensor]) -> None: ...
    def accuracy(self, samples: Sequence[Any]) -> float: ...
    def export(self, out: Path, record: dict) -> None: ...


def steps_per_epoch(n_train: int, batch_size: int) -> int:
    return max(1, math.ceil(n_train / batch_size))


def planned_steps(cfg: FinetuneConfig, n_train: int) -> int:
    total = cfg.epochs * steps_per_epoch(n_train, cfg.batch_size)
    return min(total, cfg.max_steps) if cfg.max_steps else total


def lr_at(cfg: FinetuneConfig, step: int, total: int) -> float:
    """Linear warm-up over `warmup` of the steps, then cosine decay to zero."""
    warm = max(1, math.ceil(cfg.warmup * total)) if cfg.warmup > 0 else 0
    if step < warm:
        return cfg.lr * (step + 1) / warm
    progress = min(1.0, (step - warm) / max(1, total - warm))
    return cfg.lr * 0.5 * (1 + math.cos(math.pi * progress))


def epoch_order(n: int, seed: int, epoch: int) -> list[int]:
    g = torch.Generator().manual_seed(seed * 1_000_003 + 7919 * (epoch + 1))
    return torch.randperm(n, generator=g).tolist()


@torch.no_grad()
def validation_loss(backend: Backend, examples: Sequence[Any], batch_size: int, seed: int) -> float:
    """Mean loss over the validation examples with fixed noise (comparable across epochs)."""
    total, n = 0.0, 0
    for i in range(0, len(examples), batch_size):
        chunk = examples[i : i + batch_size]
        gen = torch.Generator().manual_seed(seed * 7_000_003 + i)
        total += float(backend.loss(chunk, gen)) * len(chunk)
        n += len(chunk)
    return total / max(1, n)


def decode_subset(val_samples: Sequence[Any], per_task: int) -> list[Any]:
    """The first `per_task` validation samples of each task (what is decoded one by one)."""
    seen: dict[str, int] = {}
    out = []
    for s in val_samples:
        if seen.get(s.task, 0) < per_task:
            out.append(s)
            seen[s.task] = seen.get(s.task, 0) + 1
    return out


def _fmt(acc: float | None) -> str:
    return "-" if acc is None else f"{acc:.3f}"


def _atomic_save(obj: Any, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


class CheckpointError(ValueError):
    """A checkpoint that --resume cannot use."""


def load_checkpoint(out: Path) -> dict:
    path = out / CHECKPOINT
    if not path.exists():
        raise CheckpointError(f"{path} does not exist; drop --resume to start afresh")
    try:  # weights_only: a planted file can hold tensors and numbers, never code
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - truncated, foreign or refused file
        reason = " ".join(str(exc).split())[:160]
        raise CheckpointError(f"{path} is not a fine-tuning checkpoint ({type(exc).__name__}: {reason}); "
                              "delete it or drop --resume") from None


def run(
    backend: Backend,
    cfg: FinetuneConfig,
    train: Sequence[Any],
    val: Sequence[Any],
    val_samples: Sequence[Any],
    out: Path,
    *,
    data_fingerprint: str,
    state: dict | None = None,
    progress: Any = None,
    log: Callable[[str], None] = lambda _: None,
) -> dict:
    """Train `backend` on the encoded `train` examples; returns the history written to the record."""
    params = backend.parameters()
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    spe = steps_per_epoch(len(train), cfg.batch_size)
    total = planned_steps(cfg, len(train))
    step, epoch, history, elapsed = 0, 0, [], 0.0
    decode_set = decode_subset(val_samples, cfg.val_decode)
    if state is not None:
        if state.get("data") != data_fingerprint:
            raise CheckpointError("the checkpoint was trained on other data (tasks, sizes or seed differ); "
                                  "resume with the original options or drop --resume")
        backend.load_trainable_state(state["trainable"])
        opt.load_state_dict(state["optimizer"])
        step, epoch, history, elapsed = state["step"], state["epoch"], list(state["history"]), state["elapsed"]
    else:
        backend.train_mode(False)
        acc = backend.accuracy(decode_set) if decode_set else None
        history.append({"epoch": 0, "step": 0, "val_accuracy": acc})
        if acc is not None:
            log(f"before fine-tuning: validation accuracy (one by one, {len(decode_set)} samples) {acc:.3f}")

    def checkpoint() -> None:
        _atomic_save({"trainable": backend.trainable_state(), "optimizer": opt.state_dict(), "step": step,
                      "epoch": epoch, "history": history, "elapsed": elapsed, "config": asdict(cfg),
                      "data": data_fingerprint}, out / CHECKPOINT)

    bar = None
    if progress is not None:
        bar = progress.add_task("fine-tuning", total=total, completed=step, loss="-", val_loss="-",
                                val_acc=_fmt(history[-1]["val_accuracy"]) if history else "-")
    began = time.time() - elapsed
    micro = math.ceil(cfg.batch_size / max(1, cfg.grad_accum))
    running = None
    interrupted = False
    try:
        while step < total and epoch < cfg.epochs:
            if cfg.stop_after is not None and epoch >= cfg.stop_after:
                interrupted = True
                break
            order = epoch_order(len(train), cfg.seed, epoch)
            first = step - epoch * spe  # resumed mid-way only if max_steps cut an epoch short
            backend.train_mode(True)
            for b in range(max(0, first), spe):
                if step >= total:
                    break
                batch = [train[i] for i in order[b * cfg.batch_size : (b + 1) * cfg.batch_size]]
                for g in opt.param_groups:
                    g["lr"] = lr_at(cfg, step, total)
                opt.zero_grad(set_to_none=True)
                value = 0.0
                for m in range(0, len(batch), micro):
                    part = batch[m : m + micro]
                    gen = torch.Generator().manual_seed(cfg.seed * 1_000_003 + step * 1_009 + m)
                    loss = backend.loss(part, gen) * (len(part) / len(batch))
                    loss.backward()
                    value += float(loss.detach())
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                opt.step()
                step += 1
                running = value if running is None else 0.95 * running + 0.05 * value
                if bar is not None:
                    progress.update(bar, completed=step, loss=f"{running:.4f}")
            epoch += 1
            backend.train_mode(False)
            vloss = validation_loss(backend, val, micro, cfg.seed)
            acc = backend.accuracy(decode_set) if decode_set else None
            elapsed = time.time() - began
            history.append({"epoch": epoch, "step": step, "loss": running, "val_loss": vloss, "val_accuracy": acc,
                            "seconds": round(elapsed, 1)})
            if bar is not None:
                progress.update(bar, val_loss=f"{vloss:.4f}", val_acc=_fmt(acc))
            log(f"epoch {epoch}/{cfg.epochs}: step {step}/{total}, loss {running:.4f}, validation loss {vloss:.4f}, "
                f"validation accuracy (one by one, {len(decode_set)} samples) {_fmt(acc)}")
            checkpoint()
    except KeyboardInterrupt:
        elapsed = time.time() - began
        checkpoint()
        raise
    elapsed = time.time() - began
    if interrupted:
        checkpoint()
        return {"history": history, "steps": step, "seconds": round(elapsed, 1), "complete": False}
    checkpoint()
    return {"history": history, "steps": step, "seconds": round(elapsed, 1), "complete": True,
            "planned_steps": total, "steps_per_epoch": spe}
