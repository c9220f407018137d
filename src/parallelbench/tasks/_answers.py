"""The finite set of correct answers of a sample, derived from its scorer and data alone.

Deriving answers from `sample.data` (not from a task object) means samples of
unregistered variants and imported release samples get their answers too.
"""

from __future__ import annotations

import json
import math
from itertools import permutations

from parallelbench.tasks._common import format_list
from parallelbench.tasks._grids import latin_squares, latin_text, parse_sudoku, sudoku_text
from parallelbench.tasks._records import STRUCTURED_SCORERS, answer_texts, count_answers
from parallelbench.tasks.base import Sample

# Above this many answers enumeration is refused (None). Shuffle of n items has n! answers:
# n = 9 gives 362,880 (listed; about 1 s and 30 MB per sample), n = 10 gives 3.6 million
# and n = 15 1.3e12 (not listed). `count_valid_answers` still gives the size.
ENUMERATION_LIMIT = 400_000


def count_valid_answers(sample: Sample) -> int | None:
    """How many correct answers the sample has, without listing them (None: unknown)."""
    d, s = sample.data, sample.scorer
    if s in ("list_exact", "sudoku"):
        return 1
    if s == "list_shuffle":
        n = len(d["input"])
        return math.factorial(n) - (1 if d.get("must_differ") else 0)
    if s == "list_insert_random":
        return len(d["input"]) + 1
    if s in ("list_remove_random", "list_replace_random"):
        return len(d["input"])
    if s == "latin_square":
        size = int(d.get("size", len(d["symbols"])))
        return len(latin_squares(size)) if size <= 5 else None
    if s in STRUCTURED_SCORERS:
        return count_answers(s, d)
    return None


def valid_answers_from_data(sample: Sample) -> list[str] | None:
    """Every correct answer text, or None when not enumerable or over `ENUMERATION_LIMIT`.

    Orders are deterministic (lexicographic over positions), duplicates removed
    (e.g. remove_random on a list with a repeated item).
    """
    count = count_valid_answers(sample)
    if count is None or count > ENUMERATION_LIMIT:
        return None
    d, s = sample.data, sample.scorer
    if s in STRUCTURED_SCORERS:
        return answer_texts(s, d)
    if s == "list_exact":
        return [format_list(d["expected"])]
    if s == "sudoku":
        return [sudoku_text(parse_sudoku(d["solution"]))]
    items = list(d.get("input", []))
    if s == "list_shuffle":
        quoted = [json.dumps(x, ensure_ascii=False) for x in items]  # quote once, join n! times
        texts = _unique("[" + ", ".join(p) + "]" for p in permutations(quoted))
        if d.get("must_differ"):
            identity = format_list(items)
            texts = [t for t in texts if t != identity]
        return texts
    if s == "list_insert_random":
        return _unique(format_list(items[:i] + [d["word"]] + items[i:]) for i in range(len(items) + 1))
    if s == "list_remove_random":
        return _unique(format_list(items[:i] + items[i + 1 :]) for i in range(len(items)))
    if s == "list_replace_random":
        return _unique(format_list(items[:i] + [d["word"]] + items[i + 1 :]) for i in range(len(items)))
    if s == "latin_square":
        symbols = list(d["symbols"])
        return [latin_text(g, symbols) for g in latin_squares(int(d.get("size", len(symbols))))]
    return None


def _unique(texts) -> list[str]:
    return list(dict.fromkeys(texts))
