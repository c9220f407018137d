"""Issue 33 item 1: the local executor's worker processes (`--workers N`).

Same rows in the same order for any number of workers (tiny and ideal); the default sizes itself
(and stays in one process for a run too small to repay starting workers); a worker that dies loses
only its unit, which the run names before exiting 1 and a re-run decodes; Ctrl-C and SIGTERM save
what finished, stop the workers and say so in one line; bad --workers values are one line.
"""

from __future__ import annotations

import io
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console
from typer.testing import CliRunner

from parallelbench.cli import app
from parallelbench.runner.job import run_job
from parallelbench.runner.resources import usable_cores
from parallelbench.runner.spec import RunSpec
from test_runner_fakes import db_rows, workdir  # noqa: F401  (fixture)
from test_runner_resume import GRID as SLOW_GRID, TOTAL as SLOW_TOTAL, count_rows as _count, spec as slow_spec

QUIET = Console(quiet=True)
needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds worker processes through /proc")


def every_column(db: Path) -> list[tuple]:
    """Every stored value of every row in insertion order, except the clock (created_at, wall_time)."""
    con = sqlite3.connect(str(db))
    try:
        cur = con.execute("SELECT * FROM results ORDER BY id")
        names = [d[0] for d in cur.description]
        keep = [i for i, n in enumerate(names) if n not in ("created_at", "wall_time")]
        return [tuple(row[i] for i in keep) for row in cur.fetchall()]
    finally:
        con.close()


def _run_counting_workers(spec: RunSpec) -> int:
    """Run `spec`; how many worker processes of its own were seen while its units were saved."""
    earlier = set(_workers_of(os.getpid()))  # a previous run's, maybe still exiting
    seen: set[int] = set()

    def on_unit(_rows: int) -> None:
        seen.update(set(_workers_of(os.getpid())) - earlier)

    run_job(spec, QUIET, show_progress=False, on_unit=on_unit)
    return len(seen)


@needs_proc
@pytest.mark.parametrize("grid", [
    # tiny: the bundled network, two tasks of different lengths, a sampling and a greedy strategy
    dict(model="tiny", tasks="waiting_line/copy,puzzle/sudoku", strategy="random,confidence-topk",
         params={"k": "2"}, limit=4, batch_size=2),
    # ideal: random top-k on shuffle depends on each unit's seed, so equal rows mean equal seeding
    dict(model="ideal", tasks="waiting_line/shuffle,waiting_line/copy", strategy="random,confidence-threshold",
         params={"k": "1,2", "threshold": "0.7"}, limit=6, batch_size=2),
], ids=["tiny", "ideal"])
def test_rows_are_the_same_for_one_and_two_workers(tmp_path: Path, grid: dict) -> None:
    one = RunSpec().apply_flags(**grid, db=str(tmp_path / "one.db"), workers=1)
    two = RunSpec().apply_flags(**grid, db=str(tmp_path / "two.db"), workers=2)
    assert _run_counting_workers(one) == 0  # decoded in this process
    assert _run_counting_workers(two) == 2  # decoded by two worker processes
    rows = every_column(tmp_path / "one.db")
    assert len(rows) > 8
    assert every_column(tmp_path / "two.db") == rows  # outputs, scores, NFE, order, provenance, insertion order


