"""Leaderboard headlines with 95% intervals, and which strategies are tied with the leader.

Each headline (tokens per step sustained at >= X% accuracy, `leaderboard.sustained_tps`,
and AUP, `aup.aup`) is recomputed on bootstrap resamples of the samples: per task, sample
ids are drawn with replacement and every config keeps all rows (seeds) of the drawn ids.
The same draw serves every config and model, so the comparison is paired. Each replicate
recomputes per-task accuracy and tokens per step (ratio of sums), the task averages and
the headline; the interval is the central 95% of the replicates, widened to contain the
headline itself (a step-shaped headline such as top-k's can sit at an interval's edge).

A strategy is *tied* on a headline when its interval overlaps the leader's (the highest
headline); the leader is marked tied when anyone is tied with it. Further down, `rank`
gives rows that overlap the top row of the group above them that row's rank.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from parallelbench.analysis.aup import aup
from parallelbench.analysis.curves import with_curves
from parallelbench.analysis.leaderboard import sustained_tps, threshold_name
from parallelbench.analysis.pb_rules import check_rule, max_rule_tps, pb_max
from parallelbench.analysis.uncertainty import BOOTSTRAP_SEED, percentile

#: Resamples for leaderboard headlines (each replicate walks every curve once per threshold and
#: computes every AUP; 500 puts each 2.5% tail on about a dozen replicates).
HEADLINE_REPS = 500


def _arrays(data: pd.DataFrame) -> tuple[list[str], dict]:
    """Per task: the sample ids and, per config, [6, S] sums over seeds: score, rows, tokens,
    nfe, max-rule tokens per step (`pb_rules.max_rule_tps`) and the rows that have it."""
    configs = sorted(data["_cfg"].unique())
    per_task: dict[str, tuple[int, dict[str, np.ndarray]]] = {}
    for task, group in data.groupby("task", sort=True):
        ids, codes = np.unique(group["sample_id"].astype(str).to_numpy(), return_inverse=True)
        stats: dict[str, np.ndarray] = {}
        cfg_codes = group["_cfg"].to_numpy()
        max_tps = group["_max_tps"].to_numpy(float)
        values = np.stack([group["score"].to_numpy(float), np.ones(len(group)), group["num_tokens"].to_numpy(float),
                           group["nfe"].to_numpy(float), np.nan_to_num(max_tps), np.isfinite(max_tps).astype(float)])
        for cfg in np.unique(cfg_codes):
            mine = cfg_codes == cfg
            sums = np.zeros((len(values), len(ids)))
            for row in range(len(values)):
                sums[row] = np.bincount(codes[mine], weights=values[row, mine], minlength=len(ids))
            stats[cfg] = sums
        per_task[task] = (len(ids), stats)
    return configs, per_task


def headline_intervals(frame: pd.DataFrame, thresholds: Sequence[float], *, reps: int = HEADLINE_REPS,
                       seed: int = BOOTSTRAP_SEED, with_aup: bool = True, rule: str = "site",
                       tps: str = "window") -> pd.DataFrame:
    """One row per strategy (labelled as `leaderboard.curves_from_points` does): for each
    threshold name and, with `with_aup`, for "AUP", the columns `<name>_ci_low` and
    `<name>_ci_high` (2.5th and 97.5th percentiles of the bootstrap headlines). `rule` is the
    PB rule of the thresholds (`pb_rules.PB_RULES`)."""
    return bootstrap_intervals(frame, thresholds, reps=reps, seed=seed, with_aup=with_aup, rule=rule, tps=tps)[0]


def bootstrap_intervals(frame: pd.DataFrame, thresholds: Sequence[float], *, reps: int = HEADLINE_REPS,
                        seed: int = BOOTSTRAP_SEED, with_aup: bool = True, rule: str = "site", tps: str = "window"
                        ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(`headline_intervals`' table, per-task AUP intervals): the second has one row per
    (strategy, task) with `ci_low`, `ci_high` of that task's AUP, from the same replicates.
    `tps`: "answer" when `frame` is `tps.measured(frame, "answer")` (the max rule's per-row rate)."""
    check_rule(rule)
    names = [threshold_name(t) for t in thresholds]
    heads = names + (["AUP"] if with_aup else [])
    columns = ["strategy"] + [f"{h}_{side}" for h in heads for side in ("ci_low", "ci_high")]
    task_columns = ["strategy", "task", "ci_low", "ci_high"]
    if frame is None or len(frame) == 0 or "sample_id" not in frame:
        return pd.DataFrame(columns=columns), pd.DataFrame(columns=task_columns)
    data = with_curves(frame)
    data = data[np.isfinite(data["score"].astype(float))]
    several = data["model"].nunique() > 1
    data = data.assign(
        _label=(data["model"].astype(str) + "/" + data["curve"].astype(str)) if several else data["curve"].astype(str),
        _cfg=data["model"].astype(str) + "\x00" + data["config"].astype(str),
        _max_tps=max_rule_tps(data, tps) if rule == "max" and len(data) else np.nan,
    )
    configs, per_task = _arrays(data)
    label_of = dict(zip(data["_cfg"], data["_label"]))
    kind_of = dict(zip(data["_label"], data["strategy_kind"].astype(str)))
    labels = sorted(set(label_of.values()))
    members = {label: [c for c in configs if label_of[c] == label] for label in labels}
    index = {c: i for i, c in enumerate(configs)}
    tasks = sorted(per_task)
    rng = np.random.default_rng(seed)
    acc = np.full((reps, len(configs), len(tasks)), np.nan)
    tps = np.full_like(acc, np.nan)
    max_tps = np.full_like(acc, np.nan)
    for t, task in enumerate(tasks):
        size, stats = per_task[task]
        weights = rng.multinomial(size, np.full(size, 1.0 / size), size=reps).astype(float)
        for cfg, sums in stats.items():
            drawn = weights @ sums.T  # [reps, 6]
            with np.errstate(invalid="ignore", divide="ignore"):
                acc[:, index[cfg], t] = np.where(drawn[:, 1] > 0, 100.0 * drawn[:, 0] / drawn[:, 1], np.nan)
                tps[:, index[cfg], t] = np.where(drawn[:, 3] > 0, drawn[:, 2] / drawn[:, 3], np.nan)
                max_tps[:, index[cfg], t] = np.where(drawn[:, 5] > 0, drawn[:, 4] / drawn[:, 5], np.nan)
    with np.errstate(invalid="ignore"), _quiet_nanmean():
        avg_acc = np.nanmean(acc, axis=2)
        avg_tps = np.nanmean(max_tps if rule == "max" else tps, axis=2)
    replicates = {label: {h: np.full(reps, np.nan) for h in heads} for label in labels}
    task_replicates: dict[tuple[str, str], np.ndarray] = {}
    member_idx = {label: np.array([index[c] for c in members[label]]) for label in labels}
    for r in range(reps):
        for label in labels:
            idx = member_idx[label]
            points = list(zip(avg_tps[r, idx], avg_acc[r, idx]))
            for name, threshold in zip(names, thresholds):
                if rule == "max":
                    best = pb_max(points, threshold)
                    replicates[label][name][r] = 0.0 if best is None else best
                else:
                    replicates[label][name][r] = sustained_tps(points, threshold, kind_of[label])
        if with_aup:
            means, per = _aup_replicate(acc[r], tps[r], member_idx)
            for label, value in means.items():
                replicates[label]["AUP"][r] = value
            for (label, t), value in per.items():
                task_replicates.setdefault((label, tasks[t]), np.full(reps, np.nan))[r] = value
    rows = []
    for label in labels:
        row = {"strategy": label}
        for h in heads:
            row[f"{h}_ci_low"], row[f"{h}_ci_high"] = percentile(replicates[label][h])
        rows.append(row)
    task_rows = [{"strategy": label, "task": task, **dict(zip(("ci_low", "ci_high"), percentile(values)))}
                 for (label, task), values in sorted(task_replicates.items())]
    return pd.DataFrame(rows, columns=columns), pd.DataFrame(task_rows, columns=task_columns)


