"""Issue 33 item 5: the GPU table in one call -- native forwards and decodes against the card's
weight-read limit, beside the official decoding routines.

Rows (random weights at the published shapes, bf16, no download):

- LLaDA2.0-mini shape (MoE, 16.3B) with `cache=block`, blocks of 32: one cached 32-token block
  forward and block-causal decodes with threshold 0.95 and k = 2, batch 1 and 32, eager and
  `compile=true` (torch.compile(fullgraph=True), replayed as CUDA graphs on CUDA); with
  `--official DIR --official-python PY`, the official `generate()` at the same shape in the same run;
- SDAR-4B shape (Qwen3-4B layout, blocks of 4, its published block size) the same way, beside the
  official `block_diffusion_generate` (DIR/sdar/: modeling_sdar.py, configuration_sdar.py,
  generate.py; flash-attn's kernels replaced by the exact PyTorch stand-ins of
  verify_block_native.py when flash-attn is not installed);
- LLaDA-8B shape: one batch-1 forward over prompt + generation, and batch-32 decodes with the dual
  cache (k = 2 and threshold 0.95, blocks of 32).

Each row gives `limit%`: the time the card needs to read the weights the forward reads (all
parameters but the input embedding table; for the MoE, only the experts the batch's tokens route
to, counted per layer on the same input) at its memory bandwidth, as a share of the measured time
per forward / per step: 100% is the bandwidth limit, the issue's target for batch-1 cached steps
of the dense families is at least 50% (within 2x). `engine%` is the share of a decode's wall time
spent outside the model calls (each call synchronised and timed); `x official` is our tokens/s
over the official routine's batch-1 tokens/s (its loops decode one row). The card is named from
`torch.cuda.get_device_name()`; its bandwidth from a small table (H100 SXM 3.35 TB/s, ...) or
`--bandwidth` in TB/s.

    python benchmarks/bench_gpu_table.py                                  # on a GPU, everything (< 8 min on an H100)
    python benchmarks/bench_gpu_table.py --official /tmp/native-official \\
        --llada2-python /tmp/native-tf457/bin/python --sdar-python /tmp/native-tf452/bin/python
    python benchmarks/bench_gpu_table.py --only llada8b --bandwidth 3.35
    python benchmarks/bench_gpu_table.py --smoke                          # CPU, tiny shapes, seconds (= --quick)

(Official files and venvs: see verify_block_native.py's docstring.)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_native as bn  # noqa: E402

#: memory bandwidth in bytes/s by a substring of the device name (first match wins)
CARDS = [("H200", 4.8e12), ("GH200", 4.0e12), ("H100 NVL", 3.9e12), ("H100 PCIe", 2.0e12), ("H100", 3.35e12),
         ("A100-SXM4-80GB", 2.039e12), ("A100 80GB PCIe", 1.935e12), ("A100", 1.555e12), ("L40S", 0.864e12),
         ("RTX 4090", 1.008e12)]
SMOKE_BANDWIDTH = 20e9  # a nominal CPU figure, only so that --smoke exercises the column
SDAR_4B = {"model_type": "sdar", "hidden_size": 2560, "intermediate_size": 9728, "num_hidden_layers": 36,
           "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
           "mask_token_id": 151669, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": True,
           "attention_bias": False, "block_size": 4}
SDAR_SMOKE = {**SDAR_4B, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 1024, "mask_token_id": 1023}
LLADA_SMOKE = {**bn.SHAPES["llada"], "d_model": 64, "n_heads": 4, "n_kv_heads": 4, "n_layers": 2,
               "mlp_hidden_size": 128, "vocab_size": 1024, "embedding_size": 1024, "mask_token_id": 1023}
EOS = {"llada2": 156892, "sdar": 151645, "llada": 126081}


def card_bandwidth(device: str, override: float | None) -> tuple[str, float]:
    if override:
        name = torch.cuda.get_device_name() if device.startswith("cuda") else "cpu"
        return name, override * 1e12
    if not device.startswith("cuda"):
        return "cpu (nominal 20 GB/s)", SMOKE_BANDWIDTH
    name = torch.cuda.get_device_name()
    for key, bw in CARDS:
        if key.lower() in name.lower():
            return name, bw
    raise SystemExit(f"unknown card {name!r}: give its memory bandwidth with --bandwidth TB/s")


def weight_bytes(module) -> int:
    """Bytes of the weights one forward reads: every parameter except the input embedding table
    (a forward gathers a few of its rows), the MoE experts excluded (`routed_expert_bytes` adds them)."""
    skip = {id(module.embed.weight)} if module.head is not None else set()  # tied: the head reads the table
    total = 0
    for name, p in module.named_parameters():
        if id(p) in skip or any(name.endswith(f"moe.{w}") for w in ("gate_w", "up_w", "down_w")):
            continue
        total += p.numel() * p.element_size()
    return total


class RoutedExperts:
    """Counts, per MoE layer, the distinct experts a forward's tokens route to (a hook on `route`;
    used on an untimed forward only: `unique` reads the device)."""

    def __init__(self, module):
        from parallelbench.models.native.moe import MixtureOfExperts

        self.layers = [m for m in module.modules() if isinstance(m, MixtureOfExperts)]
        self.bytes = 0

    def __enter__(self):
        self.bytes, self.saved = 0, []
        for moe in self.layers:
            self.saved.append(moe.route)
            moe.route = self._hook(moe, moe.route)
        return self

    def _hook(self, moe, route):
        per_expert = sum(w[0].numel() * w.element_size() for w in (moe.gate_w, moe.up_w, moe.down_w))

        def counted(x):
            idx, weight = route(x)
            self.bytes += int(idx.unique().numel()) * per_expert
            return idx, weight
        return counted

    def __exit__(self, *exc):
        for moe in self.layers:
            del moe.route  # the class's method again
        return False


class Table:
    def __init__(self, bandwidth: float):
        self.bandwidth = bandwidth
        print(f"| model | what | mode | batch | steps | ms per forward/step | tokens/s | weights read (GB) | limit% "
              f"| engine% | x official |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")

    def row(self, model, what, mode, batch, steps, ms, tokens_s, read_bytes, engine=None, versus=None):
        limit = read_bytes / self.bandwidth * 1000 / ms * 100 if read_bytes else None
        cells = [model, what, mode, batch, steps, f"{ms:.2f}", f"{tokens_s:,.1f}",
                 f"{read_bytes / 1e9:.3f}" if read_bytes else "-", f"{limit:.0f}%" if limit is not None else "-",
                 f"{engine:.1f}%" if engine is not None else "-", f"{versus:.1f}x" if versus else "-"]
        print("| " + " | ".join(str(c) for c in cells) + " |", flush=True)


def _nets(kind: str, module, cfg: dict, cache: str, modes: list[str], smoke: bool):
    """(mode, net) for eager and compiled over the same weights; compiled on a CPU smoke run uses
    torch.compile's "eager" backend (dynamo's whole-graph capture without code generation)."""
    from parallelbench.models.native.block_net import BlockCausalNet
    from parallelbench.models.native.net import NativeDiffusionNet

    eos = EOS[kind] if EOS[kind] < cfg["vocab_size"] else cfg["vocab_size"] - 2
    for mode in modes:
        cls = BlockCausalNet if kind != "llada" else NativeDiffusionNet
        net = cls(module, mask_id=cfg["mask_token_id"], eos_id=eos, vocab_size=cfg["vocab_size"], cache=cache)
        if mode == "compiled":
            module._compiled = None
            module.enable_compile(backend="eager" if smoke else "inductor")
        else:
            module._compiled, module._cuda_graphs = None, False
        yield mode, net


def _decode_rows(table, label, net, module, cfg, args, batches, block, strategies, weights, gen, official=None,
                 cache_note=""):
    from parallelbench.decoding import decode

    for what, strategy in strategies.items():
        for batch in batches:
            g = torch.Generator().manual_seed(batch)
            prompts = torch.randint(0, cfg["mask_token_id"] - 1, (batch, args.prompt), generator=g).tolist()
            def run():
                with net.session(gen, block):
                    return decode(net, prompts, gen_length=gen, strategy=strategy)

            run()  # warm-up (and compilation)
            clock = bn.ModelClock(net, args.device)
            bn.sync(args.device)
            began = time.perf_counter()
            results = run()
            bn.sync(args.device)
            seconds = time.perf_counter() - began
            clock.remove()
            steps = max(r.nfe for r in results)
            tokens_s = batch * gen / seconds
            versus = tokens_s / official[what] if official and official.get(what) else None
            table.row(label, f"decode{cache_note}, {what}", net_mode(module), batch, steps, seconds / steps * 1000,
                      tokens_s, weights(batch), max(0.0, 1 - clock.seconds / seconds) * 100, versus)


def net_mode(module) -> str:
    return "compiled" if module.compiled else "eager"


def block_family(table, kind: str, cfg: dict, args, block: int, official: dict | None) -> None:
    """LLaDA2.0-mini / SDAR-4B: cached block forwards and block-causal decodes, eager and compiled."""
    from parallelbench.decoding import build_strategy
    from parallelbench.models.native import build_random

    module = build_random(kind, cfg, device=args.device, dtype=args.dtype)
    label = {"llada2": "LLaDA2.0-mini", "sdar": "SDAR-4B"}[kind] + (" (smoke shape)" if args.smoke else "")
    dense = weight_bytes(module)
    strategies = {"threshold 0.95": build_strategy("confidence-threshold", threshold=0.95, block_length=block),
                  "k = 2": build_strategy("confidence-topk", k=2, block_length=block)}
    routed: dict[int, int] = {}
    for mode, net in _nets(kind, module, cfg, "block", args.modes, args.smoke):
        for batch in args.batches:
            ids = torch.randint(0, cfg["mask_token_id"] - 1, (batch, args.prompt + block), device=args.device)
            pos = torch.arange(args.prompt + block, device=args.device).expand(batch, -1)
            rows = torch.arange(batch, device=args.device)
            kv = net.new_kv_cache(batch, args.prompt + block)
            causal = torch.ones(args.prompt, args.prompt, dtype=torch.bool, device=args.device).tril()
            prefix_bias = torch.zeros(batch, args.prompt, args.prompt, device=args.device).masked_fill(~causal, float("-inf"))
            net.forward_cached(ids[:, :args.prompt], kv=kv, rows=rows, start=0, position_ids=pos[:, :args.prompt],
                               attention_bias=prefix_bias,
                               store=torch.ones(batch, args.prompt, dtype=torch.bool, device=args.device))
            bias = torch.zeros(batch, block, args.prompt + block, device=args.device)

            def window():
                return net.forward_cached(ids[:, args.prompt:], kv=kv, rows=rows, start=args.prompt,
                                          position_ids=pos[:, args.prompt:], attention_bias=bias)

            if batch not in routed:
                with torch.no_grad(), RoutedExperts(module) as experts:
                    window()
                routed[batch] = experts.bytes
            window()  # warm-up (and compilation)
            ms = bn.timed(window, args.device, args.repeats) * 1000
            table.row(label, f"forward, one {block}-token block, cached", mode, batch, 1, ms, batch * block / ms * 1000,
                      dense + routed[batch])
            del kv
        _decode_rows(table, label, net, module, cfg, args, args.batches, block, strategies,
                     lambda b: dense + routed.get(b, 0), args.gen, official)
        del net
    if official:
        for what, tokens_s in official.items():
            if tokens_s:
                table.row(label, f"official routine, {what}", "eager", 1, official.get(what + " steps", 0) or "-",
                          official.get(what + " ms", 0.0), tokens_s, 0)
    del module
    if args.device.startswith("cuda"):
        torch.cuda.empty_cache()


def llada8b(table, args) -> None:
    from parallelbench.decoding import build_strategy
    from parallelbench.models.native import build_random

    cfg = LLADA_SMOKE if args.smoke else dict(bn.SHAPES["llada"])
    module = build_random("llada", cfg, device=args.device, dtype=args.dtype)
    label = "LLaDA-8B" + (" (smoke shape)" if args.smoke else "")
    weights = weight_bytes(module)
    length = args.prompt + args.gen
    strategies = {"k = 2": build_strategy("confidence-topk", k=2, block_length=args.block),
                  "threshold 0.95": build_strategy("confidence-threshold", threshold=0.95, block_length=args.block)}
    for mode, net in _nets("llada", module, cfg, "none", args.modes, args.smoke):
        ids = torch.randint(0, cfg["mask_token_id"] - 1, (1, length), device=args.device)
        net.forward(ids)  # warm-up (and compilation)
        ms = bn.timed(lambda: net.forward(ids), args.device, args.repeats) * 1000
        table.row(label, f"forward, {length} tokens", mode, 1, 1, ms, length / ms * 1000, weights)
        del net
    big = max(args.batches)
    for mode, net in _nets("llada", module, cfg, "dual", args.modes, args.smoke):
        _decode_rows(table, label, net, module, cfg, args, [big], args.block, strategies, lambda b: weights,
                     args.gen, cache_note=" dual cache")
        del net
    del module


def official_rows(kind: str, args, cfg: dict, block: int) -> dict | None:
    """{setting: tokens/s, setting + " ms": ms per step, setting + " steps": calls} of the official routine."""
    python = args.llada2_python if kind == "llada2" else args.sdar_python
    if not (args.official and python):
        return None
    if kind == "llada2":
        rows = bn.run_official(python, bn.OFFICIAL_DRIVER, bn.official_llada2_job(args.official, cfg, args.device,
                                                                                   args.prompt, args.gen, block))
    else:
        import verify_block_native as vbn

        job = {"official": args.official, "config": cfg, "device": args.device, "block": block, "prompt": args.prompt,
               "gen": args.gen, "standins": vbn.FLASH_ATTN_STANDINS,
               # (label, denoising steps per block, remasking rule, threshold)
               "settings": [["threshold 0.95", block, "low_confidence_dynamic", 0.95],
                            ["k = 2", max(1, block // 2), "low_confidence_static", 0.95]]}
        rows = bn.run_official(python, SDAR_DRIVER, job)
    if isinstance(rows, str):
        print(f"# official {kind} routine failed: {rows}")
        return None
    out: dict = {}
    for r in rows:
        steps = max(1, r["steps"])
        out[r["label"]], out[r["label"] + " ms"], out[r["label"] + " steps"] = args.gen / r["seconds"], \
            r["seconds"] / steps * 1000, steps
    return out


SDAR_DRIVER = r"""
import json, shutil, sys, tempfile, time
from pathlib import Path
import torch
job = json.loads(sys.argv[1])
out = Path(tempfile.mkdtemp(prefix="bench-sdar-"))
try:
    import flash_attn  # noqa: F401
    LOSS_STANDIN = None
