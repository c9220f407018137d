"""What the decoding engine drives: a masked diffusion model and (for APD) a causal verifier.

Kept apart from `base.py` (the runner-side interfaces) so that the decoding package,
which `base.py` names for its `Strategy` annotations, can name these without an
import circle. `parallelbench.models.base` re-exports both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import torch

__all__ = [
    "BlockCausalModel",
    "BlockProgress",
    "CausalModel",
    "MaskedDiffusionModel",
    "ModelInputError",
    "is_block_causal",
    "supports_attention_bias",
    "uses_block_cache",
    "uses_delayed_cache",
]


class ModelInputError(ValueError):
    """An input this model cannot take: a prompt and answer longer than its positions, words
    outside its vocabulary, a block length its blocks do not divide. Raise it (one line saying
    what does not fit and how to fix it) before or while decoding; the runner then skips the
    task with one line naming the model and the task, and `parallelbench lm-eval` stops with one."""


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
class BlockCausalModel(MaskedDiffusionModel, Protocol):
    """A block-diffusion network (SDAR / TraDo, LLaDA 2.x): bidirectional attention inside a
    block, causal across blocks. `block_causal = True` (class or instance attribute) tells
    `decode()` to lay out the blocks and the attention itself; nothing is set on the net first.

    Blocks live on each row's absolute position grid: position p (0 = the row's first real
    prompt token) is in block p // block_length; the first generation block is the partial
    block holding the prompt's tail, and each row's generation region is rounded up to a block
    boundary (the extra slots are decoded and count as steps; `gen_length` tokens come back).

    - `block_size`: the block granularity the checkpoint requires (from its config; None when
      the config states none). `decode()` refuses, in one line before any model call, a
      strategy `block_length` that is not a positive multiple of it.
    - `default_block_length`: the block length `decode()` uses when the strategy sets none.
    - `cache_mode`: "none" or "block" (the `cache=` model option). "block" asks `decode()` to
      drive the exact KV cache below (`new_kv_cache` / `forward_cached`); a net that cannot do
      it must not accept cache=block.

    `forward(canvas, *, attention_mask=None, rows=None, position_ids=None, attention_bias=None)`:
    given `position_ids` [B, L] and `attention_bias` [B, L, L] (float, added to every head's
    scores, query index first; 0 = attend, -inf = blocked), the net applies them AS GIVEN
    (rotary positions from position_ids, no masking of its own on top). Logits at index i are
    the prediction for canvas position i (no shift). Without them (a plain call) it uses its
    own default: positions from attention_mask (left padding), full bidirectional attention
    over non-pad keys. The engine always gives both for block-causal decodes: query i sees
    key j iff j is a real (non-pad, on-grid) position and block(j) <= block(i).
    """

    block_causal: bool
    block_size: "int | None"
    default_block_length: int
    cache_mode: str

    def forward(
        self,
        canvas: "torch.Tensor",
        *,
        attention_mask: "torch.Tensor | None" = None,
        rows: "torch.Tensor | None" = None,
        position_ids: "torch.Tensor | None" = None,  # LongTensor [B, L]
        attention_bias: "torch.Tensor | None" = None,  # float [B, L, L]
    ) -> "torch.Tensor":  # [B, L, V]
        ...

    def new_kv_cache(self, batch: int, length: int) -> object:
        """(cache_mode "block", with `supports_kv_cache = True`) Opaque per-layer key/value buffers
        for `batch` ORIGINAL rows x `length` canvas columns."""
        ...

    def forward_cached(
        self,
        ids: "torch.Tensor",  # LongTensor [b, W]: canvas columns [start, start + W) of rows `rows`
        *,
        kv: object,
        rows: "torch.Tensor",  # LongTensor [b]: indices into kv's batch (finished rows dropped)
        start: int,
        position_ids: "torch.Tensor",  # LongTensor [b, W]
        attention_bias: "torch.Tensor",  # float [b, W, start + W]
        store: "torch.Tensor | None" = None,  # BoolTensor [b, W]
    ) -> "torch.Tensor":  # [b, W, V] logits of the window
        """The window's queries see kv's stored keys/values of columns [0, start) of each row,
        then the window's own fresh ones; `attention_bias` is added over exactly that key axis
        (columns never stored hold garbage: the engine's bias masks them). Afterwards the
        keys/values of window positions where `store` is True are written into kv at their
        columns (every layer, each row). Tokens must equal the uncached path's: under
        block-causal attention a finished block's keys/values depend only on it and earlier
        blocks, so reusing them is exact."""
        ...


def is_block_causal(model: object) -> bool:
    """Whether `decode()` drives `model` as a block-diffusion net (see BlockCausalModel)."""
    return getattr(model, "block_causal", False) is True


def uses_block_cache(model: object) -> bool:
    """Whether a block-causal net asks for the exact KV cache across blocks."""
    return is_block_causal(model) and getattr(model, "cache_mode", "none") == "block"


@dataclass(frozen=True)
class BlockProgress:
    """What a multi-block decode (d3LLM) tells a net with the delayed prefix cache at each call.

    A net whose `cache_mode` is "delayed" (native LLaDA / Dream, `cache=delayed`) accepts
    `forward(canvas, *, attention_mask, rows, block_progress=BlockProgress(...))` and decides from
    it which finished blocks enter its per-row cache and when it refreshes; the `multi-block`
    strategy passes it, and a call without it is a plain uncached forward.
    """

    step: int  # 1-based model call of this decode: 1 starts a new decode (the cache starts empty)
    prompt_length: int  # canvas columns before the generation region (left padding included)
    block_length: int
    finished: "torch.Tensor"  # [b, K] bool: block k of the row is in flight and has nothing left to decode


def uses_delayed_cache(model: object) -> bool:
    """Whether `model.forward` takes `block_progress` (d3LLM's delayed prefix cache, `cache=delayed`)."""
    return getattr(model, "cache_mode", "none") == "delayed"


@runtime_checkable
class CausalModel(Protocol):
    """An autoregressive model: logits for the next token at every position (APD's verifier)."""

    eos_id: int
    vocab_size: int

    def forward(
        self, tokens: "torch.Tensor", *, attention_mask: "torch.Tensor | None" = None
    ) -> "torch.Tensor":  # [B, L, V]; position i predicts token i + 1
        ...
