"""Small random-weight checkpoints in the hub format of each `hf:` family, for trying a family on
a CPU in seconds (`parallelbench models example --family F --out DIR`) and for the tests.

A folder holds what the published checkpoints hold, at toy sizes: `config.json` with the
family's real field names (and its `auto_map`, naming modeling files that are not written:
ParallelBench never runs them), the weights as safetensors under the published tensor names
(bf16, as published; optionally sharded with `model.safetensors.index.json`), a word-level
tokenizer (`tokenizer.json` + `tokenizer_config.json` with the family's mask, end and chat
template), and for SDAR and LLaDA 2 the `generation_config.json` that names the end ids.

- `llada`: LLaDA / LLaDA 1.5 (OLMo-style names, `model.transformer.*`), mask `<|mdm_mask|>`.
- `dream`: Dream / DiffuCoder (Qwen2-style names, q/k/v biases), mask `<|mask|>`.
- `sdar`: SDAR / TraDo block diffusion (Qwen3-style, q/k norms), blocks of 4, mask `<|MASK|>`.
- `llada2`: LLaDA 2.x block diffusion with a mixture of experts (8 experts, 3 per token, one
  shared), mask `<|mask|>` from the tokenizer only.
- `lladamoe`: LLaDA-MoE (OLMoE-style names, a dense first layer then 8 experts, 2 per token, one
  shared, an expert bias, q/k norms, RoPE on half of each head), mask `<|mask|>`.
- `masked_lm`: a BERT `BertForMaskedLM` with a WordPiece tokenizer (transformers writes it),
  512 positions.

The weights are random: the answers mean nothing; the point is that loading, the chat
template, the mask, the caches and every strategy run as they would on the real model.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

FAMILIES = ("llada", "dream", "sdar", "llada2", "lladamoe", "masked_lm")
WORDS = ("user assistant system You are managing a waiting line . Copy the list : Susan Fox Philip Gray "
         "Anna Lee [ ] \" , the answer is A B C D 1 2 3 4 Who goes next ? Alice Bob").split()
MASKED_LM_WORDS = (
    "[PAD] [UNK] [CLS] [SEP] [MASK] user assistant : the a line of people is , [ ] \" who are in waiting list copy "
    "susan fox philip gray maria lee new order answer give me names please and then first last"
).split()
# family -> special tokens in id order (they come first), mask, end of answer, end of turn, chat template
TOKENS: dict[str, dict[str, Any]] = {
    "llada": {"specials": ["<|endoftext|>", "<|eot_id|>", "<|start|>", "<unk>", "<|mdm_mask|>"],
              "mask": "<|mdm_mask|>", "eos": "<|endoftext|>", "eot": "<|eot_id|>"},
    "dream": {"specials": ["<|endoftext|>", "<|im_end|>", "<|start|>", "<unk>", "<|mask|>"],
              "mask": "<|mask|>", "eos": "<|endoftext|>", "eot": "<|im_end|>"},
    "sdar": {"specials": ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<unk>", "<|MASK|>"],
             "mask": "<|MASK|>", "eos": "<|im_end|>", "eot": "<|im_end|>"},
    "llada2": {"specials": ["<|endoftext|>", "<role>", "</role>", "<unk>", "<|mask|>"],
               "mask": "<|mask|>", "eos": "<|endoftext|>", "eot": "<|endoftext|>"},
    "lladamoe": {"specials": ["<|endoftext|>", "<role>", "</role>", "<unk>", "<|mask|>"],
                 "mask": "<|mask|>", "eos": "<|endoftext|>", "eot": "<|endoftext|>"},
}
TEMPLATES = {
    "plain": ("{% for m in messages %}<|start|> {{ m['role'] }} {{ m['content'] }} EOT {% endfor %}"
              "{% if add_generation_prompt %}<|start|> assistant {% endif %}"),
    "sdar": ("{% for m in messages %}<|im_start|> {{ m['role'] }} {{ m['content'] }} <|im_end|> {% endfor %}"
             "{% if add_generation_prompt %}<|im_start|> assistant {% endif %}"),
    "llada2": ("{% for m in messages %}<role> {{ m['role'] }} </role> {{ m['content'] }} {% endfor %}"
               "{% if add_generation_prompt %}<role> assistant </role> {% endif %}"),
}


def vocabulary(family: str) -> dict[str, int]:
    """Token -> id of a family's example tokenizer: its special tokens first, then `WORDS`."""
    return {t: i for i, t in enumerate(dict.fromkeys(TOKENS[family]["specials"] + WORDS))}


