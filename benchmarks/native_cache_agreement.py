"""How far the approximate prefix / dual KV caches move decoding away from the uncached run.

Builds a tiny random-weight checkpoint of each native family in its published format
(tests/native_ckpt.py; `--layers` deep), loads it with `load_model("hf:<dir>", cache=...)`,
decodes the prompts of a few paper tasks with top-k and threshold decoding in semi-AR
blocks, and reports per cache mode: the task score (a random model scores ~0, so this
mostly shows the plumbing), the share of generated tokens equal to the uncached run's at
the same position, and the share of samples whose whole answer is identical.

    python benchmarks/native_cache_agreement.py --quick
    python benchmarks/native_cache_agreement.py --samples 16 --layers 4 --gen 32 --block 8
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

TASKS = ("waiting_line/copy", "waiting_line/reverse", "waiting_line/sort")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="+", default=list(TASKS))
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--block", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="2 samples of one task, 2 layers, 16 tokens")
    args = ap.parse_args()
    if args.quick:
        args.tasks, args.samples, args.layers, args.gen = args.tasks[:1], 2, 2, 16
    torch.set_num_threads(args.threads)
    import native_ckpt as nc

    from parallelbench.decoding import build_strategy
    from parallelbench.models import load_model
    from parallelbench.scoring import score_many
    from parallelbench.tasks import get_task

    root = Path(tempfile.mkdtemp())
    strategies = {"top-k k=2": build_strategy("confidence-topk", k=2, block_length=args.block),
                  "threshold 0.1": build_strategy("confidence-threshold", threshold=0.1, block_length=args.block)}
    print(f"# {args.layers} layers, d 32, {args.samples} samples x {len(args.tasks)} tasks, gen {args.gen}, "
          f"block {args.block}")
    print(f"{'family':6} {'strategy':14} {'cache':6} {'score':>6} {'tokens=':>8} {'answers=':>9} {'NFE':>6} {'refresh':>8}")
    for family in ("llada", "dream"):
        over = {"n_layers": args.layers} if family == "llada" else {"num_hidden_layers": args.layers}
        folder = nc.write_checkpoint(root / family, family, **over)
        for sname, strategy in strategies.items():
            base: list[list[str]] = []
            for cache in ("none", "prefix", "dual"):
                model = load_model(f"hf:{folder}", device="cpu", cache=cache, batch_size=args.samples)
                scores, texts, nfe, refresh = [], [], [], []
                for task in args.tasks:
                    samples = get_task(task).samples(args.samples)
                    gens = model.generate(samples, strategy, max_new_tokens=args.gen)
                    scores += [s.score for s in score_many(samples, [g.text for g in gens])]
                    texts += [g.token_texts for g in gens]
                    nfe += [g.nfe for g in gens]
                    refresh += [g.extra.get("cache_refreshes", g.nfe) for g in gens]
                if cache == "none":
                    base = texts
                same_tok = sum(a == b for x, y in zip(texts, base) for a, b in zip(x, y))
                total = sum(max(len(x), len(y)) for x, y in zip(texts, base))
                same_ans = sum(x == y for x, y in zip(texts, base))
                print(f"{family:6} {sname:14} {cache:6} {sum(scores) / len(scores):6.3f} {same_tok / max(total, 1):8.3f} "
                      f"{same_ans / len(texts):9.3f} {sum(nfe) / len(nfe):6.1f} {sum(refresh) / len(refresh):8.1f}",
                      flush=True)


if __name__ == "__main__":
    main()
