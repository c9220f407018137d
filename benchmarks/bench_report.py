"""Time the analysis on a large synthetic results frame: curves, oracle, task map, failures, report.

Usage: python benchmarks/bench_report.py [--samples 400] [--out /tmp/pb-bench-report] [--quick]
The frame has 88 rows per sample (22 strategy settings x 4 tasks); --samples 400 gives 35,200 rows.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--out", type=Path, default=Path("/tmp/pb-bench-report"))
    parser.add_argument("--quick", action="store_true", help="tiny sizes that finish in seconds (smoke test; the figures mean nothing)")
    args = parser.parse_args()
    if args.quick:
        args.samples = 2

    from parallelbench.analysis.board import build_boards
    from parallelbench.analysis.curves import curves
    from parallelbench.analysis.order_metrics import order_summary
    from parallelbench.analysis.failures import find_failures
    from parallelbench.analysis.leaderboard import curves_from_points, rank
    from parallelbench.analysis.oracle import oracle_points
    from parallelbench.analysis.report import build_report
    from parallelbench.analysis.synthetic import synthetic_frame
    from parallelbench.analysis.taskmap import task_map

    frame = synthetic_frame(samples=args.samples)
    print(f"rows: {len(frame)}")
    steps = {
        "curves": lambda: curves(frame),
        "leaderboard": lambda: rank(curves_from_points(curves(frame)[1])),
        "leaderboard boards, site": lambda: build_boards(frame, (90, 80, 70, 60), "site"),
        "leaderboard boards, max": lambda: build_boards(frame, (90, 80, 70, 60), "max"),
        "decoding order": lambda: order_summary(frame),
        "oracle": lambda: oracle_points(frame),
        "task map": lambda: task_map(frame),
        "failures": lambda: find_failures(frame),
        "report (html only)": lambda: build_report(frame, args.out, static_figures=False),
        "report (html + png/svg)": lambda: build_report(frame, args.out),
    }
    for name, step in steps.items():
        began = time.perf_counter()
        step()
        print(f"{name:<24} {time.perf_counter() - began:7.2f} s")
    size = (args.out / "report.html").stat().st_size / 1e6
    print(f"report.html size: {size:.1f} MB")


if __name__ == "__main__":
    main()
