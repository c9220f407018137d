"""`write_report`: one self-contained HTML page (plotly.js and CSS inlined, works offline).

Sections: leaderboard, speed-quality trade-off with the oracle, per-task panels, task map,
decoding order, whether editing repairs parallel decoding, chain-of-thought vs direct runs
(when a `<task>-cot` task was run),
failure browser, and the static figures (PNG + SVG) written beside the page. A section
without the data it needs says which runs would fill it instead of failing.
"""

from __future__ import annotations

import datetime as _dt
import html
from pathlib import Path

import pandas as pd

from parallelbench.analysis import figures
from parallelbench.analysis.curves import curves
from parallelbench.analysis.failures import failures_html, find_failures
from parallelbench.analysis.board import build_boards, other_measure, ranking_line, without_scorer_errors
from parallelbench.analysis.cot import cot_comparison
from parallelbench.analysis.leaderboard import threshold_name
from parallelbench.analysis.pb_rules import RULE_TEXT, check_rule
from parallelbench.analysis.selection import select
from parallelbench.analysis.uncertainty import precision_line

# The report's headline columns PB90..PB60: tokens per step sustained at >= 90/80/70/60 % accuracy.
REPORT_THRESHOLDS = (90.0, 80.0, 70.0, 60.0)
from parallelbench.analysis.oracle import oracle_points
from parallelbench.analysis.order_metrics import LEGEND, ORDER_COLUMNS, SHORT_NAMES, order_summary
from parallelbench.analysis import repair as repair_mod
from parallelbench.analysis import plots
from parallelbench.analysis.taskmap import DEFINITION, task_map
from parallelbench.display import display_name
from parallelbench.scoring.errors import frame_errors
from parallelbench.tps import TPS_NAME, check_measure, measure_line

