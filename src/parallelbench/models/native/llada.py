"""LLaDA 8B / LLaDA 1.5 (GSAI-ML): OLMo-style config, Llama-style bidirectional blocks.

Config fields (OLMo names): d_model, n_heads, n_kv_heads, n_layers, mlp_hidden_size (else
mlp_ratio * d_model), rope_theta, rms_norm_eps, layer_norm_type ("rms"), include_bias,
include_qkv_bias, bias_for_layer_norm, weight_tying, vocab_size / embedding_size,
mask_token_id, rope_full_precision, input_emb_norm, scale_logits, activation_type ("silu":
`ff_proj` is the SiLU gate, `up_proj` the plain branch, `ff_out` the down projection).
Tensors live under `model.transformer.` (`wte`, `blocks.{i}.*`, `ln_f`, `ff_out`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from parallelbench.models.native.config_fields import Fields
from parallelbench.models.native.layers import ArchSpec

MASK_ID = 126336
SHIFT = 0
_PREFIX = "model.transformer."
_BLOCK = {"attn_norm": "attn_norm", "q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "attn_out",
          "mlp_norm": "ff_norm", "gate": "ff_proj", "up": "up_proj", "down": "ff_out"}
_TOP = {"embed": "wte", "norm": "ln_f", "head": "ff_out"}


def spec_from_config(config: dict[str, Any], path: Path | str) -> ArchSpec:
    f = Fields(config, path)
    d = f.int("d_model")
    heads = f.int("n_heads")
    kv = f.int("n_kv_heads", default=1 if config.get("multi_query_attention") else heads)
    f.divides(d, heads, f"d_model={d} is not a multiple of n_heads={heads}")
    f.divides(heads, kv, f"n_heads={heads} is not a multiple of n_kv_heads={kv}")
    norm = str(config.get("layer_norm_type", "rms")).lower()
    if norm != "rms":
        raise f.bad(f"layer_norm_type {norm!r} is not supported natively (LLaDA uses 'rms')")
    act = str(config.get("activation_type", "silu")).lower()
    if act != "silu":
        raise f.bad(f"activation_type {act!r} is not supported natively (LLaDA uses 'silu')")
    block = str(config.get("block_type", "llama")).lower()
    if block != "llama":
        raise f.bad(f"block_type {block!r} is not supported natively (LLaDA uses 'llama')")
    for flag in ("alibi", "attention_layer_norm"):
        if config.get(flag):
            raise f.bad(f"{flag}=true is not supported natively (LLaDA sets it false)")
    if config.get("rope") is False:
        raise f.bad("rope=false is not supported natively (LLaDA uses rotary embeddings)")
    if int(config.get("block_group_size") or 1) != 1:
        raise f.bad("block_group_size other than 1 is not supported natively")
    ffn = config.get("mlp_hidden_size") or f.int("mlp_ratio", default=4) * d
    vocab = f.int("vocab_size")
    rows = f.int("embedding_size", default=vocab)
    if rows < vocab:
        raise f.bad(f"embedding_size={rows} is smaller than vocab_size={vocab}")
    include_bias = f.bool("include_bias", False)
    norm_bias = config.get("bias_for_layer_norm")
    return ArchSpec(
        family="llada", hidden=d, heads=heads, kv_heads=kv, layers=f.int("n_layers"), ffn=int(ffn),
        embed_rows=rows, out_size=rows, eps=f.float("rms_norm_eps", 1e-5), rope_theta=f.float("rope_theta", 10000.0),
        qkv_bias=include_bias or bool(config.get("include_qkv_bias")), other_bias=include_bias,
        norm_bias=include_bias if norm_bias is None else bool(norm_bias), tie=f.bool("weight_tying", False),
        rope_fp32=f.bool("rope_full_precision", True),
        input_scale=math.sqrt(d) if config.get("input_emb_norm") else 1.0,
        logit_scale=1.0 / math.sqrt(d) if config.get("scale_logits") else 1.0,
    )


def published_name(internal: str, shape: tuple[int, ...] = ()) -> str:
    """Our parameter name -> the checkpoint's tensor name."""
    parts = internal.split(".")
    if parts[0] == "layers":
        return f"{_PREFIX}blocks.{parts[1]}.{_BLOCK[parts[2]]}.{'.'.join(parts[3:])}"
    return f"{_PREFIX}{_TOP[parts[0]]}.{'.'.join(parts[1:])}"
