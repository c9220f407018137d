"""Tiny random-weight LLaDA-MoE checkpoints in the published format, written inside a test run.

The folder is the package's example (config.json with LLaDA-MoE's field names, model_type
"lladamoe" or, as the hub checkpoints keep it, "llada"; bf16 safetensors under the published tensor
names, per expert, optionally sharded; a word-level tokenizer) plus `.py` files for its `auto_map` that
raise when imported. `reference_logits` recomputes a row straight from the tensors with explicit
attention and a loop over experts: a second, independent reading of the format and of the official
block's routing (softmax + expert bias, top-k of the biased scores as weights).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import native_ckpt as nc
import torch


def write_checkpoint(folder: Path, *, seed: int = 0, shards: int = 1, dtype=torch.bfloat16, **config_over) -> Path:
    """The package's LLaDA-MoE example (`models example --family lladamoe`) with traps for its code."""
    return nc.write_checkpoint(folder, "lladamoe", seed=seed, shards=shards, dtype=dtype, **config_over)


def reference_logits(folder: Path, ids: torch.Tensor) -> torch.Tensor:
    """fp32 logits [L, V] of one unpadded row straight from the published tensors."""
    cfg = json.loads((folder / "config.json").read_text())
    w = nc._read(folder)
    d, h, kvh, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["rms_norm_eps"]
    hd = d // h
    rd = int(hd * cfg["partial_rotary_factor"])
    length = ids.shape[0]

    def rms(x, weight):
        return weight * x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)

    def lin(x, name):
        y = x @ w[name + ".weight"].T
        return y + w[name + ".bias"] if name + ".bias" in w else y

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
