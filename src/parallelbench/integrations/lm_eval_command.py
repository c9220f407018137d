"""The lm-eval command lines around an exported task folder: the command `tasks export --format
lm-eval` prints (complete, so it runs as printed), and the one-line answers of `parallelbench
lm-eval` to an `--include_path` that is missing or wrong, instead of lm-eval's traceback.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Iterable

from parallelbench.tasks.base import Task

EXPORT_HINT = "`parallelbench tasks export --format lm-eval --out DIR`"


def run_targets(tasks: Iterable[Task], user_groups: list[str]) -> list[str]:
    """What `--tasks` names to run everything exported: `parallelbench_all` for the paper's tasks,
    a user module's group for its tasks, and every other task by its own name."""
    from parallelbench.integrations.lm_eval_tasks import GROUP, lm_eval_task_name
    from parallelbench.tasks import task_source

    targets, singles = [], []
    for task in tasks:
        if task_source(task.id):
            continue  # in its module's group
        if task.in_paper:
            if GROUP not in targets:
                targets.append(GROUP)
        else:
            singles.append(lm_eval_task_name(task.id))
    return targets + list(user_groups) + singles


def printed_commands(out: str | Path, targets: list[str]) -> list[str]:
    """Two complete commands over the folder: our engine's (runs offline as printed) and any lm-eval model's."""
    where = f"--include_path {shlex.quote(str(out))} --tasks {','.join(targets)}"
    return [
        f"run: parallelbench lm-eval --model parallelbench --model_args model=tiny {where}",
        f"or any lm-eval model: lm_eval --model hf --model_args pretrained=<model> {where}",
    ]


def _option(args: list[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1:]
    return None


def check_include_path(args: list[str]) -> str | None:
    """One line when `--include_path` names no folder (None when it is fine or absent)."""
    path = _option(args, "--include_path")
    if path is None:
        return None
    if not Path(path).exists():
        return f"--include_path {path}: no such folder; give the folder written by {EXPORT_HINT}"
    if not Path(path).is_dir():
        return f"--include_path {path}: a file, not a folder; give the folder written by {EXPORT_HINT}"
    return None


def folder_names(folder: str | Path) -> list[str]:
    """The task and group names the YAML files of an lm-eval task folder define."""
    names = []
    for path in sorted(Path(folder).rglob("*.yaml")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        found = re.search(r"^(?:task|group):\s*(\S+)\s*$", text, re.M)
        if found:
            names.append(found.group(1).strip("'\""))
    return sorted(set(names))


def missing_tasks_line(message: str, args: list[str]) -> str | None:
    """lm-eval's `Tasks not found: X` as one line that says where it looked and what is there."""
    found = re.match(r"Tasks not found:\s*(.*)", message.strip(), re.S)
    if not found:
        return None
    missing = " ".join(found.group(1).split())
    path = _option(args, "--include_path")
    if path is None:
        return (f"lm-eval has no task {missing}; tasks written by {EXPORT_HINT} need --include_path DIR "
                "(lm-eval's own tasks: lm_eval ls tasks)")
    names = folder_names(path)
    have = f"it holds {', '.join(names[:12])}{' ...' if len(names) > 12 else ''}" if names else \
        f"it holds no lm-eval task; write one there with {EXPORT_HINT}"
    return f"lm-eval has no task {missing}, neither its own nor in --include_path {path}: {have}"
