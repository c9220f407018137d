"""`parallelbench tasks` commands and the export / import round trips."""

import json

import pytest
from typer.testing import CliRunner

from parallelbench.cli import app
from parallelbench.tasks import get_task
from parallelbench.tasks.base import Sample
from parallelbench.tasks.export import export_tasks, read_samples, task_filename

from release_files import MISSING, RELEASE  # noqa: E402  (the release's files: where, and how to get them)
runner = CliRunner()


def run(*args):
    return runner.invoke(app, ["tasks", *args])


def test_list_json_gives_every_task_with_counts():
    result = run("list", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert len(rows) == 79 and sum(r["in_paper"] for r in rows) == 17  # 66 + 10 CoT variants + 3 structured
    copy = next(r for r in rows if r["id"] == "waiting_line/copy")
    assert copy["category"] == "waiting_line" and copy["samples"] == 100 and (copy["n_min"], copy["n_max"]) == (3, 6)


def test_list_table_and_filters():
    result = run("list", "--tasks", "puzzle")
    assert result.exit_code == 0 and "puzzle/sudoku" in result.output and "waiting_line" not in result.output
    bad = run("list", "--tasks", "no_such_task")
    assert bad.exit_code == 2 and "unknown task 'no_such_task'" in bad.output and "Traceback" not in bad.output


def test_show_prints_prompt_messages_and_answer():
    result = run("show", "waiting_line/insert_random", "--index", "2")
    assert result.exit_code == 0, result.output
    s = get_task("waiting_line/insert_random").samples(3)[2]
    assert s.data["word"] in result.output and "a correct answer" in result.output
    assert f"valid answers: {s.data['n'] + 1}" in result.output
    out_of_range = run("show", "waiting_line/copy", "--index", "100")
    assert out_of_range.exit_code == 2 and "out of range" in out_of_range.output


def test_help_texts_have_examples():
    for cmd in ("list", "show", "export", "import"):
        result = run(cmd, "--help")
        assert result.exit_code == 0 and "Example: parallelbench tasks" in result.output, cmd


def test_export_writes_one_file_per_task_and_reads_back(tmp_path):
    result = run("export", "--out", str(tmp_path), "--tasks", "paper", "--limit", "3")
    assert result.exit_code == 0, result.output
    files = sorted(tmp_path.glob("*.jsonl"))
    assert len(files) == 17 and (tmp_path / "waiting_line__copy.jsonl").exists()
    line = json.loads((tmp_path / "puzzle__sudoku.jsonl").read_text().splitlines()[0])
    assert {"id", "task", "messages", "answer", "scorer", "data"} <= set(line)
    back = read_samples(tmp_path)
    assert len(back) == 51
    original = get_task("puzzle/sudoku").samples(3)
    assert [s for s in back if s.task == "puzzle/sudoku"] == original


def test_export_with_other_n_range(tmp_path):
    result = run("export", "--out", str(tmp_path), "--tasks", "synthetic/shuffle", "--n-min", "12", "--n-max", "12",
                 "--limit", "4", "--seed", "7")
    assert result.exit_code == 0, result.output
    (path,) = tmp_path.glob("*.jsonl")
    samples = read_samples(path)
    assert len(samples) == 4 and all(s.data["n"] == 12 for s in samples)
    assert samples[0].task.startswith("synthetic/shuffle_n12-12_s7")
    bad = run("export", "--out", str(tmp_path), "--tasks", "puzzle", "--n-min", "5")
    assert bad.exit_code == 2 and "list and structured tasks only" in bad.output


def test_export_api_round_trip(tmp_path):
    rows = export_tasks([get_task("synthetic_infill/replace_random")], tmp_path, limit=5)
    (task_id, path, count), = rows
    assert path.name == task_filename(task_id) == "synthetic_infill__replace_random.jsonl" and count == 5
    assert read_samples(path) == get_task(task_id).samples(5)
    assert Sample.from_dict(json.loads(path.read_text().splitlines()[0])).output_format.startswith('["[MASK]"')


def test_read_samples_errors_name_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_samples(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        read_samples(bad)


@pytest.mark.skipif(not RELEASE.is_dir(), reason=MISSING)
def test_import_command_writes_release_samples(tmp_path):
    out = tmp_path / "official.jsonl"
    result = run("import", str(RELEASE), "--out", str(out), "--tasks", "paper")
    assert result.exit_code == 0, result.output
    samples = read_samples(out)
    assert len(samples) == 16 * 100 + 108 and len({s.task for s in samples}) == 17
    assert all(s.id.startswith("official/") for s in samples)
    again = tmp_path / "again.jsonl"
    # import -> export-format file -> read: a lossless round trip
    from parallelbench.tasks.export import write_samples

    write_samples(samples, again)
    assert read_samples(again) == samples


def test_import_errors_are_one_line(tmp_path):
    result = run("import", str(tmp_path / "nope"), "--out", str(tmp_path / "x.jsonl"))
    assert result.exit_code == 2 and "does not exist" in result.output and "Traceback" not in result.output
