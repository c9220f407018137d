"""Issue 25 item 5 (run part): piped or redirected `parallelbench run` output holds no progress-bar
remnants; a terminal still gets the live bar. Issue 35 item 5: piped, a plain progress line at each
10% and at most every 30 s between (rows done of total, rate, ETA, failures so far);
`--no-progress` silences it."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from parallelbench.runner.progress import RunProgress

BAR = re.compile(r"acc +(\d\.\d{3}|-).*eta")  # the bar's line: model, bar, rows, acc, where, eta


def _drive(console: Console) -> str:
    with RunProgress(console) as progress:
        progress.start_model("ideal", 4, 0)
        progress.advance([{"score": 1.0}, {"score": 0.0}], "random[k=2] · waiting_line/copy")
        progress.advance([{"score": 1.0}, {"score": 1.0}], "random[k=2] · waiting_line/copy")
    return console.file.getvalue()


def test_no_bar_when_the_output_is_not_a_terminal() -> None:
    text = _drive(Console(file=io.StringIO(), force_terminal=False, width=120))
    assert not any(BAR.search(line) for line in text.splitlines())  # nothing of the bar, not even its last frame
    assert "\r" not in text and "\x1b[" not in text
    lines = text.splitlines()  # only the plain progress lines (issue 35 item 5)
    assert len(lines) == 2 and lines[0].startswith("ideal: 2 of 4 rows (50%), ")
    assert lines[1].startswith("ideal: 4 of 4 rows (100%), ")


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _piped(clock: Clock, enabled: bool = True) -> tuple[RunProgress, io.StringIO]:
    out = io.StringIO()
    return RunProgress(Console(file=out, force_terminal=False, width=200), enabled=enabled, clock=clock), out


LINE = re.compile(r"^tiny: ([\d,]+) of 1,000 rows \((\d+)%\), ([\d.]+) rows/s, (ETA (?:[\dhmins ]+)|done in [\dhmins ]+), "
                  r"([\d,]+) failed so far$")


def test_piped_lines_come_at_each_tenth_and_say_rows_rate_eta_and_failures() -> None:
    clock = Clock()
    progress, out = _piped(clock)
    with progress:
        progress.start_model("tiny", 1000, 0)
        for i in range(100):  # 10 rows a second, one failed row in every batch of 10
            clock.now += 1.0
            progress.advance([{"score": 1.0}] * 9 + [{"status": "failed", "score": None}], "cfg · task")
    lines = out.getvalue().splitlines()
    parsed = [LINE.match(ln) for ln in lines]
    assert all(parsed), lines
    assert [int(m.group(2)) for m in parsed] == [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
    first = parsed[0]
    assert first.group(1) == "100" and first.group(3) == "10.0" and first.group(4) == "ETA 1 min 30 s"
    assert first.group(5) == "10"  # failures so far
    assert parsed[-1].group(4) == "done in 1 min 40 s" and parsed[-1].group(5) == "100"


def test_between_tenths_a_line_at_most_every_30_seconds() -> None:
    clock = Clock()
    progress, out = _piped(clock)
    with progress:
        progress.start_model("tiny", 1000, 0)
        stamps = []
        for i in range(99):  # 1 row every 4 s: 10% takes 400 s
            clock.now += 4.0
            before = len(out.getvalue().splitlines())
            progress.advance([{"score": 0.0}], "cfg · task")
            if len(out.getvalue().splitlines()) > before:
                stamps.append(clock.now)
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    assert len(stamps) >= 10 and all(g >= 30 for g in gaps), gaps  # never more often than every 30 s
    assert all(g <= 32 for g in gaps)  # and as often as that while rows keep coming
    assert stamps[0] - 1000.0 <= 32  # the first one within 30 s of the start


def test_no_progress_silences_the_piped_lines() -> None:
    clock = Clock()
    progress, out = _piped(clock, enabled=False)
    with progress:
        progress.start_model("tiny", 1000, 0)
        for _ in range(100):
            clock.now += 1.0
            progress.advance([{"score": 1.0}] * 10, "cfg · task")
    assert out.getvalue() == ""


def test_a_terminal_gets_the_bar() -> None:  # the check above can fail: the bar is drawn on a terminal
    text = _drive(Console(file=io.StringIO(), force_terminal=True, width=160))
    assert "4/4" in text and "0.750" in text


def test_a_piped_run_prints_lines_only(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "200", "PYTHONUNBUFFERED": "1"}
    env.pop("FORCE_COLOR", None)
    proc = subprocess.run(
        [sys.executable, "-m", "parallelbench.cli", "run", "--model", "ideal", "--tasks", "waiting_line/copy",
         "--strategy", "random", "--k", "2", "--limit", "4", "--no-report", "--db", str(tmp_path / "r.db")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout + proc.stderr
    assert not any(BAR.search(line) for line in out.splitlines()), out
    assert "\r" not in out and "\x1b[" not in out
    assert "results database:" in out and "4 rows added" in out
    assert re.search(r"^ideal: 4 of 4 rows \(100%\), [\d.]+ rows/s, done in \d+ s, 0 failed so far$", out, re.M), out
    quiet = subprocess.run(
        [sys.executable, "-m", "parallelbench.cli", "run", "--model", "ideal", "--tasks", "waiting_line/copy",
         "--strategy", "random", "--k", "2", "--limit", "4", "--no-report", "--db", str(tmp_path / "q.db"),
         "--no-progress"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert quiet.returncode == 0 and "rows (" not in quiet.stdout + quiet.stderr
