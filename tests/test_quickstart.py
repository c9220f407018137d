"""The README's two-command quick start: `make run` and `make test`, idempotent, and CI runs the second."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _quick_start_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]


def test_readme_quick_start_is_two_make_commands_and_ci_runs_the_test_one() -> None:
    assert _quick_start_commands() == ["make run", "make test"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^make test\b", ci, re.M)


def _dry(target: str, venv: Path) -> str:
    out = subprocess.run(["make", "-n", target, f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout


def _stamp(path: Path) -> None:
    path.touch()
    later = (ROOT / "pyproject.toml").stat().st_mtime + 10
    os.utime(path, (later, later))


def test_setup_runs_on_a_fresh_venv_and_is_skipped_once_done(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    fresh = _dry("test", venv)
    assert "pip install" in fresh and "-e \".[all]\"" in fresh and "pytest" in fresh
    (venv / "bin").mkdir(parents=True)
    _stamp(venv / ".parallelbench-installed")
    _stamp(venv / ".parallelbench-main")  # a full set-up covers the main job too
    again = _dry("test", venv)
    assert "pip install" not in again and "pytest" in again  # second call: straight to the tests
    assert "parallelbench run" in _dry("run", venv) and "pip install" not in _dry("run", venv)


def test_make_run_installs_only_what_the_main_job_needs(tmp_path: Path) -> None:
    """`make run` installs the `main` extra (the report's plotting), not `all` (issue 35 item 11)."""
    import tomllib

    venv = tmp_path / "venv"
    fresh = _dry("run", venv)
    assert "-e \".[main]\"" in fresh and ".[all]" not in fresh and "parallelbench run" in fresh
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["main"] == ["parallelbench[report]"]
    (venv / "bin").mkdir(parents=True)
    _stamp(venv / ".parallelbench-main")  # after `make run`: the main job again installs nothing,
    assert "pip install" not in _dry("run", venv)
    assert "-e \".[all]\"" in _dry("test", venv)  # and `make test` adds the rest


def test_tour_keeps_its_results_apart_from_the_main_job() -> None:
    """Every tour command that reads or writes results names the tour's own --db (issue 25 item 4)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", text.split("## A five-minute tour", 1)[1], re.S).group(1)
    commands = re.sub(r"\\\n\s*", " ", block).splitlines()
    uses_results = [c.split("#")[0] for c in commands
                    if re.match(r"parallelbench (run|results|report|leaderboard)\b", c.strip())]
    assert len(uses_results) >= 5
    dbs = {re.search(r"--db (\S+)", c).group(1) if "--db" in c else None for c in uses_results}
    assert len(dbs) == 1 and None not in dbs and "parallelbench.db" not in dbs, uses_results
