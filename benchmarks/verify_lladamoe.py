"""Compare the native LLaDA-MoE implementation with its official modeling code.

The official code runs under transformers 4.49, so it runs in a scratch virtual environment, in
a subprocess (the same venv as verify_native.py):

  (a) a driver script, written by this tool, builds tiny random-weight checkpoints in the
      published format with the official classes (ZHZisZZ/dllm's `modeling_lladamoe.py` and
      `configuration_lladamoe.py`, loaded as the checkpoint's own code through `auto_map`:
      per-expert tensors, bf16 safetensors, a byte-level tokenizer with the mask token; one
      checkpoint keeps model_type "llada" as the hub configs do), loads each back with
      `AutoModel.from_pretrained(..., trust_remote_code=True)` and records logits of random
      canvases (each alone, fp32 and bf16), the official code's own left-padded logits (context),
      and ML-GSAI/LLaDA's `generate()` (the routine LLaDA-MoE decodes with: low-confidence
      remasking, semi-autoregressive blocks, temperature 0): tokens, commit step of every
      position and model calls. inclusionAI/dInfer's copy (`modeling_fused_lladamoe.py`) is run
      too, on the same weights with its experts fused into `w1`/`w2`; its expert kernel
      (`fuse_moe.fused_moe`, Triton / vLLM) is replaced by a plain PyTorch stand-in written by
      this tool (SiLU of the gate half times the up half, down projection, weighted by the
      router weights it is given);
  (b) here the checkpoints' `.py` files are replaced with files that raise on import, and
      `load_model("hf:<dir>")` is compared: each canvas alone, the canvases in one left-padded
      batch against the official rows alone, a bf16 load, and engine decodes
      (`confidence-topk steps=S block_length=B`) batched and alone against `generate()`.

Setup (once):

    # the scratch venv of benchmarks/verify_native.py (transformers 4.49; its --help has the commands)
    # DIR/dllm/{modeling,configuration}_lladamoe.py    (ZHZisZZ/dllm dllm/pipelines/llada/models/)
    # DIR/dinfer/modeling_fused_lladamoe.py, DIR/dinfer/configuration_lladamoe.py   (inclusionAI/dInfer tools/)
    # DIR/generate.py                                   (ML-GSAI/LLaDA)
    # keep DIR outside the repository

Run:

    PYTHONPATH=src python benchmarks/verify_lladamoe.py --python /tmp/pb-tf449/bin/python --official DIR

`--quick` runs the smaller spec (fewer canvases and settings); without a scratch venv and the
official files it exits 77 with one line saying what is missing.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _verify_common as common  # noqa: E402
import verify_native as vn  # noqa: E402

OFFICIAL_FILES = ("dllm/modeling_lladamoe.py", "dllm/configuration_lladamoe.py", "dinfer/modeling_fused_lladamoe.py",
                  "dinfer/configuration_lladamoe.py", "generate.py")

FUSED_STANDIN = '''"""A plain PyTorch stand-in for dInfer's fused MoE kernel (written by verify_lladamoe.py)."""
import torch
import torch.nn.functional as F


def fused_moe(hidden_states, w1, w2, topk_weights, topk_ids, **unused):
    """sum_k weight_k * down_e(silu(gate_e(x)) * up_e(x)), w1 = [E, 2F, H] (gate rows, then up rows)."""
    out = torch.zeros_like(hidden_states)
    half = w1.shape[1] // 2
    for k in range(topk_ids.shape[1]):
        for e in topk_ids[:, k].unique().tolist():
            rows = topk_ids[:, k] == e
            h = hidden_states[rows] @ w1[e].T
            out[rows] += topk_weights[rows, k:k + 1].to(out.dtype) * ((F.silu(h[:, :half]) * h[:, half:]) @ w2[e].T)
    return out
'''

DRIVER_RUNS = r'''
import importlib
from transformers import AutoConfig

MOE_SPECIALS = ["<|startoftext|>", "<|endoftext|>", "<role>", "</role>", "<|role_end|>", "<|mask|>"]
MOE_TEMPLATE = ("{% for message in messages %}{{ '<role>' + message['role'] + '</role>' + message['content'] + "
                "'<|role_end|>' }}{% endfor %}{% if add_generation_prompt %}{{ '<role>assistant</role>' }}{% endif %}")
AUTO_MAP = {"AutoConfig": "configuration_lladamoe.LLaDAMoEConfig", "AutoModel": "modeling_lladamoe.LLaDAMoEModelLM"}


