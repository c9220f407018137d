"""The engine's own time per preset, this tree against a baseline tree, paired in one process.

On a machine shared with other jobs two separately timed runs differ by more than a code
change does. Here both versions of `parallelbench.decoding` live in one process (the
baseline's package is copied and renamed `pbbaseline`) and replay the same recorded model
calls alternately, so both see the same load:

- one real decode of each (preset, block length) records every model call (APD's verifier
  included) and the CPU time spent inside them (model time, the better of two decodes);
- each version then decodes `--repeats` times against a model that hands back the recorded
  logits: that is the engine's own work (engine time, median);
- overhead = engine time / model time; change = the median of the paired ratios new / old.

The stand-in is bench_strategies.py's (2 layers, d 256, vocabulary 4,096, batch 8, prompt 32,
32 generated tokens), greedy, 1 torch thread, process CPU time. Both versions must produce the
same tokens (checked).

    python benchmarks/bench_engine_paired.py --baseline-src /tmp/base/src   # e.g. a `git worktree` of main
    python benchmarks/bench_engine_paired.py --baseline-src /tmp/base/src --presets eb,entropy-topk --blocks none
    python benchmarks/bench_engine_paired.py --block-causal cache --baseline-src /tmp/base/src   # cache=block
    python benchmarks/bench_engine_paired.py --block-causal cache --with-forward --baseline-src /tmp/base/src
                                                       # the engine from cold caches, as in a real decode
    python benchmarks/bench_engine_paired.py --quick   # seconds; the tree against itself
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_strategies import BlockCausalStandIn, StandIn  # noqa: E402

import parallelbench  # noqa: E402
from parallelbench import decoding as current  # noqa: E402

CLOCK = time.process_time


def load_baseline(src: Path, into: Path):
    """`parallelbench.decoding` of another source tree, importable beside this one as `pbbaseline`."""
    package = src / "parallelbench"
    if not (package / "decoding" / "__init__.py").exists():
        sys.exit(f"error: --baseline-src {src} holds no parallelbench/decoding package; give a tree's src folder")
    target = into / "pbbaseline"
    shutil.copytree(package, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "data"))
    for path in target.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        path.write_text(re.sub(r"\bparallelbench\b", "pbbaseline", text), encoding="utf-8")
    sys.path.insert(0, str(into))
    return importlib.import_module("pbbaseline.decoding")


BLOCK_CAUSAL = ("block_causal", "block_size", "default_block_length", "cache_mode", "supports_kv_cache")


class Recorder:
    def __init__(self, net):
        self.net, self.outputs, self.seconds = net, [], 0.0
        self.mask_id, self.eos_id, self.vocab_size = net.mask_id, net.eos_id, net.vocab_size
        self.device = next(net.parameters()).device
        self.supports_attention_bias = getattr(net, "supports_attention_bias", False)
        for name in BLOCK_CAUSAL:  # the block-causal contract, when the net has it
            if hasattr(net, name):
                setattr(self, name, getattr(net, name))

    def forward(self, canvas, *, attention_mask=None, rows=None, **kw):
        t0 = CLOCK()
        out = self.net(canvas, attention_mask=attention_mask, rows=rows, **kw)
        self.seconds += CLOCK() - t0
        self.outputs.append(out)
        return out

    def new_kv_cache(self, batch, length):
        return self.net.new_kv_cache(batch, length)

    def forward_cached(self, ids, **kw):
        t0 = CLOCK()
        out = self.net.forward_cached(ids, **kw)
        self.seconds += CLOCK() - t0
        self.outputs.append(out)
        return out


def block_causal_case(preset: str, blocks: str, sizes: tuple[int, int, int, int, int, int, int]):
    """(net, strategy, prompts, block length, generator) of a replayed block-causal decode of `preset`
    (profile_warm_step.py, cold_step.py): the stand-in with `cache=block` and one torch thread;
    sizes = (vocab, dim, layers, heads, batch, prompt, gen). A bad preset or block length exits with
    one line."""
    vocab, dim, layers, heads, batch, prompt, gen = sizes
    if preset not in current.strategy_names():
        sys.exit(f"error: unknown preset {preset!r}; choose from {', '.join(current.strategy_names())}")
    b = blocks.strip().lower()
    if b != "none" and not (b.isdigit() and int(b) >= 1 and gen % int(b) == 0):
        sys.exit(f"error: --blocks {b!r} must be 'none' or a divisor of the generation length {gen}")
    block = gen if b == "none" else int(b)
    torch.set_num_threads(1)
    net = BlockCausalStandIn(vocab, dim, layers, heads, 4 * dim, "block", default_block_length=gen)
    # the stand-in declares no DELETE / SPLIT tokens: indel-threshold gets two ids of its vocabulary
    extra = {"delete_token": 2, "split_token": 3} if preset == "indel-threshold" else {}
    strategy = current.build_strategy(preset, block_length=block, **extra)
    if not strategy.supports_block_causal:
        sys.exit(f"error: preset {preset!r} cannot decode a block-causal model; pick another with --preset")
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(2, vocab, (prompt,), generator=g).tolist() for _ in range(batch)]
    return net, strategy, prompts, block, g


class Replay:
    """Hands back the recorded logits. With `burn` (a callable), also runs it in each call, its time
    kept in `burned`: a real forward between the engine's steps, which leaves the engine's code and
    data out of the caches the way a decode does (without it a replay measures a warm engine)."""

    def __init__(self, rec: Recorder, burn=None):
        self.outputs, self.i, self.burn, self.burned = rec.outputs, 0, burn, 0.0
        self.mask_id, self.eos_id, self.vocab_size, self.device = rec.mask_id, rec.eos_id, rec.vocab_size, rec.device
        self.supports_attention_bias = rec.supports_attention_bias
        for name in BLOCK_CAUSAL:
            if hasattr(rec, name):
                setattr(self, name, getattr(rec, name))

    def forward(self, canvas, **kw):
        out = self.outputs[self.i]
        self.i += 1
        if self.burn is not None:
            t0 = CLOCK()
            self.burn()
            self.burned += CLOCK() - t0
        return out

    def new_kv_cache(self, batch, length):
        return ()  # the recorded calls need no cache, but the engine must see one

    forward_cached = forward


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline-src", type=Path, help="src folder of the tree to compare with (default: this tree)")
    ap.add_argument("--presets", help="comma-separated subset of the registered presets")
    ap.add_argument("--blocks", default="none,8", help="block lengths ('none' = one block)")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--json", help="also write every row to this JSON file")
    ap.add_argument("--with-forward", action="store_true",
                    help="run a real forward of the stand-in (not timed) in every replayed call, so the engine "
                         "works from cold caches as in a real decode")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, two presets: a seconds-long smoke run")
    ap.add_argument("--block-causal", choices=("off", "nocache", "cache"), default="off",
                    help="decode bench_strategies.py's block-causal stand-in (cache: the exact KV cache); "
                         "presets that refuse a block-causal model are skipped")
    args = ap.parse_args()
    if args.repeats < 1:
        sys.exit(f"error: --repeats {args.repeats} must be >= 1")
    vocab, dim, layers, heads, batch, prompt, gen = 4096, 256, 2, 4, 8, 32, 32
    if args.quick:
        vocab, dim, layers, heads, batch, prompt, gen, args.repeats = 128, 32, 1, 2, 2, 8, 8, 1
        args.presets = args.presets or "confidence-topk,eb"
    names = current.strategy_names()
    wanted = [p.strip() for p in args.presets.split(",")] if args.presets else names
    unknown = [w for w in wanted if w not in names]
    if unknown:
        sys.exit(f"error: unknown preset(s) {unknown} in --presets; choose from {', '.join(names)}")
    blocks = []
    for b in args.blocks.split(","):
        b = b.strip().lower()
        if b != "none" and not (b.isdigit() and int(b) >= 1 and gen % int(b) == 0):
            sys.exit(f"error: --blocks entry {b!r} must be 'none' or a divisor of the generation length {gen}")
        blocks.append(None if b == "none" else int(b))
    src = args.baseline_src or Path(parallelbench.__file__).resolve().parents[1]

    torch.set_num_threads(1)
    if args.block_causal == "off":
        net = StandIn(vocab, dim, layers, heads, 4 * dim)
        wanted = [w for w in wanted if not getattr(current.build_strategy(w), "requires_block_causal", False)]
    else:
        net = BlockCausalStandIn(vocab, dim, layers, heads, 4 * dim, "block" if args.block_causal == "cache" else "none",
                                 default_block_length=gen)
        wanted = [w for w in wanted if current.build_strategy(w).supports_block_causal]
    verifier = StandIn(vocab, dim, 1, heads, 4 * dim, causal=True, seed=1)
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(2, vocab, (prompt,), generator=g).tolist() for _ in range(batch)]
    burn_ids = torch.randint(2, vocab, (batch, prompt + 8), generator=g)
    burn = (lambda: net(burn_ids)) if args.with_forward else None
    rows = []
    with tempfile.TemporaryDirectory() as tmp, torch.no_grad():
        old = load_baseline(src, Path(tmp))
        print(f"# baseline {src}; stand-in d={dim} layers={layers} vocab={vocab}; batch {batch}, prompt {prompt}, "
              f"gen {gen}; greedy; process CPU time; 1 torch thread; engine = median of {args.repeats} paired replays"
              + ("; a real forward in every replayed call (not timed)" if args.with_forward else "")
              + ("" if args.block_causal == "off" else f"; block-causal stand-in, {args.block_causal}"))
        print(f"{'preset':22s} {'blocks':>6s} {'calls':>5s} {'model ms':>9s} {'engine ms old':>13s} {'new':>7s} "
              f"{'overhead old':>12s} {'new':>6s} {'change':>7s}")
        for name in wanted:
            for block in blocks:
                extra = {"delete_token": 2, "split_token": 3} if name == "indel-threshold" else {}  # no such tokens here
                s_old = old.build_strategy(name, block_length=block, **extra)
                s_new = current.build_strategy(name, block_length=block, **extra)
                model_s = []
                for _ in range(2):
                    rec, vrec = Recorder(net), Recorder(verifier)
                    res = current.decode(rec, prompts, gen, s_new, verifier=vrec)
                    model_s.append(rec.seconds + vrec.seconds)
                ref = old.decode(Replay(rec), prompts, gen, s_old, verifier=Replay(vrec))
                if [r.tokens for r in ref] != [r.tokens for r in res]:
                    sys.exit(f"error: {name} (block {block}) decodes differently in the two trees")
                t_old, t_new = [], []
                for _ in range(args.repeats):
                    for lib, s, out in ((old, s_old, t_old), (current, s_new, t_new)):
                        replay, v_replay = Replay(rec, burn), Replay(vrec, burn)
                        t0 = CLOCK()
                        lib.decode(replay, prompts, gen, s, verifier=v_replay)
                        out.append(CLOCK() - t0 - replay.burned - v_replay.burned)
                m = min(model_s)
                row = {"preset": name, "block_length": block, "calls": len(rec.outputs), "model_s": m,
                       "engine_old_s": statistics.median(t_old), "engine_new_s": statistics.median(t_new),
                       "change": statistics.median(b / a for a, b in zip(t_old, t_new)) - 1.0}
                rows.append(row)
                print(f"{name:22s} {str(block or '-'):>6s} {row['calls']:5d} {m * 1e3:9.1f} "
                      f"{row['engine_old_s'] * 1e3:13.1f} {row['engine_new_s'] * 1e3:7.1f} "
                      f"{100 * row['engine_old_s'] / m:11.1f}% {100 * row['engine_new_s'] / m:5.1f}% "
                      f"{100 * row['change']:+6.1f}%", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
