"""Tasks from your own module: `--tasks module:NAME`.

NAME is a `parallelbench.tasks.Task`, or a function (no arguments) returning one or a list
of them. The module is imported the way user strategies are (`parallelbench.userimport`):
only the module named, from the current directory or the installed packages, never the
current directory implicitly. Importing it also runs its `@register_scorer` decorators, so
a task can use a scorer of its own.

Everything a user can get wrong becomes one line naming the task and what was found
(`TaskSourceError`): a missing module or NAME, an object that is not a task, a task field of
the wrong type, a scorer nobody registered, a generator that raises or returns samples
without the fields a sample needs. The generator is checked when the task is loaded (one
sample) and every time it runs, so a run fails before its first batch, not in the middle.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
from typing import Any, Callable

from parallelbench.tasks.base import GeneratorParams, Sample, Task
from parallelbench.userimport import short_error

_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
REQUIRED = ("id", "task", "prompt", "messages", "answer", "scorer")  # the fields every sample has


class TaskSourceError(KeyError, ValueError):
    """A `module:NAME` task source that cannot be used; the message is one line for the user.

    A KeyError like an unknown task id (every command that resolves task ids reports it
    as one line), and a ValueError for callers that expect bad input to be one.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def is_task_source(item: str) -> bool:
    """True for a `module:NAME` item (task ids never contain a colon)."""
    return ":" in item


def source_module(spec: str) -> str:
    return spec.strip().rpartition(":")[0]


def load_task_source(spec: str, taken: Callable[[Task], str | None] = lambda task: None) -> list[Task]:
    """The checked tasks of `module:NAME` (imported now; not cached here: see `registry.user_tasks`).

    `taken(task)` says why a task's id cannot be used (a built-in id), checked before its generator runs."""
    module_name, _, name = spec.strip().rpartition(":")
    if not _MODULE.match(module_name) or not _NAME.match(name):
        raise TaskSourceError(
            f"task source {spec!r} is not of the form module:NAME (e.g. my_tasks:make_tasks, "
            "NAME a Task or a function returning tasks)"
        )
    module = _import(module_name, f"cannot load tasks {spec!r}")
    if not hasattr(module, name):
        found = [k for k, v in vars(module).items() if not k.startswith("_") and _looks_like_source(v, module_name)]
        have = f"; it defines: {', '.join(sorted(found))}" if found else "; it defines no Task and no function"
        raise TaskSourceError(f"module {module_name} has no {name!r}{have}")
    tasks = _tasks_of(spec, getattr(module, name))
    seen: set[str] = set()
    checked = []
    for task in tasks:
        _check_task(spec, task)
        if task.id in seen:
            raise TaskSourceError(f"{spec} gives two tasks with the id {task.id!r}; task ids must be unique")
        seen.add(task.id)
        why = taken(task)
        if why:
            raise TaskSourceError(why)
        wrapped = dataclasses.replace(
            task,
            generate=CheckedGenerator(task.generate, task.id, module_name),
            valid_answers=CheckedAnswers(task.valid_answers, task.id) if task.valid_answers is not None else None,
        )
        first = wrapped.samples(1)
        if not first:
            raise TaskSourceError(f"task {task.id!r}: its generator returned no samples; it must return at least one")
        if wrapped.valid_answers is not None:
            wrapped.valid_answers(first[0])
        checked.append(wrapped)
    return checked


def import_scorer_modules(names: str) -> list[str]:
    """Import each module of a comma list (`score --scorers my_scorers`), so its scorers register."""
    done = []
    for name in (n.strip() for n in names.split(",")):
        if not name:
            continue
        if not _MODULE.match(name):
            raise TaskSourceError(f"--scorers {name!r} is not a module name (e.g. my_scorers or pkg.scorers)")
        _import(name, "--scorers")
        done.append(name)
    return done


def _import(module_name: str, what: str) -> Any:
    """The user's module (the `userimport` rule), or one line: missing, or failing on import."""
    from parallelbench.userimport import UserCodeError, import_named_module

    try:
        return import_named_module(module_name, what)
    except UserCodeError as exc:
        raise TaskSourceError(str(exc)) from None


def _looks_like_source(value: Any, module_name: str) -> bool:
    if isinstance(value, Task):
        return True
    return inspect.isfunction(value) and value.__module__ == module_name


