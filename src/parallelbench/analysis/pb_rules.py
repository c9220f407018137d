"""The two PBx rules: the public site's walk (`site`, the default) and the authors' `pb analyze` (`max`).

PBx is the most tokens per step a strategy sustains at >= x% task-averaged accuracy. The
two published tools read that sentence differently:

- `site` (`leaderboard.sustained_tps`): the points of a curve, tokens per step as a ratio
  of sums (tokens / forward passes), walked from the lowest tokens per step upward; the
  walk stops before the first point below x, adaptive strategies interpolate linearly to
  the crossing, top-k strategies keep the last point at or above. This is the rule behind
  the public leaderboard's numbers.
- `max` (the 2026 rewrite's `compute_pb_scores`, printed by `pb analyze`): every
  parameter setting is one group; a group's score is the mean over tasks of the task's
  mean score, its tokens per step the mean over tasks of the task's mean over samples of
  max_tokens / NFE (exactly k for top-k strategies); PBx is the LARGEST tokens per step of
  any group whose score is >= x, with no interpolation, and a later recovery counts. None
  when no group qualifies. `pb analyze` gives it per strategy and pooled over strategies.

max_tokens is the generation length a row was decoded with. The results store does not
record it: the runner decodes every sample of a task with that task's `max_new_tokens`,
so `generation_lengths` reads it from the task registry; for a task the registry does not
know (a task from a file, an old id) it falls back to the row's committed tokens
(`num_tokens`), which equals the generation length whenever the whole canvas is decoded.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from parallelbench.analysis.curves import with_curves
from parallelbench.analysis.leaderboard import threshold_name

#: Valid values of `--pb-rule`, the default first.
PB_RULES = ("site", "max")
RULE_TEXT = {
    "site": "site rule (the public leaderboard's): walk the points from the fewest tokens per step up, stop before "
            "the first point below the threshold, adaptive strategies interpolate to the crossing",
    "max": "max rule (the authors' pb analyze): the largest task-averaged tokens per step (per-sample mean of "
           "max_tokens / NFE; k for top-k) of any setting whose task-averaged accuracy reaches the threshold, "
           "no interpolation",
}
#: The strategy label of the pooled row: every setting of every strategy of a model, as `pb analyze` prints it.
POOLED = "all strategies (pooled)"


class PBRuleError(ValueError):
    """An unknown --pb-rule value."""


def check_rule(rule: str) -> str:
    """`rule` when it is one of `PB_RULES`; else PBRuleError naming the valid ones."""
    if rule not in PB_RULES:
        raise PBRuleError(f"unknown PB rule {rule!r}; use one of: {', '.join(PB_RULES)} "
                          "(site: the public leaderboard's walk, max: the authors' pb analyze)")
    return rule


def generation_lengths(frame: pd.DataFrame) -> pd.Series:
    """max_tokens of every row: its task's `max_new_tokens` (what the runner decoded with), or
    the row's `num_tokens` where the task registry does not know the task."""
    from parallelbench.tasks import registry

    known = registry()
    lengths = {t: float(known[t].max_new_tokens) for t in frame["task"].astype(str).unique() if t in known}
    mapped = frame["task"].astype(str).map(lengths)
    return mapped.fillna(pd.to_numeric(frame["num_tokens"], errors="coerce")).astype(float)


def _top_k(params: dict, max_tokens: float) -> float:
    """k of a top-k setting: its `k`, else max_tokens / steps (how `pb analyze` derives it); NaN if neither."""
    k = params.get("k")
    if isinstance(k, (int, float)) and not isinstance(k, bool) and k > 0:
        return float(k)
    steps = params.get("steps")
    if isinstance(steps, (int, float)) and not isinstance(steps, bool) and steps > 0 and max_tokens > 0:
        return max_tokens / float(steps)
    return math.nan


