"""Compare the native SDAR / TraDo and LLaDA 2.x (MoE) implementations with the official code.

The official code needs transformers 4.52 (SDAR) and 4.57 (LLaDA 2); SDAR's also imports
flash-attn's CUDA/Triton kernels and a Triton loss. It runs in scratch virtual environments, in
subprocesses:

  (a) a driver script, written by this tool and run with a scratch venv's python, builds tiny
      random-weight checkpoints with the OFFICIAL model and config classes (loaded from the
      official files as a hub user's transformers loads them) in the published format: config.json
      with auto_map, sharded bf16 safetensors, generation_config.json, a byte-level tokenizer with
      the family's mask and end tokens. SDAR's flash-attn imports get exact PyTorch stand-ins
      written by the driver (`rms_norm_fn`: RMSNorm in float32 with the weight applied before the
      cast; `flash_attn_func`: non-causal softmax attention), and its training-only Triton loss
      module a stand-in that raises when used. It records, in fp32 and bf16, the official logits
      of random canvases under the block-causal mask (each canvas alone), and the tokens and
      denoising-call counts of the official decoding routines at greedy settings: SDAR's
      `block_diffusion_generate` with only its sampling helper swapped for argmax with
      softmax-probability confidence (its own temperature 0 gives NaN, top_k=1 makes every
      confidence 1.0), and LLaDA 2's `generate(temperature=0.0)`;
  (b) here, the checkpoints' `.py` files are replaced with files that raise on import, and
      `load_model("hf:<dir>", device="cpu", dtype=...)` is compared with the references: each
      canvas alone under the block-causal bias, the same canvases in one left-padded batch (each
      row on its own block grid), bf16 loads (against the official code's own bf16 run: MoE
      routing may flip under bf16), `cache=block` against `cache=none`, and, when the engine has
      block-causal decoding, engine decodes with the documented parameter mapping, batched and
      each prompt alone: tokens and denoising-call counts.

Setup (once; keep the official files outside the repository):

    python3.11 -m venv /tmp/native-tf452 && /tmp/native-tf452/bin/pip install torch==2.13.0 \\
        transformers==4.52.4 einops safetensors numpy tokenizers accelerate
    python3.11 -m venv /tmp/native-tf457 && /tmp/native-tf457/bin/pip install torch==2.13.0 \\
        transformers==4.57.1 safetensors numpy tokenizers accelerate
    # DIR/sdar/: modeling_sdar.py, configuration_sdar.py (JetAstra/SDAR training/model/SDAR-4B-Chat/)
    #            and generate.py (JetAstra/SDAR, repository root)
    # DIR/llada2/: modeling_llada2_moe.py, configuration_llada2_moe.py (an LLaDA2.0-mini checkpoint's
    #            files, e.g. the copy in ZHZisZZ/dllm dllm/pipelines/llada2/models/)

Run:

    PYTHONPATH=src python benchmarks/verify_block_native.py --official DIR \\
        --sdar-python /tmp/native-tf452/bin/python --llada2-python /tmp/native-tf457/bin/python [--quick]

(or set PARALLELBENCH_BLOCK_OFFICIAL_CODE, PARALLELBENCH_SDAR_VENV, PARALLELBENCH_LLADA2_VENV).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _verify_common as common  # noqa: E402

OFFICIAL_FILES = {
    "sdar": ("sdar/modeling_sdar.py", "sdar/configuration_sdar.py", "sdar/generate.py"),
    "llada2": ("llada2/modeling_llada2_moe.py", "llada2/configuration_llada2_moe.py"),
}
RAISING_PY = 'raise ImportError("verify_block_native: this checkpoint\'s own code must not be imported")\n'

# ----------------------------------------------------------------------------------------------
# The driver: runs in a scratch venv and imports the official modules from the --official DIR.
# It is this project's own code (the stand-ins included); no official code is copied into it.
# ----------------------------------------------------------------------------------------------
# exact PyTorch stand-ins for the flash-attn kernels and the Triton loss SDAR's modeling file imports
# (needs `out`, a Path, and `sys` in scope; also used by bench_gpu_table.py's official SDAR run)
FLASH_ATTN_STANDINS = r'''
# ---- exact PyTorch stand-ins for the flash-attn kernels SDAR's modeling file imports ----------
stub = out / "standins"
(stub / "flash_attn" / "ops" / "triton").mkdir(parents=True, exist_ok=True)
(stub / "flash_attn" / "__init__.py").write_text(
    "import torch\n"
    "import torch.nn.functional as F\n"
    "def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, **kw):\n"
    "    # [b, l, h, d] layout; grouped kv heads; softmax in float32 like the kernel\n"
    "    q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)\n"
    "    rep = q.shape[1] // k.shape[1]\n"
    "    k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)\n"
    "    s = (q.float() @ k.float().transpose(-1, -2)) * softmax_scale\n"
    "    if causal:\n"
    "        raise NotImplementedError('stand-in: causal flash attention is not used at inference')\n"
    "    o = torch.softmax(s, dim=-1) @ v.float()\n"
    "    return o.to(q.dtype).transpose(1, 2)\n"
    "def flash_attn_varlen_func(*a, **kw):\n"
    "    raise NotImplementedError('stand-in: varlen flash attention is used in training only')\n")
(stub / "flash_attn" / "ops" / "__init__.py").write_text("")
(stub / "flash_attn" / "ops" / "triton" / "__init__.py").write_text("")
(stub / "flash_attn" / "ops" / "triton" / "layer_norm.py").write_text(
    "import torch\n"
    "def rms_norm_fn(x, weight, bias=None, eps=1e-6, **kw):\n"
    "    # the fused kernel: normalise and scale in float32, one cast to the input dtype\n"
    "    y = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps) * weight.float()\n"
    "    if bias is not None:\n"
    "        y = y + bias.float()\n"
    "    return y.to(x.dtype)\n")
(stub / "flash_attn" / "bert_padding.py").write_text(
    "def index_first_axis(*a, **k): raise NotImplementedError\n"
    "def pad_input(*a, **k): raise NotImplementedError\n"
    "def unpad_input(*a, **k): raise NotImplementedError\n")
LOSS_STANDIN = ("class FusedLinearDiffusionCrossEntropyLoss:\n"
                "    def __init__(self, *a, **k):\n"
                "        raise NotImplementedError('stand-in: the Triton training loss is not used at inference')\n")
sys.path.insert(0, str(stub))
'''

DRIVER = r'''
import json, math, shutil, sys, types
from pathlib import Path

import torch
import torch.nn.functional as F

spec = json.loads(Path(sys.argv[1]).read_text())
family = spec["family"]
official = Path(spec["official"]) / family
out = Path(spec["out"])
torch.manual_seed(spec["seed"])

''' + FLASH_ATTN_STANDINS + r'''
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import AutoModelForCausalLM
from transformers.dynamic_module_utils import get_class_from_dynamic_module


def byte_tokenizer(specials):
    """256 byte tokens (GPT-2 byte-to-unicode alphabet) then the special tokens, in order."""
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    tok = Tokenizer(models.BPE(vocab={table[b]: b for b in range(256)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(list(specials))
    return tok


def write_tokenizer(folder, specials, roles, template):
    tok = byte_tokenizer(specials)
    tok.save(str(folder / "tokenizer.json"))
    ids = {s: tok.token_to_id(s) for s in specials}
    cfg = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 4096, "chat_template": template,
           "clean_up_tokenization_spaces": False, **roles}
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2))
    (folder / "special_tokens_map.json").write_text(json.dumps(roles, indent=2))
    return ids


def randomise(model, head_name, mask_row):
    """Unit-scale activations, peaked logits, non-trivial norms and biases; the head row of the mask
    token zeroed so that (as in trained checkpoints) the mask is never the argmax."""
    gen = torch.Generator().manual_seed(spec["seed"] + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            elif name.endswith("bias"):
                p.copy_(0.2 * torch.randn(p.shape, generator=gen))
            elif name.endswith(head_name):
                p.copy_(spec["logit_scale"] * torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[1]))
                p[mask_row] = 0.0
            elif "embed" in name:
                p.copy_(torch.randn(p.shape, generator=gen))
            else:
                gain = spec["qk_gain"] if any(k in name for k in ("q_proj", "k_proj", "query_key_value")) else 1.0
                p.copy_(gain * torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[1]))
        for name, b in model.named_buffers():
            if name.endswith("expert_bias"):
                b.copy_(0.1 * torch.randn(b.shape, generator=gen))


SDAR_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|MASK|>"]
SDAR_TEMPLATE = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content']"
                 " + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}"
                 "{{ '<|im_start|>assistant\n' }}{% endif %}")
LLADA2_SPECIALS = ["<|startoftext|>", "<|endoftext|>", "<role>", "</role>", "<|mask|>"]
LLADA2_TEMPLATE = ("{% for message in messages %}{{ '<role>' + message['role'] | upper + '</role>' + "
                   "message['content'] }}{% endfor %}{% if add_generation_prompt %}{{ '<role>ASSISTANT</role>' }}"
                   "{% endif %}")


def build(name, shape):
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    if family == "sdar":
        ids = write_tokenizer(folder, SDAR_SPECIALS, {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                                                      "mask_token": "<|MASK|>"}, SDAR_TEMPLATE)
        for f in ("modeling_sdar.py", "configuration_sdar.py"):
            shutil.copy(official / f, folder / f)
        (folder / "fused_linear_diffusion_cross_entropy.py").write_text(LOSS_STANDIN)
        Config = get_class_from_dynamic_module("configuration_sdar.SDARConfig", str(folder))
        Model = get_class_from_dynamic_module("modeling_sdar.SDARForCausalLM", str(folder))
        config = Config(
            vocab_size=shape["vocab_size"], hidden_size=shape["hidden_size"],
            intermediate_size=shape["intermediate_size"], num_hidden_layers=shape["num_hidden_layers"],
            num_attention_heads=shape["num_attention_heads"], num_key_value_heads=shape["num_key_value_heads"],
            head_dim=shape["head_dim"], hidden_act="silu", max_position_embeddings=4096, rms_norm_eps=1e-6,
            tie_word_embeddings=shape["tie_word_embeddings"], rope_theta=shape["rope_theta"], rope_scaling=None,
            attention_bias=shape.get("attention_bias", False), use_sliding_window=False, sliding_window=None,
            max_window_layers=shape["num_hidden_layers"], attention_dropout=0.0,
            bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|endoftext|>"],
            pad_token_id=ids["<|endoftext|>"], mask_token_id=ids["<|MASK|>"], block_size=shape["block_size"],
            architectures=["SDARForCausalLM"], torch_dtype="bfloat16", fuse_cross_entropy=True, micro_forward=False,
            skip_checkpoint=False, use_deepep=False, ep_size=1, debug=False)
        model = Model(config)
        randomise(model, "lm_head.weight" if not shape["tie_word_embeddings"] else "embed_tokens.weight",
                  ids["<|MASK|>"])
        auto_map = {"AutoConfig": "configuration_sdar.SDARConfig", "AutoModel": "modeling_sdar.SDARModel",
                    "AutoModelForCausalLM": "modeling_sdar.SDARForCausalLM"}
        gen_eos = [ids["<|im_end|>"], ids["<|endoftext|>"]]
        mask_id = ids["<|MASK|>"]
    else:
        ids = write_tokenizer(folder, LLADA2_SPECIALS, {"bos_token": "<|startoftext|>", "eos_token": "<|endoftext|>",
                                                        "pad_token": "<|endoftext|>", "mask_token": "<|mask|>"},
                              LLADA2_TEMPLATE)
        for f in ("modeling_llada2_moe.py", "configuration_llada2_moe.py"):
            shutil.copy(official / f, folder / f)
        Config = get_class_from_dynamic_module("configuration_llada2_moe.LLaDA2MoeConfig", str(folder))
        Model = get_class_from_dynamic_module("modeling_llada2_moe.LLaDA2MoeModelLM", str(folder))
        config = Config(
            vocab_size=shape["vocab_size"], hidden_size=shape["hidden_size"],
            intermediate_size=shape["intermediate_size"], num_hidden_layers=shape["num_hidden_layers"],
            num_attention_heads=shape["num_attention_heads"], num_key_value_heads=shape["num_key_value_heads"],
            head_dim=shape["head_dim"], hidden_act="silu", use_qkv_bias=shape.get("use_qkv_bias", False),
            use_qk_norm=True, use_bias=shape.get("use_bias", False), rms_norm_eps=1e-6, norm_head=False,
            tie_word_embeddings=False, embedding_dropout=0.0, attention_dropout=0.0, output_dropout=0.0,
            max_position_embeddings=4096, rope_theta=shape["rope_theta"], use_cache=False,
            use_sliding_window=False, rope_scaling=None, pad_token_id=ids["<|endoftext|>"],
            num_experts=shape["num_experts"], num_shared_experts=shape["num_shared_experts"],
            num_experts_per_tok=shape["num_experts_per_tok"], n_group=shape["n_group"],
            topk_group=shape["topk_group"], routed_scaling_factor=shape["routed_scaling_factor"],
            moe_intermediate_size=shape["moe_intermediate_size"],
            first_k_dense_replace=shape["first_k_dense_replace"], partial_rotary_factor=0.5,
            score_function="sigmoid", norm_topk_prob=True, router_dtype="fp32", moe_router_enable_expert_bias=True,
            eos_token_id=ids["<|endoftext|>"], architectures=["LLaDA2MoeModelLM"], torch_dtype="bfloat16")
        model = Model(config)
        randomise(model, "lm_head.weight", ids["<|mask|>"])
        auto_map = {"AutoConfig": "configuration_llada2_moe.LLaDA2MoeConfig",
                    "AutoModel": "modeling_llada2_moe.LLaDA2MoeModel",
                    "AutoModelForCausalLM": "modeling_llada2_moe.LLaDA2MoeModelLM"}
        gen_eos = [ids["<|endoftext|>"]]
        mask_id = ids["<|mask|>"]
    model.to(torch.bfloat16).save_pretrained(folder, safe_serialization=True, max_shard_size=shape["shard"])
    cfg = json.loads((folder / "config.json").read_text())
    cfg["auto_map"] = auto_map
    (folder / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True))
    (folder / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": ids["<|endoftext|>"], "eos_token_id": gen_eos, "pad_token_id": ids["<|endoftext|>"]}))
    return folder, cfg, ids, mask_id, gen_eos


def load_official(folder, dtype):
    return AutoModelForCausalLM.from_pretrained(str(folder), trust_remote_code=True, torch_dtype=dtype).eval()


def block_mask(length, block):
    blocks = torch.arange(length) // block
    return blocks[None, :] <= blocks[:, None]  # [q, k]


def official_logits(model, ids, block):
    """The official forward of one row under the block-causal mask, as the official routines call it."""
    n = ids.shape[0]
    allowed = block_mask(n, block)
    pos = torch.arange(n)[None]
    if family == "sdar":
        return model(ids[None], attention_mask=allowed[None], position_ids=pos).logits[0].float()
    # generate()'s own mask (0 / -inf), in the model's dtype: generate() builds it in bf16, which SDPA
    # refuses beside float32 queries; 0 and -inf are the same numbers in either dtype
    bias = allowed.float().log().to(model.dtype)[None, None]
    return model(ids[None], attention_mask=bias, position_ids=pos).logits[0].float()


def canvases(vocab, mask_id, lengths, seed):
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for n in lengths:
        ids = torch.randint(0, vocab - 1, (n,), generator=gen)
        ids = ids + (ids >= mask_id).long()
        masked = torch.rand(n, generator=gen) < 0.5
        rows.append(torch.where(masked, torch.full_like(ids, mask_id), ids))
    return rows


class CallCounter:
    """Counts forward calls (SDAR: denoising calls are those without store_kv) and masked argmax hits."""

    def __init__(self, model, mask_id):
        self.model, self.mask_id = model, mask_id
        self.denoise = self.store = self.hits = 0
        self.inner = model.forward
        model.forward = self

    def __call__(self, *args, **kwargs):
        mask = kwargs.get("attention_mask")
        if mask is not None and mask.is_floating_point() and mask.dtype != self.model.dtype:
            # LLaDA 2's generate() builds its 0 / -inf mask in bf16; SDPA refuses it beside float32
            # queries. Same numbers in the model's dtype: the only change made to the official run.
            kwargs["attention_mask"] = mask.to(self.model.dtype)
        result = self.inner(*args, **kwargs)
        if kwargs.get("store_kv"):
            self.store += 1
        else:
            self.denoise += 1
            ids = args[0] if args else kwargs.get("input_ids")
            hit = (result.logits.argmax(-1) == self.mask_id) & (ids == self.mask_id)
            self.hits += int(hit.sum())
        return result

    def reset(self):
        self.denoise = self.store = 0

    def remove(self):
        self.model.forward = self.inner


class TopkWatch(types.ModuleType):
    """`torch` as SDAR's generate.py sees it, except that `topk` counts the picks it makes among
    -inf confidences: the official loop then writes its argmax over a position that is not masked
    (a prompt token or an earlier commit) when a block has fewer masks left than the step's quota."""

    def __init__(self):
        super().__init__("torch")
        self.rewrites = 0

    def __getattr__(self, name):
        return getattr(torch, name)

    def topk(self, x, k, *args, **kwargs):
        out = torch.topk(x, k, *args, **kwargs)
        self.rewrites += int(torch.isinf(out.values).sum())
        return out


