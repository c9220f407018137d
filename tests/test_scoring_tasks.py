"""The scorers agree with the task generators: every valid answer of every task scores 1."""

from __future__ import annotations

import pytest

from parallelbench.scoring import score
from parallelbench.tasks import registry, valid_answers

STRUCTURED = {"list_exact", "list_shuffle", "list_replace_random", "list_insert_random", "list_remove_random",
              "latin_square", "sudoku"}
RECORDS = {"json_fields", "json_any_order", "tool_call"}  # headline "fields" (partial credit) and "strict"


def _task_ids() -> list[str]:
    return sorted(registry())


@pytest.mark.parametrize("task_id", _task_ids())
def test_valid_answers_and_references_score_one(task_id):
    task = registry()[task_id]
    for sample in task.samples(2):
        perfect = {"fields": 1.0, "strict": 1.0} if task.scorer in RECORDS else {"lenient": 1.0, "strict": 1.0}
        if task.scorer in STRUCTURED | RECORDS:
            assert score(sample, sample.answer).components == perfect, sample.id
        answers = valid_answers(sample)
        if answers is None:
            continue
        for answer in answers[:600]:
            assert score(sample, answer).components == perfect, (sample.id, answer)


@pytest.mark.parametrize("task_id", [t for t in _task_ids() if t.startswith("text_writing/w2s")][:3])
def test_w2s_references_include_every_word(task_id):
    for sample in registry()[task_id].samples(3):
        result = score(sample, sample.answer)
        assert result.components["inclusion"] == 1.0, sample.id
