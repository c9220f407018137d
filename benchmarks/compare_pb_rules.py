"""Our `--pb-rule max` against the authors' `compute_pb_scores` (`pb analyze`), run side by side.

The authors' 2026 rewrite of ParallelBench computes PBx in `parallelbench/analysis/pb_score.py`.
This script loads that file from a checkout OUTSIDE the project (its `parallelbench.` imports
are renamed to `pb_authors.` so it never mixes with ours), feeds it every sample row of the
same results (score on 0..100, nfe, max_tokens, k / steps, alg_threshold / alg_factor, and
tokens_per_step = max_tokens / nfe per sample, the per-sample value its lm-eval metadata
reports) and compares its numbers per strategy and pooled over strategies with ours. It also
prints the `site` rule beside them, where the two rules differ.

    PB_AUTHORS_REPO=/path/to/ParallelBench-rewrite python benchmarks/compare_pb_rules.py [--db results.db] [--quick]

PB_AUTHORS_REPO must hold `parallelbench/analysis/pb_score.py` and
`parallelbench/models/unmasking_registry.py` (and what they import). Grids: the synthetic
frame at seeds 0-4 (16 samples per task, top-k k = 1..8 and thresholds 0.5..1.0), a
hand-made grid where a later setting recovers above the threshold, and `--db` if given.
Without PB_AUTHORS_REPO it exits with status 77 and one line saying so.
Semi-AR rows are left out: `pb analyze` assumes block_length = max_tokens and would pool
them with the any-order rows of the same k. Exit status 1 on any difference above 1e-9.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.util
import json
import math
import os
import sys
from pathlib import Path

import pandas as pd

from parallelbench.analysis.curves import with_curves
from parallelbench.analysis.leaderboard import curves_from_points, rank, threshold_name
from parallelbench.analysis.curves import curves
from parallelbench.analysis.pb_rules import generation_lengths, max_rule_table
from parallelbench.analysis.synthetic import result_row, synthetic_frame

THRESHOLDS = [90, 80, 70, 60]
#: Our strategy names -> the rewrite's unmasking method names.
METHODS = {
    "random": "random", "l2r": "left_to_right", "confidence-topk": "confidence_topk", "topk-margin": "topk_margin",
    "entropy-topk": "entropy_topk", "confidence-threshold": "confidence_threshold", "confidence-factor": "confidence_factor",
}


class _Renamed(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports `pb_authors.x.y` from `<repo>/parallelbench/x/y.py`, with `parallelbench.` renamed in its source.
    Packages are created empty (their __init__ files are not run: they import far more than pb_score needs)."""

    def __init__(self, repo: Path):
        self.root = repo / "parallelbench"

    def find_spec(self, name, path=None, target=None):
        if name != "pb_authors" and not name.startswith("pb_authors."):
            return None
        parts = name.split(".")[1:]
        folder = self.root.joinpath(*parts)
        if folder.is_dir() or not parts:
            return importlib.util.spec_from_loader(name, self, is_package=True)
        if folder.with_suffix(".py").is_file():
            return importlib.util.spec_from_loader(name, self, origin=str(folder.with_suffix(".py")))
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        origin = module.__spec__.origin
        if origin and origin.endswith(".py"):
            source = Path(origin).read_text(encoding="utf-8")
            source = source.replace("from parallelbench.", "from pb_authors.").replace("import parallelbench.", "import pb_authors.")
            exec(compile(source, origin, "exec"), module.__dict__)
        else:
            module.__path__ = []


def load_authors(repo: Path):
    sys.meta_path.insert(0, _Renamed(repo))
    return importlib.import_module("pb_authors.analysis.pb_score").compute_pb_scores


def authors_rows(frame: pd.DataFrame) -> list[dict]:
    """Every sample row as `compute_pb_scores` reads it."""
    data = with_curves(frame)
    lengths = generation_lengths(data).to_numpy(float)
    rows = []
    for i, (_, r) in enumerate(data.iterrows()):
        params = r["params_dict"]
        row = {"model": r["model"], "task": r["task"], "score": 100.0 * float(r["score"]), "nfe": float(r["nfe"]),
               "max_tokens": int(lengths[i]), "unmasking": METHODS[r["strategy"]]}
        if r["strategy_kind"] == "topk":
            row["k"] = float(params["k"])
            row["steps"] = int(round(lengths[i] / float(params["k"])))
        else:
            row["alg_threshold"] = params.get("threshold", "")
            row["alg_factor"] = params.get("factor", "")
            row["tokens_per_step"] = lengths[i] / float(r["nfe"])  # the per-sample metadata value
        rows.append(row)
    return rows


