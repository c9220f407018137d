"""`parallelbench results --compare A B`: two configs, paired on the samples both decoded.

A config is named as `results` lists it: the strategy config label (strategy and its
options, e.g. ``confidence-topk[k=2]``), followed by ``@MODEL`` (the model spec, e.g.
``@tiny`` or ``@hf:org/name``) when the database holds it for more than one model.
Rows pair up when they share task, sample id and seed; repeated seeds of a sample stay
together in the bootstrap (`analysis.uncertainty.paired_difference`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from parallelbench.analysis.uncertainty import PairedDifference, paired_difference
from parallelbench.display import counted, display_name

if TYPE_CHECKING:
    import pandas as pd

PAIR_KEYS = ["task", "sample_id", "seed"]


class CompareError(ValueError):
    """A --compare argument names no config, or two configs share no samples (one line)."""


@dataclass(frozen=True)
class Comparison:
    a: tuple[str, str]  # (config, model)
    b: tuple[str, str]
    result: PairedDifference
    tasks: int


def resolve(name: str, frame: "pd.DataFrame") -> tuple[str, str]:
    """(config, model) that `name` (CONFIG or CONFIG@MODEL) picks in `frame`; CompareError if none or several."""
    pairs = set(zip(frame["config"].astype(str), frame["model"].astype(str)))
    configs = {c for c, _ in pairs}
    candidates = []
    if name in configs:
        candidates = sorted((c, m) for c, m in pairs if c == name)
        if len(candidates) > 1:
            models = ", ".join(display_name(m) for _, m in candidates[:12])
            shown = display_name(name)
            raise CompareError(f"config {shown!r} was run on several models ({models}); name one as {shown}@MODEL, "
                               f"e.g. {shown}@{display_name(candidates[0][1])}")
        return candidates[0]
    for i, char in enumerate(name):  # CONFIG@MODEL: any '@' may be the separator
        if char == "@" and (name[:i], name[i + 1 :]) in pairs:
            return (name[:i], name[i + 1 :])
    known = sorted(configs)
    shown = ", ".join(display_name(k) for k in known[:12]) + (f", ... ({len(known)} in all)" if len(known) > 12 else "")
    raise CompareError(f"--compare: no config {display_name(name)!r} in the selected results; known configs: {shown} "
                       "(name one as CONFIG or CONFIG@MODEL, as `parallelbench results` lists them)")


def compare(frame: "pd.DataFrame", first: str, second: str) -> Comparison:
    """The paired difference first − second on their common (task, sample id, seed) rows."""
    a, b = resolve(first, frame), resolve(second, frame)
    if a == b:
        raise CompareError(f"--compare needs two different configs; both name {display_name(a[0])}@{display_name(a[1])}")
    keep = PAIR_KEYS + ["score"]
    rows_a = _rows(frame, a)[keep]
    rows_b = _rows(frame, b)[keep]
    both = rows_a.merge(rows_b, on=PAIR_KEYS, suffixes=("_a", "_b")).dropna(subset=["score_a", "score_b"])
    if both.empty:
        raise CompareError(f"{display_name(a[0])}@{display_name(a[1])} and {display_name(b[0])}@{display_name(b[1])} "
                           "share no samples (same task, sample id and seed); "
                           "run both on the same --tasks with the same --limit and --seed")
    clusters = list(zip(both["task"], both["sample_id"]))
    result = paired_difference(both["score_a"].to_numpy(float), both["score_b"].to_numpy(float), clusters)
    return Comparison(a, b, result, int(both["task"].nunique()))


def _rows(frame: "pd.DataFrame", pick: tuple[str, str]) -> "pd.DataFrame":
    mine = frame[(frame["config"].astype(str) == pick[0]) & (frame["model"].astype(str) == pick[1])]
    return mine.drop_duplicates(subset=PAIR_KEYS, keep="last")


def describe(c: Comparison) -> list[str]:
    """Lines for the console: the two configs, the difference with its interval, the test."""
    r = c.result
    name_a = f"{display_name(c.a[0])} @ {display_name(c.a[1])}"
    name_b = f"{display_name(c.b[0])} @ {display_name(c.b[1])}"
    if r.test == "McNemar exact":
        detail = f"McNemar exact on the discordant pairs: A alone right on {r.a_only}, B alone on {r.b_only}"
    else:
        detail = "paired bootstrap over samples"
    seeds = f", {counted(r.rows, 'row')}" if r.rows != r.n else ""
    return [
        f"A  {name_a}: mean score {r.mean_a:.3f}",
        f"B  {name_b}: mean score {r.mean_b:.3f}",
        f"A − B = {r.difference:+.3f} (95% interval {r.low:+.3f} to {r.high:+.3f}), {_p(r.p_value)} ({detail})",
        f"on {counted(r.n, 'common sample')} over {counted(c.tasks, 'task')}{seeds}",
    ]


def _p(value: float) -> str:
    """`p = 0.0123`, or `p < 0.0001` below what four decimals show."""
    return "p < 0.0001" if value < 1e-4 else f"p = {value:.4f}"
