"""End-to-end user paths across parts: tasks -> scoring, run -> results -> report -> leaderboard.

Each test drives the real CLI (`parallelbench ...` through Typer's runner) the way the
README's tour does, on tiny inputs, so a broken contract between two parts shows here
even when each part's own tests pass.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from parallelbench.cli import app
from parallelbench.tasks import registry, resolve_tasks, valid_answers

RUN_TASKS = "waiting_line/copy,waiting_line/shuffle"
CONTRACT5_COLUMNS = [
    "model", "model_kind", "strategy", "strategy_kind", "params", "config", "task", "category",
    "sample_id", "seed", "output", "score", "scores", "nfe", "num_tokens", "tps", "tokens_per_step",
    "order", "token_texts", "wall_time", "versions", "created_at",
    "dec_order_kendall", "dec_order_spearman", "dec_order_kendall_ignore_pad", "dec_order_spearman_ignore_pad",
    "ar_local", "ar_global",
    "unmask_score", "unmask_output", "edits", "inserts", "deletes", "changed_tokens",
    "answer_tokens", "answer_tps",
]


def invoke(*args: str):
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.output, result.output
    return result


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# ---- tasks export -> score ------------------------------------------------------------------
def test_export_then_score_round_trip(tmp_path):
    """Exported reference answers score 1, a scrambled list and an empty answer score 0."""
    tasks_dir = tmp_path / "tasks"
    result = invoke("tasks", "export", "--out", str(tasks_dir), "--tasks",
                    "waiting_line/copy,waiting_line/insert_random,puzzle/latin_square,puzzle/sudoku", "--limit", "3")
    assert result.exit_code == 0, result.output
    files = sorted(p.name for p in tasks_dir.glob("*.jsonl"))
    assert len(files) == 4
    samples = [s for f in sorted(tasks_dir.glob("*.jsonl")) for s in read_jsonl(f)]
    assert len(samples) == 12 and all(s["messages"][-1]["content"] == s["prompt"] for s in samples)

    expected, outputs = {}, []
    for s in samples:
        index = int(s["id"].rsplit("/", 1)[1])
        if index == 0:
            outputs.append({"id": s["id"], "output": s["answer"]})
            expected[s["id"]] = 1.0
        elif index == 1 and s["scorer"].startswith("list"):
            items = json.loads(s["answer"])
            outputs.append({"id": s["id"], "output": json.dumps(items[1:] + items[:1])})  # rotated: wrong
            expected[s["id"]] = 0.0
        elif index == 1:
            outputs.append({"id": s["id"], "output": ""})
            expected[s["id"]] = 0.0
    answers = tmp_path / "outputs.jsonl"
    answers.write_text("".join(json.dumps(o) + "\n" for o in outputs), encoding="utf-8")

    per_sample = tmp_path / "scores.jsonl"
    result = invoke("score", "--tasks", str(tasks_dir), "--outputs", str(answers), "--per-sample", str(per_sample))
    assert result.exit_code == 0, result.output
    got = {row["id"]: row for row in read_jsonl(per_sample)}
    assert {k: v["score"] for k, v in got.items()} == expected
    for row in got.values():  # every component is in [0, 1], as contract 2 says
        assert all(0.0 <= row[c] <= 1.0 for c in ("lenient", "strict"))
    # the 4 samples without an output are counted, not scored
    assert "4 sample(s)" in result.output


def test_score_rejects_outputs_for_another_task_file(tmp_path):
    tasks_dir = tmp_path / "tasks"
    invoke("tasks", "export", "--out", str(tasks_dir), "--tasks", "waiting_line/copy", "--limit", "2")
    answers = tmp_path / "outputs.jsonl"
    answers.write_text(json.dumps({"id": "puzzle/sudoku/0", "output": "1234"}) + "\n", encoding="utf-8")
    result = invoke("score", "--tasks", str(tasks_dir), "--outputs", str(answers))
    assert result.exit_code == 2 and "puzzle/sudoku/0" in result.output


# ---- task answers vs scorers ------------------------------------------------------------------
EXACT_TASKS = sorted(t.id for t in registry().values() if t.category != "text_writing")


@pytest.mark.parametrize("task_id", EXACT_TASKS)
def test_every_listed_valid_answer_scores_one(task_id):
    """tasks.valid_answers (what the ideal model decodes) and the scorer agree on what is right."""
    from parallelbench.scoring import score

    task = registry()[task_id]
    for sample in task.samples(2):
        assert score(sample, sample.answer).score == 1.0, (sample.id, sample.answer)
        answers = valid_answers(sample)
        if answers is None:  # too many to list (n = 15 shuffle): the reference must still be right
            continue
        assert sample.answer in answers
        for answer in random.Random(sample.id).sample(answers, min(5, len(answers))):
            scores = score(sample, answer)
            assert scores.score == 1.0 and scores.components["strict"] == 1.0, (sample.id, answer)


@pytest.mark.parametrize("task_id", ["text_writing/summarization", "text_writing/w2s_easy", "text_writing/w2s_hard"])
def test_text_writing_references_score_one(task_id):
    from parallelbench.scoring import score

    sample = resolve_tasks(task_id)[0].samples(1)[0]
    assert score(sample, sample.answer).score == pytest.approx(1.0)


# ---- run -> results -> report -> leaderboard ---------------------------------------------------
@pytest.fixture(scope="module")
def ideal_run(tmp_path_factory):
    """One small grid with the ideal model: 2 tasks x 2 strategy configs x 2 samples."""
    root = tmp_path_factory.mktemp("run")
    db, out = root / "results.db", root / "out"
    result = invoke("run", "-m", "ideal", "-t", RUN_TASKS, "-s", "confidence-topk,confidence-threshold",
                    "--k", "2", "--threshold", "0.9", "-n", "2", "--db", str(db), "--out", str(out), "--no-progress")
    assert result.exit_code == 0, result.output
    return db, out, result.output


def test_run_writes_contract5_rows_and_the_report(ideal_run):
    from parallelbench.runner.store import ResultsStore

    db, out, _ = ideal_run
    frame = ResultsStore(db, create=False).frame()
    assert list(frame.columns) == CONTRACT5_COLUMNS
    assert len(frame) == 2 * 2 * 2
    assert set(frame["config"]) == {"confidence-topk[k=2]", "confidence-threshold[threshold=0.9]"}
    assert set(frame["strategy_kind"]) == {"topk", "adaptive"}
    assert (frame["tps"] - frame["num_tokens"] / frame["nfe"]).abs().max() < 1e-9
    for _, row in frame.iterrows():
        steps = json.loads(row["tokens_per_step"])
        assert sum(steps) == row["num_tokens"] and len(steps) == row["nfe"]
        assert set(json.loads(row["scores"])) == {"lenient", "strict"}
    # the exact model decoding copy never errs; threshold 0.9 on shuffle commits one name at a time
    copy = frame[frame["task"] == "waiting_line/copy"]
    assert (copy["score"] == 1.0).all()
    threshold = frame[frame["config"] == "confidence-threshold[threshold=0.9]"]
    assert (threshold["score"] == 1.0).all()

    html = (out / "report.html").read_text(encoding="utf-8")
    assert "ideal" in html and "waiting_line/shuffle" in html
    for name in ("tradeoff_ideal.png", "tradeoff_ideal.svg", "tasks_ideal.png"):
        assert (out / "figures" / name).stat().st_size > 1000
    assert {p.name for p in (out / "curves" / "ideal").glob("*.csv")} == {
        "confidence-topk.csv", "confidence-threshold.csv"}


def test_rerun_resumes_without_new_rows(ideal_run):
    db, out, _ = ideal_run
    result = invoke("run", "-m", "ideal", "-t", RUN_TASKS, "-s", "confidence-topk", "--k", "2", "-n", "2",
                    "--db", str(db), "--no-report", "--no-progress")
    assert result.exit_code == 0, result.output
    assert "0 rows added" in result.output


def test_results_table_names_every_config(ideal_run):
    db, _, _ = ideal_run
    result = CliRunner().invoke(app, ["results", "--db", str(db)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for text in ("confidence-topk[k=2]", "confidence-threshold[threshold=0.9]", "copy", "shuffle", "8 rows"):
        assert text in result.output


def test_results_export_jsonl_has_every_row(ideal_run, tmp_path):
    db, _, _ = ideal_run
    target = tmp_path / "rows.jsonl"
    result = invoke("results", "export", "--db", str(db), "--format", "jsonl", "--out", str(target))
    assert result.exit_code == 0, result.output
    rows = read_jsonl(target)
    assert len(rows) == 8 and set(CONTRACT5_COLUMNS) <= set(rows[0])


def test_leaderboard_from_report_curves_matches_the_database(ideal_run):
    """The curves folder the report writes is a valid --curves input and ranks the same."""
    db, out, _ = ideal_run
    from_curves = invoke("leaderboard", "--curves", str(out / "curves" / "ideal"), "--json")
    from_db = invoke("leaderboard", "--db", str(db), "--json")
    assert from_curves.exit_code == 0 and from_db.exit_code == 0, from_curves.output + from_db.output
    ranked_curves, ranked_db = json.loads(from_curves.output), json.loads(from_db.output)
    assert set(ranked_curves) == {"confidence-topk", "confidence-threshold"}
    assert ranked_curves.keys() == ranked_db.keys()
    for strategy, levels in ranked_db.items():
        assert levels.keys() == {"90", "80", "70", "60"}
        for level, value in levels.items():
            assert ranked_curves[strategy][level] == pytest.approx(value)
    # threshold 0.9 is perfect here and commits more than one token per step
    assert ranked_db["confidence-threshold"]["80"] > 1.0


# ---- the ideal model on every task it can decode ------------------------------------------------
@pytest.mark.parametrize("task_id", sorted(t.id for t in resolve_tasks("paper") if t.category != "text_writing"))
def test_ideal_model_one_token_per_step_is_always_right(task_id):
    """At k = 1 the exact model commits one token given all others: every answer must be correct."""
    from parallelbench.decoding import build_strategy
    from parallelbench.models.registry import load_model
    from parallelbench.scoring import score

    model = load_model("ideal")
    samples = registry()[task_id].samples(2)
    generations = model.generate(samples, build_strategy("confidence-topk", k=1), max_new_tokens=64, seed=0)
    assert [score(s, g.text).score for s, g in zip(samples, generations)] == [1.0, 1.0]
    assert all(g.nfe == g.num_tokens for g in generations)


def test_ideal_model_says_which_tasks_it_cannot_decode():
    from parallelbench.models.registry import load_model

    model = load_model("ideal")
    families = resolve_tasks("waiting_line,waiting_line_n15,waiting_line_n21_24")
    unsupported = [t.id for t in families if not model.supports(t.samples(1)[0])]
    assert unsupported == ["waiting_line_n15/shuffle", "waiting_line_n21_24/shuffle"]


def test_run_ideal_on_an_undecodable_task_is_a_clear_message(tmp_path):
    result = CliRunner().invoke(app, ["run", "-m", "ideal", "-t", "waiting_line_n15/shuffle", "-s", "confidence-topk",
                                      "--k", "1", "-n", "1", "--db", str(tmp_path / "r.db"), "--no-report",
                                      "--no-progress"])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "waiting_line_n15/shuffle" in result.output


def test_rescoring_stored_outputs_reproduces_the_stored_scores(ideal_run, tmp_path):
    """`results export` -> `score` on `tasks export` gives back every row's score: one scoring path."""
    db, _, _ = ideal_run
    rows = tmp_path / "rows.jsonl"
    assert invoke("results", "export", "--db", str(db), "--format", "jsonl", "--out", str(rows)).exit_code == 0
    tasks_dir = tmp_path / "tasks"
    assert invoke("tasks", "export", "--out", str(tasks_dir), "--tasks", RUN_TASKS, "--limit", "2").exit_code == 0
    for config in ("confidence-topk[k=2]", "confidence-threshold[threshold=0.9]"):
        stored = {r["sample_id"]: r for r in read_jsonl(rows) if r["config"] == config}
        outputs = tmp_path / "outputs.jsonl"
        outputs.write_text("".join(json.dumps({"id": k, "output": r["output"]}) + "\n" for k, r in stored.items()),
                           encoding="utf-8")
        per_sample = tmp_path / "scores.jsonl"
        result = invoke("score", "--tasks", str(tasks_dir), "--outputs", str(outputs), "--per-sample", str(per_sample))
        assert result.exit_code == 0, result.output
        rescored = {r["id"]: r for r in read_jsonl(per_sample)}
        assert rescored.keys() == stored.keys()
        for sample_id, row in stored.items():
            assert rescored[sample_id]["score"] == pytest.approx(row["score"])
            components = row["scores"] if isinstance(row["scores"], dict) else json.loads(row["scores"])
            for name, value in components.items():
                assert rescored[sample_id][name] == pytest.approx(value)