except ImportError:
    exec(job["standins"])
official = Path(job["official"]) / "sdar"
for f in ("modeling_sdar.py", "configuration_sdar.py"):
    shutil.copy(official / f, out / f)
if LOSS_STANDIN:
    (out / "fused_linear_diffusion_cross_entropy.py").write_text(LOSS_STANDIN)
from transformers.dynamic_module_utils import get_class_from_dynamic_module
Config = get_class_from_dynamic_module("configuration_sdar.SDARConfig", str(out))
Model = get_class_from_dynamic_module("modeling_sdar.SDARForCausalLM", str(out))
c = job["config"]
config = Config(vocab_size=c["vocab_size"], hidden_size=c["hidden_size"], intermediate_size=c["intermediate_size"],
                num_hidden_layers=c["num_hidden_layers"], num_attention_heads=c["num_attention_heads"],
                num_key_value_heads=c["num_key_value_heads"], head_dim=c["head_dim"], hidden_act="silu",
                max_position_embeddings=4096, rms_norm_eps=c["rms_norm_eps"], tie_word_embeddings=c["tie_word_embeddings"],
                rope_theta=c["rope_theta"], rope_scaling=None, attention_bias=False, use_sliding_window=False,
                sliding_window=None, max_window_layers=c["num_hidden_layers"], attention_dropout=0.0,
                bos_token_id=0, eos_token_id=0, pad_token_id=0, mask_token_id=c["mask_token_id"],
                block_size=job["block"], architectures=["SDARForCausalLM"], torch_dtype="bfloat16",
                fuse_cross_entropy=False, micro_forward=False, skip_checkpoint=False, use_deepep=False, ep_size=1,
                debug=False)
