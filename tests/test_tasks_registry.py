"""Registry, generators and prompts of the list tasks (Waiting Line, synthetic)."""

import dataclasses
import json
from collections import Counter

import pytest

from parallelbench.tasks import get_task, registry, resolve_tasks, valid_answers
from parallelbench.tasks._common import StableRng, with_params
from parallelbench.tasks._listops import sort_key
from parallelbench.tasks.synthetic import synthetic_task
from parallelbench.tasks.waiting_line import OPS, PROMPTS

from release_files import MISSING, RELEASE  # noqa: E402  (the release's files: where, and how to get them)
WL_OPS = ["copy", "sort", "reverse", "shuffle", "insert_index", "insert_random",
          "remove_index", "remove_random", "replace_index", "replace_random"]


def test_registry_has_every_id_and_exactly_17_paper_tasks():
    reg = registry()
    expected = {f"{p}/{op}" for p in ("waiting_line", "waiting_line_n15", "waiting_line_n21_24") for op in WL_OPS}
    expected |= {f"text_writing/{t}" for t in ("summarization", "paraphrasing", "w2s_easy", "w2s_medium", "w2s_hard")}
    expected |= {f"text_writing/w2s_{lv}_n{k}" for lv in ("easy", "medium", "hard") for k in range(1, 8)}
    expected |= {"puzzle/latin_square", "puzzle/sudoku"}
    expected |= {f"{p}/{op}" for p in ("synthetic", "synthetic_infill")
                 for op in ("copy", "replace_index", "replace_random", "shuffle")}
    expected |= {f"waiting_line/{op}-cot" for op in WL_OPS}  # chain-of-thought variants (tasks/cot.py)
    expected |= {f"structured/{t}" for t in ("json_fields", "json_any_order", "tool_call")}  # ours, not the paper's
    assert set(reg) == expected
    paper = resolve_tasks("paper")
    assert len(paper) == 17
    assert {t.id for t in paper} == {f"waiting_line/{op}" for op in WL_OPS} | {
        "text_writing/summarization", "text_writing/paraphrasing", "text_writing/w2s_easy",
        "text_writing/w2s_medium", "text_writing/w2s_hard", "puzzle/latin_square", "puzzle/sudoku"}


def test_shots_and_token_budgets_follow_the_paper():
    for t in registry().values():
        if t.category in ("waiting_line", "puzzle", "synthetic", "structured"):
            assert t.shots == 1, t.id
        else:
            assert t.shots == 0, t.id
        if t.in_paper:
            assert t.max_new_tokens == (32 if t.category == "waiting_line" else 64), t.id
    assert get_task("waiting_line_n15/copy").max_new_tokens == 128
    assert get_task("waiting_line_n21_24/copy").max_new_tokens == 128
    assert get_task("synthetic/shuffle").max_new_tokens == 32


@pytest.mark.skipif(not RELEASE.is_dir(), reason=MISSING)
def test_waiting_line_prompts_match_the_release_templates_word_for_word():
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((RELEASE / "waiting_line" / "task_config.yaml").read_text())
    for op in OPS:
        assert PROMPTS[op] == config[f"waiting_line/{op}"]["prompt"], op


def test_paper_example_prompt_renders_as_in_the_table():
    s = get_task("waiting_line/replace_index").samples(1)[0]
    d = s.data
    assert s.prompt == (
        "You are managing a waiting line at a customer service desk.\n"
        f'The person at position {d["index"]} must be replaced with "{d["word"]}":\n'
        + "[" + ", ".join(f'"{x}"' for x in d["input"]) + "]\n"
        f'Please replace the person at the specified position with "{d["word"]}" and provide only the final list.\n'
    )


def test_generation_is_deterministic_and_seed_dependent():
    t = get_task("waiting_line/shuffle")
    a = [s.to_dict() for s in t.samples()]
    b = [s.to_dict() for s in t.samples()]
    assert a == b
    other = with_params(t, seed=t.params.seed + 1)
    c = [s.to_dict() for s in other.samples()]
    assert [x["data"]["input"] for x in a] != [x["data"]["input"] for x in c]
    assert other.id != t.id and not other.in_paper


def test_limit_gives_a_prefix_of_the_full_set():
    t = get_task("waiting_line/insert_index")
    full = t.samples()
    assert [s.to_dict() for s in t.samples(7)] == [s.to_dict() for s in full[:7]]


