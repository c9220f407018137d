"""Host-synchronising ops per decode: per preset on the canvas and block-causal paths, per native family
and cache mode, inside the model's forward and outside it (the engine).

Counted with `parallelbench.decoding.host_syncs` (a TorchDispatchMode: `.item()`-like reads,
`nonzero`, boolean-mask indexing, `bincount`, `unique`, `.tolist()`, ...): each of them makes a
GPU wait for the host. The issue's bound (33, item 2): outside the forward at most one per model
call (the finished-rows check) plus at most 4 per decode (its set-up), i.e. `outside - calls <= 4`;
inside a native forward none. The counts do not depend on the device or the machine's load.

Stand-ins: bench_strategies.py's (random bidirectional and block-causal transformers; batch 8,
prompt 32, 32 generated tokens, greedy, one block of 32 and blocks of 8), and the native families'
example checkpoints (`parallelbench models example`: LLaDA, Dream, SDAR, LLaDA 2 MoE, LLaDA-MoE; batch 3 of
different prompt lengths, 16 tokens in blocks of 4).

    python benchmarks/bench_host_syncs.py                       # every table
    python benchmarks/bench_host_syncs.py --paths canvas --presets confidence-topk,eb
    python benchmarks/bench_host_syncs.py --quick               # a few rows, seconds
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_strategies import BlockCausalStandIn, StandIn  # noqa: E402

from parallelbench.decoding import build_strategy, decode, strategy_names  # noqa: E402
from parallelbench.decoding.host_syncs import count_host_syncs  # noqa: E402

NATIVE = {"llada": ("none", "prefix", "dual", "delayed"), "dream": ("none", "prefix", "dual", "delayed"),
          "sdar": ("none", "block"), "llada2": ("none", "block"), "lladamoe": ("none", "prefix", "dual", "delayed")}


def row(path: str, what: str, blocks, syncs) -> dict:
    return {"path": path, "what": what, "blocks": blocks or "-", "calls": syncs.calls, "outside": syncs.outside,
            "inside": syncs.inside, "literals": syncs.literals["outside"] + syncs.literals["inside"],
            "ops": ", ".join(f"{k} {n}" for (w, k), n in syncs.by_op().items() if w == "outside")}


def show(r: dict) -> None:
    calls = max(r["calls"], 1)
    print(f"| {r['path']} | {r['what']} | {r['blocks']} | {r['calls']} | {r['outside']} | {r['outside'] / calls:.2f} "
          f"| {r['outside'] - r['calls']:+d} | {r['inside'] / calls:.2f} | {r['ops'] or '-'} |", flush=True)


def stand_in_rows(path: str, names: list[str], blocks: list, quick: bool):
    vocab, dim, layers, heads, ff, batch, prompt, gen = (128, 32, 1, 2, 64, 2, 8, 16) if quick else \
        (4096, 256, 2, 4, 1024, 8, 32, 32)
    if path == "canvas":
        model = StandIn(vocab, dim, layers, heads, ff)
    else:
        model = BlockCausalStandIn(vocab, dim, layers, heads, ff, "block" if path == "block-causal cached" else "none",
                                   default_block_length=gen)
        names = [n for n in names if build_strategy(n).supports_block_causal]
    verifier = StandIn(vocab, dim, 1, heads, ff, causal=True, seed=1)
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(2, vocab, (prompt,), generator=g).tolist() for _ in range(batch)]
    for name in names:
        for block in blocks:
            if block and gen % block:
                continue
            # the stand-ins have no DELETE / SPLIT tokens: indel-threshold gets two ordinary ids
            extra = {"delete_token": 2, "split_token": 3} if name == "indel-threshold" else {}
            strategy = build_strategy(name, block_length=block, **extra)
            try:
                strategy.check_model(model)
            except ValueError:  # a preset for the other path (indel-threshold: block-causal only)
                continue
            with count_host_syncs(model, verifier) as syncs:
                decode(model, prompts, gen_length=gen, strategy=strategy, verifier=verifier)
            yield row(path, name, block, syncs)


def native_rows(families: list[str], quick: bool):
    from parallelbench.models import load_model
    from parallelbench.models.hf.examples import write_example

    root = Path(tempfile.mkdtemp())
    prompts = [[7, 9, 11, 13, 15, 17, 19, 21, 23], [8, 10, 12, 14, 16], [30, 29, 28, 27, 26, 25, 24]]
    for family in families:
        folder = write_example(root / family, family)
        for cache in NATIVE[family][:2] if quick else NATIVE[family]:
            net = load_model(f"hf:{folder}", device="cpu", dtype="float32", cache=cache).net
            strategies = (("multi-block", {"threshold": 0.5}),) if cache == "delayed" else \
                (("confidence-topk", {"k": 2}), ("confidence-threshold", {"threshold": 0.9}))
            for name, options in strategies:
                strategy = build_strategy(name, block_length=4, **options)
                with net.session(16, 4), count_host_syncs(net) as syncs:
                    decode(net, prompts, gen_length=16, strategy=strategy)
                yield row(f"native {family}", f"{name}, cache={cache}", 4, syncs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--paths", default="canvas,block-causal,block-causal cached,native",
                    help="comma-separated: canvas, block-causal, block-causal cached, native")
    ap.add_argument("--presets", help="comma-separated presets (default: every registered one but Medusa's)")
    ap.add_argument("--families", default=",".join(NATIVE), help="native families (llada, dream, sdar, llada2, lladamoe)")
    ap.add_argument("--quick", action="store_true", help="tiny sizes and a few rows: a smoke run")
    args = ap.parse_args()
    torch.set_num_threads(1)
    names = [n.strip() for n in args.presets.split(",")] if args.presets else \
        [n for n in strategy_names() if not n.startswith("medusa")]
    unknown = sorted(set(names) - set(strategy_names()))
    if unknown:
        sys.exit(f"error: unknown preset(s) {', '.join(unknown)} in --presets; choose from {', '.join(strategy_names())}")
    paths = [p.strip() for p in args.paths.split(",")]
    families = [f.strip() for f in args.families.split(",")]
    bad = [p for p in paths if p not in ("canvas", "block-causal", "block-causal cached", "native")] + \
        [f for f in families if f not in NATIVE]
    if bad:
        sys.exit(f"error: unknown path or family {bad}; paths: canvas, block-causal, block-causal cached, native; "
                 f"families: {', '.join(NATIVE)}")
    if args.quick:
        names, families = names[:2], families[:1]
    blocks = [None, 8] if not args.quick else [None]
    print(f"# torch {torch.__version__}; outside - calls: the excess over one op per model call (bound: +4)")
    print("| path | preset | blocks | model calls | outside | outside per call | outside - calls | inside per call "
          "| outside ops |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    with torch.no_grad():
        for path in paths:
            rows = native_rows(families, args.quick) if path == "native" else \
                stand_in_rows(path, names, blocks, args.quick)
            for r in rows:
                show(r)


if __name__ == "__main__":
    main()
