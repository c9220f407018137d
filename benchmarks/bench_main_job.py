"""Wall time of the README's main job (`parallelbench run` with no arguments), median of N runs.

Each run starts in a fresh temporary directory (an existing database would make the
rerun skip everything) and includes interpreter start-up, model loading, decoding,
scoring, the database and the report: what a user waits for.

    python benchmarks/bench_main_job.py            # 3 runs, default workers
    python benchmarks/bench_main_job.py --workers 1,2 --runs 3   # paired: 1 and 2 workers, order alternating
    python benchmarks/bench_main_job.py --runs 1 -- --limit 2   # extra args go to `parallelbench run`
    python benchmarks/bench_main_job.py --quick    # one run, one task, one sample, no report (smoke test)

With `--workers A,B,...` every round runs each count once (the order alternates round to round,
so a load that drifts during the measurement falls on both sides) and prints, per run, the wall
time, the CPU time of the run and its worker processes, and the load average before and after;
then the median wall time per count and the median of the per-round ratios to the first count.
`auto` stands for no --workers flag (the default).

On a loaded machine the wall times measure the load as much as the code, so each run also
samples, from /proc, the CPU time of the `run` process and of each worker process it starts.
Their critical path, the run process's CPU plus the busiest worker's, is what the run would
take on idle cores if the workers ran side by side as fast as each does alone: printed as
"projected idle", with the ratio of those projections per round. It is a projection, not a
measurement; a machine whose cores slow each other down (shared caches, a clock that drops
with every core busy) takes longer.
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def _schedstat(pid: int) -> tuple[float, float] | None:
    """(seconds on a CPU, seconds runnable but waiting for one) of a live process."""
    try:
        on_cpu, waiting = (int(v) for v in Path(f"/proc/{pid}/schedstat").read_text().split()[:2])
    except (OSError, ValueError):
        return None
    return on_cpu / 1e9, waiting / 1e9


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return out


class ProcessClock:
    """Samples, until the run ends, the CPU time of the run process and of every child it starts
    (the last sample of each: a process's final fraction of a second may be missed)."""

    def __init__(self, pid: int, every_s: float = 0.2):
        self.pid, self.every_s = pid, every_s
        self.seen: dict[int, tuple[float, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            for pid in [self.pid, *_children(self.pid)]:
                times = _schedstat(pid)
                if times is not None:
                    self.seen[pid] = times
            self._stop.wait(self.every_s)

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        run_cpu, run_wait = self.seen.get(self.pid, (0.0, 0.0))
        workers = [cpu for pid, (cpu, _) in self.seen.items() if pid != self.pid]
        return {"run_cpu": run_cpu, "run_wait": run_wait, "workers": len(workers),
                "busiest": max(workers, default=0.0), "workers_cpu": sum(workers),
                "projected": run_cpu + max(workers, default=0.0)}


def one_run(extra: list[str], detail: dict | None = None) -> tuple[float, float, int, str]:
    """(wall seconds, CPU seconds of the run and its children, rows, model); `detail` gets the
    per-process CPU times of `ProcessClock` where /proc has them."""
    with tempfile.TemporaryDirectory(prefix="pb-main-job-") as tmp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "parallelbench.cli", "run", "--no-progress", *extra],
            cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        clock = ProcessClock(proc.pid) if Path(f"/proc/{proc.pid}/schedstat").exists() else None
        stdout, stderr = proc.communicate()
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if clock is not None and detail is not None:
            detail.update(clock.stop())
        elif clock is not None:
            clock.stop()
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if proc.returncode != 0:
            raise SystemExit(f"main job failed (exit {proc.returncode}):\n{stdout[-3000:]}\n{stderr[-3000:]}")
        con = sqlite3.connect(str(Path(tmp) / "parallelbench.db"))
        rows, model = con.execute("SELECT COUNT(*), MIN(model) FROM results").fetchone()
        con.close()
        return elapsed, cpu, rows, model


def _flags(count: str) -> list[str]:
    return [] if count == "auto" else ["--workers", count]


def paired(counts: list[str], runs: int, extra: list[str]) -> None:
    walls: dict[str, list[float]] = {c: [] for c in counts}
    ratios: dict[str, list[float]] = {c: [] for c in counts[1:]}
    projected: dict[str, list[float]] = {c: [] for c in counts[1:]}
    print(f"{os.cpu_count()} CPUs, {len(os.sched_getaffinity(0))} usable; extra arguments: {' '.join(extra) or '(none)'}")
    print("| round | workers | wall | CPU (run + workers) | run process CPU | worker processes: CPU each (busiest) "
          "| projected idle | load average before → after | rows |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in range(runs):
        order = counts if r % 2 == 0 else counts[::-1]
        this: dict[str, float] = {}
        idle: dict[str, float] = {}
        for count in order:
            load0 = os.getloadavg()[0]
            detail: dict = {}
            wall, cpu, rows, model = one_run([*_flags(count), *extra], detail)
            load1 = os.getloadavg()[0]
            this[count] = wall
            walls[count].append(wall)
            idle[count] = detail.get("projected", float("nan"))
            split = (f"{detail['run_cpu']:.1f} s | {detail['workers']} ({detail['busiest']:.1f} s) | "
                     f"{detail['projected']:.1f} s") if detail else "- | - | -"
            print(f"| {r + 1} | {count} | {wall:.1f} s | {cpu:.1f} s | {split} | {load0:.1f} → {load1:.1f} "
                  f"| {rows:,} ({model}) |", flush=True)
        for count in counts[1:]:
            ratios[count].append(this[count] / this[counts[0]])
            projected[count].append(idle[count] / idle[counts[0]])
    for count in counts:
        print(f"workers {count}: median wall {statistics.median(walls[count]):.1f} s over {runs} runs "
              f"(min {min(walls[count]):.1f}, max {max(walls[count]):.1f})")
    for count, values in ratios.items():
        print(f"workers {count} / workers {counts[0]}: median of the {runs} paired ratios {statistics.median(values):.3f} "
              f"(each: {', '.join(f'{v:.3f}' for v in values)}); projected for idle cores "
              f"{statistics.median(projected[count]):.3f} (each: {', '.join(f'{v:.3f}' for v in projected[count])})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", default=None, help="comma-separated worker counts to compare, e.g. 1,2 (auto: the default)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes that finish in seconds (smoke test; the figures mean nothing)")
    args, extra = parser.parse_known_args()
    extra = [a for a in extra if a != "--"]
    if args.quick:
        args.runs = 1
        extra = ["--tasks", "waiting_line/copy", "--strategy", "confidence-topk", "--k", "4", "--limit", "1", "--no-report", *extra]
    if args.workers:
        paired([c.strip() for c in args.workers.split(",") if c.strip()], args.runs, extra)
        return
    times = []
    for i in range(args.runs):
        elapsed, cpu, rows, model = one_run(extra)
        times.append(elapsed)
        print(f"run {i + 1}: {elapsed:.1f} s  ({cpu:.1f} s CPU, {rows} rows, model {model})", flush=True)
    print(f"median of {args.runs}: {statistics.median(times):.1f} s  (min {min(times):.1f}, max {max(times):.1f})")


if __name__ == "__main__":
    main()
