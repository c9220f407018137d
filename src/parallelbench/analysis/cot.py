"""Chain-of-thought runs beside direct runs: accuracy and the tokens each spent.

The paper's CoT study (appendix "Chain-of-Thought (CoT) Prompting") finds that CoT keeps
accuracy up under parallel decoding but spends about 8x the output tokens. This pairs
each `<task>-cot` result with the direct task's result of the same model and strategy
setting, so both costs are read side by side.
"""

from __future__ import annotations

import pandas as pd

COT_SUFFIX = "-cot"  # the task id suffix of chain-of-thought variants (tasks/cot.py)

COLUMNS = [
    "model", "task", "config",
    "direct_n", "direct_accuracy", "direct_tokens", "direct_nfe",
    "cot_n", "cot_accuracy", "cot_tokens", "cot_nfe",
]


def _summary(rows: pd.DataFrame, prefix: str) -> pd.DataFrame:
    grouped = rows.groupby(["model", "task", "config"], sort=True)
    return pd.DataFrame({
        f"{prefix}_n": grouped["score"].size(),
        f"{prefix}_accuracy": grouped["score"].mean() * 100.0,
        f"{prefix}_tokens": grouped["num_tokens"].mean(),
        f"{prefix}_nfe": grouped["nfe"].mean(),
    })


def cot_comparison(frame: pd.DataFrame | None) -> pd.DataFrame:
    """One row per (model, base task, strategy config) that has CoT results.

    Accuracy is the mean score in percent; tokens and NFE are means per sample (generated
    tokens, forward passes). A CoT setting with no direct run of the same model and config
    keeps NaN in the direct columns.
    """
    if frame is None or len(frame) == 0 or "task" not in frame:
        return pd.DataFrame(columns=COLUMNS)
    tasks = frame["task"].astype(str)
    is_cot = tasks.str.endswith(COT_SUFFIX)
    if not is_cot.any():
        return pd.DataFrame(columns=COLUMNS)
    needed = ["model", "task", "config", "score", "num_tokens", "nfe"]
    data = frame[needed].copy()
    data["task"] = tasks
    for col in ("score", "num_tokens", "nfe"):
        data[col] = pd.to_numeric(data[col], errors="coerce")
    cot = data[is_cot].assign(task=lambda d: d["task"].str.slice(0, -len(COT_SUFFIX)))
    cot_tasks = set(cot["task"])
    direct = data[~is_cot & data["task"].isin(cot_tasks)]
    table = _summary(cot, "cot").join(_summary(direct, "direct"), how="left").reset_index()
    return table[COLUMNS].sort_values(["model", "task", "config"], kind="stable").reset_index(drop=True)
