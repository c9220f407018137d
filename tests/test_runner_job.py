"""Whole runs: rows written, resume, autoregressive models, the strategy developer loop,
the main job's fallback, and the `results` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from parallelbench.cli import app
from parallelbench.runner.job import run_job
from parallelbench.runner.spec import RunSpec
from parallelbench.runner.store import COLUMNS, ResultsStore
from test_runner_fakes import MY_STRATEGY, workdir  # noqa: F401  (fixture)

QUIET = Console(quiet=True)


def small_spec(db: Path, **flags) -> RunSpec:
    args = dict(model="py:fake_models:make", tasks="waiting_line/copy,puzzle/sudoku", strategy="confidence-topk",
                params={"k": "1,2"}, limit=5, batch_size=2, db=str(db))
    args.update(flags)
    return RunSpec().apply_flags(**args)


def test_run_writes_one_complete_row_per_sample_and_resumes(workdir: Path) -> None:
    db = workdir / "r.db"
    first = run_job(small_spec(db), QUIET, show_progress=False)
    assert (first.rows_added, first.rows_skipped) == (20, 0)  # 2 tasks x 2 configs x 5 samples
    frame = ResultsStore(db).frame()
    assert list(frame.columns) == list(COLUMNS)
    assert set(frame["config"]) == {"confidence-topk[k=1]", "confidence-topk[k=2]"}
    assert set(frame["category"]) == {"waiting_line", "puzzle"}
    row = frame[(frame["config"] == "confidence-topk[k=2]") & (frame["task"] == "waiting_line/copy")].iloc[0]
    assert row["model"] == "fake" and row["model_kind"] == "diffusion"  # the name the factory's model reports
    assert json.loads(row["versions"])["model_spec"] == "py:fake_models:make"  # and the spec beside it
    assert row["strategy_kind"] == "topk" and json.loads(row["params"])["k"] == 2
    assert row["nfe"] == 16 and row["num_tokens"] == 32 and row["tps"] == pytest.approx(2.0)
    assert json.loads(row["tokens_per_step"]) == [2] * 16 and len(json.loads(row["order"])) == 32
    versions = json.loads(row["versions"])
    assert versions["model"] == {"fake_model": "1"} and "data" in versions and "scorer" in versions
    assert versions["parallelbench"]
    # the score is the real scorer's verdict on the fake output
    for r in frame.itertuples():
        assert r.score == (0.0 if r.output == "[]" else 1.0)
    again = run_job(small_spec(db), QUIET, show_progress=False)
    assert (again.rows_added, again.rows_skipped) == (0, 20)
    more = run_job(small_spec(db, limit=7), QUIET, show_progress=False)
    assert (more.rows_added, more.rows_skipped) == (8, 16)  # 5 samples = two full batches + one partial
    assert ResultsStore(db).count() == 28


def test_autoregressive_models_run_once_per_task_without_a_strategy(workdir: Path) -> None:
    db = workdir / "ar.db"
    run_job(small_spec(db, model="py:fake_models:make_ar"), QUIET, show_progress=False)
    frame = ResultsStore(db).frame()
    assert len(frame) == 10
    assert set(frame["strategy"]) == {"autoregressive"} and set(frame["params"]) == {"{}"}
    assert set(frame["model_kind"]) == {"autoregressive"}


def test_ideal_model_end_to_end(workdir: Path) -> None:
    """Copy has one valid answer, so the exact model is always right, whatever the strategy."""
    db = workdir / "ideal.db"
    spec = RunSpec().apply_flags(model="ideal", tasks="waiting_line/copy", strategy="random,confidence-threshold",
                                 params={"k": "4", "threshold": "0.9"}, limit=4, db=str(db))
    run_job(spec, QUIET, show_progress=False)
    frame = ResultsStore(db).frame()
    assert len(frame) == 8 and set(frame["model_kind"]) == {"ideal"}
    assert frame["score"].tolist() == [1.0] * 8
    fast = frame[frame["config"] == "random[k=4]"]
    assert (fast["tps"] > 2.0).all()


def test_user_strategy_runs_beside_the_baselines(workdir: Path) -> None:
    (workdir / "my_strategy.py").write_text(MY_STRATEGY)
    db = workdir / "dev.db"
    result = CliRunner().invoke(app, [
        "run", "--model", "ideal", "--tasks", "waiting_line/reverse", "--strategy", "my_strategy:MyStrategy",
        "--k", "1,2", "--baselines", "--limit", "3", "--db", str(db), "--no-progress", "--no-report",
    ])
    assert result.exit_code == 0, result.output
    frame = ResultsStore(db).frame()
    assert set(frame["config"]) == {
        "my_strategy:MyStrategy[k=1]", "my_strategy:MyStrategy[k=2]",
        "confidence-topk[k=1]", "confidence-topk[k=2]",
        "confidence-threshold[threshold=0.55]", "confidence-threshold[threshold=0.7]",
        "confidence-threshold[threshold=0.9]",
    }
    assert len(frame) == 7 * 3
    mine = frame[frame["strategy"] == "my_strategy:MyStrategy"]
    assert mine["score"].tolist() == [1.0] * 6  # reverse has one answer: the ideal model gets it
    assert "my_strategy:MyStrategy[k=2]" in result.output  # the summary table


def test_main_job_decodes_the_default_model(workdir: Path) -> None:
    """No --model: the main job decodes the bundled tiny dLLM."""
    from parallelbench.runner.spec import DEFAULT_MODEL

    spec = RunSpec().apply_flags(tasks="waiting_line/copy", strategy="confidence-topk", params={"k": "4"},
                                 limit=2, db=str(workdir / "main.db"))
    result = run_job(spec, QUIET, show_progress=False)
    assert result.models == [DEFAULT_MODEL] == ["tiny"]
    assert ResultsStore(workdir / "main.db").count() == 2


def test_a_model_that_cannot_load_creates_no_database(workdir: Path) -> None:
    (workdir / "broken.py").write_text("def make():\n    raise RuntimeError('weights missing')\n")
    result = CliRunner().invoke(app, ["run", "--model", "py:broken:nothere", "--tasks", "waiting_line/copy",
                                      "--db", str(workdir / "x.db"), "--no-progress"])
    assert result.exit_code == 2 and "has no 'nothere'; its functions: make" in " ".join(result.output.split())
    assert not (workdir / "x.db").exists()


def test_results_summary_and_exports(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = workdir / "r.db"
    run_job(small_spec(db), QUIET, show_progress=False)
    runner = CliRunner()
    shown = runner.invoke(app, ["results", "--db", str(db)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "confidence-topk[k=2]" in shown.output and "sudoku" in shown.output and "mean" in shown.output
    frame = ResultsStore(db).frame()
    scores = frame[(frame["config"] == "confidence-topk[k=1]") & (frame["task"] == "puzzle/sudoku")]["score"]
    from parallelbench.analysis.uncertainty import interval

    ci = interval(scores.to_numpy(float))
    assert f"{scores.mean():.2f} ± {ci.half_width:.2f} · 1.0" in shown.output
    flat = " ".join(shown.output.split())
    assert f"{len(scores)} samples per cell" in flat and "95% interval" in flat

    for fmt in ("csv", "jsonl", "parquet"):
        out = workdir / f"all.{fmt}"
        res = runner.invoke(app, ["results", "export", "--db", str(db), "--format", fmt, "--out", str(out)])
        assert res.exit_code == 0, res.output
        assert "wrote 20 rows" in res.output
    import pandas as pd

    assert len(pd.read_csv(workdir / "all.csv")) == 20
    lines = [json.loads(line) for line in (workdir / "all.jsonl").read_text().splitlines()]
    assert len(lines) == 20 and isinstance(lines[0]["tokens_per_step"], list) and isinstance(lines[0]["params"], dict)
    assert set(pd.read_parquet(workdir / "all.parquet").columns) == set(COLUMNS) | {"scorer_error"}

    import parallelbench.runner.export as export_mod

    monkeypatch.setattr(export_mod.importlib.util, "find_spec", lambda name: None)
    res = runner.invoke(app, ["results", "export", "--db", str(db), "--format", "parquet", "--out", "x.parquet"])
    assert res.exit_code == 2 and "needs pyarrow" in res.output
    res = runner.invoke(app, ["results", "export", "--db", str(db), "--format", "xlsx", "--out", "x.xlsx"])
    assert res.exit_code == 2 and "valid formats: csv, jsonl, parquet" in res.output
    res = runner.invoke(app, ["results", "--db", str(workdir / "none.db")])
    assert res.exit_code == 2 and "no results database" in res.output
    assert not (workdir / "none.db").exists()
