"""Answer forms of every list and puzzle family and of W2S inclusion, with their scores in both modes.

Each row: a form a model may write, and the (lenient, strict) scores it gets in ``default``
and in ``paper`` mode. The paper-mode values are the behaviour of the authors' own metric
code; `test_paper_values_are_the_reference_metrics` checks them against that code when
``PARALLELBENCH_AUTHORS_REPO`` names a checkout of github.com/furiosa-ai/ParallelBench
(`benchmarks/compare_reference_metrics.py` compares every release sample the same way).
Default differs from paper only in the classes docs/scoring.md lists: sort by last name,
Latin square rows with a repeated extra cell (and, outside these tables, shuffles allowed
to keep the order and random-position answers over repeated items). A grid written on one
line scores 0 in both modes: our tasks write grids one row per line, as the release does.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from parallelbench.scoring import SCORING_MODES, score
from parallelbench.tasks.base import Sample

NAMES = ["Billy Ramos", "Alan Wells", "Susan Fox"]
Q = ", ".join(f'"{n}"' for n in NAMES)  # "Billy Ramos", "Alan Wells", "Susan Fox"
CANON = f"[{Q}]"
WRONG = "[" + ", ".join(f'"{n}"' for n in reversed(NAMES)) + "]"


def _sample(scorer: str, data: dict, task: str = "waiting_line/copy") -> Sample:
    return Sample(f"{task}/0", task, "", [], "", scorer, data)


def copy_sample() -> Sample:
    return _sample("list_exact", {"input": NAMES, "expected": NAMES})


# (form, output, default (lenient, strict), paper (lenient, strict))
LIST_FORMS = [
    ("canonical", CANON, (1, 1), (1, 1)),
    ("trailing prose", CANON + " I hope this helps!", (1, 1), (1, 1)),
    ("leading prose", "Sure! Here is the final list: " + CANON, (1, 1), (1, 1)),
    ("code fence", "```json\n" + CANON + "\n```", (1, 1), (1, 1)),
    ("answer twice", CANON + "\n" + CANON, (1, 1), (1, 1)),
    ("wrong then right", WRONG + "\nCorrection: " + CANON, (1, 1), (1, 1)),
    ("right then wrong", CANON + "\nor maybe " + WRONG, (0, 0), (0, 0)),
    ("bracketless, quoted", Q, (1, 0), (1, 0)),
    ("bracketless, bare", ", ".join(NAMES), (1, 0), (1, 0)),
    ("unquoted in brackets", "[" + ", ".join(NAMES) + "]", (1, 0), (1, 0)),
    ("single quotes", "[" + ", ".join(f"'{n}'" for n in NAMES) + "]", (0, 0), (0, 0)),
    ("curly quotes", "[" + ", ".join(f"\u201c{n}\u201d" for n in NAMES) + "]", (0, 0), (0, 0)),
    ("no space after commas", "[" + ",".join(f'"{n}"' for n in NAMES) + "]", (1, 0), (1, 0)),
    ("space before commas", "[" + " , ".join(f'"{n}"' for n in NAMES) + "]", (1, 0), (1, 0)),
    ("semicolon separators", "[" + "; ".join(f'"{n}"' for n in NAMES) + "]", (0, 0), (0, 0)),
    ("one item per line", "[\n" + ",\n".join(f'"{n}"' for n in NAMES) + "\n]", (0, 0), (0, 0)),
    ("tab inside names", "[" + ", ".join(f'"{n.replace(" ", chr(9))}"' for n in NAMES) + "]", (0, 0), (0, 0)),
    ("doubled space inside names", "[" + ", ".join(f'"{n.replace(" ", "  ")}"' for n in NAMES) + "]", (0, 0), (0, 0)),
    ("spaces inside the quotes", "[" + ", ".join(f'" {n} "' for n in NAMES) + "]", (1, 0), (1, 0)),
    ("spaces inside the brackets", "[ " + Q + " ]", (1, 0), (1, 0)),
    ("trailing comma", "[" + Q + ",]", (1, 0), (1, 0)),
    ("lower case", CANON.lower(), (0, 0), (0, 0)),
    ("upper case", CANON.upper(), (0, 0), (0, 0)),
    ("missing closing bracket", "[" + Q, (1, 0), (1, 0)),
    ("missing opening bracket", Q + "]", (1, 0), (1, 0)),
    ("nested brackets", "[" + CANON + "]", (1, 1), (1, 1)),
    ("bullet list", "\n".join(f"- {n}" for n in NAMES), (0, 0), (0, 0)),
    ("sentence with a full stop", "The answer is " + CANON + ".", (1, 1), (1, 1)),
    ("inline code", "`" + CANON + "`", (1, 1), (1, 1)),
    ("CRLF line end", CANON + "\r\n", (1, 1), (1, 1)),
    ('trailing "Solved in 1234 ms."', CANON + "\nSolved in 1234 ms.", (1, 1), (1, 1)),
    ("brackets in trailing prose", CANON + " (sorted [as asked])", (0, 0), (0, 0)),
    ("wrong order", WRONG, (0, 0), (0, 0)),
    ("missing item", "[" + ", ".join(f'"{n}"' for n in NAMES[:2]) + "]", (0, 0), (0, 0)),
    ("extra item", "[" + Q + ', "Billy Ramos"]', (0, 0), (0, 0)),
    ("empty brackets", "[]", (0, 0), (0, 0)),
    ("empty output", "", (0, 0), (0, 0)),
    ("NUL bytes", "\x00" * 10, (0, 0), (0, 0)),
]

# Sort: the prompt asks for last names; the paper's reference is sorted by the whole string.
BY_LAST = ["Susan Fox", "Billy Ramos", "Alan Wells"]
BY_FIRST = ["Alan Wells", "Billy Ramos", "Susan Fox"]


def sort_sample() -> Sample:
    return _sample("list_exact", {"input": NAMES, "expected": BY_LAST}, task="waiting_line/sort")


def _list(items: list[str]) -> str:
    return json.dumps(items)


SORT_FORMS = [
    ("by last name", _list(BY_LAST), (1, 1), (0, 0)),
    ("by last name, prose", "Sorted: " + _list(BY_LAST) + " Done.", (1, 1), (0, 0)),
    ("by last name, bracketless", _list(BY_LAST)[1:-1], (1, 0), (0, 0)),
    ("by first name", _list(BY_FIRST), (0, 0), (1, 1)),
    ("by first name, prose", "Sorted: " + _list(BY_FIRST) + " Done.", (0, 0), (1, 1)),
    ("unsorted", _list(NAMES), (0, 0), (0, 0)),
]

# Random-position operations, and shuffle with and without its "must differ" rule.
WORD = "Juan Torres"
RANDOM_FORMS = [
    ("shuffle: a new order", "list_shuffle", {"input": NAMES, "must_differ": True}, _list(NAMES[::-1]), (1, 1), (1, 1)),
    ("shuffle: the input order", "list_shuffle", {"input": NAMES, "must_differ": True}, _list(NAMES), (0, 0), (0, 0)),
    ("shuffle: bracketless", "list_shuffle", {"input": NAMES, "must_differ": True}, _list(NAMES[::-1])[1:-1], (1, 0), (1, 0)),
    ("synthetic shuffle: the input order", "list_shuffle", {"input": ["A", "B", "C"], "must_differ": False},
     _list(["A", "B", "C"]), (1, 1), (0, 0)),
    ("insert: any position", "list_insert_random", {"input": NAMES, "word": WORD},
     _list([NAMES[0], WORD, *NAMES[1:]]), (1, 1), (1, 1)),
    ("insert: word missing", "list_insert_random", {"input": NAMES, "word": WORD}, _list(NAMES), (0, 0), (0, 0)),
    ("insert: single quotes", "list_insert_random", {"input": NAMES, "word": WORD},
     str([WORD, *NAMES]), (0, 0), (0, 0)),
    ("remove: any one", "list_remove_random", {"input": NAMES}, _list(NAMES[1:]), (1, 1), (1, 1)),
    ("remove: reordered", "list_remove_random", {"input": NAMES}, _list(NAMES[:0:-1]), (0, 0), (0, 0)),
    ("replace: any one", "list_replace_random", {"input": NAMES, "word": WORD},
     _list([NAMES[0], WORD, NAMES[2]]), (1, 1), (1, 1)),
    ("replace: two replaced", "list_replace_random", {"input": NAMES, "word": WORD},
     _list([WORD, WORD, NAMES[2]]), (0, 0), (0, 0)),
]

# Latin square over H, 4, A, C.
SYMBOLS = ["H", "4", "A", "C"]
ROWS = [["H", "4", "A", "C"], ["4", "C", "H", "A"], ["C", "A", "4", "H"], ["A", "H", "C", "4"]]
LINES = [",".join(r) for r in ROWS]
NL = "\n".join(LINES)


def latin_sample() -> Sample:
    return _sample("latin_square", {"symbols": SYMBOLS, "size": 4}, task="puzzle/latin_square")


# (form, output, default score, paper score); strict equals the headline in both modes
LATIN_FORMS = [
    ("rows on lines", NL, 1, 1),
    ("one line, rows separated by spaces", " ".join(LINES), 0, 0),
    ("one line, doubled spaces", "  ".join(LINES), 0, 0),
    ("one line, twice", " ".join(LINES) + "\n" + " ".join(LINES), 0, 0),
    ("one line after prose on the same line", "Answer: " + " ".join(LINES), 0, 0),
    ("spaces after commas", "\n".join(", ".join(r) for r in ROWS), 1, 1),
    ("spaces around commas", "\n".join(" , ".join(r) for r in ROWS), 1, 1),
    ("tabs after commas", "\n".join(",\t".join(r) for r in ROWS), 1, 1),
    ("cells separated by spaces", "\n".join(" ".join(r) for r in ROWS), 0, 0),
    ("concatenated cells", "\n".join("".join(r) for r in ROWS), 0, 0),
    ("prose before", "Here is a Latin square:\n" + NL, 1, 1),
    ("prose between rows", "\n".join(f"Row {i + 1}:\n{x}" for i, x in enumerate(LINES)), 1, 1),
    ("prose after", NL + "\nEach symbol appears once per row and column.", 1, 1),
    ("code fence", "```csv\n" + NL + "\n```", 1, 1),
    ("answer twice", NL + "\n\n" + NL, 1, 1),
    ("extra valid row after the square", NL + "\n" + LINES[0], 1, 1),
    ("fifth repeated cell in one row", "\n".join([LINES[0] + ",H", *LINES[1:]]), 0, 1),
    ("fifth repeated cell in every row", "\n".join(x + "," + r[0] for x, r in zip(LINES, ROWS)), 0, 1),
    ("repeated row", "\n".join([LINES[0], LINES[0], *LINES[2:]]), 0, 0),
    ("column repeat", "\n".join([LINES[0], LINES[1], LINES[3], LINES[2]][:2] + ["C,A,H,4", "A,H,4,C"]), 0, 0),
    ("lower case", NL.lower(), 0, 0),
    ("CRLF line ends", "\r\n".join(LINES), 1, 1),
    ("blank lines between rows", "\n\n".join(LINES), 1, 1),
    ("indented rows", "\n".join("  " + x for x in LINES), 1, 1),
    ("trailing comma on each row", "\n".join(x + "," for x in LINES), 0, 0),
    ("quoted cells", "\n".join(",".join(f'"{c}"' for c in r) for r in ROWS), 0, 0),
    ("bracketed rows", "\n".join("[" + ", ".join(r) + "]" for r in ROWS), 0, 0),
    ("markdown table", "\n".join("| " + " | ".join(r) + " |" for r in ROWS), 0, 0),
    ("rows separated by semicolons", "; ".join(LINES), 0, 0),
    ("full-width commas", "\n".join("\uff0c".join(r) for r in ROWS), 0, 0),
    ("three rows", "\n".join(LINES[:3]), 0, 0),
    ('trailing "Solved in 1234 ms."', NL + "\nSolved in 1234 ms.", 1, 1),
    ("wrong symbol", NL.replace("C", "B"), 0, 0),
    ("empty output", "", 0, 0),
]

# Sudoku: the puzzle and its unique solution.
PUZZLE = ["0042", "2031", "4023", "3214"]
SOLUTION = ["1342", "2431", "4123", "3214"]
SNL = "\n".join(SOLUTION)


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if c.isdigit() else c for c in text)


def sudoku_sample() -> Sample:
    return _sample("sudoku", {"puzzle": "\n".join(PUZZLE), "solution": SNL}, task="puzzle/sudoku")


# (form, output, default (lenient, strict), paper (lenient, strict))
SUDOKU_FORMS = [
    ("rows on lines", SNL, (1, 1), (1, 1)),
    ("one line", " ".join(SOLUTION), (0, 0), (0, 0)),
    ("one line, doubled spaces", "  ".join(SOLUTION), (0, 0), (0, 0)),
    ("one line, full-width digits", _fullwidth(" ".join(SOLUTION)), (0, 0), (0, 0)),
    ("one line, comma separated", ", ".join(SOLUTION), (0, 0), (0, 0)),
    ("one line, twice", " ".join(SOLUTION + SOLUTION), (0, 0), (0, 0)),
    ('one line, then "Solved in 1234 ms."', " ".join(SOLUTION) + "\nSolved in 1234 ms.", (0, 0), (0, 0)),
    ("spaces between digits", "\n".join(" ".join(r) for r in SOLUTION), (1, 0), (1, 0)),
    ("commas between digits", "\n".join(",".join(r) for r in SOLUTION), (1, 0), (1, 0)),
    ("tabs between digits", "\n".join("\t".join(r) for r in SOLUTION), (1, 0), (1, 0)),
    ("pipes", "\n".join("|" + "|".join(r) + "|" for r in SOLUTION), (1, 0), (1, 0)),
    ("boxes split by a space", "\n".join(r[:2] + " " + r[2:] for r in SOLUTION), (1, 0), (1, 0)),
    ("letters between digits", "\n".join(r[:2] + "x" + r[2:] for r in SOLUTION), (1, 0), (1, 0)),
    ("trailing full stops", "\n".join(r + "." for r in SOLUTION), (1, 0), (1, 0)),
    ("prose before", "Output:\n" + SNL, (1, 0), (1, 0)),
    ("prose after, no digits", SNL + "\nDone!", (1, 0), (1, 0)),
    ('trailing "Solved in 1234 ms."', SNL + "\nSolved in 1234 ms.", (0, 0), (0, 0)),
    ("row labels with numbers", "\n".join(f"Row {i + 1}: {r}" for i, r in enumerate(SOLUTION)), (0, 0), (0, 0)),
    ("code fence", "```\n" + SNL + "\n```", (1, 0), (1, 0)),
    ("answer twice", SNL + "\n\n" + SNL, (0, 0), (0, 0)),
    ("extra fifth row", SNL + "\n" + SOLUTION[0], (0, 0), (0, 0)),
    ("puzzle echoed first", "\n".join(PUZZLE) + "\n" + SNL, (0, 0), (0, 0)),
    ("full-width digits", _fullwidth(SNL), (1, 1), (1, 1)),
    ("Arabic-Indic digits", "".join(chr(0x0660 + int(c)) if c.isdigit() else c for c in SNL), (1, 1), (1, 1)),
    ("superscript digits", SNL.translate(str.maketrans("1234", "\u00b9\u00b2\u00b3\u2074")), (0, 0), (0, 0)),
    ("CRLF line ends", "\r\n".join(SOLUTION), (1, 1), (1, 1)),
    ("blank lines between rows", "\n\n".join(SOLUTION), (1, 1), (1, 1)),
    ("indented rows", "\n".join("  " + r for r in SOLUTION), (1, 1), (1, 1)),
    ("Python list on one line", str([[int(c) for c in r] for r in SOLUTION]), (0, 0), (0, 0)),
    ("JSON row per line", "\n".join(str([int(c) for c in r]) + "," for r in SOLUTION), (1, 0), (1, 0)),
    ("wrong digit", "\n".join(SOLUTION[:3] + ["3241"]), (0, 0), (0, 0)),
    ("three rows", "\n".join(SOLUTION[:3]), (0, 0), (0, 0)),
    ("empty output", "", (0, 0), (0, 0)),
]

# Words-to-Sentence inclusion: the paper's case-sensitive substring test (both modes) and
# the whole-word, any-case test kept as `inclusion_word`.
WORDS = ["dog", "park", "ball", "throw"]


def w2s_sample() -> Sample:
    return _sample("w2s", {"words": WORDS}, task="text_writing/w2s_easy")


# (form, output, inclusion, inclusion_word)
W2S_FORMS = [
    ("plain sentence", "I throw the ball for my dog at the park.", 1, 1),
    ("capitalised first word", "Dog owners throw a ball in the park.", 0, 1),
    ("every word capitalised", "Dog Park Ball Throw.", 0, 1),
    ("upper case", "DOG PARK BALL THROW.", 0, 1),
    ("plurals", "The dogs chased balls while we throw them in parks.", 1, 0),
    ("-ing form", "My dog was throwing a ball in the park.", 1, 0),
    ("past tense", "I threw the ball for my dog at the park.", 0, 0),
    ("inside longer words", "A hotdog at the ballpark, thrown.", 1, 0),
    ("inside longer words, one missing", "A hotdog at the ballpark, threw.", 0, 0),
    ("missing a word", "I throw the ball for my dog.", 0, 0),
    ("hyphenated", "The dog-park ball-throw.", 1, 1),
    ("underscore joined", "dog_park_ball_throw", 1, 0),
    ("no spaces", "dogparkballthrow", 1, 0),
    ("quoted words", '"dog" "park" "ball" "throw".', 1, 1),
    ("one word per line", "dog\npark\nball\nthrow", 1, 1),
    ("leading spaces", "   dog park ball throw", 1, 1),
    ("trailing prose", "dog park ball throw. I hope this helps!", 1, 1),
    ("possessives", "The dog's park ball's throw.", 1, 1),
    ("Cyrillic look-alike a", "dog p\u0430rk b\u0430ll throw.", 0, 0),
    ("full-width letters", "\uff44\uff4f\uff47 park ball throw.", 0, 0),
    ("spaced letters", "d o g p a r k b a l l t h r o w.", 0, 0),
    ("reversed letters", "god krap llab worht.", 0, 0),
    ("truncated word", "dog park ball thro.", 0, 0),
    ("JSON list", json.dumps(WORDS), 1, 1),
    ("comma list", "dog, park, ball, throw", 1, 1),
    ("title case sentence", "I Throw The Ball For My Dog At The Park.", 0, 1),
    ("shouted first word", "DOG park ball throw.", 0, 1),
    ("words repeated", "dog dog park park ball ball throw throw.", 1, 1),
    ("empty output", "", 0, 0),
    ("NUL bytes around the words", "\x00dog\x00park\x00ball\x00throw\x00", 1, 1),
]


def _pair(result) -> tuple[float, float]:
    return result.components["lenient"], result.components["strict"]


@pytest.mark.parametrize("mode", SCORING_MODES)
@pytest.mark.parametrize(("form", "text", "default", "paper"), LIST_FORMS, ids=[f[0] for f in LIST_FORMS])
def test_list_forms(form, text, default, paper, mode):
    result = score(copy_sample(), text, mode=mode)
    expected = default if mode == "default" else paper
    assert _pair(result) == expected and result.score == expected[0]


@pytest.mark.parametrize("mode", SCORING_MODES)
@pytest.mark.parametrize(("form", "text", "default", "paper"), SORT_FORMS, ids=[f[0] for f in SORT_FORMS])
def test_sort_forms(form, text, default, paper, mode):
    assert _pair(score(sort_sample(), text, mode=mode)) == (default if mode == "default" else paper)


@pytest.mark.parametrize("mode", SCORING_MODES)
@pytest.mark.parametrize(("form", "scorer", "data", "text", "default", "paper"), RANDOM_FORMS,
                         ids=[f[0] for f in RANDOM_FORMS])
def test_random_position_forms(form, scorer, data, text, default, paper, mode):
    result = score(_sample(scorer, data, task=f"waiting_line/{scorer}"), text, mode=mode)
    assert _pair(result) == (default if mode == "default" else paper)


@pytest.mark.parametrize("mode", SCORING_MODES)
@pytest.mark.parametrize(("form", "text", "default", "paper"), LATIN_FORMS, ids=[f[0] for f in LATIN_FORMS])
def test_latin_square_forms(form, text, default, paper, mode):
    expected = default if mode == "default" else paper
    assert _pair(score(latin_sample(), text, mode=mode)) == (expected, expected)


@pytest.mark.parametrize("mode", SCORING_MODES)
@pytest.mark.parametrize(("form", "text", "default", "paper"), SUDOKU_FORMS, ids=[f[0] for f in SUDOKU_FORMS])
def test_sudoku_forms(form, text, default, paper, mode):
    result = score(sudoku_sample(), text, mode=mode)
    expected = default if mode == "default" else paper
    assert _pair(result) == expected and result.score == expected[0]


@pytest.mark.parametrize("mode", SCORING_MODES)
@pytest.mark.parametrize(("form", "text", "inclusion", "inclusion_word"), W2S_FORMS, ids=[f[0] for f in W2S_FORMS])
def test_w2s_inclusion_forms(form, text, inclusion, inclusion_word, mode):
    result = score(w2s_sample(), text, mode=mode)
    c = result.components
    assert (c["inclusion"], c["inclusion_word"]) == (inclusion, inclusion_word)
    sentence = c["sentence"] if mode == "default" else 1.0  # paper: the release's inclusion x grammar
    assert result.score == c["inclusion"] * c["grammar"] * sentence


def test_every_family_has_at_least_thirty_forms():
    assert min(len(LIST_FORMS), len(LATIN_FORMS), len(SUDOKU_FORMS), len(W2S_FORMS)) >= 30


def test_unknown_mode_is_one_line_naming_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown scoring mode 'strict'; valid: default, paper"):
        score(copy_sample(), CANON, mode="strict")


# ---- against the authors' own metric code (opt-in) ----------------------------------------

AUTHORS = os.environ.get("PARALLELBENCH_AUTHORS_REPO")


def _reference():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "compare_reference_metrics.py"
    spec = importlib.util.spec_from_file_location("compare_reference_metrics", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not AUTHORS, reason="set PARALLELBENCH_AUTHORS_REPO to a checkout of furiosa-ai/ParallelBench")
def test_paper_values_are_the_reference_metrics():
    """Every paper-mode value in the tables above is what the authors' metric functions return."""
    bench = _reference()
    fns = bench.metric_map(bench.load_reference(AUTHORS))

    def ref(name, text, truth):
        fn = fns[name]
        return bench.reference_scores(fn, text, truth)

    for form, text, _, paper in LIST_FORMS:
        r = ref("list_match_score", text, json.dumps(NAMES))
        assert (r["score"], r["score_strict"]) == paper, form
    for form, text, _, paper in SORT_FORMS:
        r = ref("list_match_score", text, json.dumps(BY_FIRST))  # the release's sort reference
        assert (r["score"], r["score_strict"]) == paper, form
    metric_of = {"list_shuffle": "list_shuffle_score", "list_insert_random": "list_random_insert_score",
                 "list_remove_random": "list_random_remove_score", "list_replace_random": "list_random_replace_score"}
    for form, scorer, data, text, _, paper in RANDOM_FORMS:
        r = ref(metric_of[scorer], text, {k: v for k, v in data.items() if k != "must_differ"})
        assert (r["score"], r["score_strict"]) == paper, form
    for form, text, _, paper in LATIN_FORMS:
        r = ref("latin_square_score", text, {"symbols": SYMBOLS, "example": NL})
        assert (r["score"], r.get("score_strict", r["score"])) == (paper, paper), form
    for form, text, _, paper in SUDOKU_FORMS:
        r = ref("sudoku_score", text, SNL)
        assert (r["score"], r["score_strict"]) == paper, form
    for form, text, inclusion, _ in W2S_FORMS:
        assert ref("sentence_to_words_score", text, {"words": WORDS})["inclusion_score"] == inclusion, form


def test_a_scorer_without_a_paper_variant_scores_the_same_in_both_modes():
    from parallelbench.scoring import Scores, get_scorer, register_scorer

    @register_scorer("issue26_user_scorer")
    def user(sample, output):
        return Scores(float(output == "yes"), {"match": float(output == "yes")})

    sample = _sample("issue26_user_scorer", {})
    assert get_scorer("issue26_user_scorer", "paper") is get_scorer("issue26_user_scorer")  # (behind the user guard)
    assert score(sample, "yes", mode="paper").score == score(sample, "yes").score == 1.0
