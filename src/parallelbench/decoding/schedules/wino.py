"""WINO: wide-in, narrow-out decoding with verification (Hong et al., 2025, arXiv:2507.18578).

Wide in: every candidate of the active block whose confidence exceeds the low
`wide_threshold` is drafted (at least the single best). Narrow out: in the same
model call, each token drafted earlier in the block is re-scored with itself
hidden (leave-one-out) and the ones whose probability fell below
`narrow_threshold` are masked again, at most (new drafts - 1) of them, so every
step makes net progress.

Two ways to get the leave-one-out predictions, both one NFE per step:
- shadow block (WINO's own; models with `supports_attention_bias`): one block of
  mask tokens is appended, one per verified token, at the same position ids as
  the originals; each shadow query sees the canvas except its own original and,
  of the shadow block, only itself; the canvas never sees the shadow. A step costs
  one forward of canvas + shadow. On a one-layer network this equals the
  leave-one-out row exactly; deeper, the other positions have seen the drafted
  token in earlier layers (the paper's approximation);
- fallback (any `MaskedDiffusionModel`): one extra row per verified token, the
  canvas with that token masked. Exact leave-one-out, but it costs a row per
  verified token (several forwards' worth of compute per step).
Option `shadow`: "auto" (shadow block when the model supports it), "on" (require
it: a model without it is refused before decoding), "off" (always the fallback).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from parallelbench.decoding import blocks, selection
from parallelbench.decoding.strategy import DecodeOptions, Strategy, option_error, register_strategy
from parallelbench.decoding.view import Decision, StepView
from parallelbench.models.protocols import is_block_causal


@dataclass
class WinoOptions(DecodeOptions):
    wide_threshold: float = 0.6  # draft candidates above this confidence
    narrow_threshold: float = 0.9  # keep drafted tokens whose leave-one-out probability reaches this
    shadow: str = "auto"  # leave-one-out via the shadow block: auto | on (required) | off (fallback rows)


SHADOW_MODES = ("auto", "on", "off")


def has_attention_bias(model: Any) -> bool:
    """The MaskedDiffusionModel capability (see parallelbench.models.protocols)."""
    return getattr(model, "supports_attention_bias", False) is True


def shadow_layout(
    attention_mask: torch.Tensor, verify: torch.Tensor, prompt_length: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The shadow block of `verify` [b, G] (the tokens to re-score) after a canvas of L tokens.

    Returns (slot_pos [b, S]: generation index each shadow slot copies, slot_ok [b, S],
    position_ids [b, L + S], attention_bias [b, L + S, L + S]). S is the most verified
    tokens of any row; a row's spare slots see only themselves and are ignored (never
    padding: a query that sees no key at all would poison later layers with NaN).
    """
    b, length = attention_mask.shape
    device = attention_mask.device
    counts = verify.sum(dim=1)
    s = int(counts.max())
    rank = torch.cumsum(verify.long(), dim=1) - 1
    r, j = verify.nonzero(as_tuple=True)
    slot_pos = torch.zeros((b, s), dtype=torch.long, device=device)
    slot_pos[r, rank[r, j]] = j
    slot_ok = torch.arange(s, device=device).unsqueeze(0) < counts.unsqueeze(1)
    pos = (attention_mask.long().cumsum(dim=1) - 1).clamp(min=0)
    source = prompt_length + slot_pos  # canvas index each slot copies
    position_ids = torch.cat([pos, pos.gather(1, source)], dim=1)
    see = torch.zeros((b, length + s, length + s), dtype=torch.bool, device=device)
    see[:, :length, :length] = attention_mask.unsqueeze(1)  # the canvas sees the canvas, never the shadow
    own = torch.arange(length, device=device).view(1, 1, length) == source.unsqueeze(2)  # [b, S, L]
    see[:, length:, :length] = attention_mask.unsqueeze(1) & ~own & slot_ok.unsqueeze(2)
    see[:, length:, length:] = torch.eye(s, dtype=torch.bool, device=device)  # each shadow sees itself
    bias = torch.zeros(see.shape, dtype=torch.float32, device=device).masked_fill_(~see, float("-inf"))
    return slot_pos, slot_ok, position_ids, bias


def shadow_forward(model, canvas, attention_mask, rows, verify, prompt_length) -> tuple[torch.Tensor, dict[str, Any]]:
    """One call on canvas + shadow block; the canvas logits and each verified token's
    leave-one-out probability (NaN elsewhere)."""
    b, length = canvas.shape
    slot_pos, slot_ok, position_ids, bias = shadow_layout(attention_mask, verify, prompt_length)
    s = slot_pos.shape[1]
    tokens = torch.cat([canvas, torch.full((b, s), int(model.mask_id), dtype=canvas.dtype, device=canvas.device)], 1)
    mask = torch.cat([attention_mask, torch.ones_like(slot_ok)], dim=1)  # spare slots are real (they see themselves)
    logits = model.forward(
        tokens, attention_mask=mask, rows=rows, position_ids=position_ids, attention_bias=bias.to(canvas.device)
    )
    gen = canvas[:, prompt_length:]
    r, slot = slot_ok.nonzero(as_tuple=True)
    j = slot_pos[r, slot]
    tok = gen[r, j]
    shadow_logits = logits[r, length + slot].float()
    log_p = torch.log_softmax(shadow_logits, dim=-1).gather(-1, tok.unsqueeze(-1)).squeeze(-1)
    verify_prob = torch.full(gen.shape, float("nan"), device=gen.device)
    verify_prob[r, j] = log_p.exp()
    return logits[:, :length], {"verify_prob": verify_prob}


