"""Tiny random-weight checkpoints in LLaDA's and Dream's published formats, written inside a test run.

Each folder holds what the hub checkpoints hold: config.json with the real field names and an
`auto_map` pointing at modeling/configuration/tokenizer `.py` files (here: files that raise
when imported, so running any of them fails the test), bf16 safetensors under the published
tensor names (optionally sharded with `model.safetensors.index.json`), and a small tokenizer
(tokenizer.json + tokenizer_config.json with the family's mask token and a chat template).

`reference_logits` recomputes the forward pass straight from the tensors by their published
names with explicit softmax attention: a second, independent reading of the format.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch

TRAP = ("import pathlib\npathlib.Path({marker!r}).write_text('executed')\n"
        "raise RuntimeError('checkpoint code imported: {name}')\n")
MARKER = "CODE_EXECUTED"
WORDS = ("user assistant system You are managing a waiting line . Copy the list : Susan Fox Philip Gray "
         "Anna Lee [ ] \" , the answer is A B C D 1 2 3 4 Who goes next ? Alice Bob").split()
TEMPLATE = ("{% for m in messages %}<|start|> {{ m['role'] }} {{ m['content'] }} <|eot|> {% endfor %}"
            "{% if add_generation_prompt %}<|start|> assistant {% endif %}")
FAMILY_TOKENS = {  # family -> (specials in id order, mask token, end-of-turn token, eos token)
    "llada": (["<|endoftext|>", "<|eot_id|>", "<|start|>", "<unk>", "<|mdm_mask|>"], "<|mdm_mask|>", "<|eot_id|>",
              "<|endoftext|>"),
    "dream": (["<|endoftext|>", "<|im_end|>", "<|start|>", "<unk>", "<|mask|>"], "<|mask|>", "<|im_end|>",
              "<|endoftext|>"),
    "lladamoe": (["<|endoftext|>", "<|role_end|>", "<|start|>", "<unk>", "<|mask|>"], "<|mask|>", "<|role_end|>",
                 "<|endoftext|>"),
}


def trap(folder: Path, name: str) -> str:
    """Source of a module that records its import in `folder/MARKER`, then raises."""
    return TRAP.format(marker=str(folder.resolve() / MARKER), name=name)


def code_ran(folder: Path) -> bool:
    return (folder / MARKER).exists()


def vocabulary(family: str) -> dict[str, int]:
    specials = FAMILY_TOKENS[family][0]
    return {t: i for i, t in enumerate(dict.fromkeys(specials + WORDS))}


def write_tokenizer(folder: Path, family: str, *, with_mask: bool = True) -> dict[str, int]:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from tokenizers import AddedToken

    specials, mask, eot, eos = FAMILY_TOKENS[family]
    vocab = vocabulary(family)
    if not with_mask:  # the mask id holds an ordinary word instead
        vocab = {("maskless" if t == mask else t): i for t, i in vocab.items()}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens([AddedToken(t, special=True) for t in specials if t in vocab])
    tok.save(str(folder / "tokenizer.json"))
    cfg = {"eos_token": eos, "pad_token": eos, "unk_token": "<unk>", "chat_template": TEMPLATE.replace("<|eot|>", eot),
           "model_max_length": 4096}
    if family == "dream":  # as published: a custom tokenizer class behind auto_map
        cfg.update({"tokenizer_class": "DreamTokenizer",
                    "auto_map": {"AutoTokenizer": ["tokenization_dream.DreamTokenizer", None]}})
        (folder / "tokenization_dream.py").write_text(trap(folder, "tokenization_dream"))
    else:
        cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    if with_mask:
        cfg["mask_token"] = mask
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg))
    return vocab


def llada_config(vocab: int, mask_id: int, **over) -> dict:
    cfg = {
        "activation_type": "silu", "alibi": False, "alibi_bias_max": 8.0, "architectures": ["LLaDAModelLM"],
        "attention_dropout": 0.0, "attention_layer_norm": False, "attention_layer_norm_with_affine": True,
        "auto_map": {"AutoConfig": "configuration_llada.LLaDAConfig", "AutoModel": "modeling_llada.LLaDAModelLM",
                     "AutoModelForCausalLM": "modeling_llada.LLaDAModelLM"},
        "bias_for_layer_norm": False, "block_group_size": 1, "block_type": "llama", "d_model": 32,
        "embedding_dropout": 0.0, "embedding_size": vocab + 3, "eos_token_id": 0, "flash_attention": False,
        "include_bias": False, "include_qkv_bias": False, "init_cutoff_factor": None, "init_device": "meta",
        "init_fn": "mitchell", "init_std": 0.02, "input_emb_norm": False, "layer_norm_type": "rms",
        "layer_norm_with_affine": True, "mask_token_id": mask_id, "max_sequence_length": 4096,
        "mlp_hidden_size": 48, "mlp_ratio": 4, "model_type": "llada", "multi_query_attention": None, "n_heads": 4,
        "n_kv_heads": 4, "n_layers": 2, "pad_token_id": 0, "precision": "amp_bf16", "residual_dropout": 0.0,
        "rms_norm_eps": 1e-05, "rope": True, "rope_full_precision": True, "rope_theta": 500000.0,
        "scale_logits": False, "transformers_version": "4.46.3", "use_cache": False, "vocab_size": vocab,
        "weight_tying": False,
    }
    cfg.update(over)
    return cfg


def dream_config(vocab: int, mask_id: int, **over) -> dict:
    cfg = {
        "architectures": ["DreamModel"], "attention_dropout": 0.0,
        "auto_map": {"AutoConfig": "configuration_dream.DreamConfig", "AutoModel": "modeling_dream.DreamModel"},
        "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "silu", "hidden_size": 32, "initializer_range": 0.02,
        "intermediate_size": 48, "mask_token_id": mask_id, "max_position_embeddings": 4096, "max_window_layers": 2,
        "model_type": "Dream", "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
        "pad_token_id": 0, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000.0,
        "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "transformers_version": "4.46.2", "use_cache": False, "use_sliding_window": False, "vocab_size": vocab,
    }
    cfg.update(over)
    return cfg


def published_shapes(family: str, cfg: dict) -> dict[str, tuple[int, ...]]:
    """Tensor name -> shape, as the published checkpoints lay them out."""
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
    d, h = cfg["hidden_size"], cfg["num_attention_heads"]
    kv = cfg["num_key_value_heads"] * (d // h)
    ffn, vocab = cfg["intermediate_size"], cfg["vocab_size"]
    out["model.embed_tokens.weight"] = (vocab, d)
    for i in range(cfg["num_hidden_layers"]):
        b = f"model.layers.{i}."
        out.update({b + "input_layernorm.weight": (d,), b + "post_attention_layernorm.weight": (d,),
                    b + "self_attn.q_proj.weight": (d, d), b + "self_attn.q_proj.bias": (d,),
                    b + "self_attn.k_proj.weight": (kv, d), b + "self_attn.k_proj.bias": (kv,),
                    b + "self_attn.v_proj.weight": (kv, d), b + "self_attn.v_proj.bias": (kv,),
                    b + "self_attn.o_proj.weight": (d, d), b + "mlp.gate_proj.weight": (ffn, d),
                    b + "mlp.up_proj.weight": (ffn, d), b + "mlp.down_proj.weight": (d, ffn)})
    out["model.norm.weight"] = (d,)
    if not cfg.get("tie_word_embeddings"):
        out["lm_head.weight"] = (vocab, d)
    return out


def write_checkpoint(folder: Path, family: str, *, seed: int = 0, shards: int = 1, dtype=torch.bfloat16,
                     with_mask_token: bool = True, **config_over) -> Path:
    """A complete tiny checkpoint of `family` in `folder`; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = write_tokenizer(folder, family, with_mask=with_mask_token)
    full_vocab = vocabulary(family)
    mask_id = full_vocab[FAMILY_TOKENS[family][1]]
    n = len(full_vocab)
    cfg = (llada_config if family == "llada" else dream_config)(n, mask_id, **config_over)
    (folder / "config.json").write_text(json.dumps(cfg, indent=1))
    for module in cfg.get("auto_map", {}).values():
        (folder / f"{module.split('.')[0]}.py").write_text(trap(folder, module))
    gen = torch.Generator().manual_seed(seed)
    tensors = {}
    for name, shape in published_shapes(family, cfg).items():
        if name.endswith("norm.weight") or name.endswith("ln_f.weight"):
            t = 1.0 + 0.1 * torch.randn(shape, generator=gen)
        else:
            t = torch.randn(shape, generator=gen) * (0.5 if name.endswith("bias") else 1.0 / math.sqrt(shape[-1]))
            if "embed" in name or "wte" in name:
                t = torch.randn(shape, generator=gen)
        tensors[name] = t.to(dtype).contiguous()
    save_tensors(folder, tensors, shards)
    return folder


