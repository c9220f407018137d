"""PC-sampler: position-aware, frequency-calibrated confidence (Huang et al., 2025, arXiv:2508.13021).

Plain confidence ordering decodes the easy boundary tokens first (the "U-shaped"
trajectory) and favours trivial tokens (punctuation, filler words, EOS). PC-sampler
ranks each masked position i (0 = first generated position) by

    score_i = exp(-lam * i) * min(p_i * (-log p_ref(x_i)), alpha)

where p_i is the probability of the proposed token x_i and p_ref a background token
frequency: tokens that are everywhere get a small -log p_ref and wait, and the
exponential weight steers the order towards left to right. The number of tokens per
step follows the usual `k` / `steps` schedule (the paper's NumToReveal).

The reference frequencies come from the `frequencies` option (a JSON file: a list of
per-token counts indexed by id, or an object {"id": count}), else from the model's
`token_frequencies` attribute when it has one; without either, every token gets the
same frequency and only the position weighting is left.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from parallelbench.decoding import selection
from parallelbench.decoding.presets import TopKOptions, TopKStrategy
from parallelbench.decoding.strategy import option_error, register_strategy
from parallelbench.decoding.view import StepView


@dataclass
class PcSamplerOptions(TopKOptions):
    lam: float = 0.25  # position decay: weight exp(-lam * i) (paper: 0.25 for most tasks, 0 for Sudoku)
    alpha: float = 10.0  # clip of the calibrated confidence p * -log p_ref (paper: 10)
    frequencies: str | None = None  # JSON file of reference token counts (default: model.token_frequencies)


def read_frequencies(path: str) -> dict[int, float]:
    """{token id: count} from a JSON list (index = token id) or object {"id": count}."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(
            f"option frequencies={path!r} cannot be read ({type(exc).__name__}); "
            "give a JSON file with a list of per-token counts or an object {\"token id\": count}"
        ) from None
    items = enumerate(data) if isinstance(data, list) else data.items() if isinstance(data, dict) else None
    if items is None:
        raise ValueError(f"option frequencies={path!r} must hold a JSON list or object of token counts")
    counts: dict[int, float] = {}
    for key, value in items:
        try:
            idx, count = int(key), float(value)
        except (TypeError, ValueError):
            raise ValueError(f"option frequencies={path!r}: entry {key!r}: {value!r} is not a token id and a count") from None
        if idx >= 0 and count > 0 and math.isfinite(count):
            counts[idx] = count
    return counts


def count_table(counts: dict[int, float], vocab_size: int) -> torch.Tensor:
    table = torch.zeros(vocab_size, dtype=torch.float64)
    for idx, count in counts.items():
        if idx < vocab_size:
            table[idx] = count
    return table


def salience(counts: torch.Tensor) -> torch.Tensor:
    """-log p_ref per token, add-one smoothed so an unseen token is rare, not impossible."""
    counts = counts.to(torch.float64)
    return (-torch.log((counts + 1.0) / (counts.sum() + counts.numel()))).float()


@register_strategy("pc-sampler")
class PcSampler(TopKStrategy):
    description = "PC-sampler: top-k by confidence, weighted toward the left and against frequent tokens"
    Options = PcSamplerOptions

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._salience: torch.Tensor | None = None
        self._table = None
        self._cached: tuple[str, dict[int, float]] | None = None

    def check_options(self) -> None:
        super().check_options()
        o = self.options
        if o.lam < 0:
            raise option_error("lam", o.lam, ">= 0 (0 = no position weighting)")
        if o.alpha <= 0:
            raise option_error("alpha", o.alpha, "> 0 (clip of the calibrated confidence)")

    def check_model(self, model: Any) -> None:
        """Read the reference frequencies now, so a bad file is refused before any decoding."""
        super().check_model(model)
        if self.options.frequencies is not None:
            self.counts()

    def begin(self, context: dict[str, Any]) -> None:
        model = context.get("model")
        self.check_model(model)
        self._salience = None
        self._table = getattr(model, "token_frequencies", None)

    def counts(self) -> dict[int, float]:
        """The `frequencies` file's counts, read once per path."""
        path = self.options.frequencies
        if self._cached is None or self._cached[0] != path:
            self._cached = (path, read_frequencies(path))
        return self._cached[1]

    def reference(self, vocab_size: int) -> torch.Tensor | None:
        """-log p_ref per token id over the vocabulary: from the `frequencies` file, else the
        model's `token_frequencies`; None when neither is given."""
        if self._salience is not None and self._salience.numel() == vocab_size:
            return self._salience
        if self.options.frequencies is not None:
            table = count_table(self.counts(), vocab_size)
        elif self._table is not None:
            given = torch.as_tensor(self._table, dtype=torch.float64).flatten()[:vocab_size]
            table = torch.cat([given, torch.zeros(vocab_size - given.numel(), dtype=torch.float64)])
        else:
            return None
        self._salience = salience(table)
        return self._salience

    def score(self, view: StepView) -> torch.Tensor:
        o = self.options
        conf = view.confidence.float()
        sal = self.reference(view.logits.shape[-1])
        if sal is not None:
            conf = conf * sal.to(view.device)[view.x0]
        calibrated = conf.clamp(min=1e-30, max=o.alpha)
        # log of exp(-lam * i) * C: the same order, without underflow at long generations
        # (an add with alpha -1 is sub's own kernel, in a kind the loop runs anyway)
        return torch.add(torch.log(calibrated), self._decay(view.gen_length, view.device), alpha=-1)

    def _decay(self, gen_length: int, device: torch.device) -> torch.Tensor:
        """[1, G] lam * i, made once per length, device and lam (the same every step)."""
        key = (gen_length, device, self.options.lam)
        cache = self.__dict__.setdefault("_decays", {})
        if key not in cache:
            cache[key] = self.options.lam * torch.arange(gen_length, device=device, dtype=torch.float32).unsqueeze(0)
        return cache[key]

    def select(self, view: StepView, scores: torch.Tensor) -> torch.Tensor:
        return selection.top_k(scores, view.candidates, self.tokens_this_step(view))
