"""Does editing repair parallel decoding? The answer at unmasking against the final answer.

A strategy that can change a written token (edit-threshold, remasking, insert/delete editing)
stores per row `unmask_score` (the score of the answer when its last original mask was filled,
before any later edit), the edit counts and `changed_tokens` (runner/store.py). Per model,
strategy config and task this module gives both mean scores with their 95% intervals, the
share of rows *repaired* (wrong at unmasking, right at the end) and *broken* (right, then
wrong), and the mean edits. A row is *right* when it has full marks (score 1): the paper's
tasks score 0/1, and for a graded score this reads "perfect".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from parallelbench.analysis.uncertainty import interval

COLUMNS = ["model", "strategy", "config", "task", "n", "rows", "unmask", "unmask_low", "unmask_high", "final",
           "final_low", "final_high", "repaired", "broken", "edits", "inserts", "deletes", "changed_tokens",
           "unmeasured"]
#: What `results --repair` and the report say the columns mean.
LEGEND = ("unmask: mean score of the answer when its last original mask was filled (before any later edit); "
          "final: mean score of the answer returned; ± the half-width of each 95% interval; repair(ed): share of rows "
          "wrong at unmasking and right at the end; broke(n): right at unmasking, wrong at the end (right = full "
          "marks); edits: mean token-to-token rewrites per row; ins / del: mean inserts / deletes; chg (changed "
          "tokens): mean shown tokens whose final token differs from the first one committed there")
RIGHT = 1.0 - 1e-9  # full marks, with room for float rounding


def editing_configs(frame: pd.DataFrame) -> set[tuple[str, str]]:
    """(model, config) pairs whose strategy can change a written token: its class says so
    (`Strategy.rewrites`), or its rows show it (an edit, an answer at unmasking of its own, or a
    row without the record)."""
    if frame is None or frame.empty:
        return set()
    from parallelbench.decoding.repair import strategy_rewrites

    out: set[tuple[str, str]] = set()
    for (model, strategy, config), group in frame.groupby(["model", "strategy", "config"], sort=False):
        if strategy_rewrites(str(strategy)):
            out.add((model, config))
            continue
        edits = pd.to_numeric(group["edits"], errors="coerce") if "edits" in group else pd.Series(dtype=float)
        evidence = bool((edits.fillna(0) > 0).any())
        if "unmask_score" in group:  # a frame without the columns (built by hand) tells nothing more
            evidence = evidence or bool(group["unmask_score"].isna().any())
        if "unmask_output" in group:
            evidence = evidence or group["unmask_output"].notna().any()
        if evidence:
            out.add((model, config))
    return out


def repair_table(frame: pd.DataFrame, configs: set[tuple[str, str]] | None = None) -> pd.DataFrame:
    """One row per (model, config, task) of the editing configs (`editing_configs` unless given):
    n samples, rows, unmask and final mean score with 95% intervals, repaired / broken shares, mean
    edits, inserts, deletes and changed tokens, and `unmeasured` rows (no record: written before
    it, or by a loop that does not keep it), which every other column leaves out."""
    if frame is None or frame.empty:
        return pd.DataFrame(columns=COLUMNS)
    configs = editing_configs(frame) if configs is None else configs
    keep = [(m, c) in configs for m, c in zip(frame["model"], frame["config"])]
    data = frame[keep]
    out = []
    for (model, strategy, config, task), group in data.groupby(["model", "strategy", "config", "task"], sort=True):
        unmask = (pd.to_numeric(group["unmask_score"], errors="coerce") if "unmask_score" in group
                  else pd.Series(np.nan, index=group.index))
        measured = group[unmask.notna()]
        u = unmask[unmask.notna()].to_numpy(float)
        f = pd.to_numeric(measured["score"], errors="coerce").to_numpy(float)
        ids = list(measured["sample_id"]) if "sample_id" in measured else None
        ui, fi = interval(u, ids), interval(f, ids)
        rows = len(measured)

        def mean(column: str) -> float:
            values = pd.to_numeric(measured[column], errors="coerce") if column in measured else pd.Series(dtype=float)
            return float(values.mean()) if values.notna().any() else float("nan")

        out.append({
            "model": model, "strategy": strategy, "config": config, "task": task, "n": fi.n, "rows": rows,
            "unmask": ui.estimate, "unmask_low": ui.low, "unmask_high": ui.high,
            "final": fi.estimate, "final_low": fi.low, "final_high": fi.high,
            "repaired": float(np.mean((u < RIGHT) & (f >= RIGHT))) if rows else float("nan"),
            "broken": float(np.mean((u >= RIGHT) & (f < RIGHT))) if rows else float("nan"),
            "edits": mean("edits"), "inserts": mean("inserts"), "deletes": mean("deletes"),
            "changed_tokens": mean("changed_tokens"), "unmeasured": int(len(group) - rows),
        })
    return pd.DataFrame(out, columns=COLUMNS)


def hidden_configs(frame: pd.DataFrame, configs: set[tuple[str, str]]) -> int:
    """How many (model, config) pairs of `frame` never change a written token (left out of the table)."""
    if frame is None or frame.empty:
        return 0
    pairs = set(zip(frame["model"], frame["config"]))
    return len(pairs - configs)
