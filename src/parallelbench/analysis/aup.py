"""AUP, accuracy under parallelism: the d3LLM leaderboard's one-number speed-quality score.

Definition (Qian et al., "AUP: when Accuracy Meets Parallelism in Diffusion Language
Models", hao-ai-lab blog and github.com/hao-ai-lab/d3LLM, AUP_leaderboard/): for
(tokens per forward rho, accuracy y in percent) pairs sorted by rho, keep the points
with y >= y_1 - max_drop (y_1 the accuracy of the lowest-parallelism point), then

    AUP = rho_1 * y_1 + 1/2 * sum_i (rho_i - rho_{i-1}) * (y_i W(y_i) + y_{i-1} W(y_{i-1}))

with W(y) = min(exp(-alpha * (1 - y / y_max)), 1), alpha = 3 and y_max the best
accuracy among the rows compared on that task. Note the first term is not weighted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence


def weight(y: float, y_max: float, alpha: float = 3.0) -> float:
    """W(y): 1 at the best accuracy, decaying exponentially with the relative shortfall."""
    return min(math.exp(-alpha * (1.0 - y / y_max)), 1.0)


def aup(points: Iterable[Sequence[float]], y_max: float, *, alpha: float = 3.0, max_drop: float = 5.0) -> float:
    """AUP of (tokens per forward, accuracy %) points; y_max is the best accuracy compared."""
    pts = sorted((float(r), float(y)) for r, y in points)
    if not pts:
        raise ValueError("aup needs at least one (tokens per forward, accuracy) point")
    if any(r <= 0 or math.isnan(r) for r, _ in pts):
        raise ValueError("aup: tokens per forward must be positive")
    if not y_max > 0:
        raise ValueError("aup: y_max must be a positive accuracy in percent")
    floor = pts[0][1] - max_drop
    kept = [(r, y) for r, y in pts if y >= floor]
    total = kept[0][0] * kept[0][1]
    for (r0, y0), (r1, y1) in zip(kept, kept[1:]):
        total += 0.5 * (r1 - r0) * (y1 * weight(y1, y_max, alpha) + y0 * weight(y0, y_max, alpha))
    return total


def y_max_of(rows: Iterable[Iterable[Sequence[float]]]) -> float:
    """The leaderboard's y_max: the highest accuracy over every point of every compared row."""
    return max(float(y) for pts in rows for _, y in pts)


def aup_by_task(per_task, *, alpha: float = 3.0, max_drop: float = 5.0):
    """AUP of every strategy on every task, plus the task average, as a wide table.

    `per_task` has columns model, curve, task, tps, accuracy (%) (`curves.task_points`).
    Strategies are labelled like the leaderboard (``model/curve`` when several models).
    y_max per task is the best accuracy among all compared rows on that task, as the
    d3LLM leaderboard does. Columns: strategy, ``AUP`` (mean over the strategy's tasks),
    then one ``AUP <task>`` column per task.
    """
    import pandas as pd

    if per_task is None or len(per_task) == 0:
        return pd.DataFrame(columns=["strategy", "AUP"])
    frame = per_task.dropna(subset=["tps", "accuracy"])
    frame = frame[frame["tps"] > 0]
    several = frame["model"].nunique() > 1
    label = frame["model"].astype(str) + "/" + frame["curve"].astype(str) if several else frame["curve"].astype(str)
    frame = frame.assign(strategy=label)
    rows: dict[str, dict[str, float]] = {}
    for task, group in frame.groupby("task", sort=True):
        y_max = float(group["accuracy"].max())
        if not y_max > 0:
            continue
        for strategy, points in group.groupby("strategy", sort=True):
            value = aup(zip(points["tps"], points["accuracy"]), y_max, alpha=alpha, max_drop=max_drop)
            rows.setdefault(strategy, {})[f"AUP {task}"] = value
    tasks = sorted({c for r in rows.values() for c in r})
    out = pd.DataFrame([{"strategy": s, **v} for s, v in rows.items()], columns=["strategy", *tasks])
    out.insert(1, "AUP", out[tasks].mean(axis=1, skipna=True) if tasks else float("nan"))
    return out.sort_values(["AUP", "strategy"], ascending=[False, True], kind="stable").reset_index(drop=True)


def read_task_points_dir(directory):
    """Per-task points of external curves (`<strategy-id>.csv` with task,tps,accuracy), `avg` rows left out."""
    from pathlib import Path

    import pandas as pd

    parts = []
    for path in sorted(Path(directory).glob("*.csv")):
        table = pd.read_csv(path)
        if not {"task", "tps", "accuracy"} <= set(table.columns):
            continue
        table = table[table["task"].astype(str) != "avg"]
        parts.append(pd.DataFrame({"model": "", "curve": path.stem, "task": table["task"].astype(str),
                                   "tps": table["tps"].astype(float), "accuracy": table["accuracy"].astype(float)}))
    if not parts:
        return pd.DataFrame(columns=["model", "curve", "task", "tps", "accuracy"])
    return pd.concat(parts, ignore_index=True)
