"""The structured family (issue 34): generators, scorers, answers and bad input."""

from __future__ import annotations

import json
import random
from itertools import permutations

import pytest
from typer.testing import CliRunner

from parallelbench.cli import app
from parallelbench.scoring import score
from parallelbench.tasks import get_task, registry, resolve_tasks, valid_answers
from parallelbench.tasks._answers import count_valid_answers
from parallelbench.tasks._common import with_params
from parallelbench.tasks.structured import FUNCTIONS, KEYS, NAME_KEYS, NUMBERS, structured_task

IDS = ["structured/json_fields", "structured/json_any_order", "structured/tool_call"]
MODES = ["default", "paper"]


@pytest.fixture(scope="module")
def samples():
    return {tid: get_task(tid).samples() for tid in IDS}


# ---- generators -------------------------------------------------------------------------


def test_family_is_registered_selectable_and_outside_the_paper():
    assert [t.id for t in resolve_tasks("structured")] == IDS
    for tid in IDS:
        task = registry()[tid]
        assert task.category == "structured" and not task.in_paper and task.shots == 1
        assert (task.params.n_min, task.params.n_max, task.params.num_samples) == (3, 8, 100)
    assert not any(t.category == "structured" for t in resolve_tasks("paper"))


@pytest.mark.parametrize("tid", IDS)
def test_generators_are_deterministic_and_limit_gives_a_prefix(tid, samples):
    task = get_task(tid)
    again = [s.to_dict() for s in task.samples()]
    assert again == [s.to_dict() for s in samples[tid]]
    assert [s.to_dict() for s in task.samples(7)] == again[:7]
    other = with_params(task, seed=7).samples(5)
    assert [s.prompt for s in other] != [s.prompt for s in samples[tid][:5]]


@pytest.mark.parametrize("tid", IDS)
def test_samples_hold_3_to_8_fields_from_the_name_pools_and_small_integers(tid, samples):
    from parallelbench.tasks._common import load_json

    names = load_json("names.json")
    got = samples[tid]
    assert len(got) == 100 and len({s.prompt for s in got}) == 100
    assert sorted({s.data["n"] for s in got}) == [3, 4, 5, 6, 7, 8]
    for s in got:
        pairs = s.data["arguments"] if tid.endswith("tool_call") else s.data["fields"]
        assert len(pairs) == s.data["n"] and len({k for k, _ in pairs}) == len(pairs)
        for key, value in pairs:
            assert key in KEYS
            if key in NAME_KEYS:
                first, last = value.split(" ")
                assert first in names["first"] and last in names["last"]
            else:
                assert isinstance(value, int) and NUMBERS[0] <= value <= NUMBERS[1]
            assert f"{key}: {json.dumps(value)}" in s.prompt  # one field per line, strings quoted
        if tid.endswith("tool_call"):
            assert s.data["name"] in FUNCTIONS and f'"{s.data["name"]}"' in s.prompt


@pytest.mark.parametrize("tid", IDS)
def test_answer_is_json_dumps_with_default_separators(tid, samples):
    for s in samples[tid]:
        value = json.loads(s.answer)
        assert s.answer == json.dumps(value)
        if tid.endswith("json_fields"):
            assert list(value.items()) == [tuple(p) for p in s.data["fields"]]
        elif tid.endswith("tool_call"):
            assert list(value) == ["name", "arguments"] and value["name"] == s.data["name"]
            assert list(value["arguments"].items()) == [tuple(p) for p in s.data["arguments"]]
        else:
            assert sorted(value.items()) == sorted(tuple(p) for p in s.data["fields"])


def test_any_order_references_are_random_orders(samples):
    """The reference of json_any_order lists its keys in a random order (as shuffle's is a random
    permutation), so the one-shot example shows that any order is meant."""
    got = samples["structured/json_any_order"]
    same = sum(list(json.loads(s.answer)) == [k for k, _ in s.data["fields"]] for s in got)
    assert same < 10  # 1/n! of them by chance: about 4 of 100 at n = 3..8


@pytest.mark.parametrize("tid", IDS)
def test_one_shot_chat_with_an_example_of_its_own(tid, samples):
    tests = {s.prompt for s in samples[tid]}
    for s in samples[tid]:
        assert [m["role"] for m in s.messages] == ["user", "assistant", "user"]
        assert s.messages[-1]["content"] == s.prompt and s.messages[0]["content"] not in tests
        assert json.loads(s.messages[1]["content"])  # the example's answer is JSON
        assert s.prompt.startswith("You are managing a waiting line at a customer service desk.\n")
        assert "provide only the JSON object" in s.prompt


