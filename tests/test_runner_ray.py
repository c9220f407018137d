"""The Ray executor (local instance, 2 CPU workers) writes the same rows as the local executor."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from rich.console import Console

from parallelbench.runner.job import run_job
from parallelbench.runner.spec import RunSpec
from test_runner_fakes import db_rows, workdir  # noqa: F401  (fixture)

pytestmark = [
    pytest.mark.ray,
    pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed"),
]


def spec(db: Path, executor: str) -> RunSpec:
    # random top-k on shuffle: the ideal model's outputs depend on the decode seed,
    # so equal rows mean both executors cut and seed the units identically
    return RunSpec().apply_flags(
        model="ideal,py:fake_models:make", tasks="waiting_line/copy,waiting_line/shuffle",
        strategy="random,confidence-threshold", params={"k": "1,2", "threshold": "0.7"},
        limit=6, batch_size=2, db=str(db), executor=executor, workers=2,
    )


def test_ray_and_local_executors_write_the_same_rows(workdir: Path) -> None:
    quiet = Console(quiet=True)
    local = run_job(spec(workdir / "local.db", "local"), quiet, show_progress=False)
    remote = run_job(spec(workdir / "ray.db", "ray"), quiet, show_progress=False)
    assert local.rows_added == remote.rows_added == 2 * 2 * 3 * 6
    local_rows = db_rows(workdir / "local.db")
    assert db_rows(workdir / "ray.db") == local_rows
    # the shuffle outputs really vary with the seed (so the comparison means something)
    shuffles = {r[6] for r in local_rows if r[0] == "ideal" and r[3] == "waiting_line/shuffle"}
    assert len(shuffles) > 3


def test_api_waits_inside_ray_actors_show_in_the_drivers_progress(tmp_path: Path, monkeypatch) -> None:
    """Issue 33 item 6: a request pending in an actor is shown by the driver as a local one is
    (host, attempt i of n, seconds waited), here as the piped `waiting for ...` line."""
    import io
    import re
    import time

    import parallelbench.runner.progress as progress
    from test_api_faults import KEY, FaultServer, answer

    monkeypatch.setattr(progress, "PIPED_WAIT_AFTER_S", 0.2)
    monkeypatch.setattr(progress, "PIPED_WAIT_EVERY_S", 0.5)

    def slow(h, body, prompt, nth):
        time.sleep(4.0)
        answer(h)
    server = FaultServer(slow)
    try:
        console = Console(file=io.StringIO(), force_terminal=False, width=200)
        run = RunSpec().apply_flags(
            model="api:fault-model", tasks="waiting_line/copy", limit=2, batch_size=1, db=str(tmp_path / "r.db"),
            executor="ray", workers=2, model_options=[f"base_url={server.url}", f"api_key={KEY}", "max_retries=2"],
        )
        result = run_job(run, console, show_progress=True)
    finally:
        server.close()
    assert result.rows_added == 2
    host = server.url.split("//")[1].split("/")[0]
    out = console.file.getvalue()
    waits = [ln for ln in out.splitlines() if ln.startswith(f"waiting for {host}: ")]
    assert waits, out
    assert all(re.match(rf"waiting for {re.escape(host)}: attempt 1 of 3, \d+ s \(gives up at 300 s\)", w) for w in waits)
    assert max(int(re.search(r", (\d+) s \(", w).group(1)) for w in waits) >= 1  # the seconds count up
    assert KEY not in out
