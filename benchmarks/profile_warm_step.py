"""Where a warm block-causal step's time goes: cProfile over replayed decodes, no forward between steps.

bench_engine_paired.py times the engine from replayed model calls; without `--with-forward` its
steps run warm (nothing evicts the engine's code and data between them), which is the least a step
can cost on this machine. This records one real decode of bench_strategies.py's block-causal
stand-in (2 layers, d 256, vocabulary 4,096, batch 8, prompt 32, 32 generated tokens, greedy,
`cache=block`, 1 torch thread), replays it `--decodes` times under cProfile and prints the warm
engine time per model call beside 10% of the recorded model time per call, then the functions and
torch calls with the most time of their own.

    python benchmarks/profile_warm_step.py                                   # confidence-topk, blocks of 8
    python benchmarks/profile_warm_step.py --preset eb --blocks none --top 30
    python benchmarks/profile_warm_step.py --quick                           # seconds: tiny sizes
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time

import torch
from bench_engine_paired import Recorder, Replay, block_causal_case

from parallelbench.decoding import decode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="confidence-topk")
    ap.add_argument("--blocks", default="8", help="block length, or 'none' for one block of 32")
    ap.add_argument("--decodes", type=int, default=20, help="replayed decodes under the profiler")
    ap.add_argument("--top", type=int, default=25, help="rows of the profile to print")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, two decodes: a seconds-long smoke run")
    args = ap.parse_args()
    vocab, dim, layers, heads, batch, prompt, gen = 4096, 256, 2, 4, 8, 32, 32
    if args.quick:
        vocab, dim, layers, heads, batch, prompt, gen, args.decodes, args.top = 128, 32, 1, 2, 2, 8, 8, 2, 8
    if args.decodes < 1:
        sys.exit(f"error: --decodes {args.decodes} must be >= 1")
    net, strategy, prompts, block, _ = block_causal_case(args.preset, args.blocks, (vocab, dim, layers, heads, batch,
                                                                                   prompt, gen))
    rec = Recorder(net)
    with torch.no_grad():
        decode(rec, prompts, gen_length=gen, strategy=strategy)
        calls = len(rec.outputs)

        def replay() -> None:
            for _ in range(args.decodes):
                decode(Replay(rec), prompts, gen_length=gen, strategy=strategy)

        replay()  # warm-up
        t0 = time.process_time()
        replay()
        warm = (time.process_time() - t0) / (args.decodes * calls)
        profile = cProfile.Profile()
        profile.enable()
        replay()
        profile.disable()
    print(f"# {args.preset}, blocks of {block}; stand-in d={dim} layers={layers} vocab={vocab}; batch {batch}, "
          f"prompt {prompt}, gen {gen}; cache=block; greedy; 1 torch thread; process CPU time")
    print(f"model calls per decode {calls}; model time per call {1e3 * rec.seconds / calls:.2f} ms (one real decode); "
          f"10% of it {1e2 * rec.seconds / calls:.3f} ms")
    print(f"warm engine time per call {1e3 * warm:.3f} ms (one timed pass of {args.decodes} replayed decodes, "
          f"without the profiler)\n")
    pstats.Stats(profile, stream=sys.stdout).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
