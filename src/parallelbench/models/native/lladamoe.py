"""LLaDA-MoE (inclusionAI, 7B with 1B active, model_type "lladamoe"): LLaDA's bidirectional
masked diffusion on an OLMoE-style mixture of experts.

Config fields: hidden_size, num_attention_heads, num_key_value_heads (default: heads),
num_hidden_layers, vocab_size, rms_norm_eps, rope_theta, partial_rotary_factor (RoPE on the
leading head_dim * factor dimensions of each head), qk_layernorm (per-head RMSNorm of q and k before
RoPE), attention_bias (q/k/v/o biases), tie_word_embeddings; experts: num_experts,
num_experts_per_tok, expert_intermediate_size, shared_expert_intermediate_size (null: no shared
expert), moe_layer_freq (per layer 0 = dense MLP of dense_intermediate_size, 1 = experts),
moe_router_enable_expert_bias. Routing as the official MoE block computes it: softmax of the
router logits (float32), plus the expert bias when there is one; the top num_experts_per_tok of
those *biased* scores are chosen and weigh their experts as they are (no renormalisation, no
scaling: the official block ignores norm_topk_prob, the score function, routed_scaling_factor and
the group fields, and so does this). The dispatch is the LLaDA 2 mixture's (`moe.MixtureOfExperts`).
Attention over the whole sequence, logits not shifted. The published checkpoints keep
model_type "llada" with these fields (detected as LLaDA-MoE); the mask id is the config's
mask_token_id, else the tokenizer's mask token.
Tensors: `model.embed_tokens`, `model.layers.{i}.self_attn.{q,k,v,o}_proj`, `self_attn.{q,k}_norm`,
`input_layernorm`, `post_attention_layernorm`, `mlp.{gate,up,down}_proj` (dense layers) or
`mlp.gate.weight`, `mlp.expert_bias` (optional), `mlp.experts.{j}.{gate,up,down}_proj`,
`shared_expert.{gate,up,down}_proj`, `model.norm`, `lm_head`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from parallelbench.models.native.config_fields import Fields
from parallelbench.models.native.layers import ArchSpec, DiffusionTransformer
from parallelbench.models.native.moe import MixtureOfExperts, MoESpec
from parallelbench.models.native.weights import moe_tensor_name

MASK_ID = None  # the config's mask_token_id, else the tokenizer's mask token
SHIFT = 0
_BLOCK = {"attn_norm": "input_layernorm", "q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj",
          "o": "self_attn.o_proj", "q_norm": "self_attn.q_norm", "k_norm": "self_attn.k_norm",
          "mlp_norm": "post_attention_layernorm", "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj"}
_MOE = {"router": "mlp.gate.weight", "expert_bias": "mlp.expert_bias",
        "shared_gate": "shared_expert.gate_proj.weight", "shared_up": "shared_expert.up_proj.weight",
        "shared_down": "shared_expert.down_proj.weight"}
_EXPERTS = {"gate_w": "gate_proj", "up_w": "up_proj", "down_w": "down_proj"}
_TOP = {"embed": "model.embed_tokens", "norm": "model.norm", "head": "lm_head"}


class BiasedSoftmaxRouting(MixtureOfExperts):
    """The mixture of experts with LLaDA-MoE's router; dispatch and shared expert as inherited."""

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = F.linear(x, self.router)  # the router in the activations' dtype, as the official gate
        scores = torch.softmax(logits, dim=-1, dtype=torch.float32) + self.expert_bias.float()
        weight, idx = scores.topk(self.spec.top_k, dim=-1)
        return idx, weight.to(x.dtype).float()  # the official block weighs experts in the activations' dtype


def build_module(spec: ArchSpec) -> DiffusionTransformer:
    module = DiffusionTransformer(spec)
    for layer in module.layers:
        if layer.moe is not None:
            layer.moe = BiasedSoftmaxRouting(spec.hidden, spec.moe)
    return module


def spec_from_config(config: dict[str, Any], path: Path | str) -> ArchSpec:
    f = Fields(config, path)
    hidden = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    kv = f.int("num_key_value_heads", default=heads)
    layers = f.int("num_hidden_layers")
    f.divides(hidden, heads, f"hidden_size={hidden} is not a multiple of num_attention_heads={heads}")
    f.divides(heads, kv, f"num_attention_heads={heads} is not a multiple of num_key_value_heads={kv}")
    f.qwen_style("LLaDA-MoE", "the whole sequence")
    if config.get("clip_qkv") is not None:
        raise f.bad(f"clip_qkv={config['clip_qkv']!r} is not supported natively (LLaDA-MoE leaves it null)")
    head_dim = hidden // heads
    rope_dims = f.rotary_dims(head_dim, None)  # required: the official config class has no usable default
    freq = config.get("moe_layer_freq")
    if not isinstance(freq, list) or len(freq) != layers or any(v not in (0, 1) or isinstance(v, bool) for v in freq):
        raise f.bad(f"field 'moe_layer_freq' must list 0 (dense) or 1 (experts) for each of the {layers} layers, "
                    f"got {freq!r}")
    dense = freq.index(1) if 1 in freq else layers
    if 0 in freq[dense:]:
        raise f.bad(f"moe_layer_freq={freq} puts a dense layer after an expert layer; natively the dense layers "
                    "must come first")
    shared = config.get("shared_expert_intermediate_size")
    if shared is not None and (isinstance(shared, bool) or not isinstance(shared, int) or shared <= 0):
        raise f.bad(f"field 'shared_expert_intermediate_size' must be a positive integer or null, got {shared!r}")
    experts, top_k = f.int("num_experts"), f.int("num_experts_per_tok")
    if top_k > experts:
        raise f.bad(f"num_experts_per_tok={top_k} exceeds num_experts={experts}")
    moe = MoESpec(experts=experts, top_k=top_k, ffn=f.int("expert_intermediate_size"), shared_ffn=shared or 0,
                  groups=1, topk_groups=1, scaling=1.0, score="softmax", normalize=False)
    bias = f.bool("attention_bias", False)
    vocab = f.int("vocab_size")
    return ArchSpec(
        family="lladamoe", hidden=hidden, heads=heads, kv_heads=kv, layers=layers,
        ffn=f.int("dense_intermediate_size") if dense else 1, embed_rows=vocab, out_size=vocab,
        eps=f.float("rms_norm_eps", 1e-5), rope_theta=f.float("rope_theta", 10000.0), qkv_bias=bias, other_bias=False,
        norm_bias=False, tie=f.bool("tie_word_embeddings", False), rope_fp32=False,
        qk_norm=f.bool("qk_layernorm", False), rope_dims=rope_dims if rope_dims < head_dim else None, o_bias=bias,
        moe=moe if dense < layers else None, dense_layers=dense,
    )


def published_name(internal: str, shape: tuple[int, ...] = ()) -> str | tuple[str, ...]:
    """Our parameter name -> the checkpoint's tensor name; a tuple for our stacked expert weights."""
    return moe_tensor_name(internal, shape, top=_TOP, block=_BLOCK, moe=_MOE, experts=_EXPERTS)


def optional(internal: str) -> bool:
    """The router's expert bias is saved only with moe_router_enable_expert_bias (else zeros)."""
    return internal.endswith("moe.expert_bias")