@pytest.mark.parametrize("tid", IDS)
def test_training_and_validation_streams_are_other_samples(tid):
    from parallelbench.models.tiny.data import train_split, validation_split

    task = get_task(tid)
    tests = {s.prompt for s in task.samples()}
    assert not tests & {s.prompt for s in validation_split(task, 20)}
    assert all(3 <= s.data["n"] <= 8 for s in train_split(task, 0, 0, 30))


@pytest.mark.parametrize("tid", IDS)
def test_valid_answers_count_and_all_score_1(tid, samples):
    for s in samples[tid][:12]:
        answers = valid_answers(s)
        n = s.data["n"]
        expected = 1 if not tid.endswith("json_any_order") else len(list(permutations(range(n))))
        assert count_valid_answers(s) == expected == len(answers) == len(set(answers))
        assert s.answer in answers
        for a in answers[:50]:
            for mode in MODES:
                r = score(s, a, mode=mode)
                assert r.score == r.components["fields"] == r.components["strict"] == 1.0


# ---- bad input --------------------------------------------------------------------------


@pytest.mark.parametrize("change", [dict(n_min=2), dict(n_min=3, n_max=9), dict(n_min=0), dict(n_min=9, n_max=12)])
def test_field_count_outside_3_to_8_is_one_line(change):
    with pytest.raises(ValueError, match=r"3 to 8 fields") as exc:
        with_params(get_task("structured/json_fields"), **change)
    assert "\n" not in str(exc.value)
    with pytest.raises(ValueError, match=r"3 to 8 fields"):
        structured_task("tool_call", change.get("n_min"), change.get("n_max"))


def test_other_field_ranges_and_seeds_within_3_to_8():
    task = structured_task("json_any_order", 5, 5, num_samples=10, seed=3)
    assert task.id != "structured/json_any_order" and {s.data["n"] for s in task.samples()} == {5}
    assert structured_task("json_fields") is get_task("structured/json_fields")


def test_unknown_structured_task_or_variant_lists_them():
    with pytest.raises(ValueError) as exc:
        structured_task("json_list")
    assert "json_fields, json_any_order, tool_call" in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(KeyError) as exc:
        get_task("structured/yaml")
    assert all(t in str(exc.value) for t in IDS)


@pytest.mark.parametrize("args, needle", [
    (["tasks", "show", "structured/yaml"], "structured/json_fields, structured/json_any_order, structured/tool_call"),
    (["tasks", "export", "--tasks", "structured", "--n-min", "2", "--out", "OUT"], "3 to 8 fields"),
    (["tasks", "export", "--tasks", "structured/tool_call", "--n-min", "4", "--n-max", "9", "--out", "OUT"], "3 to 8 fields"),
    (["run", "--model", "ideal", "--tasks", "structured/xml", "--strategy", "random", "--k", "1", "--db", "DB"],
     "structured/json_fields, structured/json_any_order, structured/tool_call"),
])
def test_cli_bad_input_is_one_line(args, needle, tmp_path):
    args = [a.replace("OUT", str(tmp_path / "out")).replace("DB", str(tmp_path / "x.db")) for a in args]
    res = CliRunner().invoke(app, args)
    assert res.exit_code != 0 and needle in res.output and "Traceback" not in res.output, res.output
    message = [line for line in res.output.splitlines() if needle.split(",")[0] in line]
    assert message


def test_cli_lists_shows_and_exports_the_family(tmp_path):
    runner = CliRunner()
    listed = runner.invoke(app, ["tasks", "list", "--tasks", "structured", "--json"])
    assert listed.exit_code == 0 and [r["id"] for r in json.loads(listed.output)] == IDS
    shown = runner.invoke(app, ["tasks", "show", "structured/json_any_order", "--index", "2"])
    assert shown.exit_code == 0 and "valid answers:" in shown.output
    out = tmp_path / "jsonl"
    done = runner.invoke(app, ["tasks", "export", "--tasks", "structured", "--out", str(out), "--n-min", "4", "--n-max", "5", "--limit", "5"])
    assert done.exit_code == 0, done.output
    from parallelbench.tasks.export import read_samples

    back = read_samples(out)
    assert len(back) == 15 and {s.data["n"] for s in back} <= {4, 5}
    assert all(score(s, s.answer).score == 1.0 for s in back)


