"""Named strategies built from a score and a selection rule (sections 2-3, appendix E).

Top-k family (kind "topk"): random, l2r, confidence-topk, topk-margin, entropy-topk.
Adaptive family: confidence-threshold, confidence-factor, eb, klass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from parallelbench.decoding import selection
from parallelbench.decoding.op_kinds import ramp
from parallelbench.decoding.scores import SCORERS
from parallelbench.decoding.strategy import DecodeOptions, Strategy, option_error, register_strategy
from parallelbench.decoding.view import Decision, StepView


@dataclass
class TopKOptions(DecodeOptions):
    k: int | None = None  # tokens per step (1 when neither k nor steps is given)
    steps: int | None = None  # total steps instead of k, split evenly over blocks (LLaDA style)


class TopKStrategy(Strategy):
    """Commit a fixed number of best-scoring masked positions per step (within the active block)."""

    kind = "topk"
    Options = TopKOptions
    focus = "candidates"
    commits_in_candidates = True
    scorer: ClassVar[str] = "confidence"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        if self.options.k is None and self.options.steps is None:
            self.options.k = 1

    def check_options(self) -> None:
        super().check_options()
        o = self.options
        if o.k is not None and o.k < 1:
            raise option_error("k", o.k, "an integer >= 1 (tokens per step)")
        if o.steps is not None and o.steps < 1:
            raise option_error("steps", o.steps, "an integer >= 1")
        if o.k is not None and o.steps is not None:
            raise ValueError("options k and steps are exclusive: give tokens per step (k) or a number of steps")

    def validate(self, gen_length: int) -> None:
        super().validate(gen_length)
        steps, blocks = self.options.steps, self.num_blocks(gen_length)
        if steps is not None and steps % blocks != 0:
            raise option_error("steps", steps, f"a multiple of the number of blocks ({blocks})")

    def max_commits_per_row(self) -> int | None:
        return self.options.k if self.options.steps is None else None

    def tokens_this_step(self, view: StepView) -> torch.Tensor:
        """[b] tokens to commit now under the k or steps schedule."""
        if self.options.steps is None:
            return torch.full((view.batch_size,), self.options.k, dtype=torch.long, device=view.device)
        per_block = self.options.steps // view.num_blocks
        return selection.steps_schedule_k(view.tokens_to_finish_block(), per_block - view.block_step)

    def score(self, view: StepView) -> torch.Tensor:
        return SCORERS[self.scorer](view)

    def select(self, view: StepView, scores: torch.Tensor) -> torch.Tensor:
        fixed = self.options.steps is None and type(self).tokens_this_step is TopKStrategy.tokens_this_step
        return selection.top_k(scores, view.candidates, self.options.k if fixed else self.tokens_this_step(view))


@register_strategy("random")
class RandomTopK(TopKStrategy):
    description = "k masked positions per step, chosen uniformly at random"
    scorer = "random"


@register_strategy("l2r")
class LeftToRight(TopKStrategy):
    description = "the k leftmost masked positions per step (autoregressive order)"
    scorer = "position"


@register_strategy("confidence-topk")
class ConfidenceTopK(TopKStrategy):
    description = "the k positions whose best token is most probable"
    scorer = "confidence"


@register_strategy("topk-margin")
class MarginTopK(TopKStrategy):
    description = "the k positions with the widest gap between their two most probable tokens"
    scorer = "margin"


@register_strategy("entropy-topk")
class EntropyTopK(TopKStrategy):
    description = "the k positions whose predicted distribution has the lowest entropy"
    scorer = "entropy"

    def step(self, view: StepView) -> Decision:
        if self.options.k == 1 and view.focus is view.candidates:
            # one token: the least entropy, the leftmost on a tie (top_k's rule on -entropy), with +inf
            # off the candidates: no negation and no masking op
            entropy = view.entropy_at_focus(float("inf"))
            slots = ramp(0, entropy.shape[1], torch.long, entropy.device)
            return Decision(commit=(slots == entropy.argmin(dim=1, keepdim=True)) & view.candidates)
        return super().step(view)


@dataclass
class ThresholdOptions(DecodeOptions):
    threshold: float = 0.9  # commit tokens with confidence > threshold
    min_k: int = 1  # ... but at least this many per step, the most confident first (SDAR / LLaDA2 with steps < block)


@register_strategy("confidence-threshold")
class ConfidenceThreshold(Strategy):
    """Fast-dLLM threshold: every candidate with confidence above gamma, but at least the
    `min_k` most confident (the single best by default)."""
    description = "Fast-dLLM: every position whose confidence exceeds threshold, at least min_k per step"

    Options = ThresholdOptions
    reads_decision_confidence = True
    focus = "candidates"

    def check_options(self) -> None:
        super().check_options()
        if not 0.0 < self.options.threshold <= 1.0:
            raise option_error("threshold", self.options.threshold, "(0, 1]")
        if self.options.min_k < 1:
            raise option_error("min_k", self.options.min_k, "an integer >= 1 (tokens committed at least per step)")

    def select(self, view: StepView, scores: torch.Tensor) -> torch.Tensor:
        # decide on the noise-free confidence, break fallback ties by the (noisy) scores
        if self.options.min_k == 1:
            return selection.threshold(view.decision_confidence, view.candidates, self.options.threshold, scores)
        return selection.threshold_at_least(
            view.decision_confidence, view.candidates, self.options.threshold, self.options.min_k, scores
        )


@dataclass
class FactorOptions(DecodeOptions):
    factor: float = 1.0  # f in (n + 1)(1 - c_n) < f


@register_strategy("confidence-factor")
class ConfidenceFactor(Strategy):
    """Fast-dLLM factor rule (appendix E): the largest n with (n + 1)(1 - c_n) < f, at least 1."""
    description = "Fast-dLLM factor rule: the n most confident positions, n the largest with (n + 1)(1 - c_n) < factor"

    Options = FactorOptions
    reads_decision_confidence = True
    focus = "candidates"

    def check_options(self) -> None:
        super().check_options()
        if self.options.factor <= 0:
            raise option_error("factor", self.options.factor, "> 0")

    def select(self, view: StepView, scores: torch.Tensor) -> torch.Tensor:
        if view.decision_confidence is view.confidence:  # decided and ranked on the same values: one sort
            return selection.factor(view.confidence, view.candidates, self.options.factor)
        count = selection.factor_count(view.decision_confidence, view.candidates, self.options.factor)
        return selection.top_k(view.confidence, view.candidates, count)


@dataclass
class EBOptions(DecodeOptions):
    gamma: float = 0.1  # entropy budget in nats: sum H - max H <= gamma
    order: str = "entropy"  # error proxy that ranks tokens: entropy, confidence or margin


@register_strategy("eb")
class EntropyBounded(Strategy):
    """EB-sampler: add tokens (best first) while their summed entropy minus the largest stays <= gamma."""
    description = "EB-sampler: best first while the summed entropy minus the largest stays within gamma nats"

    Options = EBOptions
    focus = "candidates"
    ORDERS = ("entropy", "confidence", "margin")

    def check_options(self) -> None:
        super().check_options()
        if self.options.gamma < 0:
            raise option_error("gamma", self.options.gamma, ">= 0 (nats)")
        if self.options.order not in self.ORDERS:
            raise option_error("order", self.options.order, " | ".join(self.ORDERS))

    def score(self, view: StepView) -> torch.Tensor | None:
        return None if self.options.order == "entropy" else SCORERS[self.options.order](view)

    def select(self, view: StepView, scores: torch.Tensor | None) -> torch.Tensor:
        if scores is None:  # ranked by entropy itself: one sort gives the count and the tokens
            if view.focus is view.candidates:  # +inf off them: no masking op
                entropy = view.entropy_at_focus(float("inf"))
                return selection.entropy_bounded(entropy, view.candidates, self.options.gamma, inf_elsewhere=True)
            return selection.entropy_bounded(view.entropy, view.candidates, self.options.gamma)
        count = selection.entropy_bounded_count(view.entropy, view.candidates, self.options.gamma)
        return selection.top_k(scores, view.candidates, count)


@dataclass
class KlassOptions(DecodeOptions):
    threshold: float = 0.9  # confidence a stable token must exceed
    stable_steps: int = 2  # consecutive steps the prediction must agree (including this one)
    kl_threshold: float | None = None  # also require KL(p_t || p_t-1) <= this at every counted step


@register_strategy("klass")
class Klass(Strategy):
    """KLASS-style stability: commit tokens whose prediction held for `stable_steps` steps
    and whose confidence exceeds `threshold`; otherwise the single most confident."""
    description = "KLASS: positions whose prediction held for stable_steps steps with confidence above threshold"

    Options = KlassOptions
    reads_decision_confidence = True
    focus = "masked"  # predictions of masked positions outside the active block build up stability too

    def check_options(self) -> None:
        super().check_options()
        o = self.options
        if not 0.0 <= o.threshold <= 1.0:
            raise option_error("threshold", o.threshold, "[0, 1]")
        if o.stable_steps < 1:
            raise option_error("stable_steps", o.stable_steps, "an integer >= 1")
        if o.kl_threshold is not None and o.kl_threshold < 0:
            raise option_error("kl_threshold", o.kl_threshold, ">= 0 or None")

    def init_state(self, batch_size: int, gen_length: int, device: torch.device) -> dict[str, torch.Tensor]:
        return {
            "prev_token": torch.full((batch_size, gen_length), -1, dtype=torch.long, device=device),
            "stable": torch.zeros((batch_size, gen_length), dtype=torch.long, device=device),
        }

    def step(self, view: StepView):
        st, o = view.state, self.options
        x0 = view.x0
        same = x0 == st["prev_token"]
        if o.kl_threshold is not None:
            prev = st.get("prev_log_probs")
            if prev is not None:
                kl = (view.probs * (view.log_probs - prev)).sum(dim=-1)
                same = same & (kl <= o.kl_threshold)
            st["prev_log_probs"] = view.log_probs
        st["stable"] = (st["stable"] + 1).masked_fill(~same, 1)
        st["prev_token"] = x0
        # stable >= stable_steps, in the comparison kind the threshold uses (counts are integers)
        chosen = view.candidates & (st["stable"] > o.stable_steps - 1) & (view.decision_confidence > o.threshold)
        return Decision(commit=selection.with_fallback(chosen, view.confidence, view.candidates))
