"""Summary tables of a results frame: accuracy and tokens per step, strategy config x task."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any


if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console


def summarize(frame: "pd.DataFrame") -> "pd.DataFrame":
    """One row per (model, config, task): n (distinct samples), rows, accuracy (mean score) with its
    95% interval ci_low/ci_high (`analysis.uncertainty.interval`), tokens per step (mean tps)."""
    import pandas as pd

    from parallelbench.analysis.uncertainty import interval

    columns = ["model", "strategy", "params", "config", "task", "n", "rows", "accuracy", "ci_low", "ci_high", "tokens_per_step"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    out = []
    has_ids = "sample_id" in frame
    for key, group in frame.groupby(["model", "strategy", "params", "config", "task"], sort=False):
        ci = interval(group["score"].to_numpy(dtype=float), list(group["sample_id"]) if has_ids else None)
        out.append(dict(zip(columns[:5], key), n=ci.n, rows=len(group), accuracy=float(group["score"].mean()),
                        ci_low=ci.low, ci_high=ci.high, tokens_per_step=float(group["tps"].mean())))
    return pd.DataFrame(out, columns=columns)


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


CELL_WIDTH = 19  # "0.88 ± 0.12 · 128.0"


def print_summary(frame: "pd.DataFrame", console: "Console") -> None:
    """Per model: accuracy ± half-width of its 95% interval · tokens/step per strategy config and
    task, readable at the console's width and when piped.

    Configs as rows and tasks as columns when that fits with every label whole; otherwise
    tasks as rows and the configs as columns, split over as many tables as the width needs
    (12 tasks at 80 columns would otherwise squeeze every cell to nothing), the configs
    named in the headers when their labels fit a column and numbered C1, C2 ... with a
    legend under the table when they do not (a header is never folded mid-word). The
    sample count is in the title when every cell has the same, else in each cell.
    """
    from parallelbench.analysis.terminal import print_line

    table_rows = summarize(frame)
    if table_rows.empty:
        console.print("[yellow]the database holds no results yet[/yellow]; run `parallelbench run` first")
        return
    for model, rows in table_rows.groupby("model", sort=False):
        tasks = list(dict.fromkeys(rows["task"]))
        short = {t: s for t, s in zip(tasks, _task_labels(tasks))}
        labels = _config_order(rows)
        uniform = rows["n"].nunique() == 1
        grid = {(label, t): _cell_of(rows, label, t, not uniform) for label in labels for t in tasks}
        mine = frame[frame["model"] == model]
        means = {label: _mean_cell(mine[mine["config"] == label], not uniform) for label in labels}
        samples = f"{int(rows['n'].iloc[0])} samples per cell, " if uniform else ""
        title = f"{_full(model)}: accuracy ± 95% half-width · tokens per step ({samples}{int(rows['rows'].sum())} rows)"
        width = CELL_WIDTH + (0 if uniform else 7)
        print_line(console, title, "bold")
        by_task = _configs_by_task(labels, tasks, short, grid, means)
        from parallelbench.analysis.terminal import fits

        if fits(console, by_task):
            console.print(by_task)
        else:
            _print_tasks_by_config(console, labels, tasks, short, grid, means, width)
    console.print("[dim]cells: mean score ± half-width of its 95% interval (Wilson for 0/1 scores, bootstrap over "
                  "samples otherwise) · mean tokens per step (tokens / model calls); mean: all tasks pooled; "
                  "--limit N samples per task narrows the intervals[/dim]")


def _full(value: object) -> str:
    from parallelbench.analysis.terminal import full_label

    return full_label(value)


def _task_labels(tasks: list[str]) -> list[str]:
    from parallelbench.analysis.terminal import distinct_labels

    shorts = _short_names(tasks)
    return distinct_labels([shorts[t] for t in tasks])


def _cell_of(rows: "pd.DataFrame", label: str, task: str, with_n: bool) -> str:
    hit = rows[(rows["config"] == label) & (rows["task"] == task)]
    if not len(hit):
        return ""
    row = hit.iloc[0]
    return _cell(row["accuracy"], row["ci_low"], row["ci_high"], row["tokens_per_step"], int(row["n"]) if with_n else None)


def _mean_cell(mine: "pd.DataFrame", with_n: bool) -> str:
    """All tasks of a config pooled, its interval clustered by (task, sample)."""
    from parallelbench.analysis.uncertainty import interval

    clusters = list(zip(mine["task"], mine["sample_id"])) if "sample_id" in mine else None
    ci = interval(mine["score"].to_numpy(dtype=float), clusters)
    return _cell(ci.estimate, ci.low, ci.high, float(mine["tps"].mean()), ci.n if with_n else None)


def _configs_by_task(labels, tasks, short, grid, means):
    from rich.table import Table
    from rich.text import Text

    from parallelbench.analysis.terminal import distinct_labels

    table = Table(show_lines=False)
    table.add_column("strategy config", style="bold", no_wrap=True)
    for t in tasks:
        table.add_column(Text(short[t]), justify="right", no_wrap=True)
    several = len(tasks) > 1  # one task: its column is the mean
    if several:
        table.add_column("mean", justify="right", style="bold", no_wrap=True)
    for label, shown in zip(labels, distinct_labels(labels)):
        table.add_row(Text(shown), *(grid[label, t] for t in tasks), *([means[label]] if several else []))
    return table


def _print_tasks_by_config(console, labels, tasks, short, grid, means, cell_width=CELL_WIDTH) -> None:
    from rich.table import Table
    from rich.text import Text

    from parallelbench.analysis.terminal import distinct_labels, legend_lines, print_legend, print_line, short_ids

    shown = distinct_labels(labels)
    numbered = any(len(x) > cell_width for x in shown)  # a header is never folded mid-word: number them instead
    ids = short_ids("C", len(labels))
    task_width = max(len("task"), *(len(short[t]) for t in tasks))
    per_table = max(1, (console.width - task_width - 4) // (cell_width + 3))
    n_tables = -(-len(labels) // per_table)
    size = -(-len(labels) // n_tables)  # even tables: 9 configs at 4 per table -> 3, 3, 3
    for n, start in enumerate(range(0, len(labels), size), 1):
        chunk = list(range(start, min(start + size, len(labels))))
        if n_tables > 1:
            print_line(console, f"[{n}/{n_tables}]", "bold")
        table = Table(show_lines=False)
        table.add_column("task", style="bold", no_wrap=True)
        for i in chunk:
            table.add_column(ids[i] if numbered else Text(shown[i]), justify="right", no_wrap=True, min_width=cell_width)
        for t in tasks:
            table.add_row(Text(short[t]), *(grid[labels[i], t] for i in chunk))
        if len(tasks) > 1:
            table.add_row(Text("mean", style="bold"), *(means[labels[i]] for i in chunk), end_section=False)
        console.print(table)
        if numbered:
            print_legend(console, legend_lines([ids[i] for i in chunk], [labels[i] for i in chunk]))


def _cell(acc: float, low: float, high: float, tps: float, n: int | None = None) -> str:
    """`0.88 ± 0.12 · 12.5` (score ± half-width of the 95% interval · tokens per step), n=16 appended
    when the table's cells differ in sample count."""
    half = "–" if low != low else f"{(high - low) / 2:.2f}"
    return f"{acc:.2f} ± {half} · {tps:.1f}" + (f" n={n}" if n is not None else "")


