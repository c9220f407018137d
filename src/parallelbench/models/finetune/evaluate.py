"""Validation accuracy of a model being fine-tuned: one token per step, scored by the task's scorer."""

from __future__ import annotations

from typing import Any, Sequence


def one_by_one_accuracy(model: Any, samples: Sequence[Any]) -> float:
    """Mean score of `model` decoding one token per step, most confident first, per task budget."""
    from parallelbench.decoding import build_strategy
    from parallelbench.scoring import score
    from parallelbench.tasks import get_task

    if not samples:
        raise ValueError("no samples to decode")
    strategy = build_strategy("confidence-topk", k=1)
    total = 0.0
    by_task: dict[str, list[Any]] = {}
    for s in samples:
        by_task.setdefault(s.task, []).append(s)
    for task_id, group in by_task.items():
        gens = model.generate(group, strategy, max_new_tokens=get_task(task_id).max_new_tokens, seed=0)
        total += sum(score(s, g.text).score for s, g in zip(group, gens))
    return total / len(samples)
