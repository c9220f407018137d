"""What the decoding engine drives: a masked diffusion model and (for APD) a causal verifier.

Kept apart from `base.py` (the runner-side interfaces) so that the decoding package,
which `base.py` names for its `Strategy` annotations, can name these without an
import circle. `parallelbench.models.base` re-exports both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import torch

__all__ = ["CausalModel", "MaskedDiffusionModel"]


@runtime_checkable
class MaskedDiffusionModel(Protocol):
    mask_id: int
    eos_id: int
    vocab_size: int

    def forward(
        self,
        canvas: "torch.Tensor",  # LongTensor [B, L]: prompt then generation region
        *,
        attention_mask: "torch.Tensor | None" = None,  # BoolTensor [B, L], False on left padding
        rows: "torch.Tensor | None" = None,  # LongTensor [B]: each row's index in the original batch
    ) -> "torch.Tensor":  # FloatTensor [B, L, V] logits
        """Logits for every position. `rows` lets per-sample models (the ideal
        model) know which sample a row is after finished rows were dropped."""
        ...


@runtime_checkable
class CausalModel(Protocol):
    """An autoregressive model: logits for the next token at every position (APD's verifier)."""

    eos_id: int
    vocab_size: int

    def forward(
        self, tokens: "torch.Tensor", *, attention_mask: "torch.Tensor | None" = None
    ) -> "torch.Tensor":  # [B, L, V]; position i predicts token i + 1
        ...
