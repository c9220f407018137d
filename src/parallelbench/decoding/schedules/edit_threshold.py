"""`edit-threshold`: LLaDA 2.1-style draft-and-edit decoding (Bie et al., 2026, arXiv:2602.08676).

Each step does two things with the same model call:
- mask to token (M2T): candidates whose confidence exceeds `threshold` are committed
  (at least the `min_k` most confident ones, one by default; `threshold=1 min_k=k` drafts
  exactly k per step, top-k's parallel step with edits on top);
- token to token (T2T): a position committed earlier in the active block is rewritten to
  the model's top token there (when that differs from it) under `edit_rule`:
  "gain" (default): p(top) - p(committed) > `edit_threshold`;
  "confidence" (LLaDA 2.1's released rule): p(top) > `edit_threshold`.
A low `threshold` drafts boldly and leans on edits (the paper's Speedy mode); a high
one is its Quality mode. With `post_steps=0` edits happen only in steps that still
commit masked positions; with `post_steps=M` a block whose last mask was just filled
stays active for up to M edit-only steps (model calls that only edit), ending after
the first one that edits nothing (LLaDA 2.1's `max_post_steps`). A row ends when
nothing is masked and no block is held. `DecodeResult.extra["edits"]` counts the
rewrites (the engine's repair record, which every strategy that declares `rewrites`
keeps), `extra["post_steps"]` the edit-only steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from parallelbench.decoding import selection
from parallelbench.decoding.op_kinds import constant, float32, minus, ramp
from parallelbench.decoding.strategy import DecodeOptions, Strategy, option_error, register_strategy
from parallelbench.decoding.view import Decision, StepView, row_max, row_max_chunks, rows_of


# Up to this many logits in the step's view (4 MB of float32), a greedy step over one block takes one
# softmax over the whole block (`_block_step`). On the CPU that is 13-28% less engine time than finding the
# committed slots and bounding their normaliser, while from 2^21 logits on the softmax over every
# committed slot costs 3-138% more (benchmarks/bench_edit_block_pass.py, batch 8, vocabularies of
# 4,096-32,768). The same bound holds on every device (a GPU was not measured; there the block pass
# would also save the bounded path's two host reads a step, at twice its memory for the softmax).
DENSE_UP_TO = 1 << 20


@dataclass
class EditThresholdOptions(DecodeOptions):
    threshold: float = 0.7  # mask-to-token: commit candidates above this confidence (LLaDA2 pipeline default)
    edit_threshold: float = 0.5  # token-to-token: rewrite when the edit_rule's quantity exceeds this
    edit_rule: str = "gain"  # gain: p(new top) - p(committed) > E; confidence: p(new top) > E (LLaDA 2.1)
    post_steps: int = 0  # edit-only steps a block may stay active after its last mask is filled
    min_k: int = 1  # mask-to-token: at least this many per step, the most confident first (threshold=1, min_k=k: top-k drafts)


EDIT_RULES = ("gain", "confidence")


@register_strategy("edit-threshold")
class EditThreshold(Strategy):
    description = "LLaDA 2.1: commit above threshold and rewrite committed tokens the model now prefers"
    rewrites = True  # edits / remasks written tokens: the engine keeps the repair record
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
        if o.edit_rule not in EDIT_RULES:
            raise option_error("edit_rule", o.edit_rule, " | ".join(EDIT_RULES))
        if o.post_steps < 0:
            raise option_error("post_steps", o.post_steps, "an integer >= 0 (0 = no edit-only steps)")
        if o.min_k < 1:
            raise option_error("min_k", o.min_k, "an integer >= 1 (tokens committed at least per step)")

    def max_steps(self, gen_length: int) -> int:
        return 8 * gen_length + 64 + self.options.post_steps * gen_length  # at most one held block per position

    def init_state(self, batch_size: int, gen_length: int, device: torch.device) -> dict[str, torch.Tensor]:
        # no edit counter of our own: extra["edits"] is the repair record's, which counts the same rewrites
        if not self.options.post_steps:
            return {}
        zeros = torch.zeros(batch_size, dtype=torch.long, device=device)
        return {"extra_post_steps": zeros, "post_used": zeros.clone()}

    def min_lead(self) -> float:
        """The least logit lead of the top token over the committed one for which an edit is
        possible at all, whatever the rest of the softmax:
        gain: p(top) - p(now) <= tanh(lead / 2); confidence: p(top) <= sigmoid(lead)."""
        e = self.options.edit_threshold
        if e >= 1.0:
            return math.inf
        if self.options.edit_rule == "gain":
            return 2.0 * math.atanh(e)
        return math.log(e / (1.0 - e)) if e > 0.0 else -math.inf

    def step(self, view: StepView) -> Decision:
        if self._dense(view):
            return self._block_step(view)
        o = self.options
        if o.min_k == 1:
            commit = selection.threshold(view.decision_confidence, view.candidates, o.threshold, view.confidence)
        else:
            commit = selection.threshold_at_least(view.decision_confidence, view.candidates, o.threshold, o.min_k,
                                                  view.confidence)
        pool = view.in_active_block(view.committed)
        # no edit possible this step: edit and tokens stay None (the loops then run fewer ops, and the
        # repair record, which starts at the first step that may edit, starts exactly as late)
        edit = tokens = None
        r, p = torch.nonzero(pool).unbind(1)
        if r.numel():  # only the block's committed positions, and the softmax only where an edit is possible
            # (op kinds the loop runs anyway where that is exact: on the CPU the first op of a kind in a
            # step is what costs; every compared value is rounded as by the plain formulas)
            logits = view.logits_at(pool, r, p)  # a copy: safe to edit
            now = rows_of(view.canvas, r, p)  # [n] the committed tokens
            mask_logit = None
            if 0 <= view.mask_id < logits.shape[-1]:
                column = logits.select(1, view.mask_id)
                mask_logit = column.clone()  # still part of the softmax's normaliser
                column.fill_(float("-inf"))  # the mask token is never proposed
            best_logit, best, chunk_max = row_max_chunks(logits)
            n, v = logits.shape
            now_logit = logits.view(-1).index_select(0, torch.add(now, ramp(0, n, torch.long, now.device), alpha=v))
            lead = minus(best_logit, now_logit)
            min_lead = self.min_lead()
            # a lead above min_lead >= 0 already means another top token (same token: a lead of 0, or NaN)
            possible = lead > min_lead if min_lead >= 0.0 else ~(best == now) & (lead > min_lead)
            if chunk_max is not None and o.edit_threshold > 0.0:
                # either rule needs p(top) > E, and p(top) <= 1 / (1 + sum of exp(m_c - top)) over the
                # maxima m_c of the chunks other than the top's: distinct entries of the normaliser;
                # rest < bound written as 1 - sum > -bound (the same comparison: 1 - s is -(s - 1)
                # exactly), in the comparison kind the threshold rule runs
                spare = minus(constant(1.0, best_logit), torch.exp(minus(chunk_max, best_logit.unsqueeze(-1))).sum(dim=-1))
                possible = possible & (spare > -(1.0 / o.edit_threshold - 1.0) * (1.0 + 1e-4))  # margin for rounding
            changed = torch.nonzero(possible).view(-1)
            if changed.numel():
                # softmax mass relative to the top logit: p(top) = 1 / total, p(now) = exp(now - top) / total
                best_c = best_logit.index_select(0, changed)
                total = torch.exp(minus(logits.index_select(0, changed), best_c.unsqueeze(-1))).sum(dim=-1)
                if mask_logit is not None:  # the mask token's share stays in the normaliser
                    total = total + torch.exp(minus(mask_logit.index_select(0, changed), best_c))
                p_top = constant(1.0, total) / total  # exactly total.reciprocal()
                gain = p_top
                if o.edit_rule == "gain":
                    gain = minus(p_top, torch.exp(minus(now_logit.index_select(0, changed), best_c)) / total)
                possible[changed] = gain > o.edit_threshold  # possible is False outside changed: now the flips
                edit = pool.clone()  # (r, p) are pool's True slots: all of them overwritten
                edit[r, p] = possible
                # the loops read tokens only where they commit (masked slots: x0) or edit (here: best)
                tokens = view.x0.clone()
                tokens[r, p] = best
        return Decision(commit=commit, edit=edit, tokens=tokens, hold=self._hold(view, commit, edit))

    @staticmethod
    def _dense(view: StepView) -> bool:
        """Whether the step takes `_block_step`: greedy, on a view that is one block, deciding on the
        confidence itself (no noise-free one), within DENSE_UP_TO logits."""
        return (view.temperature <= 0 and view.gen_length == view.block_length
                and view.aux.get("noise_free_confidence") is None and view.logits.numel() <= DENSE_UP_TO)

    def _block_step(self, view: StepView) -> Decision:
        """A greedy step over a view that is one block (the block-causal loop's; the canvas loop's
        with one block): one softmax over every slot of the block gives the commits' tokens and
        confidences (as the view computes them at the candidates) and the edit rule's probabilities
        as written (p(top) and p(committed) from the softmax, LLaDA 2.1's plain rule): no search for
        the committed slots, no second pass over their logits, nothing read on the host."""
        o = self.options
        b, g, v = view.logits.shape
        probs = torch.softmax(float32(view.logits), dim=-1)  # [b, G, V], the mask token in the normaliser
        if 0 <= view.mask_id < v:
            probs.select(2, view.mask_id).fill_(0.0)  # never proposed (committed tokens are never the mask)
        top, best = row_max(probs.view(b * g, v))
        top, best = top.view(b, g), best.view(b, g)
        if o.min_k == 1:
            commit = selection.threshold(top, view.candidates, o.threshold)
        else:
            commit = selection.threshold_at_least(top, view.candidates, o.threshold, o.min_k)
        quantity = top
        if o.edit_rule == "gain":
            now = view.canvas  # masked slots hold the mask id, which a model may keep outside its logits:
            if not 0 <= view.mask_id < v:  # their p(now) is never read, any index in range will do
                now = now.clamp(0, v - 1)
            quantity = minus(top, probs.gather(2, now.unsqueeze(2)).squeeze(2))
        edit = view.in_active_block(view.committed) & (best != view.canvas) & (quantity > o.edit_threshold)
        # tokens are read where the step commits (masked slots: their x0) or edits (committed ones: best)
        return Decision(commit=commit, edit=edit, tokens=best, confidence=top, hold=self._hold(view, commit, edit))

    def _hold(self, view: StepView, commit: torch.Tensor, edit: torch.Tensor | None) -> torch.Tensor | None:
        """[b] rows whose block stays active for an edit-only step (post_steps), else None."""
        o = self.options
        hold = None
        if o.post_steps:
            st = view.state
            # a row without candidates is in an edit-only step of the block it holds
            has_masks = view.candidates.any(dim=1)
            fills_last = has_masks & ~(view.candidates & ~commit).any(dim=1)  # this step fills the block's last mask
            post = ~has_masks
            used = torch.where(fills_last, torch.zeros_like(st["post_used"]), st["post_used"] + post.long())
            st["post_used"] = used
            st["extra_post_steps"] = st["extra_post_steps"] + post.long()
            hold = fills_last if edit is None else fills_last | (post & edit.any(dim=1) & (used < o.post_steps))
        return hold
