"""compile=true against eager on every native family and path: same tokens, and what compiling costs.

Writes the test suite's tiny checkpoints (tests/native_ckpt.py, tests/native_block_ckpt.py), then
for each family and cache mode decodes the same padded prompts eagerly and through the compiled
forwards (torch.compile(fullgraph=True) with inductor: real generated kernels, unlike the test
suite's "eager" backend) and prints whether the tokens agree, the first decode's seconds (the
compiles) and a second decode's. On CUDA the compiled forwards replay as CUDA graphs.

    python benchmarks/check_native_compile.py                      # every family and cache mode, CPU
    python benchmarks/check_native_compile.py --families llada2 --caches block --device cuda
    python benchmarks/check_native_compile.py --quick              # one uncached LLaDA, dynamo only
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
CACHES = {"llada": ("none", "prefix", "dual"), "dream": ("none", "prefix", "dual"), "sdar": ("none", "block"),
          "llada2": ("none", "block")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog="example: python benchmarks/check_native_compile.py --families sdar llada2")
    ap.add_argument("--families", nargs="+", default=list(CACHES), choices=list(CACHES))
    ap.add_argument("--caches", nargs="+", default=None, help="cache modes to run (default: every mode of the family)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--backend", default="inductor", help="torch.compile backend (inductor; eager: dynamo only)")
    ap.add_argument("--dynamic", action="store_true", help="compile with dynamic shapes from the first call")
    ap.add_argument("--gen", type=int, default=16)
    ap.add_argument("--quick", action="store_true", help="one uncached LLaDA decode with the eager backend (smoke test)")
    args = ap.parse_args()
    if args.quick:
        args.families, args.caches, args.backend, args.gen, args.dynamic = ["llada"], ["none"], "eager", 8, True
    torch.set_num_threads(1)
    import native_block_ckpt as bc
    import native_ckpt as nc

    from parallelbench.decoding import build_strategy, decode
    from parallelbench.models import load_model

    root = Path(tempfile.mkdtemp())
    prompts = [[7, 9, 11, 13, 15, 17, 19, 21, 23], [8, 10, 12, 14, 16], [30, 29, 28, 27, 26, 25, 24]]
    strategy = build_strategy("confidence-threshold", threshold=0.3, block_length=4)
    print(f"torch {torch.__version__}, device {args.device}, backend {args.backend}, dynamic {args.dynamic}, "
          f"batch {len(prompts)}, gen {args.gen}, blocks of 4, confidence-threshold 0.3")
    print("| family | cache | tokens equal to eager | first decode s (compiles) | second decode s | eager decode s |")
    print("| --- | --- | --- | --- | --- | --- |")
    failed = False
    for family in args.families:
        writer = nc if family in ("llada", "dream") else bc
        folder = writer.write_checkpoint(root / family, family)
        for cache in args.caches or CACHES[family]:
            if cache not in CACHES[family]:
                continue
            runs = {}
            for compiled in (False, True):
                net = load_model(f"hf:{folder}", device=args.device, dtype="float32", cache=cache).net
                if compiled:
                    net.model.enable_compile(dynamic=True if args.dynamic else None, backend=args.backend)
                times, tokens = [], None
                for _ in range(2):
                    t0 = time.perf_counter()
                    with net.session(args.gen, 4):
                        tokens = [r.tokens for r in decode(net, prompts, gen_length=args.gen, strategy=strategy)]
                    times.append(time.perf_counter() - t0)
                runs[compiled] = (tokens, times)
            same = runs[True][0] == runs[False][0]
            failed |= not same
            print(f"| {family} | {cache} | {'yes' if same else 'NO'} | {runs[True][1][0]:.1f} | {runs[True][1][1]:.3f} "
                  f"| {runs[False][1][1]:.3f} |", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