@register_strategy("wino")
class Wino(Strategy):
    description = "WINO: draft above wide_threshold, then remask earlier drafts that fall below narrow_threshold"
    rewrites = True  # edits / remasks written tokens: the engine keeps the repair record
    Options = WinoOptions
    supports_block_causal = False
    focus = "candidates"
    verify_chunk = 64  # most rows per model call once the leave-one-out views are added (not a result knob)

    def check_options(self) -> None:
        super().check_options()
        o = self.options
        for name in ("wide_threshold", "narrow_threshold"):
            if not 0.0 <= getattr(o, name) <= 1.0:
                raise option_error(name, getattr(o, name), "[0, 1]")
        if o.shadow not in SHADOW_MODES:
            raise option_error("shadow", o.shadow, " | ".join(SHADOW_MODES))

    def check_model(self, model: Any) -> None:
        if is_block_causal(model):
            raise ValueError(
                f"strategy 'wino' verifies its drafts with an attention layout of its own (shadow block or "
                "leave-one-out rows), which does not compose with the block-causal attention of this model; use "
                "confidence-threshold or edit-threshold on block-causal models"
            )
        super().check_model(model)
        if self.options.shadow == "on" and not has_attention_bias(model):
            raise ValueError(
                f"strategy 'wino' with shadow='on' needs a model with supports_attention_bias=True "
                "(position_ids and attention_bias in forward); this model has neither: "
                "use shadow='auto' to fall back to leave-one-out rows"
            )

    def begin(self, context: dict[str, Any]) -> None:
        self.check_model(context.get("model"))

    def uses_shadow(self, model: Any) -> bool:
        return self.options.shadow != "off" and has_attention_bias(model)

    def init_state(self, batch_size: int, gen_length: int, device: torch.device) -> dict[str, torch.Tensor]:
        return {"drafted": torch.zeros((batch_size, gen_length), dtype=torch.bool, device=device)}

    def forward(self, model, canvas, attention_mask, rows, state, prompt_length) -> tuple[torch.Tensor, dict[str, Any]]:
        gen = canvas[:, prompt_length:]
        mask_id = int(model.mask_id)
        masked = gen == mask_id
        block_of = blocks.block_of_positions(gen.shape[1], self.options.block_length, gen.device)
        active = blocks.active_block(masked, block_of)
        verify = state["drafted"] & blocks.in_active_block(active, block_of)
        if not bool(verify.any()):
            return model.forward(canvas, attention_mask=attention_mask, rows=rows), {}
        if self.uses_shadow(model):
            return shadow_forward(model, canvas, attention_mask, rows, verify, prompt_length)
        row_idx, pos_idx = verify.nonzero(as_tuple=True)
        b = canvas.shape[0]
        shadow = canvas[row_idx].clone()
        shadow[torch.arange(len(row_idx), device=gen.device), prompt_length + pos_idx] = mask_id
        all_canvas = torch.cat([canvas, shadow])
        all_mask = torch.cat([attention_mask, attention_mask[row_idx]])
        all_rows = torch.cat([rows, rows[row_idx]])
        # one logical call (one NFE); split so the model never sees more than `chunk` rows
        chunk = max(b, int(self.verify_chunk))
        parts, main = [], None
        for start in range(0, all_canvas.shape[0], chunk):
            sl = slice(start, start + chunk)
            out = model.forward(all_canvas[sl], attention_mask=all_mask[sl], rows=all_rows[sl])
            if start == 0:
                main = out[:b]
                out = out[b:]
            idx = torch.arange(out.shape[0], device=gen.device)
            first = max(start, b) - b
            pos = prompt_length + pos_idx[first : first + out.shape[0]]
            parts.append(out[idx, pos])
        tokens = gen[row_idx, pos_idx]
        shadow_logits = torch.cat(parts)
        log_p = torch.log_softmax(shadow_logits.float(), dim=-1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
        verify_prob = torch.full(gen.shape, float("nan"), device=gen.device)
        verify_prob[row_idx, pos_idx] = log_p.exp()
        return main, {"verify_prob": verify_prob}

    def step(self, view: StepView) -> Decision:
        o, st = self.options, view.state
        draft = selection.threshold(view.confidence, view.candidates, o.wide_threshold)
        remask = None
        prob = view.aux.get("verify_prob")
        if prob is not None:
            weak = ~torch.isnan(prob) & (prob < o.narrow_threshold) & view.committed
            budget = draft.sum(dim=1) - 1
            remask = selection.top_k(-prob.nan_to_num(1.0), weak, budget.clamp(min=0)) & weak
        drafted = st["drafted"] | draft
        if remask is not None:
            drafted = drafted & ~remask
        st["drafted"] = drafted
        return Decision(commit=draft, remask=remask)
