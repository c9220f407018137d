"""Speed-quality operating points: accuracy against tokens per step, per task and task-averaged.

One operating point is one parameter setting of one strategy on one model (a `config`).
Points of the same model and strategy that differ only in the swept knob (k, threshold,
factor, steps, or a strategy's own knob in `STRATEGY_SWEEPS`) form one *curve*; any other
parameter that varies (block length, temperature ...) starts a curve of its own, so
semi-AR and any-order runs are never mixed.

Tokens per step of a point is the ratio of sums, generated tokens / forward passes
(`tps_mode="ratio"`), i.e. mean tokens over mean steps, which is how the paper averages
"accuracy and number of steps" for the oracle (appendix G.2). `tps_mode="mean"` averages
the per-sample ratios instead. Task-averaged points give each task equal weight: accuracy
and tokens per step are the means of the per-task values.
"""

from __future__ import annotations

import json
from collections.abc import Container, Iterable
from typing import Any

import numpy as np
import pandas as pd

from parallelbench.analysis.uncertainty import combine, interval

#: Strategies that unmask a fixed number of tokens per step (no interpolation on the leaderboard).
TOPK_STRATEGIES = frozenset({"random", "l2r", "confidence-topk", "topk-margin", "entropy-topk"})

#: Parameters that move any strategy along its own speed-quality curve.
SWEEP_KEYS = ("k", "threshold", "factor", "steps")
#: Extra speed knobs of strategies whose knob has another name (decoding/presets.py, schedules/).
STRATEGY_SWEEPS = {
    "eb": ("gamma",),
    "apd": ("mixture_weight",),
    "dus": ("block_length",),
    "wino": ("wide_threshold", "narrow_threshold"),
    "slowfast": ("fast_threshold",),
}

TPS_AXIS = "tokens per step (tokens / forward pass)"
ACCURACY_AXIS = "accuracy (%)"

POINT_KEYS = ["model", "strategy", "strategy_kind", "curve", "config"]


def strategy_kind(strategy: str) -> str:
    """"topk" for the fixed-k strategies listed in the paper, "adaptive" for everything else."""
    return "topk" if strategy in TOPK_STRATEGIES else "adaptive"


KINDS = ("topk", "adaptive", "autoregressive")


def known_kind(kind: object, strategy: str) -> str:
    """A stored `strategy_kind` as one the analysis knows: a custom strategy may declare any
    kind ("Kind.TOPK", "greedy", 5, None); anything unrecognised is read from the name."""
    text = str(kind).strip().lower() if isinstance(kind, (str, int, float)) and not isinstance(kind, bool) else ""
    if text in KINDS:
        return text
    if text.replace("_", "").replace("-", "").endswith("topk"):
        return "topk"
    return strategy_kind(strategy)


#: Options that change what is decoded rather than how fast; they split curves of user strategies too.
STRUCTURAL_KEYS = frozenset({"block_length", "temperature", "stop_at_eos", "remasking"})


class _AllExcept:
    """Every parameter name except a few: the speed knobs of a strategy we know nothing about."""

    def __init__(self, excluded: frozenset[str]):
        self.excluded = excluded

    def __contains__(self, key: object) -> bool:
        return key not in self.excluded


def sweep_keys(strategy: str) -> Container[str]:
    """The parameters whose values are points on one curve of `strategy` (others split curves).

    A user strategy ("module:Class", docs/strategies.md) has knobs of its own names
    (e.g. `ratio`); all of them except the structural ones are taken as its speed knobs,
    so `--param ratio=0.5,0.9` draws one curve, not one single-point curve per value.
    """
    if ":" in strategy:
        return _AllExcept(STRUCTURAL_KEYS)
    return SWEEP_KEYS + STRATEGY_SWEEPS.get(strategy, ())


def parse_params(value: Any) -> dict:
    """The params column is JSON text; tolerate dicts and empty values from hand-built frames."""
    if isinstance(value, dict):
        return value
    if value is None or (isinstance(value, float) and np.isnan(value)) or value == "":
        return {}
    return json.loads(value)


def parse_json_list(value: Any) -> list:
    """JSON list columns (order, token_texts, tokens_per_step); missing values become []."""
    if isinstance(value, list):
        return value
    if value is None or (isinstance(value, float) and np.isnan(value)) or value == "":
        return []
    parsed = json.loads(value)
    return parsed if isinstance(parsed, list) else []


