"""Benchmark tasks: generators, prompts and data. See `base.py` for the records."""

from parallelbench.tasks.base import (
    GeneratorParams,
    Sample,
    Task,
    get_task,
    register,
    registry,
    resolve_tasks,
)


def valid_answers(sample: Sample) -> list[str] | None:
    """The finite set of correct answers of a sample as text, or None if not enumerable."""
    task = registry().get(sample.task)
    if task is None:  # an unregistered variant (e.g. another n range): answers follow from data
        from parallelbench.tasks._answers import valid_answers_from_data

        return valid_answers_from_data(sample)
    if task.valid_answers is None:
        return None
    return task.valid_answers(sample)


__all__ = [
    "GeneratorParams",
    "Sample",
    "Task",
    "get_task",
    "register",
    "registry",
    "resolve_tasks",
    "valid_answers",
]
