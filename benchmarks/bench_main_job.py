"""Wall time of the README's main job (`parallelbench run` with no arguments), median of N runs.

Each run starts in a fresh temporary directory (an existing database would make the
rerun skip everything) and includes interpreter start-up, model loading, decoding,
scoring, the database and the report: what a user waits for.

    python benchmarks/bench_main_job.py            # 3 runs
    python benchmarks/bench_main_job.py --runs 1 -- --limit 2   # extra args go to `parallelbench run`
    python benchmarks/bench_main_job.py --quick    # one run, one task, one sample, no report (smoke test)
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one_run(extra: list[str]) -> tuple[float, int, str]:
    with tempfile.TemporaryDirectory(prefix="pb-main-job-") as tmp:
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "parallelbench.cli", "run", "--no-progress", *extra],
            cwd=tmp, capture_output=True, text=True,
        )
        elapsed = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"main job failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        con = sqlite3.connect(str(Path(tmp) / "parallelbench.db"))
        rows, model = con.execute("SELECT COUNT(*), MIN(model) FROM results").fetchone()
        con.close()
        return elapsed, rows, model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="tiny sizes that finish in seconds (smoke test; the figures mean nothing)")
    args, extra = parser.parse_known_args()
    extra = [a for a in extra if a != "--"]
    if args.quick:
        args.runs = 1
        extra = ["--tasks", "waiting_line/copy", "--strategy", "confidence-topk", "--k", "4", "--limit", "1", "--no-report", *extra]
    times = []
    for i in range(args.runs):
        elapsed, rows, model = one_run(extra)
        times.append(elapsed)
        print(f"run {i + 1}: {elapsed:.1f} s  ({rows} rows, model {model})", flush=True)
    print(f"median of {args.runs}: {statistics.median(times):.1f} s  (min {min(times):.1f}, max {max(times):.1f})")


if __name__ == "__main__":
    main()