def knob_label(strategy: str, params: dict) -> str:
    """The swept parameter(s) of one setting, e.g. ``threshold=0.9`` or ``k=2``: what tells the
    points of one curve apart (figures label each adaptive point with it)."""
    swept = sweep_keys(strategy)
    knobs = {k: v for k, v in sorted(params.items()) if k in swept and v is not None}
    return ",".join(f"{k}={v}" for k, v in knobs.items())


def curve_label(strategy: str, params: dict, shown: Iterable[str] | None = None) -> str:
    """Strategy name plus its fixed (non-swept) parameters, e.g. ``random[block_length=8]``.

    `shown` limits the parameters named (None: every non-null fixed one); unset (null)
    values are never named.
    """
    keys = set(params) if shown is None else set(shown)
    swept = sweep_keys(strategy)
    fixed = {k: params[k] for k in sorted(keys) if k in params and k not in swept and params[k] is not None}
    if not fixed:
        return strategy
    return strategy + "[" + ",".join(f"{k}={v}" for k, v in fixed.items()) + "]"


def varying_fixed_params(strategies: Iterable[str], params: Iterable[dict]) -> dict[str, set[str]]:
    """Per strategy, the non-swept parameters that take more than one value among `params`.

    Strategies record every option (defaults included), so naming only what varies keeps
    labels short: ``random`` and ``random[block_length=8]``, not every default. A key
    missing from some settings of a strategy also varies.
    """
    values: dict[str, dict[str, set[str]]] = {}
    present: dict[str, dict[str, int]] = {}
    settings: dict[str, int] = {}
    for strategy, options in zip(strategies, params):
        seen = values.setdefault(strategy, {})
        counts = present.setdefault(strategy, {})
        settings[strategy] = settings.get(strategy, 0) + 1
        swept = sweep_keys(strategy)
        for key, value in options.items():
            if key in swept:
                continue
            seen.setdefault(key, set()).add(json.dumps(value, sort_keys=True))
            counts[key] = counts.get(key, 0) + 1
    return {
        strategy: {k for k, v in seen.items() if len(v) > 1 or present[strategy][k] != settings[strategy]}
        for strategy, seen in values.items()
    }


def with_curves(frame: pd.DataFrame) -> pd.DataFrame:
    """Add `params_dict`, `curve` and (if absent or empty) `strategy_kind` / `config` columns.

    Work is done once per distinct (strategy, params) pair, not per row: a results frame
    repeats each setting for every task, sample and seed.
    """
    out = frame.copy()
    params_text = out["params"].map(lambda p: p if isinstance(p, str) else json.dumps(parse_params(p), sort_keys=True)) if "params" in out else pd.Series("{}", index=out.index)
    codes, uniques = pd.factorize(pd.Series(list(zip(out["strategy"].astype(str), params_text)), index=out.index))
    strategies = [u[0] for u in uniques]
    parsed = [parse_params(u[1]) for u in uniques]
    shown = varying_fixed_params(strategies, parsed)
    labels = np.array([curve_label(s, p, shown.get(s, set())) for s, p in zip(strategies, parsed)], dtype=object)
    kinds = np.array([strategy_kind(s) for s in strategies], dtype=object)
    dicts = np.empty(len(parsed), dtype=object)
    dicts[:] = parsed
    out["params_dict"] = dicts[codes] if len(out) else []
    guessed = kinds[codes] if len(out) else []
    if "strategy_kind" in out:
        given = out["strategy_kind"].to_numpy(dtype=object)
        names = out["strategy"].astype(str).to_numpy(dtype=object)
        cache: dict[tuple[str, str], str] = {}
        out["strategy_kind"] = [
            (cache.get((k, s)) or cache.setdefault((k, s), known_kind(k, s))) if isinstance(k, str) and k else g
            for k, g, s in zip(given, guessed, names)
        ]
    else:
        out["strategy_kind"] = guessed
    if "config" not in out:
        configs = np.array([s + ("[" + ",".join(f"{k}={v}" for k, v in sorted(p.items())) + "]" if p else "") for s, p in zip(strategies, parsed)], dtype=object)
        out["config"] = configs[codes] if len(out) else []
    out["curve"] = labels[codes] if len(out) else []
    return out


def _tps(group: pd.DataFrame, tps_mode: str) -> float:
    if tps_mode == "ratio":
        nfe = float(group["nfe"].sum())
        return float(group["num_tokens"].sum()) / nfe if nfe > 0 else float("nan")
    if tps_mode == "mean":
        return float(group["tps"].mean())
    raise ValueError(f"tps_mode must be 'ratio' or 'mean', not {tps_mode!r}")


#: Interval columns of every operating point: 95% interval of the accuracy (%) and how it was made.
CI_COLUMNS = ["ci_low", "ci_high", "ci_method"]


