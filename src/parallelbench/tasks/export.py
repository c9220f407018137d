"""Write tasks' samples as JSONL (one file per task) and read such files back.

A line is `Sample.to_dict()`, so exported, imported and hand-made files all read
the same way, with no registry needed to score them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterable

from parallelbench.outputs import atomic_file
from parallelbench.tasks.base import Sample, Task


def task_filename(task_id: str) -> str:
    """`waiting_line/copy` -> `waiting_line__copy.jsonl` (flat, so any folder glob finds it)."""
    return task_id.replace("/", "__") + ".jsonl"


def write_samples(samples: Iterable[Sample], path: str | Path) -> int:
    """Write the file whole or not at all (`OutputError` for a read-only folder, a full disk ...)."""
    count = 0
    with atomic_file(path, "task samples") as fh:
        for s in samples:
            fh.write(json.dumps(s.to_dict(), ensure_ascii=False) + "\n")
            count += 1
    return count


def export_tasks(
    tasks: Iterable[Task],
    out_dir: str | Path,
    limit: int | None = None,
    samples_of: Callable[[Task, int | None], list[Sample]] | None = None,
) -> list[tuple[str, Path, int]]:
    """One JSONL per task under `out_dir`; returns (task id, file, sample count) rows."""
    out_dir = Path(out_dir)
    rows = []
    for task in tasks:
        samples = samples_of(task, limit) if samples_of else task.samples(limit)
        path = out_dir / task_filename(task.id)
        rows.append((task.id, path, write_samples(samples, path)))
    return rows


def read_samples(path: str | Path) -> list[Sample]:
    """Samples from a JSONL file, or from every `*.jsonl` under a folder (sorted, recursive)."""
    path = Path(path)
    if path.is_dir():
        files = sorted(path.rglob("*.jsonl"))
        if not files:
            raise FileNotFoundError(f"no .jsonl files under {path}; export some with `parallelbench tasks export`")
    elif path.is_file():
        files = [path]
    else:
        raise FileNotFoundError(f"{path} does not exist; give a task file or folder from `parallelbench tasks export`")
    out = []
    for f in files:
        for lineno, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                out.append(Sample.from_dict(json.loads(line)))
            except (json.JSONDecodeError, ValueError, TypeError) as exc:
                raise ValueError(f"{f}:{lineno}: not a sample line ({exc})") from exc
    return out
