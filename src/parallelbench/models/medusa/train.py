"""Train Medusa-1 heads on a frozen causal LM (the paper's Medusa study, CPU-sized).

Training text is ours: chat prompts with their reference answers from the task generators
(drawn from the bundled model's training seed stream, disjoint from every test seed; any
sample whose prompt equals a test prompt is dropped), plus the backbone's own greedy
continuations of varied prompts, so the heads learn to guess what this backbone would say.
Head i at position t is trained to predict the token at t + 2 + i with cross-entropy,
weighted 0.8**i as Medusa does; the backbone never changes.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from parallelbench.models.medusa.heads import MedusaHeads, save_heads

from parallelbench.models.medusa.defaults import DEFAULT_TASKS
VARIED_PROMPTS = (
    "Write one sentence about the sea.", "Name three fruits.", "What is the capital of France?",
    "Describe a rainy morning in two sentences.", "List the days of the week.", "Count from one to ten.",
    "Give a short tip for learning to cook.", "Explain what a list is in one sentence.",
    "Write a haiku about autumn.", "Tell me a fun fact about cats.", "Summarise: the meeting moved to Friday.",
    "Spell the word 'parallel'.",
)


@dataclass
class MedusaTrainConfig:
    heads: int = 4
    max_steps: int = 200
    epochs: int = 1
    samples: int = 64  # task samples per task
    distill: int = 12  # backbone greedy continuations of varied prompts
    distill_tokens: int = 48
    batch_size: int = 8
    positions: int = 256  # positions per head per batch that get a loss (caps the vocabulary matmul)
    lr: float = 1e-3
    warmup: float = 0.05
    decay: float = 0.8  # loss weight of head i is decay**i
    seed: int = 0
    tasks: list[str] = field(default_factory=lambda: list(DEFAULT_TASKS))


Sequence_ = tuple[list[int], int]  # token ids, first position that gets a loss (the prompt's last token)


def build_corpus(base: Any, cfg: MedusaTrainConfig, log: Callable[[str], None] = lambda _: None) -> list[Sequence_]:
    """Prompt + answer + stop for task samples, prompt + greedy output for varied ones.

    Only answer positions get a loss: heads are only ever asked to guess inside an answer.
    """
    from parallelbench.models.tiny.data import HeldOutGuard, train_split
    from parallelbench.tasks import get_task

    tasks = [get_task(t) for t in cfg.tasks]
    guard = HeldOutGuard(tasks)
    corpus: list[Sequence_] = []
    dropped = 0
    tok = base.chat.tokenizer
    stop = base.stop_ids[0]
    for task in tasks:
        for sample in train_split(task, 0, cfg.seed, cfg.samples):
            if not guard.keep(sample):
                dropped += 1
                continue
            answer = tok(sample.answer, add_special_tokens=False)["input_ids"]
            prompt = base.chat.encode_chat(sample.messages)
            corpus.append((prompt + [int(i) for i in answer] + [stop], len(prompt) - 1))
    log(f"{len(corpus)} task sequences from {len(tasks)} tasks (training seeds; {dropped} equal to a test prompt dropped)")
    if cfg.distill:
        rng = random.Random(cfg.seed)
        prompts = list(dict.fromkeys(rng.choice(VARIED_PROMPTS) for _ in range(cfg.distill)))
        for text in prompts:
            prompt = base.chat.encode_chat([{"role": "user", "content": text}])
            corpus.append((prompt + greedy_ids(base, prompt, cfg.distill_tokens), len(prompt) - 1))
        log(f"{len(prompts)} greedy continuations of varied prompts from the backbone")
    return corpus


@torch.no_grad()
def greedy_ids(base: Any, prompt: list[int], max_new_tokens: int) -> list[int]:
    """The backbone's greedy continuation as token ids (up to and including its stop token)."""
    device = next(base.model.parameters()).device
    out = base.model.generate(input_ids=torch.tensor([prompt], device=device), max_new_tokens=max_new_tokens,
                              do_sample=False, eos_token_id=base.stop_ids, pad_token_id=base.pad_id)
    return [int(t) for t in out[0, len(prompt):]]


def _batches(corpus: Sequence[Sequence_], cfg: MedusaTrainConfig, epoch: int) -> list[list[Sequence_]]:
    order = list(range(len(corpus)))
    random.Random(cfg.seed * 7919 + epoch).shuffle(order)
    return [[corpus[i] for i in order[s : s + cfg.batch_size]] for s in range(0, len(order), cfg.batch_size)]


