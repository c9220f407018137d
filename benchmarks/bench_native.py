"""Speed of the native LLaDA / Dream implementations: forward latency and decoding tokens/s.

Builds each architecture at its published size with random weights (no download): LLaDA-8B
(d 4096, 32 layers, 32 heads, MLP 12288, vocab 126464) and Dream-7B (d 3584, 28 layers, 28
heads / 4 kv heads, MLP 18944, vocab 152064). `--scale` shrinks widths, depth and vocabulary
for a CPU (head size stays 128). Then, per architecture:

- forward latency of one batch-1 pass over prompt + generation tokens (384 by default);
- decoding tokens/s (generated tokens / wall time) at batch 1, 8, 32 with top-k (k = 2) and
  threshold (0.9) decoding, semi-AR blocks of 32, without a cache and with the prefix and dual caches.

Random weights are rarely confident, so threshold decoding mostly commits one token per step
(its floor): its tokens/s is a lower bound of what a trained model reaches.

    python benchmarks/bench_native.py --quick
    python benchmarks/bench_native.py --scale 0.0625 --batches 1 8 --prompt 64 --gen 64   # CPU
    python benchmarks/bench_native.py --device cuda --dtype bfloat16                       # H100: full size
    python benchmarks/bench_native.py --device cuda --dtype bfloat16 --compile --arch llada
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
EOS = {"llada": 126081, "dream": 151643}  # scaled-down vocabularies use vocab - 2


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
    ap.add_argument("--arch", nargs="+", default=["llada", "dream"], choices=sorted(SHAPES))
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 8, 32])
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--gen", type=int, default=256)
    ap.add_argument("--block", type=int, default=32)
    ap.add_argument("--caches", nargs="+", default=["none", "prefix", "dual"])
    ap.add_argument("--strategies", nargs="+", default=["topk", "threshold"])
    ap.add_argument("--repeats", type=int, default=3, help="forward timings: best of this many")
    ap.add_argument("--compile", action="store_true", help="torch.compile the per-layer parts (GPU)")
    ap.add_argument("--threads", type=int, default=None)
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
    print(f"{'arch':6} {'params':>7} {'what':10} {'cache':6} {'batch':>5} {'steps':>6} {'seconds':>8} {'tok/s':>9} "
          f"{'ms/fwd':>8}")
    for arch in args.arch:
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


if __name__ == "__main__":
    main()
