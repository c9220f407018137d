"""Compare the native LLaDA and Dream implementations with the families' official modeling code.

The official code (LLaDA's and Dream's `modeling_*.py`, LLaDA's reference `generate()`) was
written for transformers 4.x and does not run under the transformers this project needs, so
it runs in a scratch virtual environment, in a subprocess:

  (a) a driver script, written by this tool to a temporary folder and run with the scratch
      venv's python, builds tiny random-weight checkpoints with the OFFICIAL model and config
      classes in the published format (config.json with auto_map, sharded bf16 safetensors,
      a byte-level tokenizer.json with the family's special tokens and chat template; a
      generation_config.json for Dream), loads each back with `trust_remote_code=True` as a
      user of the hub checkpoint would, and records reference logits (each canvas alone, fp32
      and bf16) and the tokens of the official LLaDA `generate()` (low-confidence remasking,
      semi-autoregressive blocks) for several steps / gen_length / block_length settings;
  (b) here, the checkpoints' `.py` files are replaced with files that raise on import, and
      `load_model("hf:<dir>", device="cpu", dtype=...)` is compared with the references:
      every canvas alone, the same canvases in one left-padded batch (our padded rows against
      the official row alone: LLaDA's official attention ignores padding, so its own padded
      output is not a reference), a bf16 load, and engine decodes with the strategy settings
      equivalent to LLaDA's `generate()`.

Setup (once):

    python3.11 -m venv /tmp/pb-tf449
    /tmp/pb-tf449/bin/pip install torch==2.13.0 transformers==4.49.0 accelerate==0.34.2 \\
        einops safetensors numpy tokenizers
    # DIR: a copy of NVlabs/Fast-dLLM (llada/model/, llada/generate.py, dream/model/ are used)
    # plus ML-GSAI/LLaDA's generate.py copied to DIR/generate.py; keep it outside the repository

Run:

    PYTHONPATH=src python benchmarks/verify_native.py --python /tmp/pb-tf449/bin/python --official DIR
    PYTHONPATH=src python benchmarks/verify_native.py --python /tmp/pb-tf449/bin/python --official DIR --quick

Dream: Fast-dLLM's copy of Dream's modeling code ignores `position_ids` (positions are always
0..L-1), so its references are taken on unpadded canvases only; our padded rows are compared
with those unpadded references.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _verify_common as common  # noqa: E402

# --official DIR: NVlabs/Fast-dLLM's tree (at least these files) plus ML-GSAI/LLaDA's generate.py at its root
OFFICIAL_FILES = {
    "llada": ("llada/model/configuration_llada.py", "llada/model/modeling_llada.py"),
    "dream": ("dream/model/configuration_dream.py", "dream/model/modeling_dream.py",
              "dream/model/generation_utils.py", "dream/model/tokenization_dream.py"),
    "generate": ("generate.py", "llada/generate.py"),
}
RAISING_PY = 'raise ImportError("verify_native: this checkpoint\'s own code must not be imported")\n'

# ----------------------------------------------------------------------------------------------
# The driver: runs in the scratch venv (transformers 4.49) and imports the official modules.
# It is this project's own code; the official files are only imported from the --official DIR.
# DRIVER_BUILD (the checkpoint builders, also used by verify_d3llm.py) + DRIVER_MAIN (the records).
# ----------------------------------------------------------------------------------------------
DRIVER_BUILD = r'''
import json, math, os, shutil, sys
from pathlib import Path

import torch

spec = json.loads(Path(sys.argv[1]).read_text())
official = Path(spec["official"])
out = Path(spec["out"])
torch.manual_seed(spec["seed"])

from tokenizers import Tokenizer, models, pre_tokenizers, decoders
from transformers import AutoModel


def byte_tokenizer(specials):
    """256 byte tokens (GPT-2 byte-to-unicode alphabet) then the special tokens, in order."""
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    table = {}
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    extra = 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    assert set(table.values()) == set(alphabet)
    vocab = {table[b]: b for b in range(256)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(list(specials))
    return tok


def write_tokenizer(folder, specials, roles, template, custom_class=None):
    """tokenizer.json (+ tokenizer_config.json); with `custom_class` also the slow tokenizer's
    vocab.json / merges.txt and an auto_map naming the checkpoint's own tokenizer class, as Dream
    publishes it (its tokenization_dream.py is copied beside it)."""
    tok = byte_tokenizer(specials)
    tok.save(str(folder / "tokenizer.json"))
    ids = {s: tok.token_to_id(s) for s in specials}
    cfg = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 4096, "chat_template": template,
           "clean_up_tokenization_spaces": False}
    if custom_class:
        vocab = json.loads(tok.to_str())["model"]["vocab"]
        (folder / "vocab.json").write_text(json.dumps(vocab))
        (folder / "merges.txt").write_text("#version: 0.2\n")
        cfg["tokenizer_class"] = custom_class[1]
        cfg["auto_map"] = {"AutoTokenizer": [custom_class[0] + "." + custom_class[1], None]}
        cfg["added_tokens_decoder"] = {str(ids[s]): {"content": s, "lstrip": False, "normalized": False,
                                                     "rstrip": False, "single_word": False, "special": True}
                                       for s in specials}
    cfg.update({k: v for k, v in roles.items()})
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2))
    (folder / "special_tokens_map.json").write_text(json.dumps(roles, indent=2))
    return ids


def randomise(model, out_name, mask_row, logit_scale):
    """Weights that make a discriminating test: unit-scale activations, peaked logits,
    non-trivial norm weights and biases; the output row of the mask token zeroed so that,
    as in the trained checkpoints, the mask is never the argmax."""
    gen = torch.Generator().manual_seed(spec["seed"] + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or name.endswith("ln_f.weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            elif name.endswith("bias"):
                p.copy_(0.2 * torch.randn(p.shape, generator=gen))
            elif p.dim() == 2 and name.endswith(out_name):
                p.copy_(logit_scale * torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[1]))
                if mask_row is not None:
                    p[mask_row] = 0.0
            elif "wte" in name or "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=gen))
            else:
                gain = 1.0
                if any(k in name for k in ("q_proj", "k_proj")):
                    gain = spec.get("qk_gain", 1.0)  # peaked, position-dependent attention
                elif any(k in name for k in ("attn_out", "o_proj")):
                    gain = spec.get("attn_gain", 1.0)  # context, not the token itself, decides
                p.copy_(gain * torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[1]))


def copy_code(folder, names):
    for rel in names:
        shutil.copy(official / rel, folder / Path(rel).name)


def finish_config(folder, auto_map, extra):
    cfg = json.loads((folder / "config.json").read_text())
    cfg["auto_map"] = auto_map
    cfg.update(extra)
    (folder / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True))
    return cfg


LLADA_SPECIALS = ["<|startoftext|>", "<|endoftext|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
                  "<|mdm_mask|>"]
LLADA_TEMPLATE = ("{% for message in messages %}{% if loop.index0 == 0 %}{{ bos_token }}{% endif %}"
                  "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim"
                  " + '<|eot_id|>' }}{% endfor %}{% if add_generation_prompt %}"
                  "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")
DREAM_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|beginoftext|>", "<|mask|>"]
DREAM_TEMPLATE = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content']"
                  " + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}"
                  "{{ '<|im_start|>assistant\n' }}{% endif %}")


def build_llada(name, shape):
    sys.path.insert(0, str(official))  # the official modules import their siblings relatively
    from llada.model.configuration_llada import LLaDAConfig
    from llada.model.modeling_llada import LLaDAModelLM

    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    ids = write_tokenizer(folder, LLADA_SPECIALS,
                          {"bos_token": "<|startoftext|>", "eos_token": "<|endoftext|>",
                           "pad_token": "<|endoftext|>", "mask_token": "<|mdm_mask|>"}, LLADA_TEMPLATE)
    vocab = shape["vocab_size"]
    config = LLaDAConfig(
        d_model=shape["d_model"], n_heads=shape["n_heads"], n_kv_heads=shape["n_kv_heads"],
        n_layers=shape["n_layers"], mlp_hidden_size=shape["mlp_hidden_size"], mlp_ratio=4,
        activation_type="silu", block_type="llama", block_group_size=1, alibi=False, alibi_bias_max=8.0,
        rope=True, rope_full_precision=True, rope_theta=shape["rope_theta"], flash_attention=False,
        attention_dropout=0.0, residual_dropout=0.0, embedding_dropout=0.0, multi_query_attention=None,
        attention_layer_norm=False, attention_layer_norm_with_affine=True, input_emb_norm=False,
        layer_norm_type="rms", layer_norm_with_affine=True, rms_norm_eps=1e-5, bias_for_layer_norm=False,
        include_bias=False, include_qkv_bias=shape.get("include_qkv_bias", False), scale_logits=False,
        vocab_size=vocab, embedding_size=vocab, weight_tying=shape["weight_tying"],
        eos_token_id=ids["<|endoftext|>"], pad_token_id=ids["<|endoftext|>"],
        mask_token_id=ids["<|mdm_mask|>"], max_sequence_length=4096, init_device="meta", init_fn="mitchell",
        init_std=0.02, precision="amp_bf16", use_cache=False, architectures=["LLaDAModelLM"],
    )
    model = LLaDAModelLM(config)
    out_name = "transformer.wte.weight" if shape["weight_tying"] else "transformer.ff_out.weight"
    randomise(model, out_name, None if shape["weight_tying"] else ids["<|mdm_mask|>"], shape["logit_scale"])
    model.to(torch.bfloat16).save_pretrained(folder, safe_serialization=True, max_shard_size=shape["shard"])
    copy_code(folder, ["llada/model/configuration_llada.py", "llada/model/modeling_llada.py"])
    cfg = finish_config(folder, {"AutoConfig": "configuration_llada.LLaDAConfig",
                                 "AutoModel": "modeling_llada.LLaDAModelLM",
                                 "AutoModelForCausalLM": "modeling_llada.LLaDAModelLM"}, {})
    sys.path.pop(0)
    return folder, cfg, ids


def build_dream(name, shape):
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    ids = write_tokenizer(folder, DREAM_SPECIALS,
                          {"bos_token": "<|beginoftext|>", "eos_token": "<|endoftext|>",
                           "pad_token": "<|endoftext|>", "mask_token": "<|mask|>"}, DREAM_TEMPLATE,
                          custom_class=("tokenization_dream", "DreamTokenizer"))
    sys.path.insert(0, str(official))
    from dream.model.configuration_dream import DreamConfig
    from dream.model.modeling_dream import DreamModel

    config = DreamConfig(
        vocab_size=shape["vocab_size"], hidden_size=shape["hidden_size"],
        intermediate_size=shape["intermediate_size"], num_hidden_layers=shape["num_hidden_layers"],
        num_attention_heads=shape["num_attention_heads"], num_key_value_heads=shape["num_key_value_heads"],
        hidden_act="silu", max_position_embeddings=4096, rms_norm_eps=1e-6,
        tie_word_embeddings=shape["tie_word_embeddings"], rope_theta=shape["rope_theta"], rope_scaling=None,
        use_sliding_window=False, sliding_window=4096, max_window_layers=shape["num_hidden_layers"],
        attention_dropout=0.0, mask_token_id=ids["<|mask|>"], pad_token_id=ids["<|endoftext|>"],
        bos_token_id=ids["<|beginoftext|>"], eos_token_id=ids["<|endoftext|>"], architectures=["DreamModel"],
        torch_dtype="bfloat16",
    )
    model = DreamModel(config)
    randomise(model, "lm_head.weight", None, shape["logit_scale"])
    model.to(torch.bfloat16).save_pretrained(folder, safe_serialization=True, max_shard_size=shape["shard"])
    copy_code(folder, ["dream/model/configuration_dream.py", "dream/model/modeling_dream.py",
                       "dream/model/generation_utils.py", "dream/model/tokenization_dream.py"])
    cfg = finish_config(folder, {"AutoConfig": "configuration_dream.DreamConfig",
                                 "AutoModel": "modeling_dream.DreamModel"}, {})
    (folder / "generation_config.json").write_text(json.dumps({
        "_from_model_config": True, "bos_token_id": ids["<|beginoftext|>"], "eos_token_id": ids["<|endoftext|>"],
        "pad_token_id": ids["<|endoftext|>"], "mask_token_id": ids["<|mask|>"], "transformers_version": "4.49.0"},
        indent=2))
    sys.path.pop(0)
    return folder, cfg, ids


def random_prompts(vocab, mask_id, lengths, seed):
    """Prompts of random ids, never the mask id."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for n in lengths:
        p = torch.randint(0, vocab - 1, (n,), generator=gen)
        out.append((p + (p >= mask_id).long()).tolist())
    return out


