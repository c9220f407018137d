"""Tensor ops the engine issues outside the model, per model call, on the block-causal stand-in.

On the CPU stand-in the engine's share of a step is set by how many small ops it issues, not by
their arithmetic, and above all by how many *kinds*: right after the model's forward the first op
of a kind costs some 20-90 microseconds on this machine (its code is no longer in the caches), a
second op of the same kind about 3. This counts both (`kinds per call`: distinct aten ops between
two model calls, averaged) with a `TorchDispatchMode` that is
switched off inside the model's forward (bench_strategies.py's stand-in: 2 layers, d 256,
vocabulary 4,096, batch 8, prompt 32, 32 generated tokens, greedy, cache=block).

    python benchmarks/count_step_ops.py                                  # every block-capable preset, blocks of 8
    python benchmarks/count_step_ops.py --presets confidence-topk --blocks none --top 20   # the commonest ops
    python benchmarks/count_step_ops.py --quick                          # seconds: two presets
    python benchmarks/count_step_ops.py --presets credit --timing 25      # where the engine's time goes

`--timing N` also times every op's own call (the kernel and the dispatcher below the mode; the
Python around it is not counted) in a real decode, best of 3 decodes, and lists the N source lines
and ops that take the most, with how much of it is the step's first op of that kind. The mode's
own Python runs between the ops, so the figures are a little higher than in a plain decode.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from bench_strategies import BlockCausalStandIn
from parallelbench.decoding import build_strategy, decode, strategy_names


class _Count(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops: collections.Counter = collections.Counter()
        self.on = True
        self.kinds: set[str] = set()  # the op kinds of the current step
        self.distinct = 0  # distinct op kinds, summed over the steps

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.on:
            self.ops[str(func)] += 1
            self.kinds.add(str(func))
        return func(*args, **(kwargs or {}))

    def step_ends(self) -> None:
        self.distinct += len(self.kinds)
        self.kinds = set()


class _Timed(_Count):
    """_Count, plus the time inside each op by (source line in parallelbench, op), and the part of
    it spent in the first op of its kind in each step."""

    def __init__(self):
        super().__init__()
        self.time: collections.Counter = collections.Counter()
        self.first: collections.Counter = collections.Counter()
        self.calls: collections.Counter = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not self.on:
            return func(*args, **(kwargs or {}))
        frame = sys._getframe(1)
        while frame is not None and "parallelbench" not in frame.f_code.co_filename:
            frame = frame.f_back
        line = "?" if frame is None else (
            f"{frame.f_code.co_filename.rsplit('parallelbench/', 1)[-1]}:{frame.f_lineno}")
        kind = str(func)
        fresh = kind not in self.kinds
        t0 = time.perf_counter_ns()
        out = super().__torch_dispatch__(func, types, args, kwargs)
        dt = time.perf_counter_ns() - t0
        key = (line, kind)
        self.time[key] += dt
        self.calls[key] += 1
        if fresh:
            self.first[key] += dt
        return out


class _Uncounted:
    """The stand-in with its forwards left out of the count."""

    def __init__(self, net, mode: _Count):
        self.net, self.mode, self.calls = net, mode, 0
        for name in ("mask_id", "eos_id", "vocab_size", "block_causal", "block_size", "default_block_length",
                     "cache_mode", "supports_kv_cache", "supports_attention_bias"):
            setattr(self, name, getattr(net, name))
        self.device, self.new_kv_cache = torch.device("cpu"), net.new_kv_cache

    def _call(self, fn, *args, **kw):
        self.mode.step_ends()
        self.mode.on, self.calls = False, self.calls + 1
        try:
            return fn(*args, **kw)
        finally:
            self.mode.on = True

    def forward(self, *args, **kw):
        return self._call(self.net, *args, **kw)

    def forward_cached(self, *args, **kw):
        return self._call(self.net.forward_cached, *args, **kw)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", default="", help="comma-separated presets (default: every block-capable one)")
    ap.add_argument("--blocks", default="8", help="block length, or 'none' for one block of 32")
    ap.add_argument("--top", type=int, default=0, help="also list the N commonest ops of each preset")
    ap.add_argument("--quick", action="store_true", help="confidence-topk and random only (a smoke run)")
    ap.add_argument("--timing", type=int, default=0, metavar="N",
                    help="also time each op in a real decode and list the N costliest (source line, op)")
    args = ap.parse_args()
    if args.quick:
        args.presets = "confidence-topk,random"
    torch.set_num_threads(1)
    block = None if args.blocks == "none" else int(args.blocks)
    unknown = [n for n in args.presets.split(",") if n and n not in strategy_names()]
    if unknown:
        sys.exit(f"error: unknown preset {unknown[0]!r}; valid: {', '.join(strategy_names())}")
    names = [n for n in args.presets.split(",") if n] or [
        n for n in strategy_names() if build_strategy(n).supports_block_causal]
    net = BlockCausalStandIn(4096, 256, 2, 4, 1024, "block", default_block_length=32)
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(2, 4096, (32,), generator=g).tolist() for _ in range(8)]
    print(f"{'preset':22s} {'calls':>5s} {'ops per call':>12s} {'kinds per call':>14s}")
    for name in names:
        mode = _Count()
        model = _Uncounted(net, mode)
        extra = {"delete_token": 2, "split_token": 3} if name == "indel-threshold" else {}  # no such tokens here
        with mode:
            decode(model, prompts, gen_length=32, strategy=build_strategy(name, block_length=block, **extra))
        mode.step_ends()
        print(f"{name:22s} {model.calls:5d} {sum(mode.ops.values()) / model.calls:12.1f} "
              f"{mode.distinct / model.calls:14.1f}")
        for op, n in mode.ops.most_common(args.top):
            print(f"    {n / model.calls:6.1f} {op}")
        if args.timing:
            _print_timing(net, prompts, name, block, extra, args.timing)


def _print_timing(net, prompts, name: str, block: int | None, extra: dict, top: int) -> None:
    best = None
    for _ in range(3):
        mode = _Timed()
        model = _Uncounted(net, mode)
        with mode:
            decode(model, prompts, gen_length=32, strategy=build_strategy(name, block_length=block, **extra))
        if best is None or sum(mode.time.values()) < sum(best[0].time.values()):
            best = (mode, model.calls)
    mode, calls = best
    total, first = sum(mode.time.values()) / calls / 1e3, sum(mode.first.values()) / calls / 1e3
    print(f"    inside ops: {total:.1f} us per call, {first:.1f} of it the first op of its kind in the step")
    print(f"    {'us/call':>8s} {'first':>6s} {'n/call':>6s}  source line, op")
    for key, ns in mode.time.most_common(top):
        print(f"    {ns / calls / 1e3:8.1f} {mode.first[key] / calls / 1e3:6.1f} {mode.calls[key] / calls:6.1f}  "
              f"{key[0]} {key[1]}")


if __name__ == "__main__":
    sys.exit(main())