class _quiet_nanmean:
    """Silence numpy's 'Mean of empty slice' warning (a config without data on a task)."""

    def __enter__(self):
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore", category=RuntimeWarning)

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


def _aup_replicate(acc: np.ndarray, tps: np.ndarray, member_idx: dict[str, np.ndarray]
                   ) -> tuple[dict[str, float], dict[tuple[str, int], float]]:
    """AUP of every strategy for one replicate's per-task points [configs, tasks]: the task
    mean per strategy, and the value per (strategy, task index)."""
    out: dict[str, list[float]] = {}
    per: dict[tuple[str, int], float] = {}
    ok_all = np.isfinite(acc) & np.isfinite(tps) & (tps > 0)
    for t in range(acc.shape[1]):
        ok = ok_all[:, t]
        if not ok.any():
            continue
        column_acc, column_tps = acc[:, t], tps[:, t]
        y_max = float(column_acc[ok].max())
        if not y_max > 0:
            continue
        for label, idx in member_idx.items():
            idx = idx[ok[idx]]
            if idx.size:
                value = aup(zip(column_tps[idx].tolist(), column_acc[idx].tolist()), y_max)
                per[label, t] = value
                out.setdefault(label, []).append(value)
    return {label: sum(values) / len(values) for label, values in out.items()}, per