def generate_runs(model, generate, prompts, settings, counter):
    """LLaDA's reference generate() (greedy, low-confidence remasking) on each prompt alone for every
    (steps, gen_length, block_length): tokens, commit step of every position and model calls, read
    by `counter` (a MaskArgmaxCounter hooked on the model)."""
    runs = []
    for steps, gen_length, block_length in settings:
        outs, orders, calls = [], [], []
        for p in prompts:
            counter.masked = []
            x = generate(model, torch.tensor([p]), steps=steps, gen_length=gen_length, block_length=block_length,
                         temperature=0.0, cfg_scale=0.0, remasking="low_confidence", mask_id=counter.mask_id)
            calls.append(len(counter.masked))
            outs.append(x[0, len(p):].tolist())
            orders.append(counter.order(len(p)))
        runs.append({"steps": steps, "gen_length": gen_length, "block_length": block_length,
                     "tokens": outs, "order": orders, "calls": calls})
    return runs


def write_results(results, tensors=None):
    """reference.json (with the venv's versions) and reference.pt, for the harness to read."""
    import transformers
    results["versions"] = {"torch": torch.__version__, "transformers": transformers.__version__,
                           "python": sys.version.split()[0]}
    if tensors is not None:
        torch.save(tensors, out / "reference.pt")
    (out / "reference.json").write_text(json.dumps(results, indent=2))
    print("driver: wrote", len(tensors or ()), "tensors for", ", ".join(results["checkpoints"]))


