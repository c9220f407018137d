"""`parallelbench score` on small hand-made task and output files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from parallelbench.cli import app
from parallelbench.tasks.base import Sample

runner = CliRunner()
NAMES = ["Ann Lee", "Bo Chan", "Cy Diaz"]


def _samples() -> list[Sample]:
    def s(i, task, scorer, answer, data):
        return Sample(f"{task}/{i}", task, "prompt", [{"role": "user", "content": "prompt"}], answer, scorer, data)

    return [
        s(0, "waiting_line/copy", "list_exact", json.dumps(NAMES), {"input": NAMES, "expected": NAMES}),
        s(1, "waiting_line/copy", "list_exact", json.dumps(NAMES[:2]), {"input": NAMES[:2], "expected": NAMES[:2]}),
        s(0, "waiting_line/shuffle", "list_shuffle", "", {"input": NAMES, "must_differ": True}),
        s(0, "puzzle/sudoku", "sudoku", "", {"puzzle": "0042\n2031\n4023\n3214", "solution": "1342\n2431\n4123\n3214"}),
        s(0, "text_writing/w2s_easy", "w2s", "", {"words": ["dog", "ball"]}),
    ]


def _write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path):
    tasks = _write_jsonl(tmp_path / "tasks.jsonl", [s.to_dict() for s in _samples()])
    outputs = _write_jsonl(
        tmp_path / "out.jsonl",
        [
            {"id": "waiting_line/copy/0", "output": json.dumps(NAMES, ensure_ascii=False).replace('","', '", "')},
            {"id": "waiting_line/copy/1", "output": "The list: [Ann Lee, Bo Chan]"},
            {"id": "waiting_line/shuffle/0", "output": '["Ann Lee", "Bo Chan", "Cy Diaz"]'},
            {"id": "puzzle/sudoku/0", "output": "1342\n2431\n4123\n3214"},
            {"id": "text_writing/w2s_easy/0", "output": "My dog chased the ball."},
        ],
    )
    return tmp_path, tasks, outputs


def test_scores_a_file_and_writes_per_sample_lines(files):
    tmp, tasks, outputs = files
    per_sample = tmp / "deep" / "scores.jsonl"
    result = runner.invoke(app, ["score", "--tasks", str(tasks), "--outputs", str(outputs), "--per-sample", str(per_sample)])
    assert result.exit_code == 0, result.output
    for task in ("waiting_line/copy", "waiting_line/shuffle", "puzzle/sudoku", "text_writing/w2s_easy"):
        assert task in result.output
    rows = [json.loads(x) for x in per_sample.read_text(encoding="utf-8").splitlines()]
    by_id = {r["id"]: r for r in rows}
    assert len(rows) == 5
    assert by_id["waiting_line/copy/0"]["score"] == 1.0 and by_id["waiting_line/copy/0"]["strict"] == 1.0
    assert by_id["waiting_line/copy/1"]["lenient"] == 1.0 and by_id["waiting_line/copy/1"]["strict"] == 0.0
    assert by_id["waiting_line/shuffle/0"]["score"] == 0.0  # same order as the input
    assert by_id["puzzle/sudoku/0"]["score"] == 1.0
    w2s = by_id["text_writing/w2s_easy/0"]
    assert (w2s["score"], w2s["grammar"], w2s["inclusion"], w2s["task"]) == (1.0, 1.0, 1.0, "text_writing/w2s_easy")
    assert w2s["meta"]["grammar_backend"] == "harper"


def test_a_folder_of_task_files_and_partial_outputs(files, tmp_path):
    _, tasks, _ = files
    folder = tmp_path / "exported"
    folder.mkdir()
    lines = tasks.read_text(encoding="utf-8").splitlines()
    (folder / "a.jsonl").write_text("\n".join(lines[:2]) + "\n", encoding="utf-8")
    (folder / "b.jsonl").write_text("\n".join(lines[2:]) + "\n", encoding="utf-8")
    outputs = _write_jsonl(tmp_path / "few.jsonl", [{"id": "puzzle/sudoku/0", "output": "1342\n2431\n4123\n3214"}])
    result = runner.invoke(app, ["score", "--tasks", str(folder), "--outputs", str(outputs)])
    assert result.exit_code == 0, result.output
    assert "puzzle/sudoku" in result.output
    assert "4 sample(s)" in result.output


@pytest.mark.parametrize(
    ("outputs_text", "message"),
    [
        ('{"id": "waiting_line/copy/0", "output": "x"}\n{not json\n', "out.jsonl:2: not valid JSON"),
        ('{"id": "nope/0", "output": "x"}\n', "not in"),
        ('{"id": "waiting_line/copy/0"}\n', 'out.jsonl:1: each line needs "id" and "output"'),
        ('{"id": "waiting_line/copy/0", "output": 3}\n', '"output" must be a string'),
        ('{"id": "waiting_line/copy/0", "output": "a"}\n{"id": "waiting_line/copy/0", "output": "b"}\n', "already has an output at line 1"),
        ("\n\n", "holds no outputs"),
    ],
)
def test_bad_outputs_give_one_clear_error(files, outputs_text, message):
    _, tasks, outputs = files
    outputs.write_text(outputs_text, encoding="utf-8")
    result = runner.invoke(app, ["score", "--tasks", str(tasks), "--outputs", str(outputs)])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_bad_task_files_give_clear_errors(files, tmp_path):
    _, tasks, outputs = files
    result = runner.invoke(app, ["score", "--tasks", str(tmp_path / "missing.jsonl"), "--outputs", str(outputs)])
    assert result.exit_code == 2 and "does not exist" in result.output

    bad = tmp_path / "bad_tasks.jsonl"
    bad.write_text(json.dumps({"id": "x"}) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["score", "--tasks", str(bad), "--outputs", str(outputs)])
    assert result.exit_code == 2 and "bad_tasks.jsonl:1:" in result.output and "lacks" in result.output

    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    result = runner.invoke(app, ["score", "--tasks", str(empty_dir), "--outputs", str(outputs)])
    assert result.exit_code == 2 and "no *.jsonl task files" in result.output

    result = runner.invoke(app, ["score", "--tasks", str(tasks), "--outputs", str(tmp_path / "none.jsonl")])
    assert result.exit_code == 2 and "outputs file" in result.output


def test_unknown_grammar_backend_is_a_clear_error(files, monkeypatch):
    from parallelbench.scoring import grammar

    _, tasks, outputs = files
    monkeypatch.setenv(grammar.BACKEND_ENV, "harper")  # restored after the test; the CLI overrides it
    result = runner.invoke(app, ["score", "--tasks", str(tasks), "--outputs", str(outputs), "--grammar-backend", "nope"])
    assert result.exit_code == 2
    assert "unknown grammar backend 'nope'" in result.output


def test_help_has_an_example():
    result = runner.invoke(app, ["score", "--help"])
    assert result.exit_code == 0
    assert "Example: parallelbench score" in result.output


def test_an_outputs_folder_is_named_as_a_folder(files, tmp_path):
    _, tasks, _ = files
    result = runner.invoke(app, ["score", "--tasks", str(tasks), "--outputs", str(tmp_path)])
    assert result.exit_code == 2 and "is a folder" in result.output


# ---- scoring modes and rescoring a results database ------------------------------------------


def test_scoring_paper_follows_the_papers_metric(tmp_path):
    symbols = ["H", "4", "A", "C"]
    square = Sample("puzzle/latin_square/0", "puzzle/latin_square", "prompt", [{"role": "user", "content": "prompt"}],
                    "", "latin_square", {"symbols": symbols, "size": 4})
    tasks = _write_jsonl(tmp_path / "latin.jsonl", [square.to_dict()])
    # a first row with a fifth, repeated cell: not a Latin square, but the paper's metric only
    # checks that each row's and column's set of cells is the set of symbols
    extra_cell = "H,4,A,C,H\n4,C,H,A\nC,A,4,H\nA,H,C,4"
    outputs = _write_jsonl(tmp_path / "out.jsonl", [{"id": square.id, "output": extra_cell}])
    scores = {}
    for mode in ("default", "paper"):
        out = tmp_path / f"{mode}.jsonl"
        result = runner.invoke(app, ["score", "--tasks", str(tasks), "--outputs", str(outputs), "--scoring", mode,
                                     "--per-sample", str(out)])
        assert result.exit_code == 0, result.output
        assert f"{mode} scoring" in result.output
        scores[mode] = json.loads(out.read_text(encoding="utf-8"))["score"]
    assert scores == {"default": 0.0, "paper": 1.0}


@pytest.mark.parametrize("value", ["strict", "Paper", ""])
def test_unknown_scoring_mode_is_one_line(files, value):
    _, tasks, outputs = files
    result = runner.invoke(app, ["score", "--tasks", str(tasks), "--outputs", str(outputs), "--scoring", value])
    assert result.exit_code == 2
    lines = [x for x in result.output.splitlines() if x.strip()]
    assert len(lines) == 1 and "--scoring must be one of default, paper" in lines[0], result.output


def _stored_db(path: Path) -> Path:
    """A results database as `parallelbench run` writes it, built by hand (no decoding)."""
    from parallelbench.runner.store import ResultsStore
    from parallelbench.runner.units import task_data_version
    from parallelbench.scoring import score
    from parallelbench.tasks import get_task

    rows = []
    for task_id in ("waiting_line/sort", "puzzle/latin_square"):
        task = get_task(task_id)
        for i, sample in enumerate(task.samples(3)):
            text = sample.answer if i < 2 else "no answer"
            if task_id == "puzzle/latin_square" and i == 1:  # a fifth, repeated cell: paper mode accepts it
                first, _, rest = text.partition("\n")
                text = first + "," + first[0] + "\n" + rest
            rows.append({
                "model": "tiny", "model_kind": "diffusion", "strategy": "confidence-topk", "strategy_kind": "topk",
                "params": '{"k":1}', "config": "confidence-topk[k=1]", "task": task_id, "category": task.category,
                "sample_id": sample.id, "seed": 0, "output": text, "score": score(sample, text).score,
                "scores": "{}", "nfe": 4, "num_tokens": 4, "tps": 1.0, "tokens_per_step": "[1,1,1,1]",
                "order": "[0,1,2,3]", "token_texts": "[]", "wall_time": 0.1,
                "versions": json.dumps({"data": task_data_version(task)}), "created_at": "2026-01-01T00:00:00",
            })
    rows.append({**rows[0], "task": "waiting_line/sort", "sample_id": "waiting_line/sort/0", "seed": 1,
                 "versions": json.dumps({"data": "other-settings"})})
    with ResultsStore(path) as store:
        store.write(rows)
    return path


def test_rescoring_a_database_under_both_modes(tmp_path):
    db = _stored_db(tmp_path / "run.db")
    for mode, expected in (("default", {"waiting_line/sort": 2 / 3, "puzzle/latin_square": 1 / 3}),
                           ("paper", {"puzzle/latin_square": 2 / 3})):
        out = tmp_path / f"{mode}.jsonl"
        result = runner.invoke(app, ["score", "--db", str(db), "--scoring", mode, "--per-sample", str(out)])
        assert result.exit_code == 0, result.output
        assert "1 stored row(s) of 1 task(s) (waiting_line/sort) were not rescored" in " ".join(result.output.split())
        rows = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
        assert len(rows) == 6 and all(r["scoring"] == mode for r in rows)
        for task, mean in expected.items():
            got = [r["score"] for r in rows if r["task"] == task]
            assert sum(got) / len(got) == pytest.approx(mean), (mode, task)
        stored = {(r["task"], r["sample_id"]): r["stored"] for r in rows}
        assert stored[("puzzle/latin_square", "puzzle/latin_square/1")] == 0.0  # the database itself is not changed


def test_rescoring_errors_are_one_line(tmp_path, files):
    _, tasks, outputs = files
    missing = runner.invoke(app, ["score", "--db", str(tmp_path / "none.db")])
    assert missing.exit_code == 2 and "no results database" in missing.output
    both = runner.invoke(app, ["score", "--db", str(tmp_path / "none.db"), "--outputs", str(outputs)])
    assert both.exit_code == 2 and "either --db" in both.output
    neither = runner.invoke(app, ["score", "--tasks", str(tasks)])
    assert neither.exit_code == 2 and "--db" in neither.output
