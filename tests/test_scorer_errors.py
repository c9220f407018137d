"""Scorer errors are loud (issue 35 item 1): a user scorer that raises is named, counted and shown as
an error by `run`, `results`, `leaderboard`, the report and `score`, never as a silent 0."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from parallelbench.cli import app
from parallelbench.runner.store import ResultsStore
from parallelbench.scoring.errors import count_errors, split_message

TASKS = '''
import itertools, json, random
from parallelbench.scoring import Scores, register_scorer
from parallelbench.tasks import GeneratorParams, Sample, Task

PROMPT = "List the letters {letters} in any order, each exactly once, as a JSON list."


@register_scorer("half_bad")
def half_bad(sample, output):
    if sample.data["i"] % 2 == 0:
        raise ValueError("boom on an even sample")
    return Scores(1.0, {})


@register_scorer("all_bad")
def all_bad(sample, output):
    raise KeyError("letters")


def generate(task, limit):
    rng = random.Random(task.params.seed)
    count = task.params.num_samples if limit is None else min(limit, task.params.num_samples)
    out = []
    for i in range(count):
        letters = rng.sample("ABCDEFGH", 3)
        prompt = PROMPT.format(letters=", ".join(letters))
        out.append(Sample(id=f"{task.id}/{i}", task=task.id, prompt=prompt,
                          messages=[{"role": "user", "content": prompt}], answer=json.dumps(letters),
                          scorer=task.scorer, data={"letters": letters, "i": i}))
    return out


def every_order(sample):
    return [json.dumps(list(o)) for o in itertools.permutations(sample.data["letters"])]


def make_tasks():
    return [Task(id=f"mine/{name}", category="mine", prompt_template=PROMPT, shots=0, max_new_tokens=32, scorer=name,
                 params=GeneratorParams(n_min=3, n_max=3, samples_per_length=8, num_samples=8, seed=7),
                 generate=generate, description="x", valid_answers=every_order)
            for name in ("half_bad", "all_bad")]
'''
HALF = "scorer error: 'half_bad' failed on 8 of 16 rows (task mine/half_bad); first error: raised ValueError: boom on an even sample"
ALL = "scorer error: 'all_bad' failed on 16 of 16 rows (task mine/all_bad); first error: raised KeyError: 'letters'"


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """(folder, database, the run's output): the ideal model on two user tasks and copy, k = 1, 2."""
    folder = tmp_path_factory.mktemp("scorer_errors")
    (folder / "bad_tasks.py").write_text(TASKS)
    db = folder / "bad.db"
    here = os.getcwd()
    os.chdir(folder)
    try:
        result = CliRunner().invoke(app, ["run", "--model", "ideal", "--tasks", "bad_tasks:make_tasks,waiting_line/copy",
                                          "--strategy", "confidence-topk", "--k", "1,2", "--limit", "8", "--db", str(db),
                                          "--no-report", "--no-progress"], env={"COLUMNS": "200"})
    finally:
        os.chdir(here)
    assert result.exit_code == 0, result.output
    return folder, db, result.output


def test_the_run_says_which_scorer_failed_on_how_many_rows(ran):
    _, db, output = ran
    text = flat(output)
    assert HALF in text and ALL in text
    assert "these rows are shown as scorer errors, not as 0" in text
    frame = ResultsStore(db).frame()
    assert len(frame) == 48 and (frame[frame["task"] == "mine/all_bad"]["score"] == 0).all()  # stored as before


def test_results_marks_error_cells_and_means(ran):
    _, db, _ = ran
    out = CliRunner().invoke(app, ["results", "--db", str(db)], env={"COLUMNS": "250"}).output
    text = flat(out)
    assert HALF in text and ALL in text
    # half_bad: 4 scored rows of 8 at 1.0, not 0.50; all_bad: no score at all, not 0.00
    assert "1.00 ± 0.24 · 1.0 (0.4) n=4 !4" in text
    assert "scorer error · 1.0 (0.4)" in text
    assert "0.00 ±" not in text
    assert "!N: N rows of the cell are scorer errors" in text
    # the mean column pools only scored rows and says how many rows it left out
    assert "n=12 !12" in text


def test_leaderboard_leaves_error_rows_out_and_marks_the_strategy(ran):
    _, db, _ = ran
    out = CliRunner().invoke(app, ["leaderboard", "--db", str(db)], env={"COLUMNS": "200"}).output
    text = flat(out)
    assert HALF in text and ALL in text
    assert "confidence-topk!" in text or "S1!" in text
    assert "some rows of this strategy are scorer errors" in text
    assert re.search(r"┃ task\s+┃\s+S1! ┃", out), out  # the AUP-per-task column (and its mean) is marked too
    board = json.loads(CliRunner().invoke(app, ["leaderboard", "--db", str(db), "--json"]).output)
    assert board["confidence-topk"]["90"] == 2.0  # every scored row is right: not dragged down by the zeros


def test_report_says_so_and_ranks_without_them(ran, tmp_path):
    _, db, _ = ran
    result = CliRunner().invoke(app, ["report", "--db", str(db), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert HALF in flat(result.output) and ALL in flat(result.output)  # the command says it too
    page = (tmp_path / "out" / "report.html").read_text()
    assert "scorer error: &#x27;half_bad&#x27; failed on 8 of 16 rows" in page
    assert 'class="scorer-error"' in page


def test_score_prints_the_same_line(ran):
    folder, _, _ = ran
    outputs = folder / "answers.jsonl"
    outputs.write_text("".join(json.dumps({"id": f"mine/half_bad/{i}", "output": "[]"}) + "\n" for i in range(4)))
    here = os.getcwd()
    os.chdir(folder)
    try:
        result = CliRunner().invoke(app, ["score", "--tasks", "bad_tasks:make_tasks", "--outputs", str(outputs)],
                                    env={"COLUMNS": "200"})
    finally:
        os.chdir(here)
    assert result.exit_code == 0, result.output
    text = flat(result.output)
    assert ("scorer error: 'half_bad' failed on 2 of 4 rows (task mine/half_bad); first error: raised ValueError: "
            "boom on an even sample") in text
    assert "scorer errors" in text  # the table's column


def test_rescoring_the_database_with_the_tasks_module(ran):
    """`score --db --tasks module:NAME` finds the user's samples, and a stored scorer error is no
    stored 0: half_bad's scored rows are all right, so its stored mean is 1.000, as rescored."""
    folder, db, _ = ran
    here = os.getcwd()
    os.chdir(folder)
    try:
        result = CliRunner().invoke(app, ["score", "--db", str(db), "--tasks", "bad_tasks:make_tasks"],
                                    env={"COLUMNS": "200"})
    finally:
        os.chdir(here)
    assert result.exit_code == 0, result.output
    text = flat(result.output)
    assert HALF in text and ALL in text
    assert re.search(r"│ mine/half_bad\s+│\s+16 │\s+1\.000 │\s+1\.000 │\s+0 │\s+8 │", result.output), result.output
    assert "(mine/half_bad" not in text  # rescored, not listed among the rows without a sample


def test_messages_parse_and_count():
    assert split_message("scorer 'a b' raised ValueError: x") == ("a b", "raised ValueError: x")
    assert split_message('scorer "it\'s" returned score 2, not a number in [0, 1]') == (
        "it's", "returned score 2, not a number in [0, 1]")
    groups = count_errors([("t1", None), ("t1", "scorer 'x' raised E: 1"), ("t2", "scorer 'x' raised E: 2"), ("t3", None)])
    assert [(g.scorer, g.rows, g.total, g.tasks, g.first) for g in groups] == [("x", 2, 3, ["t1", "t2"], "raised E: 1")]


def test_rescoring_table_with_error_counts_fits_every_width(ran):
    """The `scorer errors` column made the rescoring table 72 columns wide: at 60 a column goes, named."""
    from test_terminal_numbers import WIDTHS, _env, assert_whole

    folder, db, _ = ran
    here = os.getcwd()
    os.chdir(folder)
    try:
        shown = {width: CliRunner().invoke(app, ["score", "--db", str(db), "--tasks", "bad_tasks:make_tasks"],
                                           env=_env(width)).output for width in WIDTHS}
    finally:
        os.chdir(here)
    for width in WIDTHS:
        assert_whole(shown[width], shown["200"], width)
    assert "scorer errors ┃" in shown["200"]
    assert re.search(r"not shown at this width: (changed, )?scorer errors \(", flat(shown["60"])), shown["60"]