def _short_names(tasks: list[str]) -> dict[str, str]:
    """'waiting_line/copy' -> 'copy' unless two tasks share the last part."""
    last = [t.split("/")[-1] for t in tasks]
    return {t: (s if last.count(s) == 1 else t) for t, s in zip(tasks, last)}


def print_order_summary(frame: "pd.DataFrame", console: "Console") -> None:
    """Per model, one row per strategy config: the decoding-order metrics averaged over its samples
    (`analysis.order_metrics`), config labels whole or numbered with a legend, as the width allows."""
    import math

    from rich.table import Table
    from rich.text import Text

    from parallelbench.analysis.order_metrics import LEGEND, ORDER_COLUMNS, SHORT_NAMES, order_summary
    from parallelbench.analysis.terminal import distinct_labels, fits, legend_lines, print_legend, print_line, short_ids

    summary = order_summary(frame)
    if summary.empty:
        console.print("[yellow]the database holds no results yet[/yellow]; run `parallelbench run` first")
        return
    shown_columns = [(c, h) for c, h in zip(ORDER_COLUMNS, SHORT_NAMES) if summary[c].notna().any()]
    absent = [h for c, h in zip(ORDER_COLUMNS, SHORT_NAMES) if not summary[c].notna().any()]
    for model, rows in summary.groupby("model", sort=False):
        order = rows.sort_values(["strategy", "config"], key=lambda s: s.map(str))
        labels = list(order["config"])
        shown = distinct_labels(labels)
        ids = short_ids("C", len(labels))

        def table(numbered: bool) -> "Table":
            out = Table(show_lines=False)
            out.add_column("id" if numbered else "strategy config", no_wrap=True)
            out.add_column("n", justify="right", no_wrap=True)
            for _, header in shown_columns:
                out.add_column(header, justify="right", no_wrap=True)
            for i, (_, row) in enumerate(order.iterrows()):
                values = ["–" if row[c] != row[c] or math.isinf(row[c]) else f"{row[c]:.2f}" for c, _ in shown_columns]
                out.add_row(ids[i] if numbered else Text(shown[i]), str(int(row["n"])), *values)
            return out

        print_line(console, f"{_full(model)}: decoding order per strategy config (means over samples)", "bold")
        wide = table(False)
        if fits(console, wide):
            console.print(wide)
        else:
            console.print(table(True))
            print_legend(console, legend_lines(ids, labels))
    print_line(console, LEGEND, "dim")
    if absent:
        print_line(console, f"not shown: {', '.join(absent)} (these rows lack the stored columns, and the stored "
                            "order stops at the first stop token, so the pad positions they need are not there)", "dim")