# ---- scorers ----------------------------------------------------------------------------

RECORD = [["customer", "Susan Fox"], ["age", 42], ["agent", "Philip Gray"], ["floor", 17]]
JSON_DATA = {"n": 4, "fields": RECORD}
TOOL_DATA = {"n": 4, "name": "book_table", "arguments": RECORD}


def _sample(scorer: str, data: dict, answer: str):
    from parallelbench.tasks.base import Sample

    return Sample(f"structured/{scorer}/0", f"structured/{scorer}", "", [], answer, scorer, data)


REF = '{"customer": "Susan Fox", "age": 42, "agent": "Philip Gray", "floor": 17}'
SWAPPED = '{"age": 42, "customer": "Susan Fox", "agent": "Philip Gray", "floor": 17}'  # first two swapped
REV = '{"floor": 17, "agent": "Philip Gray", "age": 42, "customer": "Susan Fox"}'
MB = 1_000_000
# (name, output, json_fields (headline, strict), json_any_order (headline, strict))
RECORD_FORMS = [
    ("reference", REF, (1, 1), (1, 1)),
    ("compact", REF.replace(", ", ",").replace(": ", ":"), (1, 1), (1, 1)),
    ("indented", json.dumps(json.loads(REF), indent=2), (1, 1), (1, 1)),
    ("fenced", "```json\n" + REF + "\n```", (1, 1), (1, 1)),
    ("plain fence", "```\n" + REF + "\n```", (1, 1), (1, 1)),
    ("prose before", "Here is the record you asked for: " + REF, (1, 1), (1, 1)),
    ("prose after", REF + "\nLet me know if you need anything else.", (1, 1), (1, 1)),
    ("prose both sides with quotes", 'Sure, "here": ' + REF + ' "done".', (1, 1), (1, 1)),
    ("answer twice, last counts", '{"customer": "Nobody"} then ' + REF, (1, 1), (1, 1)),
    ("wrong answer last", REF + ' {"customer": "Nobody"}', (0, 0), (0, 0)),
    ("array after", REF + " [1, 2]", (0, 0), (0, 0)),
    ("wrapped in an array", "[" + REF + "]", (0, 0), (0, 0)),
    ("swapped keys", SWAPPED, (0.5, 0), (1, 1)),
    ("reversed keys", REV, (0, 0), (1, 1)),
    ("one value wrong", REF.replace("17", "71"), (0.75, 0), (0.75, 0)),
    ("number as a string", REF.replace("42", '"42"'), (0.75, 0), (0.75, 0)),
    ("float equal to the integer", REF.replace("42", "42.0"), (1, 1), (1, 1)),
    ("boolean for a number", REF.replace("17", "true"), (0.75, 0), (0.75, 0)),
    ("name with extra space", REF.replace("Susan Fox", "Susan  Fox"), (0.75, 0), (0.75, 0)),
    ("unicode escape", REF.replace("Fox", "\\u0046ox"), (1, 1), (1, 1)),
    ("missing field", '{"customer": "Susan Fox", "age": 42, "agent": "Philip Gray"}', (0.75, 0), (0.75, 0)),
    ("missing field in the middle", '{"customer": "Susan Fox", "agent": "Philip Gray", "floor": 17}', (0.25, 0), (0.75, 0)),
    ("extra field", REF[:-1] + ', "room": 3}', (0.75, 0), (0.75, 0)),
    ("two extra fields", REF[:-1] + ', "room": 3, "seat": 4}', (0.5, 0), (0.5, 0)),
    ("repeated key, same value", REF[:-1] + ', "floor": 17}', (0.75, 0), (0.75, 0)),
    ("repeated key, other value", REF[:-1] + ', "age": 24}', (0.75, 0), (0.75, 0)),
    ("repeated unknown key", REF[:-1] + ', "room": 3, "room": 3}', (0.5, 0), (0.5, 0)),
    ("trailing comma", REF[:-1] + ",}", (1, 0), (1, 0)),
    ("single quotes", REF.replace('"', "'"), (1, 0), (1, 0)),
    ("bare keys", '{customer: "Susan Fox", age: 42, agent: "Philip Gray", floor: 17}', (1, 0), (1, 0)),
    ("missing commas", REF.replace(", ", " "), (1, 0), (1, 0)),
    ("NaN value", REF.replace("17", "NaN"), (0.75, 0), (0.75, 0)),
    ("NaN extra field", REF[:-1] + ', "room": NaN}', (0.75, 0), (0.75, 0)),
    ("unclosed at the end", REF[:-1], (1, 0), (1, 0)),
    ("unclosed string at the end", '{"age": 42, "floor": 17, "agent": "Philip Gray", "customer": "Susan Fox', (0.25, 0), (1, 0)),
    ("cut in the middle", REF[:30], (0.25, 0), (0.25, 0)),
    ("missing colon", REF.replace('"age": 42', '"age" 42'), (0, 0), (0, 0)),
    ("bare word value", REF.replace('"Susan Fox"', "Susan Fox"), (0, 0), (0, 0)),
    ("stray character", REF.replace(", ", ", ;"), (0, 0), (0, 0)),
    ("list not object", '["Susan Fox", 42, "Philip Gray", 17]', (0, 0), (0, 0)),
    ("nested too deep", "[" * 40 + "]" * 40, (0, 0), (0, 0)),
    ("no JSON at all", "customer: Susan Fox, age: 42", (0, 0), (0, 0)),
    ("empty", "", (0, 0), (0, 0)),
    ("empty object", "{}", (0, 0), (0, 0)),
    ("whitespace", " \n\t ", (0, 0), (0, 0)),
    ("1 MB of brackets", "[" * MB, (0, 0), (0, 0)),
    ("1 MB of braces", "{" * MB, (0, 0), (0, 0)),
    ("1 MB of closers", "}]" * (MB // 2), (0, 0), (0, 0)),
    ("1 MB of pairs", "{}" * (MB // 2), (0, 0), (0, 0)),
    ("100,000 deep", '{"a": ' * 100_000 + "1" + "}" * 100_000, (0, 0), (0, 0)),
    ("100,000 deep unclosed", "[" * 100_000 + REF, (0, 0), (0, 0)),
    ("1 MB of quotes", '{"' + '"' * MB, (0, 0), (0, 0)),
    ("1 MB prose then answer", "word " * (MB // 5) + REF, (1, 1), (1, 1)),
    ("huge integer", REF.replace("17", "1" * 5000), (0.75, 0), (0.75, 0)),
    ("lone surrogate", REF.replace("Susan", "\ud800"), (0.75, 0), (0.75, 0)),
    ("control character in a string", REF.replace("Susan Fox", "Susan\x00Fox"), (0.75, 0), (0.75, 0)),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scorer, column", [("json_fields", 2), ("json_any_order", 3)])
@pytest.mark.parametrize("form", RECORD_FORMS, ids=[f[0] for f in RECORD_FORMS])
def test_record_answer_forms(form, scorer, column, mode):
    s = _sample(scorer, JSON_DATA, REF)
    headline, strict = form[column]
    r = score(s, form[1], mode=mode)
    assert (r.score, r.components["fields"], r.components["strict"]) == (headline, headline, strict), form[0]


TOOL_REF = json.dumps({"name": "book_table", "arguments": json.loads(REF)})
TOOL_FORMS = [
    ("reference", TOOL_REF, 1, 1),
    ("compact", json.dumps(json.loads(TOOL_REF), separators=(",", ":")), 1, 1),
    ("indented", json.dumps(json.loads(TOOL_REF), indent=2), 1, 1),
    ("fenced", "```json\n" + TOOL_REF + "\n```", 1, 1),
    ("prose before and after", "Calling the tool now: " + TOOL_REF + " (done)", 1, 1),
    ("top-level keys reversed", json.dumps({"arguments": json.loads(REF), "name": "book_table"}), 1, 1),
    ("arguments swapped", TOOL_REF.replace(REF, SWAPPED), 0.6, 0),
    ("arguments reversed", TOOL_REF.replace(REF, REV), 0.2, 0),
    ("wrong function", TOOL_REF.replace("book_table", "book_seat"), 0.8, 0),
    ("function missing", json.dumps({"arguments": json.loads(REF)}), 0.8, 0),
    ("arguments missing", json.dumps({"name": "book_table"}), 0.2, 0),
    ("argument missing", TOOL_REF.replace(', "floor": 17', ""), 0.8, 0),
    ("extra argument", TOOL_REF.replace("17}", '17, "room": 3}'), 0.8, 0),
    ("extra top-level key", TOOL_REF[:-1] + ', "id": 1}', 0.8, 0),
    ("repeated argument", TOOL_REF.replace("17}", '17, "age": 42}'), 0.8, 0),
    ("repeated name", TOOL_REF[:-1] + ', "name": "book_table"}', 0.8, 0),
    ("arguments as a JSON string", json.dumps({"name": "book_table", "arguments": REF}), 0.2, 0),
    ("arguments as a list", json.dumps({"name": "book_table", "arguments": list(json.loads(REF).values())}), 0.2, 0),
    ("record without the call", REF, 0, 0),
    ("wrong value", TOOL_REF.replace("Philip Gray", "Philip Grey"), 0.8, 0),
    ("trailing commas", TOOL_REF.replace("17}", "17,},"), 1, 0),
    ("single quotes", TOOL_REF.replace('"', "'"), 1, 0),
    ("unclosed", TOOL_REF[:-2], 1, 0),
    ("NaN argument", TOOL_REF.replace("17", "NaN"), 0.8, 0),
    ("two calls, last counts", '{"name": "x", "arguments": {}} ' + TOOL_REF, 1, 1),
    ("wrong call last", TOOL_REF + ' {"name": "x", "arguments": {}}', 0, 0),
    ("empty", "", 0, 0),
    ("1 MB of brackets", "[" * MB, 0, 0),
    ("100,000 deep", '{"a": ' * 100_000 + "1" + "}" * 100_000, 0, 0),
    ("cut", TOOL_REF[:40], 0.2, 0),
    ("missing colon", TOOL_REF.replace('"name": ', '"name" '), 0, 0),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("form", TOOL_FORMS, ids=[f[0] for f in TOOL_FORMS])
def test_tool_call_answer_forms(form, mode):
    s = _sample("tool_call", TOOL_DATA, TOOL_REF)
    r = score(s, form[1], mode=mode)
    assert (r.score, r.components["fields"], r.components["strict"]) == (form[2], form[2], form[3]), form[0]


def test_at_least_30_answer_forms_per_task():
    assert len(RECORD_FORMS) >= 30 and len(TOOL_FORMS) >= 30


@pytest.mark.parametrize("scorer, data", [("json_fields", JSON_DATA), ("json_any_order", JSON_DATA), ("tool_call", TOOL_DATA)])
def test_random_bytes_and_mutations_never_raise(scorer, data):
    """Fuzzing: random bytes and random edits of a correct answer always score in [0, 1]; strict
    success implies full headline credit."""
    s = _sample(scorer, data, REF)
    base = TOOL_REF if scorer == "tool_call" else REF
    rng = random.Random(34)
    outputs = [bytes(rng.randrange(256) for _ in range(rng.choice([10, 1000, 100_000]))).decode("latin-1") for _ in range(6)]
    alphabet = '{}[]",:\\ \'0123456789abcNaInfty\n'
    for _ in range(400):
        text = list(base)
        for _ in range(rng.randrange(1, 6)):
            i = rng.randrange(len(text) + 1)
            op = rng.randrange(3)
            if op == 0:
                text.insert(i, rng.choice(alphabet))
            elif op == 1 and text:
                del text[min(i, len(text) - 1)]
            elif text:
                text[min(i, len(text) - 1)] = rng.choice(alphabet)
        outputs.append("".join(text))
    for out in outputs:
        for mode in MODES:
            r = score(s, out, mode=mode)
            values = [r.score, *r.components.values()]
            assert all(isinstance(v, float) and 0.0 <= v <= 1.0 for v in values)
            assert r.components["strict"] <= (r.score == 1.0)


def test_last_value_reads_the_last_top_level_value():
    from parallelbench.scoring.structured import last_value

    assert last_value('a {"x": "}"} b [1, [2]] c') == "[1, [2]]"
    assert last_value('{"x": "\\"}"} tail') == '{"x": "\\"}"}'
    assert last_value('prose "{" then {"a": 1') == '{" then {"a": 1'  # unclosed: runs to the end
    assert last_value("no value") is None and last_value("") is None
    assert last_value("[" * 33 + "]" * 33) is None  # deeper than MAX_DEPTH


def test_paper_mode_is_the_default_scoring():
    from parallelbench.scoring import get_scorer

    for name in ("json_fields", "json_any_order", "tool_call"):
        assert get_scorer(name, "paper") is get_scorer(name, "default")
