"""`BlockCausalNet`: a block-diffusion transformer (SDAR / TraDo, LLaDA 2.x) as the engine drives it.

It implements the block-causal contract (`models/protocols.py`, docs/architecture.md):

- `block_causal = True`; `block_size` (the checkpoint's trained block size where its config states
  one, else None) and `default_block_length` (the family's decoding default) tell `decode()` how
  to lay out blocks on each row's absolute position grid;
- `forward(canvas, attention_mask=, rows=, position_ids=, attention_bias=)` applies positions and
  the additive bias exactly as given (no masking of its own on top); a plain call (neither given)
  runs full bidirectional attention over the non-pad tokens, positions counted from each row's
  first real token;
- with `cache="block"`: `supports_kv_cache`, `new_kv_cache(batch, length)` and
  `forward_cached(ids, kv=, rows=, start=, position_ids=, attention_bias=, store=)`, the exact
  KV cache of finished blocks (`block_cache.BlockKV`), preallocated per (batch, length): the next
  decode of the same shape gets the same buffers back (zeroed), so a CUDA graph replays on them;
- `compile=true`: both forwards compiled whole (`DiffusionTransformer.enable_compile`);
- `delete_token_id` / `split_token_id`: the DELETE and SPLIT ids of LLaDA 2.2's insert/delete editing
  (`indel-threshold`), from the config where it states them, else None.
None of it reads a device value on the host.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from parallelbench.models.hf.net import HFDiffusionNet
from parallelbench.models.native.block_cache import BlockKV
from parallelbench.models.native.layers import default_positions

CACHE_MODES = ("none", "block")


class BlockCausalNet(HFDiffusionNet):
    block_causal = True
    supports_attention_bias = True
    cache_modes = ("block",)

    def __init__(self, model: torch.nn.Module, *, mask_id: int, eos_id: int, vocab_size: int,
                 stop_ids: Sequence[int] = (), pad_id: int | None = None, cache: str = "none", source: str = "",
                 compile: bool = False, delete_token_id: int | None = None, split_token_id: int | None = None):
        if cache not in CACHE_MODES:
            raise ValueError(f"cache={cache!r} is invalid for a block-diffusion model: use none or block "
                             "(block: the exact KV cache of finished blocks)")
        super().__init__(model, mask_id=mask_id, eos_id=eos_id, vocab_size=vocab_size, stop_ids=stop_ids,
                         pad_id=pad_id, cache="none")
        self.family = getattr(model, "family", "native")
        self.block_size: int | None = getattr(model, "block_size", None)
        self.default_block_length = int(getattr(model, "default_block_length", None) or self.block_size or 32)
        self.cache_mode = cache
        self.supports_kv_cache = cache == "block"
        self.source = source
        self.compiled = bool(compile)
        if compile:
            model.enable_compile()
        self._kv: BlockKV | None = None  # the last cache handed out, reused for the same (batch, length)
        self.delete_token_id, self.split_token_id = delete_token_id, split_token_id

    @torch.no_grad()
    def forward(self, canvas: torch.Tensor, *, attention_mask: torch.Tensor | None = None,
                rows: torch.Tensor | None = None, position_ids: torch.Tensor | None = None,
                attention_bias: torch.Tensor | None = None) -> torch.Tensor:
        if attention_mask is not None:
            attention_mask = attention_mask.bool()
        positions = default_positions(attention_mask, canvas) if position_ids is None else position_ids
        raw = self.model(canvas, attention_mask, position_ids=positions, attention_bias=attention_bias,
                         bias_as_given=True)
        return self._finish(raw)

    __call__ = forward

    def new_kv_cache(self, batch: int, length: int) -> BlockKV:
        """Per-layer key/value buffers for `batch` original rows x `length` canvas columns."""
        if not self.supports_kv_cache:
            raise ValueError("this net was built with cache=none; load it with cache=block for the KV cache")
        kv = self._kv
        if kv is not None and (kv.batch, kv.length) == (int(batch), int(length)) \
                and kv.keys[0].device == self.model.embed.weight.device:
            return kv.zero_()
        self._kv = None  # free the old buffers before allocating new ones
        self._kv = self.model.new_kv_cache(int(batch), int(length))
        return self._kv

    @torch.no_grad()
    def forward_cached(self, ids: torch.Tensor, *, kv: BlockKV, rows: torch.Tensor, start: int,
                       position_ids: torch.Tensor, attention_bias: torch.Tensor,
                       store: torch.Tensor | None = None) -> torch.Tensor:
        """Logits [b, W, V] of canvas columns [start, start + W) of kv rows `rows` (see the module doc)."""
        raw = self.model.forward_cached(ids, kv, rows.to(ids.device), int(start), position_ids, attention_bias,
                                        store)
        return self._finish(raw)

    def _finish(self, raw: torch.Tensor) -> torch.Tensor:
        logits = raw[..., : self.vocab_size]
        if self.merge_ids:
            return self.finish_logits(logits)
        return logits

    def versions(self) -> dict[str, Any]:
        out = {"torch": torch.__version__, "native_family": self.family, "kv_cache": self.cache_mode,
               "dtype": str(next(self.model.parameters()).dtype).replace("torch.", ""),
               "block_size": str(self.block_size), "default_block_length": str(self.default_block_length)}
        if self.source:
            out["checkpoint"] = self.source
        if self.compiled:
            out["compile"] = "true"
        return out
