"""`edit-threshold`: LLaDA 2.1-style draft-and-edit decoding (Bie et al., 2026, arXiv:2602.08676).

Each step does two things with the same model call:
- mask to token (M2T): candidates whose confidence exceeds `threshold` are committed
  (the single most confident one if none is);
- token to token (T2T): a position committed earlier in the active block is rewritten
  when the model's top token there now beats the committed token's probability by
  more than `edit_threshold`.
A low `threshold` drafts boldly and leans on edits (the paper's Speedy mode); a high
one is its Quality mode. Edits happen in steps that still commit masked positions;
a row ends when nothing is masked. `DecodeResult.extra["edits"]` counts the rewrites.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from parallelbench.decoding import selection
from parallelbench.decoding.strategy import DecodeOptions, Strategy, option_error, register_strategy
from parallelbench.decoding.view import Decision, StepView, row_max, rows_of


@dataclass
class EditThresholdOptions(DecodeOptions):
    threshold: float = 0.7  # mask-to-token: commit candidates above this confidence (LLaDA2 pipeline default)
    edit_threshold: float = 0.5  # token-to-token: rewrite when p(new top) - p(committed) exceeds this


@register_strategy("edit-threshold")
class EditThreshold(Strategy):
    Options = EditThresholdOptions
    reads_decision_confidence = True
    focus = "candidates"  # x0 / confidence for the commits; the edits read their own positions

    def check_options(self) -> None:
        super().check_options()
        o = self.options
        if not 0.0 < o.threshold <= 1.0:
            raise option_error("threshold", o.threshold, "(0, 1]")
        if not 0.0 <= o.edit_threshold <= 1.0:
            raise option_error("edit_threshold", o.edit_threshold, "[0, 1] (1 = never edit)")

    def init_state(self, batch_size: int, gen_length: int, device: torch.device) -> dict[str, torch.Tensor]:
        return {"extra_edits": torch.zeros(batch_size, dtype=torch.long, device=device)}

    def step(self, view: StepView) -> Decision:
        o = self.options
        commit = selection.threshold(view.decision_confidence, view.candidates, o.threshold, view.confidence)
        pool = view.committed & view.in_block
        edit = torch.zeros_like(pool)
        top = view.canvas
        r, p = pool.nonzero(as_tuple=True)
        if r.numel():  # only the block's committed positions, and the softmax only where the top changed
            logits = rows_of(view.logits, r, p)  # a copy: safe to edit
            if logits.dtype != torch.float32:
                logits = logits.float()
            now = view.canvas[r, p]
            mask_logit = None
            if 0 <= view.mask_id < logits.shape[-1]:
                mask_logit = logits[:, view.mask_id].clone()  # still part of the softmax's normaliser
                logits[:, view.mask_id] = float("-inf")  # the mask token is never proposed
            best_logit, best = row_max(logits)
            # p(top) - p(now) <= tanh((logit(top) - logit(now)) / 2) whatever the rest of the softmax,
            # so only positions with a wide enough logit lead need the normaliser
            lead = best_logit - logits.gather(-1, now.unsqueeze(-1)).squeeze(-1)
            need = 2.0 * math.atanh(o.edit_threshold) if o.edit_threshold < 1.0 else math.inf
            changed = ((best != now) & (lead > need)).nonzero(as_tuple=True)[0]
            if changed.numel():
                # softmax mass relative to the top logit, in place on the gathered copy:
                # p(top) = 1 / total, p(now) = exp(-lead) / total
                lead_c, best_c = lead.index_select(0, changed), best_logit.index_select(0, changed)
                total = logits.index_select(0, changed).sub_(best_c.unsqueeze(-1)).exp_().sum(dim=-1)
                if mask_logit is not None:  # the mask token's share stays in the normaliser
                    total = total + torch.exp(mask_logit.index_select(0, changed) - best_c)
                p_top, p_now = total.reciprocal(), torch.exp(-lead_c) / total
                flip = torch.zeros_like(best, dtype=torch.bool)
                flip[changed] = p_top - p_now > o.edit_threshold
                edit[r, p] = flip
            top = view.canvas.clone()
            top[r, p] = best
        view.state["extra_edits"] = view.state["extra_edits"] + edit.sum(dim=1)
        return Decision(commit=commit, edit=edit, tokens=torch.where(edit, top, view.x0))
