"""Would compiling the decoding step shrink the engine's share on the CPU? One measurement.

On the CPU stand-in the engine's time per step is spread over many small tensor ops, each of
which costs most on its first call after the model's forward (docs/benchmarks.md, issue 33
item 4). A compiled step would run one generated kernel instead. This times a representative
step, confidence top-k over one block written densely (softmax, mask token zeroed, max,
top-k, the commit's writes), eager against `torch.compile(fullgraph=True)` (inductor), right
after a forward of bench_strategies.py's block-causal stand-in (2 layers, d 256, vocabulary
4,096; batch 8, blocks of 8), and also warm (the step run just before). Process CPU time,
median of `--repeats` steps, one torch thread. It also checks that both give the same outputs.

    python benchmarks/bench_compiled_step.py               # the figures in docs/benchmarks.md
    python benchmarks/bench_compiled_step.py --quick       # seconds: tiny sizes
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_strategies import BlockCausalStandIn  # noqa: E402

MASK_ID = 0


def step(logits: torch.Tensor, masked: torch.Tensor, canvas: torch.Tensor, order: torch.Tensor, k: int,
         t: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Confidence top-k on a block [n, B, V]: commit the k most confident masked slots per row."""
    p = torch.softmax(logits, dim=-1)
    p[..., MASK_ID] = 0.0
    conf, x0 = p.max(dim=-1)
    score = torch.where(masked, conf, torch.full_like(conf, float("-inf")))
    idx = score.topk(k, dim=1).indices
    commit = torch.zeros_like(masked).scatter(1, idx, True) & masked
    return torch.where(commit, x0, canvas), masked & ~commit, torch.where(commit, t, order), commit.any()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny sizes, a few repeats: a seconds-long smoke run")
    ap.add_argument("--repeats", type=int, default=40, help="steps timed per variant (median)")
    args = ap.parse_args()
    if args.repeats < 1:
        sys.exit(f"error: --repeats {args.repeats} must be >= 1")
    vocab, dim, layers, heads, ff, n, block = 4096, 256, 2, 4, 1024, 8, 8
    if args.quick:
        vocab, dim, layers, heads, ff, n, block, args.repeats = 256, 32, 1, 2, 64, 2, 4, 3
    torch.set_num_threads(1)
    model = BlockCausalStandIn(vocab, dim, layers, heads, ff, "none", default_block_length=32)
    ids = torch.randint(2, vocab, (n, 40))
    g = torch.Generator().manual_seed(0)

    def inputs(r: int):
        out = model(ids)  # the forward right before the step, as in a decode
        masked = torch.rand(n, block, generator=g) < 0.7
        masked[:, 0] = True
        return (out[:, -block:].contiguous(), masked, torch.randint(2, vocab, (n, block), generator=g),
                torch.full((n, block), -1), 2, torch.tensor(r))

    def timed(fn, warm: bool) -> float:
        times = []
        for r in range(args.repeats):
            a = inputs(r)
            if warm:
                fn(*a)
            t0 = time.process_time()
            bool(fn(*a)[3])  # the step's one read of the device
            times.append(time.process_time() - t0)
        return statistics.median(times) * 1e6

    compiled = torch.compile(step, dynamic=False, fullgraph=True)
    with torch.inference_mode():
        t0 = time.perf_counter()
        compiled(*inputs(0))
        print(f"# torch {torch.__version__}; stand-in d={dim} vocab={vocab}; batch {n}, block {block}; "
              f"process CPU time, median of {args.repeats}; compile {time.perf_counter() - t0:.1f} s")
        a = inputs(0)
        same = all(torch.equal(u, v) for u, v in zip(step(*a), compiled(*a)))
        for name, fn in (("eager", step), ("compiled", compiled)):
            print(f"{name:9s} after a forward {timed(fn, False):8.0f} us   warm {timed(fn, True):8.0f} us")
        print(f"same outputs: {same}")


if __name__ == "__main__":
    main()
