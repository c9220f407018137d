"""The batched masked-diffusion decoding loop.

Each step: one model call on the rows still decoding, the strategy picks what to
commit (and optionally what to mask again), the engine applies it and records
NFE, tokens per step, decoding order and (optionally) history. Rows progress on
their own; a row that finishes is dropped from the batch, so it stops costing
model calls, and `rows=` tells the model which original row each line is.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any, Sequence

import torch

from parallelbench.decoding import blocks, sampling
from parallelbench.decoding.result import DecodeResult
from parallelbench.decoding.strategy import Strategy, as_strategy
from parallelbench.decoding.view import StepView

if TYPE_CHECKING:
    from parallelbench.models.protocols import CausalModel, MaskedDiffusionModel


def model_device(model: Any) -> torch.device:
    dev = getattr(model, "device", None)
    if dev is not None:
        return torch.device(dev)
    params = getattr(model, "parameters", None)
    if callable(params):
        for p in params():
            return p.device
    return torch.device("cpu")


def left_pad(
    prompts: "Sequence[Sequence[int]] | torch.Tensor", pad_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """Ragged prompts -> (ids [B, P] left-padded with pad_id, attention mask [B, P])."""
    if torch.is_tensor(prompts):
        ids = prompts.to(device=device, dtype=torch.long)
        if ids.dim() != 2:
            raise ValueError(f"prompts tensor must be [B, P], got shape {tuple(ids.shape)}")
        return ids, torch.ones_like(ids, dtype=torch.bool)
    rows = [list(map(int, p)) for p in prompts]
    width = max((len(r) for r in rows), default=0)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, r in enumerate(rows):
        if r:
            ids[i, width - len(r) :] = torch.tensor(r, dtype=torch.long)
            mask[i, width - len(r) :] = True
    return ids.to(device), mask.to(device)


def _template(template: Any, batch: int, gen_length: int, mask_id: int, device: torch.device) -> torch.Tensor:
    if template is None:
        return torch.full((batch, gen_length), mask_id, dtype=torch.long, device=device)
    t = torch.as_tensor(template, dtype=torch.long, device=device)
    if t.dim() == 1:
        t = t.unsqueeze(0).expand(batch, -1)
    if tuple(t.shape) != (batch, gen_length):
        raise ValueError(f"template must be [B={batch}, gen_length={gen_length}] ids, got {tuple(t.shape)}")
    return t.clone()


def _eos_stop(gen: torch.Tensor, masked: torch.Tensor, eos_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows whose first committed EOS has nothing masked before it, and each row's EOS index."""
    g = gen.shape[1]
    idx = torch.arange(g, device=gen.device).unsqueeze(0)
    is_eos = (gen == eos_id) & ~masked
    first = torch.where(is_eos, idx, g).min(dim=1).values
    masked_before = (masked & (idx < first.unsqueeze(1))).any(dim=1)
    return (first < g) & ~masked_before, first


