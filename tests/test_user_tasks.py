"""Tasks and scorers from user modules (issue 28 items 1 and 2): `--tasks module:NAME`.

The task module is the worked example of docs/runner.md ("Your own tasks and scorers"),
taken from the page itself, so the page cannot rot.
"""

from __future__ import annotations

import itertools
import json
import os
import pickle
import sqlite3
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from doc_blocks import block
from parallelbench.cli import app

SRC = str(Path(__file__).resolve().parents[1] / "src")
DOC_TASKS = block("runner.md", "# my_tasks.py")
runner = CliRunner()


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """An empty current directory; modules written here are dropped from sys.modules afterwards."""
    monkeypatch.chdir(tmp_path)
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("pbu_"):
            del sys.modules[name]


def write_module(folder: Path, text: str) -> str:
    name = f"pbu_{uuid.uuid4().hex[:10]}"
    (folder / f"{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")
    return name


def cli(*args: str):
    return runner.invoke(app, list(args))


def rows(db: Path) -> list[dict]:
    with sqlite3.connect(db) as con:
        con.row_factory = sqlite3.Row
        return [dict(r) for r in con.execute("SELECT * FROM results ORDER BY config, sample_id")]


# ---------------------------------------------------------------------------------------------
# the documented example: run under ideal, results / report / leaderboard, show, export, score


def test_doc_task_runs_under_ideal_and_lands_in_results_report_and_leaderboard(workdir):
    mod = write_module(workdir, DOC_TASKS)
    spec = f"{mod}:make_tasks"
    result = cli("run", "--model", "ideal", "--tasks", spec, "--strategy", "confidence-topk", "--k", "1,8",
                 "--limit", "8", "--db", "r.db", "--out", "out", "--no-progress")
    assert result.exit_code == 0, result.output
    got = rows(workdir / "r.db")
    assert {r["task"] for r in got} == {"mine/any_order"} and {r["category"] for r in got} == {"mine"}
    assert len(got) == 16
    by_config = {c: [r["score"] for r in got if r["config"] == c] for c in {r["config"] for r in got}}
    # one token per step is always right; eight at once mixes correct orders (section 4)
    assert by_config["confidence-topk[k=1]"] == [1.0] * 8
    assert sum(by_config["confidence-topk[k=8]"]) < 8
    for r in got:  # what the ideal model wrote is judged by the user's own scorer
        letters = json.loads(r["output"]) if r["score"] == 1.0 else None
        assert letters is None or len(set(letters)) == len(letters)
    report = (workdir / "out" / "report.html").read_text(encoding="utf-8")
    assert "any_order" in report
    board = cli("leaderboard", "--db", "r.db")
    assert board.exit_code == 0, board.output
    assert "mine/any_order" in board.output
    summary = cli("results", "--db", "r.db", "--tasks", spec)
    assert summary.exit_code == 0 and "any_order" in summary.output, summary.output