def save_tensors(folder: Path, tensors: dict[str, torch.Tensor], shards: int) -> None:
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


# ---------------------------------------------------------------------- independent reference
def _read(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    out = {}
    for path in sorted(folder.glob("*.safetensors")):
        out.update({k: v.float() for k, v in load_file(str(path)).items()})
    return out


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return weight * x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)


def linear(w: dict[str, torch.Tensor], x: torch.Tensor, name: str) -> torch.Tensor:
    """x times the published tensor `name`.weight, plus `name`.bias when the checkpoint has one."""
    y = x @ w[name + ".weight"].T
    return y + w[name + ".bias"] if name + ".bias" in w else y


def random_tensors(shapes: dict[str, tuple[int, ...]], seed: int, dtype=torch.bfloat16) -> dict[str, torch.Tensor]:
    """Random weights by role: norms near 1, biases and expert biases small, embeddings unit scale,
    matrices scaled by 1/sqrt(fan-in) (the block-diffusion and MoE checkpoints' weights)."""
    gen = torch.Generator().manual_seed(seed)
    tensors = {}
    for name, shape in shapes.items():
        if name.endswith("norm.weight") or "layernorm" in name:
            t = 1.0 + 0.1 * torch.randn(shape, generator=gen)
        elif name.endswith("expert_bias"):
            t = 0.1 * torch.randn(shape, generator=gen)
        elif name.endswith("bias"):
            t = 0.5 * torch.randn(shape, generator=gen)
        elif "embed" in name:
            t = torch.randn(shape, generator=gen)
        else:
            t = torch.randn(shape, generator=gen) / math.sqrt(shape[-1])
        tensors[name] = t.to(dtype).contiguous()
    return tensors


