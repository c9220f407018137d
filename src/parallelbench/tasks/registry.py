"""Which tasks exist: the built-in ones, ones registered from Python, and ones loaded from
user modules (`module:NAME` in `--tasks`), looked up by id.

Built-in tasks are loaded on first use (`builtin.py`). A task loaded from a user module is
kept beside them (not in `registry()`, which lists what the package provides) so that its
samples find their task again (`find_task`: the ideal model asks it for valid answers) and
a Ray worker can load the same module (`task_source`).
"""

from __future__ import annotations

from typing import Iterable

from parallelbench.tasks.base import Sample, Task
from parallelbench.tasks.cot_format import COT_SUFFIX
from parallelbench.tasks.user import TaskSourceError, is_task_source, load_task_source, source_module

_REGISTRY: dict[str, Task] = {}
_builtins_loaded = False
_USER: dict[str, tuple[str, Task]] = {}  # task id -> (the module:NAME it came from, task)
_SOURCES: dict[str, list[Task]] = {}  # module:NAME -> its tasks, once loaded


def _load_builtins() -> None:
    global _builtins_loaded
    if _builtins_loaded:
        return
    from parallelbench.tasks.builtin import BUILTIN_TASKS  # noqa: PLC0415  (the task modules, once)

    _builtins_loaded = True
    for task in BUILTIN_TASKS:
        _add(task)


def _add(task: Task) -> Task:
    if task.id in _REGISTRY:
        raise ValueError(f"task id {task.id!r} is registered twice")
    _REGISTRY[task.id] = task
    return task


def register(task: Task) -> Task:
    """Add a task to the registry (after the built-in ones); its id must be new."""
    _load_builtins()
    return _add(task)


def registry() -> dict[str, Task]:
    """The built-in tasks and those given to `register`, by id, in registration order."""
    _load_builtins()
    return _REGISTRY


def find_task(task_id: str) -> Task | None:
    """The task with this id, built in or loaded from a user module in this process, or None."""
    tasks = registry()
    if task_id in tasks:
        return tasks[task_id]
    user = _USER.get(task_id)
    return user[1] if user else None


def task_source(task_id: str) -> str | None:
    """The `module:NAME` a user task was loaded from (None for built-in tasks)."""
    user = _USER.get(task_id)
    return user[0] if user else None


def get_task(task_id: str) -> Task:
    found = find_task(task_id)
    if found is not None:
        return found
    tasks = registry()
    if task_id.endswith(COT_SUFFIX):
        have = [t for t in tasks if t.endswith(COT_SUFFIX)]
        raise KeyError(
            f"{task_id[: -len(COT_SUFFIX)]!r} has no chain-of-thought variant; CoT variants exist for: "
            f"{', '.join(have)}"
        )
    family, slash, _ = task_id.partition("/")
    members = [t for t in tasks if slash and t.startswith(family + "/")]
    if members and len(members) <= 12:  # a small family: name every member
        raise KeyError(
            f"unknown task {task_id!r}; the {family} tasks are: {', '.join(members)}. "
            "Run `parallelbench tasks list` for every id."
        )
    close = [t for t in tasks if task_id.split("/")[-1] in t][:5]
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise KeyError(
        f"unknown task {task_id!r}.{hint} Run `parallelbench tasks list` for every id, "
        "or load your own with module:NAME."
    )


def user_tasks(spec: str) -> list[Task]:
    """The tasks of `module:NAME` (loaded and checked once per process); `TaskSourceError` otherwise.

    A task id that is built in fails in one line. Loaded again from another module (a later
    command in the same process), an id points to the newer task.
    """
    spec = spec.strip()
    if spec in _SOURCES:
        return list(_SOURCES[spec])
    builtin = registry()

    def taken(task: Task) -> str | None:
        if task.id in builtin:
            short = task.id.rsplit("/", 1)[-1]
            return (f"task id {task.id!r} from {spec} is the id of a built-in task; give your task an id of its own "
                    f"(e.g. 'mine/{short}')")
        return None

    tasks = load_task_source(spec, taken)
    for task in tasks:
        _USER[task.id] = (spec, task)
    _SOURCES[spec] = list(tasks)
    return list(tasks)


def resolve_tasks(spec: str | Iterable[str]) -> list[Task]:
    """Task specs -> tasks, in order, without repeats.

    A spec item is a task id, "paper" (the 17 tasks of the paper), "cot" (every
    chain-of-thought variant, `<task>-cot`), a family: an id prefix such as
    "waiting_line_n15" or a category such as "waiting_line", or `module:NAME`: your own
    tasks (NAME is a `Task` or a function returning one or a list of them; see
    `user.py`). A family selects its paper tasks when it has any (so "waiting_line" is
    the paper's 10 tasks, not the n = 15 and n = 21..24 variants) and all of its tasks
    otherwise.
    """
    items = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s.strip()]
    if not items:
        raise KeyError("no task given; name task ids, a family such as waiting_line, paper, or module:NAME")
    tasks = registry()
    out: list[Task] = []
    given_by: dict[str, str] = {}  # user task id -> the module:NAME that gave it in this call
    for item in items:
        if is_task_source(item):
            for task in user_tasks(item):
                other = given_by.setdefault(task.id, item)
                if source_module(other) != source_module(item):
                    raise TaskSourceError(
                        f"task id {task.id!r} is defined by both {other} and {item}; give one of them another id"
                    )
                out.append(task)
        elif item == "paper":
            out += [t for t in tasks.values() if t.in_paper]
        elif item == "cot":
            out += [t for t in tasks.values() if t.id.endswith(COT_SUFFIX)]
        elif item in tasks:
            out.append(tasks[item])
        elif item in _USER:
            out.append(_USER[item][1])
        else:
            family = [t for t in tasks.values() if t.id.startswith(item.rstrip("/") + "/")]
            family = family or [t for t in tasks.values() if t.category == item]
            if not family:
                out.append(get_task(item))  # raises with a hint
            paper = [t for t in family if t.in_paper]
            out += paper or family
    seen: dict[str, Task] = {}
    for t in out:
        seen.setdefault(t.id, t)
    return list(seen.values())


def task_source_samples(spec: str) -> dict[str, Sample]:
    """Every sample of the tasks `spec` selects, by id (`score --tasks module:NAME`)."""
    out: dict[str, Sample] = {}
    for task in resolve_tasks(spec):
        for sample in task.samples(None):
            if sample.id in out:
                raise TaskSourceError(f"sample id {sample.id!r} appears in two tasks of {spec}; sample ids must be unique")
            out[sample.id] = sample
    return out
