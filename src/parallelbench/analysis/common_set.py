"""Rank entries only on the tasks and samples they all decoded.

A leaderboard averages each setting over its tasks: `ideal` on 2 easy tasks and `tiny`
on 12 would otherwise be ranked side by side on different exams. `comparable_groups`
keeps, for the entries it ranks together, only the (task, sample) pairs that every
setting of every entry decoded, and says so in one line when that drops anything. When
the entries share no sample at all, they are split into groups that do (entries with the
same tasks), each ranked on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from parallelbench.analysis.curves import with_curves
from parallelbench.display import display_name


@dataclass(frozen=True)
class Comparison:
    """Rows ranked against each other, and the one-line note on what was left out (None: nothing)."""

    frame: pd.DataFrame
    note: str | None
    entries: tuple[str, ...]
    tasks: tuple[str, ...]
    samples: int


def _keys(frame: pd.DataFrame) -> pd.Series:
    ids = frame["sample_id"].astype(str) if "sample_id" in frame else pd.Series("", index=frame.index)
    return frame["task"].astype(str) + "\x00" + ids


def entry_labels(frame: pd.DataFrame) -> pd.Series:
    """The leaderboard's name of each row's entry: its curve, `model/curve` with several models."""
    data = with_curves(frame)
    several = frame["model"].nunique() > 1
    return (data["model"].astype(str) + "/" + data["curve"].astype(str)) if several else data["curve"].astype(str)


def _restrict(frame: pd.DataFrame, keys: pd.Series, entries: pd.Series) -> tuple[pd.DataFrame, set[str], int]:
    """Rows whose (task, sample) every (model, config) of `frame` decoded."""
    settings = frame["model"].astype(str) + "\x00" + frame["config"].astype(str)
    common: set[str] | None = None
    for _, group in keys.groupby(settings, sort=False):
        seen = set(group)
        common = seen if common is None else common & seen
    common = common or set()
    mask = keys.isin(common)
    return frame[mask], common, len(common)


def _tasks_of(keys: set[str]) -> set[str]:
    return {k.split("\x00", 1)[0] for k in keys}


def _shown(names, limit: int = 6) -> str:
    names = sorted(display_name(n) for n in names)
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def comparable_groups(frame: pd.DataFrame) -> list[Comparison]:
    """The groups of entries to rank, each restricted to what its entries share (see module doc)."""
    if frame is None or len(frame) == 0:
        return [Comparison(frame, None, (), (), 0)]
    keys = _keys(frame)
    entries = entry_labels(frame)
    restricted, common, n_common = _restrict(frame, keys, entries)
    every = set(keys)
    names = tuple(sorted(set(entries)))
    if n_common == len(every):
        return [Comparison(frame, None, names, tuple(sorted(_tasks_of(every))), len(every))]
    if n_common:
        tasks, all_tasks = _tasks_of(common), _tasks_of(every)
        dropped = all_tasks - tasks
        note = (f"the {len(names)} entries did not all decode the same tasks and samples: ranked on the common set, "
                f"{len(tasks)} of {len(all_tasks)} tasks and {n_common} of {len(every)} samples"
                + (f" (left out: {_shown(dropped)})" if dropped else " (the rest decoded by only some entries)"))
        return [Comparison(restricted, note, names, tuple(sorted(tasks)), n_common)]
    # nothing shared by all: one group per task set, each ranked on what it shares
    task_sets: dict[str, frozenset[str]] = {}
    for entry, group in frame.groupby(entries, sort=True):
        per_setting = [set(g["task"].astype(str)) for _, g in group.groupby(["model", "config"], sort=False)]
        shared = set.intersection(*per_setting) if per_setting else set()
        task_sets[entry] = frozenset(shared or set.union(set(), *per_setting))
    by_tasks: dict[frozenset[str], list[str]] = {}
    for entry, tasks in task_sets.items():
        by_tasks.setdefault(tasks, []).append(entry)
    out = []
    for i, (tasks, members) in enumerate(sorted(by_tasks.items(), key=lambda kv: (-len(kv[1]), sorted(kv[1]))), 1):
        part = frame[entries.isin(members) & frame["task"].astype(str).isin(tasks)]
        sub_keys = _keys(part)
        kept, shared, n_shared = _restrict(part, sub_keys, entries[part.index]) if len(part) else (part, set(), 0)
        if not n_shared:
            kept = part
        note = (f"group {i} of {len(by_tasks)}: the entries share no sample with the other groups, so each group is "
                f"ranked on its own; this one: {len(members)} entr{'y' if len(members) == 1 else 'ies'} on "
                f"{len(tasks)} task{'' if len(tasks) == 1 else 's'} ({_shown(tasks)})"
                + ("" if n_shared else ", no sample decoded by all of them"))
        out.append(Comparison(kept, note, tuple(sorted(members)), tuple(sorted(tasks)), n_shared))
    return out