def with_intervals(table: pd.DataFrame, intervals: pd.DataFrame, heads: Sequence[str]) -> pd.DataFrame:
    """The leaderboard `table` (columns strategy and each head) with `<head>_ci_low/_ci_high/_tied`,
    and `ci_low`, `ci_high`, `tied` for the first head (the one that ranks).

    Intervals are widened to contain the table's own headline value; a strategy without an
    interval (no per-sample data) gets NaN bounds and is never tied.
    """
    out = table.copy()
    bounds = intervals.set_index("strategy") if len(intervals) else pd.DataFrame()
    for head in heads:
        lows, highs = [], []
        for strategy, value in zip(out["strategy"], out[head]):
            low = bounds.at[strategy, f"{head}_ci_low"] if strategy in bounds.index else math.nan
            high = bounds.at[strategy, f"{head}_ci_high"] if strategy in bounds.index else math.nan
            if value == value and low == low:
                low, high = min(low, value), max(high, value)
            lows.append(low)
            highs.append(high)
        out[f"{head}_ci_low"], out[f"{head}_ci_high"] = lows, highs
        out[f"{head}_tied"] = tied_with_leader(out[head].to_numpy(float), np.array(lows, float), np.array(highs, float))
    if heads:
        first = heads[0]
        out["ci_low"], out["ci_high"], out["tied"] = out[f"{first}_ci_low"], out[f"{first}_ci_high"], out[f"{first}_tied"]
        out.insert(0, "rank", shared_ranks(out["ci_low"].to_numpy(float), out["ci_high"].to_numpy(float)))
    return out


def shared_ranks(lows: np.ndarray, highs: np.ndarray) -> list[int]:
    """Ranks for rows already sorted best first: a row whose interval overlaps that of the top
    row of the group above it shares that row's rank (1, 1, 3, 3, 3 ...), so two strategies
    the samples cannot order are not shown as first and second, wherever they stand."""
    ranks: list[int] = []
    top = 0
    for i in range(len(lows)):
        known = np.isfinite(lows[i]) and np.isfinite(lows[top]) and i > 0
        if known and highs[i] >= lows[top] and lows[i] <= highs[top]:
            ranks.append(ranks[top])
        else:
            top = i
            ranks.append(i + 1)
    return ranks


def tied_with_leader(values: np.ndarray, lows: np.ndarray, highs: np.ndarray) -> list[bool]:
    """Whose interval overlaps the leader's (highest value); the leader too when anyone does."""
    finite = np.isfinite(values)
    if not finite.any():
        return [False] * len(values)
    leader = int(np.nanargmax(np.where(finite, values, -np.inf)))
    lead_low, lead_high = lows[leader], highs[leader]
    if not (np.isfinite(lead_low) and np.isfinite(lead_high)):
        return [False] * len(values)
    tied = [bool(i != leader and np.isfinite(lows[i]) and highs[i] >= lead_low and lows[i] <= lead_high) for i in range(len(values))]
    tied[leader] = any(tied)
    return tied
