"""Chain-of-thought variants (`waiting_line/<op>-cot`): naming, prompts, worked examples,
answer extraction, scoring through the base scorer, export round trips and bad input."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from parallelbench.cli import app
from parallelbench.scoring import score
from parallelbench.scoring.cot import ANSWER_MARKER, extract_final_answer
from parallelbench.scoring.parse import parse_list_lenient
from parallelbench.tasks import get_task, registry, resolve_tasks
from parallelbench.tasks._common import with_params
from parallelbench.tasks.cot import TRIGGER
from parallelbench.tasks.waiting_line import OPS

PAPER_COT = ["waiting_line/shuffle-cot", "waiting_line/replace_index-cot", "waiting_line/replace_random-cot"]
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, list(args))


def test_every_waiting_line_task_has_a_cot_variant_outside_the_paper_set():
    reg = registry()
    cot = sorted(t for t in reg if t.endswith("-cot"))
    assert cot == sorted(f"waiting_line/{op}-cot" for op in OPS)
    for tid in cot:
        task, base = reg[tid], reg[tid[: -len("-cot")]]
        assert task.max_new_tokens == 256 and base.max_new_tokens == 32
        assert task.shots == 1 and not task.in_paper and task.category == base.category
        assert task.params == base.params
    assert {t.id for t in resolve_tasks("cot")} == set(cot)
    assert not any(t.id.endswith("-cot") for t in resolve_tasks("waiting_line"))  # the family stays the paper's 10
    assert len(resolve_tasks("paper")) == 17


def test_list_shows_the_cot_variants():
    result = invoke("tasks", "list", "--tasks", ",".join(PAPER_COT), "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["id"] for r in rows] == PAPER_COT
    assert all(r["max_new_tokens"] == 256 and r["scorer"] == "cot_answer" for r in rows)


@pytest.mark.parametrize("op", OPS)
def test_prompt_has_the_trigger_and_a_worked_example_of_other_people(op):
    task, base = get_task(f"waiting_line/{op}-cot"), get_task(f"waiting_line/{op}")
    for s, b in zip(task.samples(6), base.samples(6)):
        assert s.id == f"waiting_line/{op}-cot/{s.id.rsplit('/', 1)[1]}" and s.task == task.id
        assert s.data["input"] == b.data["input"]  # the same questions as the direct task
        assert s.prompt.startswith(b.prompt.rstrip()) and s.prompt.endswith(TRIGGER)
        assert TRIGGER == "Think step by step and give your final answer at the end as 'The answer is: {answer}'."
        user_ex, worked, question = s.messages
        assert [m["role"] for m in s.messages] == ["user", "assistant", "user"]
        assert question["content"] == s.prompt and user_ex["content"].endswith(TRIGGER)
        assert worked["content"].startswith("Step 1:") and "Step 2:" in worked["content"]
        assert worked["content"].count(ANSWER_MARKER) == 1
        example_people = parse_list_lenient(user_ex["content"].split("\n\n")[0])
        assert example_people and not set(example_people) & set(b.data["input"])  # different items
        # the worked example is right: its final answer scores 1 for the example's own question
        ex_answer = extract_final_answer(worked["content"])
        assert ex_answer is not None and parse_list_lenient(ex_answer) is not None
        assert score(s, s.answer).score == 1.0  # the reference is itself a worked solution
        assert s.data["base_answer"] == b.answer and s.data["base_scorer"] == b.scorer


def test_worked_examples_are_deterministic_per_sample_and_prefix_stable():
    task = get_task("waiting_line/replace_random-cot")
    full = [s.to_dict() for s in task.samples()]
    assert [s.to_dict() for s in task.samples(5)] == full[:5]
    assert [s.to_dict() for s in task.samples(5)] == full[:5]
    assert len({s["messages"][1]["content"] for s in full}) > 90  # one example per sample, not one for all


def test_with_params_copy_asks_the_same_questions_as_the_base_copy():
    cot = with_params(get_task("waiting_line/shuffle-cot"), seed=7)
    base = with_params(get_task("waiting_line/shuffle"), seed=7)
    assert cot.id == base.id.replace("waiting_line/shuffle", "waiting_line/shuffle-cot")
    assert [s.data["input"] for s in cot.samples(4)] == [s.data["input"] for s in base.samples(4)]
    assert [s.data["input"] for s in cot.samples(4)] != [s.data["input"] for s in get_task("waiting_line/shuffle").samples(4)]


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ('The answer is: ["A B"]', '["A B"]'),
        ('The answer is: ["X Y"]\nthen The answer is: ["A B"]', '["A B"]'),  # the last marker wins
        ('the ANSWER is:\n\n ["A B"].', '["A B"]'),  # any case; answer on the next paragraph; full stop
        ('The answer is: `["A B"]`.\n\nHope this helps [1].', '["A B"]'),  # trailing commentary dropped
        ("The answer is: {[\"A B\"]}", '["A B"]'),  # the prompt's placeholder braces
        ("The answer is:", ""),
        ("no marker at all", None),
        ("The answer is ['A B']", None),  # no colon: not the requested format
        ("", None),
    ],
)
def test_extraction_edge_cases(output, expected):
    assert extract_final_answer(output) == expected


def test_score_uses_the_base_scorer_on_the_last_answer():
    s = get_task("waiting_line/shuffle-cot").samples(1)[0]
    original = s.data["input"]
    shuffled = json.dumps(list(reversed(original)))
    identity = json.dumps(original)
    good = f"Step 1: the list is {identity}\nStep 2: shuffle.\n\n{ANSWER_MARKER} {shuffled}"
    r = score(s, good)
    assert r.score == 1.0 and r.components == {"lenient": 1.0, "strict": 1.0, "answer_found": 1.0}
    # the same list as the question is not a valid shuffle: the base scorer decides
    assert score(s, f"{ANSWER_MARKER} {identity}").score == 0.0
    # an earlier right answer does not count when the last one is wrong
    assert score(s, f"{ANSWER_MARKER} {shuffled}\n{ANSWER_MARKER} {identity}").score == 0.0
    # lenient vs strict carry over: a list without brackets is lenient-only
    r = score(s, f"{ANSWER_MARKER} the line is {shuffled[1:-1]}")
    assert r.components["lenient"] == 0.0 and r.components["strict"] == 0.0  # prose joins the first item
    r = score(s, f"{ANSWER_MARKER} {shuffled[1:-1]}")
    assert r.components["lenient"] == 1.0 and r.components["strict"] == 0.0
    # a right list without the marker scores 0, with a reason
    r = score(s, shuffled)
    assert r.score == 0.0 and r.components["answer_found"] == 0.0 and "The answer is:" in r.meta["reason"]
    # replace_index: exact position required, through list_exact
    ri = get_task("waiting_line/replace_index-cot").samples(1)[0]
    assert score(ri, f"{ANSWER_MARKER} {ri.data['base_answer']}").score == 1.0
    assert score(ri, f"{ANSWER_MARKER} {json.dumps(ri.data['input'])}").score == 0.0


def test_export_and_score_round_trip(tmp_path):
    out = tmp_path / "tasks"
    result = invoke("tasks", "export", "--out", str(out), "--tasks", ",".join(PAPER_COT), "--limit", "3")
    assert result.exit_code == 0, result.output
    files = sorted(p.name for p in out.iterdir())
    assert files == sorted(t.replace("/", "__") + ".jsonl" for t in PAPER_COT)
    lines = [json.loads(x) for f in sorted(out.iterdir()) for x in f.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 9 and all(x["scorer"] == "cot_answer" for x in lines)
    outputs = tmp_path / "outputs.jsonl"
    rows = []
    for i, x in enumerate(lines):  # right, no marker, right
        text = x["answer"] if i % 3 != 1 else x["data"]["base_answer"]
        rows.append(json.dumps({"id": x["id"], "output": text}))
    outputs.write_text("\n".join(rows) + "\n", encoding="utf-8")
    per = tmp_path / "per.jsonl"
    result = invoke("score", "--tasks", str(out), "--outputs", str(outputs), "--per-sample", str(per))
    assert result.exit_code == 0, result.output
    scored = [json.loads(x) for x in per.read_text(encoding="utf-8").splitlines()]
    assert [r["score"] for r in scored] == [1.0, 0.0, 1.0] * 3
    assert all("reason" in r["meta"] for r in scored[1::3])


def test_lm_eval_export_includes_cot_tasks(tmp_path):
    result = invoke("tasks", "export", "--format", "lm-eval", "--out", str(tmp_path / "lm"), "--tasks", PAPER_COT[0],
                    "--limit", "2")
    assert result.exit_code == 0, result.output
    folder = tmp_path / "lm" / "waiting_line"
    yaml = (folder / "parallelbench_waiting_line_shuffle_cot.yaml").read_text(encoding="utf-8")
    assert "max_gen_toks: 256" in yaml
    assert "until: []" in yaml  # the worked solution holds blank lines: no stop string may cut it
    doc = json.loads((folder / "data" / "parallelbench_waiting_line_shuffle_cot.jsonl").read_text().splitlines()[0])
    assert doc["text"].endswith(TRIGGER) and "Step 1:" in doc["text"]


@pytest.mark.parametrize("spec", ["puzzle/sudoku-cot", "waiting_line_n15/shuffle-cot", "text_writing/w2s_easy-cot"])
def test_cot_of_a_task_without_one_is_one_line_and_writes_nothing(spec, tmp_path):
    for args in (("tasks", "list", "--tasks", spec), ("tasks", "show", spec),
                 ("tasks", "export", "--out", str(tmp_path / "x"), "--tasks", spec)):
        result = invoke(*args)
        assert result.exit_code == 2, result.output
        text = " ".join(result.output.split())
        assert "has no chain-of-thought variant" in text and "waiting_line/shuffle-cot" in text
        assert "Traceback" not in result.output
    assert not (tmp_path / "x").exists()
    with pytest.raises(KeyError, match="CoT variants exist for: waiting_line/copy-cot"):
        get_task(spec)


# ---- the report: CoT beside direct runs ------------------------------------------------------


def _rows():
    from parallelbench.analysis.synthetic import result_row

    rows = []
    for k, direct_hits, cot_hits in ((1, 4, 3), (2, 1, 3)):
        for i in range(4):
            rows.append(result_row("confidence-topk", {"k": k}, model="m", task="waiting_line/shuffle",
                                   sample_id=f"waiting_line/shuffle/{i}", score=float(i < direct_hits),
                                   num_tokens=32, nfe=32 // k))
            rows.append(result_row("confidence-topk", {"k": k}, model="m", task="waiting_line/shuffle-cot",
                                   sample_id=f"waiting_line/shuffle-cot/{i}", score=float(i < cot_hits),
                                   num_tokens=200 + i, nfe=(200 + i) // k))
    # a CoT setting with no direct run, and a direct task without CoT (left out)
    rows.append(result_row("confidence-topk", {"k": 4}, model="m", task="waiting_line/shuffle-cot", score=1.0,
                           num_tokens=256, nfe=64))
    rows.append(result_row("confidence-topk", {"k": 1}, model="m", task="waiting_line/copy", score=1.0))
    return rows


def test_cot_comparison_pairs_direct_and_cot_runs():
    import pandas as pd

    from parallelbench.analysis.cot import cot_comparison

    table = cot_comparison(pd.DataFrame(_rows()))
    assert list(table["task"]) == ["waiting_line/shuffle"] * 3
    k1, k2, k4 = (table.iloc[i] for i in range(3))
    assert (k1["direct_accuracy"], k1["cot_accuracy"]) == (100.0, 75.0)
    assert (k2["direct_accuracy"], k2["cot_accuracy"]) == (25.0, 75.0)
    assert k1["direct_tokens"] == 32 and k1["cot_tokens"] == pytest.approx(201.5)
    assert k2["direct_nfe"] == 16 and k2["cot_nfe"] == pytest.approx((100 + 100 + 101 + 101) / 4)
    assert k4["direct_accuracy"] != k4["direct_accuracy"] and k4["cot_n"] == 1  # NaN: no direct run
    assert cot_comparison(pd.DataFrame(_rows()[-1:])).empty  # no CoT rows, no table


def test_report_has_a_cot_section_only_with_cot_runs(tmp_path):
    import pandas as pd

    from parallelbench.analysis.report import build_report

    page = build_report(pd.DataFrame(_rows()), tmp_path / "a", static_figures=False).read_text(encoding="utf-8")
    assert 'id="cot-section"' in page and "Chain-of-thought vs direct" in page
    section = page.split('id="cot-section"')[1].split("</section>")[0]
    assert "<td>100.0</td><td>75.0</td><td>32.0</td><td>201.5</td>" in section  # k = 1: acc, acc, tokens, tokens
    assert section.count("<tr>") == 4  # header + 3 settings
    assert (tmp_path / "a" / "cot.csv").exists()
    plain = [r for r in _rows() if not r["task"].endswith("-cot")]
    page = build_report(pd.DataFrame(plain), tmp_path / "b", static_figures=False).read_text(encoding="utf-8")
    assert 'id="cot-section"' not in page and not (tmp_path / "b" / "cot.csv").exists()


def test_ideal_model_refuses_cot_tasks_with_a_reason_naming_cot():
    from parallelbench.models.ideal.bench import IdealBenchModel, no_answer_set_reason

    s = get_task("waiting_line/shuffle-cot").samples(1)[0]
    assert not IdealBenchModel().supports(s)
    assert "chain-of-thought" in no_answer_set_reason(s) and "direct task" in no_answer_set_reason(s)


def test_a_one_person_shuffle_cot_is_refused_like_the_direct_task(tmp_path):
    with pytest.raises(ValueError, match="at least 2 items"):
        with_params(get_task("waiting_line/shuffle-cot"), n_min=1)
    result = invoke("tasks", "export", "--out", str(tmp_path / "x"), "--tasks", "waiting_line/shuffle-cot", "--n-min", "1")
    assert result.exit_code == 2 and "--n-min 2" in result.output and not (tmp_path / "x").exists()
    # longer lines are fine and stay paired with the direct task
    cot = with_params(get_task("waiting_line/sort-cot"), n_min=8, n_max=8)
    s = cot.samples(1)[0]
    assert len(s.data["input"]) == 8 and score(s, s.answer).score == 1.0


def test_the_tiny_model_never_trains_on_cot_prose():
    from parallelbench.models.tiny.data import training_tasks

    ids = {t.id for t in training_tasks()}
    assert "waiting_line/shuffle" in ids and not any(i.endswith("-cot") for i in ids)


def test_tiny_model_on_a_cot_task_is_skipped_with_one_line_and_no_database(tmp_path):
    from typer.testing import CliRunner

    from parallelbench.cli import app

    db = tmp_path / "x.db"
    res = CliRunner().invoke(app, ["run", "--model", "tiny", "--tasks", "waiting_line/shuffle-cot", "--limit", "2",
                                   "--db", str(db), "--no-report"])
    assert res.exit_code != 0
    assert "Traceback" not in res.output and "cannot tokenize" in res.output
    assert "nothing ran" in res.output and not db.exists()
