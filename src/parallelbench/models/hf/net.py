"""The engine-facing side of an HF dLLM: `MaskedDiffusionModel` over a transformers model.

A family adapter subclasses `HFDiffusionNet` and implements `full_logits` (one plain
forward) and, when its forward accepts cached keys/values, `kv_forward`. This base
adds what every family shares:

- stop ids: end-of-turn tokens (<|eot_id|>, <|im_end|>) mean "the answer ended" just
  like EOS, so their probability is merged into `eos_id` (log-sum-exp) and every
  strategy, `stop_at_eos` included, sees one end token;
- the logits shift of families trained as shifted LMs (Dream: position i's logit comes
  from i - 1);
- decode sessions (`with net.session(gen_length, block_length)`) that tell the KV
  cache where the prompt ends and how blocks are laid out.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import torch

from parallelbench.models.hf.session import KV, Session

__all__ = ["KV", "HFDiffusionNet", "Session", "merge_stop_logits", "shift_logits"]


class HFDiffusionNet:
    family = "base"
    logit_shift = 0  # 1 for families whose logit at i is predicted from position i - 1
    cache_modes: tuple[str, ...] = ()  # KV cache modes kv_forward supports

    def __init__(
        self,
        model: Any,
        *,
        mask_id: int,
        eos_id: int,
        vocab_size: int,
        stop_ids: Sequence[int] = (),
        pad_id: int | None = None,
        cache: str = "none",
    ):
        self.model = model
        self.mask_id = int(mask_id)
        self.eos_id = int(eos_id)
        self.vocab_size = int(vocab_size)
        # left padding must never look like a masked position
        self.pad_id = int(pad_id) if pad_id is not None and int(pad_id) != self.mask_id else self.eos_id
        self.merge_ids = [int(i) for i in stop_ids if int(i) != self.eos_id and 0 <= int(i) < self.vocab_size]
        if cache != "none" and cache not in self.cache_modes:
            supported = ", ".join(self.cache_modes) or "none"
            raise ValueError(f"cache={cache!r} is not supported by the {self.family} adapter; supported: {supported}")
        self.cache_mode = cache
        self.session_info: Session | None = None
        self._cache = None
        if cache != "none":
            from parallelbench.models.hf.cache import BlockKVCache

            self._cache = BlockKVCache(self, cache)

    # ------------------------------------------------------------------ engine interface
    @property
    def device(self) -> torch.device:
        for p in self.model.parameters():
            return p.device
        return torch.device("cpu")

    @torch.no_grad()
    def forward(self, canvas: torch.Tensor, *, attention_mask=None, rows=None) -> torch.Tensor:
        if attention_mask is None:
            attention_mask = torch.ones_like(canvas, dtype=torch.bool)
        if rows is None:
            rows = torch.arange(canvas.shape[0], device=canvas.device)
        if self._cache is not None and self.session_info is not None:
            raw = self._cache.forward(canvas, attention_mask, rows, self.session_info)
        else:
            raw = self.full_logits(canvas, attention_mask)
        return self.finish_logits(raw)

    __call__ = forward

    def versions(self) -> dict[str, str]:
        import transformers

        out = {"transformers": transformers.__version__, "hf_family": self.family, "kv_cache": self.cache_mode}
        name = getattr(getattr(self.model, "config", None), "_name_or_path", None)
        if name:
            out["checkpoint"] = str(name)
        return out

    @contextmanager
    def session(self, gen_length: int, block_length: int | None = None, seed: int = 0) -> Iterator[Session]:
        """Scope of one decode call; caches live exactly this long."""
        self.session_info = Session(int(gen_length), block_length, seed)
        self.reset()
        try:
            yield self.session_info
        finally:
            self.session_info = None
            self.reset()

    def reset(self) -> None:
        if self._cache is not None:
            self._cache.reset()

    def cache_refreshes(self) -> dict[int, int]:
        """Full (refresh) passes per original row in the current session."""
        return dict(self._cache.refreshes) if self._cache is not None else {}

    # ------------------------------------------------------------------ family hooks
    def full_logits(self, canvas: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Raw logits [B, L, V'] of one plain forward (before shift and stop-id merging)."""
        raise NotImplementedError

    def positions(self, attention_mask: torch.Tensor) -> torch.Tensor:
        """[B, L] position ids the family uses for a left-padded batch (default: 0..L-1)."""
        b, length = attention_mask.shape
        return torch.arange(length, device=attention_mask.device).unsqueeze(0).expand(b, length)

    def kv_forward(
        self,
        ids: torch.Tensor,
        *,
        positions: torch.Tensor,
        key_mask: torch.Tensor,
        past: KV | None,
        want_kv: bool,
    ) -> tuple[torch.Tensor, KV | None]:
        """Raw logits for `ids` attending to `past` keys (listed first in `key_mask`) and to
        themselves; with `want_kv`, also the keys/values of `ids` alone."""
        raise NotImplementedError(f"the {self.family} adapter has no KV-cache forward")

    # ------------------------------------------------------------------ shared post-processing
    def finish_logits(self, raw: torch.Tensor) -> torch.Tensor:
        logits = raw[..., : self.vocab_size]
        if self.logit_shift:
            logits = shift_logits(logits, self.logit_shift)
        if self.merge_ids:
            logits = merge_stop_logits(logits, self.eos_id, self.merge_ids, self.merge_index(logits.device))
        return logits

    def merge_index(self, device: torch.device) -> torch.Tensor:
        """[eos_id, *merge_ids] on `device`, built once (a host-to-device copy per call would make
        the GPU wait for the host)."""
        cached = self.__dict__.get("_merge_index")
        if cached is None or cached.device != device:
            cached = self.__dict__["_merge_index"] = torch.tensor([self.eos_id, *self.merge_ids], device=device)
        return cached


def shift_logits(logits: torch.Tensor, shift: int = 1) -> torch.Tensor:
    """Logit at position i taken from i - shift (the first `shift` positions repeat position 0)."""
    return torch.cat([logits[:, :shift].expand(-1, shift, -1), logits[:, :-shift]], dim=1)


def merge_stop_logits(logits: torch.Tensor, eos_id: int, others: Sequence[int],
                      ids: torch.Tensor | None = None) -> torch.Tensor:
    """Move the probability of every id in `others` onto `eos_id` (same softmax mass, one end token).
    `ids`: [eos_id, *others] already on the logits' device (a host-to-device copy per call waits for the GPU)."""
    if ids is None:
        ids = torch.tensor([eos_id, *others], device=logits.device)
    merged = torch.logsumexp(logits.index_select(-1, ids).float(), dim=-1).to(logits.dtype)
    out = logits.clone()
    out[..., eos_id] = merged
    out[..., ids[1:]] = float("-inf")
    return out