def _template(family: str) -> str:
    if family in ("sdar", "llada2"):
        return TEMPLATES[family]
    if family == "lladamoe":  # LLaDA 2's tokenizer and role tags
        return TEMPLATES["llada2"]
    return TEMPLATES["plain"].replace("EOT", TOKENS[family]["eot"])


def write_tokenizer(folder: Path, family: str, *, with_mask: bool = True) -> dict[str, int]:
    """tokenizer.json (word level, whitespace split) and tokenizer_config.json; returns the vocabulary.
    `with_mask=False` writes a tokenizer that names no mask token (its id holds an ordinary word)."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    spec, vocab = TOKENS[family], vocabulary(family)
    if not with_mask:
        vocab = {("maskless" if t == spec["mask"] else t): i for t, i in vocab.items()}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens([AddedToken(t, special=True) for t in spec["specials"] if t in vocab])
    tok.save(str(folder / "tokenizer.json"))
    cfg: dict[str, Any] = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": spec["eos"],
                           "pad_token": "<|endoftext|>", "unk_token": "<unk>", "chat_template": _template(family),
                           "model_max_length": 4096}
    if family == "dream":  # as published: a tokenizer class of its own behind auto_map (never run here)
        cfg.update({"tokenizer_class": "DreamTokenizer",
                    "auto_map": {"AutoTokenizer": ["tokenization_dream.DreamTokenizer", None]}})
    if with_mask:
        cfg["mask_token"] = spec["mask"]
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg))
    return vocab


def config(family: str, **over: Any) -> dict[str, Any]:
    """config.json of the family's example, with the published field names; `over` replaces fields."""
    vocab = vocabulary(family)
    n, mask = len(vocab), vocab[TOKENS[family]["mask"]]
    if family == "llada":
        cfg = {
            "activation_type": "silu", "alibi": False, "alibi_bias_max": 8.0, "architectures": ["LLaDAModelLM"],
            "attention_dropout": 0.0, "attention_layer_norm": False, "attention_layer_norm_with_affine": True,
            "auto_map": {"AutoConfig": "configuration_llada.LLaDAConfig", "AutoModel": "modeling_llada.LLaDAModelLM",
                         "AutoModelForCausalLM": "modeling_llada.LLaDAModelLM"},
            "bias_for_layer_norm": False, "block_group_size": 1, "block_type": "llama", "d_model": 32,
            "embedding_dropout": 0.0, "embedding_size": n + 3, "eos_token_id": 0, "flash_attention": False,
            "include_bias": False, "include_qkv_bias": False, "init_cutoff_factor": None, "init_device": "meta",
            "init_fn": "mitchell", "init_std": 0.02, "input_emb_norm": False, "layer_norm_type": "rms",
            "layer_norm_with_affine": True, "mask_token_id": mask, "max_sequence_length": 4096,
            "mlp_hidden_size": 48, "mlp_ratio": 4, "model_type": "llada", "multi_query_attention": None,
            "n_heads": 4, "n_kv_heads": 4, "n_layers": 2, "pad_token_id": 0, "precision": "amp_bf16",
            "residual_dropout": 0.0, "rms_norm_eps": 1e-05, "rope": True, "rope_full_precision": True,
            "rope_theta": 500000.0, "scale_logits": False, "transformers_version": "4.46.3", "use_cache": False,
            "vocab_size": n, "weight_tying": False,
        }
    elif family == "dream":
        cfg = {
            "architectures": ["DreamModel"], "attention_dropout": 0.0,
            "auto_map": {"AutoConfig": "configuration_dream.DreamConfig", "AutoModel": "modeling_dream.DreamModel"},
            "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "silu", "hidden_size": 32,
            "initializer_range": 0.02, "intermediate_size": 48, "mask_token_id": mask,
            "max_position_embeddings": 4096, "max_window_layers": 2, "model_type": "Dream",
            "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2, "pad_token_id": 0,
            "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000.0, "sliding_window": None,
            "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.46.2",
            "use_cache": False, "use_sliding_window": False, "vocab_size": n,
        }
    elif family == "sdar":
        cfg = {
            "architectures": ["SDARForCausalLM"],
            "auto_map": {"AutoConfig": "configuration_sdar.SDARConfig", "AutoModel": "modeling_sdar.SDARModel",
                         "AutoModelForCausalLM": "modeling_sdar.SDARForCausalLM"},
            "attention_bias": False, "attention_dropout": 0.0, "attn_implementation": "flex_attention",
            "block_size": 4, "bos_token_id": 0, "eos_token_id": 0, "mask_token_id": mask, "head_dim": 8,
            "hidden_act": "silu", "hidden_size": 24, "intermediate_size": 40, "max_position_embeddings": 4096,
            "max_window_layers": 2, "model_type": "sdar", "num_attention_heads": 4, "num_hidden_layers": 2,
            "num_key_value_heads": 2, "rms_norm_eps": 1e-6, "rope_scaling": None, "rope_theta": 1000000.0,
            "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
            "transformers_version": "4.52.4", "use_cache": False, "use_sliding_window": False, "vocab_size": n,
        }
    elif family == "llada2":
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
            "output_router_logits": False, "pad_token_id": vocab["<|endoftext|>"], "partial_rotary_factor": 0.5,
            "rms_norm_eps": 1e-6, "rope_scaling": None, "rope_theta": 600000.0, "rotary_dim": 4,
            "routed_scaling_factor": 2.5, "router_dtype": "fp32", "score_function": "sigmoid",
            "tie_word_embeddings": False, "topk_group": 2, "torch_dtype": "bfloat16", "use_bias": False,
            "use_cache": False, "use_qk_norm": True, "use_qkv_bias": False, "use_rmsnorm": True,
            "use_sliding_window": False, "vocab_size": n,
        }
    elif family == "lladamoe":
        cfg = {
            "architectures": ["LLaDAMoEModelLM"], "attention_bias": False, "attention_dropout": 0.0,
            "auto_map": {"AutoConfig": "configuration_lladamoe.LLaDAMoEConfig",
                         "AutoModel": "modeling_lladamoe.LLaDAMoEModelLM"},
            "clip_qkv": None, "dense_intermediate_size": 48, "eos_token_id": vocab["<|endoftext|>"],
            "expert_intermediate_size": 16, "hidden_act": "silu", "hidden_size": 32, "initializer_range": 0.02,
            "mask_token_id": mask, "max_position_embeddings": 4096, "model_type": "lladamoe",
            "moe_layer_freq": [0, 1], "moe_router_enable_expert_bias": True, "moe_router_score_function": "softmax",
            "norm_topk_prob": True, "num_attention_heads": 4, "num_experts": 8, "num_experts_per_tok": 2,
            "num_hidden_layers": 2, "num_key_value_heads": 2, "output_router_logits": False,
            "pad_token_id": vocab["<|endoftext|>"], "partial_rotary_factor": 0.5, "qk_layernorm": True,
            "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 50000.0, "routed_scaling_factor": 1,
            "router_aux_loss_coef": 0.01, "shared_expert_intermediate_size": 24, "tie_word_embeddings": False,
            "torch_dtype": "bfloat16", "use_cache": False, "vocab_size": n,
        }
    else:
        raise ValueError(f"no example config for family {family!r}; valid: {', '.join(FAMILIES[:5])}")
    cfg.update(over)
    return cfg