REPORT_NAME = "report.html"

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}
header{background:#1d2430;color:#fff;padding:18px 32px}header h1{margin:0 0 4px;font-size:24px}
header p{margin:0;color:#c9d1dc;font-size:13px}main{padding:8px 32px 48px;max-width:1500px}
section{background:#fff;border-radius:8px;padding:14px 22px;margin:18px 0;box-shadow:0 1px 3px rgba(0,0,0,.08)}
h2{font-size:19px;margin:6px 0 8px}h3{font-size:15px;margin:14px 0 6px}h4{margin:4px 0;font-size:13px}
p.help{color:#4a5463;font-size:13px;margin:4px 0 10px}p.missing{color:#8a4b00;background:#fff6e5;padding:8px 12px;border-radius:6px}
table{border-collapse:collapse;font-size:13px;margin:6px 0;display:block;max-width:100%;overflow-x:auto}th,td{padding:5px 10px;border-bottom:1px solid #e3e6ea;text-align:right}
th{background:#eef1f4}td.name,th.name{text-align:left}td.kind{text-align:left;color:#4a5463}
.summary span{display:inline-block;margin-right:18px;font-size:13px}
.plot{min-height:420px;overflow-x:auto}.plot.taskmap{min-height:560px}p.definition{font-size:12px;max-width:660px}.side-by-side{display:grid;grid-template-columns:1fr 1fr;gap:12px}
.decode{border:1px solid #e3e6ea;border-radius:6px;padding:8px}.pair{margin:8px 0 16px}
.tokens{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px;line-height:1.9;white-space:pre-wrap;word-break:break-word}
.tok{border-radius:3px;padding:1px 1px;margin:0 1px}.tok.prefilled{background:#d9dde3;color:#333}
.colourbar{display:flex;align-items:center;gap:8px;font-size:11px;color:#4a5463;margin-top:6px}
.colourbar .ramp{display:inline-block;width:160px;height:10px;border-radius:3px}
p.meta{font-size:12px;color:#4a5463;margin:2px 0 6px}details summary{cursor:pointer;font-weight:600;margin:8px 0}
ul.files{font-size:13px;columns:2}code{font-size:12px}
span.ci{font-size:11px;color:#6a7483}td.tied{background:#fff8dc}p.precision{font-size:13px;margin:8px 0 2px}
p.rule{font-size:13px;margin:4px 0}p.common-set{color:#8a4b00;font-size:13px;margin:6px 0}td.id{color:#4a5463}
th.ranking{background:#dde6f0}p.legend{font-size:12px;color:#4a5463;margin:2px 0 12px;max-width:1300px}
table.aup td{white-space:nowrap}tr.mean td{border-top:2px solid #c9d1dc}
"""


class ResultsDatabaseError(ValueError):
    """The --db file exists but is not a SQLite results database."""


def load_frame(db_path: Path) -> pd.DataFrame:
    """The results frame of contract 5; FileNotFoundError names the missing database."""
    import sqlite3

    from parallelbench.runner.store import ResultsStore, StoreError, missing_database

    db_path = Path(db_path)
    if not db_path.exists():
        raise FileNotFoundError(missing_database(db_path))

    try:  # read only: a report never creates or alters a database
        store = ResultsStore(db_path, create=False)
        try:
            return store.frame()
        finally:
            store.close()
    except StoreError as err:  # already one line that names the file and the fix
        raise ResultsDatabaseError(str(err)) from None
    except sqlite3.DatabaseError as err:  # e.g. a CSV or JSONL export passed as --db
        raise ResultsDatabaseError(
            f"{db_path} is not a results database ({err}); pass the --db file written by `parallelbench run`"
        ) from None


def _plot_html(fig, div_id: str) -> str:
    import plotly.io as pio

    return pio.to_html(fig, include_plotlyjs=False, full_html=False, div_id=div_id, config={"displaylogo": False, "responsive": True})


def _shown(value) -> str:
    """A user-given name (strategy, task, model) for HTML and for Plotly labels: cleaned, cut
    to a readable length and escaped (Plotly renders a subset of HTML in its labels)."""
    return html.escape(display_name(value))


def _missing(text: str) -> str:
    return f'<p class="missing">{html.escape(text)}</p>'


def _fmt(value: float, digits: int) -> str:
    return "<td>–</td>" if value != value else f"<td>{value:.{digits}f}</td>"


#: Strategies per AUP table: tasks are rows, so a page of 1400 px holds this many value columns.
AUP_COLUMNS_PER_TABLE = 8


def _aup_section(boards: list) -> str:
    """AUP per task with 95% intervals: tasks as rows (as in the CLI), strategies as numbered
    columns named under the table, split into tables of `AUP_COLUMNS_PER_TABLE` so it fits a page."""
    intro = (
        '<p class="help">AUP (accuracy under parallelism, as the d3LLM dLLM leaderboard defines it): per task, the '
        "area under the accuracy-tokens-per-step curve weighted by W(y) = min(exp(-3(1 - y/y_max)), 1), y_max the best "
        "accuracy of the rows shown, points more than 5 points below the slowest setting left out. Higher is better. "
        "Under each value: its 95% interval (the leaderboard's bootstrap over samples). Strategies are numbered as in "
        "the leaderboard above (S1 is its first row).</p>"
    )
    parts = [intro]
    for g, board in enumerate(boards):
        aups = board.aups
        columns = [c for c in aups.columns if c.startswith("AUP ")]
        if not columns or aups.empty:
            parts.append(_missing("Needs per-task results of at least one strategy (parallelbench run)."))
            continue
        order = [s for s in board.table["strategy"] if s in set(aups["strategy"])] if len(board.table) else list(aups["strategy"])
        ids = {s: f"S{i + 1}" for i, s in enumerate(board.table["strategy"])} if len(board.table) else {}
        ids.update({s: f"S{len(ids) + i + 1}" for i, s in enumerate(x for x in aups["strategy"] if x not in ids)})
        order += [s for s in aups["strategy"] if s not in order]
        value = {(r["strategy"], c): r[c] for _, r in aups.iterrows() for c in ["AUP", *columns]}
        bounds = {(r["strategy"], f"AUP {r['task']}"): (r["ci_low"], r["ci_high"]) for _, r in board.aup_intervals.iterrows()}
        mean_bounds = {}
        if len(board.table) and "AUP_ci_low" in board.table:
            mean_bounds = {r["strategy"]: (r["AUP_ci_low"], r["AUP_ci_high"]) for _, r in board.table.iterrows()}
        if len(boards) > 1:
            parts.append(f"<h3>Group {g + 1} of {len(boards)}</h3>")
        for start in range(0, len(order), AUP_COLUMNS_PER_TABLE):
            chunk = order[start : start + AUP_COLUMNS_PER_TABLE]
            head = "".join(f'<th title="{html.escape(display_name(s, 400))}">{ids[s]}</th>' for s in chunk)
            rows = []
            for column in columns:
                cells = "".join(_ci_cell(value.get((s, column), float("nan")), *bounds.get((s, column), (float("nan"),) * 2),
                                         False, 1) for s in chunk)
                rows.append(f'<tr><td class="name">{_shown(column[4:])}</td>{cells}</tr>')
            cells = "".join(_ci_cell(value.get((s, "AUP"), float("nan")), *mean_bounds.get(s, (float("nan"),) * 2), False, 1)
                            for s in chunk)
            rows.append(f'<tr class="mean"><td class="name"><b>task average</b></td>{cells}</tr>')
            legend = "; ".join(f"<b>{ids[s]}</b> = {_shown(s)}" for s in chunk)
            parts.append(
                f'<table class="aup" id="aup{"-" + str(g + 1) if g else ""}{"-" + str(start) if start else ""}">'
                f'<thead><tr><th class="name">task</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
                f'<p class="legend">{legend}</p>'
            )
    return "".join(parts)


def _order_section(summary: pd.DataFrame) -> str:
    """Decoding-order metrics per strategy config (`order_metrics.order_summary`), one table per model."""
    intro = f'<p class="help">{html.escape(LEGEND)}. Higher is more left-to-right.</p>'
    if summary.empty:
        return intro + _missing("Needs results with a stored decoding order (any parallelbench run).")
    shown = [(c, h) for c, h in zip(ORDER_COLUMNS, SHORT_NAMES) if summary[c].notna().any()]
    absent = [h for c, h in zip(ORDER_COLUMNS, SHORT_NAMES) if not summary[c].notna().any()]
    parts = [intro]
    for model, rows in summary.groupby("model", sort=True):
        body = "".join(
            f'<tr><td class="name">{_shown(r["config"])}</td><td>{int(r["n"])}</td>'
            + "".join(_fmt(r[c], 2) for c, _ in shown) + "</tr>"
            for _, r in rows.sort_values(["strategy", "config"], key=lambda v: v.map(str)).iterrows())
        head = "".join(f"<th>{html.escape(h)}</th>" for _, h in shown)
        parts.append(f"<h3>{_shown(model)}</h3><table class=\"order\"><thead><tr><th class=\"name\">strategy config</th>"
                     f"<th>samples</th>{head}</tr></thead><tbody>{body}</tbody></table>")
    if absent:
        parts.append(f'<p class="help">Not shown: {html.escape(", ".join(absent))}: these rows lack the stored columns '
                     "and their stored order stops at the first stop token, so the pad positions those need are missing.</p>")
    return "".join(parts)


REPAIR_TITLE = "Does editing repair parallel decoding?"


def _repair_section(table: pd.DataFrame, hidden: int) -> str:
    """Unmask vs final score of every editing strategy config and task (`analysis.repair`), a table and a
    figure per model."""
    intro = (
        '<p class="help">Strategies that can change a token they already wrote (edit-threshold, remasking, '
        "insert/delete editing) are scored twice: on the answer when the last original mask was filled, before any "
        "later edit (<b>unmask</b>), and on the answer they return (<b>final</b>). Points above the diagonal were "
        "repaired more often than broken. " + html.escape(repair_mod.LEGEND) + ".</p>"
    )
    if len(table) == 0:
        return intro + _missing(
            "Needs runs of a strategy that can change a written token, e.g. parallelbench run --strategy edit-threshold "
            "--threshold 0.5 (strategies that never edit have unmask score = score).")
    parts = [intro]
    ids = figures.file_names(table["model"].unique())
    for model in sorted(table["model"].unique()):
        rows = table[table["model"] == model]
        body = "".join(
            f'<tr><td class="name">{_shown(r["config"])}</td><td class="name">{_shown(r["task"])}</td>'
            f'<td>{int(r["rows"])}</td>{_ci_cell(100 * r["unmask"], 100 * r["unmask_low"], 100 * r["unmask_high"], False, 1)}'
            f'{_ci_cell(100 * r["final"], 100 * r["final_low"], 100 * r["final_high"], False, 1)}'
            f'{_fmt(100 * r["repaired"], 1)}{_fmt(100 * r["broken"], 1)}{_fmt(r["edits"], 2)}'
            f'{_fmt(r["inserts"], 2)}{_fmt(r["deletes"], 2)}{_fmt(r["changed_tokens"], 2)}</tr>'
            for _, r in rows.iterrows())
        head = ('<tr><th class="name">strategy config</th><th class="name">task</th><th>rows</th><th>unmask (%)</th>'
                "<th>final (%)</th><th>repaired (%)</th><th>broken (%)</th><th>edits</th><th>inserts</th><th>deletes</th>"
                "<th>changed tokens</th></tr>")
        fig = plots.repair_plot(table, model)
        parts.append(f"<h3>{_shown(model)}</h3><table class=\"repair\"><thead>{head}</thead><tbody>{body}</tbody></table>"
                     f'<div class="plot">{_plot_html(fig, f"repair-{ids[model]}")}</div>')
    unmeasured = int(table["unmeasured"].sum())
    if unmeasured:
        parts.append(f'<p class="help">{unmeasured:,} rows of editing strategies carry no repair record (written before '
                     "it was kept, or by a decoding loop that does not keep it) and are left out; "
                     "<code>parallelbench run --force</code> decodes them again with it.</p>")
    if hidden:
        parts.append(f'<p class="help">Not shown: {hidden} strategy config{"" if hidden == 1 else "s"} that never '
                     "change a written token (unmask = final).</p>")
    return "".join(parts)


def _cot_section(cot: pd.DataFrame) -> str:
    """CoT and direct runs of the same model and strategy setting, with what each spent."""
    intro = (
        '<p class="help">Each <code>&lt;task&gt;-cot</code> run beside the direct task with the same model and strategy '
        "setting: accuracy, and the mean generated tokens and forward passes (NFE) per sample. The paper finds CoT "
        "keeps accuracy up under parallel decoding at about 8x the output tokens (appendix on CoT prompting). "
        "&ndash; : no direct run of that setting.</p>"
    )
    rows = []
    for _, r in cot.iterrows():
        rows.append(
            f'<tr><td class="name">{_shown(r["model"])}</td><td class="name">{_shown(r["task"])}</td>'
            f'<td class="name">{_shown(r["config"])}</td>'
            f'{_fmt(r["direct_accuracy"], 1)}{_fmt(r["cot_accuracy"], 1)}'
            f'{_fmt(r["direct_tokens"], 1)}{_fmt(r["cot_tokens"], 1)}{_fmt(r["direct_nfe"], 1)}{_fmt(r["cot_nfe"], 1)}'
            f'{_fmt(r["direct_n"], 0)}{_fmt(r["cot_n"], 0)}</tr>'
        )
    head = (
        '<tr><th class="name">model</th><th class="name">task</th><th class="name">strategy</th>'
        "<th>direct acc. (%)</th><th>CoT acc. (%)</th><th>direct tokens</th><th>CoT tokens</th>"
        "<th>direct NFE</th><th>CoT NFE</th><th>direct n</th><th>CoT n</th></tr>"
    )
    return intro + f'<table id="cot"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def _ci_cell(value: float, low: float, high: float, tied: bool, digits: int) -> str:
    """A headline with its 95% interval underneath; tied-with-the-leader cells are marked."""
    if value != value:
        return "<td>–</td>"
    interval = f'<br><span class="ci">{low:.{digits}f}–{high:.{digits}f}</span>' if low == low else ""
    mark = ' class="tied" title="interval overlaps the leader\'s: tied"' if tied else ""
    return f"<td{mark}>{value:.{digits}f}{'&thinsp;≈' if tied else ''}{interval}</td>"


def _leaderboard_section(boards: list, thresholds, tps: str = "window") -> str:
    rule = boards[0].rule if boards else "site"
    names = [threshold_name(t) for t in thresholds]
    other = other_measure(tps)
    how = ("Operating points are walked from the lowest tokens per step upward; adaptive strategies interpolate "
           "linearly to the crossing, top-k strategies keep the last point above. 0 means even the slowest setting is "
           "below the threshold." if rule == "site" else
           "Every setting counts on its own: the largest tokens per step (per-sample mean of max_tokens / NFE, k for "
           "top-k) among the settings whose task-averaged accuracy reaches the threshold; – when none does.")
    intro = (
        '<p class="help">Most tokens per step a strategy sustains while its task-averaged accuracy stays at or above each '
        f"threshold. {how} Under each value: its 95% interval (bootstrap over samples, the same draws for "
        "every strategy). ≈ marks strategies whose interval overlaps the leader's in that column: they are tied with it, "
        "and the order among them is not established by these samples. In the # column, rows whose PB interval of the "
        "ranking column overlaps that of the row heading their group share its rank (=1, =3 ...).</p>"
        f'<p class="rule" id="pb-rule"><b>PB rule: {rule}</b> — {html.escape(RULE_TEXT[rule])}. '
        "(The other rule: <code>parallelbench report --pb-rule "
        f"{'max' if rule == 'site' else 'site'}</code>; both are defined in docs/report.md.)</p>"
        f'<p class="rule" id="ranking-column"><b>{html.escape(ranking_line(thresholds, rule, tps))}</b>.</p>'
        f'<p class="rule" id="tps-measure">{html.escape(measure_line(tps))}. The column <i>{other} PB{names[0]}</i> '
        f"gives PB{names[0]} on {html.escape(TPS_NAME[other])} (no interval; <code>parallelbench report --tps {other}"
        "</code> ranks on it); docs/report.md defines both.</p>"
    )
    if not boards or all(b.table.empty for b in boards):
        return intro + _missing("No results yet: run at least one strategy at one or more parameter settings (parallelbench run).")
    parts = [intro]
    for g, board in enumerate(boards):
        table = board.table
        if board.note:
            parts.append(f'<p class="common-set">{html.escape(board.note)}</p>')
        if table.empty:
            continue
        head = "".join(
            f'<th title="tokens per step sustained at accuracy ≥ {n}%{"; the ranking column, higher is better" if i == 0 else ""}"'
            f'{" class=ranking" if i == 0 else ""}>PB{n}</th>' for i, n in enumerate(names))
        other_key = board.other_column
        if other_key in table:
            head = head.replace("</th>", "</th>" + f'<th title="PB{names[0]} on {html.escape(TPS_NAME[other])}">'
                                f"{other} PB{names[0]}</th>", 1)
        head += '<th title="accuracy under parallelism, averaged over tasks">AUP</th>'
        rows = []
        for i, row in table.iterrows():
            parts_ = [_ci_cell(row[n], row[f"{n}_ci_low"], row[f"{n}_ci_high"], bool(row[f"{n}_tied"]), 2) for n in names]
            if other_key in table:
                parts_.insert(1, _fmt(row[other_key], 2))
            cells = "".join(parts_)
            cells += _ci_cell(row["AUP"], row["AUP_ci_low"], row["AUP_ci_high"], bool(row["AUP_tied"]), 1)
            shared = bool(row["tied"]) or list(table["rank"]).count(row["rank"]) > 1
            rank_text = f"={row['rank']}" if shared else str(row["rank"])
            flag = ' <b class="scorer-error" title="some rows of this strategy are scorer errors, left out">!</b>' \
                if row["strategy"] in board.flagged else ""
            rows.append(
                f'<tr class="lb-row" data-strategy="{_shown(row["strategy"])}" data-tied="{str(bool(row["tied"])).lower()}"><td>{rank_text}</td>'
                f'<td class="id">S{i + 1}</td><td class="name" title="{html.escape(display_name(row["strategy"], 400))}">{_shown(row["strategy"])}{flag}</td><td class="kind">{_shown(row["kind"])}</td>{cells}<td>{row["points"]}</td></tr>'
            )
        parts.append(
            f'<table id="leaderboard{"-" + str(g + 1) if g else ""}" class="leaderboard"><thead><tr><th>#</th><th>id</th>'
            f'<th class="name">strategy</th><th class="name">kind</th>{head}'
            f'<th>operating points</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
        )
        if board.flagged:
            parts.append('<p class="common-set">!: some rows of these strategies are scorer errors (see the summary); '
                         "they are left out of the ranking, not counted as 0.</p>")
        tied = [str(s) for s, t in zip(table["strategy"], table["tied"]) if t]
        if tied:
            parts.append(f'<p class="help">Tied for first on PB{names[0]} (the ranking column): '
                         f'{", ".join(_shown(s) for s in tied)}.</p>')
        if board.pooled is not None and len(board.pooled):
            cells = "".join(
                f'<tr><td class="name">{_shown(r["strategy"])}</td>{"".join(_fmt(r[n], 2) for n in names)}'
                f'<td>{r["points"]}</td></tr>' for _, r in board.pooled.iterrows())
            parts.append(
                '<p class="help">Pooled over every setting of every strategy, the number <code>pb analyze</code> prints '
                '(– : no setting reaches the threshold):</p><table class="pooled"><thead><tr><th class="name">model</th>'
                + "".join(f"<th>PB{n}</th>" for n in names) + f"<th>settings</th></tr></thead><tbody>{cells}</tbody></table>"
            )
    return "".join(parts)


def leaderboard_csv(boards: list) -> pd.DataFrame:
    """`leaderboard.csv`: every board's table with `pb_rule` (and `group` when several), pooled rows last (kind "pooled")."""
    parts = []
    for g, board in enumerate(boards):
        table = board.table.copy()
        if board.pooled is not None and len(board.pooled):
            table = pd.concat([table, board.pooled], ignore_index=True)
        table.insert(0, "pb_rule", board.rule)
        table.insert(1, "tps", board.tps)
        if len(boards) > 1:
            table.insert(2, "group", g + 1)
        parts.append(table)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _tradeoff_section(averaged: pd.DataFrame, oracle_avg: pd.DataFrame, x_scale: str = "log2") -> str:
    intro = (
        '<p class="help">Task-averaged accuracy against tokens per step, one marker per parameter setting '
        "(circles: top-k, squares: adaptive); tokens per step on a log2 axis (the paper's k = 1, 2, 4, 8 ...), "
        "error bars are 95% intervals where the results carry them. Up and to the right is better. The star is the "
        "per-sample threshold oracle (appendix G.2): for every sample the cheapest confidence threshold that still "
        "reaches that sample's best score.</p>"
    )
    if len(averaged) == 0:
        return intro + _missing("Needs results of at least one strategy (parallelbench run).")
    parts = [intro]
    ids = figures.file_names(averaged["model"].unique())
    for model in sorted(averaged["model"].unique()):
        fig = plots.tradeoff_plot(averaged, oracle_avg, model, x_scale)
        stars = oracle_avg[oracle_avg["model"] == model] if len(oracle_avg) else oracle_avg
        parts.append(f"<h3>{_shown(model)}</h3>")
        parts.append(f'<div class="plot">{_plot_html(fig, f"tradeoff-{ids[model]}")}</div>')
        if len(stars):
            rows = "".join(
                f'<tr><td class="name">{_shown(r["curve"])}</td><td>{r["accuracy"]:.1f}</td><td>{r["tps"]:.2f}</td><td>{int(r["n_tasks"])}</td></tr>'
                for _, r in stars.iterrows()
            )
            parts.append(
                '<table class="oracle"><thead><tr><th class="name">oracle</th><th>accuracy (%)</th>'
                f"<th>tokens per step</th><th>tasks</th></tr></thead><tbody>{rows}</tbody></table>"
            )
        else:
            parts.append(_missing("Oracle: needs confidence-threshold runs at two or more thresholds on the same samples."))
    return "".join(parts)


def _tasks_section(per_task: pd.DataFrame, x_scale: str = "log2") -> str:
    intro = (
        '<p class="help">The same operating points, task by task (as in the paper\'s figure 4), tokens per step on a '
        "log2 axis, 95% intervals as error bars where the results carry them. Click a legend entry to hide a strategy.</p>"
    )
    if len(per_task) == 0:
        return intro + _missing("Needs results of at least one strategy (parallelbench run).")
    parts = [intro]
    ids = figures.file_names(per_task["model"].unique())
    for model in sorted(per_task["model"].unique()):
        fig = plots.task_panels_plot(per_task, model, x_scale)
        parts.append(f"<h3>{_shown(model)}</h3>")
        parts.append(f'<div class="plot">{_plot_html(fig, f"tasks-{ids[model]}")}</div>')
    return "".join(parts)


def _taskmap_section(tmap: pd.DataFrame) -> str:
    intro = (
        '<p class="help">Each task placed by how parallelizable it is (x) and by which order it prefers (y), as in the '
        "paper's appendix G.1, figure 6; the marker colour is the task's accuracy level, which x alone does not show. "
        "Hover a point for its values; the table below lists them all.</p>"
    )
    need = (
        "Needs top-k runs (random, l2r, confidence-topk, topk-margin or entropy-topk): at two or more k without "
        "block_length for x, and at k = 2 with two or more block_length values for y."
    )
    if len(tmap) == 0:
        return intro + _missing(need)
    fig = plots.taskmap_plot(tmap)
    if fig is None:
        return intro + _missing(need) + _taskmap_table(tmap)
    definition = f'<p class="help definition">{html.escape(DEFINITION)}</p>'
    return intro + f'<div class="plot taskmap">{_plot_html(fig, "taskmap")}</div>' + definition + _taskmap_table(tmap)


def _taskmap_table(tmap: pd.DataFrame) -> str:
    rows = "".join(
        f'<tr><td class="name">{_shown(r["task"])}</td><td>{r["parallelizability"]:.2f}</td>'
        f'<td>{r["order_slope"]:.2f}</td><td>{r.get("accuracy", float("nan")):.1f}</td><td>{r["x_groups"]}</td><td>{r["y_groups"]}</td></tr>'
        for _, r in tmap.iterrows()
    )
    return (
        '<details><summary>task map values</summary><table><thead><tr><th class="name">task</th><th>x</th><th>y</th>'
        "<th>accuracy level (%)</th><th>(model, strategy) pairs for x</th><th>pairs for y</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></details>"
    )


def _failures_section(frame: pd.DataFrame) -> str:
    intro = (
        '<p class="help">Samples that one-by-one decoding (1 token per step) got right and a parallel decode of the same '
        "model got wrong, side by side. Each token is coloured by the step that committed it (dark: early, yellow: late); "
        "tokens of one colour were committed in the same forward pass. Hover a token for its step.</p>"
    )
    failures = find_failures(frame)
    if not failures:
        return intro + _missing(
            "Needs one-by-one runs (k = 1, 1 token per step) that scored 1 and parallel runs of the same samples that did not "
            "(none found)."
        )
    return intro + failures_html(failures)


def _files_section(written: list[Path], out_dir: Path) -> str:
    if not written:
        return _missing("No figures or data files: there were no results to draw.")
    items = "".join(f'<li><a href="{html.escape(p.relative_to(out_dir).as_posix())}">{html.escape(p.relative_to(out_dir).as_posix())}</a></li>' for p in written)
    return f'<p class="help">Matplotlib figures for papers, written beside this page.</p><ul class="files">{items}</ul>'


def export_curves(averaged: pd.DataFrame, per_task: pd.DataFrame, out_dir: Path) -> list[Path]:
    """`curves/<model>/<strategy>.csv` with task,tps,accuracy,ci_low,ci_high,n,answer_tps (+ `avg` rows):
    `parallelbench leaderboard --curves` input; ci_low/ci_high bound the 95% interval of the accuracy (%),
    n counts its samples (summed over tasks on `avg` rows), answer_tps is the answer tokens per step."""
    written = []
    folders = figures.file_names(per_task["model"].unique()) if len(per_task) else {}
    stems = {m: figures.file_names(g["curve"].unique(), figures.file_stem) for m, g in per_task.groupby("model")}
    for (model, curve), group in per_task.groupby(["model", "curve"], sort=True):
        folder = Path(out_dir) / "curves" / folders[model]
        folder.mkdir(parents=True, exist_ok=True)
        avg = averaged[(averaged["model"] == model) & (averaged["curve"] == curve)]
        columns = ["task", "tps", "accuracy", "ci_low", "ci_high", "n", "answer_tps"]
        table = pd.concat(
            [group.reindex(columns=columns).sort_values(["task", "tps"]), avg.assign(task="avg").reindex(columns=columns)]
        )
        path = folder / f"{stems[model][curve]}.csv"
        table.to_csv(path, index=False)
        written.append(path)
    return written


def build_report(
    frame: pd.DataFrame, out_dir: Path, source: str = "", thresholds=REPORT_THRESHOLDS, static_figures: bool = True,
    x_scale: str = "log2", pb_rule: str = "site", tps: str = "window",
) -> Path:
    """Write report.html, figures and curve CSVs for `frame` into `out_dir`; returns the HTML path.

    `static_figures=False` skips the matplotlib PNG/SVG files (the slow part) when only the page is wanted;
    `x_scale` ("log2" or "linear") is the tokens-per-step axis of every plot; `pb_rule` ("site" or "max",
    `pb_rules.PB_RULES`) the rule of the leaderboard's PB columns and of `leaderboard.csv`; `tps` ("window" or
    "answer", `parallelbench.tps`) the tokens per step they use. Rows whose scorer failed are left out of
    every section (not counted as 0); the summary says how many.
    """
    from plotly.offline import get_plotlyjs

    check_rule(pb_rule)
    check_measure(tps)

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    everything = frame if frame is not None else pd.DataFrame()
    frame, _ = without_scorer_errors(everything)
    scorer_errors = frame_errors(everything)
    per_task, averaged = curves(frame)
    _, oracle_avg = oracle_points(frame)
    tmap = task_map(frame)
    repair_configs = repair_mod.editing_configs(frame)
    repair = repair_mod.repair_table(frame, repair_configs)
    written = (figures.write_figures(out_dir / "figures", per_task, averaged, oracle_avg, tmap, x_scale, repair)
               if static_figures else [])
    written += export_curves(averaged, per_task, out_dir)
    boards = build_boards(everything, thresholds, pb_rule, points=(per_task, averaged), tps=tps) if len(frame) else []
    leaderboard_html = _leaderboard_section(boards, thresholds, tps)
    board_csv = leaderboard_csv(boards)
    if len(board_csv):
        board_csv.to_csv(out_dir / "leaderboard.csv", index=False)
        written.append(out_dir / "leaderboard.csv")
    aups = pd.concat([b.aups for b in boards if len(b.aups)], ignore_index=True) if any(len(b.aups) for b in boards) else pd.DataFrame()
    if len(aups):
        aups.to_csv(out_dir / "aup.csv", index=False)
        written.append(out_dir / "aup.csv")
    order = order_summary(frame)
    if len(order):
        order.to_csv(out_dir / "order.csv", index=False)
        written.append(out_dir / "order.csv")
    if len(repair):
        repair.to_csv(out_dir / "repair.csv", index=False)
        written.append(out_dir / "repair.csv")
    cot = cot_comparison(frame)  # only runs of `<task>-cot` tasks add this section
    if len(cot):
        cot.to_csv(out_dir / "cot.csv", index=False)
        written.append(out_dir / "cot.csv")

    def counted(column: str, noun: str) -> str:
        n = int(frame[column].nunique()) if column in frame and len(frame) else 0
        return f"<span><b>{n}</b> {noun}{'' if n == 1 else 's'}</span>"

    summary = (
        f'<div class="summary">{counted("model", "model")}{counted("config", "strategy setting")}'
        f'{counted("task", "task")}{counted("sample_id", "sample")}'
        f"<span><b>{len(frame)}</b> result{'' if len(frame) == 1 else 's'}</span></div>"
        + "".join(f'<p class="missing scorer-error">{html.escape(g.line())}; they are left out of every section of '
                  "this report.</p>" for g in scorer_errors)
        + f'<p class="precision" id="precision">{html.escape(precision_line(per_task)[0].upper() + precision_line(per_task)[1:])}. '
        "Intervals are 95%: Wilson for 0/1 scores, a bootstrap over samples otherwise (clustered by sample when seeds "
        "repeat); task averages combine the tasks' intervals.</p>"
    )
    sections = [
        ("summary", "Summary", summary),
        ("leaderboard-section", "Leaderboard", leaderboard_html),
        ("aup-section", "AUP per task", _aup_section(boards)),
        ("tradeoff", "Speed-quality trade-off", _tradeoff_section(averaged, oracle_avg, x_scale)),
        ("per-task", "Per-task curves", _tasks_section(per_task, x_scale)),
        ("task-map", "Task map", _taskmap_section(tmap)),
        ("decoding-order", "Decoding order", _order_section(order)),
        ("repair", REPAIR_TITLE, _repair_section(repair, repair_mod.hidden_configs(frame, repair_configs))),
        ("failures", "Failure browser", _failures_section(frame)),
        ("files", "Figures and data files", _files_section(written, out_dir)),
    ]
    if len(cot):  # before the failure browser and the file list
        sections.insert(len(sections) - 2, ("cot-section", "Chain-of-thought vs direct", _cot_section(cot)))
    body = "".join(f'<section id="{sid}"><h2>{title}</h2>{content}</section>' for sid, title, content in sections)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    page = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>ParallelBench report</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}</style>'
        f'<script type="text/javascript">{get_plotlyjs()}</script></head><body>'
        f"<header><h1>ParallelBench report</h1><p>{html.escape(source)} · generated {stamp}</p></header>"
        f"<main>{body}</main></body></html>"
    )
    path = out_dir / REPORT_NAME
    path.write_text(page, encoding="utf-8")
    return path


def write_report(db_path: Path, out_dir: Path, *, static_figures: bool = True, x_scale: str = "log2",
                 pb_rule: str = "site", models: str | None = None, tasks: str | None = None,
                 strategies: str | None = None, tps: str = "window", frame: pd.DataFrame | None = None) -> Path:
    """Report for a results database (the runner's main job calls this); returns the HTML path.

    `models`, `tasks`, `strategies`: comma lists as `selection.select` reads them (SelectionError
    for a value that matches nothing); `frame`: those rows when the caller has them already."""
    if frame is None:
        frame = select(load_frame(Path(db_path)), models, tasks, strategies)
    picked = "; ".join(f"{flag} {value}" for flag, value in
                       (("--model", models), ("--tasks", tasks), ("--strategy", strategies)) if value)
    source = f"results from {db_path}" + (f" ({picked})" if picked else "")
    return build_report(frame, Path(out_dir), source=source, static_figures=static_figures, x_scale=x_scale,
                        pb_rule=pb_rule, tps=tps)
