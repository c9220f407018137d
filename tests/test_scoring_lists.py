"""List parsing (lenient and strict) and the list-task scorers."""

from __future__ import annotations

import itertools

import pytest

from parallelbench.scoring import score
from parallelbench.scoring.parse import list_region, parse_list_lenient, parse_list_strict
from parallelbench.tasks.base import Sample

NAMES = ["Susan Fox", "Philip Gray", "Maria Butler"]


def sample(scorer: str, **data) -> Sample:
    return Sample(id="t/0", task="t", prompt="", messages=[], answer="", scorer=scorer, data=data)


def fmt(items: list[str]) -> str:
    return "[" + ", ".join(f'"{x}"' for x in items) + "]"


# ------------------------------------------------------------------ parsing


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('["Susan Fox", "Philip Gray"]', ["Susan Fox", "Philip Gray"]),
        ("[Susan Fox, Philip Gray]", ["Susan Fox", "Philip Gray"]),
        ("['Susan Fox','Philip Gray']", ["'Susan Fox'", "'Philip Gray'"]),  # only double quotes are stripped
        ("Sure! Here it is:\n[\u201cSusan Fox\u201d]\nDone.", ["\u201cSusan Fox\u201d"]),
        ('First [1, 2] then ["A", "B"] at last', ["A", "B"]),
        ('[["A", "B"]]', ["A", "B"]),
        ('["A",  "B",]', ["A", "B"]),
        ('[  "Susan   Fox" ]', ["Susan   Fox"]),  # inner spaces are kept
        ("[]", []),
        ('["A", "B"', ["A", "B"]),  # no closing bracket: the rest of the output
        ('"A", "B"', ["A", "B"]),  # no brackets at all
        ("no list at all", ["no list at all"]),
        ("] [", []),
        ('[\n  "A",\n  "B"\n]', ['\n  "A', '\n  "B"\n']),  # newlines are not stripped
    ],
)
def test_lenient_parse(text, expected):
    assert parse_list_lenient(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('["Susan Fox", "Philip Gray"]', ["Susan Fox", "Philip Gray"]),
        ('  ["A"]\n', ["A"]),
        ("[]", None),  # nothing inside is not a list of quoted items
        ("[Susan Fox, Philip Gray]", None),  # quotes required
        ('["A","B"]', None),  # separator must be ", "
        ('Answer: ["A", "B"]', ["A", "B"]),  # prose around the brackets does not matter
        ('["A", "B"] ok', ["A", "B"]),
        ('"A", "B"', None),  # brackets required
        ('["A", "B"', None),
        ("['A', 'B']", None),
        ('["A" , "B"]', None),
        ('[" A", "B"]', [" A", "B"]),
        ('["A"B", "C"]', None),
        ('[""]', [""]),
    ],
)
def test_strict_parse(text, expected):
    assert parse_list_strict(text) == expected


def test_list_region_is_after_the_last_open_and_before_the_next_close():
    assert list_region("[a] and [b]") == "b"
    assert list_region("[a] and [b") == "b"
    assert list_region("a] and b]") == "a"
    assert list_region("nothing") == "nothing"


# ------------------------------------------------------------------ exact


def test_exact_match_lenient_and_strict():
    s = sample("list_exact", input=NAMES, expected=list(reversed(NAMES)))
    good = fmt(list(reversed(NAMES)))
    assert score(s, good).components == {"lenient": 1.0, "strict": 1.0}
    prose = "The reversed line is " + good + "."
    assert score(s, prose).components == {"lenient": 1.0, "strict": 1.0}  # strict reads inside the brackets
    bare = good[1:-1]
    result = score(s, bare)
    assert (result.score, result.components["lenient"], result.components["strict"]) == (1.0, 1.0, 0.0)
    assert score(s, fmt(NAMES)).score == 0.0
    assert score(s, fmt(list(reversed(NAMES))[:-1])).score == 0.0


def test_exact_falls_back_to_the_answer_text():
    s = Sample("t/0", "t", "", [], fmt(NAMES), "list_exact", {"input": NAMES})
    assert score(s, fmt(NAMES)).score == 1.0


# ------------------------------------------------------------------ shuffle


