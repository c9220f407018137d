"""Speed of the native LLaDA / Dream / LLaDA 2 implementations: forward latency and decoding tokens/s.

Builds each architecture at its published size with random weights (no download): LLaDA-8B
(d 4096, 32 layers, 32 heads, MLP 12288, vocab 126464) and Dream-7B (d 3584, 28 layers, 28
heads / 4 kv heads, MLP 18944, vocab 152064). `--scale` shrinks widths, depth and vocabulary
for a CPU (head size stays 128). Then, per architecture:

- forward latency of one batch-1 pass over prompt + generation tokens (384 by default);
- decoding tokens/s (generated tokens / wall time) at batch 1, 8, 32 with top-k (k = 2) and
  threshold (0.9) decoding, semi-AR blocks of 32, without a cache and with the prefix and dual caches.

Random weights are rarely confident, so threshold decoding mostly commits one token per step
(its floor): its tokens/s is a lower bound of what a trained model reaches.

`--arch llada2`: LLaDA2.0-mini's shape (MoE: d 2048, 20 layers, 16 heads / 4 kv heads of 128,
256 experts of 512 with 8 routed + 1 shared, groups 8 / 4, first layer dense, vocab 157184) with
random bf16 weights and the exact block KV cache (`cache=block`): latency of one 32-token block
forward against a cached prompt at batch 1 and 32, and block-causal decoding tokens/s with
threshold 0.95 and k = 2 (blocks of 32) at batch 1 and 32, with the engine's own share of the
decode time (wall time outside the model calls). With `--official DIR --official-python PY`
(DIR/llada2/ holding the official modeling and config files, PY a venv with transformers 4.57),
the official `generate()` runs the same shape in a subprocess in the same run (batch 1: its loop
decodes one row). `--quick` shrinks everything to a CPU smoke test.

    python benchmarks/bench_native.py --quick
    python benchmarks/bench_native.py --scale 0.0625 --batches 1 8 --prompt 64 --gen 64   # CPU
    python benchmarks/bench_native.py --device cuda --dtype bfloat16                       # H100: full size
    python benchmarks/bench_native.py --device cuda --dtype bfloat16 --compile --arch llada
    python benchmarks/bench_native.py --device cuda --arch llada2 --official /tmp/native-official \
        --official-python /tmp/native-tf457/bin/python                                    # issue 27's table
"""

from __future__ import annotations

import argparse
import time

import torch

SHAPES = {
    "llada": {"model_type": "llada", "d_model": 4096, "n_heads": 32, "n_kv_heads": 32, "n_layers": 32,
              "mlp_hidden_size": 12288, "vocab_size": 126464, "embedding_size": 126464, "mask_token_id": 126336,
              "rope_theta": 500000.0, "rms_norm_eps": 1e-5, "layer_norm_type": "rms", "weight_tying": False,
              "include_bias": False, "activation_type": "silu", "block_type": "llama", "rope": True},
    "dream": {"model_type": "Dream", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
              "num_hidden_layers": 28, "intermediate_size": 18944, "vocab_size": 152064, "mask_token_id": 151666,
              "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": False, "hidden_act": "silu"},
}
LLADA2_MINI = {"model_type": "llada2_moe", "hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 4,
               "head_dim": 128, "num_hidden_layers": 20, "intermediate_size": 5120, "num_experts": 256,
               "num_experts_per_tok": 8, "moe_intermediate_size": 512, "num_shared_experts": 1, "n_group": 8,
               "topk_group": 4, "first_k_dense_replace": 1, "routed_scaling_factor": 2.5, "score_function": "sigmoid",
               "norm_topk_prob": True, "partial_rotary_factor": 0.5, "rope_theta": 600000.0, "rms_norm_eps": 1e-6,
               "use_qkv_bias": False, "use_bias": False, "use_qk_norm": True, "tie_word_embeddings": False,
               "vocab_size": 157184, "mask_token_id": 156895}
LLADA2_QUICK = {**LLADA2_MINI, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
                "num_hidden_layers": 2, "intermediate_size": 128, "num_experts": 16, "num_experts_per_tok": 4,
                "moe_intermediate_size": 32, "n_group": 4, "topk_group": 2, "vocab_size": 1024, "mask_token_id": 1023}
