"""Strategy speed: per preset, NFE, tokens per step, model time, engine time and overhead.

Every registered preset (Medusa modes need a causal model with heads and are skipped; presets for
block-causal models only, such as indel-threshold, run with --block-causal)
decodes a batch with a random stand-in transformer, alone and with semi-AR blocks of 8.
A wrapper times every `model.forward` call (APD's causal verifier included) inside the
same `decode` call, so

    overhead = (whole decode time - time inside model.forward) / time inside model.forward

needs no second, separately timed run. On the CPU the clock is this process's CPU time
(robust when other jobs share the machine; run with 1 torch thread); on a GPU it is wall
time with a synchronize after each forward. Each figure is the best of `--repeats` decodes.

Two more tables: sampling (temperature 1.0) against greedy (whole decode per row-step, and,
robust to timing noise, the extra engine work per row-step as a share of greedy's whole cost),
and each preset's cost per step against one bare forward of the canvas (WINO's verification
rides in its forward).

    python benchmarks/bench_strategies.py                       # CPU stand-in of issue 18
    python benchmarks/bench_strategies.py --quick               # seconds-long smoke run
    python benchmarks/bench_strategies.py --device cuda         # LLaDA-8B-shaped, 4 layers, bf16
    python benchmarks/bench_strategies.py --presets eb,wino --blocks 8
    python benchmarks/bench_strategies.py --block-causal cache    # the block-causal path, exact KV cache
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch

from parallelbench.decoding import build_strategy, decode, strategy_names


class StandIn(torch.nn.Module):
    """A random bidirectional (or causal) transformer with the MaskedDiffusionModel interface."""

    def __init__(self, vocab: int, dim: int, layers: int, heads: int, ff: int, causal: bool = False, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        self.vocab_size, self.mask_id, self.eos_id = vocab, 0, 1
        self.causal = causal
        self.embed = torch.nn.Embedding(vocab, dim)
        self.pos = torch.nn.Embedding(1024, dim)
        layer = torch.nn.TransformerEncoderLayer(dim, heads, ff, dropout=0.0, batch_first=True)
        self.body = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(dim, vocab)
        self.heads = heads
        self.supports_attention_bias = not causal  # position_ids / attention_bias: WINO's shadow block
        self.eval()

    def forward(self, canvas, *, attention_mask=None, rows=None, position_ids=None, attention_bias=None):
        n = canvas.shape[1]
        pos = torch.arange(n, device=canvas.device) if position_ids is None else position_ids
        x = self.embed(canvas) + self.pos(pos)
        if attention_bias is not None:  # [B, L, L] additive scores, the same for every head
            mask = attention_bias.to(x.dtype).repeat_interleave(self.heads, dim=0)
            return self.head(self.body(x, mask=mask)) * 4.0
        pad = None if attention_mask is None else ~attention_mask
        mask = None
        if self.causal:
            mask = torch.triu(torch.full((n, n), float("-inf"), device=canvas.device, dtype=x.dtype), 1)
            pad = None  # left padding: a causal row still sees its own tokens
        return self.head(self.body(x, mask=mask, src_key_padding_mask=pad)) * 4.0


class BlockCausalStandIn(torch.nn.Module):
    """A random block-causal transformer (the BlockCausalModel contract, both paths): the same
    sizes as StandIn, for the engine's block-causal path (absolute block grid, engine-built
    attention bias, exact KV cache when cache_mode == "block")."""

    block_causal = True
    supports_attention_bias = True
    supports_kv_cache = True
    block_size = None

    def __init__(self, vocab: int, dim: int, layers: int, heads: int, ff: int, cache_mode: str = "none",
                 default_block_length: int = 32, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        self.vocab_size, self.mask_id, self.eos_id = vocab, 0, 1
        self.cache_mode, self.default_block_length, self.heads = cache_mode, default_block_length, heads
        self.embed = torch.nn.Embedding(vocab, dim)
        self.pos = torch.nn.Embedding(1024, dim)
        self.qkv = torch.nn.ModuleList(torch.nn.Linear(dim, 3 * dim) for _ in range(layers))
        self.out = torch.nn.ModuleList(torch.nn.Linear(dim, dim) for _ in range(layers))
        self.mlp = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.Linear(dim, ff), torch.nn.ReLU(), torch.nn.Linear(ff, dim)) for _ in range(layers))
        self.norms = torch.nn.ModuleList(torch.nn.LayerNorm(dim) for _ in range(2 * layers))
        self.head = torch.nn.Linear(dim, vocab)
        self.eval()

    def _split(self, i, x):
        b, n, d = x.shape
        q, k, v = self.qkv[i](self.norms[2 * i](x)).chunk(3, dim=-1)
        return [t.view(b, n, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v)]

    def _finish(self, i, x, q, k, v, bias):
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias.unsqueeze(1).to(q.dtype))
        x = x + self.out[i](a.transpose(1, 2).reshape(x.shape))
        return x + self.mlp[i](self.norms[2 * i + 1](x))

    def forward(self, canvas, *, attention_mask=None, rows=None, position_ids=None, attention_bias=None):
        b, n = canvas.shape
        if attention_mask is None:
            attention_mask = torch.ones_like(canvas, dtype=torch.bool)
        if position_ids is None:
            position_ids = (attention_mask.long().cumsum(dim=1) - 1).clamp(min=0)
        if attention_bias is None:  # a plain call: bidirectional over the non-pad keys
            see = attention_mask.unsqueeze(1) | torch.eye(n, dtype=torch.bool, device=canvas.device)
            attention_bias = torch.zeros(see.shape, device=canvas.device).masked_fill_(~see, float("-inf"))
        x = self.embed(canvas) + self.pos(position_ids)
        for i in range(len(self.qkv)):
            q, k, v = self._split(i, x)
            x = self._finish(i, x, q, k, v, attention_bias)
        return self.head(x) * 4.0

    def new_kv_cache(self, batch, length):
        d = self.embed.embedding_dim // self.heads
        return [[torch.zeros(batch, self.heads, length, d), torch.zeros(batch, self.heads, length, d)]
                for _ in range(len(self.qkv))]

    def forward_cached(self, ids, *, kv, rows, start, position_ids, attention_bias, store=None):
        x = self.embed(ids) + self.pos(position_ids)
        for i, (keys, values) in enumerate(kv):
            q, k, v = self._split(i, x)
            x = self._finish(i, x, q, torch.cat([keys[rows, :, :start], k], 2), torch.cat([values[rows, :, :start], v], 2),
                             attention_bias)
            if store is not None:  # written where `store` says, without reading it on the host
                keep, w = store[:, None, :, None], k.shape[2]
                keys[rows, :, start:start + w] = torch.where(keep, k, keys[rows, :, start:start + w])
                values[rows, :, start:start + w] = torch.where(keep, v, values[rows, :, start:start + w])
        return self.head(x) * 4.0


class Timed:
    """Forwards to a model and adds the time of every call to a shared counter."""

    def __init__(self, net, clock, sync, counter):
        self.net, self.clock, self.sync, self.counter = net, clock, sync, counter
        self.mask_id, self.eos_id, self.vocab_size = net.mask_id, net.eos_id, net.vocab_size
        self.device = next(net.parameters()).device
        self.supports_attention_bias = getattr(net, "supports_attention_bias", False)
        for name in ("block_causal", "block_size", "default_block_length", "cache_mode", "supports_kv_cache"):
            if hasattr(net, name):
                setattr(self, name, getattr(net, name))
        if hasattr(net, "forward_cached"):
            self.new_kv_cache = net.new_kv_cache

    def forward(self, canvas, *, attention_mask=None, rows=None, **bias):
        t0 = self.clock()
        out = self.net(canvas, attention_mask=attention_mask, rows=rows, **bias)
        self.sync()
        self.counter[0] += self.clock() - t0
        return out

    def forward_cached(self, ids, **kw):
        t0 = self.clock()
        out = self.net.forward_cached(ids, **kw)
        self.sync()
        self.counter[0] += self.clock() - t0
        return out


def run_once(model, verifier, prompts, gen, strategy, clock, sync, seed=0):
    counter = [0.0]
    timed, timed_ver = Timed(model, clock, sync, counter), Timed(verifier, clock, sync, counter)
    sync()
    t0 = clock()
    res = decode(timed, prompts, gen_length=gen, strategy=strategy, seed=seed, verifier=timed_ver)
    sync()
    return clock() - t0, counter[0], res


def measure(model, verifier, prompts, gen, strategy, repeats, clock, sync):
    """Best-of-`repeats` model and engine time of one preset, plus its NFE figures."""
    run_once(model, verifier, prompts, gen, strategy, clock, sync)  # warm-up
    totals, models = [], []
    for _ in range(repeats):
        total, inside, res = run_once(model, verifier, prompts, gen, strategy, clock, sync)
        totals.append(total)
        models.append(inside)
    engine = min(t - m for t, m in zip(totals, models))
    model_s = min(models)
    nfe = [r.nfe for r in res]
    committed = sum(r.num_committed for r in res)
    return {
        "nfe": sum(nfe) / len(nfe),
        "max_nfe": max(nfe),
        "tokens_per_step": committed / max(sum(nfe), 1),
        "total_s": min(totals),
        "model_s": model_s,
        "engine_s": engine,
        "overhead": engine / model_s if model_s > 0 else float("nan"),
        "rows_per_step": [sum(1 for n in nfe if n > t) for t in range(max(nfe))],
    }


def bare_steps(model, prompts, gen, rows_per_step, repeats, clock, sync):
    """Best-of time of one plain forward per step at that step's batch size."""
    vocab = model.vocab_size
    p_len = max(len(p) for p in prompts)
    device = next(model.parameters()).device
    canvas = torch.randint(2, vocab, (len(prompts), p_len + gen), device=device)
    mask = torch.ones_like(canvas, dtype=torch.bool)
    best = float("inf")
    for _ in range(repeats):
        sync()
        t0 = clock()
        for b in rows_per_step:
            model(canvas[:b], attention_mask=mask[:b])
        sync()
        best = min(best, clock() - t0)
    return best