def head_loss(heads: MedusaHeads, hidden: torch.Tensor, ids: torch.Tensor, valid: torch.Tensor,
              backbone_head: torch.nn.Module, cfg: MedusaTrainConfig, gen: torch.Generator) -> tuple[torch.Tensor, list[float]]:
    """Weighted CE of every head on up to `cfg.positions` sampled positions; also each head's top-1 accuracy."""
    total = hidden.new_zeros(())
    accs: list[float] = []
    length = ids.shape[1]
    for i in range(heads.num_heads):
        shift = 2 + i
        if length <= shift:
            accs.append(0.0)
            continue
        ok = valid[:, :-shift] & valid[:, shift:]
        rows, cols = ok.nonzero(as_tuple=True)
        if rows.numel() == 0:
            accs.append(0.0)
            continue
        if rows.numel() > cfg.positions:
            pick = torch.randperm(rows.numel(), generator=gen)[: cfg.positions]
            rows, cols = rows[pick], cols[pick]
        logits = heads.heads[i](hidden[rows, cols])
        if not heads.own_projection:
            logits = backbone_head(logits)
        target = ids[rows, cols + shift]
        total = total + (cfg.decay ** i) * torch.nn.functional.cross_entropy(logits.float(), target)
        accs.append(float((logits.argmax(-1) == target).float().mean()))
    return total, accs


def train_heads(base: Any, out: str | Path, cfg: MedusaTrainConfig, *, base_spec: str,
                log: Callable[[str], None] = lambda _: None, progress: Any = None,
                corpus: list[Sequence_] | None = None) -> dict[str, Any]:
    """Train, save to `out` (Medusa-1 format), and return a summary with the per-head accuracies.

    `corpus` replaces the generated training text (token ids, first loss position).
    """
    torch.manual_seed(cfg.seed)
    model = base.model
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    device = next(model.parameters()).device
    backbone_head = model.get_output_embeddings()
    corpus = build_corpus(base, cfg, log) if corpus is None else corpus
    if not corpus:
        raise ValueError("no training text: every generated sample matched a test prompt; raise --samples")
    heads = MedusaHeads(cfg.heads, int(model.config.hidden_size), base.vocab_size).to(device)
    opt = torch.optim.AdamW(heads.parameters(), lr=cfg.lr, weight_decay=0.0)
    steps_per_epoch = math.ceil(len(corpus) / cfg.batch_size)
    total_steps = max(1, min(cfg.max_steps, steps_per_epoch * cfg.epochs))
    warm = max(1, int(cfg.warmup * total_steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warm if s < warm else 0.5 * (1 + math.cos(math.pi * (s - warm) / max(1, total_steps - warm))))
    gen = torch.Generator().manual_seed(cfg.seed)
    pad = base.pad_id
    step, began, last_loss, last_acc = 0, time.perf_counter(), float("nan"), []
    task = progress.add_task("medusa heads", total=total_steps) if progress is not None else None
    for epoch in range(cfg.epochs):
        for batch in _batches(corpus, cfg, epoch):
            if step >= total_steps:
                break
            width = max(len(seq) for seq, _ in batch)
            ids = torch.full((len(batch), width), pad, dtype=torch.long)
            real = torch.zeros((len(batch), width), dtype=torch.bool)
            scored = torch.zeros((len(batch), width), dtype=torch.bool)
            for r, (seq, start) in enumerate(batch):
                ids[r, : len(seq)] = torch.tensor(seq)
                real[r, : len(seq)] = True
                scored[r, max(0, start) : len(seq)] = True
            ids, real, scored = ids.to(device), real.to(device), scored.to(device)
            with torch.no_grad():
                hidden = model.base_model(input_ids=ids, attention_mask=real.long()).last_hidden_state
            loss, accs = head_loss(heads, hidden, ids, scored, backbone_head, cfg, gen)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(heads.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            last_loss, last_acc = loss.item(), accs
            if progress is not None:
                progress.update(task, advance=1, description=f"medusa heads · loss {last_loss:.3f} · head-1 acc {accs[0]:.2f}")
    summary = {"steps": step, "loss": last_loss, "head_accuracy": last_acc, "sequences": len(corpus),
               "seconds": round(time.perf_counter() - began, 1), "config": asdict(cfg)}
    save_heads(heads, out, base_model=base_spec, extra={"training": summary})
    return summary