def greedy(logits, temperature=1.0, top_k=0, top_p=1.0):
    """The only change to SDAR's generate.py: argmax, confidence = its softmax probability."""
    probs = torch.softmax(logits.float(), dim=-1)
    conf, token = probs.max(dim=-1)
    return token, conf


results = {"family": family, "checkpoints": {}}
tensors = {}
with torch.no_grad():
    for name, shape in spec["checkpoints"].items():
        folder, cfg, ids, mask_id, gen_eos = build(name, shape)
        block = shape["block_size"] if family == "sdar" else spec["logit_block"]
        rows = canvases(shape["vocab_size"], mask_id, spec["lengths"], spec["seed"] + 7)
        entry = {"folder": str(folder), "mask_id": mask_id, "ids": ids, "lengths": spec["lengths"],
                 "block": block, "end_ids": gen_eos}
        for i, r in enumerate(rows):
            tensors[f"{name}/canvas/{i}"] = r
        gen = torch.Generator().manual_seed(spec["seed"] + 11)
        prompts = []
        for n in spec["prompt_lengths"]:
            p = torch.randint(0, shape["vocab_size"] - 1, (n,), generator=gen)
            prompts.append((p + (p >= mask_id).long()).tolist())
        entry["prompts"] = prompts
        for dtype_name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
            model = load_official(folder, dtype)
            entry["official_class"] = type(model).__module__ + "." + type(model).__name__
            for i, r in enumerate(rows):
                tensors[f"{name}/{dtype_name}/alone/{i}"] = official_logits(model, r, block)
            if dtype_name != "float32":
                continue
            counter = CallCounter(model, mask_id)
            runs = []
            if family == "sdar":
                sys.path.insert(0, str(official))
                import generate as sdar_generate
                sys.path.pop(0)
                sdar_generate.sample_with_temperature_topk_topp = greedy
                watch = TopkWatch()
                sdar_generate.torch = watch
                for block_length, steps, rule, threshold, gen_length, stop in spec["settings"]:
                    outs, nfes, rewrites = [], [], []
                    for p in prompts:
                        counter.reset()
                        watch.rewrites = 0
                        # stop on the tokenizer's EOS (the net's eos_id), as the engine's stop_at_eos does
                        x = sdar_generate.block_diffusion_generate(
                            model, {"input_ids": torch.tensor([p])}, mask_id, gen_length=gen_length,
                            block_length=block_length, denoising_steps=steps, temperature=1.0,
                            remasking_strategy=rule, confidence_threshold=threshold,
                            stopping_criteria_idx=[ids["<|im_end|>"]] if stop else None)
                        outs.append(x[0, len(p):len(p) + gen_length].tolist())
                        nfes.append(counter.denoise)
                        rewrites.append(watch.rewrites)
                    runs.append({"block_length": block_length, "steps": steps, "rule": rule, "threshold": threshold,
                                 "gen_length": gen_length, "stop": stop, "tokens": outs, "nfe": nfes,
                                 "rewrites": rewrites})
            else:
                for block_length, steps, threshold, gen_length in spec["settings"]:
                    outs, nfes = [], []
                    for p in prompts:
                        counter.reset()
                        x = model.generate(torch.tensor([p]), temperature=0.0, block_length=block_length,
                                           steps=steps, gen_length=gen_length, threshold=threshold,
                                           eos_id=ids["<|endoftext|>"], mask_id=mask_id)
                        outs.append(x[0].tolist())
                        nfes.append(counter.denoise)
                    runs.append({"block_length": block_length, "steps": steps, "threshold": threshold,
                                 "gen_length": gen_length, "tokens": outs, "nfe": nfes})
            entry["generate"] = {"runs": runs, "mask_argmax_hits": counter.hits}
            counter.remove()
            del model
        results["checkpoints"][name] = entry

