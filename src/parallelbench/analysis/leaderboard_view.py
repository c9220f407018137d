"""`parallelbench leaderboard` at the console: every name readable at 80 columns and in a pipe.

When the table with whole strategy names fits the console it is printed as is; otherwise
strategies become S1, S2 ... with their names in a legend under the table (the per-task
AUP table always numbers them, with the same ids). Headers are short and never wrap.
"""

from __future__ import annotations

import math

from rich.console import Console
from rich.table import Table
from rich.text import Text

from parallelbench.analysis.board import Board, ranking_line
from parallelbench.analysis.leaderboard import threshold_name
from parallelbench.analysis.pb_rules import RULE_TEXT
from parallelbench.analysis.terminal import distinct_labels, fits, legend_lines, print_legend, print_line, short_ids
from parallelbench.display import display_name


def headline_cell(row, name: str, two_lines: bool = False) -> str:
    """`2.00 [1.00–4.00]≈`: the headline, its interval when known, ≈ when tied with the leader; `–`
    when no setting qualifies (max rule). `two_lines` puts the interval under the value."""
    value = row[name]
    if value != value:
        return "–"
    low = row.get(f"{name}_ci_low", math.nan)
    if low != low:
        return f"{value:.2f}"
    tied = "≈" if bool(row.get(f"{name}_tied", False)) else ""
    interval = f"[{low:.2f}–{row[f'{name}_ci_high']:.2f}]"
    return f"{value:.2f}{tied}\n{interval}" if two_lines else f"{value:.2f} {interval}{tied}"


def _rank_text(table, i: int, row) -> str:
    if "rank" not in table:
        return str(i + 1)
    shared = bool(row.get("tied", False)) or list(table["rank"]).count(row["rank"]) > 1
    return f"={row['rank']}" if shared else str(row["rank"])


def _aup_text(value) -> str:
    return "–" if value is None or value != value else f"{value:.1f}"


def _main_table(board: Board, ids: list[str], compact: bool) -> Table:
    names = [threshold_name(t) for t in board.thresholds]
    table = Table(show_lines=compact)
    table.add_column("#", justify="right", no_wrap=True)
    if compact:
        table.add_column("id", no_wrap=True)
    else:
        table.add_column("strategy", no_wrap=True)
        table.add_column("kind", no_wrap=True)
    for name in names:
        table.add_column(f"≥{name}%", justify="right", no_wrap=True)
    table.add_column("AUP", justify="right", no_wrap=True)
    labels = distinct_labels(list(board.table["strategy"]))
    for i, (_, row) in enumerate(board.table.iterrows()):
        label = [ids[i]] if compact else [Text(labels[i]), Text(display_name(row["kind"]))]
        table.add_row(_rank_text(board.table, i, row), *label,
                      *(headline_cell(row, n, compact) for n in names), _aup_text(row.get("AUP")))
    return table


def _aup_tables(console: Console, board: Board, ids_of: dict[str, str]) -> list[Table]:
    """AUP per task: tasks as rows, numbered strategies as columns, as many tables as the width needs."""
    aups = board.aups
    task_columns = [c for c in aups.columns if c.startswith("AUP ")]
    if not task_columns or aups.empty:
        return []
    value_of = {(s, c): v for _, r in aups.iterrows() for s in [r["strategy"]] for c, v in r.items()}
    strategies = [s for s in ids_of if (s, "AUP") in value_of]
    tasks = [display_name(c[4:]) for c in task_columns]
    task_width = max(len("task"), *(len(t) for t in tasks))
    per_table = max(1, (console.width - task_width - 4) // 9)
    out = []
    for start in range(0, len(strategies), per_table):
        chunk = strategies[start : start + per_table]
        table = Table()
        table.add_column("task", no_wrap=True)
        for s in chunk:
            table.add_column(ids_of[s], justify="right", no_wrap=True)
        for column, task in zip(task_columns, tasks):
            table.add_row(Text(task), *(_aup_text(value_of.get((s, column))) for s in chunk))
        table.add_row(Text("mean", style="bold"), *(_aup_text(value_of.get((s, "AUP"))) for s in chunk))
        out.append(table)
    return out


def print_board(console: Console, board: Board) -> None:
    table = board.table
    ids = short_ids("S", len(table))
    ids_of = dict(zip(table["strategy"], ids))
    wide = _main_table(board, ids, compact=False)
    compact = not fits(console, wide)
    console.print(_main_table(board, ids, compact=True) if compact else wide)
    legend = legend_lines(ids, list(table["strategy"]), [display_name(k) for k in table["kind"]])
    if compact:
        print_legend(console, legend)
    if board.pooled is not None and len(board.pooled):
        names = [threshold_name(t) for t in board.thresholds]
        for _, row in board.pooled.iterrows():
            values = " · ".join(f"PB{n} {'–' if row[n] != row[n] else format(row[n], '.2f')}" for n in names)
            print_line(console, f"{distinct_labels([row['strategy']])[0]} (pb analyze's headline): {values}")
    aup_tables = _aup_tables(console, board, ids_of)
    if aup_tables:
        print_line(console, "AUP per task (accuracy under parallelism, d3LLM leaderboard definition; y_max over the "
                            "rows shown; higher is better)", "bold")
        for part in aup_tables:
            console.print(part)
        if compact:
            print_line(console, "S1, S2 ...: the strategies named under the leaderboard above", "dim")
        else:
            print_legend(console, legend)


def print_boards(console: Console, boards: list[Board], source: str) -> None:
    """Every board, the ranking column and its direction, the rule, and notes, at the console's width."""
    print_line(console, f"Leaderboard ({source}): tokens per step sustained at task-averaged accuracy ≥ threshold", "bold")
    first = boards[0]
    print_line(console, ranking_line(first.thresholds, first.rule))
    print_line(console, f"PB rule: {RULE_TEXT[first.rule]}")
    for board in boards:
        if board.note:
            print_line(console, board.note, "yellow")
        if len(board.table):
            print_board(console, board)
    if any("tied" in b.table for b in boards):
        print_line(console, "brackets: 95% interval (bootstrap over samples); ≈: the interval overlaps the leader's "
                            "(tied); =N: rows sharing a rank, their intervals on the ranking column overlap, so these "
                            "samples do not order them", "dim")
