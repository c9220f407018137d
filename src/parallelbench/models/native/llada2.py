"""LLaDA 2.0 / 2.1 mini and flash (inclusionAI, model_type "llada2_moe"): a block-diffusion MoE.

Config fields: hidden_size, num_attention_heads, num_key_value_heads, head_dim (else hidden_size /
heads), num_hidden_layers, intermediate_size (the dense layers' MLP), rope_theta,
partial_rotary_factor (RoPE on the leading head_dim * factor dimensions of each head; the config
class defaults it to 0.5), rms_norm_eps, use_qkv_bias, use_bias (attention output bias),
use_qk_norm (per-head RMSNorm of q and k before RoPE), tie_word_embeddings, vocab_size; experts:
num_experts, num_experts_per_tok, moe_intermediate_size, num_shared_experts, n_group, topk_group,
routed_scaling_factor, score_function ("sigmoid" or "softmax"), norm_topk_prob,
first_k_dense_replace (that many leading layers keep a dense MLP). No mask_token_id: the mask is
the tokenizer's mask token. Attention is block-causal; logits are not shifted. The published
generate() decodes blocks of 32 (no block size in the config).
Tensors: `model.word_embeddings`, `model.layers.{i}.attention.query_key_value` (rows: q heads,
k heads, v heads), `attention.{query,key}_layernorm`, `attention.dense`, `input_layernorm`,
`post_attention_layernorm`, `mlp.{gate,up,down}_proj` (dense layers) or `mlp.gate.weight`,
`mlp.gate.expert_bias` (optional), `mlp.experts.{j}.{gate,up,down}_proj`,
`mlp.shared_experts.{gate,up,down}_proj`, `model.norm`, `lm_head`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parallelbench.models.native.config_fields import Fields
from parallelbench.models.native.layers import ArchSpec
from parallelbench.models.native.moe import SCORE_FUNCTIONS, MoESpec
from parallelbench.models.native.weights import moe_tensor_name

MASK_ID = None  # the tokenizer's mask token (the config has no mask_token_id)
SHIFT = 0
BLOCK_CAUSAL = True
DEFAULT_BLOCK_LENGTH = 32  # generate(block_length=32) in the published code
_BLOCK = {"attn_norm": "input_layernorm", "qkv_proj": "attention.query_key_value",
          "q_norm": "attention.query_layernorm", "k_norm": "attention.key_layernorm", "o": "attention.dense",
          "mlp_norm": "post_attention_layernorm", "gate": "mlp.gate_proj", "up": "mlp.up_proj",
          "down": "mlp.down_proj"}
_MOE = {"router": "mlp.gate.weight", "expert_bias": "mlp.gate.expert_bias",
        "shared_gate": "mlp.shared_experts.gate_proj.weight", "shared_up": "mlp.shared_experts.up_proj.weight",
        "shared_down": "mlp.shared_experts.down_proj.weight"}
_EXPERTS = {"gate_w": "gate_proj", "up_w": "up_proj", "down_w": "down_proj"}
_TOP = {"embed": "model.word_embeddings", "norm": "model.norm", "head": "lm_head"}


def spec_from_config(config: dict[str, Any], path: Path | str) -> ArchSpec:
    f = Fields(config, path)
    hidden = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    kv = f.int("num_key_value_heads")
    f.divides(heads, kv, f"num_attention_heads={heads} is not a multiple of num_key_value_heads={kv}")
    if config.get("head_dim") is not None:
        head_dim = f.int("head_dim")
    else:
        f.divides(hidden, heads, f"hidden_size={hidden} is not a multiple of num_attention_heads={heads} (and no head_dim)")
        head_dim = hidden // heads
    f.qwen_style("LLaDA 2", "every earlier block")
    if config.get("norm_head"):
        raise f.bad(f"norm_head={config['norm_head']!r} is not supported natively (LLaDA 2's head is a plain linear layer)")
    if config.get("use_rmsnorm") is False:
        raise f.bad("use_rmsnorm=false is not supported natively (LLaDA 2 uses RMSNorm)")
    rope_dims = f.rotary_dims(head_dim, 0.5)  # the config class's default factor
    if config.get("rotary_dim") is not None and config.get("rotary_dim") != rope_dims:
        raise f.bad(f"rotary_dim={config['rotary_dim']!r} disagrees with head_dim * partial_rotary_factor = {rope_dims}")
    vocab = f.int("vocab_size")
    return ArchSpec(
        family="llada2", hidden=hidden, heads=heads, kv_heads=kv, layers=f.int("num_hidden_layers"),
        ffn=_dense_ffn(config, f), embed_rows=vocab, out_size=vocab, eps=f.float("rms_norm_eps", 1e-5),
        rope_theta=f.float("rope_theta", 10000.0), qkv_bias=f.bool("use_qkv_bias", False), other_bias=False,
        norm_bias=False, tie=f.bool("tie_word_embeddings", False), rope_fp32=False, explicit_head_dim=head_dim,
        qk_norm=f.bool("use_qk_norm", True), rope_dims=rope_dims if rope_dims < head_dim else None,
        fused_qkv=True, o_bias=f.bool("use_bias", True), moe=_moe_spec(config, f),
        dense_layers=_dense_layers(config, f),
    )


def _dense_ffn(config: dict[str, Any], f: Fields) -> int:
    if config.get("num_experts") is None or _dense_layers(config, f) > 0:
        return f.int("intermediate_size")
    return int(config.get("intermediate_size") or 1)  # unused: every layer is a mixture of experts


def _dense_layers(config: dict[str, Any], f: Fields) -> int:
    value = config.get("first_k_dense_replace", 0) or 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise f.bad(f"field 'first_k_dense_replace' must be a non-negative integer, got {value!r}")
    return value


def _moe_spec(config: dict[str, Any], f: Fields) -> MoESpec | None:
    if config.get("num_experts") is None:
        return None
    experts = f.int("num_experts")
    top_k = f.int("num_experts_per_tok")
    groups = f.int("n_group", default=1)
    topk_groups = f.int("topk_group", default=groups)
    score = str(config.get("score_function", "sigmoid")).lower()
    if score not in SCORE_FUNCTIONS:
        raise f.bad(f"score_function {score!r} is not supported natively (use one of {', '.join(SCORE_FUNCTIONS)})")
    router_dtype = config.get("router_dtype")
    if router_dtype not in (None, "fp32", "float32"):
        raise f.bad(f"router_dtype {router_dtype!r} is not supported natively (LLaDA 2 routes in 'fp32')")
    f.divides(experts, groups, f"num_experts={experts} is not a multiple of n_group={groups}")
    if topk_groups > groups:
        raise f.bad(f"topk_group={topk_groups} exceeds n_group={groups}")
    if top_k > topk_groups * (experts // groups):
        raise f.bad(f"num_experts_per_tok={top_k} exceeds the {topk_groups * (experts // groups)} experts "
                    f"that topk_group={topk_groups} groups hold")
    shared = config.get("num_shared_experts") or 0
    if isinstance(shared, bool) or not isinstance(shared, int) or shared < 0:
        raise f.bad(f"field 'num_shared_experts' must be a non-negative integer, got {shared!r}")
    ffn = f.int("moe_intermediate_size")
    scaling = config.get("routed_scaling_factor", 2.5)
    if isinstance(scaling, bool) or not isinstance(scaling, (int, float)) or scaling <= 0:
        raise f.bad(f"field 'routed_scaling_factor' must be a positive number, got {scaling!r}")
    return MoESpec(experts=experts, top_k=top_k, ffn=ffn, shared_ffn=ffn * shared, groups=groups,
                   topk_groups=topk_groups, scaling=float(scaling), score=score,
                   normalize=f.bool("norm_topk_prob", True))


def block_size(config: dict[str, Any], path: Path | str) -> int | None:
    """The config states no block size (LLaDA 2 trains and decodes with blocks of 32)."""
    return Fields(config, path).optional_int("block_size")


def default_block_length(config: dict[str, Any], path: Path | str) -> int:
    return block_size(config, path) or DEFAULT_BLOCK_LENGTH


def published_name(internal: str, shape: tuple[int, ...] = ()) -> str | tuple[str, ...]:
    """Our parameter name -> the checkpoint's tensor name; a tuple for our stacked expert weights
    (`shape[0]` experts): the per-expert tensors, stacked on dim 0."""
    return moe_tensor_name(internal, shape, top=_TOP, block=_BLOCK, moe=_MOE, experts=_EXPERTS)


def optional(internal: str) -> bool:
    """The router's expert bias may be absent (then zeros)."""
    return internal.endswith("moe.expert_bias")
