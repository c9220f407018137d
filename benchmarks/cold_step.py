"""Why a block-causal step costs more in a decode than warm: what between two steps slows the next.

In a decode the engine's step follows the model's forward; replayed warm (nothing between the
steps) the same step costs much less. This records one real decode of bench_strategies.py's
block-causal stand-in (2 layers, d 256, vocabulary 4,096, batch 8, prompt 32, 32 generated tokens,
greedy, `cache=block`, 1 torch thread) and replays it with one of these between every two steps
(never timed):

- nothing (warm);
- a real forward of the stand-in (what a decode does);
- a sweep over N MB of data (an in-place absolute value over a float32 buffer: one op kind, so it
  evicts data and barely any code);
- the first call of 40 torch op kinds the engine does not use, on 4-element tensors (it evicts
  code and dispatcher paths, and barely any data);
- a pure-Python busy loop 1/16, 1/4 and 1 times as long as the forward, or a sleep as long (no data, no torch op: only time
  passes, during which other work on the machine may run on the caches the cores share).

Engine time per model call = (replayed decode time - time between the steps) / calls, process CPU
time, the median of `--repeats` rounds (each round replays every row once). If the forward's cost is matched by a data sweep of a few
MB and not by the code burn, the step's extra cost is its data (the interpreter's and the
dispatcher's scattered state, the allocator's) reloaded from memory once the forward has streamed
its weights through the last-level cache. If a busy loop or a sleep as long as the forward costs as
much, it is time itself: on a shared host, other tenants' work evicts the step's data from the
shared cache while the forward runs, and the step's in-situ cost depends on the host's load.

    python benchmarks/cold_step.py                                  # confidence-topk, blocks of 8
    python benchmarks/cold_step.py --preset random --sweeps 2,16 --repeats 9
    python benchmarks/cold_step.py --quick                          # seconds: tiny sizes
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch
from bench_engine_paired import CLOCK, Recorder, Replay, block_causal_case

from parallelbench.decoding import decode

#: op kinds the block-causal engine does not run (benchmarks/count_step_ops.py lists those it does)
_FOREIGN = ("sin", "cos", "tan", "erf", "lgamma", "digamma", "expm1", "log1p", "sinh", "cosh", "atan", "asin",
            "erfinv", "sigmoid", "trunc", "frac", "ceil", "floor", "round", "sqrt", "rsqrt", "reciprocal", "square",
            "sign", "abs", "neg", "var", "std", "norm", "prod", "i0", "logit", "erfc", "exp2", "log2", "log10",
            "deg2rad", "rad2deg", "sinc", "nan_to_num")


def code_burn(x: torch.Tensor):
    """One call of each foreign op kind on a tiny tensor: their code, little data."""
    def burn():
        for name in _FOREIGN:
            getattr(torch, name)(x)
    return burn


def data_burn(mb: int):
    """An in-place pass over `mb` MB of float32 (abs_ keeps the values finite and the kernel the same)."""
    buf = torch.rand(mb * 262144)
    return lambda: buf.abs_()


def spin_burn(seconds: float):
    """A busy loop in Python for `seconds` of wall time: the core stays busy, touching almost no data."""
    def burn():
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass
    return burn


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="confidence-topk")
    ap.add_argument("--blocks", default="8", help="block length, or 'none' for one block of 32")
    ap.add_argument("--sweeps", default="1,2,4,8,16", help="comma-separated data sweep sizes in MB")
    ap.add_argument("--repeats", type=int, default=7, help="rounds; each replays every row once (median per row)")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one replay per row: a seconds-long smoke run")
    args = ap.parse_args()
    vocab, dim, layers, heads, batch, prompt, gen = 4096, 256, 2, 4, 8, 32, 32
    if args.quick:
        vocab, dim, layers, heads, batch, prompt, gen, args.repeats, args.sweeps = 128, 32, 1, 2, 2, 8, 8, 1, "1"
    if args.repeats < 1:
        sys.exit(f"error: --repeats {args.repeats} must be >= 1")
    try:
        sweeps = [int(m) for m in args.sweeps.split(",") if m.strip()]
    except ValueError:
        sys.exit(f"error: --sweeps {args.sweeps!r} must be comma-separated whole numbers of MB, e.g. 2,8,16")
    if any(m < 1 for m in sweeps):
        sys.exit(f"error: --sweeps {args.sweeps!r}: every size must be at least 1 MB")
    net, strategy, prompts, block, g = block_causal_case(args.preset, args.blocks, (vocab, dim, layers, heads, batch,
                                                                                   prompt, gen))
    burn_ids = torch.randint(2, vocab, (batch, prompt + block), generator=g)
    burns = [("nothing (warm)", None), ("a real forward", lambda: net(burn_ids))]
    burns += [(f"a data sweep of {m} MB", data_burn(m)) for m in sweeps]
    burns.append((f"{len(_FOREIGN)} foreign op kinds", code_burn(torch.rand(4))))
    with torch.no_grad():
        rec = Recorder(net)
        decode(rec, prompts, gen, strategy)
        calls = len(rec.outputs)
        model = rec.seconds / calls
        burns += [(f"a Python busy loop of {model * f * 1e3:.1f} ms", spin_burn(model * f)) for f in (1 / 16, 1 / 4, 1)]
        burns.append((f"a sleep of {model * 1e3:.1f} ms", lambda: time.sleep(model)))
        print(f"# {args.preset}, blocks of {block}; stand-in d={dim} layers={layers} vocab={vocab}; batch {batch}, "
              f"prompt {prompt}, gen {gen}; cache=block; greedy; 1 torch thread; process CPU time; median of "
              f"{args.repeats} rounds")
        print(f"# model calls per decode {calls}; model time per call {model * 1e3:.2f} ms (one real decode); "
              f"10% of it {model * 1e2:.3f} ms")
        print("| between two steps | engine ms per call | engine / model |")
        print("| --- | --- | --- |")
        decode(Replay(rec), prompts, gen, strategy)  # the engine's first-use work, untimed
        times: dict[str, list[float]] = {name: [] for name, _ in burns}
        for _ in range(args.repeats):  # rounds over the rows: a drift in the machine's speed falls on all of them
            for name, burn in burns:
                replay = Replay(rec, burn)
                t0 = CLOCK()
                decode(replay, prompts, gen, strategy)
                times[name].append(CLOCK() - t0 - replay.burned)
        for name, _ in burns:
            per_call = statistics.median(times[name]) / calls
            print(f"| {name} | {per_call * 1e3:.3f} | {per_call / model:.1%} |")


if __name__ == "__main__":
    main()
