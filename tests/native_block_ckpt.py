"""Tiny random-weight SDAR and LLaDA 2 (MoE) checkpoints in the published formats, for tests.

Each folder holds what the hub checkpoints hold: config.json with the real field names and an
`auto_map` whose `.py` files raise when imported (any import fails the test), bf16 safetensors
under the published tensor names, generation_config.json with the end ids, and a small tokenizer
(tokenizer.json + tokenizer_config.json naming the mask token). SDAR's config states its
mask_token_id and block_size; LLaDA 2's states neither (the mask comes from the tokenizer).

`reference_logits` recomputes the forward pass from the tensors by their published names with
explicit softmax attention and a per-expert loop for the MoE, straight from the equations
(not from the implementation under test): a second, independent reading of the format.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch

from native_ckpt import WORDS, random_tensors, save_tensors, trap

SPECIALS = {
    "sdar": ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<unk>", "<|MASK|>"],
    "llada2": ["<|endoftext|>", "<role>", "</role>", "<unk>", "<|mask|>"],
}
MASK = {"sdar": "<|MASK|>", "llada2": "<|mask|>"}
TEMPLATE = {
    "sdar": ("{% for m in messages %}<|im_start|> {{ m['role'] }} {{ m['content'] }} <|im_end|> {% endfor %}"
             "{% if add_generation_prompt %}<|im_start|> assistant {% endif %}"),
    "llada2": ("{% for m in messages %}<role> {{ m['role'] }} </role> {{ m['content'] }} {% endfor %}"
               "{% if add_generation_prompt %}<role> assistant </role> {% endif %}"),
}


def vocabulary(family: str) -> dict[str, int]:
    return {t: i for i, t in enumerate(dict.fromkeys(SPECIALS[family] + WORDS))}


def sdar_config(vocab: int, mask_id: int, **over) -> dict:
    cfg = {
        "architectures": ["SDARForCausalLM"],
        "auto_map": {"AutoConfig": "configuration_sdar.SDARConfig", "AutoModel": "modeling_sdar.SDARModel",
                     "AutoModelForCausalLM": "modeling_sdar.SDARForCausalLM"},
        "attention_bias": False, "attention_dropout": 0.0, "attn_implementation": "flex_attention",
        "block_size": 4, "bos_token_id": 0, "eos_token_id": 0, "mask_token_id": mask_id, "head_dim": 8,
        "hidden_act": "silu", "hidden_size": 24, "intermediate_size": 40, "max_position_embeddings": 4096,
        "max_window_layers": 2, "model_type": "sdar", "num_attention_heads": 4, "num_hidden_layers": 2,
        "num_key_value_heads": 2, "rms_norm_eps": 1e-6, "rope_scaling": None, "rope_theta": 1000000.0,
        "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "transformers_version": "4.52.4", "use_cache": False, "use_sliding_window": False, "vocab_size": vocab,
    }
    cfg.update(over)
    return cfg


def llada2_config(vocab: int, pad_id: int, **over) -> dict:
    cfg = {
        "architectures": ["LLaDA2MoeModelLM"],
        "auto_map": {"AutoConfig": "configuration_llada2_moe.LLaDA2MoeConfig",
                     "AutoModel": "modeling_llada2_moe.LLaDA2MoeModel",
                     "AutoModelForCausalLM": "modeling_llada2_moe.LLaDA2MoeModelLM"},
        "attention_dropout": 0.0, "embedding_dropout": 0.0, "first_k_dense_replace": 1, "head_dim": 8,
        "hidden_act": "silu", "hidden_size": 24, "initializer_range": 0.02, "intermediate_size": 40,
        "max_position_embeddings": 4096, "max_window_layers": 2, "model_type": "llada2_moe",
        "moe_intermediate_size": 12, "moe_router_enable_expert_bias": True, "n_group": 4, "norm_head": False,
        "norm_topk_prob": True, "num_attention_heads": 4, "num_experts": 8, "num_experts_per_tok": 3,
        "num_hidden_layers": 3, "num_key_value_heads": 2, "num_shared_experts": 1, "output_dropout": 0.0,
        "output_router_logits": False, "pad_token_id": pad_id, "partial_rotary_factor": 0.5, "rms_norm_eps": 1e-6,
        "rope_scaling": None, "rope_theta": 600000.0, "rotary_dim": 4, "routed_scaling_factor": 2.5,
        "router_dtype": "fp32", "score_function": "sigmoid", "tie_word_embeddings": False, "topk_group": 2,
        "torch_dtype": "bfloat16", "use_bias": False, "use_cache": False, "use_qk_norm": True,
        "use_qkv_bias": False, "use_rmsnorm": True, "use_sliding_window": False, "vocab_size": vocab,
    }
    cfg.update(over)
    return cfg


def published_shapes(family: str, cfg: dict) -> dict[str, tuple[int, ...]]:
    h, heads, kvh, hd = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    vocab, ffn = cfg["vocab_size"], cfg["intermediate_size"]
    out: dict[str, tuple[int, ...]] = {}
    if family == "sdar":
        out["model.embed_tokens.weight"] = (vocab, h)
        for i in range(cfg["num_hidden_layers"]):
            b = f"model.layers.{i}."
            out.update({b + "input_layernorm.weight": (h,), b + "post_attention_layernorm.weight": (h,),
                        b + "self_attn.q_proj.weight": (heads * hd, h), b + "self_attn.k_proj.weight": (kvh * hd, h),
                        b + "self_attn.v_proj.weight": (kvh * hd, h), b + "self_attn.o_proj.weight": (h, heads * hd),
                        b + "self_attn.q_norm.weight": (hd,), b + "self_attn.k_norm.weight": (hd,),
                        b + "mlp.gate_proj.weight": (ffn, h), b + "mlp.up_proj.weight": (ffn, h),
                        b + "mlp.down_proj.weight": (h, ffn)})
            if cfg.get("attention_bias"):
                out.update({b + "self_attn.q_proj.bias": (heads * hd,), b + "self_attn.k_proj.bias": (kvh * hd,),
                            b + "self_attn.v_proj.bias": (kvh * hd,), b + "self_attn.o_proj.bias": (h,)})
        out["model.norm.weight"] = (h,)
        if not cfg.get("tie_word_embeddings"):
            out["lm_head.weight"] = (vocab, h)
        return out
    out["model.word_embeddings.weight"] = (vocab, h)
    experts, mffn = cfg["num_experts"], cfg["moe_intermediate_size"]
    shared = cfg.get("num_shared_experts") or 0
    for i in range(cfg["num_hidden_layers"]):
        b = f"model.layers.{i}."
        out.update({b + "input_layernorm.weight": (h,), b + "post_attention_layernorm.weight": (h,),
                    b + "attention.query_key_value.weight": ((heads + 2 * kvh) * hd, h),
                    b + "attention.query_layernorm.weight": (hd,), b + "attention.key_layernorm.weight": (hd,),
                    b + "attention.dense.weight": (h, heads * hd)})
        if cfg.get("use_qkv_bias"):
            out[b + "attention.query_key_value.bias"] = ((heads + 2 * kvh) * hd,)
        if cfg.get("use_bias"):
            out[b + "attention.dense.bias"] = (h,)
        if i < cfg.get("first_k_dense_replace", 0):
            out.update({b + "mlp.gate_proj.weight": (ffn, h), b + "mlp.up_proj.weight": (ffn, h),
                        b + "mlp.down_proj.weight": (h, ffn)})
            continue
        out[b + "mlp.gate.weight"] = (experts, h)
        if cfg.get("moe_router_enable_expert_bias", True):
            out[b + "mlp.gate.expert_bias"] = (experts,)
        for j in range(experts):
            e = f"{b}mlp.experts.{j}."
            out.update({e + "gate_proj.weight": (mffn, h), e + "up_proj.weight": (mffn, h),
                        e + "down_proj.weight": (h, mffn)})
        if shared:
            s = b + "mlp.shared_experts."
            out.update({s + "gate_proj.weight": (mffn * shared, h), s + "up_proj.weight": (mffn * shared, h),
                        s + "down_proj.weight": (h, mffn * shared)})
    out["model.norm.weight"] = (h,)
    if not cfg.get("tie_word_embeddings"):
        out["lm_head.weight"] = (vocab, h)
    return out


def write_tokenizer(folder: Path, family: str) -> dict[str, int]:
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    vocab = vocabulary(family)
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens([AddedToken(t, special=True) for t in SPECIALS[family]])
    tok.save(str(folder / "tokenizer.json"))
    end = "<|im_end|>" if family == "sdar" else "<|endoftext|>"
    cfg = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": end, "pad_token": "<|endoftext|>",
           "unk_token": "<unk>", "mask_token": MASK[family], "chat_template": TEMPLATE[family],
           "model_max_length": 4096}
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg))
    return vocab


def write_checkpoint(folder: Path, family: str, *, seed: int = 0, shards: int = 1, dtype=torch.bfloat16,
                     **config_over) -> Path:
    """A complete tiny checkpoint of `family` ("sdar" or "llada2") in `folder`; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = write_tokenizer(folder, family)
    n = len(vocab)
    if family == "sdar":
        cfg = sdar_config(n, vocab["<|MASK|>"], **config_over)
        gen_eos = [vocab["<|im_end|>"], vocab["<|endoftext|>"]]
    else:
        cfg = llada2_config(n, vocab["<|endoftext|>"], **config_over)
        gen_eos = [vocab["<|endoftext|>"]]
    (folder / "config.json").write_text(json.dumps(cfg, indent=1))
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": gen_eos, "pad_token_id": 0}))
    for module in cfg.get("auto_map", {}).values():
        (folder / f"{module.split('.')[0]}.py").write_text(trap(folder, module))
    save_tensors(folder, random_tensors(published_shapes(family, cfg), seed, dtype), shards)
    return folder


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
