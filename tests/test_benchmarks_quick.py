"""Every script in benchmarks/ runs with --quick (tiny sizes), so documented commands don't rot.

The scripts are found by globbing, so a new script is covered the day it lands. A script
whose quick run needs something this machine lacks (a GPU, the network) exits with
status 77 and prints one line saying what: the test then skips with that line.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_"))  # _name.py: shared parts, not scripts
#: exit status a script uses for "cannot run here" (the automake convention for a skipped test)
SKIP = 77
TIMEOUT_S = 300  # generous: CI boxes can be loaded; --quick runs take seconds when idle


def test_the_benchmarks_folder_is_not_empty():
    assert len(SCRIPTS) >= 5


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_script_runs_with_quick(script, tmp_path):
    source = script.read_text(encoding="utf-8")
    assert "--quick" in source, f"{script.name} has no --quick mode (every benchmark needs one, see PREAMBLE/benchmarks.md)"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    env.setdefault("HF_HUB_OFFLINE", "1")
    try:
        proc = subprocess.run(
            [sys.executable, str(script), "--quick"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{script.name} --quick took more than {TIMEOUT_S} s; --quick must finish in seconds")
    if proc.returncode == SKIP:
        reason = (proc.stdout.strip() or proc.stderr.strip() or "no reason given").splitlines()[-1]
        pytest.skip(f"{script.name} --quick cannot run here: {reason}")
    assert proc.returncode == 0, f"{script.name} --quick failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    assert proc.stdout.strip(), f"{script.name} --quick printed nothing"
