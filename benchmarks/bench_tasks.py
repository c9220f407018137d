"""Time the task side: building the registry, generating samples, listing answer sets, importing the release.

    python benchmarks/bench_tasks.py            # prints seconds per phase (best of --repeat)
    python benchmarks/bench_tasks.py --quick    # one repeat, the paper tasks only (smoke test)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

RELEASE = Path(__file__).resolve().parents[2] / "shared" / "official-parallelbench"


def best(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="tiny sizes that finish in seconds (smoke test; the figures mean nothing)")
    args = parser.parse_args()
    if args.quick:
        args.repeat = 1

    start = time.perf_counter()
    from parallelbench.tasks import registry, resolve_tasks, valid_answers

    tasks = registry()
    print(f"import + registry ({len(tasks)} tasks): {time.perf_counter() - start:.3f} s")

    paper = resolve_tasks("paper")
    t, samples = best(lambda: [s for task in paper for s in task.samples()], args.repeat)
    print(f"generate the 17 paper tasks ({len(samples)} samples): {t:.3f} s")
    if args.quick:
        return
    t, everything = best(lambda: [s for task in tasks.values() for s in task.samples()], args.repeat)
    print(f"generate all {len(tasks)} tasks ({len(everything)} samples): {t:.3f} s")
    sudoku = tasks["puzzle/sudoku"]
    t, _ = best(sudoku.samples, args.repeat)
    print(f"  of which puzzle/sudoku (100 unique-solution puzzles + examples): {t:.3f} s")

    listable = [s for s in samples if s.task.startswith(("waiting_line", "puzzle"))]
    t, sets = best(lambda: [valid_answers(s) for s in listable], args.repeat)
    print(f"valid_answers of the {len(listable)} paper list/puzzle samples ({sum(map(len, sets))} answers): {t:.3f} s")

    if RELEASE.is_dir():
        from parallelbench.tasks.official import load_release

        t, result = best(lambda: load_release(RELEASE), args.repeat)
        print(f"import the original release ({sum(map(len, result.samples.values()))} samples): {t:.3f} s")


if __name__ == "__main__":
    main()
