"""`--model`, `--tasks`, `--strategy` filters of `leaderboard` and `report`.

Each filter is a comma list. A value that matches nothing in the results is an error that
names what the results do hold, so a typo never gives a silently smaller leaderboard.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from parallelbench.display import display_name


class SelectionError(ValueError):
    """A filter value that matches no row; the message names the available values."""


def split_list(text: str | None) -> list[str]:
    """'a, b,,c' -> ['a', 'b', 'c']; None or '' -> []."""
    return [item.strip() for item in (text or "").split(",") if item.strip()]


def _listed(values: Iterable[object], limit: int = 20) -> str:
    names = sorted({display_name(v) for v in values})
    return ", ".join(names[:limit]) + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def task_ids(item: str, stored: set[str]) -> set[str]:
    """Stored task ids a `--tasks` item selects: the id itself, or a family, category or `paper`
    as `parallelbench run --tasks` reads them."""
    if item in stored:
        return {item}
    from parallelbench.tasks import resolve_tasks

    try:
        resolved = {t.id for t in resolve_tasks([item])}
    except (KeyError, ValueError):
        resolved = set()
    prefix = {t for t in stored if t.startswith(item.rstrip("/") + "/")}  # a category of stored (unregistered) tasks
    return (resolved | prefix) & stored


def select(frame: pd.DataFrame, models: str | None = None, tasks: str | None = None,
           strategies: str | None = None) -> pd.DataFrame:
    """The rows of `frame` the three comma lists keep (an empty list keeps everything).

    --model: model specs as run (`tiny`, `hf:org/name`); --tasks: task ids, families,
    categories or `paper`; --strategy: strategy names (`confidence-topk`), or a config or
    curve label as tables show them (`confidence-topk[k=2]`). Raises SelectionError for a
    value that matches no row.
    """
    if frame is None or frame.empty:
        return frame
    keep = pd.Series(True, index=frame.index)
    wanted = split_list(models)
    if wanted:
        stored = set(frame["model"].astype(str))
        unknown = [m for m in wanted if m not in stored]
        if unknown:
            raise SelectionError(f"--model {', '.join(map(display_name, unknown))}: no such model in these results; "
                                 f"they hold: {_listed(stored)}")
        keep &= frame["model"].astype(str).isin(wanted)
    wanted = split_list(tasks)
    if wanted:
        stored = set(frame["task"].astype(str))
        chosen: set[str] = set()
        for item in wanted:
            found = task_ids(item, stored)
            if not found:
                raise SelectionError(f"--tasks {display_name(item)}: no such task in these results; they hold: {_listed(stored)}")
            chosen |= found
        keep &= frame["task"].astype(str).isin(chosen)
    wanted = split_list(strategies)
    if wanted:
        names = frame["strategy"].astype(str)
        configs = frame["config"].astype(str) if "config" in frame else names
        curves = _curve_labels(frame)
        match = pd.Series(False, index=frame.index)
        for item in wanted:
            hit = (names == item) | (configs == item) | (curves == item)
            if not hit.any():
                raise SelectionError(f"--strategy {display_name(item)}: no such strategy in these results; "
                                     f"they hold: {_listed(names)}")
            match |= hit
        keep &= match
    selected = frame[keep]
    if selected.empty:
        given = "; ".join(f"{flag} {value}" for flag, value in
                          (("--model", models), ("--tasks", tasks), ("--strategy", strategies)) if value)
        raise SelectionError(f"no results match {given} together; each matches on its own, "
                             f"but not in one row (models: {_listed(frame['model'])}; tasks: {_listed(frame['task'])})")
    return selected


def _curve_labels(frame: pd.DataFrame) -> pd.Series:
    from parallelbench.analysis.curves import with_curves

    return with_curves(frame[["strategy", "params"] + (["config"] if "config" in frame else [])])["curve"].astype(str)