def test_stable_rng_is_reproducible_and_uniform_enough():
    assert [StableRng("k", 1).below(10) for _ in range(3)] == [StableRng("k", 1).below(10) for _ in range(3)]
    rng = StableRng("uniform", 0)
    counts = Counter(rng.below(4) for _ in range(4000))
    # each bucket ~ Binomial(4000, 1/4): mean 1000, sd ~27; 5 sd margin
    assert all(abs(c - 1000) < 140 for c in counts.values()) and len(counts) == 4


@pytest.mark.parametrize("prefix,lengths", [("waiting_line", {3: 25, 4: 25, 5: 25, 6: 25}),
                                            ("waiting_line_n15", {15: 100}),
                                            ("waiting_line_n21_24", {21: 25, 22: 25, 23: 25, 24: 25})])
def test_counts_per_length(prefix, lengths):
    samples = get_task(f"{prefix}/copy").samples()
    assert len(samples) == 100
    assert Counter(s.data["n"] for s in samples) == lengths
    assert len({s.id for s in samples}) == 100


@pytest.mark.parametrize("op", WL_OPS)
def test_waiting_line_samples_are_well_formed(op):
    for s in get_task(f"waiting_line/{op}").samples():
        people = s.data["input"]
        assert len(set(people)) == len(people) == s.data["n"]
        assert all(len(p.split(" ")) == 2 for p in people)
        assert s.messages[-1] == {"role": "user", "content": s.prompt}
        assert [m["role"] for m in s.messages] == ["user", "assistant", "user"]
        answer = json.loads(s.answer)
        if "word" in s.data:
            assert s.data["word"] not in people
        if op == "copy":
            assert answer == people
        elif op == "reverse":
            assert answer == people[::-1]
        elif op == "sort":
            assert answer == sorted(people, key=lambda p: (p.split(" ")[1], p.split(" ")[0]))
        elif op == "shuffle":
            assert sorted(answer) == sorted(people) and answer != people and s.data["must_differ"] is True
        elif op == "insert_index":
            i = s.data["index"]
            assert 0 <= i <= len(people) and answer == people[:i] + [s.data["word"]] + people[i:]
        elif op == "remove_index":
            i = s.data["index"]
            assert 0 <= i < len(people) and answer == people[:i] + people[i + 1:]
        elif op == "replace_index":
            i = s.data["index"]
            assert 0 <= i < len(people) and answer[i] == s.data["word"] and answer[:i] + answer[i + 1:] == people[:i] + people[i + 1:]
        elif op == "insert_random":
            assert len(answer) == len(people) + 1 and [x for x in answer if x != s.data["word"]] == people
        elif op == "remove_random":
            assert len(answer) == len(people) - 1 and all(x in people for x in answer)
        elif op == "replace_random":
            assert sum(a != b for a, b in zip(answer, people)) == 1 and s.data["word"] in answer
        if s.scorer == "list_exact":
            assert s.data["expected"] == answer


def test_sort_is_by_last_name_with_ties_by_first_name():
    assert sorted(["Zoe Adams", "Amy Baker", "Bob Adams"], key=sort_key) == ["Bob Adams", "Zoe Adams", "Amy Baker"]
    samples = get_task("waiting_line/sort").samples()
    # the task is informative: for most lists last-name order differs from full-name order
    assert sum(json.loads(s.answer) != sorted(s.data["input"]) for s in samples) > 50


def test_shuffle_example_answers_differ_from_their_inputs():
    for s in get_task("waiting_line/shuffle").samples():
        ex_prompt, ex_answer = s.messages[0]["content"], json.loads(s.messages[1]["content"])
        ex_input = json.loads(ex_prompt.split("\n")[2])
        assert sorted(ex_input) == sorted(ex_answer) and ex_input != ex_answer


@pytest.mark.parametrize("task_id", ["waiting_line/copy", "waiting_line/shuffle", "waiting_line_n15/sort",
                                     "synthetic/shuffle", "synthetic/copy"])
def test_one_shot_examples_are_never_test_items(task_id):
    samples = get_task(task_id).samples()
    tests = {s.prompt for s in samples}
    examples = [s.messages[0]["content"] for s in samples]
    assert not tests & set(examples)
    # drawn from the task's n range
    t = get_task(task_id)
    for ex in examples:
        n = len(json.loads(next(line for line in ex.split("\n") if line.startswith("["))))
        assert t.params.n_min <= n <= t.params.n_max


