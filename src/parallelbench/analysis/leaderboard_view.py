"""`parallelbench leaderboard` at the console: every name and every number whole at any width and in a pipe.

When the table with whole strategy names fits the console it is printed as is (each interval
moved under its value if that makes it fit); otherwise strategies become S1, S2 ... with their
names in a legend under the table (the per-task AUP table always numbers them, with the same
ids), and where even that is too wide, value columns are dropped from the right with a line
naming them. Headers are short and never wrap; no cell is ever cut (`terminal.print_table`).
"""

from __future__ import annotations

import math

from rich.console import Console
from rich.table import Table
from rich.text import Text

from parallelbench.analysis.board import Board, ranking_line
from parallelbench.analysis.leaderboard import threshold_name
from parallelbench.analysis.pb_rules import RULE_TEXT
from parallelbench.analysis.terminal import (distinct_labels, dropped_line, fit_columns, fits, legend_lines,
                                             print_legend, print_line, print_table, short_ids)
from parallelbench.display import display_name
from parallelbench.tps import TPS_NAME, TPS_TEXT, measure_line


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


def _plain(value) -> str:
    return "–" if value is None or value != value else f"{value:.2f}"


#: The mark after a strategy whose ranking left out rows whose scorer failed.
FLAG = "!"


def _columns(board: Board) -> list[tuple[str, str]]:
    """(key, header) of every value column, in display order: the ranking headline, the same on
    the other tokens per step, the other thresholds, AUP."""
    names = [threshold_name(t) for t in board.thresholds]
    out = [(names[0], f"≥{names[0]}%")]
    if board.other_column in board.table:
        out.append((board.other_column, f"{board.other_column.split('_')[1]} ≥{names[0]}%"))
    out += [(n, f"≥{n}%") for n in names[1:]]
    return out + [("AUP", "AUP")]


def _main_table(board: Board, ids: list[str], compact: bool, stacked: bool, columns: list[tuple[str, str]]) -> Table:
    names = {threshold_name(t) for t in board.thresholds}
    table = Table(show_lines=stacked)
    table.add_column("#", justify="right", no_wrap=True)
    if compact:
        table.add_column("id", no_wrap=True)
    else:
        table.add_column("strategy", no_wrap=True)
        table.add_column("kind", no_wrap=True)
    for _, header in columns:  # stacked cells: a two-word header stacks too
        table.add_column(header.replace(" ", "\n") if stacked else header, justify="right", no_wrap=True)
    labels = distinct_labels(list(board.table["strategy"]))
    for i, (_, row) in enumerate(board.table.iterrows()):
        flag = FLAG if row["strategy"] in board.flagged else ""
        label = [ids[i] + flag] if compact else [Text(labels[i] + flag), Text(display_name(row["kind"]))]
        cells = [headline_cell(row, key, stacked) if key in names else
                 _aup_text(row.get(key)) if key == "AUP" else _plain(row.get(key)) for key, _ in columns]
        table.add_row(_rank_text(board.table, i, row), *label, *cells)
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
            table.add_column(ids_of[s] + (FLAG if s in board.flagged else ""), justify="right", no_wrap=True)
        for column, task in zip(task_columns, tasks):
            table.add_row(Text(task), *(_aup_text(value_of.get((s, column))) for s in chunk))
        table.add_row(Text("mean", style="bold"), *(_aup_text(value_of.get((s, "AUP"))) for s in chunk))
        out.append(table)
    return out


def print_board(console: Console, board: Board) -> None:
    """The ranked table, as wide as the console allows: whole names and one-line cells; else each
    interval under its value; else S1, S2 ... ids with a legend; else value columns dropped from the
    right (a line says which); never a cut number."""
    table = board.table
    ids = short_ids("S", len(table))
    ids_of = dict(zip(table["strategy"], ids))
    columns = _columns(board)
    compact, dropped = False, []
    chosen = None
    for stacked in (False, True):
        candidate = _main_table(board, ids, False, stacked, columns)
        if fits(console, candidate):
            chosen = candidate
            break
    if chosen is None:
        compact = True
        chosen, dropped = fit_columns(console, lambda kept: _main_table(board, ids, True, True, columns[:1] + kept),
                                      columns[1:])
    print_table(console, chosen)
    legend = legend_lines(ids, list(table["strategy"]),
                          [display_name(k) + (f"; {FLAG} scorer errors left out" if s in board.flagged else "")
                           for s, k in zip(table["strategy"], table["kind"])])
    if compact:
        print_legend(console, legend)
    if dropped:
        print_line(console, dropped_line([header for _, header in dropped], "leaderboard"), "yellow")
    if board.flagged:
        print_line(console, f"{FLAG}: some rows of this strategy are scorer errors (see the line above); they are "
                            "left out of its ranking, not counted as 0", "yellow")
    if board.other_column in table:
        other = board.other_column.split("_")[1]
        first = threshold_name(board.thresholds[0])
        print_line(console, f"{other} ≥{first}%: PB{first} on {TPS_NAME[other]} ({TPS_TEXT[other]}; no interval); "
                            f"--tps {other} ranks on it", "dim")
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
            print_table(console, part)
        if compact:
            print_line(console, "S1, S2 ...: the strategies named under the leaderboard above", "dim")
        else:
            print_legend(console, legend)


def print_boards(console: Console, boards: list[Board], source: str) -> None:
    """Every board, the ranking column and its direction, the rule, and notes, at the console's width."""
    first = boards[0]
    print_line(console, f"Leaderboard ({source}): {TPS_NAME[first.tps]} sustained at task-averaged accuracy ≥ threshold",
               "bold")
    print_line(console, ranking_line(first.thresholds, first.rule, first.tps))
    print_line(console, f"PB rule: {RULE_TEXT[first.rule]}")
    print_line(console, measure_line(first.tps))
    for board in boards:
        if board.note:
            print_line(console, board.note, "yellow")
        if len(board.table):
            print_board(console, board)
    if any("tied" in b.table for b in boards):
        print_line(console, "brackets: 95% interval (bootstrap over samples); ≈: the interval overlaps the leader's "
                            "(tied); =N: rows sharing a rank, their intervals on the ranking column overlap, so these "
                            "samples do not order them", "dim")
