"""SDAR and TraDo (model_type "sdar"): Qwen3 blocks trained for block diffusion.

TraDo-4B/8B (Gen-Verse) are SDAR checkpoints fine-tuned with TraceRL: same model_type, config
and tensors. Config fields (Qwen3 names): hidden_size, num_attention_heads, num_key_value_heads
(GQA), head_dim (SDAR's config class defaults it to 128, not hidden_size / heads),
num_hidden_layers, intermediate_size, rope_theta, rms_norm_eps, tie_word_embeddings,
attention_bias (q/k/v/o biases), vocab_size, mask_token_id, block_size (the trained block size).
Each head of q and k goes through its own RMSNorm before RoPE. The published code normalises
with a fused kernel that applies the norm weight in float32 before casting (`norm_weight_fp32`)
and builds RoPE tables in float32, cast to the model dtype before rotating.
Attention is block-causal (bidirectional inside a block, causal across blocks); logits are not
shifted. Tensors: `model.embed_tokens`, `model.layers.{i}.self_attn.{q,k,v,o}_proj`,
`self_attn.{q,k}_norm`, `mlp.{gate,up,down}_proj`, `input_layernorm`, `post_attention_layernorm`,
`model.norm`, `lm_head`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parallelbench.models.native.config_fields import Fields
from parallelbench.models.native.layers import ArchSpec

MASK_ID = None  # the config's mask_token_id, else the tokenizer's mask token
SHIFT = 0
BLOCK_CAUSAL = True
DEFAULT_BLOCK_LENGTH = 4  # SDAR's and TraDo's published decoding block (and SDAR-4B's block_size)
_BLOCK = {"attn_norm": "input_layernorm", "q": "self_attn.q_proj", "k": "self_attn.k_proj",
          "v": "self_attn.v_proj", "o": "self_attn.o_proj", "q_norm": "self_attn.q_norm",
          "k_norm": "self_attn.k_norm", "mlp_norm": "post_attention_layernorm", "gate": "mlp.gate_proj",
          "up": "mlp.up_proj", "down": "mlp.down_proj"}
_TOP = {"embed": "model.embed_tokens", "norm": "model.norm", "head": "lm_head"}


def spec_from_config(config: dict[str, Any], path: Path | str) -> ArchSpec:
    f = Fields(config, path)
    hidden = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    kv = f.int("num_key_value_heads", default=heads)
    f.divides(heads, kv, f"num_attention_heads={heads} is not a multiple of num_key_value_heads={kv}")
    act = str(config.get("hidden_act", "silu")).lower()
    if act != "silu":
        raise f.bad(f"hidden_act {act!r} is not supported natively (SDAR uses 'silu')")
    scaling = config.get("rope_scaling")
    if scaling and str(scaling.get("rope_type", scaling.get("type", "default"))) != "default":
        raise f.bad(f"rope_scaling {scaling!r} is not supported natively (SDAR uses none)")
    if config.get("use_sliding_window"):
        raise f.bad("use_sliding_window=true is not supported natively (SDAR attends to every earlier block)")
    block_size(config, path)  # a malformed block_size fails here, before any weight is read
    vocab = f.int("vocab_size")
    bias = f.bool("attention_bias", False)
    return ArchSpec(
        family="sdar", hidden=hidden, heads=heads, kv_heads=kv, layers=f.int("num_hidden_layers"),
        ffn=f.int("intermediate_size"), embed_rows=vocab, out_size=vocab, eps=f.float("rms_norm_eps", 1e-6),
        rope_theta=f.float("rope_theta", 10000.0), qkv_bias=bias, other_bias=False, norm_bias=False,
        tie=f.bool("tie_word_embeddings", False), rope_fp32=False, explicit_head_dim=f.int("head_dim", default=128),
        qk_norm=True, norm_weight_fp32=True, o_bias=bias,
    )


def block_size(config: dict[str, Any], path: Path | str) -> int | None:
    """The trained block size the config states (`block_size`), else None."""
    if config.get("block_size") is None:
        return None
    return Fields(config, path).int("block_size")


def default_block_length(config: dict[str, Any], path: Path | str) -> int:
    return block_size(config, path) or DEFAULT_BLOCK_LENGTH


def published_name(internal: str, shape: tuple[int, ...] = ()) -> str:
    parts = internal.split(".")
    if parts[0] == "layers":
        return f"model.layers.{parts[1]}.{_BLOCK[parts[2]]}.{'.'.join(parts[3:])}"
    return f"{_TOP[parts[0]]}.{'.'.join(parts[1:])}"


def optional(internal: str) -> bool:
    """Tensors a checkpoint may leave out (none for SDAR)."""
    return False
