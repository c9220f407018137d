"""edit-threshold's two greedy paths, by vocabulary: where the block pass stops paying on the CPU.

A greedy edit-threshold step over a view of one block either takes one softmax over every slot of
the block (the block pass) or finds the block's committed slots and bounds their softmax's
normaliser (the bounded path); the preset picks the block pass up to `DENSE_UP_TO` logits a step
on the CPU (decoding/schedules/edit_threshold.py). This decodes bench_strategies.py's block-causal
stand-in (2 layers, d 256, `cache=block`; batch 8, prompt 32, 32 tokens, greedy) at several
vocabularies with each path forced, and prints the engine's own time per decode (process CPU time
outside the model's calls, best of `--repeats` decodes, one torch thread) and whether both paths
gave the same tokens.

    python benchmarks/bench_edit_block_pass.py                          # the table in docs/benchmarks.md
    python benchmarks/bench_edit_block_pass.py --vocabs 4096,65536 --batch 1
    python benchmarks/bench_edit_block_pass.py --quick                  # seconds: tiny sizes
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_strategies import BlockCausalStandIn  # noqa: E402

from parallelbench.decoding import build_strategy, decode  # noqa: E402
from parallelbench.decoding.schedules import edit_threshold  # noqa: E402

PATHS = {"bounded": 0, "block pass": 1 << 62}  # DENSE_UP_TO forcing each path


def engine_ms(model: BlockCausalStandIn, prompts: list[list[int]], block: int | None, repeats: int) -> tuple[float, list]:
    """(the engine's best time per decode in ms, the tokens) with the model's calls timed apart."""
    spent = [0.0]
    forward = model.forward_cached

    def timed(*args, **kwargs):
        t = time.process_time()
        out = forward(*args, **kwargs)
        spent[0] += time.process_time() - t
        return out

    model.forward_cached = timed
    try:
        best, tokens = float("inf"), None
        for _ in range(repeats):
            spent[0] = 0.0
            t = time.process_time()
            results = decode(model, prompts, gen_length=32, strategy=build_strategy("edit-threshold", block_length=block))
            best = min(best, time.process_time() - t - spent[0])
            tokens = [r.tokens for r in results]
    finally:
        model.forward_cached = forward
    return best * 1e3, tokens


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocabs", default="4096,8192,16384,32768", help="comma-separated vocabulary sizes")
    ap.add_argument("--batch", type=int, default=8, help="rows decoded together")
    ap.add_argument("--repeats", type=int, default=3, help="decodes per path (best)")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one decode: a seconds-long smoke run")
    args = ap.parse_args()
    try:
        vocabs = [int(v) for v in args.vocabs.split(",")]
    except ValueError:
        sys.exit(f"error: --vocabs {args.vocabs!r} must be comma-separated integers, e.g. 4096,32768")
    if args.batch < 1 or args.repeats < 1 or any(v < 8 for v in vocabs):
        sys.exit("error: --batch and --repeats must be >= 1 and every vocabulary >= 8")
    dim, layers, heads, ff = 256, 2, 4, 1024
    if args.quick:
        vocabs, dim, layers, heads, ff, args.batch, args.repeats = [256], 32, 1, 2, 64, 2, 1
    torch.set_num_threads(1)
    print(f"# edit-threshold, greedy; stand-in d={dim} layers={layers}, cache=block; batch {args.batch}, prompt 32, "
          f"32 tokens; engine ms per decode = process CPU time outside the model's calls, best of {args.repeats}; "
          f"1 torch thread; DENSE_UP_TO = {edit_threshold.DENSE_UP_TO} logits")
    print(f"{'vocab':>7} {'blocks':>6} {'logits/step':>11} {'bounded ms':>10} {'block pass ms':>13} {'change':>7}  same tokens")
    saved = edit_threshold.DENSE_UP_TO
    for vocab in vocabs:
        model = BlockCausalStandIn(vocab, dim, layers, heads, ff, "block", default_block_length=32)
        g = torch.Generator().manual_seed(0)
        prompts = [torch.randint(2, vocab, (32,), generator=g).tolist() for _ in range(args.batch)]
        for block in (8, None):
            got = {}
            try:
                for name, limit in PATHS.items():
                    edit_threshold.DENSE_UP_TO = limit
                    got[name] = engine_ms(model, prompts, block, args.repeats)
            finally:
                edit_threshold.DENSE_UP_TO = saved
            (old, old_tokens), (new, new_tokens) = got["bounded"], got["block pass"]
            width = block or 32
            print(f"{vocab:>7} {width:>6} {args.batch * width * vocab:>11} {old:>10.1f} {new:>13.1f} "
                  f"{100 * (new / old - 1):>+6.1f}%  {old_tokens == new_tokens}")


if __name__ == "__main__":
    main()
