"""Per-position scores that rank masked positions: higher means "commit me first".

Each scorer maps a `StepView` to a float tensor [b, G]. Confidence, margin and
entropy are measured on softmax(logits) at temperature 1 (the model's own belief),
whatever temperature the tokens themselves are drawn at.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import torch

if TYPE_CHECKING:
    from parallelbench.decoding.view import StepView

Scorer = Callable[["StepView"], torch.Tensor]


def confidence(view: "StepView") -> torch.Tensor:
    """Probability of the token that would be committed (MaskGIT / LLaDA low-confidence remasking)."""
    return view.confidence


def margin(view: "StepView") -> torch.Tensor:
    """Top-1 minus top-2 probability."""
    return view.margin


def entropy(view: "StepView") -> torch.Tensor:
    """Negative entropy of the predictive distribution (Dream's entropy ordering)."""
    return view.entropy * -1.0  # exactly -entropy, with the multiply kind the loop runs anyway


def position(view: "StepView") -> torch.Tensor:
    """Left to right: the leftmost position scores highest."""
    g = view.gen_length
    # exactly -arange (negative zero first), with the multiply kind the loop runs anyway
    return (torch.arange(g, device=view.device, dtype=torch.float32) * -1.0).expand(view.batch_size, g)


def random(view: "StepView") -> torch.Tensor:
    """Uniform random ranks from each row's own generator."""
    return view.uniform((view.gen_length,))


SCORERS: dict[str, Scorer] = {
    "confidence": confidence,
    "margin": margin,
    "entropy": entropy,
    "position": position,
    "random": random,
}
