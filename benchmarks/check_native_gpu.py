"""Native LLaDA / Dream on a GPU agree with the CPU: tiny published-format checkpoints, fp32 and bf16.

Writes the test suite's tiny checkpoints (tests/native_ckpt.py), loads them natively on the
device, and prints the largest logit difference against the independent CPU reference
(fp32), padded batch against each row alone (fp32, every cache mode while decoding), and a
bf16 load against fp32.

    python benchmarks/check_native_gpu.py --device cuda
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--quick", action="store_true", help="accepted for uniformity: the check is already small")
    args = ap.parse_args()
    import native_ckpt as nc

    from parallelbench.decoding import build_strategy, decode
    from parallelbench.models import load_model
    from parallelbench.models.native import load_native

    root = Path(tempfile.mkdtemp())
    gen = torch.Generator().manual_seed(0)
    for family in ("llada", "dream"):
        folder = nc.write_checkpoint(root / family, family, shards=2)
        module, _ = load_native(folder, device=args.device, dtype="float32")
        ids = torch.randint(5, 40, (13,), generator=gen)
        with torch.no_grad():
            got = module(ids[None].to(args.device))[0].cpu()
            bf16 = load_native(folder, device=args.device, dtype="bfloat16")[0](ids[None].to(args.device))[0]
        ref = nc.reference_logits(folder, ids)
        print(f"{family}: fp32 {args.device} vs CPU reference {float((got - ref).abs().max()):.2e}; "
              f"bf16 vs fp32 {float((bf16.float().cpu() - got).abs().max()):.3f} (logit range {float(ref.abs().max()):.1f})")
        prompts = [torch.randint(5, 40, (n,), generator=gen).tolist() for n in (9, 5, 7)]
        strategy = build_strategy("confidence-threshold", threshold=0.1, block_length=4)
        for cache in ("none", "prefix", "dual"):
            net = load_model(f"hf:{folder}", device=args.device, dtype="float32", cache=cache).net
            with net.session(16, 4):
                batch = decode(net, prompts, gen_length=16, strategy=strategy)
            same = 0
            for i, p in enumerate(prompts):
                with net.session(16, 4):
                    alone = decode(net, [p], gen_length=16, strategy=strategy)[0]
                same += alone.tokens == batch[i].tokens
            print(f"  cache {cache}: rows decoding the same tokens alone and in the padded batch: {same}/3")


if __name__ == "__main__":
    main()
