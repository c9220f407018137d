"""`multi-block`: d3LLM's multi-block decoding (hao-ai-lab/d3LLM, `generate_multi_block`).

Several blocks are in flight at once. Before each model call:
- a block becomes *fully active* once the block before it has decoded `activate_threshold`
  of its slots (the first block is fully active from the start);
- a new block enters when the last block in flight has decoded `add_block_threshold` of its
  slots, or has no mask left (one block per step; fully active on entry when the block before
  it is already past `activate_threshold`).
Every step is one full-canvas model call. The candidates are the masked slots of every block
in flight, ranked by the entropy of their predicted distribution (the model's whole softmax,
float64, -sum p ln(p + 1e-12) as d3LLM computes it); every candidate at or below `threshold`
is committed, and the lowest always (`commit_lowest`, d3LLM's LLaDA routine). When the first
fully active block that still has masks got no commit, its lowest-entropy mask is committed.

`stop_at_eos`, with d3LLM's semantics: once an EOS is committed, the model sees every slot
after it as EOS and the blocks after it are over (no new block enters); decoding goes on for
the masks before it, and the row stops when none is left (its later slots become EOS).

Written tokens are never changed, so no repair keys are reported. With a net loaded with
`cache=delayed` (native LLaDA / Dream) each call also tells the net which blocks are finished
(`BlockProgress`): d3LLM's delayed prefix cache (`models/native/delayed_cache.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from parallelbench.decoding.strategy import DecodeOptions, Strategy, option_error, register_strategy
from parallelbench.decoding.view import Decision, StepView, rows_of
from parallelbench.models.protocols import BlockProgress, uses_delayed_cache

ENTROPY_CHUNK = 64  # candidate rows per float64 softmax (bounds the step's memory, not its result)


@dataclass
class MultiBlockOptions(DecodeOptions):
    block_length: int | None = 32  # d3LLM's block_size
    threshold: float = 0.5  # commit candidates whose entropy (nats) is at or below this
    add_block_threshold: float = 0.1  # a new block enters when the last one has decoded this fraction
    activate_threshold: float = 0.95  # a block is fully active once the one before it decoded this fraction
    commit_lowest: bool = True  # always commit the lowest-entropy candidate (LLaDA routine); false: Dream's


@register_strategy("multi-block")
class MultiBlock(Strategy):
    description = "d3LLM: several blocks in flight; every candidate whose entropy is at most threshold"
    Options = MultiBlockOptions
    focus = "candidates"  # replaced in `step` by the candidates of every block in flight
    supports_block_causal = False  # blocks in flight see each other: a canvas-model rule
    drives_delayed_cache = True  # passes BlockProgress to a net loaded with cache=delayed

    def check_options(self) -> None:
        super().check_options()
        o = self.options
        for name in ("threshold", "add_block_threshold", "activate_threshold"):
            value = getattr(o, name)
            if not 0.0 <= value <= 1.0:
                raise option_error(name, value, "[0, 1]")
        if o.add_block_threshold > o.activate_threshold:
            raise ValueError(
                f"add_block_threshold={o.add_block_threshold} > activate_threshold={o.activate_threshold} is "
                "meaningless: a block then enters only when the one before it is already past activate_threshold, "
                f"so it is always fully active and activate_threshold does nothing; set activate_threshold >= "
                f"{o.add_block_threshold} (the same decoding)")

    def validate(self, gen_length: int) -> None:
        """Any block_length: one that does not divide gen_length leaves a shorter last block (as
        d3LLM's Dream cache routine lays them out)."""
        if gen_length < 1:
            raise option_error("gen_length", gen_length, "an integer >= 1")

    def check_model(self, model: Any) -> None:
        super().check_model(model)
        if getattr(model, "cache_mode", "none") == "dual":
            raise ValueError(
                "strategy 'multi-block' cannot use cache=dual: that cache recomputes only the leftmost unfinished "
                "block, and the other blocks in flight would read stale logits; load the model with "
                "cache=delayed (d3LLM's cache), prefix or none")

    def begin(self, context: dict[str, Any]) -> None:
        model = context.get("model")
        if model is not None:
            self.check_model(model)

    def init_state(self, batch_size: int, gen_length: int, device: torch.device) -> dict[str, Any]:
        blocks = -(-gen_length // (self.options.block_length or gen_length))
        full = torch.zeros((batch_size, blocks), dtype=torch.bool, device=device)
        full[:, 0] = True  # the prompt counts as fully decoded, and activate_threshold <= 1
        return {"mb_added": torch.ones(batch_size, dtype=torch.long, device=device), "mb_full": full,
                "mb_calls": 0}

    def forward(self, model, canvas, attention_mask, rows, state, prompt_length):
        """The block bookkeeping d3LLM does before its model call, then the call itself."""
        o = self.options
        gen = canvas[:, prompt_length:]
        b, g = gen.shape
        size = min(o.block_length or g, g)
        blocks = -(-g // size)
        device = canvas.device
        pos = torch.arange(g, device=device)
        live = gen == int(model.mask_id)
        has_eos = torch.zeros(b, dtype=torch.bool, device=device)
        seen = canvas
        if o.stop_at_eos:  # everything after the first committed EOS is EOS for the model, and done
            first = torch.where(gen == int(model.eos_id), pos, g).amin(dim=1)
            after = pos.unsqueeze(0) > first.unsqueeze(1)
            has_eos = first < g
            live = live & ~after
            seen = torch.cat([canvas[:, :prompt_length], gen.masked_fill(after, int(model.eos_id))], dim=1)
        counts = F.pad(live, (0, blocks * size - g)).view(b, blocks, size).sum(dim=2)
        sizes = (g - torch.arange(blocks, device=device) * size).clamp(max=size)  # a shorter last block
        progress = 1.0 - counts.double() / sizes  # d3LLM's decoded fraction, in double as its Python floats
        added, full = state["mb_added"], state["mb_full"]
        index = torch.arange(blocks, device=device).unsqueeze(0)
        before = torch.cat([torch.ones_like(progress[:, :1]), progress[:, :-1]], dim=1)
        full = full | ((index < added.unsqueeze(1)) & (before >= o.activate_threshold))
        last = (added - 1).unsqueeze(1)
        last_progress = progress.gather(1, last).squeeze(1)
        enters = (added < blocks) & ~has_eos & ((last_progress >= o.add_block_threshold)
                                                | (counts.gather(1, last).squeeze(1) == 0))
        entering = (index == added.unsqueeze(1)) & enters.unsqueeze(1)
        full = full | (entering & (last_progress >= o.activate_threshold).unsqueeze(1))
        added = torch.where(has_eos, blocks, added + enters.long())  # after an EOS no block is left to enter
        in_flight = index < added.unsqueeze(1)
        state["mb_added"], state["mb_full"] = added, full
        state["mb_calls"] = state["mb_calls"] + 1
        candidates = live & in_flight.repeat_interleave(size, dim=1)[:, :g]
        aux = {"mb_candidates": candidates, "mb_first_active": (full & (counts > 0))}
        if uses_delayed_cache(model):
            progress_info = BlockProgress(step=state["mb_calls"], prompt_length=prompt_length, block_length=size,
                                          finished=in_flight & (counts == 0))
            plan = getattr(model, "delayed_cache_plan", None)
            values = plan(seen, rows, progress_info) if plan is not None else None
            if values is not None:  # the cache's first column, read here so that its forward reads nothing
                model.set_host_plan(b, values.tolist())
            logits = model.forward(seen, attention_mask=attention_mask, rows=rows, block_progress=progress_info)
        else:
            logits = model.forward(seen, attention_mask=attention_mask, rows=rows)
        return logits, aux

    def step(self, view: StepView) -> Decision:
        o = self.options
        candidates = view.aux["mb_candidates"]
        view.focus = candidates  # x0 only where a commit can happen (every block in flight)
        entropy = candidate_entropy(view.logits, candidates)
        if o.commit_lowest:  # d3LLM's LLaDA routine: the lowest always, the others at or below the threshold
            commit = candidates & (entropy <= o.threshold)
            commit = commit | (lowest(entropy) & candidates.any(dim=1, keepdim=True))
        else:  # its Dream routine: strictly below the threshold
            commit = candidates & (entropy < o.threshold)
        # the first fully active block that still has masks must make progress
        eligible = view.aux["mb_first_active"]
        forced = eligible.any(dim=1)
        first_block = eligible.long().argmax(dim=1)
        in_first = (view.block_of.unsqueeze(0) == first_block.unsqueeze(1)) & forced.unsqueeze(1)
        stuck = forced & ~(commit & in_first).any(dim=1)
        pick = lowest(entropy.masked_fill(~(candidates & in_first), float("inf")))
        return Decision(commit=commit | (pick & stuck.unsqueeze(1)))


def lowest(entropy: torch.Tensor) -> torch.Tensor:
    """[b, G] one-hot of each row's smallest entry (the first on a tie)."""
    return torch.zeros_like(entropy, dtype=torch.bool).scatter_(1, entropy.argmin(dim=1, keepdim=True), True)


def candidate_entropy(logits: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """[b, G] float64 entropy -sum p ln(p + 1e-12) of softmax(logits) over the whole vocabulary (the
    mask token included, as d3LLM computes it) at the candidates; +inf elsewhere."""
    out = torch.full(candidates.shape, float("inf"), dtype=torch.float64, device=logits.device)
    r, p = candidates.nonzero(as_tuple=True)
    for start in range(0, r.numel(), ENTROPY_CHUNK):
        rr, pp = r[start:start + ENTROPY_CHUNK], p[start:start + ENTROPY_CHUNK]
        probs = torch.softmax(rows_of(logits, rr, pp).double(), dim=-1)
        out[rr, pp] = -(probs * torch.log(probs + 1e-12)).sum(dim=-1)
    return out