def test_doc_task_is_listed_shown_exported_and_scored(workdir):
    mod = write_module(workdir, DOC_TASKS)
    spec = f"{mod}:make_tasks"
    listed = cli("tasks", "list", "--tasks", spec, "--json")
    assert listed.exit_code == 0, listed.output
    assert [r["id"] for r in json.loads(listed.output)] == ["mine/any_order"]
    for args in (["tasks", "show", spec, "--index", "2"], ["tasks", "show", "--tasks", spec, "--index", "2"]):
        shown = cli(*args)
        assert shown.exit_code == 0, shown.output
        assert "mine/any_order/2" in shown.output and "List the letters" in shown.output
        assert "valid answers: " in shown.output
    out = workdir / "exported"
    exported = cli("tasks", "export", "--out", str(out), "--tasks", spec, "--limit", "4")
    assert exported.exit_code == 0, exported.output
    lines = [json.loads(x) for x in (out / "mine__any_order.jsonl").read_text().splitlines()]
    assert len(lines) == 4 and all(x["scorer"] == "any_order" for x in lines)
    outputs = workdir / "answers.jsonl"
    answers = [lines[0]["answer"], json.dumps(list(reversed(lines[1]["data"]["letters"]))), "[\"A\", \"A\"]", "nonsense"]
    outputs.write_text("".join(json.dumps({"id": x["id"], "output": a}) + "\n" for x, a in zip(lines, answers)))
    # an exported file names a scorer of the user's module: --scorers imports it (a fresh process has none)
    env = {**os.environ, "PYTHONPATH": SRC, "COLUMNS": "200"}
    launcher = [sys.executable, "-c", "import sys; from parallelbench.cli import main; sys.exit(main())"]
    bare = subprocess.run([*launcher, "score", "--tasks", str(out), "--outputs", str(outputs)], cwd=workdir,
                          env=env, capture_output=True, text=True, timeout=300)
    assert bare.returncode == 2 and "--scorers" in bare.stderr and "Traceback" not in bare.stderr
    scored = subprocess.run([*launcher, "score", "--tasks", str(out), "--scorers", mod, "--outputs", str(outputs),
                             "--per-sample", "per.jsonl"], cwd=workdir, env=env, capture_output=True, text=True,
                            timeout=300)
    assert scored.returncode == 0, scored.stderr
    per = [json.loads(x) for x in (workdir / "per.jsonl").read_text().splitlines()]
    assert [p["score"] for p in per] == [1.0, 1.0, 0.0, 0.0] and [p["parsed"] for p in per] == [1.0, 1.0, 1.0, 0.0]
    # the module itself as --tasks: every sample is generated, the outputs matched by id
    direct = cli("score", "--tasks", spec, "--outputs", str(outputs))
    assert direct.exit_code == 0, direct.output
    assert "mine/any_order" in direct.output and "0.500" in direct.output


def test_lm_eval_export_of_a_user_task_scores_with_the_user_scorer_in_a_fresh_process(workdir):
    mod = write_module(workdir, DOC_TASKS)
    out = workdir / "lm"
    exported = cli("tasks", "export", "--format", "lm-eval", "--out", str(out), "--tasks", f"{mod}:make_tasks",
                   "--limit", "3")
    assert exported.exit_code == 0, exported.output
    (yaml,) = out.rglob("parallelbench_mine_any_order.yaml")
    (data,) = out.rglob("parallelbench_mine_any_order.jsonl")
    doc = json.loads(data.read_text().splitlines()[0])
    here = yaml.parent  # utils.py sits beside the task's YAML
    # lm-eval calls utils.process_results(doc, [response]); elsewhere, without the module imported
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(here)!r})\n"
        "import utils\n"
        f"doc = json.loads({json.dumps(json.dumps(doc))})\n"
        "print(json.dumps([utils.process_results(doc, [doc['answer']]), utils.process_results(doc, ['x'])]))\n"
    )
    elsewhere = workdir / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env={**os.environ, "PYTHONPATH": SRC},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    right, wrong = json.loads(proc.stdout.strip().splitlines()[-1])
    metric = "acc" if "acc" in right else "score"  # the headline metric of the export's layout (0..1 or 0..100)
    assert right[metric] in (1.0, 100.0) and wrong[metric] == 0.0


def test_lm_eval_arguments_export_user_tasks_and_add_the_include_path(workdir):
    from parallelbench.integrations.lm_eval_user import with_user_tasks
    from parallelbench.tasks import TaskSourceError

    mod = write_module(workdir, DOC_TASKS)
    folder = workdir / "lm"
    args = with_user_tasks(["--model", "parallelbench", "--tasks", f"parallelbench_waiting_line_copy,{mod}:make_tasks",
                            "--limit", "2"], folder)
    assert args == ["--model", "parallelbench", "--tasks", "parallelbench_waiting_line_copy,parallelbench_mine_any_order",
                    "--limit", "2", "--include_path", str(folder)]
    assert list(folder.rglob("parallelbench_mine_any_order.yaml"))
    assert with_user_tasks(["--tasks=parallelbench_waiting_line_copy"], folder) == ["--tasks=parallelbench_waiting_line_copy"]
    with pytest.raises(TaskSourceError, match="--include_path"):
        with_user_tasks(["--tasks", f"{mod}:make_tasks", "--include_path", "x"], folder)
    with pytest.raises(TaskSourceError, match="no module named"):
        with_user_tasks(["--tasks", "pbu_missing_module_xyz:f"], folder)


