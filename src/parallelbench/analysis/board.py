"""The leaderboard as `parallelbench leaderboard` and the report show it: one call, one rule.

`build_boards(frame, thresholds, rule)` ranks the strategies of a results frame under a PB
rule (`pb_rules.PB_RULES`), on the tasks and samples they share (`common_set`), with AUP
beside the headline and bootstrap intervals (`ranking`). One board per comparable group:
usually one; several when the entries share no sample at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from parallelbench.analysis.aup import aup_by_task
from parallelbench.analysis.common_set import comparable_groups
from parallelbench.analysis.curves import curves
from parallelbench.analysis.leaderboard import curves_from_points, rank, threshold_name
from parallelbench.analysis.pb_rules import RULE_TEXT, check_rule, max_rule_table
from parallelbench.analysis.ranking import bootstrap_intervals, with_intervals
from parallelbench.tps import check_measure, measured


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
    tps: str = "window"  # the tokens per step the PB columns use (`parallelbench.tps`)
    flagged: set[str] = field(default_factory=set)  # strategies some of whose rows are scorer errors (left out)

    @property
    def other_column(self) -> str:
        """The table column with the ranking headline under the other tokens-per-step measure."""
        return other_column(self.thresholds, self.tps)


def other_measure(tps: str) -> str:
    return "answer" if check_measure(tps) == "window" else "window"


def other_column(thresholds: Sequence[float], tps: str) -> str:
    """`90_answer`: the first threshold's headline computed on the other tokens per step."""
    return f"{threshold_name(thresholds[0])}_{other_measure(tps)}"


def ranking_line(thresholds: Sequence[float], rule: str, tps: str = "window") -> str:
    """Which column ranks and which way, in one line (CLI and report)."""
    names = [threshold_name(t) for t in thresholds]
    measure = "answer tokens per step" if tps == "answer" else "tokens per step"
    line = (f"ranked by PB{names[0]} ({measure} sustained at task-averaged accuracy ≥ {names[0]}%, {rule} rule): "
            "higher is better")
    if len(names) > 1:
        line += "; ties broken by " + ", ".join(f"PB{n}" for n in names[1:])
    return line


def rule_line(rule: str) -> str:
    """The PB rule used, named and defined in one line."""
    return f"PB rule: {RULE_TEXT[check_rule(rule)]} (--pb-rule {' or '.join(r for r in ('site', 'max') if r != rule)} for the other)"


def build_board(frame: pd.DataFrame, thresholds: Sequence[float], rule: str = "site", *, intervals: bool = True,
                aup_intervals: bool = True, note: str | None = None, points=None, tps: str = "window") -> Board:
    """The board of one comparable group (`frame` already restricted to what its entries share);
    `points`: `curves.curves(frame)` when the caller has it already (window tokens per step).
    `tps`: the tokens per step of the PB columns and AUP, "window" or "answer" (`parallelbench.tps`);
    the table also gets the first threshold's headline on the other one (`Board.other_column`)."""
    check_rule(rule)
    check_measure(tps)
    names = [threshold_name(t) for t in thresholds]
    data = measured(frame, tps)
    per_task, averaged = points if points is not None and tps == "window" else curves(data)
    aups = aup_by_task(per_task)
    table, pooled = _headlines(data, averaged, thresholds, rule, tps)
    aup_of = dict(zip(aups["strategy"], aups["AUP"])) if len(aups) else {}
    table["AUP"] = [aup_of.get(s, float("nan")) for s in table["strategy"]]
    other = other_measure(tps)
    other_data = measured(frame, other)
    other_table, _ = _headlines(other_data, curves(other_data, intervals=False)[1], thresholds[:1], rule, other)
    other_of = dict(zip(other_table["strategy"], other_table[names[0]])) if len(other_table) else {}
    table[other_column(thresholds, tps)] = [other_of.get(s, float("nan")) for s in table["strategy"]]
    task_bounds = pd.DataFrame(columns=["strategy", "task", "ci_low", "ci_high"])
    if intervals and len(table):
        heads = names + (["AUP"] if aup_intervals else [])
        bounds, task_bounds = bootstrap_intervals(data, thresholds, with_aup=aup_intervals, rule=rule, tps=tps)
        table = with_intervals(table, bounds, heads)
    return Board(table, aups, task_bounds, pooled, note, rule, tuple(thresholds), tps)


def _headlines(data: pd.DataFrame, averaged: pd.DataFrame, thresholds: Sequence[float], rule: str, tps: str):
    """(table, pooled) of PB headlines under `rule` on the already measured `data`."""
    if rule == "max":
        return max_rule_table(data, thresholds, tps=tps), max_rule_table(data, thresholds, pooled=True, tps=tps)
    return rank(curves_from_points(averaged), thresholds), None


def build_boards(frame: pd.DataFrame, thresholds: Sequence[float], rule: str = "site", *, intervals: bool = True,
                 aup_intervals: bool = True, points=None, tps: str = "window") -> list[Board]:
    """One board per comparable group of entries (`common_set.comparable_groups`); `points`:
    `curves.curves(frame)` if already computed (used when the whole frame is one group).
    Rows whose scorer failed (`scoring.errors`) are left out, not counted as 0, and the
    strategies they belong to are listed in `Board.flagged`."""
    check_rule(rule)
    scored, flagged = without_scorer_errors(frame)
    if len(scored) < len(frame):
        points = None
    if scored.empty:
        return []
    groups = comparable_groups(scored)
    boards = [build_board(group.frame, thresholds, rule, intervals=intervals, aup_intervals=aup_intervals,
                          note=group.note, points=points if group.note is None and len(groups) == 1 else None, tps=tps)
              for group in groups]
    for board, group in zip(boards, groups):
        several = group.frame["model"].nunique() > 1
        labels = {f"{m}/{c}" if several else c for m, c in flagged}
        board.flagged = {s for s in board.table["strategy"] if s in labels}
    return boards


def without_scorer_errors(frame: pd.DataFrame) -> tuple[pd.DataFrame, set[tuple[str, str]]]:
    """(the rows whose scorer did not fail, the (model, curve) of the strategies that lost rows)."""
    from parallelbench.analysis.curves import with_curves
    from parallelbench.scoring.errors import error_of_versions

    if frame is None or len(frame) == 0 or "versions" not in frame:
        return frame, set()
    failed = frame["versions"].map(lambda v: error_of_versions(v) is not None).to_numpy(bool)
    if not failed.any():
        return frame, set()
    labelled = with_curves(frame[["model", "strategy", "params"] + (["config"] if "config" in frame else [])])
    pairs = zip(labelled["model"].astype(str)[failed], labelled["curve"].astype(str)[failed])
    return frame[~failed], set(pairs)
