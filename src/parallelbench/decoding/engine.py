"""The batched masked-diffusion decoding loop.

Each step: one model call on the rows still decoding, the strategy picks what to
commit (and optionally what to mask again), the engine applies it and records
NFE, tokens per step, decoding order and (optionally) history. Rows progress on
their own; a row that finishes is dropped from the batch, so it stops costing
model calls, and `rows=` tells the model which original row each line is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import torch

from parallelbench.decoding import blocks, sampling
from parallelbench.decoding.block_causal import decode_block_causal
from parallelbench.decoding.canvas import left_pad, make_template, model_device
from parallelbench.decoding.collect import collect
from parallelbench.decoding.repair import RepairLog, finished_rows
from parallelbench.decoding.result import DecodeResult
from parallelbench.decoding.strategy import Strategy, as_strategy, strategy_max_steps
from parallelbench.decoding.view import StepView
from parallelbench.models.protocols import is_block_causal

if TYPE_CHECKING:
    from parallelbench.models.protocols import CausalModel, MaskedDiffusionModel


def _eos_stop(gen: torch.Tensor, masked: torch.Tensor, eos_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows whose first committed EOS has nothing masked before it, and each row's EOS index."""
    g = gen.shape[1]
    idx = torch.arange(g, device=gen.device).unsqueeze(0)
    is_eos = (gen == eos_id) & ~masked
    first = torch.where(is_eos, idx, g).min(dim=1).values
    masked_before = (masked & (idx < first.unsqueeze(1))).any(dim=1)
    return (first < g) & ~masked_before, first