def _tasks_of(spec: str, obj: Any) -> list[Task]:
    if isinstance(obj, Task):
        return [obj]
    if inspect.isclass(obj) or not callable(obj):
        raise TaskSourceError(
            f"{spec} is {_what(obj)}, not a parallelbench.tasks.Task or a function returning tasks"
        )
    try:
        made = obj()
    except Exception as exc:  # noqa: BLE001 - the user's function
        raise TaskSourceError(f"{spec}() raised {short_error(exc)}; it must return a Task or a list of tasks") from None
    if isinstance(made, Task):
        return [made]
    if isinstance(made, (list, tuple)) and made and all(isinstance(t, Task) for t in made):
        return list(made)
    if isinstance(made, (list, tuple)):
        bad = next((t for t in made if not isinstance(t, Task)), None)
        found = "an empty list" if not made else f"a list holding {_what(bad)}"
    else:
        found = _what(made)
    raise TaskSourceError(f"{spec}() returned {found}, not a parallelbench.tasks.Task or a list of tasks")


def _what(obj: Any) -> str:
    """A short description of what was found instead of a task."""
    if inspect.isclass(obj):
        return f"the class {obj.__name__}"
    text = repr(obj)
    text = text if len(text) <= 60 else text[:57] + "..."
    kind = type(obj).__name__
    return f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind} ({text})"


def _check_task(spec: str, task: Task) -> None:
    """Field types of a user task; the scorer must be registered once its module is imported."""
    tid = task.id

    def bad(field: str, need: str, value: Any) -> TaskSourceError:
        return TaskSourceError(f"task {tid!r} from {spec}: field {field!r} must be {need}, got {_what(value)}")

    if not isinstance(tid, str) or not tid.strip() or any(c in tid for c in ":, \n"):
        raise TaskSourceError(
            f"{spec} gives a task whose id is {tid!r}; a task id is a non-empty string without ':', ',' or "
            "spaces, e.g. 'mine/reverse'"
        )
    if not isinstance(task.category, str) or not task.category:
        raise bad("category", "a non-empty string", task.category)
    if not isinstance(task.prompt_template, str):
        raise bad("prompt_template", "a string", task.prompt_template)
    if not isinstance(task.shots, int) or task.shots < 0:
        raise bad("shots", "an integer >= 0", task.shots)
    if not isinstance(task.max_new_tokens, int) or isinstance(task.max_new_tokens, bool) or task.max_new_tokens < 1:
        raise bad("max_new_tokens", "an integer >= 1", task.max_new_tokens)
    if not isinstance(task.params, GeneratorParams):
        raise bad("params", "a parallelbench.tasks.GeneratorParams", task.params)
    if not callable(task.generate):
        raise bad("generate", "a function (task, limit) -> list of samples", task.generate)
    if task.valid_answers is not None and not callable(task.valid_answers):
        raise bad("valid_answers", "None or a function (sample) -> list of answer texts", task.valid_answers)
    if not isinstance(task.scorer, str) or not task.scorer:
        raise bad("scorer", "a scorer name", task.scorer)
    _check_scorer(tid, task.scorer, source_module(spec))


def _check_scorer(task_id: str, scorer: str, module_name: str) -> None:
    from parallelbench.scoring.base import get_scorer  # noqa: PLC0415

    try:
        get_scorer(scorer)
    except KeyError:
        raise TaskSourceError(
            f"task {task_id!r}: scorer {scorer!r} is not registered; define it in {module_name} with "
            f"@parallelbench.scoring.register_scorer({scorer!r}) or use a built-in scorer"
        ) from None


class CheckedGenerator:
    """A user generator whose errors and malformed samples become one `TaskSourceError` line."""

    def __init__(self, generate: Callable[[Task, int | None], Any], task_id: str, module_name: str):
        self.generate = generate
        self.task_id = task_id  # the id the samples carry (a `with_params` copy keeps it)
        self.module_name = module_name

    def __call__(self, task: Task, limit: int | None) -> list[Sample]:
        try:
            made = self.generate(task, limit)
        except TaskSourceError:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's generator
            raise TaskSourceError(f"task {task.id!r}: its generator raised {short_error(exc)}") from None
        return check_samples(task.id, made, {task.id, self.task_id}, self.module_name)


