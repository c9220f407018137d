"""`results` and `leaderboard` read at 80 columns and when piped (issue 25 item 5): with long
model and strategy names no label is cut so that two entries could not be told apart, and no
header is folded mid-word; every label can be read back from the text."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest
from typer.testing import CliRunner

from parallelbench.analysis.synthetic import synthetic_frame
from parallelbench.cli import app
from parallelbench.runner.store import ResultsStore

MODELS = ["py:lab_experiments.checkpoints.diffusion_v2:build_model", "py:lab_experiments.checkpoints.diffusion_v3:build_model"]
CUSTOM = "lab_experiments.strategies.adaptive:EntropyBoundedUnmasking"
BOX = "┏┃┡│├└━┗┠┨"


def long_named_frame() -> pd.DataFrame:
    parts = []
    for seed, model in enumerate(MODELS):
        frame = synthetic_frame(seed=seed, samples=3, model=model)
        frame = frame[~frame["params"].str.contains("block_length")]
        custom = frame[frame["strategy"] == "confidence-threshold"].copy()
        custom["strategy"] = CUSTOM
        custom["config"] = custom["config"].str.replace("confidence-threshold", CUSTOM, regex=False)
        parts += [frame, custom]
    return pd.concat(parts, ignore_index=True)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("wide") / "long.db"
    with ResultsStore(path) as store:
        store.write(long_named_frame().to_dict("records"))
    return path


def _check(output: str, labels) -> None:
    assert "Traceback" not in output
    for label in labels:
        assert label in output, f"{label!r} cannot be read back"
    for line in output.splitlines():
        if line[:1] in BOX:
            assert len(line) <= 80, line  # tables fit the width
    assert "…" not in output  # nothing cut


@pytest.mark.parametrize("env", [{"COLUMNS": "80"}, {}], ids=["COLUMNS=80", "piped, no COLUMNS"])
def test_leaderboard_labels_whole_at_80_columns(db, env):
    runner = CliRunner()
    labels = list(json.loads(runner.invoke(app, ["leaderboard", "--db", str(db), "--json"]).output))
    assert len(labels) == 10 and any(CUSTOM in label for label in labels)
    result = runner.invoke(app, ["leaderboard", "--db", str(db)], env=env)
    assert result.exit_code == 0, result.output
    _check(result.output, labels)
    # entries that share a long prefix stay apart: each full label is on a line of its own legend
    for label in labels:
        assert sum(line.endswith(label) or f"= {label} (" in line for line in result.output.splitlines()) >= 1


@pytest.mark.parametrize("env", [{"COLUMNS": "80"}, {}], ids=["COLUMNS=80", "piped, no COLUMNS"])
def test_results_labels_and_headers_whole_at_80_columns(db, env):
    frame = long_named_frame()
    result = CliRunner().invoke(app, ["results", "--db", str(db)], env=env)
    assert result.exit_code == 0, result.output
    _check(result.output, [*MODELS, *frame["config"].unique(), *(t.split("/")[-1] for t in frame["task"].unique())])
    assert "confidence-threshol\n" not in result.output and "threshol│" not in result.output
    order = CliRunner().invoke(app, ["results", "--db", str(db), "--order"], env=env)
    assert order.exit_code == 0, order.output
    _check(order.output, [*MODELS, *frame["config"].unique()])


def test_piped_subprocess_output(db):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    for args in (["leaderboard", "--db", str(db)], ["results", "--db", str(db)]):
        run = subprocess.run([sys.executable, "-c", "from parallelbench.cli import app; app()", *args],
                             capture_output=True, text=True, env=env, timeout=300, check=False)
        assert run.returncode == 0, run.stderr[-2000:]
        _check(run.stdout, MODELS)