def _llama_layer(b: str, d: int, q: int, kv: int, ffn: int) -> dict[str, tuple[int, ...]]:
    """One Qwen/Llama-style layer (Dream, SDAR) under `b`: norms, q/k/v/o, SwiGLU."""
    return {b + "input_layernorm.weight": (d,), b + "post_attention_layernorm.weight": (d,),
            b + "self_attn.q_proj.weight": (q, d), b + "self_attn.k_proj.weight": (kv, d),
            b + "self_attn.v_proj.weight": (kv, d), b + "self_attn.o_proj.weight": (d, q),
            b + "mlp.gate_proj.weight": (ffn, d), b + "mlp.up_proj.weight": (ffn, d),
            b + "mlp.down_proj.weight": (d, ffn)}


def published_shapes(family: str, cfg: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """Tensor name -> shape, as the published checkpoints of the family lay them out."""
    out: dict[str, tuple[int, ...]] = {}
    if family == "llada":
        d, h = cfg["d_model"], cfg["n_heads"]
        kv = (cfg.get("n_kv_heads") or h) * (d // h)
        ffn, rows = cfg["mlp_hidden_size"], cfg.get("embedding_size") or cfg["vocab_size"]
        p = "model.transformer."
        out[p + "wte.weight"] = (rows, d)
        for i in range(cfg["n_layers"]):
            b = f"{p}blocks.{i}."
            out.update({b + "attn_norm.weight": (d,), b + "ff_norm.weight": (d,), b + "q_proj.weight": (d, d),
                        b + "k_proj.weight": (kv, d), b + "v_proj.weight": (kv, d), b + "attn_out.weight": (d, d),
                        b + "ff_proj.weight": (ffn, d), b + "up_proj.weight": (ffn, d), b + "ff_out.weight": (d, ffn)})
        out[p + "ln_f.weight"] = (d,)
        if not cfg.get("weight_tying"):
            out[p + "ff_out.weight"] = (rows, d)
        return out
    if family == "lladamoe":
        return _lladamoe_shapes(cfg)
    d, vocab, ffn = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    heads, kvh = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or d // heads
    if family in ("dream", "sdar"):
        out["model.embed_tokens.weight"] = (vocab, d)
        for i in range(cfg["num_hidden_layers"]):
            b = f"model.layers.{i}."
            out.update(_llama_layer(b, d, heads * hd, kvh * hd, ffn))
            if family == "dream":
                out.update({b + "self_attn.q_proj.bias": (heads * hd,), b + "self_attn.k_proj.bias": (kvh * hd,),
                            b + "self_attn.v_proj.bias": (kvh * hd,)})
            else:
                out.update({b + "self_attn.q_norm.weight": (hd,), b + "self_attn.k_norm.weight": (hd,)})
                if cfg.get("attention_bias"):
                    out.update({b + "self_attn.q_proj.bias": (heads * hd,), b + "self_attn.k_proj.bias": (kvh * hd,),
                                b + "self_attn.v_proj.bias": (kvh * hd,), b + "self_attn.o_proj.bias": (d,)})
    elif family == "llada2":
        out["model.word_embeddings.weight"] = (vocab, d)
        experts, mffn = cfg["num_experts"], cfg["moe_intermediate_size"]
        shared = cfg.get("num_shared_experts") or 0
        for i in range(cfg["num_hidden_layers"]):
            b = f"model.layers.{i}."
            out.update({b + "input_layernorm.weight": (d,), b + "post_attention_layernorm.weight": (d,),
                        b + "attention.query_key_value.weight": ((heads + 2 * kvh) * hd, d),
                        b + "attention.query_layernorm.weight": (hd,), b + "attention.key_layernorm.weight": (hd,),
                        b + "attention.dense.weight": (d, heads * hd)})
            if cfg.get("use_qkv_bias"):
                out[b + "attention.query_key_value.bias"] = ((heads + 2 * kvh) * hd,)
            if cfg.get("use_bias"):
                out[b + "attention.dense.bias"] = (d,)
            if i < cfg.get("first_k_dense_replace", 0):
                out.update({b + "mlp.gate_proj.weight": (ffn, d), b + "mlp.up_proj.weight": (ffn, d),
                            b + "mlp.down_proj.weight": (d, ffn)})
                continue
            out[b + "mlp.gate.weight"] = (experts, d)
            if cfg.get("moe_router_enable_expert_bias", True):
                out[b + "mlp.gate.expert_bias"] = (experts,)
            for j in range(experts):
                e = f"{b}mlp.experts.{j}."
                out.update({e + "gate_proj.weight": (mffn, d), e + "up_proj.weight": (mffn, d),
                            e + "down_proj.weight": (d, mffn)})
            if shared:
                s = b + "mlp.shared_experts."
                out.update({s + "gate_proj.weight": (mffn * shared, d), s + "up_proj.weight": (mffn * shared, d),
                            s + "down_proj.weight": (d, mffn * shared)})
    else:
        raise ValueError(f"no published layout for family {family!r}")
    out["model.norm.weight"] = (d,)
    if not cfg.get("tie_word_embeddings"):
        out["lm_head.weight"] = (vocab, d)
    return out


def _lladamoe_shapes(cfg: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """LLaDA-MoE's layout: per layer a dense MLP (moe_layer_freq 0) or the router (`mlp.gate`), its
    optional `mlp.expert_bias`, per-expert MLPs and a shared expert beside `mlp` (moe_layer_freq 1)."""
    d, vocab = cfg["hidden_size"], cfg["vocab_size"]
    heads, kvh = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = d // heads
    out: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (vocab, d), "model.norm.weight": (d,)}
    for i, moe in enumerate(cfg["moe_layer_freq"]):
        b = f"model.layers.{i}."
        dense = _llama_layer(b, d, heads * hd, kvh * hd, cfg["dense_intermediate_size"])
        out.update({k: v for k, v in dense.items() if moe == 0 or ".mlp." not in k})
        if cfg.get("attention_bias"):
            out.update({b + "self_attn.q_proj.bias": (heads * hd,), b + "self_attn.k_proj.bias": (kvh * hd,),
                        b + "self_attn.v_proj.bias": (kvh * hd,), b + "self_attn.o_proj.bias": (d,)})
        if cfg.get("qk_layernorm"):
            out.update({b + "self_attn.q_norm.weight": (hd,), b + "self_attn.k_norm.weight": (hd,)})
        if moe == 0:
            continue
        f, experts = cfg["expert_intermediate_size"], cfg["num_experts"]
        out[b + "mlp.gate.weight"] = (experts, d)
        if cfg.get("moe_router_enable_expert_bias"):
            out[b + "mlp.expert_bias"] = (experts,)
        for j in range(experts):
            e = f"{b}mlp.experts.{j}."
            out.update({e + "gate_proj.weight": (f, d), e + "up_proj.weight": (f, d), e + "down_proj.weight": (d, f)})
        shared = cfg.get("shared_expert_intermediate_size")
        if shared:
            out.update({b + "shared_expert.gate_proj.weight": (shared, d), b + "shared_expert.up_proj.weight": (shared, d),
                        b + "shared_expert.down_proj.weight": (d, shared)})
    if not cfg.get("tie_word_embeddings"):
        out["lm_head.weight"] = (vocab, d)
    return out


def random_tensors(shapes: dict[str, tuple[int, ...]], seed: int, dtype: Any = None) -> dict[str, Any]:
    """Weights of a usable scale: norms near 1, embeddings N(0, 1), matrices N(0, 1/fan_in)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    out = {}
    for name, shape in shapes.items():
        if name.endswith(("norm.weight", "ln_f.weight")):
            t = 1.0 + 0.1 * torch.randn(shape, generator=gen)
        elif name.endswith("expert_bias"):
            t = 0.1 * torch.randn(shape, generator=gen)
        elif name.endswith("bias"):
            t = 0.5 * torch.randn(shape, generator=gen)
        elif "embed" in name or "wte" in name:
            t = torch.randn(shape, generator=gen)
        else:
            t = torch.randn(shape, generator=gen) / math.sqrt(shape[-1])
        out[name] = t.to(dtype or torch.bfloat16).contiguous()
    return out


def save_tensors(folder: Path, tensors: dict[str, Any], shards: int = 1) -> None:
    """model.safetensors, or `shards` files with the index transformers writes."""
    from safetensors.torch import save_file

    names = sorted(tensors)
    if shards <= 1:
        save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
        return
    weight_map = {}
    for s in range(shards):
        part = names[s::shards]
        fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        save_file({k: tensors[k] for k in part}, str(folder / fname), metadata={"format": "pt"})
        weight_map.update({k: fname for k in part})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


def write_masked_lm(folder: Path, *, arch: str = "bert", seed: int = 0, max_position_embeddings: int | None = None,
                    tokenizer_special: dict[str, Any] | None = None) -> Path:
    """A `*ForMaskedLM` checkpoint written by transformers itself (BERT by default; RoBERTa,
    DistilBERT and ModernBERT place positions differently) with a WordPiece tokenizer."""
    import torch
    import transformers

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(MASKED_LM_WORDS) + "\n")
    tok = transformers.BertTokenizer(vocab=str(folder / "vocab.txt"), **(tokenizer_special or {}))
    sizes = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    common = dict(vocab_size=len(MASKED_LM_WORDS), pad_token_id=0, initializer_range=0.4)
    if arch == "bert":
        cfg = transformers.BertConfig(**sizes, **common, max_position_embeddings=max_position_embeddings or 512)
        cls = transformers.BertForMaskedLM
    elif arch == "roberta":  # positions start at pad + 1, derived from the pad token by default
        cfg = transformers.RobertaConfig(**sizes, **common, max_position_embeddings=max_position_embeddings or 514)
        cls = transformers.RobertaForMaskedLM
    elif arch == "distilbert":
        cfg = transformers.DistilBertConfig(dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                                            max_position_embeddings=max_position_embeddings or 512, **common)
        cls = transformers.DistilBertForMaskedLM
    elif arch == "modernbert":  # rotary positions, alternating global and 8-token sliding-window layers
        cfg = transformers.ModernBertConfig(**sizes, **common, max_position_embeddings=max_position_embeddings or 512,
                                            local_attention=8, global_attn_every_n_layers=2, cls_token_id=2,
                                            sep_token_id=3, bos_token_id=2, eos_token_id=3)
        cls = transformers.ModernBertForMaskedLM
    else:
        raise ValueError(f"no masked-LM example of architecture {arch!r}; valid: bert, roberta, distilbert, modernbert")
    from parallelbench.models.hf.loading import progress_bars

    with progress_bars(False), torch.random.fork_rng():  # no "Writing model shards" bar for a 0.1 MB file
        torch.manual_seed(seed)
        cls(cfg).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def write_example(folder: str | Path, family: str, *, seed: int = 0, shards: int = 1, dtype: Any = None,
                  with_mask_token: bool = True, **config_over: Any) -> Path:
    """A complete small checkpoint of `family` in `folder` (created); returns the folder.
    `config_over` replaces config fields (e.g. `n_layers=1`, `block_size=8`)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; valid: {', '.join(FAMILIES)}")
    folder = Path(folder)
    if family == "masked_lm":
        return write_masked_lm(folder, seed=seed, **config_over)
    folder.mkdir(parents=True, exist_ok=True)
    vocab = write_tokenizer(folder, family, with_mask=with_mask_token)
    cfg = config(family, **config_over)
    (folder / "config.json").write_text(json.dumps(cfg, indent=1))
    if family in ("sdar", "llada2"):
        ends = [vocab["<|im_end|>"], vocab["<|endoftext|>"]] if family == "sdar" else [vocab["<|endoftext|>"]]
        (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": ends, "pad_token_id": 0}))
    save_tensors(folder, random_tensors(published_shapes(family, cfg), seed, dtype), shards)
    return folder
