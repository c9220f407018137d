"""Summary tables of a results frame: accuracy, tokens per step and answer tokens per step,
strategy config x task, whole at any width (`analysis.terminal`)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console

#: Marks a cell some of whose rows are scorer errors (`scoring.errors`): `!3` = three rows.
ERROR_MARK = "!"
CELL_LEGEND = (
    "cells: mean score ± half-width of its 95% interval (Wilson for 0/1 scores, bootstrap over samples otherwise) · "
    "tokens per step (answer tokens per step): positions committed on the canvas, EOS padding included, per model "
    "call (tokens before the first stop token per model call); mean: all tasks pooled; --limit N samples per task "
    "narrows the intervals"
)
ERROR_LEGEND = (f"{ERROR_MARK}N: N rows of the cell are scorer errors, left out of its score (not counted as 0); "
                "'scorer error': every row of the cell is")


def error_mask(frame: "pd.DataFrame") -> list[bool]:
    """Per row: whether its scorer failed (`versions.scorer.error`), so its 0 is no score."""
    from parallelbench.scoring.errors import error_of_versions

    if "versions" not in frame:
        return [False] * len(frame)
    return [error_of_versions(v) is not None for v in frame["versions"]]


def summarize(frame: "pd.DataFrame") -> "pd.DataFrame":
    """One row per (model, config, task[, data]): n (distinct scored samples), rows, accuracy (mean
    score of the rows whose scorer did not fail) with its 95% interval ci_low/ci_high
    (`analysis.uncertainty.interval`), tokens per step and answer tokens per step (means over
    rows), scorer_errors (rows whose scorer failed; NaN accuracy when every row's did)."""
    import pandas as pd

    from parallelbench.tps import with_answer_columns

    keys = ["model", "strategy", "params", "config", "task"] + (["data"] if "data" in frame else [])
    columns = keys + ["n", "rows", "accuracy", "ci_low", "ci_high", "tokens_per_step", "answer_tokens_per_step",
                      "scorer_errors"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    data = with_answer_columns(frame).assign(_error=error_mask(frame))
    out = []
    for key, group in data.groupby(keys, sort=False):
        cell = _stats(group)
        out.append(dict(zip(keys, key), n=cell.n, rows=cell.rows, accuracy=cell.accuracy, ci_low=cell.low,
                        ci_high=cell.high, tokens_per_step=cell.tps, answer_tokens_per_step=cell.answer_tps,
                        scorer_errors=cell.errors))
    return pd.DataFrame(out, columns=columns)


@dataclass(frozen=True)
class Cell:
    accuracy: float
    low: float
    high: float
    n: int
    rows: int
    tps: float
    answer_tps: float
    errors: int

    def text(self, with_n: bool = False, stacked: bool = False) -> str:
        """`0.88 ± 0.12 · 12.5 (4.1)`: score ± half-width · tokens per step (answer tokens per step);
        `n=16` when the table's cells differ in samples, `!3` for 3 scorer-error rows; `stacked`
        puts the speed part on a second line."""
        if self.accuracy != self.accuracy:
            score = "scorer error" if self.errors else "–"
        else:
            half = "–" if self.low != self.low else f"{(self.high - self.low) / 2:.2f}"
            score = f"{self.accuracy:.2f} ± {half}"
        speed = f"{self.tps:.1f}" + ("" if self.answer_tps != self.answer_tps else f" ({self.answer_tps:.1f})")
        tail = (f" n={self.n}" if with_n and self.accuracy == self.accuracy else "") + (
            f" {ERROR_MARK}{self.errors}" if self.errors and self.accuracy == self.accuracy else "")
        return f"{score}\n{speed}{tail}" if stacked else f"{score} · {speed}{tail}"


def _stats(rows: "pd.DataFrame") -> Cell:
    """Accuracy of the scored rows (interval clustered by (task, sample)); speed of all rows."""
    import pandas as pd

    from parallelbench.analysis.uncertainty import interval

    errors = rows["_error"].to_numpy(bool) if "_error" in rows else None
    scored = rows[~errors] if errors is not None else rows
    n_errors = int(errors.sum()) if errors is not None else 0
    tps = float(pd.to_numeric(rows["tps"], errors="coerce").mean()) if "tps" in rows else math.nan
    answer = pd.to_numeric(rows["answer_tps"], errors="coerce") if "answer_tps" in rows else None
    answer_tps = float(answer.mean()) if answer is not None and answer.notna().all() else math.nan
    if scored.empty:
        return Cell(math.nan, math.nan, math.nan, 0, len(rows), tps, answer_tps, n_errors)
    clusters = None
    if "sample_id" in scored:
        clusters = list(zip(scored["task"], scored["sample_id"])) if "task" in scored else list(scored["sample_id"])
    ci = interval(scored["score"].to_numpy(dtype=float), clusters)
    return Cell(ci.estimate, ci.low, ci.high, ci.n, len(rows), tps, answer_tps, n_errors)


def _config_order(rows: "pd.DataFrame") -> list[str]:
    def key(item: tuple[str, str, str]) -> tuple:
        strategy, params, label = item
        try:
            values = json.loads(params)
        except (TypeError, ValueError):
            values = {}
        values = values if isinstance(values, dict) else {}
        return (strategy, tuple((k, _sortable(v)) for k, v in sorted(values.items())), label)

    seen = {(r.strategy, r.params, r.config) for r in rows.itertuples()}
    return [label for _, _, label in sorted(seen, key=key)]


def _sortable(v: Any) -> tuple:
    if v is None:
        return (0, 0.0, "")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (1, float(v), "")
    return (2, 0.0, str(v))


def print_summary(frame: "pd.DataFrame", console: "Console", titles: dict[str, str] | None = None) -> None:
    """Per model: accuracy ± half-width of its 95% interval · tokens per step (answer tokens per
    step) per strategy config and task, every number whole at the console's width and when piped.

    Configs as rows and tasks as columns when that fits; otherwise tasks as rows and configs as
    columns, split over as many tables as the width needs, each config named in full in its
    header when the width allows and numbered C1, C2 ... with a legend under the table when
    it does not; at a width where not even that fits, each cell stacks its speed under its
    score. With a `data` column (`results --all-versions`) the rows are (task, data version).
    `titles` maps a model to a title prefix (default: its name).
    """
    from parallelbench.analysis.terminal import full_label, print_line
    from parallelbench.display import counted

    table_rows = summarize(frame)
    if table_rows.empty:
        console.print("[yellow]the database holds no results yet[/yellow]; run `parallelbench run` first")
        return
    data = frame.assign(_error=error_mask(frame))
    from parallelbench.tps import with_answer_columns

    data = with_answer_columns(data)
    versioned = "data" in table_rows
    any_errors = False
    for model, rows in table_rows.groupby("model", sort=False):
        keys = list(dict.fromkeys(zip(rows["task"], rows["data"]) if versioned else rows["task"]))
        labels = _config_order(rows)
        scored_n = rows.loc[rows["n"] > 0, "n"]
        uniform = scored_n.nunique() <= 1
        grid = {}
        for r in rows.itertuples():
            key = (r.task, r.data) if versioned else r.task
            grid[r.config, key] = Cell(r.accuracy, r.ci_low, r.ci_high, int(r.n), int(r.rows), r.tokens_per_step,
                                       r.answer_tokens_per_step, int(r.scorer_errors))
        mine = data[data["model"] == model]
        means = {label: _stats(mine[mine["config"] == label]) for label in labels}
        any_errors |= bool(rows["scorer_errors"].sum())
        samples = ""
        if uniform and len(scored_n):
            n = int(scored_n.iloc[0])
            samples = f"{n} sample{'' if n == 1 else 's'} per cell, "
        name = (titles or {}).get(model) or full_label(model)
        print_line(console, f"{name}: {samples}{counted(int(rows['rows'].sum()), 'row')}",
                   "bold")
        _print_grid(console, labels, keys, grid, means, with_n=not uniform, versioned=versioned)
    from rich.text import Text

    console.print(Text(CELL_LEGEND, style="dim"))  # prose: folded at spaces to the width, like any paragraph
    if any_errors:
        console.print(Text(ERROR_LEGEND, style="dim"))


def _row_labels(keys: list, versioned: bool) -> list[list[str]]:
    """The label cells of each table row: [task] or [task, data version]."""
    tasks = [k[0] if versioned else k for k in keys]
    short = _task_labels(list(dict.fromkeys(tasks)))
    shown = dict(zip(dict.fromkeys(tasks), short))
    return [[shown[k[0]], str(k[1])] if versioned else [shown[k]] for k in keys]


def _print_grid(console, labels, keys, grid, means, *, with_n: bool, versioned: bool) -> None:
    from parallelbench.analysis.terminal import distinct_labels, fits, print_table

    texts = {key: cell.text(with_n) for key, cell in grid.items()}
    mean_texts = {label: cell.text(with_n) for label, cell in means.items()}
    if not versioned:
        wide = _configs_by_task(labels, keys, texts, mean_texts)
        if fits(console, wide):
            print_table(console, wide)
            return
    shown = distinct_labels(labels)
    row_labels = _row_labels(keys, versioned)
    args = (console, labels, shown, keys, grid, means, row_labels, with_n)
    named, numbered_chunks = _chunks(*args, False, False, versioned), _chunks(*args, True, False, versioned)
    numbered, stacked = False, False
    # full names whenever they fit and take no more tables than numbered columns would
    chunks = named if named is not None and (numbered_chunks is None or len(named) <= len(numbered_chunks)) else None
    if chunks is None:
        numbered, chunks = True, numbered_chunks
    if chunks is None:  # not even one config beside the task fits: each cell's speed goes under its score
        stacked, chunks = True, _chunks(*args, True, True, versioned)
    if chunks is None:  # nothing fits: one config per table, printed whole (the terminal folds the lines)
        chunks = [[i] for i in range(len(labels))]
    _print_chunks(console, chunks, labels, shown, keys, grid, means, row_labels, with_n, numbered, stacked, versioned)


def _tasks_table(chunk, labels, shown, keys, grid, means, row_labels, with_n, numbered, stacked, versioned):
    from rich.table import Table
    from rich.text import Text

    from parallelbench.analysis.terminal import short_ids

    ids = short_ids("C", len(labels))
    table = Table(show_lines=stacked)
    table.add_column("task", style="bold", no_wrap=True)
    if versioned:
        table.add_column("data", no_wrap=True)
    for i in chunk:
        table.add_column(ids[i] if numbered else Text(shown[i]), justify="right", no_wrap=True)
    for key, label_cells in zip(keys, row_labels):
        cells = [grid[labels[i], key].text(with_n, stacked) if (labels[i], key) in grid else "" for i in chunk]
        table.add_row(*(Text(c) for c in label_cells), *cells)
    if len(keys) > 1:
        table.add_row(Text("mean", style="bold"), *([""] if versioned else []),
                      *(means[labels[i]].text(with_n, stacked) for i in chunk))
    return table


def _chunks(console, labels, shown, keys, grid, means, row_labels, with_n, numbered, stacked, versioned):
    """Configs split into consecutive groups whose tables fit the console (as even as the widths
    allow); None when a single config does not fit in this layout."""
    from parallelbench.analysis.terminal import fits, table_width

    args = (labels, shown, keys, grid, means, row_labels, with_n, numbered, stacked, versioned)
    base = table_width(console, _tasks_table([], *args))
    widths = [table_width(console, _tasks_table([i], *args)) - base for i in range(len(labels))]
    if any(base + w > console.width for w in widths):
        return None
    groups: list[list[int]] = [[]]
    used = base
    for i, w in enumerate(widths):
        if groups[-1] and used + w > console.width:
            groups.append([])
            used = base
        groups[-1].append(i)
        used += w
    size = -(-len(labels) // len(groups))  # even tables when they fit: 9 configs in 3 tables -> 3, 3, 3
    even = [list(range(s, min(s + size, len(labels)))) for s in range(0, len(labels), size)]
    if len(even) == len(groups) and all(fits(console, _tasks_table(c, *args)) for c in even):
        return even
    return groups


def _print_chunks(console, chunks, labels, shown, keys, grid, means, row_labels, with_n, numbered, stacked,
                  versioned) -> None:
    from parallelbench.analysis.terminal import legend_lines, print_legend, print_line, print_table, short_ids

    ids = short_ids("C", len(labels))
    for n, chunk in enumerate(chunks, 1):
        if len(chunks) > 1:
            print_line(console, f"[{n}/{len(chunks)}]", "bold")
        print_table(console, _tasks_table(chunk, labels, shown, keys, grid, means, row_labels, with_n, numbered,
                                          stacked, versioned))
        if numbered:
            print_legend(console, legend_lines([ids[i] for i in chunk], [labels[i] for i in chunk]))


def _task_labels(tasks: list[str]) -> list[str]:
    from parallelbench.analysis.terminal import distinct_labels

    shorts = _short_names(tasks)
    return distinct_labels([shorts[t] for t in tasks])


def _configs_by_task(labels, tasks, texts, mean_texts):
    from rich.table import Table
    from rich.text import Text

    from parallelbench.analysis.terminal import distinct_labels

    short = dict(zip(tasks, _task_labels(tasks)))
    table = Table(show_lines=False)
    table.add_column("strategy config", style="bold", no_wrap=True)
    for t in tasks:
        table.add_column(Text(short[t]), justify="right", no_wrap=True)
    several = len(tasks) > 1  # one task: its column is the mean
    if several:
        table.add_column("mean", justify="right", style="bold", no_wrap=True)
    for label, shown in zip(labels, distinct_labels(labels)):
        table.add_row(Text(shown), *(texts.get((label, t), "") for t in tasks), *([mean_texts[label]] if several else []))
    return table


def _short_names(tasks: list[str]) -> dict[str, str]:
    """'waiting_line/copy' -> 'copy' unless two tasks share the last part."""
    last = [t.split("/")[-1] for t in tasks]
    return {t: (s if last.count(s) == 1 else t) for t, s in zip(tasks, last)}


def print_order_summary(frame: "pd.DataFrame", console: "Console") -> None:
    """Per model, one row per strategy config: the decoding-order metrics averaged over its samples
    (`analysis.order_metrics`), config labels whole or numbered with a legend, and metric columns
    dropped from the right (with a note) where even that does not fit."""
    from rich.table import Table
    from rich.text import Text

    from parallelbench.analysis.order_metrics import LEGEND, ORDER_COLUMNS, SHORT_NAMES, order_summary
    from parallelbench.analysis.terminal import (distinct_labels, dropped_line, fit_columns, fits, full_label,
                                                 legend_lines, print_legend, print_line, print_table, short_ids)

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

        def table(numbered: bool, columns=tuple(shown_columns)) -> "Table":
            out = Table(show_lines=False)
            out.add_column("id" if numbered else "strategy config", no_wrap=True)
            out.add_column("n", justify="right", no_wrap=True)
            for _, header in columns:
                out.add_column(header, justify="right", no_wrap=True)
            for i, (_, row) in enumerate(order.iterrows()):
                values = ["–" if row[c] != row[c] or math.isinf(row[c]) else f"{row[c]:.2f}" for c, _ in columns]
                out.add_row(ids[i] if numbered else Text(shown[i]), str(int(row["n"])), *values)
            return out

        print_line(console, f"{full_label(model)}: decoding order per strategy config (means over samples)", "bold")
        wide = table(False)
        if fits(console, wide):
            print_table(console, wide)
            continue
        compact, dropped = fit_columns(console, lambda cols: table(True, tuple(cols)), list(shown_columns))
        print_table(console, compact)
        print_legend(console, legend_lines(ids, labels))
        if dropped:
            print_line(console, dropped_line([h for _, h in dropped], "results --order"), "yellow")
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
    from parallelbench.analysis.terminal import (distinct_labels, dropped_line, fit_columns, fits, full_label,
                                                 legend_lines, print_legend, print_line, print_table, short_ids)

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

        headers = ("n", "unmask", "final", "repair", "broke", "edits", *(("ins", "del") if with_indel else ()), "chg")

        def table(numbered: bool, numbered_tasks: bool = False, columns=headers) -> "Table":
            out = Table(show_lines=False)
            out.add_column("id" if numbered else "strategy config", no_wrap=True)
            out.add_column("task", no_wrap=True)
            for header in columns:
                out.add_column(header, justify="right", no_wrap=True)
            for _, r in rows.iterrows():
                i, t = labels.index(r["config"]), tasks.index(r["task"])
                values = dict(zip(headers, (
                    str(int(r["rows"])), cell(r["unmask"], r["unmask_low"], r["unmask_high"]),
                    cell(r["final"], r["final_low"], r["final_high"]), share(r["repaired"]), share(r["broken"]),
                    num(r["edits"]), *((num(r["inserts"]), num(r["deletes"])) if with_indel else ()),
                    num(r["changed_tokens"]))))
                out.add_row(ids[i] if numbered else Text(shown[i]), task_ids[t] if numbered_tasks else Text(task_shown[t]),
                            *(values[h] for h in columns))
            return out

        print_line(console, f"{full_label(model)}: does editing repair parallel decoding? (unmask vs final score)", "bold")
        dropped: list[str] = []
        for numbered, numbered_tasks in ((False, False), (True, False), (True, True)):
            chosen = table(numbered, numbered_tasks)
            if fits(console, chosen) or numbered_tasks:
                break
        if not fits(console, chosen):  # columns dropped from the right, never a number cut
            chosen, dropped = fit_columns(console, lambda kept: table(True, True, headers[:1] + tuple(kept)), headers[1:])
        print_table(console, chosen)
        if dropped:
            print_line(console, dropped_line(dropped, "results --repair"), "yellow")
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
