"""Scorers of the list tasks (Waiting Line and synthetic list operations).

Each task reports ``lenient`` (the headline: the list read from the last ``[...]`` of the
output, or from the whole output without brackets) and ``strict`` (the last ``[...]`` holds
exactly ``"A B", "C D"``); both readings are the paper metric's (`parse.py`).

Two modes (`base.SCORING_MODES`):

- ``default`` accepts exactly the answers the paper's metric accepts that are valid
  solutions of the prompt as written: sort is by last name, as the prompt asks, and a
  task with several correct answers (shuffle, insert / remove / replace at a random
  position) checks membership in the set of valid answers.
- ``paper`` reproduces the paper's metric, including its sort reference sorted by the
  whole "First Last" string and its checks of the random-position operations.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Callable

from parallelbench.scoring.base import Scores, register_scorer
from parallelbench.scoring.parse import parse_list_lenient, parse_list_strict

if TYPE_CHECKING:
    from parallelbench.tasks.base import Sample

Check = Callable[[list[str]], bool]


def _items(value) -> list[str]:
    """A data list as strings (generators store names; imported files may store numbers)."""
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else []


def _expected(sample: "Sample") -> list[str]:
    data = sample.data or {}
    if "expected" in data:
        return _items(data["expected"])
    return parse_list_lenient(sample.answer or "") or []


def _operation(sample: "Sample") -> str:
    """`waiting_line/sort` or `waiting_line/sort-cot` -> `sort`."""
    return str(sample.task or "").rsplit("/", 1)[-1].split("-", 1)[0]


def paper_expected(sample: "Sample") -> list[str]:
    """The list the paper's metric compares against: the release's own reference text when the
    sample came from the release; for sort, the input sorted by the whole "First Last"
    string (how the release built its references, though the prompt asks for the last name)."""
    data = sample.data or {}
    release = data.get("release_answer")
    if isinstance(release, str):
        return parse_list_lenient(release) or []
    if _operation(sample) == "sort" and isinstance(data.get("input"), (list, tuple)):
        return sorted(_items(data["input"]))
    return _expected(sample)


# ---- default mode: valid solutions --------------------------------------------------


def is_exact(out: list[str], expected: list[str]) -> bool:
    return out == expected


def is_shuffle(out: list[str], original: list[str], must_differ: bool) -> bool:
    """A permutation of the original (same multiset), different from it when required."""
    if len(out) != len(original) or Counter(out) != Counter(original):
        return False
    return not (must_differ and out == original)


def is_replaced(out: list[str], original: list[str], word: str) -> bool:
    """Same length, exactly one position changed, and that position now holds `word`."""
    if len(out) != len(original):
        return False
    changed = [i for i, (a, b) in enumerate(zip(out, original)) if a != b]
    return len(changed) == 1 and out[changed[0]] == word


def is_inserted(out: list[str], original: list[str], word: str) -> bool:
    """`word` inserted into the original at any of its n + 1 positions."""
    if len(out) != len(original) + 1:
        return False
    return any(out[i] == word and out[:i] + out[i + 1 :] == original for i in range(len(out)))


def is_removed(out: list[str], original: list[str]) -> bool:
    """The original with exactly one item removed (any one)."""
    if len(out) != len(original) - 1:
        return False
    return any(original[:i] + original[i + 1 :] == out for i in range(len(original)))


# ---- paper mode: the paper metric's checks ------------------------------------------
# They agree with the checks above whenever the input has no repeated item and the new
# word is not already in it (true of every built-in and release sample).


def paper_shuffle(out: list[str], original: list[str]) -> bool:
    """Same sorted items and not the input order (the input order never counts)."""
    return sorted(out) == sorted(original) and out != original


def paper_inserted(out: list[str], original: list[str], word: str) -> bool:
    """The output with the first `word` taken out is the input."""
    if word not in out:
        return False
    rest = list(out)
    rest.remove(word)
    return rest == original


def paper_removed(out: list[str], original: list[str]) -> bool:
    """One item shorter, exactly one distinct input item missing, and the input without the
    first occurrence of that item is the output."""
    if len(out) != len(original) - 1:
        return False
    missing = set(original) - set(out)
    if len(missing) != 1:
        return False
    rest = list(original)
    rest.remove(missing.pop())
    return rest == out


def paper_replaced(out: list[str], original: list[str], word: str) -> bool:
    """Same length, and the input with `word` put where it first occurs in the output is the output."""
    if len(out) != len(original) or word not in out:
        return False
    expected = list(original)
    expected[out.index(word)] = word
    return expected == out


# ---- scorers ------------------------------------------------------------------------


def _score_both(output: str, check: Check) -> Scores:
    output = output if isinstance(output, str) else ""
    lenient = float(check(parse_list_lenient(output) or []))
    strict_items = parse_list_strict(output)
    strict = float(strict_items is not None and check(strict_items))
    return Scores(score=lenient, components={"lenient": lenient, "strict": strict})


def _input_and_word(sample: "Sample") -> tuple[list[str], str]:
    data = sample.data or {}
    return _items(data.get("input")), str(data.get("word", ""))


@register_scorer("list_exact")
def score_list_exact(sample: "Sample", output: str) -> Scores:
    """Deterministic list tasks: the output list equals ``data["expected"]``."""
    expected = _expected(sample)
    return _score_both(output, lambda out: is_exact(out, expected))


@register_scorer("list_exact", mode="paper")
def score_list_exact_paper(sample: "Sample", output: str) -> Scores:
    """The output list equals the paper metric's reference (`paper_expected`)."""
    expected = paper_expected(sample)
    return _score_both(output, lambda out: is_exact(out, expected))


