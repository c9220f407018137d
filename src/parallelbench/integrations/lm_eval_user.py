"""Tasks of your own (`module:NAME`) in lm-eval: an exported folder that imports your module,
a group per module (`my_tasks_all`), and `parallelbench lm-eval --tasks module:NAME`.

An exported task folder scores with our scorers (`utils.py`); a task of your own may use a
scorer that only exists once your module is imported. `add_user_modules` appends to every
`utils.py` of the folder a few lines that import the modules of the exported user tasks from
the folders they were found in when exporting (once, when lm-eval loads `utils.py`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

from parallelbench.tasks.base import Task

MARKER = "# Modules of your own tasks (`--tasks module:NAME`)"

_BLOCK = '''

{marker}: imported here so that their @register_scorer scorers exist,
# and their tasks registered so that the ideal model can list a task's valid_answers.
def _import_user_modules(modules, sources):
    import importlib
    import sys

    for name, folder in modules:
        if name in sys.modules:
            continue
        added = folder not in sys.path
        if added:
            sys.path.insert(0, folder)
        try:
            importlib.import_module(name)
        finally:
            if added:
                sys.path.remove(folder)
    from parallelbench.tasks import TaskSourceError, user_tasks

    for source in sources:
        try:
            user_tasks(source)
        except TaskSourceError:  # scoring needs only the scorers; the ideal model will say what is missing
            pass


_import_user_modules({modules!r}, {sources!r})
'''


def user_modules(tasks: Iterable[Task]) -> list[tuple[str, str]]:
    """(module, folder to import it from) of every task loaded from a user module."""
    from parallelbench.tasks import task_source
    from parallelbench.tasks.user import import_root, source_module

    found: dict[str, str] = {}
    for task in tasks:
        spec = task_source(task.id)
        if spec:
            name = source_module(spec)
            folder = import_root(name)
            if folder:
                found[name] = folder
    return sorted(found.items())


def user_sources(tasks: Iterable[Task]) -> list[str]:
    """The `module:NAME` specs the user tasks among `tasks` came from."""
    from parallelbench.tasks import task_source

    return sorted({spec for spec in (task_source(t.id) for t in tasks) if spec})


def add_user_modules(folder: str | Path, tasks: Iterable[Task]) -> list[tuple[str, str]]:
    """Make every `utils.py` under `folder` import the user modules of `tasks` and register
    their tasks; returns the modules."""
    tasks = list(tasks)
    modules = user_modules(tasks)
    if modules:
        block = _BLOCK.format(marker=MARKER, modules=modules, sources=user_sources(tasks))
        for utils in sorted(Path(folder).rglob("utils.py")):
            text = utils.read_text(encoding="utf-8")
            if MARKER in text:  # exported into the same folder again: one block, the newest modules
                text = text[: text.index(MARKER)].rstrip("\n") + "\n"
            utils.write_text(text.rstrip("\n") + block, encoding="utf-8")
    return modules


def user_group_name(module: str) -> str:
    """The lm-eval group of a user module's tasks: `my_tasks` -> `my_tasks_all`, `pkg.tasks` -> `pkg_tasks_all`."""
    return re.sub(r"\W+", "_", module).strip("_") + "_all"


def write_user_groups(folder: str | Path, tasks: Iterable[Task]) -> list[str]:
    """One group per user module at the top of `folder` (`_my_tasks_all.yaml`), holding that
    module's exported tasks, as `parallelbench_all` holds the paper's; returns the group names."""
    from parallelbench.integrations.lm_eval_tasks import group_yaml, lm_eval_task_name
    from parallelbench.tasks import task_source
    from parallelbench.tasks.user import source_module

    members: dict[str, list[str]] = {}
    for task in tasks:
        spec = task_source(task.id)
        if spec:
            members.setdefault(source_module(spec), []).append(lm_eval_task_name(task.id))
    groups = []
    for module, names in sorted(members.items()):
        group = user_group_name(module)
        (Path(folder) / f"_{group}.yaml").write_text(group_yaml(group, f"{module} (your tasks)", names), encoding="utf-8")
        groups.append(group)
    return groups


def with_user_tasks(args: list[str], folder: str | Path) -> list[str]:
    """lm-eval arguments with every `module:NAME` item of `--tasks` exported into `folder`.

    The items become the exported lm-eval task names and `--include_path folder` is added,
    so `parallelbench lm-eval --tasks my_tasks:make_tasks ...` runs your own tasks.
    Raises `TaskSourceError` (one line) for a source that cannot be loaded.
    """
    from parallelbench.integrations.lm_eval_tasks import export_lm_eval
    from parallelbench.tasks import TaskSourceError, resolve_tasks
    from parallelbench.tasks.user import is_task_source

    out, changed = [], False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--tasks" and i + 1 < len(args):
            value, prefix = args[i + 1], None
            i += 2
        elif arg.startswith("--tasks="):
            value, prefix = arg[len("--tasks="):], "--tasks="
            i += 1
        else:
            out.append(arg)
            i += 1
            continue
        items = [v.strip() for v in value.split(",") if v.strip()]
        if any(is_task_source(v) for v in items):
            names = []
            for item in items:
                if is_task_source(item):
                    tasks = resolve_tasks([item])
                    target = Path(folder) / re.sub(r"\W+", "_", item)
                    rows = export_lm_eval(tasks, target)
                    add_user_modules(target, tasks)
                    write_user_groups(target, tasks)
                    names += [name for name, _, _ in rows]
                else:
                    names.append(item)
            value, changed = ",".join(names), True
        out += [f"{prefix}{value}"] if prefix else ["--tasks", value]
    if changed:
        if any(a == "--include_path" or a.startswith("--include_path=") for a in out):
            raise TaskSourceError(
                "--tasks module:NAME cannot be combined with --include_path (lm-eval takes one folder); export your "
                "tasks into that folder with `parallelbench tasks export --format lm-eval --out DIR --tasks module:NAME`"
            )
        out += ["--include_path", str(folder)]
    return out
