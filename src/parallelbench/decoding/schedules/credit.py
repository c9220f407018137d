"""CreditDecoding: confidence credit accumulated across steps (Wang et al., 2025, arXiv:2510.06133).

A token the model keeps predicting at a position is usually right long before its
confidence crosses the commit threshold. CreditDecoding keeps a *trace credit* per
position: every step the credit decays by `decay` and the current top token adds
p ** `exponent`; the credit is fused into the logits as `fusion * log(1 + credit)`
on the credited token, and the Fast-dLLM threshold rule runs on the fused
probabilities. A position whose prediction is stable thus commits steps earlier.

We keep one credit slot per position (the token with the larger decayed credit);
the fused top-1 probability is exact for that slot:
p' = p_c e^d / (1 - p_c + p_c e^d) for the credited token c with boost d.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from parallelbench.decoding import selection
from parallelbench.decoding.op_kinds import constant, float32, minus
from parallelbench.decoding.strategy import DecodeOptions, Strategy, option_error, register_strategy
from parallelbench.decoding.view import Decision, StepView


@dataclass
class CreditOptions(DecodeOptions):
    threshold: float = 0.9  # commit candidates whose fused confidence exceeds this (top-1 if none)
    decay: float = 0.65  # credit kept from one step to the next (gamma)
    fusion: float = 0.7  # strength of log(1 + credit) added to the credited token's logit (lambda)
    exponent: float = 0.5  # credit added per step: p ** exponent (< 1 lifts under-confident tokens)


@register_strategy("credit")
class CreditDecoding(Strategy):
    description = "CreditDecoding: the threshold rule on logits boosted by credit that stable predictions accumulate"
    Options = CreditOptions
    focus = "candidates"  # credit builds up where a step can commit (the active block)

    def check_options(self) -> None:
        super().check_options()
        o = self.options
        if not 0.0 < o.threshold <= 1.0:
            raise option_error("threshold", o.threshold, "(0, 1]")
        if not 0.0 <= o.decay < 1.0:
            raise option_error("decay", o.decay, "[0, 1)")
        if o.fusion < 0:
            raise option_error("fusion", o.fusion, ">= 0 (0 = plain confidence threshold)")
        if o.exponent <= 0:
            raise option_error("exponent", o.exponent, "> 0")

    def init_state(self, batch_size: int, gen_length: int, device: torch.device) -> dict[str, torch.Tensor]:
        return {
            "credit_token": torch.full((batch_size, gen_length), -1, dtype=torch.long, device=device),
            "credit": torch.zeros((batch_size, gen_length), dtype=torch.float32, device=device),
        }

    def fused(self, view: StepView) -> tuple[torch.Tensor, torch.Tensor]:
        """Update the credit of the candidates; return the fused (token, confidence) [b, G].

        The state is updated in place with `where(..., out=)`, the kind the loop writes its block with
        (no `where` of another kind, no copy of new state tensors back into the loop's state).
        `a & ~b` of bools is written `a > b` (True > False alone), in the comparison kind the step
        runs anyway: one op instead of two."""
        o, st = self.options, view.state
        cand = view.candidates
        top, p_top = view.x0, float32(view.confidence)
        token, credit = st["credit_token"], st["credit"]
        decayed = credit * constant(o.decay, credit)  # read at the candidates only
        # clamp_min(1e-12) as a fill where 1e-12 > p (NaN kept), in the kinds this step runs anyway
        gain = p_top.masked_fill(constant(1e-12, p_top) > p_top, 1e-12) ** o.exponent
        same = token == top
        replace = (cand > same) & (gain > decayed)
        torch.where(replace, top, token, out=token)
        torch.where(same, decayed + gain, decayed, out=decayed)  # replace excludes same: order is free
        torch.where(replace, gain, decayed, out=decayed)
        torch.where(cand, decayed, credit, out=credit)

        # (op kinds the loop runs anyway where that is exact: decoding/op_kinds.py)
        has = cand & (token > -1)  # a credit token is set (token ids are >= 0; -1: none)
        now_top = token == top
        other = p_top.masked_fill(now_top, 0.0)
        # p_top where the credit token is the top one, 0 elsewhere at the candidates (p_top is finite
        # there; outside them nothing below is read): one op, where masked_fill needed three
        p_c = minus(p_top, other)
        held = has > now_top  # credit held by a token that is not the top one now: rare
        # its probability from the step's own softmax (held slots are candidates, the focus): no search
        # for the held slots on the host and no second pass over their logits
        ids = torch.where(held, token, top, out=top.clone())  # a valid id everywhere (token is -1 where unset)
        torch.where(held, view.prob_at_focus(ids), p_c, out=p_c)
        # p_c is 0 at the candidates without a credit token (the top token is never -1), so the boost
        # needs no mask there
        boosted = p_c * torch.exp(torch.log1p(credit) * constant(o.fusion, credit))
        # 1 - p_c + boosted, at least 0.5 for p_c in [0, 1] (boosted >= p_c, as credit >= 0): no clamp
        z = minus(constant(1.0, p_c), p_c) + boosted
        pick_c = has > (other > boosted)  # has & boosted >= other (NaN: as ~(other > boosted))
        fused_p = torch.where(pick_c, boosted, other, out=other)
        # the credit token differs from the top one only at held slots: ids is the token where pick_c is
        # and held, the top one elsewhere (where ids is the top one too)
        tokens = torch.where(pick_c, ids, top, out=ids)
        return tokens, fused_p / z

    def step(self, view: StepView) -> Decision:
        tokens, conf = self.fused(view)
        commit = selection.threshold(conf, view.candidates, self.options.threshold)
        return Decision(commit=commit, tokens=tokens, confidence=conf)