# ---------------------------------------------------------------------------------------------
# a scorer of the user's own that raises: 0 for that row, the error on the row, the run goes on

FLAKY = '''
import dataclasses
import json

from parallelbench.scoring import Scores, register_scorer
from parallelbench.tasks import GeneratorParams, Sample, Task


@register_scorer("pbu_flaky")
def flaky(sample, output):
    if "A" in output:
        raise ValueError("cannot read an A")
    if "B" in output:
        return 7  # not a Scores
    return Scores(1.0, {"clean": 1.0})


def generate(task, limit):
    n = task.params.num_samples if limit is None else min(limit, task.params.num_samples)
    words = ["A", "B", "C", "D", "E", "F"]
    return [Sample(id=f"{task.id}/{i}", task=task.id, prompt=f"Say {w}.", messages=[{"role": "user", "content": f"Say {w}."}],
                   answer=w, scorer="pbu_flaky", data={"word": w}) for i, w in enumerate(words[:n])]


TASK = Task(id="mine/flaky", category="mine", prompt_template="Say {w}.", shots=0, max_new_tokens=8, scorer="pbu_flaky",
            params=GeneratorParams(1, 1, 6, 6, 0), generate=generate, valid_answers=lambda s: [s.answer])
'''


def test_raising_user_scorer_scores_zero_with_the_error_on_the_row_and_the_run_goes_on(workdir):
    mod = write_module(workdir, FLAKY)
    result = cli("run", "--model", "ideal", "--tasks", f"{mod}:TASK", "--strategy", "confidence-topk", "--k", "1",
                 "--db", "r.db", "--no-report", "--no-progress")
    assert result.exit_code == 0, result.output
    got = {r["output"]: r for r in rows(workdir / "r.db")}
    assert sorted(got) == ["A", "B", "C", "D", "E", "F"]
    errors = {o: json.loads(r["versions"])["scorer"].get("error") for o, r in got.items()}
    assert got["A"]["score"] == 0.0 and errors["A"] == "scorer 'pbu_flaky' raised ValueError: cannot read an A"
    assert got["B"]["score"] == 0.0 and "returned int (7), not parallelbench.scoring.Scores" in errors["B"]
    assert all(got[o]["score"] == 1.0 and errors[o] is None for o in "CDEF")
    assert json.loads(got["C"]["scores"]) == {"clean": 1.0}

    import pandas as pd

    # the export names the error in a column of its own, empty where the scorer did not fail
    assert cli("results", "export", "--db", "r.db", "--format", "csv", "--out", "rows.csv").exit_code == 0
    table = pd.read_csv(workdir / "rows.csv", keep_default_na=False)
    assert list(table.columns).index("scorer_error") == list(table.columns).index("score") + 1
    by_output = dict(zip(table["output"], table["scorer_error"]))
    assert by_output["A"] == "scorer 'pbu_flaky' raised ValueError: cannot read an A"
    assert all(by_output[o] == "" for o in "CDEF")
    assert cli("results", "export", "--db", "r.db", "--format", "jsonl", "--out", "rows.jsonl").exit_code == 0
    lines = {r["output"]: r for r in map(json.loads, (workdir / "rows.jsonl").read_text().splitlines())}
    assert lines["A"]["scorer_error"] == by_output["A"] and lines["C"]["scorer_error"] is None