import transformers
results["versions"] = {"torch": torch.__version__, "transformers": transformers.__version__,
                       "python": sys.version.split()[0]}
torch.save(tensors, out / "reference.pt")
(out / "reference.json").write_text(json.dumps(results, indent=2))
print("driver: wrote", len(tensors), "tensors for", ", ".join(results["checkpoints"]))
'''


# ----------------------------------------------------------------------------------------------
# What to build and compare
# ----------------------------------------------------------------------------------------------
def make_spec(family: str, quick: bool, seed: int) -> dict[str, Any]:
    if family == "sdar":
        base = {"vocab_size": 272, "hidden_size": 48, "intermediate_size": 96, "num_hidden_layers": 2,
                "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "rope_theta": 1000000.0,
                "tie_word_embeddings": False, "block_size": 4, "shard": "40KB"}
        checkpoints = {"sdar": base}
        if not quick:
            checkpoints["sdar-tied-bias"] = {**base, "tie_word_embeddings": True, "attention_bias": True,
                                             "num_hidden_layers": 3, "num_key_value_heads": 1, "head_dim": 8,
                                             "block_size": 8, "rope_theta": 10000.0, "shard": "10GB"}
        # (block_length, denoising_steps, remasking_strategy, confidence_threshold, gen_length, stop at end ids)
        settings = [[4, 4, "low_confidence_static", 0.9, 16, False], [4, 2, "low_confidence_static", 0.9, 16, False],
                    [4, 4, "low_confidence_dynamic", 0.5, 16, False], [8, 4, "low_confidence_dynamic", 0.6, 16, True]]
        if not quick:
            settings += [[8, 8, "low_confidence_static", 0.9, 24, False], [4, 1, "low_confidence_static", 0.9, 20, False],
                         [8, 2, "low_confidence_dynamic", 0.3, 24, True], [4, 4, "low_confidence_dynamic", 0.9, 20, True]]
    else:
        base = {"vocab_size": 272, "hidden_size": 48, "intermediate_size": 96, "num_hidden_layers": 3,
                "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "rope_theta": 600000.0,
                "num_experts": 16, "num_shared_experts": 1, "num_experts_per_tok": 4, "n_group": 4,
                "topk_group": 2, "routed_scaling_factor": 2.5, "moe_intermediate_size": 24,
                "first_k_dense_replace": 1, "block_size": None, "shard": "40KB"}
        checkpoints = {"llada2": base}
        if not quick:
            checkpoints["llada2-biases-all-moe"] = {**base, "use_qkv_bias": True, "use_bias": True,
                                                    "first_k_dense_replace": 0, "num_key_value_heads": 4,
                                                    "n_group": 2, "topk_group": 1, "shard": "10GB"}
        # (block_length, steps, threshold, gen_length)
        settings = [[8, 8, 0.95, 16], [8, 4, 0.95, 16], [4, 4, 0.6, 16]]
        if not quick:
            settings += [[16, 16, 0.95, 32], [8, 2, 0.5, 24], [8, 8, 0.3, 24]]
    return {"family": family, "seed": seed, "checkpoints": checkpoints, "settings": settings,
            "lengths": [24, 17, 9] if quick else [40, 33, 21, 12, 5],
            # prompts ending inside a block (5, 13: SDAR's k > 1 steps then rewrite committed tokens, see
            # compare_generate) and on a block boundary (8, 16)
            "prompt_lengths": [5, 8] if quick else [3, 8, 13, 16, 21],
            "logit_block": 8, "logit_scale": 4.0, "qk_gain": 2.5}


def official_dir_problem(folder: Path, families: list[str]) -> str | None:
    missing = [rel for fam in families for rel in OFFICIAL_FILES[fam] if not (folder / rel).is_file()]
    if missing:
        return f"--official {folder} lacks {', '.join(missing)} (see --help for the layout)"
    return None


def run_driver(python: str, official: Path, work: Path, spec: dict[str, Any]) -> dict[str, Any]:
    return common.run_driver(python, official, work, spec, DRIVER,
                             {"TORCHDYNAMO_DISABLE": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1",
                                 "HF_MODULES_CACHE": str(work / "hf_modules")})


# ----------------------------------------------------------------------------------------------
# Step (b): our side
# ----------------------------------------------------------------------------------------------
Row = common.Row


def Report(**kwargs: Any) -> common.Report:
    return common.Report(widths=(22, 66), **kwargs)


def poison_code(folder: Path) -> list[str]:
    return common.poison_code(folder, RAISING_PY)


def _diff(a: Any, b: Any) -> float:
    a, b = a.float(), b.float()
    n = min(a.shape[-1], b.shape[-1])
    return float((a[..., :n] - b[..., :n]).abs().max()) if a.numel() else 0.0


def block_bias(lengths: list[int], width: int, block: int) -> tuple[Any, Any, Any]:
    """(attention_mask, position_ids, attention_bias) of a left-padded batch, each row on its own grid:
    query i sees key j iff j is real and block(j) <= block(i), positions from the row's first token."""
    import torch

    b = len(lengths)
    mask = torch.zeros((b, width), dtype=torch.bool)
    for i, n in enumerate(lengths):
        mask[i, width - n:] = True
    pos = (mask.long().cumsum(-1) - 1).clamp(min=0)
    blk = pos // block
    allowed = mask[:, None, :] & mask[:, :, None] & (blk[:, None, :] <= blk[:, :, None])
    allowed |= torch.eye(width, dtype=torch.bool)[None] & ~mask[:, :, None]  # pad queries see themselves
    bias = torch.zeros((b, width, width)).masked_fill(~allowed, float("-inf"))
    return mask, pos, bias


def compare_logits(name: str, entry: dict[str, Any], tensors: dict[str, Any], report: Report,
                   fp32_limit: float) -> None:
    import torch

    from parallelbench.models.registry import load_model

    folder, block = entry["folder"], entry["block"]
    n = len(entry["lengths"])
    rows = [tensors[f"{name}/canvas/{i}"] for i in range(n)]
    # bf16: within twice what bf16 rounding costs the official code itself (its bf16 vs its fp32
    # logits): the two bf16 runs round at different places (fused norms, attention kernels), and a
    # MoE may route a token differently under bf16 in either
    own_bf16 = max(_diff(tensors[f"{name}/bfloat16/alone/{i}"], tensors[f"{name}/float32/alone/{i}"])
                   for i in range(n))
    bf16_limit = 2 * own_bf16
    for dtype_name, limit in (("float32", fp32_limit), ("bfloat16", bf16_limit)):
        net = load_model(f"hf:{folder}", device="cpu", dtype=dtype_name).net
        refs = [tensors[f"{name}/{dtype_name}/alone/{i}"] for i in range(n)]
        with torch.no_grad():
            alone = []
            for r in rows:
                _, pos, bias = block_bias([len(r)], len(r), block)
                alone.append(net.forward(r[None], position_ids=pos, attention_bias=bias)[0].float())
            width = max(len(r) for r in rows)
            mask, pos, bias = block_bias([len(r) for r in rows], width, block)
            canvas = torch.full((n, width), int(net.pad_id), dtype=torch.long)
            for i, r in enumerate(rows):
                canvas[i, width - len(r):] = r
            padded = net.forward(canvas, attention_mask=mask, position_ids=pos, attention_bias=bias).float()
        tag = "fp32" if dtype_name == "float32" else "bf16"
        worst_alone = max(_diff(a, ref) for a, ref in zip(alone, refs))
        worst_padded = max(_diff(padded[i, width - len(r):], refs[i]) for i, r in enumerate(rows))
        report.rows.append(Row(name, f"{tag} logits, block-causal, each canvas alone vs official", worst_alone, limit))
        report.rows.append(Row(name, f"{tag} logits, block-causal, left-padded batch vs official alone",
                               worst_padded, limit))
        if dtype_name == "bfloat16":
            report.rows.append(Row(name, "bf16 official vs fp32 official (half the bf16 limit)", own_bf16))
            fp32_refs = [tensors[f"{name}/float32/alone/{i}"] for i in range(n)]
            report.rows.append(Row(name, "bf16 ours vs fp32 official (context)",
                                   max(_diff(a, ref) for a, ref in zip(alone, fp32_refs))))
            flips = sum(int((a.argmax(-1) != ref.argmax(-1)).sum()) for a, ref in zip(alone, refs))
            report.rows.append(Row(name, "bf16 argmax differences vs official bf16 (info)",
                                   f"{flips}/{sum(len(r) for r in rows)}"))
    # cache=block against cache=none: finished blocks cached, the last block through the window
    net = load_model(f"hf:{folder}", device="cpu", dtype="float32", cache="block").net
    worst = 0.0
    with torch.no_grad():
        for r in rows:
            length = len(r)
            _, pos, bias = block_bias([length], length, block)
            full = net.forward(r[None], position_ids=pos, attention_bias=bias)[0]
            start = (length - 1) // block * block
            kv = net.new_kv_cache(1, length)
            rows_ix = torch.tensor([0])
            if start:
                net.forward_cached(r[None, :start], kv=kv, rows=rows_ix, start=0, position_ids=pos[:, :start],
                                   attention_bias=bias[:, :start, :start], store=torch.ones(1, start, dtype=torch.bool))
            win = net.forward_cached(r[None, start:], kv=kv, rows=rows_ix, start=start, position_ids=pos[:, start:],
                                     attention_bias=bias[:, start:, :], store=None)[0]
            worst = max(worst, _diff(win, full[start:]))
    report.rows.append(Row(name, "fp32 cache=block window vs cache=none logits (last block)", worst, fp32_limit))


def engine_has_block_causal() -> bool:
    """Whether this tree's decode() drives block-causal nets (the engine side of issue 27)."""
    try:
        import parallelbench.models.protocols as protocols
    except ImportError:
        return False
    return hasattr(protocols, "BlockCausalModel")


def _strategy(family: str, run: dict[str, Any]) -> Any:
    """The documented mapping of the official routine's settings to a strategy (docs/models.md)."""
    from parallelbench.decoding import build_strategy

    b, s = run["block_length"], run["steps"]
    stop = family == "llada2" or bool(run.get("stop"))  # LLaDA 2's generate() always stops after the EOS block
    if family == "sdar" and run["rule"] == "low_confidence_static":
        return build_strategy("confidence-topk", k=b // s, block_length=b, temperature=0.0, stop_at_eos=stop)
    extra = {"min_k": b // s} if s < b else {}
    return build_strategy("confidence-threshold", threshold=run["threshold"], block_length=b, temperature=0.0,
                          stop_at_eos=stop, **extra)


def _upto_stop(tokens: list[int], stops: set[int]) -> list[int]:
    out = []
    for t in tokens:
        out.append(t)
        if t in stops:
            break
    return out


def compare_generate(family: str, name: str, entry: dict[str, Any], report: Report) -> None:
    from parallelbench.decoding import decode
    from parallelbench.models.registry import load_model

    gen = entry["generate"]
    prompts = entry["prompts"]
    report.rows.append(Row(name, "official argmax == mask id at masked positions", gen["mask_argmax_hits"], 0.0,
                           note="must be 0 for an exact token comparison"))
    if not engine_has_block_causal():
        report.notes.append(f"{name}: token comparison skipped: this tree's decode() has no block-causal decoding")
        return
    stops = {int(load_model(f"hf:{entry['folder']}", device="cpu").net.eos_id)}  # what stop_at_eos watches
    for cache in ("none", "block"):
        net = load_model(f"hf:{entry['folder']}", device="cpu", dtype="float32", cache=cache).net
        for run in gen["runs"]:
            strategy = _strategy(family, run)
            label = ", ".join(f"{k}={run[k]}" for k in ("block_length", "steps", "rule", "threshold", "gen_length")
                              if k in run)
            if net.block_size and run["block_length"] % net.block_size:
                # the official loop runs any block length; decode() refuses one off the trained grid
                try:
                    decode(net, prompts[:1], gen_length=run["gen_length"], strategy=strategy)
                    refused = "NOT refused"
                except ValueError:
                    refused = "refused in one line"
                row = Row(name, f"cache={cache}: block_length off the trained block size {net.block_size} ({label})",
                          refused)
                if refused != "refused in one line":
                    row.limit = 0.0
                report.rows.append(row)
                continue
            stop_early = family == "llada2" or run.get("stop")
            batched = decode(net, prompts, gen_length=run["gen_length"], strategy=strategy)
            alone = [decode(net, [p], gen_length=run["gen_length"], strategy=strategy)[0] for p in prompts]
            # rows where SDAR's loop wrote over non-masked positions (a block with fewer masks left than
            # the step's quota: its topk then picks -inf confidences) are not comparable: we never
            # rewrite a prompt token or a commit of a plain top-k / threshold strategy
            skip = [i for i, n in enumerate(run.get("rewrites", [0] * len(prompts))) if n]
            for how, results in (("batched", batched), ("alone", alone)):
                same = total = 0
                nfe_ours, nfe_ref = [], []
                for i, (r, ref) in enumerate(zip(results, run["tokens"])):
                    if i in skip:
                        continue
                    ours = _upto_stop(list(r.tokens), stops) if stop_early else list(r.tokens)
                    ref = _upto_stop(ref, stops) if stop_early else ref
                    same += int(ours == ref)
                    total += 1
                    nfe_ours.append(r.nfe)
                    nfe_ref.append(run["nfe"][i])
                ok = same == total and nfe_ours == nfe_ref
                quirk = f"; {len(skip)} row(s) skipped: the official loop rewrote committed tokens" if skip else ""
                row = Row(name, f"cache={cache} {how}: tokens & NFE = official ({label})",
                          f"{same}/{total} rows",
                          note=f"NFE official {nfe_ref}, ours {nfe_ours}" + quirk + ("" if ok else "; MISMATCH"))
                if not ok:
                    row.limit = 0.0
                report.rows.append(row)


def verify(family: str, python: str, official: Path, work: Path, quick: bool, seed: int = 0,
           fp32_limit: float = 1e-4) -> Report:
    import torch

    spec = make_spec(family, quick, seed)
    refs = run_driver(python, official, work, spec)
    tensors = torch.load(work / "reference.pt", weights_only=True)
    report = Report()
    v = refs["versions"]
    report.notes.append(f"{family} references from {python}: torch {v['torch']}, transformers {v['transformers']}")
    for name, entry in refs["checkpoints"].items():
        poisoned = poison_code(Path(entry["folder"]))
        report.notes.append(f"{name}: {', '.join(poisoned)} replaced with files that raise on import")
        compare_logits(name, entry, tensors, report, fp32_limit)
        compare_generate(family, name, entry, report)
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Example: PYTHONPATH=src python benchmarks/verify_block_native.py --official /tmp/native-official "
               "--sdar-python /tmp/native-tf452/bin/python --llada2-python /tmp/native-tf457/bin/python --quick")
    ap.add_argument("--official", default=os.environ.get("PARALLELBENCH_BLOCK_OFFICIAL_CODE"),
                    help="folder with sdar/ and llada2/ official files (env PARALLELBENCH_BLOCK_OFFICIAL_CODE)")
    ap.add_argument("--sdar-python", default=os.environ.get("PARALLELBENCH_SDAR_VENV", "/tmp/native-tf452/bin/python"),
                    help="python of a venv with transformers==4.52 (env PARALLELBENCH_SDAR_VENV)")
    ap.add_argument("--llada2-python", default=os.environ.get("PARALLELBENCH_LLADA2_VENV",
                                                              "/tmp/native-tf457/bin/python"),
                    help="python of a venv with transformers==4.57 (env PARALLELBENCH_LLADA2_VENV)")
    ap.add_argument("--family", nargs="+", default=["sdar", "llada2"], choices=["sdar", "llada2"])
    ap.add_argument("--work", default=None, help="where to build the checkpoints (default: a temporary folder)")
    ap.add_argument("--quick", action="store_true", help="one checkpoint per family, fewer canvases and settings")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="also write the rows to this JSON file")
    args = ap.parse_args(argv)
    cannot = 77 if args.quick else 2  # a --quick smoke test without the official code: "skipped"
    if not args.official:
        print("error: give --official DIR (or set PARALLELBENCH_BLOCK_OFFICIAL_CODE); see --help", file=sys.stderr)
        return cannot
    official = Path(args.official)
    problem = official_dir_problem(official, args.family)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return cannot
    pythons = {"sdar": args.sdar_python, "llada2": args.llada2_python}
    for fam in args.family:
        if not Path(pythons[fam]).is_file():
            print(f"error: --{fam}-python {pythons[fam]} does not exist; build the scratch venv (see --help)",
                  file=sys.stderr)
            return cannot
    report = Report()
    with tempfile.TemporaryDirectory(prefix="verify-block-native-") as tmp:
        for fam in args.family:
            work = (Path(args.work) if args.work else Path(tmp)) / fam
            work.mkdir(parents=True, exist_ok=True)
            try:
                part = verify(fam, pythons[fam], official, work, args.quick, args.seed)
            except RuntimeError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 1
            report.rows += part.rows
            report.notes += part.notes
    return common.finish(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