@torch.inference_mode()
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
    if is_block_causal(model):  # block-diffusion nets: blocks on each row's absolute grid
        return decode_block_causal(model, prompts, gen_length, strategy, template, seed, return_history, verifier)
    device = model_device(model)
    mask_id, eos_id = int(model.mask_id), int(model.eos_id)
    prompt_ids, prompt_mask = left_pad(prompts, int(getattr(model, "pad_id", eos_id)), device)
    n_rows, p_len, g_len = prompt_ids.shape[0], prompt_ids.shape[1], gen_length
    if n_rows == 0:
        return []

    gen = make_template(template, n_rows, g_len, mask_id, device)
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
    held: torch.Tensor | None = None  # [b] rows whose strategy keeps their block active (Decision.hold)
    held_block = prev_block
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
    out_nfe = torch.zeros(n_rows, dtype=torch.long, device=device)
    out_remasks = torch.zeros(n_rows, dtype=torch.long, device=device)
    out_extra: dict[str, torch.Tensor] = {}
    tps_chunks: list[tuple[torch.Tensor, torch.Tensor]] = []
    history: list[tuple[torch.Tensor, torch.Tensor]] = []
    max_steps = strategy_max_steps(strategy, g_len)
    # the repair record: from the start for strategies that declare edits, else from the first decision that edits
    log: RepairLog | None = RepairLog(gen, masked, editable, mask_id) if strategy.rewrites else None
    editable_all = editable  # every row's, for rows that finish before the log begins
    single = num_blocks == 1  # one block: every row is in block 0 and has spent t steps there
    max_commits = strategy.max_commits_per_row()  # a bound the loop can use to find the committed positions
    host_plan = getattr(model, "host_plan", None) if callable(getattr(model, "set_host_plan", None)) else None

    def finish(done_at: torch.Tensor, t: int) -> None:
        """Rows at live positions `done_at` [n] are finished after step t (device-side writes only)."""
        idx = rows.index_select(0, done_at)
        out_tokens.index_copy_(0, idx, canvas.index_select(0, done_at)[:, p_len:])
        out_order.index_copy_(0, idx, order.index_select(0, done_at))
        out_nfe.index_fill_(0, idx, t + 1)
        out_remasks.index_copy_(0, idx, remasks.index_select(0, done_at))
        for key, val in state.items():
            if key.startswith("extra_") and torch.is_tensor(val):
                out = out_extra.setdefault(key[6:], torch.zeros(n_rows, dtype=val.dtype, device=device))
                out.index_copy_(0, idx, val.index_select(0, done_at))
        if log is not None:
            log.finish(done_at, idx, out_extra, n_rows)

    def focus_count(masked: torch.Tensor, held: torch.Tensor | None, held_block: torch.Tensor,
                    going: torch.Tensor) -> torch.Tensor:
        """[1] the next step's focus positions (the view's candidates, or every mask) of the rows `going`."""
        focus = masked
        if focus_kind == "candidates" and not (single and held is None):
            block = blocks.active_block(masked, block_of, num_blocks)
            if held is not None:
                block = torch.where(held, held_block, block)
            focus = masked & blocks.in_active_block(block, block_of)
        return (focus & going.unsqueeze(1)).sum()

    # Rows already complete (a template with no masks) cost nothing. One read of the device per
    # step (its finished rows, the next step's number of focus positions, what the model wants
    # to know for its next call), here for the set-up.
    going = masked.any(dim=1)
    counted = focus_kind != "all"
    first = [(~going).sum()] + ([focus_count(masked, None, prev_block, going)] if counted else [])
    values = torch.stack(first).tolist()
    n_done, n_focus = values[0], (values[1] if counted else 0)
    n_live = n_rows - n_done
    if n_done:
        finish(torch.nonzero_static(~going, size=n_done).squeeze(1), -1)
    zeros: torch.Tensor | None = None
    temperature = float(strategy.options.temperature)
    t = 0
    while n_live:
        if n_done:
            keep = torch.nonzero_static(going, size=n_live).squeeze(1)
            canvas, attention, masked, editable = (x.index_select(0, keep) for x in (canvas, attention, masked, editable))
            order, commit_conf, remasks, rows = (x.index_select(0, keep) for x in (order, commit_conf, remasks, rows))
            prev_block, block_step = prev_block.index_select(0, keep), block_step.index_select(0, keep)
            rng_keys = rng_keys.index_select(0, keep)
            if log is not None:
                log.keep(keep)
            if held is not None:
                held, held_block = held.index_select(0, keep), held_block.index_select(0, keep)
            for key, val in list(state.items()):
                if torch.is_tensor(val) and val.dim() > 0 and val.shape[0] == going.shape[0]:
                    state[key] = val.index_select(0, keep)
            zeros = None
        if t >= max_steps:
            raise RuntimeError(
                f"strategy {strategy.name!r} did not finish {n_live} row(s) within {max_steps} steps; "
                "its step() must commit at least one token per step (or override max_steps)"
            )

        logits, aux = strategy.forward(model, canvas, attention, rows, state, p_len)
        gen_logits = logits[:, p_len:, :]  # the view never proposes the mask token itself
        gen = canvas[:, p_len:]
        step = torch.full_like(rows, t)
        if single and held is None:
            if zeros is None:
                zeros = torch.zeros_like(rows)
            block, block_step, prev_block = zeros, step, zeros
        else:
            block = blocks.active_block(masked, block_of, num_blocks)
            if held is not None:  # blocks kept active after their last mask (edit-only steps)
                block = torch.where(held, held_block, block)
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
            step=step,
            rows=rows,
            rng_keys=rng_keys,
            t=t,
            temperature=temperature,
            mask_id=mask_id,
            eos_id=eos_id,
            num_blocks=num_blocks,
            block_length=block_length,
            commit_conf=commit_conf,
            state=state,
            aux={**context, **aux, "canvas": canvas, "attention_mask": attention},
        )
        if single and held is None:
            view.__dict__["candidates"] = masked  # the whole region is the active block
        if counted:  # compute per-position quantities only where the strategy reads them
            view.count_focus(view.candidates if focus_kind == "candidates" else masked, n_focus)
            view.focus_masked = True
        decision = strategy.step(view)
        if decision.shift is not None:
            raise ValueError(f"strategy {strategy.name!r} shifts slots (Decision.shift), which only the block-causal "
                             "loop applies; decode it on a block-causal model (block_causal = True)")
        if log is None and (decision.edit is not None or decision.remask is not None):
            log = RepairLog(gen, masked, editable, mask_id)
            gone = finished_rows(rows, n_rows)
            if gone.numel():
                RepairLog.backfill(gone, out_tokens[gone.to(device)].cpu(), editable_all[gone.to(device)].cpu(),
                                   out_extra, n_rows)

        commit = decision.commit & masked
        if view.focus is not None and "_where" not in view.__dict__:
            # the rule read no per-position quantity: x0 / confidence only where it commits, found
            # without a host read when the commits are known to lie among the focus positions
            if focus_kind == "masked" or strategy.commits_in_candidates:
                bound = n_focus if max_commits is None else min(n_focus, max_commits * rows.shape[0])
                view.count_focus(commit, bound)
            else:
                view.focus = commit
        tokens = view.x0 if decision.tokens is None else decision.tokens
        conf = view.confidence if decision.confidence is None else decision.confidence
        new_gen = drafted = torch.where(commit, tokens, gen)
        fill = None
        if decision.edit is not None:  # token-to-token edits of committed positions (edit-threshold)
            edit = decision.edit & ~masked & editable
            new_gen = torch.where(edit, tokens, new_gen)
            order = torch.where(edit, t, order)
        masked = masked ^ commit  # commit is a subset of masked
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
        going = masked.any(dim=1)
        if decision.hold is not None:
            held, held_block = decision.hold.to(device=device, dtype=torch.bool), block
            going = going | held
        else:
            held = None
        if strategy.options.stop_at_eos:
            stop, first_eos = _eos_stop(new_gen, masked, eos_id)
            after = torch.arange(g_len, device=device).unsqueeze(0) > first_eos.unsqueeze(1)
            fill = stop.unsqueeze(1) & after
            new_gen = torch.where(fill, eos_id, new_gen)
            masked = masked & ~fill
            going = going & ~stop
        if log is not None:
            log.update(drafted, new_gen, masked, editable, fill)
        canvas = torch.cat([canvas[:, :p_len], new_gen], dim=1)  # a fresh tensor: models may keep the last one
        tps_chunks.append((rows, net))
        if return_history:
            history.append((rows, new_gen.clone()))

        # the step's one read of the device: finished rows, the next step's focus, the model's plan
        parts = [(~going).sum()]
        if counted:
            parts.append(focus_count(masked, held, held_block, going))
        plan = host_plan(canvas, rows, going) if host_plan is not None else None
        values = (torch.stack(parts) if plan is None else torch.cat([torch.stack(parts), plan.to(torch.long)])).tolist()
        n_done = values[0]
        if counted:
            n_focus = values[1]
        if n_done:
            finish(torch.nonzero_static(~going, size=n_done).squeeze(1), t)
            n_live -= n_done
        if plan is not None and n_live:
            model.set_host_plan(n_live, values[1 + counted:])
        t += 1

    return collect(out_tokens, out_order, out_nfe, out_remasks, out_extra, tps_chunks, history, return_history)


__all__ = ["decode", "left_pad", "model_device"]
