"""Regression tests for the runner bugs a QA pass found (each failed before its fix)."""

from __future__ import annotations

import io
import json
import sqlite3
import sys
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console
from typer.testing import CliRunner

from parallelbench.cli import app
from parallelbench.runner.spec import RunSpec
from parallelbench.runner.store import ResultsStore, StoreError

RUN = ["--no-report", "--no-progress"]

WORKED_EXAMPLE = '''
from dataclasses import dataclass

from parallelbench.decoding import DecodeOptions, Strategy
from parallelbench.decoding import selection


@dataclass
class RelativeOptions(DecodeOptions):
    ratio: float = 0.8


class RelativeConfidence(Strategy):
    Options = RelativeOptions

    def select(self, view, scores):
        best = scores.masked_fill(~view.candidates, 0).max(dim=1, keepdim=True).values
        chosen = view.candidates & (scores >= self.options.ratio * best)
        return selection.with_fallback(chosen, scores, view.candidates)
'''


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def no_traceback(result) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output


def rows_of(db: Path) -> pd.DataFrame:
    with ResultsStore(db, create=False) as store:
        return store.frame()


# -- 1: tasks the model cannot decode are skipped, the rest run ----------------------------
def test_undecodable_task_is_skipped_and_the_rest_runs(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    result = invoke("run", "-m", "ideal", "-t", "waiting_line/copy,text_writing/summarization", "-s",
                    "confidence-topk", "--k", "2", "-n", "2", "--db", str(db), *RUN)
    no_traceback(result)
    assert result.exit_code == 0, result.output
    assert result.output.count("skipped text_writing/summarization for ideal") == 1
    assert set(rows_of(db)["task"]) == {"waiting_line/copy"}


def test_nothing_decodable_exits_2(tmp_path: Path) -> None:
    result = invoke("run", "-m", "ideal", "-t", "waiting_line_n15/shuffle", "-s", "confidence-topk", "--k", "1",
                    "-n", "1", "--db", str(tmp_path / "r.db"), *RUN)
    no_traceback(result)
    assert result.exit_code == 2
    assert "nothing ran" in result.output and "waiting_line_n15/shuffle" in result.output


class _NoSupportsIdeal:
    """The ideal model without `supports`: the runner must fall back to catching its error."""

    def __init__(self) -> None:
        from parallelbench.models import load_model

        self.inner = load_model("ideal")
        self.kind = "ideal"
        self.name = "ideal"

    def versions(self):
        return self.inner.versions()

    def generate(self, samples, strategy, *, max_new_tokens, seed):
        return self.inner.generate(samples, strategy, max_new_tokens=max_new_tokens, seed=seed)


def test_no_answer_set_error_mid_run_becomes_a_skip() -> None:
    from parallelbench.runner.local import LocalSession
    from parallelbench.runner.units import make_units

    spec = RunSpec().apply_flags(model="ideal", tasks="text_writing/summarization,waiting_line/copy",
                                 strategy="confidence-topk", params={"k": "2"}, limit=2)
    plan = spec.plan()
    session = LocalSession(_NoSupportsIdeal(), "ideal")
    units, _ = make_units(plan, "ideal", "ideal", set())
    done = [(u.task, len(rows)) for u, rows in session.run(units)]
    assert set(session.skipped) == {"text_writing/summarization"}
    assert ("waiting_line/copy", 2) in done


# -- 2: unusable database paths are one line, exit 2 ---------------------------------------
@pytest.mark.parametrize("kind", ["csv", "folder", "unwritable"])
def test_bad_db_paths_are_one_clear_line(tmp_path: Path, kind: str) -> None:
    if kind == "csv":
        db = tmp_path / "data.csv"
        db.write_text("a,b\n1,2\n" * 200)
    elif kind == "folder":
        db = tmp_path
    else:
        db = Path("/proc/nope/x.db")
    for args in (["run", "-m", "ideal", "-t", "waiting_line/copy", "-s", "confidence-topk", "--k", "2", "-n", "1",
                  *RUN], ["results"], ["results", "export", "--format", "csv", "--out", str(tmp_path / "o.csv")]):
        if kind == "unwritable" and args[0] == "results":
            continue  # reading a missing file is the "no results database" message
        result = invoke(*args, "--db", str(db))
        no_traceback(result)
        assert result.exit_code == 2, (args, result.output)
        assert "error:" in result.output and str(db) in " ".join(result.output.split())


def test_store_turns_file_errors_into_store_error(tmp_path: Path) -> None:
    bad = tmp_path / "x.db"
    bad.write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(StoreError, match="not a SQLite database"):
        ResultsStore(bad)
    with pytest.raises(StoreError, match="folder"):
        ResultsStore(tmp_path)
    with pytest.raises(FileNotFoundError):  # still what callers caught before
        ResultsStore(tmp_path / "missing.db", create=False)


# -- 3: sweep flags go only to strategies that have them -----------------------------------
def _strategy_module(tmp_path: Path, monkeypatch, name: str) -> str:
    (tmp_path / f"{name}.py").write_text(WORKED_EXAMPLE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(name, None)
    return f"{name}:RelativeConfidence"


def test_help_example_with_a_custom_strategy_without_k(tmp_path: Path, monkeypatch) -> None:
    mine = _strategy_module(tmp_path, monkeypatch, "qa_mod_help")
    result = invoke("run", "-m", "ideal", "-t", "waiting_line/copy", "--strategy", mine, "--k", "1,2",
                    "--baselines", "-n", "1", "--db", str(tmp_path / "r.db"), *RUN)
    assert result.exit_code == 0, result.output
    configs = set(rows_of(tmp_path / "r.db")["config"])
    assert {"confidence-topk[k=1]", "confidence-topk[k=2]", "confidence-threshold[threshold=0.55]"} <= configs
    assert any(c.startswith(mine) for c in configs)
    assert "confidence-topk[k=4]" not in configs  # the baselines took --k, not the default 1, 2, 4


def test_k_goes_to_the_strategy_that_has_it(tmp_path: Path, monkeypatch) -> None:
    mine = _strategy_module(tmp_path, monkeypatch, "qa_mod_mixed")
    spec = RunSpec().apply_flags(model="ideal", tasks="waiting_line/copy", strategy=f"{mine},confidence-topk",
                                 params={"k": "2"})
    labels = [c.label for c in spec.plan().configs["waiting_line/copy"]]
    assert "confidence-topk[k=2]" in labels and len(labels) == 2
    from parallelbench.runner.spec import SpecError

    with pytest.raises(SpecError, match="has no parameter 'k'"):
        RunSpec().apply_flags(model="ideal", strategy=mine, params={"k": "2"})


# -- 4: results accepts run's task specs and says what the database holds -------------------
@pytest.fixture(scope="module")
def small_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("qa") / "r.db"
    result = invoke("run", "-m", "ideal", "-t", "waiting_line/copy,waiting_line/sort,puzzle/sudoku", "-s",
                    "confidence-topk", "--k", "2", "-n", "1", "--db", str(db), *RUN)
    assert result.exit_code == 0, result.output
    return db


def test_results_accepts_families(small_db: Path) -> None:
    result = invoke("results", "--db", str(small_db), "-t", "waiting_line")
    assert result.exit_code == 0
    assert "copy" in result.output and "sort" in result.output and "sudoku" not in result.output


@pytest.mark.parametrize("args", [["-t", "bogus"], ["-m", "bogus"]])
def test_results_says_what_the_database_holds(small_db: Path, args: list[str]) -> None:
    result = invoke("results", "--db", str(small_db), *args)
    out = " ".join(result.output.split())
    assert "no results yet" not in out
    assert f"no rows match --{'tasks' if args[0] == '-t' else 'model'} bogus" in out
    assert "models [ideal] and 3 tasks" in out


# -- 5: the summary is readable at 80 columns -----------------------------------------------
def test_summary_readable_at_80_columns() -> None:
    from parallelbench.runner.summary import print_summary
    from parallelbench.tasks import resolve_tasks

    tasks = [t.id for t in resolve_tasks(["waiting_line", "puzzle"])]
    assert len(tasks) == 12
    rows = []
    for i, k in enumerate([1, 2, 4]):
        for name in ("random", "confidence-topk", "confidence-threshold"):
            for j, t in enumerate(tasks):
                rows.append(dict(model="m", strategy=name, params=json.dumps({"k": k}), config=f"{name}[k={k}]",
                                 task=t, score=(i * 12 + j) / 100, tps=1.5))
    buf = io.StringIO()
    print_summary(pd.DataFrame(rows), Console(file=buf, width=80, color_system=None))
    text = buf.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text
    for i in range(3):
        for j in range(12):
            assert f"{(i * 12 + j) / 100:.2f} ± " in text  # score ± half-width of its interval
    assert "1 sample per cell" in text and text.count("· 1.5") >= 36


# -- 6: unknown strategy names the valid ones once ------------------------------------------
def test_unknown_strategy_lists_valid_names_once() -> None:
    result = invoke("run", "-m", "ideal", "-s", "fastest", "--dry-run")
    assert result.exit_code == 2
    assert result.output.count("confidence-topk") == 1, result.output


# -- 7: block lengths run on the ideal model -------------------------------------------------
def test_block_length_runs_on_the_ideal_model(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    result = invoke("run", "-m", "ideal", "-t", "waiting_line/copy", "-s", "confidence-topk", "--k", "2",
                    "--block-length", "4,8", "-n", "2", "--db", str(db), *RUN)
    assert result.exit_code == 0, result.output
    frame = rows_of(db)
    assert len(frame) == 4
    assert sorted({json.loads(p)["block_length"] for p in frame["params"]}) == [4, 8]


# -- 8: dry run reports what a real run would ------------------------------------------------
def test_dry_run_rejects_an_unusable_db(tmp_path: Path) -> None:
    result = invoke("run", "-m", "ideal", "-t", "waiting_line/copy", "--dry-run", "--db", str(tmp_path))
    no_traceback(result)
    assert result.exit_code == 2 and "error:" in result.output


def test_dry_run_lists_skips(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    result = invoke("run", "-m", "ideal", "-t", "waiting_line/copy,text_writing/summarization", "--dry-run",
                    "--db", str(db))
    assert result.exit_code == 0, result.output
    assert "would skip text_writing/summarization for ideal" in result.output
    assert not db.exists()
    result = invoke("run", "-m", "ideal", "-t", "text_writing/summarization", "--dry-run", "--db", str(db))
    assert result.exit_code == 2 and "nothing in this plan can run" in result.output


# -- 9: the fallback note keeps the path whole -----------------------------------------------
def test_fallback_note_keeps_long_paths_whole(monkeypatch) -> None:
    from parallelbench.runner import job

    path = "/very/long/path/" + "segment/" * 30 + "tiny-weights.safetensors"
    real = job._load

    def fake(spec, options):
        if spec == "tiny":
            raise job.ModelLoadError(f"model 'tiny' could not be loaded: no file {path}")
        return real(spec, options)

    monkeypatch.setattr(job, "_load", fake)
    monkeypatch.setattr("parallelbench.runner.spec.DEFAULT_MODEL", "tiny")
    buf = io.StringIO()
    notes: list[str] = []
    name, _ = job._default_model(RunSpec(), Console(file=buf, width=80, color_system=None), notes)
    assert name == "ideal"
    assert path in buf.getvalue() and path in notes[0]


# -- thresholds off shuffle's 1/2 confidence -------------------------------------------------
def test_quick_and_baseline_thresholds_avoid_one_half() -> None:
    from parallelbench.runner.sweeps import get_sweep

    quick = [g for g in get_sweep("quick").grids if g.name == "confidence-threshold"]
    assert quick[0].params["threshold"] == [0.55, 0.7, 0.9]
    spec = RunSpec().apply_flags(model="ideal", tasks="waiting_line/copy", strategy="random",
                                 params={"k": "1"}, baselines=True)
    labels = [c.label for c in spec.plan().configs["waiting_line/copy"]]
    assert "confidence-threshold[threshold=0.55]" in labels and "confidence-threshold[threshold=0.5]" not in labels
