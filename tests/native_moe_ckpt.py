"""Tiny random-weight LLaDA-MoE checkpoints in the published format, written inside a test run.

The folder holds config.json (LLaDA-MoE's field names, model_type "lladamoe" or, as the hub
checkpoints keep it, "llada"; an `auto_map` naming `.py` files that raise when imported), bf16
safetensors under the published tensor names (per-expert tensors, optionally sharded) and the
tokenizer of `native_ckpt`. `reference_logits` recomputes a row straight from the tensors with
explicit attention and a loop over experts: a second, independent reading of the format and of
the official block's routing (softmax + expert bias, top-k of the biased scores as weights).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import native_ckpt as nc
import torch


def config(vocab: int, mask_id: int, **over) -> dict:
    cfg = {
        "architectures": ["LLaDAMoEModelLM"], "attention_bias": False, "attention_dropout": 0.0,
        "auto_map": {"AutoConfig": "configuration_lladamoe.LLaDAMoEConfig",
                     "AutoModel": "modeling_lladamoe.LLaDAMoEModelLM"},
        "clip_qkv": None, "dense_intermediate_size": 48, "eos_token_id": 0, "expert_intermediate_size": 16,
        "hidden_act": "silu", "hidden_size": 32, "initializer_range": 0.02, "mask_token_id": mask_id,
        "max_position_embeddings": 4096, "model_type": "lladamoe", "moe_layer_freq": [0, 1],
        "moe_router_enable_expert_bias": True, "moe_router_score_function": "softmax", "norm_topk_prob": True,
        "num_attention_heads": 4, "num_experts": 8, "num_experts_per_tok": 2, "num_hidden_layers": 2,
        "num_key_value_heads": 2, "output_router_logits": False, "pad_token_id": 0, "partial_rotary_factor": 0.5,
        "qk_layernorm": True, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 50000.0,
        "routed_scaling_factor": 1, "router_aux_loss_coef": 0.01, "shared_expert_intermediate_size": 24,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": False, "vocab_size": vocab,
    }
    cfg.update(over)
    return cfg


def published_shapes(cfg: dict) -> dict[str, tuple[int, ...]]:
    d, h, kvh = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = d // h
    out: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (cfg["vocab_size"], d), "model.norm.weight": (d,)}
    for i, moe in enumerate(cfg["moe_layer_freq"]):
        b = f"model.layers.{i}."
        out.update({b + "input_layernorm.weight": (d,), b + "post_attention_layernorm.weight": (d,),
                    b + "self_attn.q_proj.weight": (d, d), b + "self_attn.k_proj.weight": (kvh * hd, d),
                    b + "self_attn.v_proj.weight": (kvh * hd, d), b + "self_attn.o_proj.weight": (d, d)})
        if cfg["attention_bias"]:
            out.update({b + "self_attn.q_proj.bias": (d,), b + "self_attn.k_proj.bias": (kvh * hd,),
                        b + "self_attn.v_proj.bias": (kvh * hd,), b + "self_attn.o_proj.bias": (d,)})
        if cfg["qk_layernorm"]:
            out.update({b + "self_attn.q_norm.weight": (hd,), b + "self_attn.k_norm.weight": (hd,)})
        if not moe:
            f = cfg["dense_intermediate_size"]
            out.update({b + "mlp.gate_proj.weight": (f, d), b + "mlp.up_proj.weight": (f, d),
                        b + "mlp.down_proj.weight": (d, f)})
            continue
        f = cfg["expert_intermediate_size"]
        out[b + "mlp.gate.weight"] = (cfg["num_experts"], d)
        if cfg["moe_router_enable_expert_bias"]:
            out[b + "mlp.expert_bias"] = (cfg["num_experts"],)
        for j in range(cfg["num_experts"]):
            e = f"{b}mlp.experts.{j}."
            out.update({e + "gate_proj.weight": (f, d), e + "up_proj.weight": (f, d), e + "down_proj.weight": (d, f)})
        s = cfg["shared_expert_intermediate_size"]
        if s:
            out.update({b + "shared_expert.gate_proj.weight": (s, d), b + "shared_expert.up_proj.weight": (s, d),
                        b + "shared_expert.down_proj.weight": (d, s)})
    if not cfg["tie_word_embeddings"]:
        out["lm_head.weight"] = (cfg["vocab_size"], d)
    return out


def write_checkpoint(folder: Path, *, seed: int = 0, shards: int = 1, dtype=torch.bfloat16, **config_over) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    nc.write_tokenizer(folder, "lladamoe")
    vocab = nc.vocabulary("lladamoe")
    cfg = config(len(vocab), vocab["<|mask|>"], **config_over)
    (folder / "config.json").write_text(json.dumps(cfg, indent=1))
    for module in cfg["auto_map"].values():
        (folder / f"{module.split('.')[0]}.py").write_text(nc.trap(folder, module))
    nc.save_tensors(folder, nc.random_tensors(published_shapes(cfg), seed, dtype), shards)
    return folder


def reference_logits(folder: Path, ids: torch.Tensor) -> torch.Tensor:
    """fp32 logits [L, V] of one unpadded row straight from the published tensors."""
    cfg = json.loads((folder / "config.json").read_text())
    w = nc._read(folder)
    d, h, kvh, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["rms_norm_eps"]
    hd = d // h
    rd = int(hd * cfg["partial_rotary_factor"])
    length = ids.shape[0]

    def rms(x, weight):
        return nc.rms_norm(x, weight, eps)

    def lin(x, name):
        return nc.linear(w, x, name)

    def swiglu(x, prefix):
        gate = lin(x, prefix + "gate_proj")
        return lin(gate * torch.sigmoid(gate) * lin(x, prefix + "up_proj"), prefix + "down_proj")

    inv = 1.0 / cfg["rope_theta"] ** (torch.arange(0, rd, 2, dtype=torch.float64) / rd)
    ang = torch.outer(torch.arange(length, dtype=torch.float64), inv)
    cos, sin = torch.cos(ang).float(), torch.sin(ang).float()

    def rope(x):  # the first rd dimensions of each head, pairs (j, j + rd/2)
        a, b, rest = x[..., : rd // 2], x[..., rd // 2: rd], x[..., rd:]
        return torch.cat([a * cos - b * sin, a * sin + b * cos, rest], dim=-1)

    x = w["model.embed_tokens.weight"][ids]
    for i, moe in enumerate(cfg["moe_layer_freq"]):
        b = f"model.layers.{i}."
        y = rms(x, w[b + "input_layernorm.weight"])
        q = lin(y, b + "self_attn.q_proj").view(length, h, hd)
        k = lin(y, b + "self_attn.k_proj").view(length, kvh, hd)
        if cfg["qk_layernorm"]:
            q, k = rms(q, w[b + "self_attn.q_norm.weight"]), rms(k, w[b + "self_attn.k_norm.weight"])
        v = lin(y, b + "self_attn.v_proj").view(length, kvh, hd)
        q, k, v = rope(q.transpose(0, 1)), rope(k.transpose(0, 1)), v.transpose(0, 1)
        k, v = k.repeat_interleave(h // kvh, 0), v.repeat_interleave(h // kvh, 0)
        att = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(hd), dim=-1) @ v
        x = x + lin(att.transpose(0, 1).reshape(length, d), b + "self_attn.o_proj")
        y = rms(x, w[b + "post_attention_layernorm.weight"])
        if not moe:
            x = x + swiglu(y, b + "mlp.")
            continue
        scores = torch.softmax(y @ w[b + "mlp.gate.weight"].T, dim=-1) + w.get(b + "mlp.expert_bias", 0.0)
        top, chosen = scores.topk(cfg["num_experts_per_tok"], dim=-1)
        out = torch.zeros_like(y)
        for j in range(cfg["num_experts"]):
            rows, slot = (chosen == j).nonzero(as_tuple=True)
            if rows.numel():
                out[rows] += swiglu(y[rows], f"{b}mlp.experts.{j}.") * top[rows, slot].unsqueeze(-1)
        if cfg["shared_expert_intermediate_size"]:
            out = out + swiglu(y, b + "shared_expert.")
        x = x + out
    x = rms(x, w["model.norm.weight"])
    return x @ w.get("lm_head.weight", w["model.embed_tokens.weight"]).T
