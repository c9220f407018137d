"""The leaderboard headline: the most tokens per step a strategy sustains above an accuracy bar.

Rule (as the public ParallelBench leaderboard defines it): walk the task-averaged operating
points from the lowest tokens per step upward, points with equal tokens per step counting
once with their best accuracy, and stop before the first point below the threshold.
Adaptive strategies interpolate linearly between the last point at or above and the first
point below; top-k strategies take the last point at or above, and so do autoregressive
models (one token per call: a single point, nothing to interpolate). 0 when even the first point
is below; the highest tokens per step when none falls below.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from parallelbench.analysis.curves import strategy_kind

DEFAULT_THRESHOLDS = (90.0, 80.0, 70.0, 60.0)  # the PB90..PB60 headline columns


def merge_equal_tps(points: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """Sort by tokens per step; equal tokens per step keep only their best accuracy."""
    best: dict[float, float] = {}
    for tps, acc in points:
        tps, acc = float(tps), float(acc)
        if tps != tps or acc != acc:  # NaN: an operating point without data
            continue
        best[tps] = max(acc, best.get(tps, float("-inf")))
    return sorted(best.items())


def sustained_tps(points: Iterable[tuple[float, float]], threshold: float, kind: str) -> float:
    """Most tokens per step reached while accuracy (%) stays >= threshold; see module docstring."""
    if kind not in ("topk", "adaptive", "autoregressive"):
        raise ValueError(f"kind must be 'topk', 'adaptive' or 'autoregressive', not {kind!r}")
    walk = merge_equal_tps(points)
    if not walk or walk[0][1] < threshold:
        return 0.0
    for i in range(1, len(walk)):
        tps, acc = walk[i]
        if acc < threshold:
            last_tps, last_acc = walk[i - 1]
            if kind != "adaptive":
                return last_tps
            return last_tps + (last_acc - threshold) * (tps - last_tps) / (last_acc - acc)
        # still at or above: keep walking
    return walk[-1][0]


def parse_thresholds(text: str) -> list[float]:
    """'80,75,70' -> [80.0, 75.0, 70.0]; raises ValueError naming the bad item."""
    values = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            value = float(item)
        except ValueError:
            raise ValueError(f"threshold {item!r} is not a number; use e.g. --thresholds 90,80,70,60") from None
        if not 0.0 <= value <= 100.0:
            raise ValueError(f"threshold {item} is outside 0..100 (accuracy is in percent)")
        values.append(value)
    if not values:
        raise ValueError("no thresholds given; use e.g. --thresholds 90,80,70,60")
    return values


def threshold_name(threshold: float) -> str:
    """80.0 -> '80', 72.5 -> '72.5' (JSON keys and column headers)."""
    return f"{threshold:g}"


def rank(curves: dict[str, tuple[str, list[tuple[float, float]]]], thresholds: Sequence[float] = DEFAULT_THRESHOLDS) -> pd.DataFrame:
    """Leaderboard table from {strategy: (kind, [(tps, accuracy %)])}, best first.

    Columns: strategy, kind, one column per threshold (name as `threshold_name`), points.
    Sorted by the thresholds in the order given (first decides, later ones break ties).
    """
    names = [threshold_name(t) for t in thresholds]
    rows = []
    for strategy, (kind, points) in curves.items():
        row = {"strategy": strategy, "kind": kind}
        for name, threshold in zip(names, thresholds):
            row[name] = sustained_tps(points, threshold, kind)
        row["points"] = len(merge_equal_tps(points))
        rows.append(row)
    table = pd.DataFrame(rows, columns=["strategy", "kind", *names, "points"])
    if len(table):
        table = table.sort_values(names + ["strategy"], ascending=[False] * len(names) + [True], kind="stable")
    return table.reset_index(drop=True)


def curves_from_points(averaged: pd.DataFrame) -> dict[str, tuple[str, list[tuple[float, float]]]]:
    """{strategy label: (kind, points)} from task-averaged points (`curves.average_points`).

    The label is the curve name; with several models it is prefixed ``model/``.
    """
    out: dict[str, tuple[str, list[tuple[float, float]]]] = {}
    if len(averaged) == 0:
        return out
    several = averaged["model"].nunique() > 1
    for (model, curve), group in averaged.groupby(["model", "curve"], sort=True):
        label = f"{model}/{curve}" if several else str(curve)
        kind = str(group["strategy_kind"].iloc[0])
        out[label] = (kind, list(zip(group["tps"], group["accuracy"])))
    return out


def read_curves_dir(directory: Path) -> dict[str, tuple[str, list[tuple[float, float]]]]:
    """External curves: one `<strategy-id>.csv` per strategy with columns task,tps,accuracy (%).

    Only rows with task `avg` (the task-averaged points) are ranked. Raises ValueError
    with the file name when a file lacks the columns or the `avg` rows.
    """
    directory = Path(directory)
    files = sorted(directory.glob("*.csv"))
    if not files:
        raise ValueError(f"no *.csv files in {directory}; expected one <strategy-id>.csv per strategy")
    out = {}
    for path in files:
        table = pd.read_csv(path)
        missing = {"task", "tps", "accuracy"} - set(table.columns)
        if missing:
            raise ValueError(f"{path.name} lacks column(s) {', '.join(sorted(missing))}; expected task,tps,accuracy")
        avg = table[table["task"].astype(str) == "avg"]
        if avg.empty:
            raise ValueError(f"{path.name} has no rows with task 'avg' (the task-averaged points to rank)")
        out[path.stem] = (strategy_kind(path.stem.split("[")[0]), list(zip(avg["tps"].astype(float), avg["accuracy"].astype(float))))
    return out


def as_json(table: pd.DataFrame, thresholds: Sequence[float]) -> dict[str, dict[str, float | None]]:
    """{strategy: {threshold: tps}} in leaderboard order; None where no setting qualifies (max rule)."""
    names = [threshold_name(t) for t in thresholds]
    return {row["strategy"]: {name: (None if row[name] != row[name] else float(row[name])) for name in names}
            for _, row in table.iterrows()}
