"""The task map of appendix G.1 (figure 6): how parallelizable a task is, and which order it likes.

x, parallelizability: with any-order top-k decoding (no semi-AR blocks), the centre of mass
of the score over tokens per step, sum_k k*score_k / sum_k score_k. Small values mean the
score is concentrated at small k, i.e. the task is hard to parallelize; the plot reverses
the axis so that, as in the paper, harder tasks sit on the right. The value depends on the
k grid swept, so only compare tasks run on the same grid.

y, decoding-order preference: at k = 2, a least-squares line of accuracy (%) against the
semi-AR block length. The paper reads a positive value as "better with smaller blocks
(more left-to-right)", so the slope is taken against *decreasing* block length; by default
block lengths are on a log2 scale (they are swept in powers of two), making the unit
"accuracy points per halving of the block length". `block_scale="linear"` fits against the
block length itself (unit: points per token of block length, sign as above).

Every (model, strategy) pair yields its own x and y; a task's coordinates are their means,
as the paper averages over models and top-k strategies.

accuracy level: the centre of mass is normalised by the total score, so a task solved 40%
of the time at every k sits as far left as one solved 100% of the time at every k. The map
therefore also carries `accuracy`, the mean accuracy (%) of the same any-order top-k
points that give x (each (model, strategy) pair's mean over its k grid, then the mean over
pairs), and the plots draw it as the marker colour.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from parallelbench.analysis.curves import curve_label, with_curves

COLUMNS = ["task", "category", "parallelizability", "order_slope", "accuracy", "x_groups", "y_groups"]
X_AXIS = "parallelizability: centre of mass of score over k (tokens per step); right = harder"
Y_AXIS = "order preference: Δ accuracy (%) per halving of block length at k = 2"
X_SHORT = "x: centre of mass over k (tokens/step); right = harder"
Y_SHORT = "y: Δ accuracy (%) per halving of block length"
ACCURACY_LEVEL = "accuracy level (%): mean over the any-order top-k points that give x"
#: The definition printed under every task map (static and interactive).
DEFINITION = (
    "x = sum_k k·acc_k / sum_k acc_k over the k grid swept with any-order top-k decoding (the paper's centre of mass, "
    "appendix G.1), averaged over (model, strategy) pairs; the axis is reversed, harder-to-parallelize tasks on the right. "
    "x ignores the accuracy level: colour = mean accuracy (%) of the same points. "
    "y = slope of accuracy (%) against log2 of decreasing semi-AR block length at k = 2 (> 0: gains from more left-to-right order)."
)


def _block_length(params: dict) -> float | None:
    value = params.get("block_length")
    if value is None or value == 0:
        return None
    return float(value)


def _tokens_per_step(params: dict, num_tokens) -> float | None:
    """k of a top-k run; runs given as a number of steps use num_tokens / steps, rounded."""
    if params.get("k") is not None:
        return float(params["k"])
    if params.get("steps"):
        return float(max(1, round(float(num_tokens) / float(params["steps"]))))
    return None


def centre_of_mass(ks, scores) -> float:
    """sum k*score_k / sum score_k; NaN when every score is 0 (nothing to weigh)."""
    ks = np.asarray(ks, dtype=float)
    scores = np.asarray(scores, dtype=float)
    total = scores.sum()
    return float((ks * scores).sum() / total) if total > 0 else float("nan")


def order_slope(block_lengths, accuracies, block_scale: str = "log2") -> float:
    """Slope of accuracy against decreasing block length (positive: smaller blocks help)."""
    x = np.asarray(block_lengths, dtype=float)
    y = np.asarray(accuracies, dtype=float)
    if block_scale == "log2":
        x = np.log2(x)
    elif block_scale != "linear":
        raise ValueError(f"block_scale must be 'log2' or 'linear', not {block_scale!r}")
    if len(np.unique(x)) < 2:
        return float("nan")
    slope = np.polyfit(x, y, 1)[0]
    return float(-slope)


def task_map(frame: pd.DataFrame, block_scale: str = "log2", order_k: int = 2) -> pd.DataFrame:
    """One row per task with x (`parallelizability`) and y (`order_slope`); NaN where data is missing."""
    if frame is None or len(frame) == 0:
        return pd.DataFrame(columns=COLUMNS)
    data = with_curves(frame)
    data = data[data["strategy_kind"] == "topk"]
    if data.empty:
        return pd.DataFrame(columns=COLUMNS)
    data = data.assign(
        _k=[_tokens_per_step(p, n) for p, n in zip(data["params_dict"], data["num_tokens"])],
        _block=[_block_length(p) for p in data["params_dict"]],
        _family=[curve_label(s, {k: v for k, v in p.items() if k != "block_length"}) for s, p in zip(data["strategy"], data["params_dict"])],
    )
    data = data[data["_k"].notna()]
    rows = []
    for task, runs in data.groupby("task", sort=True):
        xs, ys, levels = [], [], []
        any_order = runs[runs["_block"].isna()]
        for _, group in any_order.groupby(["model", "_family"], sort=True):
            by_k = group.groupby("_k")["score"].mean()
            if len(by_k) >= 2:
                xs.append(centre_of_mass(by_k.index, by_k.values))
                levels.append(100.0 * float(by_k.mean()))
        blocked = runs[runs["_block"].notna() & (runs["_k"].astype(float) == float(order_k))]
        for _, group in blocked.groupby(["model", "_family"], sort=True):
            by_block = group.groupby("_block")["score"].mean() * 100.0
            ys.append(order_slope(by_block.index, by_block.values, block_scale))
        xs = [x for x in xs if not np.isnan(x)]
        ys = [y for y in ys if not np.isnan(y)]
        category = runs["category"].iloc[0] if "category" in runs else ""
        rows.append(
            dict(
                task=task,
                category=category,
                parallelizability=float(np.mean(xs)) if xs else float("nan"),
                order_slope=float(np.mean(ys)) if ys else float("nan"),
                accuracy=float(np.mean(levels)) if levels else float("nan"),
                x_groups=len(xs),
                y_groups=len(ys),
            )
        )
    return pd.DataFrame(rows, columns=COLUMNS)