@register_scorer("list_shuffle")
def score_list_shuffle(sample: "Sample", output: str) -> Scores:
    """A permutation of ``data["input"]``, different from it when ``data["must_differ"]``."""
    original, _ = _input_and_word(sample)
    must_differ = bool((sample.data or {}).get("must_differ", True))
    return _score_both(output, lambda out: is_shuffle(out, original, must_differ))


@register_scorer("list_shuffle", mode="paper")
def score_list_shuffle_paper(sample: "Sample", output: str) -> Scores:
    original, _ = _input_and_word(sample)
    return _score_both(output, lambda out: paper_shuffle(out, original))


@register_scorer("list_replace_random")
def score_list_replace_random(sample: "Sample", output: str) -> Scores:
    """One item of ``data["input"]``, any one, replaced by ``data["word"]``."""
    original, word = _input_and_word(sample)
    return _score_both(output, lambda out: is_replaced(out, original, word))


@register_scorer("list_replace_random", mode="paper")
def score_list_replace_random_paper(sample: "Sample", output: str) -> Scores:
    original, word = _input_and_word(sample)
    return _score_both(output, lambda out: paper_replaced(out, original, word))


@register_scorer("list_insert_random")
def score_list_insert_random(sample: "Sample", output: str) -> Scores:
    """``data["word"]`` inserted into ``data["input"]`` at any position."""
    original, word = _input_and_word(sample)
    return _score_both(output, lambda out: is_inserted(out, original, word))


@register_scorer("list_insert_random", mode="paper")
def score_list_insert_random_paper(sample: "Sample", output: str) -> Scores:
    original, word = _input_and_word(sample)
    return _score_both(output, lambda out: paper_inserted(out, original, word))


@register_scorer("list_remove_random")
def score_list_remove_random(sample: "Sample", output: str) -> Scores:
    """``data["input"]`` with exactly one item, any one, removed."""
    original, _ = _input_and_word(sample)
    return _score_both(output, lambda out: is_removed(out, original))


@register_scorer("list_remove_random", mode="paper")
def score_list_remove_random_paper(sample: "Sample", output: str) -> Scores:
    original, _ = _input_and_word(sample)
    return _score_both(output, lambda out: paper_removed(out, original))
