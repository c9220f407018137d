"""SlowFast sampling: alternate a cautious exploration phase with fast parallel phases.

Our reading of the three principles (certainty, convergence, position):
- slow phase: commit the single most confident candidate per step while measuring
  the *span*: the run of candidates, from the leftmost masked position, whose
  confidence is at least `span_threshold`;
- when the span's end has stayed put for `stable_steps` consecutive steps (it has
  converged), or after `max_slow_steps` slow steps, switch to the fast phase;
- fast phase: inside the span, commit every candidate with confidence above
  `fast_threshold` (the single best if none); when the span is done, go slow again.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from parallelbench.decoding import selection
from parallelbench.decoding.op_kinds import ramp
from parallelbench.decoding.strategy import DecodeOptions, Strategy, option_error, register_strategy
from parallelbench.decoding.view import Decision, StepView


@dataclass
class SlowFastOptions(DecodeOptions):
    fast_threshold: float = 0.9  # confidence to commit in parallel inside the span
    span_threshold: float = 0.3  # confidence that puts a position inside the span
    stable_steps: int = 2  # slow steps with an unchanged span end before going fast
    max_slow_steps: int = 8  # go fast after this many slow steps regardless


@register_strategy("slowfast")
class SlowFast(Strategy):
    description = "SlowFast: one token per step until the confident span settles, then that span in parallel"
    Options = SlowFastOptions
    focus = "candidates"

    def check_options(self) -> None:
        super().check_options()
        o = self.options
        for name in ("fast_threshold", "span_threshold"):
            if not 0.0 <= getattr(o, name) <= 1.0:
                raise option_error(name, getattr(o, name), "[0, 1]")
        if o.stable_steps < 1:
            raise option_error("stable_steps", o.stable_steps, "an integer >= 1")
        if o.max_slow_steps < 1:
            raise option_error("max_slow_steps", o.max_slow_steps, "an integer >= 1")

    def init_state(self, batch_size: int, gen_length: int, device: torch.device) -> dict[str, torch.Tensor]:
        z = torch.zeros(batch_size, dtype=torch.long, device=device)
        return {"fast": z.bool(), "span_end": z - 1, "last_end": z - 1, "same": z.clone(), "slow": z.clone()}

    def _span_end(self, view: StepView, idx: torch.Tensor, off: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """([b] last position of the confident run of candidates starting at the first one, the first
        candidate, the last candidate), g and -1 where a row has none (`off`: ~candidates).
        Integer positions reduced with amin / amax, and `conf < t` as `-conf > -t` (exact; the kind
        of the fast phase's threshold): op kinds the step runs anyway."""
        g = view.gen_length
        first = idx.masked_fill(off, g).amin(dim=1)
        weak = view.candidates & (view.confidence * -1 > -self.options.span_threshold)
        # position - g where weak, else 0: its minimum + g is the first weak position (g if none)
        before_weak = (weak * ramp(-g, 0, torch.long, view.device)).amin(dim=1).add(g - 1)
        last_cand = idx.masked_fill(off, -1).amax(dim=1)
        end = torch.stack([before_weak, last_cand]).amin(dim=0)
        return torch.stack([end, first]).amax(dim=0), first, last_cand  # the end: at least the first candidate

    def step(self, view: StepView) -> Decision:
        st, o = view.state, self.options
        cand, conf = view.candidates, view.confidence
        idx = ramp(0, view.gen_length, torch.long, view.device).expand(cand.shape)
        end, first, last = self._span_end(view, idx, ~cand)

        # a fast phase ends when its span has nothing left to commit: no candidate, or the first one
        # past the span's end (per row, no [b, G] comparison)
        st["fast"] = st["fast"] & (first <= st["span_end"]) & (first <= last)
        slow = ~st["fast"]
        st["same"] = (st["same"] + 1) * (slow & (end == st["last_end"]))  # counts up, else 0: exact in integers
        # where(..., out=) into the state itself: the kind the loop writes its block with
        torch.where(slow, end, st["last_end"], out=st["last_end"])
        st["slow"] = (st["slow"] + 1).masked_fill(st["fast"], 0)
        go_fast = slow & ((st["same"] > o.stable_steps - 1) | (st["slow"] > o.max_slow_steps))
        torch.where(go_fast, end, st["span_end"], out=st["span_end"])
        fast = st["fast"] = st["fast"] | go_fast
        st["slow"] = st["slow"].masked_fill(go_fast, 0)

        # one pool: a fast row's span (the threshold rule, the best if none passes), a slow row's
        # candidates (nothing passes: the best), so one fallback serves both phases
        fast_rows = fast.unsqueeze(1)
        pool = cand & ((idx <= st["span_end"].unsqueeze(1)) | ~fast_rows)
        chosen = pool & (conf > o.fast_threshold) & fast_rows
        return Decision(commit=selection.with_fallback(chosen, conf, pool))