def comparable(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows both tools read alike: known methods, no semi-AR blocks."""
    keep = frame["strategy"].isin(list(METHODS))
    keep &= pd.Series([json.loads(p).get("block_length") in (None, 0) for p in frame["params"]], index=frame.index)
    return frame[keep]


def compare(name: str, frame: pd.DataFrame, compute_pb_scores) -> float:
    frame = comparable(frame)
    rows = authors_rows(frame)
    ours = max_rule_table(frame, THRESHOLDS).set_index("strategy")
    pooled = max_rule_table(frame, THRESHOLDS, pooled=True).set_index("strategy")
    site = rank(curves_from_points(curves(frame)[1]), THRESHOLDS).set_index("strategy")
    several = frame["model"].nunique() > 1
    worst = 0.0
    print(f"\n== {name}: {len(frame)} rows, {frame['task'].nunique()} tasks, {frame['config'].nunique()} settings")
    print(f"{'strategy':44} {'PBx':5} {'ours (max)':>11} {'pb analyze':>11} {'site rule':>10}")
    for model, mine in frame.groupby("model"):
        groups = [(f"{model}/{s}" if several else s, [r for r in rows if r["model"] == model and r["unmasking"] == METHODS[s]])
                  for s in sorted(mine["strategy"].unique())]
        groups.append(((f"{model}/" if several else "") + "all strategies (pooled)", [r for r in rows if r["model"] == model]))
        for label, subset in groups:
            theirs = compute_pb_scores(subset, thresholds=THRESHOLDS)
            table = pooled if label.endswith("(pooled)") else ours
            for t in THRESHOLDS:
                a = table.at[label, threshold_name(t)]
                b = theirs[f"PB{t}"]
                a_none, b_none = a != a, b is None
                diff = 0.0 if a_none and b_none else (math.inf if a_none != b_none else abs(a - b))
                worst = max(worst, diff)
                s = site.at[label, threshold_name(t)] if label in site.index else float("nan")
                mark = "" if diff <= 1e-9 else "  <-- DIFFERS"
                shown = "None" if b_none else f"{b:.4f}"
                print(f"{label[:44]:44} PB{t:<3} {('None' if a_none else f'{a:.4f}'):>11} {shown:>11} {s:>10.4f}{mark}")
    print(f"largest |ours - pb analyze|: {worst:.3g}")
    return worst


def recovery_grid() -> pd.DataFrame:
    """Hand-made, one task, 5 samples, max_tokens 32: threshold 0.9 scores 80% at 2 tokens/step, 0.7 48% at 4,
    0.5 68% at 8 (a later recovery). PB60: the site rule stops at the dip and interpolates,
    2 + (80 - 60) / (80 - 48) * 2 = 3.25; the max rule takes 8. PB70: 2.625 against 2."""
    rows = []
    for threshold, nfe, correct in ((0.9, 16, 4), (0.7, 8, 2.4), (0.5, 4, 3.4)):
        for i in range(5):
            score = 1.0 if i < int(correct) else (correct - int(correct) if i == int(correct) else 0.0)
            rows.append(result_row("confidence-threshold", {"threshold": threshold}, model="m", task="handmade/list",
                                   sample_id=f"s{i}", score=score, nfe=nfe, num_tokens=32))
    return pd.DataFrame(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, help="also compare on this results database")
    parser.add_argument("--quick", action="store_true", help="one small synthetic grid and the hand-made one (smoke test)")
    args = parser.parse_args()
    repo = os.environ.get("PB_AUTHORS_REPO")
    if not repo or not (Path(repo) / "parallelbench" / "analysis" / "pb_score.py").is_file():
        print("needs PB_AUTHORS_REPO: a checkout of the authors' rewrite of ParallelBench "
              "(github.com/furiosa-ai/ParallelBench, parallelbench/analysis/pb_score.py inside)")
        return 77
    compute_pb_scores = load_authors(Path(repo))
    worst = 0.0
    for seed in range(1 if args.quick else 5):
        samples = 2 if args.quick else 16
        worst = max(worst, compare(f"synthetic frame, seed {seed}", synthetic_frame(seed=seed, samples=samples), compute_pb_scores))
    worst = max(worst, compare("hand-made recovery grid", recovery_grid(), compute_pb_scores))
    if args.db:
        from parallelbench.analysis.report import load_frame

        worst = max(worst, compare(str(args.db), load_frame(args.db), compute_pb_scores))
    print(f"\nall grids: largest |ours - pb analyze| = {worst:.3g}")
    return 0 if worst <= 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())
