"""Remasking samplers: committed tokens can be masked again and re-predicted.

- `remdm` (ReMDM, as used in the paper's appendix): decode with confidence top-k;
  once `remask_at` of the generation is committed, spend `remask_steps` revision
  steps, each masking the `remask_k` committed tokens whose confidence at commit
  time was lowest, so the next step re-predicts them with more context.
- `rcr` (running-confidence remasking): every position keeps the running maximum
  of the confidence it had whenever the model predicted it. Each step keeps the
  N_t best positions of the active block (N_t follows the top-k / steps schedule),
  committing masked ones that made the cut and masking committed ones that fell out.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from parallelbench.decoding import selection
from parallelbench.decoding.op_kinds import float32
from parallelbench.decoding.presets import TopKOptions, TopKStrategy
from parallelbench.decoding.strategy import option_error, register_strategy
from parallelbench.decoding.view import Decision, StepView


@dataclass
class RemdmOptions(TopKOptions):
    remask_steps: int = 1  # revision steps (n); each costs about one extra model call
    remask_k: int = 1  # tokens masked again per revision step
    remask_at: float = 1.0  # fraction of the generation committed before revisions start


@register_strategy("remdm")
class ReMDM(TopKStrategy):
    description = "ReMDM: confidence top-k, then remask and re-predict the least confident committed tokens"
    rewrites = True  # edits / remasks written tokens: the engine keeps the repair record
    kind = "adaptive"
    Options = RemdmOptions

    def check_options(self) -> None:
        super().check_options()
        o = self.options
        if o.remask_steps < 0:
            raise option_error("remask_steps", o.remask_steps, "an integer >= 0")
        if o.remask_k < 1:
            raise option_error("remask_k", o.remask_k, "an integer >= 1")
        if not 0.0 < o.remask_at <= 1.0:
            raise option_error("remask_at", o.remask_at, "(0, 1]")

    def max_steps(self, gen_length: int) -> int:
        return 8 * gen_length + 64 + self.options.remask_steps * (self.options.remask_k + 1)

    def init_state(self, batch_size: int, gen_length: int, device: torch.device) -> dict[str, torch.Tensor]:
        return {"revisions_left": torch.full((batch_size,), self.options.remask_steps, dtype=torch.long, device=device)}

    def step(self, view: StepView) -> Decision:
        o = self.options
        commit = self.select(view, self.score(view))
        left = view.state["revisions_left"]  # never negative
        revise = left.bool() & self._committed_enough(view, commit)  # left != 0, as a cast: a kind the step runs
        remask = None
        if revise.amax().tolist():  # any(), read without an op of its own (bool() would run is_nonzero)
            # the remask_k committed tokens with the lowest confidence at commit time
            committed = view.editable & ~(view.masked & ~commit)  # committed | commit (commit lies among the masks)
            conf = torch.where(commit, float32(view.confidence), view.commit_conf)
            k = torch.full_like(left, o.remask_k) * revise.long()
            remask = selection.top_k(-conf, committed, k) & revise.unsqueeze(1)
            view.state["revisions_left"] = left - revise.long()
        return Decision(commit=commit, remask=remask)

    def _committed_enough(self, view: StepView, commit: torch.Tensor) -> torch.Tensor:
        """[b] whether the share of editable slots committed after this step reaches remask_at (the
        float32 quotient of the counts against remask_at - 1e-9; an empty row: no). At remask_at = 1,
        the default, that quotient reaches 1 exactly when no editable slot stays masked (regions under
        2^24 slots): no counts, no division, in op kinds the loop runs anyway (masks lie in the
        editable slots, commit among the masks, so no mask is left where masked equals commit: all() as
        amin, the kind the loop reduces with)."""
        if self.options.remask_at == 1.0:
            return (view.masked == commit).amin(dim=1) & view.editable.amax(dim=1)
        committed = view.editable & ~(view.masked & ~commit)
        total = view.editable.sum(dim=1)
        return committed.sum(dim=1) / total.masked_fill(total == 0, 1) >= self.options.remask_at - 1e-9


@dataclass
class RcrOptions(TopKOptions):
    pass


@register_strategy("rcr")
class RunningConfidenceRemasking(TopKStrategy):
    description = "RCR: keep the best positions by running maximum confidence, remask the rest"
    rewrites = True  # edits / remasks written tokens: the engine keeps the repair record
    kind = "adaptive"
    Options = RcrOptions

    def init_state(self, batch_size: int, gen_length: int, device: torch.device) -> dict[str, torch.Tensor]:
        return {"running": torch.zeros((batch_size, gen_length), dtype=torch.float32, device=device)}

    def step(self, view: StepView) -> Decision:
        st = view.state
        conf = float32(view.confidence)
        # the running maximum, as one where (no NaN here), in place: the kind the loop writes its block
        # with, and no copy of a new state tensor back into the loop's state
        running = st["running"]
        grew = running < conf
        if view.focus is not view.candidates:
            grew = view.in_active_block(view.masked) & grew
        # (with the candidates as focus the confidence is 0 elsewhere and running never below 0, so it can
        # grow only at the candidates: the masked slots of the active block)
        torch.where(grew, conf, running, out=running)
        committed = view.in_active_block(view.committed)
        k = self.options.k if self.options.steps is None else self.tokens_this_step(view)  # (an int: no full)
        target = committed.sum(dim=1) + k
        editable = view.in_active_block(view.editable)
        keep = selection.top_by_rank(running, editable, target)
        # committed & ~keep as one comparison of bools (False < True), the kind of `<` above
        return Decision(commit=keep & view.masked, remask=keep < committed)