def load_official(folder, dtype):
    model = AutoModel.from_pretrained(str(folder), trust_remote_code=True, torch_dtype=dtype)
    return model.eval()


def canvases(vocab, mask_id, lengths, seed):
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for n in lengths:
        ids = torch.randint(0, vocab - 1, (n,), generator=gen)
        ids = ids + (ids >= mask_id).long()
        masked = torch.rand(n, generator=gen) < 0.5
        rows.append(torch.where(masked, torch.full_like(ids, mask_id), ids))
    return rows


class MaskArgmaxCounter:
    """Counts masked positions whose argmax is the mask id itself (the official loop would
    then 'commit' a mask); the comparison is exact only while this stays 0."""

    def __init__(self, mask_id):
        self.mask_id, self.count, self.masked = mask_id, 0, []

    def __call__(self, module, args, output):
        x = args[0]
        logits = output.logits if hasattr(output, "logits") else output[0]
        hit = (logits.argmax(-1) == self.mask_id) & (x == self.mask_id)
        self.count += int(hit.sum())
        self.masked.append((x[0] == self.mask_id).clone())  # one prompt per generate() call

    def order(self, prompt_length):
        """Step at which each generated position was committed: the call before the first one
        that sees it unmasked (positions still masked at the last call: the last step)."""
        steps = len(self.masked)
        out = []
        for j in range(prompt_length, self.masked[0].shape[0]):
            seen = [t for t in range(steps) if not bool(self.masked[t][j])]
            out.append(seen[0] - 1 if seen else steps - 1)
        self.masked = []
        return out

