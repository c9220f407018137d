"""`medusa` and `medusa-verified`: k tokens per forward call from a causal LM's Medusa heads.

These name a decoding mode of `parallelbench.models.medusa` models (an autoregressive
backbone plus heads), so they live in the same registry, grids and result rows as every
other strategy; a diffusion model refuses them before any decoding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from parallelbench.decoding.strategy import DecodeOptions, Strategy, option_error, register_strategy


@dataclass
class MedusaOptions(DecodeOptions):
    k: int = 1  # tokens committed per forward call: the backbone's next token plus k - 1 heads' guesses


class _MedusaMode(Strategy):
    kind = "topk"
    Options = MedusaOptions

    def check_options(self) -> None:
        super().check_options()
        o = self.options
        if o.k < 1 or o.k > 17:
            raise option_error("k", o.k, "an integer from 1 to (number of Medusa heads + 1)")
        if o.temperature != 0:
            raise option_error("temperature", o.temperature, "0 (Medusa decoding here is greedy)")
        if o.block_length is not None:
            raise option_error("block_length", o.block_length, "None (autoregressive decoding has no blocks)")

    def begin(self, context: dict[str, Any]) -> None:
        raise ValueError(
            f"strategy {self.name!r} needs an autoregressive model with Medusa heads: "
            "use --model hf:<causal-lm> --model-opt medusa=<heads-dir> (train heads with `parallelbench medusa train`)"
        )


@register_strategy("medusa", listed=False)
class Medusa(_MedusaMode):
    """The paper's study: commit k tokens per step without verification."""


@register_strategy("medusa-verified", listed=False)
class MedusaVerified(_MedusaMode):
    """Medusa's own use: keep the guesses the backbone's greedy choice confirms."""