def test_shuffle_accepts_every_other_permutation():
    s = sample("list_shuffle", input=NAMES, must_differ=True)
    for perm in itertools.permutations(NAMES):
        expected = 0.0 if list(perm) == NAMES else 1.0
        assert score(s, fmt(list(perm))).score == expected


def test_shuffle_without_must_differ_accepts_identity():
    s = sample("list_shuffle", input=NAMES, must_differ=False)
    assert score(s, fmt(NAMES)).score == 1.0
    assert score(s, fmt(NAMES), mode="paper").score == 0.0  # the paper's metric always needs a new order


@pytest.mark.parametrize(
    "items",
    [
        ["Philip Gray", "Susan Fox"],  # one missing
        ["Philip Gray", "Susan Fox", "Maria Butler", "Maria Butler"],  # duplicate added
        ["Philip Gray", "Susan Fox", "Maria Butler Jr"],
    ],
)
def test_shuffle_rejects_non_permutations(items):
    assert score(sample("list_shuffle", input=NAMES, must_differ=True), fmt(items)).score == 0.0


# ------------------------------------------------------------------ random insert / remove / replace


def test_replace_random_accepts_any_single_position():
    s = sample("list_replace_random", input=NAMES, word="Juan Torres")
    for i in range(len(NAMES)):
        out = list(NAMES)
        out[i] = "Juan Torres"
        assert score(s, fmt(out)).score == 1.0
    assert score(s, fmt(NAMES)).score == 0.0
    assert score(s, fmt(["Juan Torres", "Juan Torres", "Maria Butler"])).score == 0.0
    assert score(s, fmt(["Other Person", "Philip Gray", "Maria Butler"])).score == 0.0
    assert score(s, fmt(["Juan Torres"] + NAMES[1:] + ["Extra"])).score == 0.0


def test_insert_random_accepts_all_n_plus_one_positions():
    s = sample("list_insert_random", input=NAMES, word="Justin McDonald")
    for i in range(len(NAMES) + 1):
        out = NAMES[:i] + ["Justin McDonald"] + NAMES[i:]
        assert score(s, fmt(out)).components == {"lenient": 1.0, "strict": 1.0}
    assert score(s, fmt(NAMES + ["Someone Else"])).score == 0.0
    assert score(s, fmt(["Justin McDonald"] + NAMES[::-1])).score == 0.0
    assert score(s, fmt(NAMES)).score == 0.0


def test_remove_random_accepts_any_one_removal():
    s = sample("list_remove_random", input=NAMES)
    for i in range(len(NAMES)):
        assert score(s, fmt(NAMES[:i] + NAMES[i + 1 :])).score == 1.0
    assert score(s, fmt(NAMES)).score == 0.0
    assert score(s, fmt(NAMES[:1])).score == 0.0
    assert score(s, fmt([NAMES[1], NAMES[0]])).score == 0.0


def test_synthetic_letters_and_numbers_in_data():
    s = sample("list_exact", input=[1, 2], expected=[2, 1])
    assert score(s, '["2", "1"]').score == 1.0
    assert score(s, "[2, 1]").components == {"lenient": 1.0, "strict": 0.0}


# ------------------------------------------------------------------ the original release's answers

from release_files import RELEASE, missing  # noqa: E402  (the release's files: where, and how to get them)
RANDOM_OPS = {
    "shuffle": "list_shuffle",
    "insert_random": "list_insert_random",
    "remove_random": "list_remove_random",
    "replace_random": "list_replace_random",
}


@pytest.mark.parametrize("op", ["copy", "reverse", "insert_index", "remove_index", "replace_index", *RANDOM_OPS])
def test_release_answers_score_as_correct(op):
    """The release's reference answers pass both parses (exact tasks) or the validity checks."""
    import json

    path = RELEASE / "waiting_line" / f"{op}.jsonl"
    if not path.exists():
        pytest.skip(missing(path))
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    assert len(lines) == 100
    for line in lines:
        answer = line["answer"]
        if op in RANDOM_OPS:
            data = {"input": answer["input"], "word": answer.get("word"), "must_differ": True}
            s = sample(RANDOM_OPS[op], **{k: v for k, v in data.items() if v is not None})
            text = answer["example"]
        else:
            s = sample("list_exact", input=json.loads(line["input"]["context"]), expected=json.loads(answer))
            text = answer
        assert score(s, text).components == {"lenient": 1.0, "strict": 1.0}, (op, text)
