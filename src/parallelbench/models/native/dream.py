"""Dream 7B and DiffuCoder (model_type "Dream"): Qwen2 with bidirectional attention.

Config fields (Qwen2 names): hidden_size, num_attention_heads, num_key_value_heads (GQA),
num_hidden_layers, intermediate_size, rope_theta, rms_norm_eps, tie_word_embeddings,
vocab_size, mask_token_id; q/k/v carry biases, nothing else does. Trained as a shifted LM:
the prediction for position i is read at position i - 1 (the net applies the shift).
Tensors: `model.embed_tokens`, `model.layers.{i}.self_attn.{q,k,v,o}_proj`,
`model.layers.{i}.mlp.{gate,up,down}_proj`, `input_layernorm`, `post_attention_layernorm`,
`model.norm`, `lm_head`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parallelbench.models.native.config_fields import Fields
from parallelbench.models.native.layers import ArchSpec

MASK_ID = 151666
SHIFT = 1
_BLOCK = {"attn_norm": "input_layernorm", "q": "self_attn.q_proj", "k": "self_attn.k_proj",
          "v": "self_attn.v_proj", "o": "self_attn.o_proj", "mlp_norm": "post_attention_layernorm",
          "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj"}
_TOP = {"embed": "model.embed_tokens", "norm": "model.norm", "head": "lm_head"}


def spec_from_config(config: dict[str, Any], path: Path | str) -> ArchSpec:
    f = Fields(config, path)
    hidden = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    kv = f.int("num_key_value_heads", default=heads)
    f.divides(hidden, heads, f"hidden_size={hidden} is not a multiple of num_attention_heads={heads}")
    f.divides(heads, kv, f"num_attention_heads={heads} is not a multiple of num_key_value_heads={kv}")
    act = str(config.get("hidden_act", "silu")).lower()
    if act != "silu":
        raise f.bad(f"hidden_act {act!r} is not supported natively (Dream uses 'silu')")
    scaling = config.get("rope_scaling")
    if scaling and str(scaling.get("rope_type", scaling.get("type", "default"))) != "default":
        raise f.bad(f"rope_scaling {scaling!r} is not supported natively (Dream uses none)")
    if config.get("use_sliding_window"):
        raise f.bad("use_sliding_window=true is not supported natively (Dream attends to the whole sequence)")
    vocab = f.int("vocab_size")
    return ArchSpec(
        family="dream", hidden=hidden, heads=heads, kv_heads=kv, layers=f.int("num_hidden_layers"),
        ffn=f.int("intermediate_size"), embed_rows=vocab, out_size=vocab, eps=f.float("rms_norm_eps", 1e-6),
        rope_theta=f.float("rope_theta", 10000.0), qkv_bias=True, other_bias=False, norm_bias=False,
        tie=f.bool("tie_word_embeddings", False), rope_fp32=False,
    )


def published_name(internal: str, shape: tuple[int, ...] = ()) -> str:
    parts = internal.split(".")
    if parts[0] == "layers":
        return f"model.layers.{parts[1]}.{_BLOCK[parts[2]]}.{'.'.join(parts[3:])}"
    return f"{_TOP[parts[0]]}.{'.'.join(parts[1:])}"