torch.set_default_dtype(torch.bfloat16)
with torch.device(job["device"]):
    model = Model(config).eval()
with torch.no_grad():
    for name, p in model.named_parameters():
        if "norm" not in name:
            p.normal_(0.0, 0.02)
sys.path.insert(0, str(official))
import generate as sdar_generate
def greedy(logits, temperature=1.0, top_k=0, top_p=1.0):
    probs = torch.softmax(logits.float(), dim=-1)
    conf, token = probs.max(dim=-1)
    return token, conf
sdar_generate.sample_with_temperature_topk_topp = greedy
calls = [0]
inner = model.forward
def counted(*a, **k):
    if not k.get("store_kv"):
        calls[0] += 1
    return inner(*a, **k)
model.forward = counted
def sync():
    if job["device"].startswith("cuda"):
        torch.cuda.synchronize()
g = torch.Generator().manual_seed(1)
prompt = torch.randint(0, c["mask_token_id"] - 1, (1, job["prompt"]), generator=g).to(job["device"])
rows = []
with torch.no_grad():
    for label, steps, rule, threshold in job["settings"]:
        kwargs = dict(gen_length=job["gen"], block_length=job["block"], denoising_steps=steps, temperature=1.0,
                      remasking_strategy=rule, confidence_threshold=threshold)
        sdar_generate.block_diffusion_generate(model, {"input_ids": prompt}, c["mask_token_id"], **kwargs)
        calls[0] = 0
        sync(); began = time.perf_counter()
        sdar_generate.block_diffusion_generate(model, {"input_ids": prompt}, c["mask_token_id"], **kwargs)
        sync(); seconds = time.perf_counter() - began
        rows.append({"label": label, "seconds": seconds, "steps": calls[0]})
