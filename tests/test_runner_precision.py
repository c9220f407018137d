"""The main job says how many samples each point has and how wide its intervals are; --limit grows them."""

import re

from typer.testing import CliRunner

from parallelbench.cli import app


def _precision(output: str) -> tuple[int, float]:
    flat = " ".join(output.split())
    match = re.search(r"precision: each accuracy point rests on (\d+) samples per task .*?±([\d.]+) accuracy points wide", flat)
    assert match, output
    return int(match.group(1)), float(match.group(2))


def test_run_prints_samples_and_interval_width_and_limit_narrows_them(tmp_path):
    runner = CliRunner()
    args = ["run", "-m", "ideal", "-t", "waiting_line/shuffle", "-s", "random", "--k", "2",
            "--db", str(tmp_path / "r.db"), "--no-report", "--no-progress"]
    few = runner.invoke(app, [*args, "-n", "4"])
    assert few.exit_code == 0, few.output
    n_few, half_few = _precision(few.output)
    more = runner.invoke(app, [*args, "-n", "16"])
    assert more.exit_code == 0, more.output
    n_more, half_more = _precision(more.output)
    assert (n_few, n_more) == (4, 16)
    assert half_more < half_few
    assert "--limit N" in " ".join(more.output.split())