def presets(selected: str | None) -> list[str]:
    names = strategy_names()
    if selected:
        wanted = [s.strip() for s in selected.split(",") if s.strip()]
        unknown = [w for w in wanted if w not in names]
        if unknown:
            sys.exit(f"error: unknown preset(s) {unknown} in --presets; choose from {', '.join(names)}")
        return wanted
    return names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one repeat: a seconds-long smoke run")
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=32)
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--vocab", type=int, help="default 4096 (cpu), 126464 (cuda)")
    ap.add_argument("--dim", type=int, help="default 256 (cpu), 4096 (cuda)")
    ap.add_argument("--layers", type=int, help="default 2 (cpu), 4 (cuda)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1, help="torch threads on the CPU")
    ap.add_argument("--presets", help="comma-separated subset of the registered presets")
    ap.add_argument("--blocks", default="none,8", help="block lengths to run each preset with ('none' = one block)")
    ap.add_argument("--json", help="also write every row to this JSON file")
    ap.add_argument("--block-causal", choices=("off", "nocache", "cache"), default="off",
                    help="decode a block-causal stand-in of the same size (engine-built block attention; "
                         "'cache' = the exact KV cache); strategies that refuse block-causal models are skipped")
    args = ap.parse_args()

    if args.device not in ("cpu", "cuda") and not args.device.startswith("cuda:"):
        sys.exit(f"error: --device {args.device!r} is not supported; use cpu or cuda")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("error: --device cuda needs a CUDA build of torch and a GPU; use --device cpu")
    gpu = device.type == "cuda"
    vocab = args.vocab or (126464 if gpu else 4096)
    dim = args.dim or (4096 if gpu else 256)
    layers = args.layers or (4 if gpu else 2)
    heads, ff = (32, 12288) if gpu else (4, 4 * dim)
    if args.quick:
        args.batch, args.prompt, args.gen, args.repeats = 2, 8, 16, 1
        vocab, dim, layers, heads, ff = min(vocab, 128), 32, 1, 2, 64
    for name, value in (("batch", args.batch), ("prompt", args.prompt), ("gen", args.gen), ("repeats", args.repeats)):
        if value < 1:
            sys.exit(f"error: --{name} {value} must be >= 1")
    blocks = []
    for b in args.blocks.split(","):
        b = b.strip().lower()
        if b == "none":
            blocks.append(None)
        elif b.isdigit() and int(b) >= 1 and args.gen % int(b) == 0:
            blocks.append(int(b))
        else:
            sys.exit(f"error: --blocks entry {b!r} must be 'none' or a divisor of --gen {args.gen}")
    names = presets(args.presets)

    torch.set_num_threads(args.threads)
    dtype = torch.bfloat16 if gpu else torch.float32
    if args.block_causal == "off":
        model = StandIn(vocab, dim, layers, heads, ff).to(device=device, dtype=dtype)
        names = [n for n in names if not build_strategy(n).requires_block_causal]  # e.g. indel-threshold
    else:
        cache_mode = "block" if args.block_causal == "cache" else "none"
        model = BlockCausalStandIn(vocab, dim, layers, heads, ff, cache_mode, default_block_length=args.gen).to(
            device=device, dtype=dtype)
        names = [n for n in names if build_strategy(n).supports_block_causal]
    verifier = StandIn(vocab, dim, 1, heads, ff, causal=True, seed=1).to(device=device, dtype=dtype)
    clock = time.perf_counter if gpu else time.process_time
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(2, vocab, (args.prompt,), generator=g).tolist() for _ in range(args.batch)]
    print(
        f"# {device.type}: stand-in d={dim} layers={layers} vocab={vocab} {str(dtype).replace('torch.', '')}; "
        f"batch {args.batch}, prompt {args.prompt}, gen {args.gen}; best of {args.repeats}; "
        f"clock: {'wall + synchronize' if gpu else 'process CPU time'}; torch threads {torch.get_num_threads()}"
        + ("" if args.block_causal == "off" else f"; block-causal stand-in, {args.block_causal}")
    )

    rows = []
    print(f"{'preset':22s} {'blocks':>6s} {'NFE':>6s} {'tok/step':>8s} {'model ms':>9s} {'engine ms':>9s} {'overhead':>8s}")
    with torch.no_grad():
        for name in names:
            for block in blocks:
                # the stand-in declares no DELETE / SPLIT tokens: give indel-threshold two ids of its vocabulary
                extra = {"delete_token": 2, "split_token": 3} if name == "indel-threshold" else {}
                strategy = build_strategy(name, block_length=block, **extra)
                r = measure(model, verifier, prompts, args.gen, strategy, args.repeats, clock, sync)
                bare = (bare_steps(model, prompts, args.gen, r["rows_per_step"], args.repeats, clock, sync)
                        if args.block_causal == "off" else float("nan"))
                r.update(preset=name, block_length=block, per_step_vs_bare=r["total_s"] / bare, kind="greedy",
                         block_causal=args.block_causal)
                rows.append(r)
                print(
                    f"{name:22s} {str(block or '-'):>6s} {r['nfe']:6.1f} {r['tokens_per_step']:8.2f} "
                    f"{r['model_s'] * 1e3:9.1f} {r['engine_s'] * 1e3:9.1f} {100 * r['overhead']:7.1f}%",
                    flush=True,
                )

        if args.block_causal == "off":
            print("\n# per-step cost: whole decode / one bare forward of the canvas per step (same batch sizes)")
            for r in rows:
                print(f"{r['preset']:22s} {str(r['block_length'] or '-'):>6s} {r['per_step_vs_bare']:6.2f}x")

        print("\n# sampling (temperature 1.0) against greedy: whole decode time, best of the repeats")
        for name in [n for n in ("confidence-topk", "confidence-threshold", "eb", "klass") if n in names]:
            for block in blocks:
                greedy = next(r for r in rows if r["preset"] == name and r["block_length"] == block)
                hot = measure(
                    model, verifier, prompts, args.gen,
                    build_strategy(name, block_length=block, temperature=1.0), args.repeats, clock, sync,
                )
                # the same number of steps at each batch size, so compare per step
                per_step_g = greedy["total_s"] / sum(greedy["rows_per_step"])
                per_step_h = hot["total_s"] / sum(hot["rows_per_step"])
                # the sampling cost without the noise of two separately timed model runs:
                # the change in engine work per row-step over greedy's whole cost per row-step
                extra = hot["engine_s"] / sum(hot["rows_per_step"]) - greedy["engine_s"] / sum(greedy["rows_per_step"])
                hot.update(preset=name, block_length=block, kind="sampling", vs_greedy=per_step_h / per_step_g - 1,
                           engine_vs_greedy=extra / per_step_g)
                rows.append(hot)
                print(
                    f"{name:22s} {str(block or '-'):>6s} greedy {per_step_g * 1e3:7.2f} ms/row-step, "
                    f"T=1 {per_step_h * 1e3:7.2f} ms/row-step: {100 * hot['vs_greedy']:+6.1f}% "
                    f"(engine overhead {100 * greedy['overhead']:.1f}% -> {100 * hot['overhead']:.1f}%; "
                    f"extra engine work {100 * hot['engine_vs_greedy']:+.1f}% of greedy)",
                    flush=True,
                )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