@torch.no_grad()
def decode(
    model: "MaskedDiffusionModel",
    prompts: "Sequence[Sequence[int]] | torch.Tensor",
    gen_length: int = 32,
    strategy: "Strategy | str" = "confidence-topk",
    template: Any = None,
    seed: int = 0,
    return_history: bool = False,
    *,
    verifier: "CausalModel | None" = None,
) -> list[DecodeResult]:
    """Decode `gen_length` tokens after each prompt; one `DecodeResult` per prompt.

    `template` ([B, gen_length] ids, mask_id where to generate) pre-fills positions
    for infilling. Row i's randomness is keyed by `seed + i` (batch-independent).
    `verifier` is the autoregressive model of strategies that need one (APD).
    """
    strategy = as_strategy(strategy)
    strategy.validate(gen_length)
    device = model_device(model)
    mask_id, eos_id = int(model.mask_id), int(model.eos_id)
    prompt_ids, prompt_mask = left_pad(prompts, int(getattr(model, "pad_id", eos_id)), device)
    n_rows, p_len, g_len = prompt_ids.shape[0], prompt_ids.shape[1], gen_length
    if n_rows == 0:
        return []

    gen = _template(template, n_rows, g_len, mask_id, device)
    editable = gen == mask_id
    canvas = torch.cat([prompt_ids, gen], dim=1)
    attention = torch.cat([prompt_mask, torch.ones_like(gen, dtype=torch.bool)], dim=1)
    masked = editable.clone()
    order = torch.full((n_rows, g_len), -1, dtype=torch.long, device=device)
    commit_conf = torch.zeros((n_rows, g_len), dtype=torch.float32, device=device)
    remasks = torch.zeros(n_rows, dtype=torch.long, device=device)
    rows = torch.arange(n_rows, device=device)
    rng_keys = sampling.row_keys(torch.arange(n_rows, device=device), seed)
    block_length = strategy.options.block_length or g_len
    num_blocks = g_len // block_length
    block_of = blocks.block_of_positions(g_len, block_length, device)
    prev_block = torch.full((n_rows,), -1, dtype=torch.long, device=device)
    block_step = torch.zeros(n_rows, dtype=torch.long, device=device)
    state = strategy.init_state(n_rows, g_len, device)
    focus_kind = getattr(strategy, "focus", "all")
    if focus_kind not in ("all", "masked", "candidates"):
        raise ValueError(
            f"strategy {strategy.name!r} has focus={focus_kind!r}; set it to 'candidates', 'masked' or 'all'"
        )
    context = {"verifier": verifier, "prompt_length": p_len, "model": model}
    strategy.begin(context)

    out_tokens = torch.empty((n_rows, g_len), dtype=torch.long, device=device)
    out_order = torch.empty_like(out_tokens)
    out_nfe = torch.zeros(n_rows, dtype=torch.long)
    out_remasks = torch.zeros(n_rows, dtype=torch.long)
    out_extra: dict[str, torch.Tensor] = {}
    tps_chunks: list[tuple[torch.Tensor, torch.Tensor]] = []
    history: list[tuple[torch.Tensor, torch.Tensor]] = []
    max_steps = strategy_max_steps(strategy, g_len)

    def finish(done: torch.Tensor, t: int) -> None:
        idx = rows[done]
        out_tokens[idx] = canvas[done, p_len:]
        out_order[idx] = order[done]
        out_nfe[idx.cpu()] = t + 1
        out_remasks[idx.cpu()] = remasks[done].cpu()
        for key, val in state.items():
            if key.startswith("extra_") and torch.is_tensor(val):
                out_extra.setdefault(key[6:], torch.zeros(n_rows, dtype=val.dtype))[idx.cpu()] = val[done].cpu()

    # Rows already complete (a template with no masks) cost nothing.
    done = ~masked.any(dim=1)
    if bool(done.any()):
        finish(done, -1)
    keep = ~done
    t = 0
    while bool(keep.any()):
        if not bool(keep.all()):
            canvas, attention, masked, editable = canvas[keep], attention[keep], masked[keep], editable[keep]
            order, commit_conf, remasks, rows = order[keep], commit_conf[keep], remasks[keep], rows[keep]
            prev_block, block_step = prev_block[keep], block_step[keep]
            rng_keys = rng_keys[keep]
            for key, val in list(state.items()):
                if torch.is_tensor(val) and val.dim() > 0 and val.shape[0] == keep.shape[0]:
                    state[key] = val[keep]
        if t >= max_steps:
            raise RuntimeError(
                f"strategy {strategy.name!r} did not finish {len(rows)} row(s) within {max_steps} steps; "
                "its step() must commit at least one token per step (or override max_steps)"
            )

        logits, aux = strategy.forward(model, canvas, attention, rows, state, p_len)
        gen_logits = logits[:, p_len:, :]  # the view never proposes the mask token itself
        gen = canvas[:, p_len:]
        block = blocks.active_block(masked, block_of, num_blocks)
        block_step = torch.where(block == prev_block, block_step + 1, torch.zeros_like(block_step))
        prev_block = block
        view = StepView(
            logits=gen_logits,
            canvas=gen,
            masked=masked,
            editable=editable,
            block_of=block_of,
            block=block,
            block_step=block_step,
            step=torch.full_like(rows, t),
            rows=rows,
            rng_keys=rng_keys,
            t=t,
            temperature=float(strategy.options.temperature),
            mask_id=mask_id,
            eos_id=eos_id,
            num_blocks=num_blocks,
            block_length=block_length,
            commit_conf=commit_conf,
            state=state,
            aux={**context, **aux, "canvas": canvas, "attention_mask": attention},
        )
        if focus_kind != "all":  # compute per-position quantities only where the strategy reads them
            view.focus = view.candidates if focus_kind == "candidates" else masked
        decision = strategy.step(view)

        commit = decision.commit & masked
        tokens = view.x0 if decision.tokens is None else decision.tokens
        conf = view.confidence if decision.confidence is None else decision.confidence
        new_gen = torch.where(commit, tokens, gen)
        if decision.edit is not None:  # token-to-token edits of committed positions (edit-threshold)
            edit = decision.edit & ~masked & editable
            new_gen = torch.where(edit, tokens, new_gen)
            order = torch.where(edit, t, order)
        masked = masked & ~commit
        order = torch.where(commit, t, order)
        commit_conf = torch.where(commit, conf.float(), commit_conf)
        net = commit.sum(dim=1)
        if decision.remask is not None:
            remask = decision.remask & ~masked & editable
            new_gen = torch.where(remask, mask_id, new_gen)
            masked = masked | remask
            order = torch.where(remask, -1, order)
            n_remask = remask.sum(dim=1)
            remasks = remasks + n_remask
            net = net - n_remask
        done = ~masked.any(dim=1)
        if strategy.options.stop_at_eos:
            stop, first = _eos_stop(new_gen, masked, eos_id)
            after = torch.arange(g_len, device=device).unsqueeze(0) > first.unsqueeze(1)
            fill = stop.unsqueeze(1) & after
            new_gen = torch.where(fill, eos_id, new_gen)
            masked = masked & ~fill
            done = done | stop
        canvas = torch.cat([canvas[:, :p_len], new_gen], dim=1)  # a fresh tensor: models may keep the last one
        tps_chunks.append((rows, net))
        if return_history:
            history.append((rows, new_gen.clone()))
        if bool(done.any()):
            finish(done, t)
        keep = ~done
        t += 1

    return _collect(out_tokens, out_order, out_nfe, out_remasks, out_extra, tps_chunks, history, return_history)


