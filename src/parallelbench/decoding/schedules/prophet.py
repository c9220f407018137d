"""Prophet: early commit once the answer has settled (Li et al., 2025, arXiv:2508.19982).

Diffusion LMs often know the whole answer long before the step budget is spent.
Prophet watches the gap between the top-1 and top-2 logits (equivalently log
probabilities) of the positions still masked: once the gap of *every* remaining
position exceeds the threshold, all of them are committed in this one step.
Otherwise the base rule runs: confidence top-k with the usual `k` / `steps`
schedule. The threshold is staged by progress (fraction of the generation
committed), as in the paper: strict early, relaxed late.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from parallelbench.decoding.presets import TopKOptions, TopKStrategy
from parallelbench.decoding.strategy import option_error, register_strategy
from parallelbench.decoding.view import Decision, StepView


@dataclass
class ProphetOptions(TopKOptions):
    gap_early: float = 7.5  # logit gap required while less than 1/3 of the generation is committed
    gap_mid: float = 5.0  # ... from 1/3 to 2/3
    gap_late: float = 2.5  # ... after 2/3


@register_strategy("prophet")
class Prophet(TopKStrategy):
    kind = "adaptive"
    Options = ProphetOptions

    def check_options(self) -> None:
        super().check_options()
        o = self.options
        for name in ("gap_early", "gap_mid", "gap_late"):
            if getattr(o, name) < 0:
                raise option_error(name, getattr(o, name), ">= 0 (a gap in logits)")

    def gap_threshold(self, view: StepView) -> torch.Tensor:
        """[b] the threshold at each row's progress."""
        o = self.options
        total = view.editable.sum(dim=1).clamp(min=1).float()
        progress = view.committed.sum(dim=1).float() / total
        return torch.where(
            progress < 1 / 3,
            torch.full_like(progress, o.gap_early),
            torch.where(progress < 2 / 3, torch.full_like(progress, o.gap_mid), torch.full_like(progress, o.gap_late)),
        )

    def step(self, view: StepView) -> Decision:
        top2 = view.log_probs.topk(2, dim=-1).values
        gap = (top2[..., 0] - top2[..., 1]).nan_to_num(posinf=float("inf"))  # -inf second = certain
        settled = (~view.masked | (gap > self.gap_threshold(view).unsqueeze(1))).all(dim=1)
        base = self.select(view, self.score(view))
        commit = torch.where(settled.unsqueeze(1), view.masked, base)
        view.state["extra_early_commit"] = view.state["extra_early_commit"] + settled.long()
        return Decision(commit=commit)

    def init_state(self, batch_size: int, gen_length: int, device: torch.device) -> dict[str, torch.Tensor]:
        return {"extra_early_commit": torch.zeros(batch_size, dtype=torch.long, device=device)}
