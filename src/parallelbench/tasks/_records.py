"""JSON answers of the structured tasks, built from a sample's data alone.

A leaf module: the task generators (`structured.py`), the answer enumeration (`_answers.py`)
and the ideal model's tokenizer all build answers here, so none of them imports another.
"""

from __future__ import annotations

import json
import math
from itertools import permutations
from typing import Any, Sequence

STRUCTURED_SCORERS = ("json_fields", "json_any_order", "tool_call")
MIN_FIELDS, MAX_FIELDS = 3, 8  # field counts a structured generator accepts


def check_field_range(n_min: int, n_max: int) -> None:
    """One line when a generator setting asks for a field count outside 3..8."""
    if not (MIN_FIELDS <= n_min <= n_max <= MAX_FIELDS):
        shown = f"{n_min}" if n_min == n_max else f"{n_min}..{n_max}"
        raise ValueError(
            f"structured tasks hold {MIN_FIELDS} to {MAX_FIELDS} fields, got {shown}; "
            f"use --n-min/--n-max within {MIN_FIELDS}..{MAX_FIELDS}"
        )


def answer_text(variant: str, fields: Sequence[Sequence[Any]], function: str | None = None) -> str:
    """The canonical answer: `json.dumps` with its default separators (`", "`, `": "`)."""
    obj = {str(k): v for k, v in fields}
    if variant == "tool_call":
        return json.dumps({"name": function, "arguments": obj})
    return json.dumps(obj)


def target_fields(data: dict) -> list[tuple[str, Any]]:
    """The target [key, value] pairs of a sample (tool call: its arguments), in the given order."""
    pairs = data.get("arguments") if "arguments" in data else data.get("fields")
    out = []
    for pair in pairs if isinstance(pairs, (list, tuple)) else []:
        if isinstance(pair, (list, tuple)) and len(pair) == 2:
            out.append((str(pair[0]), pair[1]))
    return out


def count_answers(scorer: str, data: dict) -> int | None:
    """How many answer texts are correct: n! for any-order objects, one otherwise."""
    if scorer not in STRUCTURED_SCORERS:
        return None
    return math.factorial(len(target_fields(data))) if scorer == "json_any_order" else 1


def answer_texts(scorer: str, data: dict) -> list[str] | None:
    """Every correct answer in canonical form (any-order objects: every key order, the given one first)."""
    if scorer not in STRUCTURED_SCORERS:
        return None
    fields = target_fields(data)
    if scorer == "tool_call":
        return [answer_text("tool_call", fields, str(data.get("name", "")))]
    if scorer == "json_fields":
        return [answer_text("json_fields", fields)]
    return [answer_text("json_fields", order) for order in permutations(fields)]
