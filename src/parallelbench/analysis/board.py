"""The leaderboard as `parallelbench leaderboard` and the report show it: one call, one rule.

`build_boards(frame, thresholds, rule)` ranks the strategies of a results frame under a PB
rule (`pb_rules.PB_RULES`), on the tasks and samples they share (`common_set`), with AUP
beside the headline and bootstrap intervals (`ranking`). One board per comparable group:
usually one; several when the entries share no sample at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from parallelbench.analysis.aup import aup_by_task
from parallelbench.analysis.common_set import comparable_groups
from parallelbench.analysis.curves import curves
from parallelbench.analysis.leaderboard import curves_from_points, rank, threshold_name
from parallelbench.analysis.pb_rules import RULE_TEXT, check_rule, max_rule_table
from parallelbench.analysis.ranking import bootstrap_intervals, with_intervals


@dataclass
class Board:
    """One ranked table and what goes with it."""

    table: pd.DataFrame  # rank, strategy, kind, one column per threshold, AUP, points, interval columns
    aups: pd.DataFrame  # `aup.aup_by_task`: strategy, AUP, one `AUP <task>` column per task
    aup_intervals: pd.DataFrame  # strategy, task, ci_low, ci_high (empty without intervals)
    pooled: pd.DataFrame | None  # max rule: every setting of every strategy per model, as `pb analyze` prints it
    note: str | None  # one line when the ranked rows are not every row (common set, groups)
    rule: str
    thresholds: tuple[float, ...]


def ranking_line(thresholds: Sequence[float], rule: str) -> str:
    """Which column ranks and which way, in one line (CLI and report)."""
    names = [threshold_name(t) for t in thresholds]
    line = (f"ranked by PB{names[0]} (tokens per step sustained at task-averaged accuracy ≥ {names[0]}%, {rule} rule): "
            "higher is better")
    if len(names) > 1:
        line += "; ties broken by " + ", ".join(f"PB{n}" for n in names[1:])
    return line


def rule_line(rule: str) -> str:
    """The PB rule used, named and defined in one line."""
    return f"PB rule: {RULE_TEXT[check_rule(rule)]} (--pb-rule {' or '.join(r for r in ('site', 'max') if r != rule)} for the other)"


def build_board(frame: pd.DataFrame, thresholds: Sequence[float], rule: str = "site", *, intervals: bool = True,
                aup_intervals: bool = True, note: str | None = None, points=None) -> Board:
    """The board of one comparable group (`frame` already restricted to what its entries share);
    `points`: `curves.curves(frame)` when the caller has it already."""
    check_rule(rule)
    names = [threshold_name(t) for t in thresholds]
    per_task, averaged = points if points is not None else curves(frame)
    aups = aup_by_task(per_task)
    if rule == "max":
        table = max_rule_table(frame, thresholds)
        pooled = max_rule_table(frame, thresholds, pooled=True)
    else:
        table = rank(curves_from_points(averaged), thresholds)
        pooled = None
    aup_of = dict(zip(aups["strategy"], aups["AUP"])) if len(aups) else {}
    table["AUP"] = [aup_of.get(s, float("nan")) for s in table["strategy"]]
    task_bounds = pd.DataFrame(columns=["strategy", "task", "ci_low", "ci_high"])
    if intervals and len(table):
        heads = names + (["AUP"] if aup_intervals else [])
        bounds, task_bounds = bootstrap_intervals(frame, thresholds, with_aup=aup_intervals, rule=rule)
        table = with_intervals(table, bounds, heads)
    return Board(table, aups, task_bounds, pooled, note, rule, tuple(thresholds))


def build_boards(frame: pd.DataFrame, thresholds: Sequence[float], rule: str = "site", *, intervals: bool = True,
                 aup_intervals: bool = True, points=None) -> list[Board]:
    """One board per comparable group of entries (`common_set.comparable_groups`); `points`:
    `curves.curves(frame)` if already computed (used when the whole frame is one group)."""
    check_rule(rule)
    groups = comparable_groups(frame)
    return [build_board(group.frame, thresholds, rule, intervals=intervals, aup_intervals=aup_intervals, note=group.note,
                        points=points if group.note is None and len(groups) == 1 else None)
            for group in groups]
