"""Dream 7B and DiffuCoder (model_type "Dream"): masked dLLMs adapted from Qwen2.5.

Real Dream / DiffuCoder checkpoints load through the native implementation
(`parallelbench.models.native`, built by `native_build`); `DreamNet` below drives a
checkpoint's own modeling code and serves only stand-ins loaded with an explicit
family=dream and trust_remote_code=true.

Quirks: remote code (trust_remote_code); trained as a shifted LM, so the logit for
position i comes from position i - 1 (the first position repeats position 0); padding
is expressed with explicit position ids (pads count from the first real token) and a
4-D boolean attention mask, "full" when nothing is padded; <|im_end|> and
<|endoftext|> both end the answer. The forward takes position ids and a key mask, so
both the prefix and the dual cache work.
"""

from __future__ import annotations

from typing import Any

import torch

from parallelbench.models.hf.llada import _as_tuples
from parallelbench.models.hf.net import KV, HFDiffusionNet

DREAM_MASK_ID = 151666


class DreamNet(HFDiffusionNet):
    family = "dream"
    logit_shift = 1
    cache_modes = ("prefix", "dual")

    def positions(self, attention_mask: torch.Tensor) -> torch.Tensor:
        pos = attention_mask.long().cumsum(-1) - 1
        return pos.masked_fill(~attention_mask.bool(), 1)

    def full_logits(self, canvas: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        if bool(attention_mask.all()):
            return self.model(canvas, attention_mask="full").logits
        mask = _four_d(attention_mask, canvas.shape[1])
        return self.model(canvas, attention_mask=mask, position_ids=self.positions(attention_mask)).logits

    def kv_forward(self, ids, *, positions, key_mask, past: KV | None, want_kv: bool):
        mask = _four_d(key_mask, ids.shape[1])
        out = self.model(ids, attention_mask=mask, position_ids=positions, past_key_values=_to_cache(past),
                         use_cache=want_kv)
        if not want_kv:
            return out.logits, None
        cached = past[0][0].shape[-2] if past else 0
        kv = [(k[..., cached:, :], v[..., cached:, :]) for k, v in _as_tuples(out.past_key_values)]
        return out.logits, kv


def _four_d(key_mask: torch.Tensor, queries: int) -> torch.Tensor:
    """[B, 1, q, K] boolean mask: every query sees every real (non-pad) key.

    Unlike an outer product, pad queries still see real keys, so no softmax row is empty.
    """
    b, k = key_mask.shape
    return key_mask.bool()[:, None, None, :].expand(b, 1, queries, k)


def _to_cache(past: KV | None) -> Any:
    if past is None:
        return None
    from transformers import DynamicCache

    try:
        return DynamicCache(ddp_cache_data=[(k, v) for k, v in past])
    except TypeError:  # transformers 4.x
        return DynamicCache.from_legacy_cache(tuple(past))


def build(ckpt, opts, *, device: str, dtype, name: str):
    """The native implementation for real dream checkpoints; the checkpoint's own code only for a
    stand-in family member without one (explicit trust_remote_code=true, see `hf._remote_code_policy`)."""
    from parallelbench.models.hf.detect import native_family

    if native_family(ckpt.config) is not None or opts.trust_remote_code is not True:
        from parallelbench.models.hf.native_build import build_native

        return build_native(ckpt, opts, device=device, dtype=dtype, name=name)
    from parallelbench.models.hf.loading import build_remote_dllm

    return build_remote_dllm(ckpt, opts, net_class=DreamNet, default_mask_id=DREAM_MASK_ID,
                             device=device, dtype=dtype, name=name)