class CheckedAnswers:
    """A user `valid_answers` whose errors and wrong return types become one line."""

    def __init__(self, fn: Callable[[Sample], Any], task_id: str):
        self.fn = fn
        self.task_id = task_id

    def __call__(self, sample: Sample) -> list[str] | None:
        try:
            answers = self.fn(sample)
        except Exception as exc:  # noqa: BLE001 - the user's function
            raise TaskSourceError(f"task {self.task_id!r}: valid_answers raised {short_error(exc)} on sample {sample.id!r}") from None
        if answers is None:
            return None
        if not isinstance(answers, (list, tuple)) or not all(isinstance(a, str) for a in answers):
            raise TaskSourceError(
                f"task {self.task_id!r}: valid_answers must return a list of answer texts or None, got {_what(answers)}"
            )
        return list(answers)


def check_samples(task_id: str, made: Any, ids: set[str], module_name: str = "your module") -> list[Sample]:
    """`made` as a list of `Sample`s (dicts are read like exported lines), or one line naming the field."""
    if isinstance(made, (str, bytes, dict, Sample)) or not hasattr(made, "__iter__"):
        raise TaskSourceError(f"task {task_id!r}: its generator must return a list of samples, got {_what(made)}")
    out: list[Sample] = []
    seen: set[str] = set()
    for i, item in enumerate(made):
        if isinstance(item, dict):
            missing = [f for f in REQUIRED if f not in item]
            if missing:
                raise TaskSourceError(
                    f"task {task_id!r}: sample {i} has no {missing[0]!r} field; a sample needs "
                    f"{', '.join(REQUIRED)} (and optionally data, output_format)"
                )
            names = {f.name for f in dataclasses.fields(Sample)}
            item = Sample(**{k: v for k, v in item.items() if k in names})
        elif not isinstance(item, Sample):
            raise TaskSourceError(
                f"task {task_id!r}: sample {i} is {_what(item)}, not a parallelbench.tasks.Sample (or a dict of its fields)"
            )
        _check_fields(task_id, i, item, ids, module_name)
        if item.id in seen:
            raise TaskSourceError(f"task {task_id!r}: sample id {item.id!r} appears twice; sample ids must be unique")
        seen.add(item.id)
        out.append(item)
    return out


def _check_fields(task_id: str, index: int, s: Sample, ids: set[str], module_name: str) -> None:
    where = f"task {task_id!r}: sample {s.id!r}" if isinstance(s.id, str) and s.id else f"task {task_id!r}: sample {index}"

    def bad(field: str, need: str, value: Any) -> TaskSourceError:
        return TaskSourceError(f"{where}: field {field!r} must be {need}, got {_what(value)}")

    for field in ("id", "prompt", "answer", "scorer"):
        value = getattr(s, field)
        if not isinstance(value, str) or (field in ("id", "scorer") and not value):
            raise bad(field, "a non-empty string" if field in ("id", "scorer") else "a string", value)
    if s.task not in ids:
        raise bad("task", f"the task's id {task_id!r}", s.task)
    turns = s.messages
    if (
        not isinstance(turns, list) or not turns
        or not all(isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                   for m in turns)
    ):
        raise bad("messages", 'a non-empty list of {"role": ..., "content": ...} turns', turns)
    if not isinstance(s.data, dict):
        raise bad("data", "a dict", s.data)
    try:  # samples are exported, stored and fingerprinted as JSON
        json.dumps(s.data, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TaskSourceError(f"{where}: field 'data' must hold JSON values (strings, numbers, lists, dicts), "
                              f"but {short_error(exc)}") from None
    if s.output_format is not None and not isinstance(s.output_format, str):
        raise bad("output_format", "None or a string", s.output_format)
    _check_scorer(task_id, s.scorer, module_name)


def source_fingerprint(spec: str) -> str:
    """A short hash of the user module's source file, so rows of an edited task are not reused."""
    import hashlib  # noqa: PLC0415
    import sys  # noqa: PLC0415

    module = sys.modules.get(source_module(spec))
    path = getattr(module, "__file__", None)
    try:
        data = open(path, "rb").read() if path else spec.encode()
    except OSError:
        data = spec.encode()
    return hashlib.sha256(data).hexdigest()[:12]


def import_root(module_name: str) -> str | None:
    """The folder to put on sys.path to import `module_name` again (None if it has no file)."""
    import sys  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    if not path:
        return None
    depth = module_name.count(".") + (1 if Path(path).name == "__init__.py" else 0)
    return str(Path(path).resolve().parents[depth])