def print_repair_summary(frame: "pd.DataFrame", console: "Console") -> None:
    """Per model, one row per editing strategy config and task (`analysis.repair.repair_table`):
    score at unmasking and at the end with their 95% half-widths, repaired / broken shares, mean
    edits; labels whole or numbered with a legend, as the width allows."""
    import math

    from rich.table import Table
    from rich.text import Text

    from parallelbench.analysis.repair import LEGEND, editing_configs, hidden_configs, repair_table
    from parallelbench.analysis.terminal import distinct_labels, fits, legend_lines, print_legend, print_line, short_ids

    if frame.empty:
        console.print("[yellow]the database holds no results yet[/yellow]; run `parallelbench run` first")
        return
    configs = editing_configs(frame)
    table_rows = repair_table(frame, configs)
    hidden = hidden_configs(frame, configs)
    if table_rows.empty:
        print_line(console, f"no strategy here can change a written token ({hidden} strategy config"
                            f"{'' if hidden == 1 else 's'}: their unmask score is their score); run an editing "
                            "strategy, e.g. parallelbench run --strategy edit-threshold --threshold 0.5", "yellow")
        return

    def cell(value: float, low: float, high: float) -> str:
        if value != value:
            return "–"
        return f"{value:.2f} ± {(high - low) / 2:.2f}" if low == low and high == high else f"{value:.2f}"

    def num(value: float, digits: int = 2) -> str:
        return "–" if value != value or math.isinf(value) else f"{value:.{digits}f}"

    def share(value: float) -> str:
        return "–" if value != value else f"{100 * value:.0f}%"

    with_indel = bool((table_rows[["inserts", "deletes"]].fillna(0) > 0).any().any())
    unmeasured = int(table_rows["unmeasured"].sum())
    for model, rows in table_rows.groupby("model", sort=False):
        labels = list(dict.fromkeys(rows["config"]))
        tasks = list(dict.fromkeys(rows["task"]))
        shown, ids = distinct_labels(labels), short_ids("C", len(labels))
        task_shown, task_ids = distinct_labels(tasks), short_ids("T", len(tasks))

        def table(numbered: bool, numbered_tasks: bool = False) -> "Table":
            out = Table(show_lines=False)
            out.add_column("id" if numbered else "strategy config", no_wrap=True)
            out.add_column("task", no_wrap=True)
            for header in ("n", "unmask", "final", "repair", "broke", "edits", *(("ins", "del") if with_indel else ()),
                           "chg"):
                out.add_column(header, justify="right", no_wrap=True)
            for _, r in rows.iterrows():
                i, t = labels.index(r["config"]), tasks.index(r["task"])
                out.add_row(ids[i] if numbered else Text(shown[i]), task_ids[t] if numbered_tasks else Text(task_shown[t]),
                            str(int(r["rows"])), cell(r["unmask"], r["unmask_low"], r["unmask_high"]),
                            cell(r["final"], r["final_low"], r["final_high"]), share(r["repaired"]), share(r["broken"]),
                            num(r["edits"]), *((num(r["inserts"]), num(r["deletes"])) if with_indel else ()),
                            num(r["changed_tokens"]))
            return out

        print_line(console, f"{_full(model)}: does editing repair parallel decoding? (unmask vs final score)", "bold")
        for numbered, numbered_tasks in ((False, False), (True, False), (True, True)):
            chosen = table(numbered, numbered_tasks)
            if fits(console, chosen) or numbered_tasks:
                break
        console.print(chosen)
        if numbered:
            print_legend(console, legend_lines(ids, labels))
        if numbered_tasks:
            print_legend(console, legend_lines(task_ids, tasks))
    print_line(console, LEGEND, "dim")
    if hidden:
        print_line(console, f"not shown: {hidden} strategy config{' that never changes' if hidden == 1 else 's that never change'}"
                            " a written token (their unmask score is their score)", "dim")
    if unmeasured:
        print_line(console, f"{unmeasured:,} rows of editing strategies carry no repair record (written before it was "
                            "kept, or by a decoding loop that does not keep it) and are left out; "
                            "`parallelbench run --force` decodes them again with it", "dim")