def test_synthetic_tasks_use_letters_and_a_fresh_replacement():
    samples = get_task("synthetic/replace_random").samples()
    assert Counter(s.data["n"] for s in samples) == {n: 25 for n in range(3, 11)}
    for s in samples:
        assert all(len(x) == 1 and x.isupper() for x in s.data["input"])
        assert s.data["word"] not in s.data["input"]
        assert s.answer.startswith('["') and s.output_format is None


def test_synthetic_shuffle_allows_the_identity():
    s = get_task("synthetic/shuffle").samples(1)[0]
    assert s.data["must_differ"] is False


def test_synthetic_infill_layout_masks_only_items():
    for s in get_task("synthetic_infill/copy").samples(30):
        assert s.output_format == "[" + ", ".join(['"[MASK]"'] * s.data["n"]) + "]"
        assert s.output_format.replace("[MASK]", "X").count('"X"') == len(json.loads(s.answer))


def test_synthetic_task_builds_any_n_range():
    t = synthetic_task("shuffle", 12, 14, num_samples=30, seed=3)
    samples = t.samples()
    assert len(samples) == 30 and {s.data["n"] for s in samples} == {12, 13, 14}
    assert t.id not in registry() and t.id.startswith("synthetic/shuffle_")
    assert t.max_new_tokens >= 4 * 14
    big = synthetic_task("copy", 40, 40, num_samples=2)
    assert all(len(set(s.data["input"])) == 40 for s in big.samples())
    assert synthetic_task("copy").id == "synthetic/copy"
    with pytest.raises(ValueError, match="n_min"):
        synthetic_task("copy", 5, 3)
    with pytest.raises(ValueError, match="unknown synthetic operation"):
        synthetic_task("sort")


def test_with_params_changes_range_and_recounts():
    t = with_params(get_task("waiting_line/copy"), n_min=8, n_max=9)
    assert t.params.num_samples == 50 and Counter(s.data["n"] for s in t.samples()) == {8: 25, 9: 25}
    assert with_params(get_task("waiting_line/copy")) is get_task("waiting_line/copy")
    frozen = dataclasses.replace(get_task("waiting_line/copy"))
    assert frozen.samples(3)[0].to_dict() == get_task("waiting_line/copy").samples(1)[0].to_dict()


@pytest.mark.parametrize("task_id", ["waiting_line/shuffle", "synthetic/shuffle", "synthetic_infill/shuffle"])
def test_shuffle_of_one_item_is_refused(task_id):
    """A one-item list cannot be shuffled into a different order: every answer would score 0."""
    with pytest.raises(ValueError, match="at least 2 items"):
        with_params(get_task(task_id), n_min=1, n_max=3)
    two = with_params(get_task(task_id), n_min=2, n_max=2, num_samples=2).samples()
    assert all(s.answer in valid_answers(s) for s in two)


def test_cli_export_of_one_item_shuffle_is_a_clear_error(tmp_path):
    from typer.testing import CliRunner

    from parallelbench.cli import app

    result = CliRunner().invoke(app, ["tasks", "export", "--out", str(tmp_path), "--tasks", "waiting_line/shuffle",
                                      "--n-min", "1", "--n-max", "1", "--limit", "2"])
    assert result.exit_code == 2 and "at least 2 items" in result.output and "Traceback" not in result.output


def test_a_family_selects_its_paper_tasks_and_variants_are_named_by_family():
    assert [t.id for t in resolve_tasks("waiting_line")] == [t.id for t in resolve_tasks("paper") if t.id.startswith("waiting_line/")]
    assert len(resolve_tasks("waiting_line")) == 10
    assert {t.id.split("/")[0] for t in resolve_tasks("waiting_line_n15")} == {"waiting_line_n15"}
    assert len(resolve_tasks("text_writing")) == 5
    assert len(resolve_tasks("synthetic")) == 4  # no paper tasks: the whole family
    assert [t.id for t in resolve_tasks("puzzle/sudoku,puzzle,puzzle/sudoku")] == ["puzzle/sudoku", "puzzle/latin_square"]
    with pytest.raises(KeyError, match="tasks list"):
        resolve_tasks("waiting_lines")
    with pytest.raises(KeyError, match="no task given"):
        resolve_tasks(" , ")