def test_the_default_sizes_itself_and_small_runs_stay_in_one_process(monkeypatch) -> None:
    """No --workers: every usable core, but only when the work left (estimated from the first unit)
    repays starting the workers; one explicit --workers N always starts N."""
    import parallelbench.runner.local as local

    made: list[int] = []

    class Pool:
        def __init__(self, count):
            self.lost, self.not_run = [], []
            made.append(count)

        def load(self, spec, options):
            return "diffusion"

        def run(self, units, skipped):
            for unit in units:
                yield unit, [{"by": "pool"}]

    class Runner:
        def __init__(self, *a):
            self.kind, self.versions, self.model = "diffusion", {}, None

        def run(self, unit):
            clock[0] += unit.cost
            return [{"by": "here"}]

    clock = [0.0]
    monkeypatch.setattr(local, "UnitRunner", Runner)
    monkeypatch.setattr(local, "usable_cores", lambda: 4)
    monkeypatch.setattr(local, "copies_that_fit", lambda model: None)

    def session(workers):
        return local.LocalSession(object(), "m", workers=workers, pools=lambda n, devices: Pool(n),
                                  clock=lambda: clock[0])

    def units(cost, n=10):
        return [SimpleNamespace(task="t", cost=cost) for _ in range(n)]

    quick = [rows[0]["by"] for _, rows in session(None).run(units(0.5))]  # 4.5 s left: not worth it
    assert quick == ["here"] * 10 and made == []
    slow = [rows[0]["by"] for _, rows in session(None).run(units(5.0))]  # 45 s left: 4 workers
    assert slow == ["here"] + ["pool"] * 9 and made == [4]
    explicit = [rows[0]["by"] for _, rows in session(2).run(units(0.01))]
    assert explicit == ["pool"] * 10 and made == [4, 2]
    assert [rows[0]["by"] for _, rows in session(1).run(units(50.0))] == ["here"] * 10 and made == [4, 2]


@pytest.mark.parametrize("value", ["0", "-2", "too-many"])
def test_bad_worker_counts_are_one_line(tmp_path: Path, value: str) -> None:
    cores = usable_cores()
    workers = str(cores + 1) if value == "too-many" else value
    result = CliRunner().invoke(app, ["run", "--model", "ideal", "--tasks", "waiting_line/copy", "--strategy", "random",
                                      "--k", "2", "--limit", "2", "--db", str(tmp_path / "r.db"), "--workers", workers],
                                env={"COLUMNS": "200"})
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert f"--workers {workers}" in lines[0] or f"(got {workers})" in lines[0]
    assert f"{cores} core" in lines[0] or f"({cores})" in lines[0]  # says what would be valid
    assert not (tmp_path / "r.db").exists()


# -- whole runs in a subprocess: what a user sees, with signals and a worker killed --------------------
def _start(args: list[str], cwd: Path, delay: str = "0.3") -> subprocess.Popen:
    """The run as a terminal starts it: its own process group, and Ctrl-C (SIGINT) not ignored even
    when these tests run in the background (`make test &`, nohup, CI), where the shell hands every
    child an ignored SIGINT that Python then keeps ignoring."""
    return subprocess.Popen(
        [sys.executable, "-m", "parallelbench.cli", "run", *args], cwd=cwd, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        env={**os.environ, "FAKE_MODEL_DELAY": delay, "COLUMNS": "200", "PYTHONUNBUFFERED": "1"},
    )