def max_rule_tps(data: pd.DataFrame, tps: str = "window") -> np.ndarray:
    """Tokens per step of every row as `pb analyze` counts it: k for top-k settings, 1 for
    autoregressive rows (one token per call), max_tokens / NFE otherwise; NaN when the row
    has no forward passes. `data` is `curves.with_curves(frame)`. With `tps="answer"` (`data`
    from `tps.measured(frame, "answer")`) every row's own answer tokens / NFE instead."""
    nfe = pd.to_numeric(data["nfe"], errors="coerce").to_numpy(float)
    if tps == "answer":
        tokens = pd.to_numeric(data["num_tokens"], errors="coerce").to_numpy(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(nfe > 0, tokens / nfe, np.nan)
    lengths = generation_lengths(data).to_numpy(float)
    kinds = data["strategy_kind"].astype(str).to_numpy()
    out = np.full(len(data), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        measured = np.where(nfe > 0, lengths / nfe, np.nan)
    for i, (kind, params) in enumerate(zip(kinds, data["params_dict"])):
        if not nfe[i] > 0:
            continue
        if kind == "topk":
            k = _top_k(params, lengths[i])
            out[i] = k if k == k else measured[i]
        elif kind == "autoregressive":
            out[i] = 1.0
        else:
            out[i] = measured[i]
    return out


def _labelled(frame: pd.DataFrame, tps: str = "window") -> pd.DataFrame:
    data = with_curves(frame)
    data = data[np.isfinite(pd.to_numeric(data["score"], errors="coerce").to_numpy(float))].copy()
    several = data["model"].nunique() > 1
    data["label"] = (data["model"].astype(str) + "/" + data["curve"].astype(str)) if several else data["curve"].astype(str)
    data["max_tps"] = max_rule_tps(data, tps)
    return data[np.isfinite(data["max_tps"].to_numpy(float))]


def max_rule_points(frame: pd.DataFrame, tps: str = "window") -> pd.DataFrame:
    """One row per (model, setting): `accuracy` (%) and `tps` as the max rule averages them
    (per task the mean over rows, then the mean over tasks), `label` (the leaderboard's
    strategy name), `strategy_kind`, `n_tasks`; `tps` as in `max_rule_tps`."""
    columns = ["model", "label", "config", "strategy_kind", "accuracy", "tps", "n_tasks"]
    if frame is None or len(frame) == 0:
        return pd.DataFrame(columns=columns)
    data = _labelled(frame, tps)
    if data.empty:
        return pd.DataFrame(columns=columns)
    data["score100"] = 100.0 * data["score"].astype(float)
    per_task = data.groupby(["model", "label", "config", "strategy_kind", "task"], sort=True).agg(
        accuracy=("score100", "mean"), tps=("max_tps", "mean")).reset_index()
    out = per_task.groupby(["model", "label", "config", "strategy_kind"], sort=True).agg(
        accuracy=("accuracy", "mean"), tps=("tps", "mean"), n_tasks=("task", "nunique")).reset_index()
    return out[columns]


def pb_max(points: Iterable[tuple[float, float]], threshold: float) -> float | None:
    """The largest tokens per step among (tps, accuracy %) points with accuracy >= threshold; None if none."""
    qualifying = [float(t) for t, a in points if a == a and t == t and float(a) >= threshold]
    return max(qualifying) if qualifying else None


def max_rule_table(frame: pd.DataFrame, thresholds: Sequence[float], *, pooled: bool = False,
                   tps: str = "window") -> pd.DataFrame:
    """The leaderboard table under the max rule: columns strategy, kind, one per threshold
    (NaN where no setting qualifies, `pb analyze`'s None), points; best first (NaN last).
    With `pooled`, one row per model instead: every setting of every strategy (kind "pooled").
    `tps` as in `max_rule_tps`."""
    points = max_rule_points(frame, tps)
    if pooled:
        several = points["model"].nunique() > 1
        groups = [((f"{m}/{POOLED}" if several else POOLED), "pooled", g) for m, g in points.groupby("model", sort=True)]
    else:
        groups = [(label, str(g["strategy_kind"].iloc[0]), g) for label, g in points.groupby("label", sort=True)]
    return _max_table(((label, kind, list(zip(g["tps"], g["accuracy"]))) for label, kind, g in groups), thresholds)


def _max_table(curves: Iterable[tuple[str, str, list[tuple[float, float]]]], thresholds: Sequence[float]) -> pd.DataFrame:
    """One row per (strategy, kind, [(tps, accuracy %)]): PBx under the max rule, best first."""
    names = [threshold_name(t) for t in thresholds]
    rows = []
    for strategy, kind, pairs in curves:
        row = {"strategy": strategy, "kind": kind, "points": len(pairs)}
        for name, threshold in zip(names, thresholds):
            value = pb_max(pairs, threshold)
            row[name] = math.nan if value is None else value
        rows.append(row)
    table = pd.DataFrame(rows, columns=["strategy", "kind", *names, "points"])
    if len(table):
        table = table.sort_values(names + ["strategy"], ascending=[False] * len(names) + [True],
                                  na_position="last", kind="stable")
    return table.reset_index(drop=True)


def max_rule_from_curves(curves: dict[str, tuple[str, list[tuple[float, float]]]], thresholds: Sequence[float]) -> pd.DataFrame:
    """The max rule on external curves ({strategy: (kind, [(tps, accuracy %)])}): their points are
    already task-averaged, so tokens per step is whatever the files give."""
    return _max_table(((strategy, kind, list(points)) for strategy, (kind, points) in curves.items()), thresholds)
