"""What the decoding engine drives: a masked diffusion model and (for APD) a causal verifier.

Kept apart from `base.py` (the runner-side interfaces) so that the decoding package,
which `base.py` names for its `Strategy` annotations, can name these without an
import circle. `parallelbench.models.base` re-exports both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import torch

__all__ = ["CausalModel", "MaskedDiffusionModel", "supports_attention_bias"]


@runtime_checkable
class MaskedDiffusionModel(Protocol):
    """What the decoding engine calls.

    Optional capability, `supports_attention_bias = True`: `forward` then also accepts
    - `position_ids`: LongTensor [B, L], each token's position (None = 0..L-1 counted
      after the left padding, as without the capability);
    - `attention_bias`: float tensor [B, L, L] added to every head's attention scores:
      0 where query i may see key j, -inf where it may not (None = the usual key-padding
      behaviour). Given, it alone decides who sees whom: the caller folds the padding
      into it, and every query must see at least one key.
    Two tokens may share a position id. WINO uses this to verify its drafts in the same
    call (one appended shadow block); a model without the attribute still runs WINO
    through a slower fallback (one extra row per verified token).
    """

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


def supports_attention_bias(model: object) -> bool:
    """Whether `model.forward` takes `position_ids` and `attention_bias` (see MaskedDiffusionModel)."""
    return getattr(model, "supports_attention_bias", False) is True


@runtime_checkable
class CausalModel(Protocol):
    """An autoregressive model: logits for the next token at every position (APD's verifier)."""

    eos_id: int
    vocab_size: int

    def forward(
        self, tokens: "torch.Tensor", *, attention_mask: "torch.Tensor | None" = None
    ) -> "torch.Tensor":  # [B, L, V]; position i predicts token i + 1
        ...
