"""Scoring chain-of-thought answers: the final answer after the last "The answer is:".

A CoT sample (`tasks/cot.py`) keeps its base task's scorer name in ``data["base_scorer"]``
and its base reference in ``data["base_answer"]``, so an exported line is scored with no
registry at hand. The reasoning before the marker is never scored: only the answer
that follows the marker's last occurrence goes to the base task's scorer.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

from parallelbench.scoring.base import Scores, get_scorer, register_scorer
from parallelbench.tasks.cot_format import ANSWER_MARKER, COT_SCORER

if TYPE_CHECKING:
    from parallelbench.tasks.base import Sample

__all__ = ["ANSWER_MARKER", "COT_SCORER", "base_sample", "extract_final_answer", "score_cot"]
# A literal pattern (no quantifiers), so finding every occurrence is linear in the output.
_MARKER = re.compile(re.escape(ANSWER_MARKER), re.IGNORECASE)
_WRAPPERS = ("''", '""', "``", "{}", "**", "\u2018\u2019", "\u201c\u201d")


def extract_final_answer(output: str) -> str | None:
    """The answer after the last "The answer is:" (any letter case), or None without one.

    The answer is the first paragraph after the marker (text up to the first blank
    line), trimmed of surrounding whitespace, one final full stop and wrapping quotes,
    backticks, asterisks or the braces of the prompt's `{answer}` placeholder, so
    ``The answer is: `["A B"]`.`` gives ``["A B"]`` and commentary after a blank line
    is dropped.
    """
    if not isinstance(output, str):
        return None
    last = None
    for last in _MARKER.finditer(output):
        pass
    if last is None:
        return None
    rest = output[last.end():].lstrip()
    cut = rest.find("\n\n")
    answer = (rest if cut < 0 else rest[:cut]).strip()
    changed = True
    while changed and answer:
        changed = False
        if answer.endswith("."):
            answer, changed = answer[:-1].rstrip(), True
        for pair in _WRAPPERS:
            if len(answer) >= 2 and answer[0] == pair[0] and answer[-1] == pair[1]:
                answer, changed = answer[1:-1].strip(), True
    return answer


def base_sample(sample: "Sample") -> "Sample":
    """The sample as its base task would score it: base scorer name and base reference."""
    data = sample.data or {}
    return dataclasses.replace(
        sample,
        scorer=str(data.get("base_scorer", "")),
        answer=str(data.get("base_answer", sample.answer)),
    )


@register_scorer(COT_SCORER)
def score_cot(sample: "Sample", output: str) -> Scores:
    """The base scorer on the extracted answer; 0 with a reason when there is no marker.

    Components are the base scorer's plus ``answer_found`` (1 when the marker occurs).
    """
    return _score_cot(sample, output, "default")


@register_scorer(COT_SCORER, mode="paper")
def score_cot_paper(sample: "Sample", output: str) -> Scores:
    """The same, with the base scorer's paper mode."""
    return _score_cot(sample, output, "paper")


def _score_cot(sample: "Sample", output: str, mode: str) -> Scores:
    base = base_sample(sample)
    scorer = get_scorer(base.scorer, mode)  # KeyError names the unknown scorer
    answer = extract_final_answer(output)
    if answer is None:
        zero = scorer(base, "")
        components = {name: 0.0 for name in zero.components}
        return Scores(score=0.0, components={**components, "answer_found": 0.0},
                      meta={**zero.meta, "reason": f"no {ANSWER_MARKER!r} in the output"})
    result = scorer(base, answer)
    return Scores(score=result.score, components={**result.components, "answer_found": 1.0}, meta=dict(result.meta))
