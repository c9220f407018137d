"""Clean-room reference loops of the official block-diffusion decoding routines, written from
their described behaviour (not their code), for one prompt at a time, greedy.

Common to all three: the sequence is the prompt followed by masks up to the next multiple of
the block length B after prompt + gen_length (`total`); positions are 0..total-1; the model
sees a block-causal mask (position i attends j iff j // B <= i // B); blocks are decoded in
order from the one holding the prompt's tail (the prompt's whole blocks are only context);
each step reads the active block's logits, proposes argmax tokens and takes their softmax
probability as confidence (the greedy rule: SDAR's generate.py samples, so its helper is
swapped for this one; LLaDA2 does this at temperature 0). Each function returns the
generated part (total - prompt tokens; mask ids where decoding stopped early) and the number
of denoising model calls (SDAR's extra call that only stores a finished block's keys and
values is not one).

- `sdar_generate` (SDAR / TraDo `block_diffusion_generate`): per block, the per-step count
  n_s follows LLaDA's split of B over `denoising_steps` S (B // S, the first B % S steps one
  more). 'low_confidence_static' commits the n_s most confident masked slots;
  'low_confidence_dynamic' commits every masked slot above `confidence_threshold` when there
  are at least n_s of them, else the n_s most confident; 'sequential' the n_s slots from
  the first masked one on. A block ends when it has no mask
  (at most S steps). With stop ids, decoding stops after the block in which one appears.
  The official code picks its n_s slots from the whole block; when fewer than n_s masks are
  left (the first block's prompt tail, or after a threshold step) it also overwrites n_s - m
  settled slots with their arg-max. We take min(n_s, m), the evident intent: tests use
  layouts where the two agree unless they say otherwise.
- `llada2_generate` (LLaDA2.0 `generate(block_length, steps, threshold)`): steps is capped at
  gen_length // minimal_topk; per block the same n_s schedule, the threshold rule with at
  least min(n_s, masks left); at most `steps` steps per block; after a block completes,
  decoding stops if an EOS appears in the generated part so far.
- `llada21_generate` (LLaDA2.1 `generate(threshold, editing_threshold, max_post_steps)`):
  per step, mask to token: masked slots above `threshold`, at least `num_to_transfer`
  (the most confident); token to token: every settled, non-prompt slot of the block whose
  arg-max differs from its token and has probability above `editing_threshold` takes the
  arg-max. Once the block has no mask at the start of a step, that step is an edit-only
  step: at most `max_post_steps` of them, and the block ends after one that edits nothing.
  With `eos_early_stop`, decoding stops after a complete block when the generated part
  holds an EOS.
"""

from __future__ import annotations

import torch

from block_causal_toy import official_forward


def split_steps(block_length: int, steps: int) -> list[int]:
    base, extra = divmod(block_length, steps)
    return [base + (1 if s < extra else 0) for s in range(steps)]


