"""Tiny random-weight SDAR and LLaDA 2 (MoE) checkpoints in the published formats, for tests.

The package's example builder (`parallelbench.models.hf.examples`) writes each folder as the
hub checkpoints hold it: config.json with the real field names and an `auto_map` (whose `.py`
files are added here as files that raise when imported: any import fails the test), bf16
safetensors under the published tensor names, generation_config.json with the end ids, and a
small tokenizer (tokenizer.json + tokenizer_config.json naming the mask token). SDAR's config
states its mask_token_id and block_size; LLaDA 2's states neither (the mask comes from the tokenizer).

`reference_logits` recomputes the forward pass from the tensors by their published names with
explicit softmax attention and a per-expert loop for the MoE, straight from the equations
(not from the implementation under test): a second, independent reading of the format.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch

from native_ckpt import write_checkpoint  # noqa: F401  (one builder for every family)
from parallelbench.models.hf.examples import vocabulary  # noqa: F401

MASK = {"sdar": "<|MASK|>", "llada2": "<|mask|>"}


# ---------------------------------------------------------------------- independent reference
def _read(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    out = {}
    for path in sorted(folder.glob("*.safetensors")):
        out.update({k: v.double() for k, v in load_file(str(path)).items()})
    return out


def block_causal_allowed(length: int, block: int, offset: int = 0) -> torch.Tensor:
    """[L, L] bool: query i sees key j iff block(j) <= block(i), blocks of `block` on the grid p + offset."""
    blk = (torch.arange(length) + offset) // block
    return blk[None, :] <= blk[:, None]


def reference_logits(folder: Path, ids: torch.Tensor, allowed: torch.Tensor | None = None) -> torch.Tensor:
    """float64 logits [L, V] of one unpadded row at positions 0..L-1; `allowed` [L, L] (query, key)
    restricts attention (None: every token sees every token)."""
    cfg = json.loads((folder / "config.json").read_text())
    w = _read(folder)
    sdar = cfg["model_type"] == "sdar"
    h, heads, kvh, hd = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps, theta, n = cfg["rms_norm_eps"], cfg["rope_theta"], ids.shape[0]
    rot = hd if sdar else int(hd * cfg.get("partial_rotary_factor", 0.5))

    def rms(x, weight):
        return weight * x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)

    def lin(x, name):
        y = x @ w[name + ".weight"].T
        return y + w[name + ".bias"] if name + ".bias" in w else y

    def swiglu(x, prefix, gate="gate_proj", up="up_proj", down="down_proj"):
        g = lin(x, prefix + gate)
        return lin(g * torch.sigmoid(g) * lin(x, prefix + up), prefix + down)

    inv = 1.0 / theta ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot)
    ang = torch.outer(torch.arange(n, dtype=torch.float64), inv)
    cos, sin = torch.cos(ang), torch.sin(ang)

    def rope(x):  # x [heads, L, hd]: pairs (j, j + rot/2) of the first `rot` dimensions rotate
        a, b, rest = x[..., : rot // 2], x[..., rot // 2: rot], x[..., rot:]
        return torch.cat([a * cos - b * sin, a * sin + b * cos, rest], dim=-1)

    emb = w["model.embed_tokens.weight" if sdar else "model.word_embeddings.weight"]
    x = emb[ids]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        y = rms(x, w[p + "input_layernorm.weight"])
        if sdar:
            q = lin(y, p + "self_attn.q_proj").view(n, heads, hd)
            k = lin(y, p + "self_attn.k_proj").view(n, kvh, hd)
            v = lin(y, p + "self_attn.v_proj").view(n, kvh, hd)
            qn, kn, o = p + "self_attn.q_norm.weight", p + "self_attn.k_norm.weight", p + "self_attn.o_proj"
        else:
            qkv = lin(y, p + "attention.query_key_value").view(n, heads + 2 * kvh, hd)
            q, k, v = qkv[:, :heads], qkv[:, heads:heads + kvh], qkv[:, heads + kvh:]
            qn, kn, o = p + "attention.query_layernorm.weight", p + "attention.key_layernorm.weight", \
                p + "attention.dense"
        q, k = rms(q, w[qn]), rms(k, w[kn])
        q, k, v = rope(q.transpose(0, 1)), rope(k.transpose(0, 1)), v.transpose(0, 1)
        k, v = k.repeat_interleave(heads // kvh, 0), v.repeat_interleave(heads // kvh, 0)
        scores = q @ k.transpose(1, 2) / math.sqrt(hd)
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        att = torch.softmax(scores, dim=-1) @ v
        x = x + lin(att.transpose(0, 1).reshape(n, heads * hd), o)
        y = rms(x, w[p + "post_attention_layernorm.weight"])
        if sdar or i < cfg.get("first_k_dense_replace", 0):
            x = x + swiglu(y, p + "mlp.")
        else:
            x = x + _moe_reference(y, w, p + "mlp.", cfg)
    x = rms(x, w["model.norm.weight"])
    head = w.get("lm_head.weight", emb)
    return x @ head.T


def _moe_reference(y: torch.Tensor, w: dict, prefix: str, cfg: dict) -> torch.Tensor:
    """Token by token, expert by expert: sigmoid scores, bias for the choice, best groups (sum of
    their two best), top-k, normalised unbiased weights times the scaling factor, plus shared."""
    experts, k = cfg["num_experts"], cfg["num_experts_per_tok"]
    groups, keep_groups = cfg["n_group"], cfg["topk_group"]
    per = experts // groups
    bias = w.get(prefix + "gate.expert_bias", torch.zeros(experts, dtype=torch.float64))
    out = torch.zeros_like(y)
    for t in range(y.shape[0]):
        logits = w[prefix + "gate.weight"] @ y[t]
        scores = torch.sigmoid(logits) if cfg.get("score_function", "sigmoid") == "sigmoid" else torch.softmax(logits, 0)
        choice = scores + bias
        group_score = [sorted(choice[g * per:(g + 1) * per].tolist(), reverse=True)[:2] for g in range(groups)]
        best_groups = sorted(range(groups), key=lambda g: -sum(group_score[g]))[:keep_groups]
        candidates = [e for e in range(experts) if e // per in best_groups]
        chosen = sorted(candidates, key=lambda e: -float(choice[e]))[:k]
        weights = torch.stack([scores[e] for e in chosen])
        if cfg.get("norm_topk_prob", True) and k > 1:
            weights = weights / weights.sum()
        weights = weights * cfg["routed_scaling_factor"]
        for e, wt in zip(chosen, weights):
            g = y[t] @ w[f"{prefix}experts.{e}.gate_proj.weight"].T
            u = y[t] @ w[f"{prefix}experts.{e}.up_proj.weight"].T
            out[t] += wt * ((g * torch.sigmoid(g) * u) @ w[f"{prefix}experts.{e}.down_proj.weight"].T)
    if cfg.get("num_shared_experts"):
        g = y @ w[prefix + "shared_experts.gate_proj.weight"].T
        u = y @ w[prefix + "shared_experts.up_proj.weight"].T
        out = out + (g * torch.sigmoid(g) * u) @ w[prefix + "shared_experts.down_proj.weight"].T
    return out
