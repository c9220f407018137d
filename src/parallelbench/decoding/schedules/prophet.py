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
from parallelbench.decoding.op_kinds import cached, constant, filled, minus, ramp
from parallelbench.decoding.strategy import option_error, register_strategy
from parallelbench.decoding.view import Decision, StepView, row_max, row_top2


@dataclass
class ProphetOptions(TopKOptions):
    gap_early: float = 7.5  # logit gap required while less than 1/3 of the generation is committed
    gap_mid: float = 5.0  # ... from 1/3 to 2/3
    gap_late: float = 2.5  # ... after 2/3


# Region widths up to which gap_threshold looks the stage up in a table of (width + 1)^2 entries
# (a million bytes at 512); wider regions compute it.
STAGE_TABLE_UP_TO = 512


def _stage_of(left: torch.Tensor, total: torch.Tensor) -> torch.Tensor:
    """The stage index (0 late, 1 mid, 2 early: the thirds of progress not yet passed) of rows with
    `left` masks among `total` editable slots. progress < k/3 is decided on integers as
    3 * left > (3 - k) * total: the same answer as the float division for any region under a
    million slots. An empty row has passed no third."""
    left3 = (left * 3).masked_fill(total == 0, 1)
    return (left3 > torch.stack([total * 2, total])).sum(dim=0)


def _top2(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(top-1 value, its index, top-2 value) of each row of [N, V] (edited on the plain path):
    view.row_top2 where row_max uses chunks (no second pass over the vocabulary), else the top-1
    entry set aside with index_put_ (a kind the step runs anyway) and the maximum of the rest."""
    found = row_top2(logits)
    if found is not None:
        return found
    first, index = row_max(logits)
    logits.index_put_((ramp(0, logits.shape[0], torch.long, logits.device), index), constant(float("-inf"), logits))
    return first, index, logits.amax(dim=-1)


def top2_gap(view: StepView, where: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-1 minus top-2 logit (mask token excluded; NaN where both are infinite) and the top-1
    token at `where` [b, G]; +inf and the canvas elsewhere. Reads only those positions' logits."""
    top = view.canvas.clone()
    r, p = view.positions(where)
    if not r.numel():
        return torch.full(view.canvas.shape, float("inf"), device=view.device), top
    logits = view.logits_at(where, r, p)  # our own copy: safe to edit
    if 0 <= view.mask_id < logits.shape[-1]:
        logits.select(1, view.mask_id).fill_(float("-inf"))
    first, index, second = _top2(logits)
    gap = filled(float("inf"), view.canvas.shape, logits)
    # NaN where both are -inf (or +inf): below every threshold, as the gap of 0 it stands for
    # (amin keeps a NaN and NaN > t is False)
    gap[r, p] = minus(first, second)
    top[r, p] = index
    return gap, top


@register_strategy("prophet")
class Prophet(TopKStrategy):
    description = "Prophet: confidence top-k, and all at once when every top-2 gap exceeds its staged threshold"
    kind = "adaptive"
    Options = ProphetOptions

    def check_options(self) -> None:
        super().check_options()
        o = self.options
        for name in ("gap_early", "gap_mid", "gap_late"):
            if getattr(o, name) < 0:
                raise option_error(name, getattr(o, name), ">= 0 (a gap in logits)")

    def gap_threshold(self, view: StepView) -> torch.Tensor:
        """[b] the threshold at each row's progress (committed / editable, an empty row at 0).
        Masks are always editable, so committed = editable - masked: the threshold is a function of
        the two counts, looked up in a table made once per region width (`_stage_of` on every pair)
        with one index: four ops a step in kinds the step runs anyway, where the rule itself is ten."""
        g = view.gen_length
        total, left = view.editable.sum(dim=1), view.masked.sum(dim=1)
        if g > STAGE_TABLE_UP_TO:  # a table of (g + 1)^2 entries would be large: the rule itself
            return self._stages_late_first(view.device).index_select(0, _stage_of(left, total))
        table = cached(("prophet-stages", g, self._gaps(), view.device), lambda: self._stage_table(g, view.device))
        return table.index_select(0, torch.add(total, left, alpha=g + 1))  # entry left * (g + 1) + total

    def _stage_table(self, g: int, device: torch.device) -> torch.Tensor:
        """[(g + 1)^2] float32: the threshold for `left` masks among `total` editable slots at
        left * (g + 1) + total."""
        counts = torch.arange(g + 1, device=device)
        left, total = counts.repeat_interleave(g + 1), counts.repeat(g + 1)
        return self._stages_late_first(device).index_select(0, _stage_of(left, total))

    def _gaps(self) -> tuple[float, float, float]:
        o = self.options
        return o.gap_late, o.gap_mid, o.gap_early

    def _stages_late_first(self, device: torch.device) -> torch.Tensor:
        """[3] float32 (gap_late, gap_mid, gap_early), made once per device."""
        gaps = self._gaps()
        return cached(("prophet-gaps", gaps, device), lambda: torch.tensor(gaps, dtype=torch.float32, device=device))

    def step(self, view: StepView) -> Decision:
        thr = self.gap_threshold(view)
        # the base rule and its tokens first: top2_gap then takes over the view's copy of the logits
        base = self.select(view, self.score(view))
        x0 = view.x0
        # the active block first: a row whose candidates are not all settled cannot commit early,
        # so the other masked positions are looked at only for rows that pass. The gaps are +inf
        # off the positions looked at, so "every looked-at gap above the threshold" is a row minimum.
        gap, top = top2_gap(view, view.candidates)
        settled = gap.amin(dim=1) > thr
        if view.masked is not view.candidates:  # masks outside the active block (not on the block-causal loop)
            rest = view.masked & ~view.candidates & settled.unsqueeze(1)
            if bool(rest.amax()):  # any()
                gap_rest, top_rest = top2_gap(view, rest)
                gap, top = torch.where(rest, gap_rest, gap), torch.where(rest, top_rest, top)
                settled = settled & (gap.amin(dim=1) > thr)
        early = settled.unsqueeze(1)
        view.state["extra_early_commit"] = view.state["extra_early_commit"] + settled
        # an early commit writes every masked position's top token: where(early, masked, base), into
        # base (the selection's own new tensor), and the tokens into top itself (where with out=: the
        # op kinds the loop runs anyway)
        commit = torch.where(early, view.masked, base, out=base)
        return Decision(commit=commit, tokens=torch.where(early, top, x0, out=top))

    def init_state(self, batch_size: int, gen_length: int, device: torch.device) -> dict[str, torch.Tensor]:
        return {"extra_early_commit": torch.zeros(batch_size, dtype=torch.long, device=device)}