def strategy_max_steps(strategy: Strategy, gen_length: int) -> int:
    custom = getattr(strategy, "max_steps", None)
    return int(custom(gen_length)) if callable(custom) else 8 * gen_length + 64


def _collect(*args):
    """Per-row results; the cyclic GC is paused while thousands of small lists are built
    (it would otherwise rescan them over and over for no garbage)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _collect_rows(*args)
    finally:
        if was_enabled:
            gc.enable()


def _collect_rows(out_tokens, out_order, out_nfe, out_remasks, out_extra, tps_chunks, history, return_history):
    """Per-row results from the batch tensors (rows take part in a prefix of the steps)."""
    n_rows = out_tokens.shape[0]
    tps = torch.zeros((n_rows, max(len(tps_chunks), 1)), dtype=torch.long)
    for t, (rows, net) in enumerate(tps_chunks):
        tps[rows.cpu(), t] = net.cpu()
    nfe = out_nfe.tolist()
    tps_rows = [row[:n] for row, n in zip(tps.tolist(), nfe)]
    hist_rows: list[list[list[int]]] | None = None
    if return_history:
        hist_rows = [[] for _ in range(n_rows)]
        for rows, snap in history:
            for r, line in zip(rows.tolist(), snap.tolist()):
                hist_rows[r].append(line)
    tokens, order = out_tokens.tolist(), out_order.tolist()
    committed = (out_order >= 0).sum(dim=1).tolist()
    remasks = out_remasks.tolist()
    extras = {k: v.tolist() for k, v in out_extra.items()}
    results = []
    for i in range(n_rows):
        extra: dict[str, Any] = {k: v[i] for k, v in extras.items()} if extras else {}
        if remasks[i]:
            extra["remasked"] = remasks[i]
        results.append(
            DecodeResult(
                tokens=tokens[i],
                nfe=nfe[i],
                tokens_per_step=tps_rows[i],
                order=order[i],
                num_committed=committed[i],
                history=hist_rows[i] if hist_rows is not None else None,
                extra=extra,
            )
        )
    return results
