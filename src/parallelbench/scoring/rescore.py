"""Scoring a results database's stored outputs again, under a scoring mode, without decoding.

A row keeps the model's output text, so any scorer or mode can be applied later. The
samples come from the task registry when the row was produced from the registered task
with the same generator settings (its recorded data version), or from task files the
user passes (`parallelbench tasks export` or `tasks import` output) for anything else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

from parallelbench.scoring.base import check_mode

if TYPE_CHECKING:
    from parallelbench.tasks.base import Sample


@dataclass
class Rescored:
    rows: list[dict[str, Any]] = field(default_factory=list)  # one per scored row (see `rescore_rows`)
    missing: list[tuple[str, str]] = field(default_factory=list)  # (task, sample_id) of each row with no sample


def _data_version(versions: Any) -> str | None:
    try:
        value = json.loads(versions) if isinstance(versions, str) else versions
    except ValueError:
        return None
    return str(value.get("data")) if isinstance(value, dict) and value.get("data") else None


def _key(row: dict[str, Any]) -> tuple[str, str, str | None]:
    return str(row["task"]), str(row["sample_id"]), _data_version(row.get("versions"))


def find_samples(rows: Iterable[dict[str, Any]], given: dict[str, "Sample"] | None = None):
    """(task, sample id, recorded data version) -> Sample for every row whose sample can be
    found, and the (task, sample id) of the rest.

    A sample of `given` (by id) wins; else the registered task's sample when the row's
    recorded data version matches the registered generator settings (or is not recorded).
    """
    from parallelbench.runner.units import task_data_version  # noqa: PLC0415
    from parallelbench.tasks import registry  # noqa: PLC0415

    given = given or {}
    tasks = registry()
    cache: dict[str, tuple[str, dict[str, "Sample"]]] = {}
    found: dict[tuple[str, str, str | None], "Sample"] = {}
    missing: list[tuple[str, str]] = []
    for row in rows:
        key = _key(row)
        if key in found:
            continue
        task_id, sample_id, recorded = key
        sample = given.get(sample_id)
        task = tasks.get(task_id)
        if sample is None and task is not None:
            if task_id not in cache:
                cache[task_id] = (task_data_version(task), {s.id: s for s in task.samples()})
            version, by_id = cache[task_id]
            if recorded is None or recorded == version:
                sample = by_id.get(sample_id)
        if sample is None:
            missing.append((task_id, sample_id))  # one entry per row: the count is of rows
        else:
            found[key] = sample
    return found, missing


def rescore_rows(
    rows: list[dict[str, Any]],
    *,
    mode: str = "default",
    given: dict[str, "Sample"] | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> Rescored:
    """Score every row's stored `output` again in `mode`.

    Each result row: model, config, task, sample_id, seed, ``stored`` (the score in the
    database), ``stored_error`` (the scorer error recorded with it, else None), ``score``, ``components``
    and ``meta`` (now; ``meta["error"]`` when the scorer failed).
    """
    from parallelbench.scoring.batch import score_many  # noqa: PLC0415
    from parallelbench.scoring.errors import error_of_versions  # noqa: PLC0415

    check_mode(mode)
    found, missing = find_samples(rows, given)
    chosen = [r for r in rows if _key(r) in found]
    samples = [found[_key(r)] for r in chosen]
    results = score_many(samples, [str(r.get("output") or "") for r in chosen], mode=mode, on_progress=on_progress)
    out = Rescored(missing=missing)
    for row, result in zip(chosen, results):
        stored = row.get("score")
        out.rows.append({
            "model": row.get("model"), "config": row.get("config"), "task": row["task"],
            "sample_id": row["sample_id"], "seed": row.get("seed"),
            "stored": None if stored is None else float(stored),
            "stored_error": error_of_versions(row.get("versions")),  # the stored score is no score
            "score": float(result.score), "components": dict(result.components), "meta": dict(result.meta),
        })
    return out