def test_the_guard_holds_user_scorers_to_the_contract_and_keeps_builtin_names():
    import math

    from parallelbench.scoring import Scores, get_scorer, register_scorer, score
    from parallelbench.tasks import get_task

    sample = get_task("waiting_line/copy").samples(1)[0]

    def user_scorer(value):
        def fn(s, output):
            if isinstance(value, Exception):
                raise value
            return value
        fn.__module__ = "pbu_guard_test"
        return fn

    cases = {
        "pbu_nan": (Scores(math.nan), "returned score nan"),
        "pbu_big": (Scores(1.5), "returned score 1.5"),
        "pbu_comp": (Scores(1.0, {"x": -0.1}), "returned component x=-0.1"),
        "pbu_raise": (KeyError("k"), "raised KeyError: 'k'"),
        "pbu_none": (None, "returned NoneType (None)"),
    }
    for name, (value, why) in cases.items():
        fn = user_scorer(value)
        assert register_scorer(name)(fn) is fn  # the user's function itself is unchanged
        got = get_scorer(name)(sample, "anything")
        assert got.score == 0.0 and why in got.meta["error"], (name, got)
    ok = user_scorer(Scores(0.5, {"half": 0.5}, {"backend": 3}))
    register_scorer("pbu_ok")(ok)
    assert get_scorer("pbu_ok")(sample, "x") == Scores(0.5, {"half": 0.5}, {"backend": "3"})
    with pytest.raises(ValueError, match="built-in scorer"):
        register_scorer("list_exact")(user_scorer(Scores(1.0)))
    assert score(sample, sample.answer).score == 1.0  # the built-in scorer is still the one used


# ---------------------------------------------------------------------------------------------
# bad input: one line each, before any work, nothing written

BAD = '''
import json
from parallelbench.tasks import GeneratorParams, Sample, Task

NUMBER = 42
PARAMS = GeneratorParams(1, 1, 2, 2, 0)


def _task(task_id, generate, scorer="list_exact", **kw):
    return Task(id=task_id, category="mine", prompt_template="", shots=0, max_new_tokens=8, scorer=scorer,
                params=PARAMS, generate=generate, **kw)


def _one(of, i=0, **change):
    d = dict(id=f"{of.id}/{i}", task=of.id, prompt="p", messages=[{"role": "user", "content": "p"}],
             answer='["a"]', scorer="list_exact", data={"expected": ["a"]})
    d.update(change)
    return d


def strings():
    return ["not a task"]


def nothing():
    return None


class NotATask:
    pass


def clash():
    return [_task("waiting_line/copy", lambda t, n: [Sample(**_one(t))])]


def _boom(task, limit):
    raise RuntimeError("data file missing")


def raising():
    return _task("mine/raising", _boom)


def no_answer():
    def gen(task, limit):
        d = _one(task)
        del d["answer"]
        return [d]
    return _task("mine/no_answer", gen)


def bad_messages():
    return _task("mine/bad_messages", lambda t, n: [Sample(**_one(t, messages="hello"))])


def wrong_task_field():
    return _task("mine/wrong_task", lambda t, n: [Sample(**_one(t, task="other/id"))])


def unknown_scorer():
    return _task("mine/unknown_scorer", lambda t, n: [Sample(**_one(t))], scorer="no_such_scorer_xyz")


def late_failure():
    def gen(task, limit):
        if limit is None or limit > 1:
            raise ValueError("only one sample")
        return [Sample(**_one(task))]
    return _task("mine/late", gen)


def bad_answers():
    return _task("mine/bad_answers", lambda t, n: [Sample(**_one(t))], valid_answers=lambda s: "abc")


def duplicate_ids():
    return _task("mine/dup", lambda t, n: [Sample(**_one(t)), Sample(**_one(t))])


def set_in_data():
    return _task("mine/set_data", lambda t, n: [Sample(**_one(t, data={"expected": {"a"}}))])
'''

BAD_CASES = [
    ("pbu_no_such_module_xyz:make", "no module named 'pbu_no_such_module_xyz'"),
    ("{mod}:missing", "has no 'missing'; it defines: "),
    ("{mod}:NUMBER", ":NUMBER is an int (42), not a parallelbench.tasks.Task"),
    ("{mod}:NotATask", ":NotATask is the class NotATask, not a parallelbench.tasks.Task"),
    ("{mod}:strings", ":strings() returned a list holding a str ('not a task'), not a parallelbench.tasks.Task"),
    ("{mod}:nothing", ":nothing() returned a NoneType (None), not a parallelbench.tasks.Task"),
    ("{mod}:clash", "task id 'waiting_line/copy' from {mod}:clash is the id of a built-in task"),
    ("{mod}:raising", "task 'mine/raising': its generator raised RuntimeError: data file missing"),
    ("{mod}:no_answer", "task 'mine/no_answer': sample 0 has no 'answer' field"),
    ("{mod}:bad_messages", "task 'mine/bad_messages': sample 'mine/bad_messages/0': field 'messages' must be"),
    ("{mod}:wrong_task_field", "field 'task' must be the task's id 'mine/wrong_task', got a str ('other/id')"),
    ("{mod}:unknown_scorer", "task 'mine/unknown_scorer': scorer 'no_such_scorer_xyz' is not registered"),
    ("{mod}:late_failure", "task 'mine/late': its generator raised ValueError: only one sample"),
    ("{mod}:bad_answers", "task 'mine/bad_answers': valid_answers must return a list of answer texts or None"),
    ("{mod}:duplicate_ids", "task 'mine/dup': sample id 'mine/dup/0' appears twice"),
    ("{mod}:set_in_data", "task 'mine/set_data': sample 'mine/set_data/0': field 'data' must hold JSON values"),
    ("not a spec:x", "is not of the form module:NAME"),
]


