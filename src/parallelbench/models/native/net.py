"""`NativeDiffusionNet`: a native transformer as the `MaskedDiffusionModel` the engine drives.

On top of `HFDiffusionNet` (stop ids merged into EOS, decode sessions) it adds what the
native module makes possible:

- the Dream logit shift applied per row: position i reads the prediction made at i - 1, and
  each row's first real position repeats itself, so a left-padded row matches the row alone;
- the attention-bias extension: `position_ids` [B, L] and `attention_bias` [B, L, L] (added to
  every head's scores) pass straight to the transformer; such calls bypass the KV cache (they
  are not steps of a block-wise decode). `supports_attention_bias` is declared for unshifted
  families (LLaDA) only, see `__init__`;
- per-row prefix and dual caches (`cache.RowBlockCache`), batch-invariant by construction,
  with their bookkeeping on the device: a decoding loop that calls `host_plan` after its step
  and hands the values back with `set_host_plan` gets a forward that reads nothing on the host;
- d3LLM's delayed prefix cache (`delayed_cache.DelayedPrefixCache`, cache=delayed), used by calls
  that carry a multi-block decode's `block_progress`;
- `compile=true`: every forward compiled whole (`DiffusionTransformer.enable_compile`).
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from parallelbench.models.hf.net import HFDiffusionNet, merge_stop_logits
from parallelbench.models.native.cache import RowBlockCache
from parallelbench.models.native.delayed_cache import DelayedPrefixCache
from parallelbench.models.native.layers import default_positions

CACHE_MODES = ("prefix", "dual", "delayed")


class NativeDiffusionNet(HFDiffusionNet):
    supports_attention_bias = True
    cache_modes = CACHE_MODES

    def __init__(self, model: torch.nn.Module, *, mask_id: int, eos_id: int, vocab_size: int,
                 stop_ids: Sequence[int] = (), pad_id: int | None = None, cache: str = "none",
                 source: str = "", compile: bool = False, cache_delay: int = 2,
                 refresh_interval: int | None = None):
        if cache not in ("none", *CACHE_MODES):
            raise ValueError(f"cache={cache!r} is invalid: use none, prefix, dual or delayed")
        super().__init__(model, mask_id=mask_id, eos_id=eos_id, vocab_size=vocab_size, stop_ids=stop_ids,
                         pad_id=pad_id, cache="none")
        self.family = getattr(model, "family", "native")
        self.logit_shift = int(getattr(model, "logit_shift", 0))
        # A shifted family reads position i's prediction at sequence index i - 1, so a shadow
        # block laid out for an unshifted model (WINO's) would read the wrong query: Dream keeps
        # the keyword arguments but does not declare the capability, and WINO takes its exact
        # leave-one-out fallback there.
        self.supports_attention_bias = self.logit_shift == 0
        self.cache_mode = cache
        self.source = source
        self.compiled = bool(compile)
        if compile:
            model.enable_compile()
        self._row_cache = None if cache in ("none", "delayed") else RowBlockCache(
            model, cache, mask_id=self.mask_id, shift=self.logit_shift)
        self._delayed = None if cache != "delayed" else DelayedPrefixCache(
            model, delay=cache_delay, refresh_interval=refresh_interval)
        self._plan: tuple[int, list[int]] | None = None  # (rows, values) of `set_host_plan`, for the next call

    @torch.no_grad()
    def forward(self, canvas: torch.Tensor, *, attention_mask: torch.Tensor | None = None,
                rows: torch.Tensor | None = None, position_ids: torch.Tensor | None = None,
                attention_bias: torch.Tensor | None = None, block_progress=None) -> torch.Tensor:
        if attention_mask is not None:
            attention_mask = attention_mask.bool()
        if rows is None:
            rows = torch.arange(canvas.shape[0], device=canvas.device)
        positions = default_positions(attention_mask, canvas) if position_ids is None else position_ids
        plan, self._plan = self._plan, None
        values = plan[1] if plan is not None and plan[0] == canvas.shape[0] else None
        if self._delayed is not None and block_progress is not None and attention_bias is None and position_ids is None:
            raw, first = self._delayed.forward(canvas, attention_mask, positions, rows, block_progress,
                                               values[0] if values else None)
            return self._finish(raw, attention_mask, first)
        session = self.session_info
        if self._row_cache is not None and session is not None and attention_bias is None and position_ids is None:
            raw = self._row_cache.forward(canvas, attention_mask, positions, rows, session.gen_length,
                                          session.block_length, values)
        else:
            raw = self.model(canvas, attention_mask, position_ids=positions, attention_bias=attention_bias)
        return self._finish(raw, attention_mask)

    def host_plan(self, canvas: torch.Tensor, rows: torch.Tensor, keep: torch.Tensor) -> torch.Tensor | None:
        """What the next call, `forward(canvas[keep], rows=rows[keep])`, needs to know on the host,
        as a small long tensor on the device (None: nothing): the caller reads it together with its
        own values (one transfer) and passes them to `set_host_plan` before that call."""
        session = self.session_info
        if self._row_cache is None or session is None:
            return None
        return self._row_cache.plan(canvas, rows, keep, session.gen_length, session.block_length)

    def delayed_cache_plan(self, canvas: torch.Tensor, rows: torch.Tensor, block_progress) -> torch.Tensor | None:
        """With cache=delayed: the coming call `forward(canvas, rows=rows, block_progress=block_progress)`
        worked out now; returns what it needs on the host (the first column it computes, on the
        device) for the caller to read with its own host decision and hand to `set_host_plan`."""
        if self._delayed is None:
            return None
        return self._delayed.plan(rows, block_progress, canvas.shape[1])

    def set_host_plan(self, rows: int, values: list[int]) -> None:
        """The values of `host_plan` / `delayed_cache_plan` for the next call, which has `rows` rows (used once)."""
        self._plan = (int(rows), [int(v) for v in values])

    __call__ = forward

    def _finish(self, raw: torch.Tensor, attention_mask: torch.Tensor, first: torch.Tensor | None = None) -> torch.Tensor:
        logits = raw[..., : self.vocab_size]
        if self.logit_shift:
            logits = shift_per_row(logits, attention_mask, self.logit_shift, first)
        if logits.data_ptr() == raw.data_ptr() and not self.merge_ids:
            logits = logits.clone()  # never hand out the cache's own buffer
        if self.merge_ids:
            logits = merge_stop_logits(logits, self.eos_id, self.merge_ids, self.merge_index(logits.device))
        return logits

    def reset(self) -> None:
        self._plan = None
        for cache in (self._row_cache, self._delayed):
            if cache is not None:
                cache.reset()

    def cache_refreshes(self) -> dict[int, int]:
        cache = self._row_cache or self._delayed
        return dict(cache.refreshes) if cache is not None else {}

    def versions(self) -> dict[str, Any]:
        out = {"torch": torch.__version__, "native_family": self.family, "kv_cache": self.cache_mode,
               "dtype": str(next(self.model.parameters()).dtype).replace("torch.", "")}
        if self.source:
            out["checkpoint"] = self.source
        if self.compiled:
            out["compile"] = "true"
        if self._delayed is not None:
            out.update(cache_delay=str(self._delayed.delay), refresh_interval=str(self._delayed.interval))
        return out


def shift_per_row(logits: torch.Tensor, attention_mask: torch.Tensor | None, shift: int = 1,
                  first: torch.Tensor | None = None) -> torch.Tensor:
    """Logit at position i taken from i - shift, never from before the row's first real token
    (which repeats itself), so left padding changes nothing; `first` [b] overrides that column
    (the first column a cached call computed)."""
    b, length, v = logits.shape
    if first is None and attention_mask is None:
        first = torch.zeros(b, dtype=torch.long, device=logits.device)
    elif first is None:
        first = torch.argmax(attention_mask.int(), dim=1)  # index of each row's first real token
    src = torch.arange(length, device=logits.device).unsqueeze(0) - shift
    src = torch.maximum(src, first.unsqueeze(1)).clamp(max=length - 1)
    return torch.gather(logits, 1, src.unsqueeze(-1).expand(b, length, v))