EOS = {"llada": 126081, "dream": 151643, "llada2": 156892}  # scaled-down vocabularies use vocab - 2


def scaled(arch: str, scale: float) -> dict:
    """The published shape with widths, depth and vocabulary times `scale` (head size kept)."""
    cfg = dict(SHAPES[arch])
    if scale == 1.0:
        return cfg
    vocab = max(1024, int(cfg["vocab_size"] * scale) // 64 * 64)
    cfg.update(vocab_size=vocab, mask_token_id=vocab - 1)
    if "embedding_size" in cfg:
        cfg["embedding_size"] = vocab
    keys = ("d_model", "n_heads", "n_kv_heads", "n_layers", "mlp_hidden_size") if arch == "llada" else (
        "hidden_size", "num_attention_heads", "num_key_value_heads", "num_hidden_layers", "intermediate_size")
    hidden, heads, kv, layers, ffn = (cfg[k] for k in keys)
    new_heads = max(kv, round(heads * scale / kv) * kv) if kv < heads else max(1, round(heads * scale))
    new_kv = kv if kv < heads else new_heads
    new_kv = min(new_kv, new_heads)
    values = (new_heads * (hidden // heads), new_heads, new_kv, max(1, round(layers * scale)),
              max(64, int(ffn * scale) // 64 * 64))
    cfg.update(dict(zip(keys, values)))
    return cfg


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def build_module(arch: str, cfg: dict, device: str, dtype: str):
    from parallelbench.models.native import build_random

    return build_random(arch, cfg, device=device, dtype=dtype)


def build_net(arch: str, cfg: dict, module, cache: str, compile: bool):
    from parallelbench.models.native.net import NativeDiffusionNet

    eos = EOS[arch] if EOS[arch] < cfg["vocab_size"] else cfg["vocab_size"] - 2
    return NativeDiffusionNet(module, mask_id=cfg["mask_token_id"], eos_id=eos, vocab_size=cfg["vocab_size"],
                              cache=cache, compile=compile)


def timed(fn, device: str, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        sync(device)
        began = time.perf_counter()
        fn()
        sync(device)
        best = min(best, time.perf_counter() - began)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog="example: python benchmarks/bench_native.py --quick")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", default=None, help="float32 (CPU default) or bfloat16 (GPU default)")
    ap.add_argument("--scale", type=float, default=None, help="width/depth factor (default 1 on GPU, 1/16 on CPU)")
    ap.add_argument("--arch", nargs="+", default=["llada", "dream", "llada2"], choices=sorted(SHAPES) + ["llada2"])
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 8, 32])
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--gen", type=int, default=256)
    ap.add_argument("--block", type=int, default=32)
    ap.add_argument("--caches", nargs="+", default=["none", "prefix", "dual"])
    ap.add_argument("--strategies", nargs="+", default=["topk", "threshold"])
    ap.add_argument("--repeats", type=int, default=3, help="forward timings: best of this many")
    ap.add_argument("--compile", action="store_true", help="torch.compile the per-layer parts (GPU)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--official", default=None, help="llada2: folder with llada2/modeling_llada2_moe.py and "
                    "llada2/configuration_llada2_moe.py, to time the official generate() beside ours")
    ap.add_argument("--official-python", default=None, help="llada2: python of a venv with transformers 4.57")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, a few seconds: a smoke test")
    args = ap.parse_args()
    if args.quick:
        args.scale, args.batches, args.prompt, args.gen, args.block, args.repeats = 1 / 32, [1], 16, 16, 8, 1
        args.strategies = ["topk"]
    if args.threads:
        torch.set_num_threads(args.threads)
    dtype = args.dtype or ("bfloat16" if args.device.startswith("cuda") else "float32")
    scale = args.scale if args.scale is not None else (1.0 if args.device.startswith("cuda") else 1 / 16)

    from parallelbench.decoding import build_strategy, decode

    strategies = {"topk": build_strategy("confidence-topk", k=2, block_length=args.block),
                  "threshold": build_strategy("confidence-threshold", threshold=0.9, block_length=args.block)}
    length = args.prompt + args.gen
    name = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
    print(f"# device {name}, dtype {dtype}, scale {scale:g}, prompt {args.prompt}, gen {args.gen}, "
          f"block {args.block}, compile {args.compile}, torch {torch.__version__}, threads {torch.get_num_threads()}")
    if "llada2" in args.arch:
        bench_llada2(args, dtype)
    print(f"{'arch':6} {'params':>7} {'what':10} {'cache':6} {'batch':>5} {'steps':>6} {'seconds':>8} {'tok/s':>9} "
          f"{'ms/fwd':>8}")
    for arch in [a for a in args.arch if a != "llada2"]:
        cfg = scaled(arch, scale)
        module = build_module(arch, cfg, args.device, dtype)
        for n, cache in enumerate(args.caches):
            net = build_net(arch, cfg, module, cache, args.compile and n == 0)
            params = sum(p.numel() for p in net.model.parameters()) / 1e9
            if cache == "none":
                ids = torch.randint(0, cfg["vocab_size"] - 1, (1, length), device=args.device)
                net.forward(ids)  # warm-up (and compilation)
                ms = timed(lambda: net.forward(ids), args.device, args.repeats) * 1000
                print(f"{arch:6} {params:6.2f}B {'forward':10} {'-':6} {1:5d} {1:6d} {ms / 1000:8.4f} "
                      f"{length / ms * 1000:9.0f} {ms:8.2f}", flush=True)
            for strat in args.strategies:
                strategy = strategies[strat]
                for batch in args.batches:
                    gen = torch.Generator().manual_seed(batch)
                    prompts = torch.randint(0, cfg["mask_token_id"] - 1, (batch, args.prompt), generator=gen).tolist()

                    def run():
                        with net.session(args.gen, args.block):
                            return decode(net, prompts, gen_length=args.gen, strategy=strategy)

                    if batch == args.batches[0]:
                        run()  # warm-up
                    sync(args.device)
                    began = time.perf_counter()
                    results = run()
                    sync(args.device)
                    seconds = time.perf_counter() - began
                    steps = max(r.nfe for r in results)
                    tokens = batch * args.gen
                    print(f"{arch:6} {params:6.2f}B {strat:10} {cache:6} {batch:5d} {steps:6d} {seconds:8.2f} "
                          f"{tokens / seconds:9.1f} {seconds / steps * 1000:8.2f}", flush=True)
            del net
            if args.device.startswith("cuda"):
                torch.cuda.empty_cache()
        del module


# ---------------------------------------------------------------------------------------------- llada2
def llada2_shape(scale: float) -> dict:
    """LLaDA2.0-mini's config with widths, depth, experts and vocabulary times `scale` (heads of 64 below 1)."""
    if scale >= 1.0:
        return dict(LLADA2_MINI)
    hidden = max(128, round(2048 * scale / 64) * 64)
    heads = hidden // 64
    experts = max(16, round(256 * scale / 8) * 8)
    vocab = max(1024, int(157184 * scale) // 64 * 64)
    return {**LLADA2_MINI, "hidden_size": hidden, "num_attention_heads": heads, "num_key_value_heads": max(1, heads // 4),
            "head_dim": 64, "num_hidden_layers": max(2, round(20 * scale)), "intermediate_size": max(128, int(5120 * scale)),
            "num_experts": experts, "moe_intermediate_size": max(32, int(512 * scale)), "vocab_size": vocab,
            "mask_token_id": vocab - 1}


def engine_has_block_causal() -> bool:
    """Whether this tree's decode() drives block-causal nets (block layout + exact KV cache)."""
    import parallelbench.models.protocols as protocols

    return hasattr(protocols, "BlockCausalModel")


class ModelClock:
    """Wall time spent inside the net's model calls (synchronised), to split a decode's time into
    the model's share and the engine's own."""

    def __init__(self, net, device: str):
        self.net, self.device, self.seconds = net, device, 0.0
        self.calls = {name: getattr(net, name) for name in ("forward", "forward_cached") if hasattr(net, name)}
        for name, fn in self.calls.items():
            setattr(net, name, self._wrap(fn))

    def _wrap(self, fn):
        def timed_call(*a, **k):
            sync(self.device)
            began = time.perf_counter()
            out = fn(*a, **k)
            sync(self.device)
            self.seconds += time.perf_counter() - began
            return out
        return timed_call

    def remove(self) -> None:
        for name in self.calls:
            delattr(self.net, name)


def bench_llada2(args, dtype: str) -> None:
    from parallelbench.decoding import build_strategy, decode
    from parallelbench.models.native import build_random
    from parallelbench.models.native.block_net import BlockCausalNet

    scale = args.scale if args.scale is not None else (1.0 if args.device.startswith("cuda") else 1 / 16)
    cfg = LLADA2_QUICK if args.quick else llada2_shape(scale)
    block = 32 if not args.quick else 8
    batches = args.batches if args.quick else sorted(set(args.batches) & {1, 32}) or [1, 32]
    prompt, gen = args.prompt, args.gen
    module = build_random("llada2", cfg, device=args.device, dtype=dtype)
    eos = EOS["llada2"] if EOS["llada2"] < cfg["vocab_size"] else cfg["vocab_size"] - 2
    net = BlockCausalNet(module, mask_id=cfg["mask_token_id"], eos_id=eos, vocab_size=cfg["vocab_size"], cache="block")
    params = sum(p.numel() for p in module.parameters()) / 1e9
    shape = "tiny smoke-test shape" if args.quick else ("LLaDA2.0-mini shape" if scale >= 1 else f"LLaDA2.0-mini x {scale:g}")
    print(f"# llada2: {shape}, {params:.3f}B parameters, d {cfg['hidden_size']}, {cfg['num_hidden_layers']} layers, "
          f"{cfg['num_experts']} experts (top {cfg['num_experts_per_tok']}), "
          f"dtype {dtype}, cache=block, prompt {prompt}, gen {gen}, block {block}")
    print(f"{'what':34} {'batch':>5} {'steps':>6} {'seconds':>8} {'tok/s':>9} {'ms/step':>8} {'engine%':>8}")
    for batch in batches:
        ids = torch.randint(0, cfg["mask_token_id"] - 1, (batch, prompt + block), device=args.device)
        pos = torch.arange(prompt + block, device=args.device).expand(batch, -1)
        rows = torch.arange(batch, device=args.device)
        kv = net.new_kv_cache(batch, prompt + block)
        zeros = torch.zeros(batch, prompt, prompt, device=args.device)
        prefix_bias = zeros.masked_fill(~torch.ones(prompt, prompt, dtype=torch.bool, device=args.device).tril(), float("-inf"))
        net.forward_cached(ids[:, :prompt], kv=kv, rows=rows, start=0, position_ids=pos[:, :prompt],
                           attention_bias=prefix_bias, store=torch.ones(batch, prompt, dtype=torch.bool, device=args.device))
        window_bias = torch.zeros(batch, block, prompt + block, device=args.device)

        def window():
            return net.forward_cached(ids[:, prompt:], kv=kv, rows=rows, start=prompt, position_ids=pos[:, prompt:],
                                      attention_bias=window_bias)

        window()  # warm-up
        ms = timed(window, args.device, args.repeats) * 1000
        print(f"{f'forward, one {block}-token block, cached':34} {batch:5d} {1:6d} {ms / 1000:8.4f} "
              f"{batch * block / ms * 1000:9.0f} {ms:8.2f} {'-':>8}", flush=True)
        del kv
    if not engine_has_block_causal():
        print("# decoding rows skipped: this tree's decode() has no block-causal decoding yet (engine side of issue 27)")
    else:
        strategies = {"threshold 0.95": build_strategy("confidence-threshold", threshold=0.95, block_length=block),
                      "k = 2": build_strategy("confidence-topk", k=2, block_length=block)}
        for label, strategy in strategies.items():
            for batch in batches:
                gen_ = torch.Generator().manual_seed(batch)
                prompts = torch.randint(0, cfg["mask_token_id"] - 1, (batch, prompt), generator=gen_).tolist()
                decode(net, prompts, gen_length=gen, strategy=strategy)  # warm-up
                clock = ModelClock(net, args.device)
                sync(args.device)
                began = time.perf_counter()
                results = decode(net, prompts, gen_length=gen, strategy=strategy)
                sync(args.device)
                seconds = time.perf_counter() - began
                clock.remove()
                steps = max(r.nfe for r in results)
                share = max(0.0, 1 - clock.seconds / seconds) * 100
                print(f"{'decode, ' + label:34} {batch:5d} {steps:6d} {seconds:8.2f} {batch * gen / seconds:9.1f} "
                      f"{seconds / steps * 1000:8.2f} {share:7.1f}%", flush=True)
    del net, module
    if args.device.startswith("cuda"):
        torch.cuda.empty_cache()
    if args.official and args.official_python:
        official_llada2(args, cfg, dtype, block)


OFFICIAL_DRIVER = r"""
import json, shutil, sys, tempfile, time
from pathlib import Path
import torch
from transformers.dynamic_module_utils import get_class_from_dynamic_module
job = json.loads(sys.argv[1])
folder = Path(tempfile.mkdtemp(prefix="bench-llada2-"))
for f in ("modeling_llada2_moe.py", "configuration_llada2_moe.py"):
    shutil.copy(Path(job["official"]) / "llada2" / f, folder / f)
Config = get_class_from_dynamic_module("configuration_llada2_moe.LLaDA2MoeConfig", str(folder))
Model = get_class_from_dynamic_module("modeling_llada2_moe.LLaDA2MoeModelLM", str(folder))
cfg = {k: v for k, v in job["config"].items() if k not in ("model_type", "mask_token_id")}
cfg["pad_token_id"] = job["config"]["vocab_size"] - 2
dtype = getattr(torch, job["dtype"])
torch.set_default_dtype(dtype)
with torch.device(job["device"]):
    model = Model(Config(**cfg, embedding_dropout=0.0, attention_dropout=0.0, output_dropout=0.0)).eval()
with torch.no_grad():
    for name, p in model.named_parameters():
        if "norm" not in name:
            p.normal_(0.0, 0.02)
def sync():
    if job["device"].startswith("cuda"):
        torch.cuda.synchronize()
calls = [0]
inner = model.forward
def counted(*a, **k):
    calls[0] += 1
    return inner(*a, **k)
model.forward = counted
gen = torch.Generator().manual_seed(1)
prompt = torch.randint(0, job["config"]["mask_token_id"] - 1, (1, job["prompt"]), generator=gen)
out = []
for label, steps, threshold in job["settings"]:
    kwargs = dict(temperature=0.0, block_length=job["block"], steps=steps, gen_length=job["gen"], threshold=threshold,
                  eos_id=-1, mask_id=job["config"]["mask_token_id"])
    model.generate(prompt.to(job["device"]), **kwargs)  # warm-up
    calls[0] = 0
    sync(); began = time.perf_counter()
    model.generate(prompt.to(job["device"]), **kwargs)
    sync(); seconds = time.perf_counter() - began
    out.append({"label": label, "seconds": seconds, "steps": calls[0]})
print(json.dumps(out))
"""


def official_llada2(args, cfg: dict, dtype: str, block: int) -> None:
    """The official generate() at the same shape (random weights of its own, bf16), batch 1, in a subprocess."""
    rows = run_official(args.official_python, OFFICIAL_DRIVER, official_llada2_job(args.official, cfg, args.device,
                                                                                    args.prompt, args.gen, block))
    if isinstance(rows, str):
        print(f"# official generate() failed: {rows}")
        return
    for row in rows:
        seconds, steps = row["seconds"], max(1, row["steps"])
        print(f"{'official generate(), ' + row['label']:34} {1:5d} {steps:6d} {seconds:8.2f} "
              f"{args.gen / seconds:9.1f} {seconds / steps * 1000:8.2f} {'-':>8}", flush=True)


def official_llada2_job(official: str, cfg: dict, device: str, prompt: int, gen: int, block: int) -> dict:
    # bf16 always: generate() builds its attention mask in bf16, which SDPA refuses beside float32 queries
    return {"official": official, "config": cfg, "dtype": "bfloat16", "device": device, "block": block,
            "prompt": prompt, "gen": gen,
            # threshold 0.95 (steps = block: one token floor); k = 2: steps = block / 2, a threshold never met
            "settings": [["threshold 0.95", block, 0.95], ["k = 2", block // 2, 1.01]]}


def run_official(python: str, driver: str, job: dict) -> "list[dict] | str":
    """A driver script run with a scratch venv's python: its last stdout line (JSON rows), or the
    error's last line."""
    import json
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["HF_HUB_OFFLINE"] = "1"
    proc = subprocess.run([python, "-c", driver, json.dumps(job)], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return (proc.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