def _layout(prompt: list[int], gen_length: int, block_length: int, mask_id: int) -> tuple[torch.Tensor, int, int]:
    p = len(prompt)
    total = -(-(p + gen_length) // block_length) * block_length
    x = torch.full((1, total), mask_id, dtype=torch.long)
    x[0, :p] = torch.tensor(prompt)
    return x, p, total


def _greedy(net, x: torch.Tensor, end: int, block_length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(arg-max token, its softmax probability) of the last block of x[:, :end]."""
    logits = official_forward(net, x[:, :end], block_length)[0, end - block_length : end].float()
    probs = torch.softmax(logits, dim=-1)
    p, tok = probs.max(dim=-1)
    return tok, p


def _most_confident(conf: torch.Tensor, masked: torch.Tensor, count: int) -> torch.Tensor:
    pick = torch.zeros_like(masked)
    c = torch.where(masked, conf, torch.tensor(-1.0))
    pick[torch.topk(c, min(count, int(masked.sum()))).indices] = True
    return pick


def sdar_generate(net, prompt, *, mask_id, gen_length, block_length, denoising_steps,
                  remasking_strategy="low_confidence_dynamic", confidence_threshold=0.85, stop_ids=None):
    x, p, total = _layout(prompt, gen_length, block_length, mask_id)
    schedule = split_steps(block_length, denoising_steps)
    calls = 0
    for blk in range(p // block_length, total // block_length):
        lo, hi = blk * block_length, (blk + 1) * block_length
        for step in range(denoising_steps + 1):
            masked = x[0, lo:hi] == mask_id
            if not masked.any():
                break  # (the official code stores the block's keys/values here: not a denoising call)
            tok, conf = _greedy(net, x, hi, block_length)
            calls += 1
            n = schedule[step]
            if remasking_strategy == "low_confidence_static":
                pick = _most_confident(conf, masked, n)
            elif remasking_strategy == "sequential":  # the n_s slots from the first masked one on
                first = int(masked.nonzero()[0])
                pick = torch.zeros_like(masked)
                pick[first : first + n] = True
            elif remasking_strategy == "low_confidence_dynamic":
                high = masked & (conf > confidence_threshold)
                pick = high if int(high.sum()) >= n else _most_confident(conf, masked, n)
            else:
                raise ValueError(remasking_strategy)
            x[0, lo:hi] = torch.where(pick, tok, x[0, lo:hi])
        if stop_ids is not None and any(bool((x[0, p:] == s).any()) for s in stop_ids):
            break
    return x[0, p:].tolist(), calls


def llada2_generate(net, prompt, *, mask_id, eos_id, gen_length, block_length=32, steps=32, threshold=0.95,
                    minimal_topk=1):
    steps = min(steps, gen_length // minimal_topk)
    x, p, total = _layout(prompt, gen_length, block_length, mask_id)
    schedule = split_steps(block_length, steps)
    calls = 0
    for blk in range(p // block_length, total // block_length):
        lo, hi = blk * block_length, (blk + 1) * block_length
        for step in range(steps):
            masked = x[0, lo:hi] == mask_id
            if not masked.any():
                break
            tok, conf = _greedy(net, x, hi, block_length)
            calls += 1
            high = masked & (conf > threshold)
            pick = high if int(high.sum()) >= schedule[step] else _most_confident(conf, masked, schedule[step])
            x[0, lo:hi] = torch.where(pick, tok, x[0, lo:hi])
        if bool((x[0, p:hi] == eos_id).any()):
            break
    return x[0, p:].tolist(), calls


def llada21_generate(net, prompt, *, mask_id, eos_id, gen_length, block_length=32, threshold=0.7,
                     editing_threshold=0.5, max_post_steps=16, eos_early_stop=True, num_to_transfer=1):
    x, p, total = _layout(prompt, gen_length, block_length, mask_id)
    calls = 0
    for blk in range(p // block_length, total // block_length):
        lo, hi = blk * block_length, (blk + 1) * block_length
        prompt_slot = torch.arange(lo, hi) < p
        post = 0
        while True:
            old = x[0, lo:hi].clone()
            masked = old == mask_id
            if not masked.any():
                post += 1
                if post > max_post_steps:
                    break
            tok, conf = _greedy(net, x, hi, block_length)
            calls += 1
            pick = torch.zeros_like(masked)
            if masked.any():
                high = masked & (conf > threshold)
                pick = high if int(high.sum()) >= num_to_transfer else _most_confident(conf, masked, num_to_transfer)
            edit = ~masked & ~prompt_slot & (conf > editing_threshold) & (tok != old)
            x[0, lo:hi] = torch.where(pick | edit, tok, old)
            if not masked.any() and not edit.any():
                break
        if eos_early_stop and not bool((x[0, p:hi] == mask_id).any()) and bool((x[0, p:hi] == eos_id).any()):
            break
    return x[0, p:].tolist(), calls
