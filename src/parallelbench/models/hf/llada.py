"""LLaDA 8B Instruct and LLaDA 1.5 (GSAI-ML): a bidirectional Llama-style masked dLLM.

Real LLaDA checkpoints (model_type "llada") load through the native implementation
(`parallelbench.models.native`, built by `native_build`); `LLaDANet` below drives a
checkpoint's own modeling code and serves only stand-ins without a native implementation
loaded with an explicit family=llada and trust_remote_code=true.

Quirks of that code path: the checkpoint ships its own modeling code; the mask token
is 126336; answers end with <|eot_id|> followed by <|endoftext|> padding, both treated
as EOS. The forward accepts a list of per-layer (k, v) tuples as `past_key_values` and
places new tokens right after them (RoPE offset = cached length), which is exactly the
prefix cache; there are no explicit position ids, so the dual cache is not available.
"""

from __future__ import annotations

from typing import Any

import torch

from parallelbench.models.hf.net import KV, HFDiffusionNet

LLADA_MASK_ID = 126336


class LLaDANet(HFDiffusionNet):
    family = "llada"
    cache_modes = ("prefix",)

    def full_logits(self, canvas: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        mask = None if bool(attention_mask.all()) else attention_mask.long()
        return self.model(canvas, attention_mask=mask).logits

    def kv_forward(self, ids, *, positions, key_mask, past: KV | None, want_kv: bool):
        mask = None if bool(key_mask.all()) else key_mask.long()
        out = self.model(ids, attention_mask=mask, past_key_values=past, use_cache=want_kv)
        if not want_kv:
            return out.logits, None
        cached = past[0][0].shape[-2] if past else 0
        kv = [(k[..., cached:, :], v[..., cached:, :]) for k, v in _as_tuples(out.past_key_values)]
        return out.logits, kv


def _as_tuples(cache: Any) -> KV:
    if isinstance(cache, (list, tuple)):
        return [(layer[0], layer[1]) for layer in cache]
    layers = getattr(cache, "layers", None)
    if layers is not None:
        return [(layer.keys, layer.values) for layer in layers]
    return list(zip(cache.key_cache, cache.value_cache))


def build(ckpt, opts, *, device: str, dtype, name: str):
    """The native implementation for real llada checkpoints; the checkpoint's own code only for a
    stand-in family member without one (explicit trust_remote_code=true, see `hf._remote_code_policy`)."""
    from parallelbench.models.hf.detect import native_family

    if native_family(ckpt.config) is not None or opts.trust_remote_code is not True:
        from parallelbench.models.hf.native_build import build_native

        return build_native(ckpt, opts, device=device, dtype=dtype, name=name)
    from parallelbench.models.hf.loading import build_remote_dllm

    return build_remote_dllm(ckpt, opts, net_class=LLaDANet, default_mask_id=LLADA_MASK_ID,
                             device=device, dtype=dtype, name=name)
