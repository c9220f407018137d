"""Repair under the exact model: docs/theory.md's table (top-2 drafts with edits on shuffle and copy).

For each n and post_steps in {0, n}: `theory simulate` of
`<strategy> threshold=1 min_k=2 edit_threshold=0.1 post_steps=M` (edit-threshold, or
indel-threshold on the model's block-causal face), printed as the markdown table of
docs/theory.md, "Repair under the exact model", plus one JSON line per cell on stderr.

    python benchmarks/repair_exact.py                      # n = 3..8, 20,000 samples per shuffle cell
    python benchmarks/repair_exact.py --strategy indel-threshold --edit-threshold 0.9
    python benchmarks/repair_exact.py --edit-rule confidence --edit-threshold 0.9   # indel's edit rule, no loop escape
    python benchmarks/repair_exact.py --quick              # n = 3, 4 with 500 samples: seconds
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategy", default="edit-threshold", help="edit-threshold or indel-threshold")
    parser.add_argument("--samples", type=int, default=20000, help="samples per shuffle cell (copy: a tenth)")
    parser.add_argument("--n", default="3..8", help="list lengths, e.g. 3..8 or 3,4")
    parser.add_argument("--edit-threshold", type=float, default=0.1, help="gain threshold E (default 0.1 < 1/(n-1))")
    parser.add_argument("--edit-rule", default=None, help="edit-threshold's edit_rule: gain (default) or confidence")
    parser.add_argument("--quick", action="store_true", help="n = 3, 4 and 500 samples")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    from parallelbench.theory import closed_forms as cf
    from parallelbench.theory.cli import parse_ns
    from parallelbench.theory.simulate import simulate

    ns = [3, 4] if args.quick else parse_ns(args.n)
    rule = {} if args.edit_rule is None else {"edit_rule": args.edit_rule}
    samples = 500 if args.quick else args.samples
    cells = {}
    for task in ("shuffle", "copy"):
        for n in ns:
            for post in (0, n):
                began = time.perf_counter()
                r = simulate(task, n, args.strategy, samples=samples if task == "shuffle" else max(samples // 10, 100),
                             seed=100 * n + post, threshold=1.0, min_k=2, edit_threshold=args.edit_threshold,
                             post_steps=post, **rule)
                cells[task, n, post] = r
                print(json.dumps({"task": task, "n": n, "post_steps": post, "final": r.measured, "stderr": r.stderr,
                                  "analytic": r.analytic, "mean_nfe": r.mean_nfe, **r.extra,
                                  "seconds": round(time.perf_counter() - began, 1)}), file=sys.stderr, flush=True)
    print(f"{args.strategy}, top-2 drafts, edit_threshold={args.edit_threshold:g}"
          f"{'' if args.edit_rule is None else ', edit_rule=' + args.edit_rule}, {samples:,} samples per shuffle cell")
    print("| n | top-2 (eq. 5) | at unmasking | final ± s.e. | closed form | repaired | broken | mean edits "
          "| final, post_steps = n | mean edits, post_steps = n | NFE, post_steps = n |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for n in ns:
        a, b = cells["shuffle", n, 0], cells["shuffle", n, n]
        gain = args.strategy == "edit-threshold" and args.edit_rule in (None, "gain")
        form = cf.shuffle_edit_top2(n, args.edit_threshold) if gain else None
        x, y = a.extra or {}, b.extra or {}

        def value(d: dict, key: str, fmt: str = ".4f") -> str:
            return format(d[key], fmt) if d.get("recorded") else "–"

        print(f"| {n} | {cf.shuffle_topk_accuracy(n, 2):.4f} | {value(x, 'unmask_accuracy')} "
              f"| {a.measured:.4f} ± {a.stderr:.4f} | {'–' if form is None else format(form['final'], '.4f')} "
              f"| {value(x, 'repaired')} | {value(x, 'broken')} | {value(x, 'mean_edits', '.2f')} "
              f"| {b.measured:.4f} ± {b.stderr:.4f} | {value(y, 'mean_edits', '.2f')} | {b.mean_nfe:.2f} |")
    copies = [cells["copy", n, p] for n in ns for p in (0, n)]
    print(f"copy: final {min(c.measured for c in copies):.4f}..{max(c.measured for c in copies):.4f}, "
          f"mean edits up to {max((c.extra or {}).get('mean_edits', 0.0) for c in copies):.2f}")


if __name__ == "__main__":
    main()
