"""Benchmark tasks: generators, prompts and data. `base.py` holds the records, `registry.py`
says which tasks exist (built in, or yours: `module:NAME`, see `user.py`)."""

from parallelbench.tasks.base import GeneratorParams, Sample, Task
from parallelbench.tasks.registry import (
    find_task,
    get_task,
    register,
    registry,
    resolve_tasks,
    task_source,
    task_source_samples,
    user_tasks,
)
from parallelbench.tasks.user import TaskSourceError


def valid_answers(sample: Sample) -> list[str] | None:
    """The finite set of correct answers of a sample as text, or None if not enumerable."""
    task = find_task(sample.task)
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
    "TaskSourceError",
    "find_task",
    "get_task",
    "register",
    "registry",
    "resolve_tasks",
    "task_source",
    "task_source_samples",
    "user_tasks",
    "valid_answers",
]