def task_points(frame: pd.DataFrame, tps_mode: str = "ratio", intervals: bool = True) -> pd.DataFrame:
    """One row per (model, config, task): accuracy (%) with its 95% interval, tokens per step,
    answer tokens per step, samples, mean NFE.

    `n` counts distinct samples (a sample decoded under several seeds counts once; `rows`
    counts decodes). `ci_low`/`ci_high` follow `uncertainty.interval`: Wilson for 0/1
    scores, a bootstrap over samples otherwise, clustered by sample when seeds repeat
    (`intervals=False`: NaN, for callers that need only the points). `answer_tps` is the
    ratio of sums of the tokens before the first stop token (`parallelbench.tps`) over NFE,
    NaN where a row's answer count is unknown.
    """
    columns = POINT_KEYS + ["task", "accuracy", "ci_low", "ci_high", "ci_method", "tps", "answer_tps", "n", "rows",
                            "nfe", "knob"]
    if frame is None or len(frame) == 0:
        return pd.DataFrame(columns=columns)
    from parallelbench.tps import with_answer_columns

    data = with_curves(with_answer_columns(frame))
    rows = []
    for key, group in data.groupby(POINT_KEYS + ["task"], sort=True, dropna=False):
        clusters = list(group["sample_id"]) if "sample_id" in group else None
        scores = group["score"].to_numpy(dtype=float)
        if intervals:
            ci = interval(scores, clusters)
            low, high, method, n = ci.low, ci.high, ci.method, ci.n
        else:
            low = high = float("nan")
            method, n = "none", len(set(clusters)) if clusters is not None else len(group)
        rows.append(
            dict(
                zip(POINT_KEYS + ["task"], key),
                accuracy=100.0 * float(group["score"].mean()),
                ci_low=100.0 * low,
                ci_high=100.0 * high,
                ci_method=method,
                tps=_tps(group, tps_mode),
                answer_tps=_answer_tps(group),
                n=int(n) if clusters is not None else int(len(group)),
                rows=int(len(group)),
                nfe=float(group["nfe"].mean()),
                knob=knob_label(str(key[1]), group["params_dict"].iloc[0]),
            )
        )
    return pd.DataFrame(rows, columns=columns)


def _answer_tps(group: pd.DataFrame) -> float:
    answer = pd.to_numeric(group["answer_tokens"], errors="coerce")
    nfe = float(pd.to_numeric(group["nfe"], errors="coerce").sum())
    if answer.isna().any() or not nfe > 0:
        return float("nan")
    return float(answer.sum()) / nfe


def average_points(points: pd.DataFrame) -> pd.DataFrame:
    """Task-averaged operating points: each task weighs the same (paper figure 7).

    The interval combines the tasks' intervals (`uncertainty.combine`, MOVER); `n` is the
    number of samples summed over tasks.
    """
    columns = POINT_KEYS + ["accuracy", "ci_low", "ci_high", "ci_method", "tps", "answer_tps", "n_tasks", "n", "knob"]
    if len(points) == 0:
        return pd.DataFrame(columns=columns)
    if "answer_tps" not in points:
        points = points.assign(answer_tps=float("nan"))
    grouped = points.groupby(POINT_KEYS, sort=True, dropna=False)
    out = grouped.agg(accuracy=("accuracy", "mean"), tps=("tps", "mean"), n_tasks=("task", "nunique"), n=("n", "sum"),
                      answer_tps=("answer_tps", lambda v: float(v.mean()) if v.notna().all() else float("nan"))
                      ).reset_index()
    if "ci_low" in points and points["ci_low"].notna().any():
        bounds = {key: combine(g["accuracy"], g["ci_low"], g["ci_high"])[1:] for key, g in grouped}
        keys = list(zip(*(out[k] for k in POINT_KEYS)))
        out["ci_low"] = [bounds[k][0] for k in keys]
        out["ci_high"] = [bounds[k][1] for k in keys]
        out["ci_method"] = "task average (MOVER)"
    else:
        out["ci_low"] = out["ci_high"] = float("nan")
        out["ci_method"] = "none"
    knobs = dict(zip(zip(points["model"], points["config"]), points["knob"])) if "knob" in points else {}
    out["knob"] = [knobs.get(key, "") for key in zip(out["model"], out["config"])]
    return out[columns].sort_values(["model", "curve", "tps"], kind="stable").reset_index(drop=True)


def curves(frame: pd.DataFrame, tps_mode: str = "ratio", intervals: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-task points, task-averaged points) for a results frame."""
    per_task = task_points(frame, tps_mode, intervals)
    return per_task, average_points(per_task)