def reference_logits(folder: Path, ids: torch.Tensor) -> torch.Tensor:
    """fp32 logits [L, V] of one unpadded row, computed from the published tensors directly
    (unshifted; Dream's engine-facing logits are these moved one position right)."""
    cfg = json.loads((folder / "config.json").read_text())
    w = _read(folder)
    llada = cfg["model_type"] == "llada"
    if llada:
        d, h, layers = cfg["d_model"], cfg["n_heads"], cfg["n_layers"]
        kvh, eps, theta = cfg["n_kv_heads"], cfg["rms_norm_eps"], cfg["rope_theta"]
        names = {"emb": "model.transformer.wte.weight", "norm": "model.transformer.ln_f.weight",
                 "head": "model.transformer.ff_out.weight"}
        blk = lambda i, n: f"model.transformer.blocks.{i}." + {  # noqa: E731
            "an": "attn_norm", "q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "attn_out", "fn": "ff_norm",
            "g": "ff_proj", "u": "up_proj", "dn": "ff_out"}[n]
    else:
        d, h, layers = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
        kvh, eps, theta = cfg["num_key_value_heads"], cfg["rms_norm_eps"], cfg["rope_theta"]
        names = {"emb": "model.embed_tokens.weight", "norm": "model.norm.weight", "head": "lm_head.weight"}
        blk = lambda i, n: f"model.layers.{i}." + {  # noqa: E731
            "an": "input_layernorm", "q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj",
            "o": "self_attn.o_proj", "fn": "post_attention_layernorm", "g": "mlp.gate_proj", "u": "mlp.up_proj",
            "dn": "mlp.down_proj"}[n]
    hd = d // h
    length = ids.shape[0]

    def rms(x, weight):
        return rms_norm(x, weight, eps)

    def lin(x, name):
        return linear(w, x, name)

    pos = torch.arange(length, dtype=torch.float64)
    inv = 1.0 / theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    ang = torch.outer(pos, inv)
    cos, sin = torch.cos(ang).float(), torch.sin(ang).float()

    def rope(x):  # x [heads, L, hd]; pairs (j, j + hd/2)
        a, b = x[..., : hd // 2], x[..., hd // 2:]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)

    x = w[names["emb"]][ids]
    for i in range(layers):
        y = rms(x, w[blk(i, "an") + ".weight"])
        q = lin(y, blk(i, "q")).view(length, h, hd).transpose(0, 1)
        k = lin(y, blk(i, "k")).view(length, kvh, hd).transpose(0, 1)
        v = lin(y, blk(i, "v")).view(length, kvh, hd).transpose(0, 1)
        q, k = rope(q), rope(k)
        k, v = k.repeat_interleave(h // kvh, 0), v.repeat_interleave(h // kvh, 0)
        att = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(hd), dim=-1) @ v  # bidirectional: no causal mask
        x = x + lin(att.transpose(0, 1).reshape(length, d), blk(i, "o"))
        y = rms(x, w[blk(i, "fn") + ".weight"])
        gate = lin(y, blk(i, "g"))
        x = x + lin(gate * torch.sigmoid(gate) * lin(y, blk(i, "u")), blk(i, "dn"))
    x = rms(x, w[names["norm"]])
    head = w.get(names["head"], w[names["emb"]])
    return x @ head.T
