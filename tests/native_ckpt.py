"""Tiny random-weight checkpoints in LLaDA's and Dream's published formats, written inside a test run.

The package's example builder (`parallelbench.models.hf.examples`, also behind `parallelbench
models example`) writes each folder as the hub checkpoints hold it: config.json with the real
field names and an `auto_map`, bf16 safetensors under the published tensor names (optionally
sharded with `model.safetensors.index.json`), and a small tokenizer (tokenizer.json +
tokenizer_config.json with the family's mask token and a chat template). Here the `auto_map`'s
modeling/configuration/tokenizer `.py` files are added as files that raise when imported, so
running any of them fails the test.

`reference_logits` recomputes the forward pass straight from the tensors by their published
names with explicit softmax attention: a second, independent reading of the format.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch

from parallelbench.models.hf import examples
from parallelbench.models.hf.examples import WORDS, vocabulary  # noqa: F401  (the tests' vocabulary)

TRAP = ("import pathlib\npathlib.Path({marker!r}).write_text('executed')\n"
        "raise RuntimeError('checkpoint code imported: {name}')\n")
MARKER = "CODE_EXECUTED"


def trap(folder: Path, name: str) -> str:
    """Source of a module that records its import in `folder/MARKER`, then raises."""
    return TRAP.format(marker=str(folder.resolve() / MARKER), name=name)


def code_ran(folder: Path) -> bool:
    return (folder / MARKER).exists()


def add_traps(folder: Path) -> Path:
    """Every `.py` file the config's and the tokenizer config's `auto_map` name, as a trap."""
    modules = list(json.loads((folder / "config.json").read_text()).get("auto_map", {}).values())
    tok = json.loads((folder / "tokenizer_config.json").read_text()).get("auto_map", {})
    modules += [m for v in tok.values() for m in (v if isinstance(v, list) else [v]) if m]
    for module in modules:
        (folder / f"{module.split('.')[0]}.py").write_text(trap(folder, module))
    return folder


def write_checkpoint(folder: Path, family: str, *, seed: int = 0, shards: int = 1, dtype=torch.bfloat16,
                     with_mask_token: bool = True, **config_over) -> Path:
    """A complete tiny checkpoint of `family` in `folder` (the package's example), with traps; returns the folder."""
    examples.write_example(folder, family, seed=seed, shards=shards, dtype=dtype, with_mask_token=with_mask_token,
                           **config_over)
    return add_traps(folder)


# ---------------------------------------------------------------------- independent reference
def _read(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    out = {}
    for path in sorted(folder.glob("*.safetensors")):
        out.update({k: v.float() for k, v in load_file(str(path)).items()})
    return out


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
        return weight * x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)

    def lin(x, name):
        y = x @ w[name + ".weight"].T
        return y + w[name + ".bias"] if name + ".bias" in w else y

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
