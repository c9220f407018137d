"""Issue 25 item 5 (run part): piped or redirected `parallelbench run` output holds no progress-bar
remnants; a terminal still gets the live bar."""

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
    assert text == ""  # nothing of the bar, not even its last frame


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
