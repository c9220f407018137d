"""Scorer errors, said out loud: which scorer failed on how many rows, and the first reason.

A scorer of your own that raises (or returns a malformed result) never stops a run: the
output scores 0 and the reason is kept in the score's ``meta["error"]`` (a results row keeps
it in ``versions.scorer.error``). Such a 0 is not a measurement, so `run`, `score`,
`results`, `leaderboard` and the report count these rows, say so in one line per scorer,
and show them as scorer errors rather than as wrong answers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

#: The key of a score's `meta` that holds a scorer's error (`base.guarded`).
ERROR_KEY = "error"
_NAMED = re.compile(r"^scorer (?P<q>['\"])(?P<name>.*?)(?P=q) (?P<rest>.*)$", re.S)


def error_of_meta(meta: Any) -> str | None:
    """The scorer error held in a score's `meta` dict, if any."""
    if isinstance(meta, dict):
        value = meta.get(ERROR_KEY)
        return str(value) if value not in (None, "") else None
    return None


def error_of_versions(versions: Any) -> str | None:
    """The scorer error recorded in a results row's `versions` (JSON text or dict), if any."""
    if isinstance(versions, str):
        if ERROR_KEY not in versions:  # the common case, without parsing JSON
            return None
        try:
            versions = json.loads(versions)
        except ValueError:
            return None
    if not isinstance(versions, dict):
        return None
    return error_of_meta(versions.get("scorer"))


def split_message(message: str) -> tuple[str, str]:
    """("any_order", "raised ValueError: boom") from "scorer 'any_order' raised ValueError: boom"."""
    hit = _NAMED.match(message)
    if hit is None:
        return "?", message
    return hit.group("name"), hit.group("rest")


@dataclass
class ScorerErrors:
    """The failures of one scorer: rows, of how many rows of the tasks it failed on, first reason."""

    scorer: str
    rows: int = 0
    total: int = 0
    tasks: list[str] = field(default_factory=list)
    first: str = ""

    def line(self) -> str:
        shown = ", ".join(self.tasks[:3]) + (f" and {len(self.tasks) - 3} more" if len(self.tasks) > 3 else "")
        tasks = f"task{'' if len(self.tasks) == 1 else 's'} {shown}"
        return (f"scorer error: {self.scorer!r} failed on {self.rows:,} of {self.total:,} rows ({tasks}); "
                f"first error: {self.first}; these rows are shown as scorer errors, not as 0")


def count_errors(rows: Iterable[tuple[str, str | None]]) -> list[ScorerErrors]:
    """One `ScorerErrors` per failing scorer from (task, error or None) per row, in order of first
    failure; `total` counts every row of the tasks a scorer failed on."""
    per_task: dict[str, int] = {}
    found: dict[str, ScorerErrors] = {}
    failed_tasks: dict[str, set[str]] = {}
    for task, error in rows:
        task = str(task)
        per_task[task] = per_task.get(task, 0) + 1
        if not error:
            continue
        name, rest = split_message(" ".join(str(error).split()))
        group = found.setdefault(name, ScorerErrors(name, first=rest))
        group.rows += 1
        if task not in failed_tasks.setdefault(name, set()):
            failed_tasks[name].add(task)
            group.tasks.append(task)
    for name, group in found.items():
        group.total = sum(per_task[t] for t in failed_tasks[name])
    return list(found.values())


def frame_errors(frame: Any) -> list[ScorerErrors]:
    """`count_errors` over a results frame (its `task` and `versions` columns)."""
    if frame is None or len(frame) == 0 or "versions" not in frame:
        return []
    return count_errors(zip(frame["task"], (error_of_versions(v) for v in frame["versions"])))