def build_lladamoe(name, shape):
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    ids = write_tokenizer(folder, MOE_SPECIALS, {"bos_token": "<|startoftext|>", "eos_token": "<|endoftext|>",
                                                 "pad_token": "<|endoftext|>", "mask_token": "<|mask|>"}, MOE_TEMPLATE)
    for f in ("modeling_lladamoe.py", "configuration_lladamoe.py"):
        shutil.copy(official / "dllm" / f, folder / f)
    fields = {k: v for k, v in shape.items() if k not in ("logit_scale", "shard")}
    cfg = {**fields, "auto_map": AUTO_MAP, "mask_token_id": ids["<|mask|>"], "eos_token_id": ids["<|endoftext|>"],
           "pad_token_id": ids["<|endoftext|>"], "bos_token_id": ids["<|startoftext|>"], "hidden_act": "silu",
           "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "architectures": ["LLaDAMoEModelLM"]}
    (folder / "config.json").write_text(json.dumps(cfg))
    config = AutoConfig.from_pretrained(str(folder), trust_remote_code=True)
    model = AutoModel.from_config(config, trust_remote_code=True)
    randomise(model, "lm_head.weight" if not shape.get("tie_word_embeddings") else "embed_tokens.weight",
              ids["<|mask|>"], shape["logit_scale"])
    gen = torch.Generator().manual_seed(spec["seed"] + 5)
    with torch.no_grad():
        for n, b in model.named_buffers():
            if n.endswith("expert_bias"):
                b.copy_(0.05 * torch.randn(b.shape, generator=gen))
    model.to(torch.bfloat16).save_pretrained(folder, safe_serialization=True, max_shard_size=shape["shard"])
    finish_config(folder, AUTO_MAP, {"model_type": shape["model_type"]})
    return folder, ids


def dinfer_model(ref_model, config_fields):
    """inclusionAI/dInfer's fused copy on the same weights (its experts fused into w1 / w2)."""
    pkg = out / "dinfer_copy"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    for f in ("modeling_fused_lladamoe.py", "configuration_lladamoe.py"):
        shutil.copy(official / "dinfer" / f, pkg / f)
    (pkg / "fuse_moe.py").write_text(spec["fused_standin"])
    sys.path.insert(0, str(out))
    mod = importlib.import_module("dinfer_copy.modeling_fused_lladamoe")
    cfgmod = importlib.import_module("dinfer_copy.configuration_lladamoe")
    sys.path.pop(0)
    model = mod.FusedLLaDAMoEModelLM(cfgmod.LLaDAConfig(**config_fields)).eval()
    state = {}
    src = ref_model.state_dict()
    for key, value in src.items():
        if ".mlp.experts." in key:
            continue
        state[key] = value
    for i, layer in enumerate(ref_model.model.layers):
        if hasattr(layer.mlp, "experts"):
            p = f"model.layers.{i}.mlp."
            state[p + "w1"] = torch.stack([torch.cat([e.gate_proj.weight, e.up_proj.weight]) for e in layer.mlp.experts])
            state[p + "w2"] = torch.stack([e.down_proj.weight for e in layer.mlp.experts])
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and all("rotary" in m for m in missing), (missing, unexpected)
    return model


results = {"checkpoints": {}}
tensors = {}
sys.path.insert(0, str(official))
import generate as reference_generate
sys.path.pop(0)
with torch.no_grad():
    for name, shape in spec["checkpoints"].items():
        folder, ids = build_lladamoe(name, shape)
        mask_id = ids["<|mask|>"]
        rows = canvases(shape["vocab_size"], mask_id, spec["lengths"], spec["seed"] + 7)
        entry = {"folder": str(folder), "mask_id": mask_id, "lengths": spec["lengths"]}
        for i, r in enumerate(rows):
            tensors[f"{name}/canvas/{i}"] = r
        for dtype_name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
            model = load_official(folder, dtype)
            entry["official_class"] = type(model).__module__ + "." + type(model).__name__
            for i, r in enumerate(rows):
                tensors[f"{name}/{dtype_name}/alone/{i}"] = model(r.unsqueeze(0)).logits[0].float()
            width = max(len(r) for r in rows)
            canvas = torch.full((len(rows), width), ids["<|endoftext|>"], dtype=torch.long)
            att = torch.zeros((len(rows), width), dtype=torch.long)
            for i, r in enumerate(rows):
                canvas[i, width - len(r):] = r
                att[i, width - len(r):] = 1
            padded = model(canvas, attention_mask=att).logits.float()
            entry[f"official_padded_vs_alone_{dtype_name}"] = max(
                float((padded[i, width - len(r):] - tensors[f"{name}/{dtype_name}/alone/{i}"]).abs().max())
                for i, r in enumerate(rows))
            if dtype_name != "float32":
                continue
            fields = json.loads((folder / "config.json").read_text())
            fused = dinfer_model(model, {k: v for k, v in fields.items() if k not in ("auto_map", "architectures")})
            for i, r in enumerate(rows):
                tensors[f"{name}/dinfer/alone/{i}"] = fused(r.unsqueeze(0)).logits[0].float()
            counter = MaskArgmaxCounter(mask_id)
            handle = model.register_forward_hook(counter)
            prompts = random_prompts(shape["vocab_size"], mask_id, spec["prompt_lengths"], spec["seed"] + 11)
            runs = generate_runs(model, reference_generate.generate, prompts, spec["generate_settings"], counter)
            handle.remove()
            entry["generate"] = {"prompts": prompts, "runs": runs, "mask_argmax_hits": counter.count}
            del model, fused
        results["checkpoints"][name] = entry

write_results(results, tensors)
'''


def make_spec(quick: bool, seed: int) -> dict[str, Any]:
    first = {"model_type": "lladamoe", "vocab_size": 320, "hidden_size": 64, "num_attention_heads": 4,
             "num_key_value_heads": 2, "num_hidden_layers": 3, "moe_layer_freq": [0, 1, 1], "num_experts": 8,
             "num_experts_per_tok": 2, "expert_intermediate_size": 32, "dense_intermediate_size": 96,
             "shared_expert_intermediate_size": 48, "qk_layernorm": True, "partial_rotary_factor": 0.5,
             "moe_router_enable_expert_bias": True, "attention_bias": False, "tie_word_embeddings": False,
             "rope_theta": 50000.0, "norm_topk_prob": True, "moe_router_score_function": "softmax",
             "routed_scaling_factor": 1, "logit_scale": 4.0, "shard": "40KB"}
    checkpoints = {"lladamoe": first}
    if not quick:
        checkpoints["lladamoe-as-published"] = {  # model_type "llada", as the hub configs keep it
            **first, "model_type": "llada", "num_key_value_heads": 4, "num_hidden_layers": 2, "moe_layer_freq": [1, 1],
            "num_experts": 6, "num_experts_per_tok": 3, "shared_expert_intermediate_size": None, "qk_layernorm": False,
            "partial_rotary_factor": 1.0, "moe_router_enable_expert_bias": False, "attention_bias": True,
            "tie_word_embeddings": True, "shard": "10GB"}
    return {"seed": seed, "checkpoints": checkpoints, "fused_standin": FUSED_STANDIN,
            "lengths": [24, 17, 9] if quick else [40, 33, 21, 12, 5],
            "prompt_lengths": [5, 11] if quick else [3, 8, 13, 21],
            "generate_settings": [[16, 16, 16], [8, 16, 8]] if quick else [[32, 32, 32], [16, 32, 8], [12, 32, 8], [32, 32, 4]],
            "qk_gain": 2.5, "attn_gain": 2.0}


def compare(name: str, entry: dict[str, Any], tensors: dict[str, Any], report: common.Report) -> None:
    import torch

    from parallelbench.decoding import build_strategy, decode
    from parallelbench.models.registry import load_model

    folder = entry["folder"]
    n = len(entry["lengths"])
    rows = [tensors[f"{name}/canvas/{i}"] for i in range(n)]
    # the official bf16 code is e from the exact (fp32) logits; ours, rounding as much, is compared with
    # that bf16 run, and two such runs may lie on opposite sides: 2e (the triangle inequality)
    bf16_error = max(vn._diff(tensors[f"{name}/bfloat16/alone/{i}"], tensors[f"{name}/float32/alone/{i}"])
                     for i in range(n))
    bf16_limit = 2 * bf16_error
    for dtype_name, limit in (("float32", 1e-4), ("bfloat16", bf16_limit)):
        net = load_model(f"hf:{folder}", device="cpu", dtype=dtype_name).net
        assert net.family == "lladamoe", net.family
        refs = [tensors[f"{name}/{dtype_name}/alone/{i}"][:, : net.vocab_size] for i in range(n)]
        with torch.no_grad():
            alone = [net.forward(r.unsqueeze(0))[0].float() for r in rows]
            width = max(len(r) for r in rows)
            canvas = torch.full((n, width), int(net.pad_id), dtype=torch.long)
            att = torch.zeros((n, width), dtype=torch.bool)
            for i, r in enumerate(rows):
                canvas[i, width - len(r):] = r
                att[i, width - len(r):] = True
            padded = net.forward(canvas, attention_mask=att).float()
        tag = "fp32" if dtype_name == "float32" else "bf16"
        report.rows.append(common.Row(name, f"{tag} logits, each canvas alone vs official (dllm) alone",
                                      max(vn._diff(a, r) for a, r in zip(alone, refs)), limit))
        report.rows.append(common.Row(name, f"{tag} logits, left-padded batch vs official alone",
                                      max(vn._diff(padded[i, width - len(r):], refs[i]) for i, r in enumerate(rows)),
                                      limit))
        if dtype_name == "float32":
            fused = [tensors[f"{name}/dinfer/alone/{i}"][:, : net.vocab_size] for i in range(n)]
            report.rows.append(common.Row(name, "fp32 logits, each canvas alone vs dInfer's fused copy alone",
                                          max(vn._diff(a, r) for a, r in zip(alone, fused)), 1e-4,
                                          note="expert kernel: the tool's PyTorch stand-in"))
        else:
            exact = [tensors[f"{name}/float32/alone/{i}"][:, : net.vocab_size] for i in range(n)]
            report.rows.append(common.Row(name, "bf16 official vs fp32 official (e; the bf16 limit is 2e)", bf16_error))
            report.rows.append(common.Row(name, "bf16 ours alone / left-padded vs fp32 official (context)",
                                          f"{max(vn._diff(a, r) for a, r in zip(alone, exact)):.3g} / "
                                          f"{max(vn._diff(padded[i, width - len(r):], exact[i]) for i, r in enumerate(rows)):.3g}"))
        report.rows.append(common.Row(name, f"official {tag} padded (2-D mask) vs official alone (context)",
                                      entry[f"official_padded_vs_alone_{dtype_name}"],
                                      note="positions count the pads in the official code"))
    gen = entry["generate"]
    net = load_model(f"hf:{folder}", device="cpu", dtype="float32").net
    prompts = gen["prompts"]
    for run in gen["runs"]:
        strategy = build_strategy("confidence-topk", steps=run["steps"], block_length=run["block_length"])
        label = f"steps={run['steps']} gen={run['gen_length']} block={run['block_length']}"
        for how, results in (("batched (left-padded)", decode(net, prompts, gen_length=run["gen_length"], strategy=strategy)),
                             ("each prompt alone", [decode(net, [p], gen_length=run["gen_length"], strategy=strategy)[0]
                                                    for p in prompts])):
            same = sum(int(a == b) for r, ref in zip(results, run["tokens"]) for a, b in zip(r.tokens, ref))
            when = sum(int(a == b) for r, ref in zip(results, run["order"]) for a, b in zip(r.order, ref))
            calls = sum(int(r.nfe == c) for r, c in zip(results, run["calls"]))
            total = sum(len(ref) for ref in run["tokens"])
            ok = same == when == total and calls == len(prompts)
            row = common.Row(name, f"generate(): tokens, commit steps, calls = official, {how}, {label}",
                             f"{same}/{total} {when}/{total} {calls}/{len(prompts)}", note="" if ok else "MISMATCH")
            if not ok:
                row.limit = 0.0
            report.rows.append(row)
    report.rows.append(common.Row(name, "official argmax == mask id at masked positions", gen["mask_argmax_hits"], 0.0))


def verify(python: str, official: Path, work: Path, quick: bool, seed: int = 0) -> common.Report:
    import torch

    spec = make_spec(quick, seed)
    refs = common.run_driver(python, official, work, spec, vn.DRIVER_BUILD + DRIVER_RUNS,
                             {"TOKENIZERS_PARALLELISM": "false"})
    tensors = torch.load(work / "reference.pt", weights_only=True)
    report = common.Report(versions=refs["versions"], widths=(22, 76))
    report.notes.append(f"references from {python}: torch {refs['versions']['torch']}, transformers "
                        f"{refs['versions']['transformers']}")
    for name, entry in refs["checkpoints"].items():
        poisoned = vn.poison_code(Path(entry["folder"]))
        report.notes.append(f"{name}: {', '.join(poisoned)} replaced with files that raise on import; official class "
                            f"{entry['official_class']}")
        compare(name, entry, tensors, report)
    return report


def main(argv: list[str] | None = None) -> int:
    return common.one_venv_main(
        argv, doc=__doc__, script="verify_lladamoe.py", example_official="/tmp/lladamoe-official", python_env="PARALLELBENCH_OFFICIAL_VENV",
        code_env="PARALLELBENCH_LLADAMOE_CODE", code_help="the folder of official files laid out as in --help", quick_help="one checkpoint, three canvases, two generate() settings",
        problem=lambda folder: common.missing_files(folder, OFFICIAL_FILES, "see --help for the layout"), verify=verify)


if __name__ == "__main__":
    sys.exit(main())
