"""Summary tables of a results frame: accuracy and tokens per step, strategy config x task."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from parallelbench.display import display_name

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console


def summarize(frame: "pd.DataFrame") -> "pd.DataFrame":
    """One row per (model, config, task): n, accuracy (mean score), tokens per step (mean tps)."""
    import pandas as pd

    if frame.empty:
        return pd.DataFrame(columns=["model", "strategy", "params", "config", "task", "n", "accuracy", "tokens_per_step"])
    g = frame.groupby(["model", "strategy", "params", "config", "task"], sort=False)
    out = g.agg(n=("score", "size"), accuracy=("score", "mean"), tokens_per_step=("tps", "mean")).reset_index()
    return out


def _config_order(rows: "pd.DataFrame") -> list[str]:
    def key(item: tuple[str, str, str]) -> tuple:
        strategy, params, label = item
        try:
            values = json.loads(params)
        except (TypeError, ValueError):
            values = {}
        return (strategy, tuple((k, _sortable(v)) for k, v in sorted(values.items())), label)

    seen = {(r.strategy, r.params, r.config) for r in rows.itertuples()}
    return [label for _, _, label in sorted(seen, key=key)]


def _sortable(v: Any) -> tuple:
    if v is None:
        return (0, 0.0, "")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (1, float(v), "")
    return (2, 0.0, str(v))


CELL_WIDTH = 11  # "0.88 · 12.5"


def print_summary(frame: "pd.DataFrame", console: "Console") -> None:
    """Per model: accuracy · tokens/step per strategy config and task, readable at the console's width.

    Configs as rows and tasks as columns when that fits; otherwise tasks as rows and the
    configs as columns, split over as many tables as the width needs (12 tasks at 80
    columns would otherwise squeeze every cell to nothing).
    """
    table_rows = summarize(frame)
    if table_rows.empty:
        console.print("[yellow]the database holds no results yet[/yellow]; run `parallelbench run` first")
        return
    for model, rows in table_rows.groupby("model", sort=False):
        tasks = list(dict.fromkeys(rows["task"]))
        short = {t: display_name(s) for t, s in _short_names(tasks).items()}
        labels = _config_order(rows)
        grid = {(label, t): _cell_of(rows, label, t) for label in labels for t in tasks}
        means = {label: _mean_cell(rows[rows["config"] == label]) for label in labels}
        title = f"{display_name(model)}: accuracy · tokens per step ({int(rows['n'].sum())} rows)"
        label_width = max(len("strategy config"), *(len(display_name(x)) for x in labels))
        wide = label_width + 3 + (len(tasks) + 1) * (max(CELL_WIDTH, *(len(short[t]) for t in tasks)) + 3) + 1
        if wide <= console.width:
            _print_configs_by_task(console, title, labels, tasks, short, grid, means)
        else:
            _print_tasks_by_config(console, title, labels, tasks, short, grid, means)
    console.print("[dim]cells: mean score · mean tokens per step (tokens / model calls)[/dim]")


def _cell_of(rows: "pd.DataFrame", label: str, task: str) -> str:
    hit = rows[(rows["config"] == label) & (rows["task"] == task)]
    return _cell(hit["accuracy"].mean(), hit["tokens_per_step"].mean()) if len(hit) else ""


def _mean_cell(mine: "pd.DataFrame") -> str:
    weights = mine["n"]
    acc = (mine["accuracy"] * weights).sum() / weights.sum()
    tps = (mine["tokens_per_step"] * weights).sum() / weights.sum()
    return _cell(acc, tps)


def _print_configs_by_task(console, title, labels, tasks, short, grid, means) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(title), title_justify="left", show_lines=False)
    table.add_column("strategy config", style="bold", no_wrap=True)
    for t in tasks:
        table.add_column(Text(short[t]), justify="right", no_wrap=True)
    table.add_column("mean", justify="right", style="bold", no_wrap=True)
    for label in labels:
        table.add_row(Text(display_name(label)), *(grid[label, t] for t in tasks), means[label])
    console.print(table)


def _print_tasks_by_config(console, title, labels, tasks, short, grid, means) -> None:
    from rich.table import Table
    from rich.text import Text

    task_width = max(len("task"), *(len(short[t]) for t in tasks))
    per_table = max(1, (console.width - task_width - 4) // (CELL_WIDTH + 3))
    n_tables = -(-len(labels) // per_table)
    size = -(-len(labels) // n_tables)  # even tables: 9 configs at 4 per table -> 3, 3, 3
    chunks = [labels[i : i + size] for i in range(0, len(labels), size)]
    for n, chunk in enumerate(chunks, 1):
        part = f" [{n}/{len(chunks)}]" if len(chunks) > 1 else ""
        table = Table(title=Text(title + part), title_justify="left", show_lines=False)
        table.add_column("task", style="bold", no_wrap=True)
        for label in chunk:
            table.add_column(Text(display_name(label), overflow="fold"), justify="right", overflow="fold", width=CELL_WIDTH)
        for t in tasks:
            table.add_row(Text(short[t]), *(grid[label, t] for label in chunk))
        table.add_row(Text("mean", style="bold"), *(means[label] for label in chunk), end_section=False)
        console.print(table)


def _cell(acc: float, tps: float) -> str:
    return f"{acc:.2f} · {tps:.1f}"


def _short_names(tasks: list[str]) -> dict[str, str]:
    """'waiting_line/copy' -> 'copy' unless two tasks share the last part."""
    last = [t.split("/")[-1] for t in tasks]
    return {t: (s if last.count(s) == 1 else t) for t, s in zip(tasks, last)}
