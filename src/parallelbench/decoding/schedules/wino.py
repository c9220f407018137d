"""WINO: wide-in, narrow-out decoding with verification.

Wide in: every candidate of the active block whose confidence exceeds the low
`wide_threshold` is drafted (at least the single best). Narrow out: in the same
model call, each token drafted earlier in the block is re-scored with itself
masked (leave-one-out, WINO's shadow block) and the ones whose probability fell
below `narrow_threshold` are masked again, at most (new drafts - 1) of them, so
every step makes net progress.

The leave-one-out views ride along as extra rows of the single model call (one
per drafted token), so this stays one NFE per step with any `MaskedDiffusionModel`;
it costs compute proportional to the drafted tokens of the block.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from parallelbench.decoding import blocks, selection
from parallelbench.decoding.strategy import DecodeOptions, Strategy, option_error, register_strategy
from parallelbench.decoding.view import Decision, StepView


@dataclass
class WinoOptions(DecodeOptions):
    wide_threshold: float = 0.6  # draft candidates above this confidence
    narrow_threshold: float = 0.9  # keep drafted tokens whose leave-one-out probability reaches this


@register_strategy("wino")
class Wino(Strategy):
    Options = WinoOptions
    focus = "candidates"
    verify_chunk = 64  # most rows per model call once the leave-one-out views are added (not a result knob)

    def check_options(self) -> None:
        super().check_options()
        o = self.options
        for name in ("wide_threshold", "narrow_threshold"):
            if not 0.0 <= getattr(o, name) <= 1.0:
                raise option_error(name, getattr(o, name), "[0, 1]")

    def init_state(self, batch_size: int, gen_length: int, device: torch.device) -> dict[str, torch.Tensor]:
        return {"drafted": torch.zeros((batch_size, gen_length), dtype=torch.bool, device=device)}

    def forward(self, model, canvas, attention_mask, rows, state, prompt_length) -> tuple[torch.Tensor, dict[str, Any]]:
        gen = canvas[:, prompt_length:]
        mask_id = int(model.mask_id)
        masked = gen == mask_id
        block_of = blocks.block_of_positions(gen.shape[1], self.options.block_length, gen.device)
        active = blocks.active_block(masked, block_of)
        verify = state["drafted"] & blocks.in_active_block(active, block_of)
        row_idx, pos_idx = verify.nonzero(as_tuple=True)
        if row_idx.numel() == 0:
            return model.forward(canvas, attention_mask=attention_mask, rows=rows), {}
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
