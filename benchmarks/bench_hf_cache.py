"""Speed of the Fast-dLLM prefix / dual KV cache against uncached decoding (same NFE).

A randomly initialised bidirectional transformer with Dream's forward signature (the
offline test stand-in, tests/hf_standin_code.py) wrapped in the real
`DreamNet` adapter, so the whole cache path runs: refresh passes, windows, row
alignment and the logits shift. Reports seconds per decode, NFE, refresh passes and how
many generated tokens agree with the uncached decode (a multi-layer model makes the
cache approximate, as in the paper).

    python benchmarks/bench_hf_cache.py --layers 4 --hidden 256 --prompt 192 --gen 64 --block 16
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--prompt", type=int, default=192)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--block", type=int, default=16)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="tiny sizes that finish in seconds (smoke test; the figures mean nothing)")
    args = ap.parse_args()
    if args.quick:
        args.layers, args.hidden, args.vocab, args.prompt, args.gen, args.block, args.batch, args.repeats = 1, 32, 64, 16, 8, 4, 1, 1
    torch.set_num_threads(1)

    from hf_standin_code import DreamStandInConfig, DreamStandInLM

    from parallelbench.decoding import build_strategy, decode
    from parallelbench.models.hf.dream import DreamNet

    torch.manual_seed(0)
    cfg = DreamStandInConfig(vocab_size=args.vocab, hidden_size=args.hidden, num_hidden_layers=args.layers,
                             num_attention_heads=4, max_position_embeddings=args.prompt + args.gen + 8)
    model = DreamStandInLM(cfg).eval()
    prompts = torch.randint(3, args.vocab, (args.batch, args.prompt)).tolist()
    strategy = build_strategy("confidence-topk", k=1, block_length=args.block)
    reference = None
    print(f"{'cache':8} {'s/decode':>9} {'NFE':>5} {'refreshes':>9} {'agree':>6}")
    for mode in ("none", "prefix", "dual"):
        net = DreamNet(model, mask_id=1, eos_id=2, vocab_size=args.vocab, cache=mode)
        best = float("inf")
        for _ in range(args.repeats):
            with net.session(args.gen, args.block):
                began = time.perf_counter()
                results = decode(net, prompts, gen_length=args.gen, strategy=strategy)
                best = min(best, time.perf_counter() - began)
                refreshes = net.cache_refreshes().get(0, results[0].nfe)
        tokens = [r.tokens for r in results]
        reference = reference or tokens
        agree = sum(a == b for ra, rb in zip(tokens, reference) for a, b in zip(ra, rb)) / (args.batch * args.gen)
        print(f"{mode:8} {best:9.3f} {results[0].nfe:5d} {refreshes:9d} {agree:6.1%}")


if __name__ == "__main__":
    main()