'''

DRIVER_MAIN = r'''
results = {"checkpoints": {}}
tensors = {}
with torch.no_grad():
    for name, fam in spec["checkpoints"].items():
        shape = fam["shape"]
        folder, cfg, ids = (build_llada if fam["family"] == "llada" else build_dream)(name, shape)
        mask_id = cfg["mask_token_id"]
        rows = canvases(shape["vocab_size"], mask_id, spec["lengths"], spec["seed"] + 7)
        entry = {"folder": str(folder), "family": fam["family"], "mask_id": mask_id, "ids": ids,
                 "lengths": spec["lengths"]}
        # the checkpoint's tokenizer as its users load it (Dream: its own class, remote code)
        from transformers import AutoTokenizer
        official_tok = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=True)
        entry["tokenizer_class"] = type(official_tok).__name__
        entry["chat_ids"] = [official_tok.apply_chat_template(m, add_generation_prompt=True, tokenize=True)
                             for m in spec["chats"]]
        for i, r in enumerate(rows):
            tensors[f"{name}/canvas/{i}"] = r
        for dtype_name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
            model = load_official(folder, dtype)
            entry["official_class"] = type(model).__module__ + "." + type(model).__name__
            for i, r in enumerate(rows):
                tensors[f"{name}/{dtype_name}/alone/{i}"] = model(r.unsqueeze(0)).logits[0].float()
            if fam["family"] == "dream" or dtype_name == "float32":
                # the official code on a left-padded batch, as context: LLaDA's ignores the mask it
                # is given (documents why its padded output is no reference); Dream's takes a 4-D
                # boolean mask (pads masked as keys) and, RoPE being relative, needs no position ids
                width = max(len(r) for r in rows)
                pad = ids["<|endoftext|>"]
                canvas = torch.full((len(rows), width), pad, dtype=torch.long)
                att = torch.zeros((len(rows), width), dtype=torch.bool)
                for i, r in enumerate(rows):
                    canvas[i, width - len(r):] = r
                    att[i, width - len(r):] = True
                if fam["family"] == "dream":
                    mask = att[:, None, None, :].expand(-1, 1, width, -1)
                else:
                    mask = att.long()
                padded = model(canvas, attention_mask=mask).logits.float()
                worst = 0.0
                for i, r in enumerate(rows):
                    alone = tensors[f"{name}/{dtype_name}/alone/{i}"]
                    worst = max(worst, float((padded[i, width - len(r):] - alone).abs().max()))
                entry[f"official_padded_vs_alone_{dtype_name}"] = worst
            if fam["family"] == "llada" and dtype_name == "float32" and fam.get("generate"):
                sys.path.insert(0, str(official))
                import generate as reference_generate
                sys.path.pop(0)
                counter = MaskArgmaxCounter(mask_id)
                handle = model.register_forward_hook(counter)
                prompts = random_prompts(shape["vocab_size"], mask_id, spec["prompt_lengths"], spec["seed"] + 11)
                runs = generate_runs(model, reference_generate.generate, prompts, spec["generate_settings"], counter)
                fast_runs = []
                if spec.get("fastdllm_settings"):
                    # Fast-dLLM's generate.py: the same loop with an optional threshold, and its
                    # prefix- and dual-cache variants (it imports model.modeling_llada: its own tree)
                    import importlib.util
                    sys.path.insert(0, str(official / "llada"))
                    loader = importlib.util.spec_from_file_location("fastdllm_generate", official / "llada/generate.py")
                    fast = importlib.util.module_from_spec(loader)
                    loader.loader.exec_module(fast)
                    sys.path.pop(0)
                    fns = {"none": fast.generate, "prefix": fast.generate_with_prefix_cache,
                           "dual": fast.generate_with_dual_cache}
                    for steps, gen_length, block_length, threshold in spec["fastdllm_settings"]:
                        for mode, fn in fns.items():
                            outs, nfes = [], []
                            for p in prompts:
                                x, nfe = fn(model, torch.tensor([p]), steps=steps, gen_length=gen_length,
                                            block_length=block_length, temperature=0.0,
                                            remasking="low_confidence", mask_id=mask_id, threshold=threshold)
                                outs.append(x[0, len(p):].tolist())
                                nfes.append(int(nfe))
                            fast_runs.append({"mode": mode, "steps": steps, "gen_length": gen_length,
                                              "block_length": block_length, "threshold": threshold,
                                              "tokens": outs, "nfe": nfes})
                handle.remove()
                entry["generate"] = {"prompts": prompts, "runs": runs, "mask_argmax_hits": counter.count,
                                     "fastdllm": fast_runs}
            del model
        results["checkpoints"][name] = entry