def _workers_of(pid: int) -> list[int]:
    """The worker processes a run started (spawned interpreters that are its children)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and "parallelbench.runner.pool import serve" in cmdline:
            out.append(int(entry.name))
    return sorted(out)


def _wait_for(proc: subprocess.Popen, db: Path, rows: int, workers: int = 0) -> list[int]:
    deadline = time.monotonic() + 120
    while _count(db) < rows or len(_workers_of(proc.pid)) < workers:
        if proc.poll() is not None:
            pytest.fail(f"the run ended first: {proc.communicate()[1][-2000:]}")
        assert time.monotonic() < deadline, "the run made no progress in time"
        time.sleep(0.05)
    return _workers_of(proc.pid)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


@needs_proc
def test_a_killed_worker_loses_only_its_unit_which_a_rerun_decodes(workdir: Path) -> None:
    db = workdir / "killed.db"
    proc = _start([*SLOW_GRID, "--db", str(db), "--workers", "2", "--no-progress", "--no-report"], workdir)
    victims = _wait_for(proc, db, 6, workers=2)
    os.kill(victims[0], signal.SIGKILL)
    out, err = proc.communicate(timeout=180)
    text = out + err
    assert proc.returncode == 1, text
    assert "Traceback" not in text
    kept = _count(db)
    assert kept == SLOW_TOTAL - 3, text  # one unit of 3 lost, every other unit decoded by the other worker
    final = [ln for ln in text.splitlines() if "lost when its worker process died" in ln]
    assert len(final) == 1 and "re-run the same command" in final[0], text
    assert f"pid {victims[0]}" in text and "SIGKILL" in text  # which worker, and how it died

    clean = workdir / "clean.db"
    run_job(slow_spec(clean), QUIET, show_progress=False)
    missing = sorted(set(db_rows(clean)) - set(db_rows(db)))
    assert len(missing) == 3
    strategy, params, task = missing[0][1], missing[0][2], missing[0][3]
    ids = sorted(int(m[4].rsplit("/", 1)[1]) for m in missing)
    k = re.search(r'"k":(\d+)', params).group(1)
    assert f"{strategy}[k={k}] · {task}, samples {ids[0]}-{ids[-1]}, seed 0" in final[0]  # names the lost unit

    rerun = subprocess.run([sys.executable, "-m", "parallelbench.cli", "run", *SLOW_GRID, "--db", str(db),
                            "--workers", "2", "--no-progress", "--no-report"], cwd=workdir, capture_output=True,
                           text=True, timeout=180, env={**os.environ, "COLUMNS": "200"})
    assert rerun.returncode == 0, rerun.stderr
    assert "(3 rows added" in rerun.stdout
    assert db_rows(db) == db_rows(clean)


@needs_proc
@pytest.mark.parametrize("how", ["sigterm", "ctrl-c", "sigterm-to-every-process"])
def test_sigterm_and_ctrl_c_save_what_finished_and_say_so_in_one_line(workdir: Path, how: str) -> None:
    db = workdir / "r.db"
    proc = _start([*SLOW_GRID, "--db", str(db), "--workers", "2", "--no-progress", "--no-report"], workdir)
    workers = _wait_for(proc, db, 6, workers=2)
    if how == "sigterm":
        proc.send_signal(signal.SIGTERM)  # to the run alone, as `kill PID`, `timeout` or Kubernetes does
    elif how == "ctrl-c":
        os.killpg(proc.pid, signal.SIGINT)  # to the whole foreground group, as a terminal's Ctrl-C does
    else:  # to every process of the job, workers first, as Slurm's scancel or `systemctl stop` may
        for pid in workers:
            os.kill(pid, signal.SIGTERM)
        time.sleep(0.2)  # the run sees its workers end before its own signal comes
        proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    lines = [ln for ln in (out + err).splitlines() if ln.strip()]
    assert proc.returncode == (130 if how == "ctrl-c" else 143), out + err
    assert len(lines) == 1 and "re-run the same command to resume" in lines[0], lines
    saved = int(re.search(r"interrupted: ([\d,]+) rows of this run are saved in ", lines[0]).group(1).replace(",", ""))
    assert saved == _count(db) >= 6
    deadline = time.monotonic() + 10
    while not all(_gone(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_gone(pid) for pid in workers)  # no worker outlives the run


def test_sigterm_in_one_process_prints_the_ctrl_c_line(workdir: Path) -> None:
    db = workdir / "r.db"
    proc = _start([*SLOW_GRID, "--db", str(db), "--workers", "1", "--no-progress", "--no-report"], workdir)
    _wait_for(proc, db, 3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    lines = [ln for ln in (out + err).splitlines() if ln.strip()]
    assert proc.returncode == 143 and len(lines) == 1, out + err
    saved = int(re.search(r"interrupted: ([\d,]+) rows of this run are saved", lines[0]).group(1))
    assert saved == _count(db) >= 3


GPU_MODELS = '''
import io
import os
from parallelbench.models.base import Generation


class WhereAmI:
    """Answers with the CUDA device its worker process was given."""

    name, kind = "where", "diffusion"

    def versions(self):
        return {"where": "1"}

    def generate(self, samples, strategy, *, max_new_tokens, seed=0):
        seen = os.environ.get("CUDA_VISIBLE_DEVICES", "none")
        return [Generation(text=seen, nfe=1, tokens_per_step=[1], order=[0], token_texts=["t"], num_tokens=1)
                for _ in samples]


def make():
    return WhereAmI()
'''


def test_a_model_on_a_gpu_gets_one_worker_per_visible_device(workdir: Path, monkeypatch) -> None:
    """On a GPU the default is one worker per visible device, each seeing only its own; a device the
    user named (`device=cuda:N`) is left as it is. (The device is faked: the plumbing is what is tested.)"""
    import parallelbench.runner.local as local

    (workdir / "gpu_models.py").write_text(GPU_MODELS)
    monkeypatch.setattr(local, "model_device", lambda model: "cuda")
    monkeypatch.setattr(local, "visible_gpus", lambda: ["3", "5"])
    monkeypatch.setattr(local, "MIN_WORK_S", 0.0)  # this tiny run is worth workers
    spec = RunSpec().apply_flags(model="py:gpu_models:make", tasks="waiting_line/copy", strategy="random",
                                 params={"k": "2"}, limit=8, batch_size=2, db=str(workdir / "g.db"))
    run_job(spec, QUIET, show_progress=False)
    con = sqlite3.connect(str(workdir / "g.db"))
    seen = [row[0] for row in con.execute("SELECT output FROM results ORDER BY id")]
    con.close()
    assert seen[:2] == ["none", "none"]  # the first unit, decoded by the run itself (it times the work)
    assert set(seen[2:]) == {"3", "5"}  # then two workers, one per device, each seeing only its own

    session = local.LocalSession(object(), "hf:x", options={"device": "cuda:1"}, workers=None,
                                 pools=lambda n, d: None)
    assert session.worker_plan(10) == (2, None)  # the user's device is kept: no per-worker device
    assert local.LocalSession(object(), "hf:x", workers=3, pools=lambda n, d: None).worker_plan(10) == (3, ["3", "5"])


def test_the_default_holds_no_more_copies_than_the_free_memory(monkeypatch) -> None:
    import parallelbench.runner.local as local

    notes: list[str] = []
    monkeypatch.setattr(local, "usable_cores", lambda: 8)
    monkeypatch.setattr(local, "copies_that_fit", lambda model: 3)
    session = local.LocalSession(object(), "hf:big", workers=None, pools=lambda n, d: None, notify=notes.append)
    assert session.worker_plan(100) == (3, None)
    assert len(notes) == 1 and "3 worker processes, not 8" in notes[0] and "free memory" in notes[0]
    assert local.LocalSession(object(), "hf:big", workers=8, pools=lambda n, d: None).worker_plan(100) == (8, None)
    assert local.LocalSession(object(), "hf:big", workers=None, pools=lambda n, d: None).worker_plan(2) == (2, None)


def test_workers_that_cannot_load_the_model_leave_the_run_to_this_process(workdir: Path, monkeypatch) -> None:
    """A model that loads here but in no worker (here: on purpose) still runs, in this process, with a note."""
    (workdir / "picky_models.py").write_text(
        "import os\nfrom fake_models import FakeModel\n\n\ndef make():\n"
        "    if str(os.getppid()) == os.environ['PB_TEST_PARENT']:\n"
        "        raise RuntimeError('no room for another copy')\n"
        "    return FakeModel()\n"
    )
    monkeypatch.setenv("PB_TEST_PARENT", str(os.getpid()))
    out = io.StringIO()
    spec = RunSpec().apply_flags(model="py:picky_models:make", tasks="waiting_line/copy", strategy="random",
                                 params={"k": "2"}, limit=6, batch_size=2, db=str(workdir / "p.db"), workers=2)
    result = run_job(spec, Console(file=out, width=300), show_progress=False)
    assert result.rows_added == 6 and not result.lost
    text = " ".join(out.getvalue().split())
    assert "could not load it: RuntimeError: no room for another copy" in text or "no room for another copy" in text
    assert "decoding in this process instead" in text