print(json.dumps(rows))
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog="example: python benchmarks/bench_gpu_table.py --smoke",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--only", nargs="+", default=["llada2", "sdar", "llada8b"], choices=["llada2", "sdar", "llada8b"])
    ap.add_argument("--modes", nargs="+", default=["eager", "compiled"], choices=["eager", "compiled"])
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 32])
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--block", type=int, default=32, help="LLaDA2 and LLaDA-8B blocks (SDAR uses its own 4)")
    ap.add_argument("--repeats", type=int, default=5, help="forward timings: best of this many")
    ap.add_argument("--bandwidth", type=float, default=None, help="the card's memory bandwidth in TB/s "
                    "(default: from its name)")
    ap.add_argument("--official", default=None, help="folder with llada2/ and sdar/ official files (see the docstring)")
    ap.add_argument("--llada2-python", default=None, help="python of a venv with transformers 4.57 (LLaDA 2)")
    ap.add_argument("--sdar-python", default=None, help="python of a venv with transformers 4.52 (SDAR)")
    ap.add_argument("--smoke", "--quick", action="store_true", help="CPU, tiny shapes, float32, a few seconds")
    args = ap.parse_args(argv)
    if args.smoke:
        args.batches, args.prompt, args.gen, args.block, args.repeats = [1, 2], 8, 8, 4, 1
        torch.set_num_threads(1)
    elif not args.device.startswith("cuda"):
        print("bench_gpu_table.py needs a CUDA device (or --smoke for the CPU smoke run)")
        return 77
    args.dtype = "float32" if args.smoke else "bfloat16"
    name, bandwidth = card_bandwidth(args.device, args.bandwidth)
    print(f"# {name}, {bandwidth / 1e12:.3f} TB/s, torch {torch.__version__}, {args.dtype}, prompt {args.prompt}, "
          f"gen {args.gen}, batches {args.batches}, modes {args.modes}")
    table = Table(bandwidth)
    with torch.no_grad():
        if "llada2" in args.only:
            cfg = bn.LLADA2_QUICK if args.smoke else dict(bn.LLADA2_MINI)
            block_family(table, "llada2", cfg, args, args.block, official_rows("llada2", args, cfg, args.block))
        if "sdar" in args.only:
            cfg = SDAR_SMOKE if args.smoke else dict(SDAR_4B)
            block_family(table, "sdar", cfg, args, cfg["block_size"], official_rows("sdar", args, cfg, cfg["block_size"]))
        if "llada8b" in args.only:
            llada8b(table, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