write_results(results, tensors)
'''
DRIVER = DRIVER_BUILD + DRIVER_MAIN


# ----------------------------------------------------------------------------------------------
# What to build and compare
# ----------------------------------------------------------------------------------------------
def make_spec(quick: bool, seed: int) -> dict[str, Any]:
    llada = {"vocab_size": 320, "d_model": 64, "n_heads": 4, "n_kv_heads": 4, "n_layers": 2,
             "mlp_hidden_size": 96, "rope_theta": 500000.0, "weight_tying": False, "logit_scale": 4.0,
             "shard": "40KB"}
    checkpoints: dict[str, Any] = {
        "llada": {"family": "llada", "shape": llada, "generate": True},
        "dream": {"family": "dream", "shape": {
            "vocab_size": 288, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "rope_theta": 1000000.0,
            "tie_word_embeddings": False, "logit_scale": 4.0, "shard": "40KB"}},
    }
    if not quick:
        checkpoints["llada-gqa-tied"] = {"family": "llada", "shape": {
            **llada, "n_kv_heads": 2, "weight_tying": True, "rope_theta": 10000.0, "n_layers": 3,
            "include_qkv_bias": True, "shard": "10GB"}}
        checkpoints["dream-tied"] = {"family": "dream", "shape": {
            "vocab_size": 272, "hidden_size": 48, "intermediate_size": 80, "num_hidden_layers": 3,
            "num_attention_heads": 6, "num_key_value_heads": 1, "rope_theta": 10000.0,
            "tie_word_embeddings": True, "logit_scale": 4.0, "shard": "10GB"}}
    settings = [[16, 16, 16], [8, 16, 8], [6, 16, 8]] if quick else \
        [[32, 32, 32], [16, 32, 8], [12, 32, 8], [8, 32, 32], [10, 40, 8], [32, 32, 4]]
    return {
        "seed": seed,
        "lengths": [24, 17, 9] if quick else [40, 33, 21, 12, 5],
        "prompt_lengths": [5, 11] if quick else [3, 8, 13, 21],
        "generate_settings": settings,
        "chats": [[{"role": "user", "content": "Copy the list: Susan Fox, Philip Gray."}],
                  [{"role": "system", "content": "You are managing a waiting line."},
                   {"role": "user", "content": "Who goes next? Anna Lee, 3 4"}]],
        # Fast-dLLM's loops, each without cache, with its prefix and with its dual cache:
        # (steps, gen_length, block_length, threshold or None for the steps schedule)
        "fastdllm_settings": [[8, 16, 8, None], [16, 16, 8, 0.9]] if quick else
        [[16, 32, 8, None], [8, 32, 16, None], [32, 32, 8, 0.9], [32, 32, 16, 0.7]],
        "checkpoints": checkpoints,
        "qk_gain": 2.5,  # peaked, position-dependent attention and a strong context path:
        "attn_gain": 2.0,  # the tiny models then decode varied tokens, not one repeated token
    }


def official_dir_problem(folder: Path) -> str | None:
    missing = [rel for rels in OFFICIAL_FILES.values() for rel in rels if not (folder / rel).is_file()]
    if missing:
        return f"--official {folder} lacks {', '.join(missing)} (see --help for the layout)"
    return None


def run_driver(python: str, official: Path, work: Path, spec: dict[str, Any]) -> dict[str, Any]:
    return common.run_driver(python, official, work, spec, DRIVER,
                             {"TORCHDYNAMO_DISABLE": "1",  # Fast-dLLM wraps LLaDA's attention in torch.compile: run it eagerly
                                 "TOKENIZERS_PARALLELISM": "false"})


# ----------------------------------------------------------------------------------------------
# Step (b): our side
# ----------------------------------------------------------------------------------------------
Row = common.Row


def Report(**kwargs: Any) -> common.Report:
    return common.Report(widths=(16, 58), **kwargs)


def poison_code(folder: Path) -> list[str]:
    return common.poison_code(folder, RAISING_PY)


def _align(ours: Any, ref: Any, family: str) -> tuple[Any, Any]:
    """Dream's net returns logits already shifted (position i predicted at i - 1); shift the
    official raw logits the same way: row 0 repeats itself."""
    import torch

    if family == "dream":
        ref = torch.cat([ref[:1], ref[:-1]], dim=0)
    return ours, ref


def _merge_like(net: Any, ref: Any, dtype: Any = None) -> Any:
    """Apply the net's documented end-token merge (log-sum-exp of the stop ids into EOS) to a
    reference, so the comparison covers every vocabulary column; the merged column is rounded to
    `dtype` as the net rounds it (a bf16 net returns bf16 logits)."""
    merge = list(getattr(net, "merge_ids", []) or [])
    if not merge:
        return ref
    import torch

    ids = torch.tensor([int(net.eos_id), *merge])
    out = ref.clone()
    merged = torch.logsumexp(ref.index_select(-1, ids), dim=-1)
    out[..., int(net.eos_id)] = merged.to(dtype).float() if dtype is not None else merged
    out[..., ids[1:]] = float("-inf")
    return out


def _diff(a: Any, b: Any) -> float:
    import torch

    a, b = a.float(), b.float()
    finite = torch.isfinite(a) & torch.isfinite(b)
    if bool((torch.isfinite(a) != torch.isfinite(b)).any()):
        return float("inf")
    return float((a - b)[finite].abs().max()) if bool(finite.any()) else 0.0


def compare_logits(name: str, entry: dict[str, Any], tensors: dict[str, Any], report: Report,
                   fp32_limit: float) -> None:
    """fp32 rows must agree to `fp32_limit`. A bf16 row may differ from the official bf16 run by at
    most what bf16 rounding itself costs the official code (its bf16 vs its fp32 logits); a bf16
    padded row also by as much as the official code's own padded rows differ from its rows alone
    (Dream; LLaDA's official code ignores padding, so there is no such figure)."""
    import torch

    from parallelbench.models.registry import load_model

    folder, family = entry["folder"], entry["family"]
    n = len(entry["lengths"])
    rows = [tensors[f"{name}/canvas/{i}"] for i in range(n)]
    bf16_limit = max(_diff(tensors[f"{name}/bfloat16/alone/{i}"], tensors[f"{name}/float32/alone/{i}"])
                     for i in range(n))
    # a bf16 padded row may also differ from itself alone as much as the official code's does
    padded_bf16_limit = max(bf16_limit, entry.get("official_padded_vs_alone_bfloat16", 0.0))
    for dtype_name, limit in (("float32", fp32_limit), ("bfloat16", bf16_limit)):
        model = load_model(f"hf:{folder}", device="cpu", dtype=dtype_name)
        net = model.net
        refs = [_merge_like(net, tensors[f"{name}/{dtype_name}/alone/{i}"], getattr(torch, dtype_name))
                for i in range(n)]
        with torch.no_grad():
            alone = [net.forward(r.unsqueeze(0))[0].float() for r in rows]
            worst_alone = max(_diff(*_align(a, ref, family)) for a, ref in zip(alone, refs))
            width = max(len(r) for r in rows)
            canvas = torch.full((n, width), int(net.pad_id), dtype=torch.long)
            att = torch.zeros((n, width), dtype=torch.bool)
            for i, r in enumerate(rows):
                canvas[i, width - len(r):] = r
                att[i, width - len(r):] = True
            padded = net.forward(canvas, attention_mask=att).float()
        worst_padded = 0.0
        worst_self = 0.0
        for i, r in enumerate(rows):
            real = padded[i, width - len(r):]
            worst_padded = max(worst_padded, _diff(*_align(real, refs[i], family)))
            worst_self = max(worst_self, _diff(real, alone[i]))
        tag = "fp32" if dtype_name == "float32" else "bf16"
        report.rows.append(Row(name, f"{tag} logits, each canvas alone vs official alone", worst_alone, limit))
        padded_limit = limit if dtype_name == "float32" else padded_bf16_limit
        report.rows.append(Row(name, f"{tag} logits, left-padded batch vs official alone", worst_padded, padded_limit))
        report.rows.append(Row(name, f"{tag} logits, left-padded batch vs ours alone", worst_self, padded_limit))
        if dtype_name == "bfloat16":
            fp32_refs = [_merge_like(net, tensors[f"{name}/float32/alone/{i}"], torch.bfloat16) for i in range(n)]
            ctx = max(_diff(*_align(a, ref, family)) for a, ref in zip(alone, fp32_refs))
            ref_ctx = max(_diff(tensors[f"{name}/bfloat16/alone/{i}"], tensors[f"{name}/float32/alone/{i}"])
                          for i in range(n))
            report.rows.append(Row(name, "bf16 ours vs fp32 official (context)", ctx))
            report.rows.append(Row(name, "bf16 official vs fp32 official (the bf16 limit)", ref_ctx))
        if family == "dream" and dtype_name == "float32":
            # control: without the one-position shift the same logits must disagree
            unshifted = max(_diff(a, ref) for a, ref in zip(alone, refs))
            report.rows.append(Row(name, "control: fp32 alone vs official NOT shifted (must be large)",
                                   unshifted, note="" if unshifted > 1.0 else "SHIFT NOT DETECTED"))
            if unshifted <= 1.0:
                report.rows[-1].limit = -1.0
        del model, net
    if family == "llada":
        report.rows.append(Row(name, "official padded vs official alone (its mask is ignored)",
                               entry["official_padded_vs_alone_float32"], note="not ours: documents the reference"))
    else:
        for tag, key in (("fp32", "float32"), ("bf16", "bfloat16")):
            report.rows.append(Row(name, f"official {tag} padded (4-D key mask) vs official alone (context)",
                                   entry[f"official_padded_vs_alone_{key}"]))


def compare_chat(name: str, entry: dict[str, Any], chats: list[Any], report: Report) -> None:
    """Prompt ids from our tokenizer load against the checkpoint's tokenizer loaded as its users do."""
    from parallelbench.models.registry import load_model

    model = load_model(f"hf:{entry['folder']}", device="cpu", dtype="float32")
    ours = [model.tokenizer.encode_chat(m) for m in chats]
    same = sum(int(a == b) for a, b in zip(ours, entry["chat_ids"]))
    row = Row(name, f"chat-template prompt ids = official tokenizer ({entry['tokenizer_class']})",
              f"{same}/{len(chats)}", note="" if same == len(chats) else "MISMATCH")
    if same != len(chats):
        row.limit = 0.0
    report.rows.append(row)


def compare_generate(name: str, entry: dict[str, Any], report: Report) -> None:
    """Engine decodes on the same weights with the settings equivalent to LLaDA's generate():
    confidence-topk with `steps` split evenly over blocks of `block_length`, temperature 0."""
    from parallelbench.decoding import build_strategy, decode
    from parallelbench.models.registry import load_model

    gen = entry["generate"]
    # the official loop knows no end tokens: the default (merge_stops=false) keeps <|eot_id|> apart from EOS
    net = load_model(f"hf:{entry['folder']}", device="cpu", dtype="float32", merge_stops=False).net
    merged_net = load_model(f"hf:{entry['folder']}", device="cpu", dtype="float32", merge_stops=True).net
    merged = list(getattr(merged_net, "merge_ids", []) or [])
    report.notes.append(f"{name}: decodes with the default merge_stops=false (merge_stops=true would merge ids "
                        f"{merged} into EOS, a convention the official generate() does not have)")
    prompts = gen["prompts"]
    for run in gen["runs"]:
        strategy = build_strategy("confidence-topk", steps=run["steps"], block_length=run["block_length"],
                                  temperature=0.0)
        label = f"steps={run['steps']} gen={run['gen_length']} block={run['block_length']}"
        batched = decode(net, prompts, gen_length=run["gen_length"], strategy=strategy)
        alone = [decode(net, [p], gen_length=run["gen_length"], strategy=strategy)[0] for p in prompts]
        for how, results in (("batched (left-padded)", batched), ("each prompt alone", alone)):
            same = sum(int(a == b) for r, ref in zip(results, run["tokens"]) for a, b in zip(r.tokens, ref))
            when = sum(int(a == b) for r, ref in zip(results, run["order"]) for a, b in zip(r.order, ref))
            total = sum(len(ref) for ref in run["tokens"])
            report.rows.append(Row(name, f"tokens / commit step = official, {how}, {label}",
                                   f"{same}/{total} {when}/{total}",
                                   note="" if same == when == total else "MISMATCH"))
            if not same == when == total:
                report.rows[-1].limit = 0.0  # a string value with a limit fails the row
    report.rows.append(Row(name, "official argmax == mask id at masked positions", gen["mask_argmax_hits"],
                           0.0, note="must be 0 for an exact token comparison"))
    compare_fastdllm(name, entry, report)
    if merged:
        net = merged_net
        same = total = 0
        for run in gen["runs"]:
            strategy = build_strategy("confidence-topk", steps=run["steps"], block_length=run["block_length"],
                                      temperature=0.0)
            results = decode(net, prompts, gen_length=run["gen_length"], strategy=strategy)
            same += sum(int(a == b) for r, ref in zip(results, run["tokens"]) for a, b in zip(r.tokens, ref))
            total += sum(len(ref) for ref in run["tokens"])
        report.rows.append(Row(name, "tokens = official, all settings, end-token merge ON (info)", f"{same}/{total}",
                               note="the merge moves <|eot_id|> mass onto EOS by design"))


def compare_fastdllm(name: str, entry: dict[str, Any], report: Report) -> None:
    """Engine decodes with cache=none/prefix/dual against Fast-dLLM's generate(),
    generate_with_prefix_cache() and generate_with_dual_cache(): the steps schedule is
    confidence-topk, the threshold rule confidence-threshold (Fast-dLLM keeps the top-1 and every
    token with confidence >= threshold; ours > threshold: equal only on an exact tie)."""
    from parallelbench.decoding import build_strategy, decode
    from parallelbench.models.registry import load_model

    gen = entry["generate"]
    prompts = gen["prompts"]
    nets: dict[str, Any] = {}
    for run in gen.get("fastdllm", []):
        mode = run["mode"]
        if mode not in nets:
            nets[mode] = load_model(f"hf:{entry['folder']}", device="cpu", dtype="float32", cache=mode,
                                    merge_stops=False).net
        net = nets[mode]
        if run["threshold"] is None:
            strategy = build_strategy("confidence-topk", steps=run["steps"], block_length=run["block_length"])
            rule = f"steps={run['steps']}"
        else:
            strategy = build_strategy("confidence-threshold", threshold=run["threshold"],
                                      block_length=run["block_length"])
            rule = f"threshold={run['threshold']}"
        label = f"Fast-dLLM cache={mode} {rule} gen={run['gen_length']} block={run['block_length']}"
        for how, groups in (("batched", [prompts]), ("alone", [[p] for p in prompts])):
            results = []
            for group in groups:
                with net.session(run["gen_length"], run["block_length"]):
                    results.extend(decode(net, group, gen_length=run["gen_length"], strategy=strategy))
            same = sum(int(a == b) for r, ref in zip(results, run["tokens"]) for a, b in zip(r.tokens, ref))
            total = sum(len(ref) for ref in run["tokens"])
            ours_nfe = sum(r.nfe for r in results)
            row = Row(name, f"tokens = {label}, {how}", f"{same}/{total}",
                      note=f"NFE official {sum(run['nfe'])}, ours {ours_nfe}" + ("" if same == total else "; MISMATCH"))
            if same != total:
                row.limit = 0.0
            report.rows.append(row)


def verify(python: str, official: Path, work: Path, quick: bool, seed: int = 0,
           fp32_limit: float = 1e-4) -> Report:
    import torch

    spec = make_spec(quick, seed)
    refs = run_driver(python, official, work, spec)
    tensors = torch.load(work / "reference.pt", weights_only=True)
    report = Report(versions=refs["versions"])
    report.notes.append(f"references from {python}: torch {refs['versions']['torch']}, transformers "
                        f"{refs['versions']['transformers']}")
    report.notes.append("dream: Fast-dLLM's Dream code ignores position_ids, so references are unpadded canvases; "
                        "our padded rows are compared with them")
    for name, entry in refs["checkpoints"].items():
        poisoned = poison_code(Path(entry["folder"]))
        report.notes.append(f"{name}: {', '.join(poisoned)} replaced with files that raise on import")
        compare_logits(name, entry, tensors, report, fp32_limit)
        compare_chat(name, entry, spec["chats"], report)
        if "generate" in entry:
            compare_generate(name, entry, report)
    return report


def main(argv: list[str] | None = None) -> int:
    return common.one_venv_main(
        argv, doc=__doc__, script="verify_native.py", example_official="/tmp/official",
        python_env="PARALLELBENCH_OFFICIAL_VENV", code_env="PARALLELBENCH_OFFICIAL_CODE",
        code_help="a copy of NVlabs/Fast-dLLM plus ML-GSAI/LLaDA's generate.py at its root",
        quick_help="two checkpoints, three canvases, three settings", problem=official_dir_problem, verify=verify)


if __name__ == "__main__":
    sys.exit(main())