@pytest.mark.parametrize("spec, expected", BAD_CASES, ids=[c[0].split(":")[-1] for c in BAD_CASES])
def test_bad_task_sources_fail_in_one_line_before_any_work(workdir, spec, expected):
    mod = write_module(workdir, BAD)
    spec, expected = spec.format(mod=mod), expected.format(mod=mod)
    result = cli("run", "--model", "ideal", "--tasks", spec, "--strategy", "confidence-topk", "--k", "1",
                 "--db", "r.db", "--no-progress")
    assert result.exit_code == 2, result.output
    assert expected in result.output, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert not (workdir / "r.db").exists()


@pytest.mark.parametrize("command", [["tasks", "show"], ["tasks", "list", "--tasks"],
                                     ["tasks", "export", "--out", "x", "--tasks"], ["score", "--outputs", "o.jsonl", "--tasks"]])
def test_other_commands_give_the_same_one_line(workdir, command):
    mod = write_module(workdir, BAD)
    (workdir / "o.jsonl").write_text('{"id": "a", "output": "b"}\n')
    result = cli(*command, f"{mod}:raising")
    assert result.exit_code == 2, result.output
    assert "task 'mine/raising': its generator raised RuntimeError: data file missing" in result.output
    assert "Traceback" not in result.output


def test_same_id_from_two_modules_in_one_command_fails(workdir):
    a, b = write_module(workdir, DOC_TASKS), write_module(workdir, DOC_TASKS)
    result = cli("tasks", "list", "--tasks", f"{a}:make_tasks,{b}:make_tasks")
    assert result.exit_code == 2 and "is defined by both" in result.output, result.output


# ---------------------------------------------------------------------------------------------
# import rule, Ray workers, reruns after an edit


