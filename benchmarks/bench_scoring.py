"""Time scoring 1,708 answers (the 17 paper tasks: 100 samples each, 108 for Sudoku), grammar and BERTScore included.

The answers are built from the task generators: each sample's reference answer,
as is, wrapped in prose, corrupted (two words swapped or one dropped) or replaced
by another sample's answer, chosen with a fixed seed, so every scorer path runs
and the grammar cache sees about 1,700 distinct texts (1,708 answers).

The clock starts before `parallelbench.scoring` is imported, so the figure includes
loading rouge-score, sacrebleu, Harper and the MiniLM model, as a fresh
`parallelbench score` process pays them.

    python benchmarks/bench_scoring.py            # prints phase times and per-task means
    python benchmarks/bench_scoring.py --quick    # 2 answers of each list and puzzle task (no text models)
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections import defaultdict


def corrupt(text: str, rng: random.Random) -> str:
    words = text.split(" ")
    if len(words) < 3:
        return text[::-1]
    i, j = rng.sample(range(len(words)), 2)
    if rng.random() < 0.5:
        words[i], words[j] = words[j], words[i]
    else:
        del words[i]
    return " ".join(words)


def build_answers(seed: int, quick: bool = False) -> tuple[list, list[str]]:
    from parallelbench.tasks import resolve_tasks

    rng = random.Random(seed)
    if quick:  # no grammar checker or sentence model to load: list and puzzle tasks only
        samples = [s for task in resolve_tasks("waiting_line,puzzle") for s in task.samples(2)]
    else:
        samples = [s for task in resolve_tasks("paper") for s in task.samples()]
    by_task = defaultdict(list)
    for s in samples:
        by_task[s.task].append(s.answer)
    outputs = []
    for s in samples:
        roll = rng.random()
        if roll < 0.4:
            outputs.append(s.answer)
        elif roll < 0.6:
            outputs.append(f"Sure! Here is the answer:\n{s.answer}\nLet me know if you need anything else.")
        elif roll < 0.8:
            outputs.append(corrupt(s.answer, rng))
        else:
            outputs.append(rng.choice(by_task[s.task]))
    return samples, outputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="tiny sizes that finish in seconds (smoke test; the figures mean nothing)")
    args = parser.parse_args()

    t0 = time.perf_counter()
    samples, outputs = build_answers(args.seed, args.quick)
    t_build = time.perf_counter() - t0

    load_before = os.getloadavg()[0]
    t1, c1 = time.perf_counter(), time.process_time()
    from parallelbench.scoring import score_many

    results = score_many(samples, outputs)
    t_score, c_score = time.perf_counter() - t1, time.process_time() - c1

    means = defaultdict(list)
    for s, r in zip(samples, results):
        means[s.task].append(r.score)
    for task in sorted(means):
        print(f"{task:32s} n={len(means[task]):4d} mean score {sum(means[task]) / len(means[task]):.3f}")
    print(f"answers: {len(samples)}")
    print(f"building the answers (task generators): {t_build:.2f} s")
    print(f"scoring, imports and model loading included: {t_score:.2f} s wall, {c_score:.2f} s CPU")
    print(f"1-minute load average before / after: {load_before:.1f} / {os.getloadavg()[0]:.1f} (2 cores)")


if __name__ == "__main__":
    main()
