"""Every scorer returns scores in [0, 1] for any string: nasty cases and fuzzing."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parallelbench.scoring import Scores, score
from parallelbench.tasks.base import Sample

NAMES = ["Susan Fox", "Philip Gray", "Maria Butler"]
SAMPLES = {
    "list_exact": {"input": NAMES, "expected": NAMES[::-1]},
    "list_shuffle": {"input": NAMES, "must_differ": True},
    "list_replace_random": {"input": NAMES, "word": "Juan Torres"},
    "list_insert_random": {"input": NAMES, "word": "Juan Torres"},
    "list_remove_random": {"input": NAMES},
    "latin_square": {"symbols": ["H", "4", "A", "C"], "size": 4},
    "sudoku": {"puzzle": "0042\n2031\n4023\n3214", "solution": "1342\n2431\n4123\n3214"},
    "summarization": {"source": "Ann: hi!\nBob: hello.", "reference": "Ann and Bob greet each other."},
    "paraphrase": {"source": "Any idea of what sweater this is?", "references": ["Can you identify this sweater?"]},
    "w2s": {"words": ["dog", "park", "ball", "throw"]},
    "cot_answer": {"input": NAMES, "must_differ": True, "base_task": "waiting_line/shuffle",
                   "base_scorer": "list_shuffle", "base_answer": json.dumps(NAMES[::-1])},
    "json_fields": {"n": 3, "fields": [["customer", "Susan Fox"], ["age", 42], ["agent", "Philip Gray"]], "ordered": True},
    "json_any_order": {"n": 3, "fields": [["customer", "Susan Fox"], ["age", 42], ["agent", "Philip Gray"]], "ordered": False},
    "tool_call": {"n": 2, "name": "book_table", "arguments": [["customer", "Susan Fox"], ["party", 42]]},
}
MB = 1_000_000

NASTY = {
    "empty": "",
    "spaces": " \t\r\n ",
    "open": "[",
    "close": "]",
    "reversed": "][",
    "unbalanced": '[["A", "B"',
    "nested": '[["Susan Fox", ["Philip Gray"]], "Maria Butler"]]',
    "prose": 'Sure! Here you go: ["Maria Butler", "Philip Gray", "Susan Fox"] Hope it helps [1].',
    "unicode": "ü日本語🙂\u200b\u202e\u0301 «»“”",
    "control": "\x00\x01\x7f\ufeff",
    "surrogate": "\ud800 lone",
    "crlf_rows": "H,4,A,C\r\n4,C,H,A\r\nC,A,4,H\r\nA,H,C,4\r\n",
    "mb_letters": "a" * MB,
    "mb_words": "the dog runs " * (MB // 13),
    "mb_open": "[" * MB,
    "mb_close": "]" * MB,
    "mb_items": "[" + '"Susan Fox", ' * (MB // 13) + "]",
    "mb_commas": "a," * (MB // 2),
    "mb_rows": "H,4,A,C " * (MB // 8),
    "mb_row_lines": "H,4,A,C\n" * (MB // 8),
    "mb_digits": "1342 " * (MB // 5),
    "mb_digit_lines": "1342\n" * (MB // 5),
    "mb_dashes": "-" * MB,
    "mb_emoji": "🙂" * (MB // 4),
}


def sample(scorer: str) -> Sample:
    return Sample(f"{scorer}/0", scorer, "", [], "", scorer, SAMPLES[scorer])


def check(result: Scores) -> None:
    assert isinstance(result, Scores)
    values = [result.score, *result.components.values()]
    assert all(isinstance(v, float) and math.isfinite(v) and 0.0 <= v <= 1.0 for v in values), result
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in result.meta.items())


@pytest.mark.parametrize("mode", ["default", "paper"])
@pytest.mark.parametrize("name", list(NASTY))
@pytest.mark.parametrize("scorer", list(SAMPLES))
def test_nasty_strings_score_without_error(scorer, name, mode):
    check(score(sample(scorer), NASTY[name], mode=mode))


def test_every_registered_scorer_is_covered():
    from parallelbench.scoring.base import _SCORERS, get_scorer

    get_scorer("list_exact")  # loads the built-in scorers
    built_in = {k for k, fn in _SCORERS.items() if fn.__module__.startswith("parallelbench.")}
    assert built_in == set(SAMPLES)


ANSWERISH = st.text(alphabet=st.sampled_from(list('[]",\' \n0123456789HAC4ABSusanFoxPhilipGray.!é🙂')), max_size=200)
FUZZ = st.one_of(ANSWERISH, st.text(max_size=200))
CHEAP = [k for k in SAMPLES if k not in ("summarization", "paraphrase", "w2s")]


@settings(derandomize=True, max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=FUZZ, scorer=st.sampled_from(CHEAP), mode=st.sampled_from(["default", "paper"]))
def test_fuzz_structured_scorers(text, scorer, mode):
    result = score(sample(scorer), text, mode=mode)
    check(result)
    if mode == "paper" and scorer.startswith("list_"):  # on lists, default accepts no more than the paper's metric
        default = score(sample(scorer), text)
        assert default.score <= result.score and default.components["strict"] <= result.components["strict"]


@settings(derandomize=True, max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=FUZZ, scorer=st.sampled_from(["summarization", "paraphrase", "w2s"]))
def test_fuzz_text_scorers(text, scorer):
    check(score(sample(scorer), text))


@settings(derandomize=True, max_examples=200, deadline=None)
@given(items=st.lists(st.text(alphabet=st.characters(blacklist_characters='[]",', blacklist_categories=("Cs",)), min_size=1, max_size=8).map(str.strip).filter(bool), max_size=6))
def test_strict_form_round_trips_through_both_parses(items):
    """Any list written in the strict form parses back to itself, strictly and leniently."""
    from parallelbench.scoring.parse import parse_list_lenient, parse_list_strict

    items = [" ".join(i.split()) for i in items]
    items = [i for i in items if i]
    if not items:
        return  # "[]" holds no quoted item: not a strict list
    text = "[" + ", ".join(f'"{i}"' for i in items) + "]"
    assert parse_list_strict(text) == items
    assert parse_list_lenient(text) == items