def test_only_the_named_module_is_imported(tmp_path):
    """As for `module:Class` strategies: planted neighbours of the task module never run."""
    from test_user_code import launch, plant

    work, bin_dir = tmp_path / "work", tmp_path / "bin"
    work.mkdir()
    bin_dir.mkdir()
    plant(work)
    (work / "my_tasks.py").write_text(DOC_TASKS)
    proc = launch(["run", "--model", "ideal", "--tasks", "my_tasks:make_tasks", "--strategy", "confidence-topk",
                   "--k", "1", "--limit", "2", "--no-progress", "--no-report", "--db", "r.db"], work, bin_dir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "2 rows added" in proc.stdout
    assert sorted(p.name for p in work.glob("IMPORTED_*")) == []
    # from another directory the module is not found: the current directory is not searched implicitly
    proc = launch(["tasks", "list", "--tasks", "my_tasks:make_tasks"], bin_dir, bin_dir)
    assert proc.returncode == 2 and "no module named 'my_tasks'" in proc.stderr


def test_a_worker_process_loads_the_task_module_from_the_unit(workdir):
    """A Ray actor gets only the pickled unit: the unit names its task source, so the user's
    scorer and valid answers are there when the worker decodes and scores."""
    from parallelbench.runner.spec import RunSpec
    from parallelbench.runner.units import make_units

    mod = write_module(workdir, DOC_TASKS)
    spec = RunSpec().apply_flags(model="ideal", tasks=f"{mod}:make_tasks", strategy="confidence-topk",
                                 params={"k": "1"}, limit=3)
    units, _ = make_units(spec.plan(), "ideal", "ideal", set())
    assert units and units[0].task_source == f"{mod}:make_tasks"
    (workdir / "unit.pkl").write_bytes(pickle.dumps(units[0]))
    code = (
        "import pickle, sys\n"
        "from parallelbench.userimport import set_user_dir\n"
        "from parallelbench.models import load_model\n"
        "from parallelbench.runner.units import UnitRunner\n"
        f"set_user_dir({str(workdir)!r})\n"
        f"unit = pickle.loads(open({str(workdir / 'unit.pkl')!r}, 'rb').read())\n"
        "print([r['score'] for r in UnitRunner(load_model('ideal'), 'ideal').run(unit)])\n"
    )
    elsewhere = workdir / "worker"
    elsewhere.mkdir()
    proc = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env={**os.environ, "PYTHONPATH": SRC},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "[1.0, 1.0, 1.0]"


def test_editing_the_task_module_changes_its_data_version(workdir):
    from parallelbench.runner.units import task_data_version
    from parallelbench.tasks import get_task, user_tasks

    mod = write_module(workdir, DOC_TASKS)
    (task,) = user_tasks(f"{mod}:make_tasks")
    before = task_data_version(task)
    assert before == task_data_version(task)
    path = workdir / f"{mod}.py"
    path.write_text(path.read_text().replace("each exactly once", "each once"))
    assert task_data_version(task) != before
    assert task_data_version(get_task("waiting_line/copy")) == task_data_version(get_task("waiting_line/copy"))


def test_valid_answers_of_a_user_task_feed_the_ideal_model(workdir):
    from parallelbench.models.ideal.bench import IdealBenchModel
    from parallelbench.tasks import user_tasks, valid_answers

    mod = write_module(workdir, DOC_TASKS)
    (task,) = user_tasks(f"{mod}:make_tasks")
    sample = task.samples(1)[0]
    letters = sample.data["letters"]
    assert sorted(valid_answers(sample)) == sorted(json.dumps(list(p)) for p in itertools.permutations(letters))
    assert IdealBenchModel().supports(sample)
    no_answers = write_module(workdir, DOC_TASKS.replace("valid_answers=every_order,", ""))
    (bare,) = user_tasks(f"{no_answers}:make_tasks")
    model = IdealBenchModel()
    assert not model.supports(bare.samples(1)[0])
    assert "give the task valid_answers" in model.unsupported_reason(bare.samples(1)[0])


def test_a_task_built_positionally_in_the_contracts_order_keeps_its_valid_answers(workdir):
    """`Task(id, category, prompt_template, shots, max_new_tokens, scorer, params, generate, valid_answers, ...)`."""
    from parallelbench.models.ideal.bench import IdealBenchModel
    from parallelbench.tasks import user_tasks, valid_answers

    mod = write_module(workdir, DOC_TASKS + '''

POSITIONAL = Task("mine/positional", "mine", PROMPT, 0, 32, "any_order",
                  GeneratorParams(3, 3, 4, 4, 1), generate, every_order)
''')
    (task,) = user_tasks(f"{mod}:POSITIONAL")
    sample = task.samples(1)[0]
    assert len(valid_answers(sample)) == 6 and IdealBenchModel().supports(sample)
    assert task.in_paper is False and task.description == ""


def test_lm_eval_export_prints_what_docs_lm_eval_shows(workdir):
    """docs/lm-eval.md shows the export of `my_tasks` and the two commands it prints (issue 35 item 2)."""
    shown = block("lm-eval.md", "$ parallelbench tasks export --format lm-eval --out my_lmeval --tasks my_tasks:make_tasks",
                  lang="text").splitlines()
    (workdir / "my_tasks.py").write_text(DOC_TASKS, encoding="utf-8")
    sys.modules.pop("my_tasks", None)
    try:
        result = cli(*shown[0].split()[2:])
    finally:
        sys.modules.pop("my_tasks", None)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == shown[1:]
    assert (workdir / "my_lmeval" / "_my_tasks_all.yaml").is_file()
