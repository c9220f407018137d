"""The least an eager decoding step can cost beside the block-causal stand-in's cached forward.

Issue 33 item 4 asks the engine's share of a `cache=block` decode to stay at most 10% of the
model's time on the CPU stand-in (bench_strategies.py's: 2 layers, d 256, vocabulary 4,096,
batch 8, prompt 32, 32 tokens, blocks of 8, one torch thread, process CPU time). This measures
what no engine can go below with eager PyTorch ops: the same cached forwards, and between them
only the vocabulary work a rule needs plus one host read, written as a bare loop (no strategy
API, no records, no windowing, no state):

- top1:    the greedy top-1 commit (focus rows, softmax, mask token, max, best row, write);
- lse:     top1 plus a logsumexp over every position of the block (the least vocabulary work of a
           rule that may rewrite any position of the block: each position's normaliser);
- softmax: top1 plus a softmax over every position of the block (the cheapest fused pass that
           gives each position's probabilities);
- block3:  a logsumexp, an argmax and a top-5 over the whole block's logits (the vocabulary work
           indel-threshold did each step until its fifth pass), then the top1 commit;
- indel:   indel-threshold's own vocabulary pass since then (`_vocab_choices`: one chunked search
           for the best token outside mask / DELETE / SPLIT, the three columns, a softmax over the
           block), then the top1 commit (a second vocabulary pass: an upper bound of indel's floor);
- indel1:  that pass alone, its own argmax and probability committing each row's best masked slot
           (the least an indel-threshold step can do: its floor).

Right after a forward the first op of each kind in a step costs tens of microseconds on this
machine (its code has left the caches), so these floors are far above the ops' warm cost.

    python benchmarks/bench_step_floor.py
    python benchmarks/bench_step_floor.py --repeats 15 --blocks 32
    python benchmarks/bench_step_floor.py --quick          # tiny sizes, seconds: a smoke run
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

from parallelbench.decoding.schedules.indel_threshold import _vocab_choices  # noqa: E402

# the stand-in's sizes (--quick shrinks them)
VOCAB, DIM, LAYERS, HEADS, BATCH, PROMPT, GEN = 4096, 256, 2, 4, 8, 32, 32
CLOCK = time.process_time


def bias_for(start: int, end: int, block: int) -> torch.Tensor:
    """[BATCH, end - start, end] block-causal additive bias (every row unpadded)."""
    blocks = torch.div(torch.arange(end), block, rounding_mode="floor")
    see = blocks[None, :] <= blocks[start:end, None]
    return torch.zeros(BATCH, end - start, end).masked_fill_(~see, float("-inf"))


def step(kind: str, logits: torch.Tensor, masked: torch.Tensor, canvas: torch.Tensor, n: int) -> None:
    """One bare step on the block's logits [BATCH, block, V]; commits each row's best position."""
    if kind in ("lse", "block3"):
        torch.logsumexp(logits, dim=-1)
    if kind == "softmax":
        torch.softmax(logits, dim=-1)
    if kind == "block3":
        logits.argmax(dim=-1)
        logits.topk(5, dim=-1)
    if kind == "indel":
        _vocab_choices(logits, 0, 2, 3)  # the stand-in's mask id, and bench_strategies.py's DELETE / SPLIT
    if kind == "indel1":  # the pass's own argmax and probability commit: no second vocabulary pass
        x, _, p, _ = _vocab_choices(logits, 0, 2, 3, no_mask=masked)
        best = torch.where(masked, p, -1.0).argmax(dim=1, keepdim=True)
        canvas.scatter_(1, best, x.gather(1, best))
        masked.scatter_(1, best, False)
        int(masked.sum())
        return
    r, p = torch.nonzero_static(masked, size=n).unbind(1)
    probs = torch.softmax(logits[r, p], dim=-1)
    probs[:, 0] = 0.0
    conf, tok = probs.max(dim=-1)
    score = torch.full(masked.shape, -1.0)
    score[r, p] = conf
    best = score.argmax(dim=1, keepdim=True)
    x0 = torch.zeros(masked.shape, dtype=torch.long)
    x0[r, p] = tok
    canvas.scatter_(1, best, x0.gather(1, best))
    masked.scatter_(1, best, False)
    int(masked.sum())  # the step's one read of the device


def decode(net, kind: str, block: int) -> tuple[float, float]:
    """(model seconds, step seconds) of one decode: GEN tokens, one per step, blocks of `block`."""
    g = torch.Generator().manual_seed(0)
    width = PROMPT + GEN
    canvas = torch.randint(2, VOCAB, (BATCH, width), generator=g)
    positions = torch.arange(width).expand(BATCH, -1)
    rows = torch.arange(BATCH)
    kv = net.new_kv_cache(BATCH, width)
    model_s = step_s = 0.0
    for a in range(GEN // block):
        c0, c1 = PROMPT + a * block, PROMPT + (a + 1) * block
        masked = torch.ones(BATCH, block, dtype=torch.bool)
        for s in range(block):
            start = (0 if a == 0 else c0 - block) if s == 0 else c0  # the first call stores the finished block
            store = torch.ones(BATCH, c1 - start, dtype=torch.bool) if s == 0 else None
            bias = bias_for(start, c1, block)
            t0 = CLOCK()
            logits = net.forward_cached(canvas[:, start:c1].clone(), kv=kv, rows=rows, start=start,
                                        position_ids=positions[:, start:c1], attention_bias=bias,
                                        store=store)[:, -block:]
            t1 = CLOCK()
            step(kind, logits, masked, canvas[:, c0:c1], BATCH * (block - s))
            step_s += CLOCK() - t1
            model_s += t1 - t0
    return model_s, step_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7, help="decodes per kind (median)")
    ap.add_argument("--blocks", type=int, default=8, help="block length, a divisor of 32")
    ap.add_argument("--kinds", default="top1,softmax,lse,indel,indel1,block3")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one decode per kind: a seconds-long smoke run")
    args = ap.parse_args()
    if args.quick:
        global VOCAB, DIM, LAYERS, HEADS, BATCH, PROMPT, GEN
        VOCAB, DIM, LAYERS, HEADS, BATCH, PROMPT, GEN = 128, 32, 1, 2, 2, 8, 16
        args.repeats = 1
    if args.repeats < 1 or args.blocks < 1 or GEN % args.blocks:
        sys.exit(f"error: --repeats must be >= 1 and --blocks a divisor of {GEN}; got {args.repeats}, {args.blocks}")
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    known = ("top1", "softmax", "lse", "indel", "indel1", "block3")
    unknown = [k for k in kinds if k not in known]
    if unknown:
        sys.exit(f"error: unknown kind {unknown[0]!r} in --kinds; choose from {', '.join(known)}")
    torch.set_num_threads(1)
    net = BlockCausalStandIn(VOCAB, DIM, LAYERS, HEADS, 4 * DIM, "block", default_block_length=GEN)
    print(f"# stand-in d={DIM} layers={LAYERS} vocab={VOCAB}; batch {BATCH}, prompt {PROMPT}, gen {GEN}, "
          f"blocks of {args.blocks}; one token per step; process CPU time; 1 torch thread; median of {args.repeats}")
    print(f"{'kind':8s} {'model ms':>9s} {'step ms':>8s} {'share':>6s}")
    with torch.inference_mode():
        for kind in kinds:
            decode(net, kind, args.blocks)  # warm-up
            runs = [decode(net, kind, args.blocks) for _ in range(args.repeats)]
            m = statistics.median(r[0] for r in runs)
            s = statistics.median(r[1] for r in runs)
            print(f"{kind:8s} {m * 1e3:9.1f} {s * 1e3:8.1f} {100 * s / m:5.1f}%", flush=True)


if __name__ == "__main__":
    main()
