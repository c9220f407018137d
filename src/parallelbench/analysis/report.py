"""`write_report`: one self-contained HTML page (plotly.js and CSS inlined, works offline).

Sections: leaderboard, speed-quality trade-off with the oracle, per-task panels, task map,
failure browser, and the static figures (PNG + SVG) written beside the page. A section
without the data it needs says which runs would fill it instead of failing.
"""

from __future__ import annotations

import datetime as _dt
import html
from pathlib import Path

import pandas as pd

from parallelbench.analysis import figures
from parallelbench.analysis.curves import ACCURACY_AXIS, TPS_AXIS, curves
from parallelbench.analysis.failures import failures_html, find_failures
from parallelbench.analysis.aup import aup_by_task
from parallelbench.analysis.leaderboard import curves_from_points, rank, threshold_name
from parallelbench.analysis.ranking import headline_intervals, with_intervals
from parallelbench.analysis.uncertainty import precision_line

# The report's headline columns PB90..PB60: tokens per step sustained at >= 90/80/70/60 % accuracy.
REPORT_THRESHOLDS = (90.0, 80.0, 70.0, 60.0)
from parallelbench.analysis.oracle import oracle_points
from parallelbench.analysis.taskmap import X_AXIS, Y_AXIS, task_map
from parallelbench.display import display_name

REPORT_NAME = "report.html"

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}
header{background:#1d2430;color:#fff;padding:18px 32px}header h1{margin:0 0 4px;font-size:24px}
header p{margin:0;color:#c9d1dc;font-size:13px}main{padding:8px 32px 48px;max-width:1500px}
section{background:#fff;border-radius:8px;padding:14px 22px;margin:18px 0;box-shadow:0 1px 3px rgba(0,0,0,.08)}
h2{font-size:19px;margin:6px 0 8px}h3{font-size:15px;margin:14px 0 6px}h4{margin:4px 0;font-size:13px}
p.help{color:#4a5463;font-size:13px;margin:4px 0 10px}p.missing{color:#8a4b00;background:#fff6e5;padding:8px 12px;border-radius:6px}
table{border-collapse:collapse;font-size:13px;margin:6px 0}th,td{padding:5px 10px;border-bottom:1px solid #e3e6ea;text-align:right}
th{background:#eef1f4}td.name,th.name{text-align:left}td.kind{text-align:left;color:#4a5463}
.summary span{display:inline-block;margin-right:18px;font-size:13px}
.plot{min-height:420px}.side-by-side{display:grid;grid-template-columns:1fr 1fr;gap:12px}
.decode{border:1px solid #e3e6ea;border-radius:6px;padding:8px}.pair{margin:8px 0 16px}
.tokens{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px;line-height:1.9;white-space:pre-wrap;word-break:break-word}
.tok{border-radius:3px;padding:1px 1px;margin:0 1px}.tok.prefilled{background:#d9dde3;color:#333}
.colourbar{display:flex;align-items:center;gap:8px;font-size:11px;color:#4a5463;margin-top:6px}
.colourbar .ramp{display:inline-block;width:160px;height:10px;border-radius:3px}
p.meta{font-size:12px;color:#4a5463;margin:2px 0 6px}details summary{cursor:pointer;font-weight:600;margin:8px 0}
ul.files{font-size:13px;columns:2}code{font-size:12px}
span.ci{font-size:11px;color:#6a7483}td.tied{background:#fff8dc}p.precision{font-size:13px;margin:8px 0 2px}
"""


class ResultsDatabaseError(ValueError):
    """The --db file exists but is not a SQLite results database."""


def load_frame(db_path: Path) -> pd.DataFrame:
    """The results frame of contract 5; FileNotFoundError names the missing database."""
    db_path = Path(db_path)
    if not db_path.exists():
        raise FileNotFoundError(f"results database {db_path} does not exist; run `parallelbench run` first or pass --db PATH")
    import sqlite3

    from parallelbench.runner.store import ResultsStore, StoreError

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


def _aup_section(aups: pd.DataFrame) -> str:
    intro = (
        '<p class="help">AUP (accuracy under parallelism, as the d3LLM dLLM leaderboard defines it): per task, the '
        "area under the accuracy-tokens-per-step curve weighted by W(y) = min(exp(-3(1 - y/y_max)), 1), y_max the best "
        "accuracy of the rows shown, points more than 5 points below the slowest setting left out. Higher is better.</p>"
    )
    columns = [c for c in aups.columns if c.startswith("AUP ")]
    if not columns:
        return intro + _missing("Needs per-task results of at least one strategy (parallelbench run).")
    head = "".join(f"<th>{_shown(c[4:])}</th>" for c in columns)
    rows = []
    for _, row in aups.iterrows():
        cells = "".join(_fmt(row[c], 1) for c in columns)
        rows.append(f'<tr><td class="name">{_shown(row["strategy"])}</td>{_fmt(row["AUP"], 1)}{cells}</tr>')
    return intro + (
        f'<table id="aup"><thead><tr><th class="name">strategy</th><th>AUP (task avg)</th>{head}</tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table>'
    )


def _ci_cell(value: float, low: float, high: float, tied: bool, digits: int) -> str:
    """A headline with its 95% interval underneath; tied-with-the-leader cells are marked."""
    if value != value:
        return "<td>–</td>"
    interval = f'<br><span class="ci">{low:.{digits}f}–{high:.{digits}f}</span>' if low == low else ""
    mark = ' class="tied" title="interval overlaps the leader\'s: tied"' if tied else ""
    return f"<td{mark}>{value:.{digits}f}{'&thinsp;≈' if tied else ''}{interval}</td>"


def _leaderboard_section(averaged: pd.DataFrame, thresholds, aups: pd.DataFrame | None = None,
                         frame: pd.DataFrame | None = None) -> tuple[str, pd.DataFrame]:
    intro = (
        '<p class="help">Most tokens per step a strategy sustains while its task-averaged accuracy stays at or above each '
        "threshold. Operating points are walked from the lowest tokens per step upward; adaptive strategies interpolate "
        "linearly to the crossing, top-k strategies keep the last point above. 0 means even the slowest setting is below "
        "the threshold. Higher is better. Under each value: its 95% interval (bootstrap over samples, the same draws for "
        "every strategy). ≈ marks strategies whose interval overlaps the leader's in that column: they are tied with it, "
        "and the order among them is not established by these samples.</p>"
    )
    if len(averaged) == 0:
        return intro + _missing("No results yet: run at least one strategy at one or more parameter settings (parallelbench run)."), pd.DataFrame()
    table = rank(curves_from_points(averaged), thresholds)
    aup_of = dict(zip(aups["strategy"], aups["AUP"])) if aups is not None and len(aups) else {}
    table["AUP"] = [aup_of.get(s, float("nan")) for s in table["strategy"]]
    names = [threshold_name(t) for t in thresholds]
    intervals = headline_intervals(frame, thresholds) if frame is not None and len(frame) else pd.DataFrame()
    table = with_intervals(table, intervals, [*names, "AUP"])
    head = "".join(f'<th title="tokens per step sustained at accuracy ≥ {n}%">PB{n}</th>' for n in names)
    head += '<th title="accuracy under parallelism, averaged over tasks">AUP</th>'
    rows = []
    for i, row in table.iterrows():
        cells = "".join(_ci_cell(row[n], row[f"{n}_ci_low"], row[f"{n}_ci_high"], bool(row[f"{n}_tied"]), 2) for n in names)
        cells += _ci_cell(row["AUP"], row["AUP_ci_low"], row["AUP_ci_high"], bool(row["AUP_tied"]), 1)
        rank_text = "=1" if bool(row["tied"]) else str(i + 1)
        rows.append(
            f'<tr class="lb-row" data-strategy="{_shown(row["strategy"])}" data-tied="{str(bool(row["tied"])).lower()}"><td>{rank_text}</td>'
            f'<td class="name" title="{html.escape(display_name(row["strategy"], 400))}">{_shown(row["strategy"])}</td><td class="kind">{_shown(row["kind"])}</td>{cells}<td>{row["points"]}</td></tr>'
        )
    body = (
        f'<table id="leaderboard"><thead><tr><th>#</th><th class="name">strategy</th><th class="name">kind</th>{head}'
        f'<th>operating points</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )
    tied = [str(s) for s, t in zip(table["strategy"], table["tied"]) if t]
    if tied:
        body += (f'<p class="help">Tied for first on PB{names[0]} (the ranking column): '
                 f'{", ".join(_shown(s) for s in tied)}.</p>')
    return intro + body, table


def _tradeoff_section(averaged: pd.DataFrame, oracle_avg: pd.DataFrame) -> str:
    import plotly.graph_objects as go

    intro = (
        '<p class="help">Task-averaged accuracy against tokens per step, one marker per parameter setting '
        "(circles: top-k, squares: adaptive). Up and to the right is better. The star is the per-sample threshold oracle "
        "(appendix G.2): for every sample the cheapest confidence threshold that still reaches that sample's best score.</p>"
    )
    if len(averaged) == 0:
        return intro + _missing("Needs results of at least one strategy (parallelbench run).")
    palette = figures.colours(averaged["curve"])
    parts = [intro]
    ids = figures.file_names(averaged["model"].unique())
    for model in sorted(averaged["model"].unique()):
        fig = go.Figure()
        points = averaged[averaged["model"] == model]
        for curve, group in points.groupby("curve", sort=True):
            group = group.sort_values("tps")
            kind = str(group["strategy_kind"].iloc[0])
            fig.add_trace(
                go.Scatter(
                    x=group["tps"], y=group["accuracy"], mode="lines+markers", name=_shown(curve),
                    marker=dict(symbol="square" if kind == "adaptive" else "circle", size=8, color=palette[curve]),
                    line=dict(color=palette[curve]), text=group["config"].map(_shown),
                    hovertemplate="%{text}<br>%{x:.2f} tokens/step<br>%{y:.1f}% accuracy<extra></extra>",
                )
            )
        stars = oracle_avg[oracle_avg["model"] == model] if len(oracle_avg) else oracle_avg
        for _, row in stars.iterrows():
            fig.add_trace(
                go.Scatter(
                    x=[row["tps"]], y=[row["accuracy"]], mode="markers", name=_shown(row["curve"]),
                    marker=dict(symbol="star", size=18, color="gold", line=dict(color="black", width=1)),
                    hovertemplate="oracle<br>%{x:.2f} tokens/step<br>%{y:.1f}% accuracy<extra></extra>",
                )
            )
        fig.update_layout(
            title=f"Speed-quality trade-off: {_shown(model)}", xaxis_title=TPS_AXIS, yaxis_title=ACCURACY_AXIS,
            yaxis_range=[-2, 102], legend_title_text="strategy", height=460, margin=dict(l=60, r=20, t=50, b=50),
        )
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


def _tasks_section(per_task: pd.DataFrame) -> str:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    intro = '<p class="help">The same operating points, task by task (as in the paper\'s figure 4). Click a legend entry to hide a strategy.</p>'
    if len(per_task) == 0:
        return intro + _missing("Needs results of at least one strategy (parallelbench run).")
    palette = figures.colours(per_task["curve"])
    parts = [intro]
    ids = figures.file_names(per_task["model"].unique())
    for model in sorted(per_task["model"].unique()):
        points = per_task[per_task["model"] == model]
        tasks = sorted(points["task"].unique())
        cols = min(4, len(tasks))
        rows = -(-len(tasks) // cols)
        fig = make_subplots(rows=rows, cols=cols, subplot_titles=[_shown(t) for t in tasks], horizontal_spacing=0.06, vertical_spacing=0.12 if rows < 4 else 0.06)
        shown = set()
        curve_ids = {c: i for i, c in enumerate(sorted(points["curve"].unique()))}
        for i, task in enumerate(tasks):
            r, c = i // cols + 1, i % cols + 1
            for curve, group in points[points["task"] == task].groupby("curve", sort=True):
                group = group.sort_values("tps")
                fig.add_trace(
                    go.Scatter(
                        x=group["tps"], y=group["accuracy"], mode="lines+markers", name=_shown(curve),
                        legendgroup=f"c{curve_ids[curve]}", showlegend=curve not in shown,
                        marker=dict(color=palette[curve], size=6), line=dict(color=palette[curve]),
                        text=group["config"].map(_shown), hovertemplate="%{text}<br>%{x:.2f} tokens/step<br>%{y:.1f}%<extra></extra>",
                    ),
                    row=r, col=c,
                )
                shown.add(curve)
            fig.update_xaxes(title_text="tokens per step", row=r, col=c)
            fig.update_yaxes(title_text=ACCURACY_AXIS, range=[-2, 102], row=r, col=c)
        fig.update_layout(
            title=f"Per task: {_shown(model)} (x: {TPS_AXIS})", height=300 * rows + 80, legend_title_text="strategy",
            margin=dict(l=60, r=20, t=70, b=40),
        )
        parts.append(f"<h3>{_shown(model)}</h3>")
        parts.append(f'<div class="plot">{_plot_html(fig, f"tasks-{ids[model]}")}</div>')
    return "".join(parts)


def _taskmap_section(tmap: pd.DataFrame) -> str:
    import plotly.graph_objects as go

    intro = (
        '<p class="help">Each task placed by how parallelizable it is (x: centre of mass of the score over k with any-order '
        "top-k decoding; the axis is reversed so that harder-to-parallelize tasks sit on the right) and by which order it "
        "prefers (y: slope of accuracy against decreasing semi-AR block length at k = 2; above 0 the task gains from "
        "smaller, more left-to-right blocks). Appendix G.1, figure 6.</p>"
    )
    need = (
        "Needs top-k runs (random, l2r, confidence-topk, topk-margin or entropy-topk): at two or more k without "
        "block_length for x, and at k = 2 with two or more block_length values for y."
    )
    if len(tmap) == 0:
        return intro + _missing(need)
    shown = tmap.dropna(subset=["parallelizability", "order_slope"])
    if shown.empty:
        return intro + _missing(need) + _taskmap_table(tmap)
    palette = figures.colours(shown["category"].astype(str))
    fig = go.Figure()
    for category, group in shown.groupby(shown["category"].astype(str), sort=True):
        fig.add_trace(
            go.Scatter(
                x=group["parallelizability"], y=group["order_slope"], mode="markers+text", text=group["task"].map(_shown),
                textposition="top center", name=_shown(category) if category else "tasks", marker=dict(size=11, color=palette[category]),
                hovertemplate="%{text}<br>x %{x:.2f}<br>y %{y:.2f}<extra></extra>",
            )
        )
    fig.add_hline(y=0, line_color="grey", line_width=1)
    fig.update_layout(
        title="Task map", xaxis_title=X_AXIS, yaxis_title=Y_AXIS, xaxis_autorange="reversed",
        legend_title_text="category", height=520, margin=dict(l=70, r=20, t=50, b=60),
    )
    return intro + f'<div class="plot">{_plot_html(fig, "taskmap")}</div>' + _taskmap_table(tmap)


def _taskmap_table(tmap: pd.DataFrame) -> str:
    rows = "".join(
        f'<tr><td class="name">{_shown(r["task"])}</td><td>{r["parallelizability"]:.2f}</td>'
        f'<td>{r["order_slope"]:.2f}</td><td>{r["x_groups"]}</td><td>{r["y_groups"]}</td></tr>'
        for _, r in tmap.iterrows()
    )
    return (
        '<details><summary>task map values</summary><table><thead><tr><th class="name">task</th><th>x</th><th>y</th>'
        f"<th>(model, strategy) pairs for x</th><th>pairs for y</th></tr></thead><tbody>{rows}</tbody></table></details>"
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
    """`curves/<model>/<strategy>.csv` with task,tps,accuracy,ci_low,ci_high,n (+ `avg` rows):
    `parallelbench leaderboard --curves` input; ci_low/ci_high bound the 95% interval of the accuracy (%)
    and n counts its samples (summed over tasks on `avg` rows)."""
    written = []
    folders = figures.file_names(per_task["model"].unique()) if len(per_task) else {}
    stems = {m: figures.file_names(g["curve"].unique(), figures.file_stem) for m, g in per_task.groupby("model")}
    for (model, curve), group in per_task.groupby(["model", "curve"], sort=True):
        folder = Path(out_dir) / "curves" / folders[model]
        folder.mkdir(parents=True, exist_ok=True)
        avg = averaged[(averaged["model"] == model) & (averaged["curve"] == curve)]
        columns = ["task", "tps", "accuracy", "ci_low", "ci_high", "n"]
        table = pd.concat(
            [group.reindex(columns=columns).sort_values(["task", "tps"]), avg.assign(task="avg").reindex(columns=columns)]
        )
        path = folder / f"{stems[model][curve]}.csv"
        table.to_csv(path, index=False)
        written.append(path)
    return written


def build_report(frame: pd.DataFrame, out_dir: Path, source: str = "", thresholds=REPORT_THRESHOLDS, static_figures: bool = True) -> Path:
    """Write report.html, figures and curve CSVs for `frame` into `out_dir`; returns the HTML path.

    `static_figures=False` skips the matplotlib PNG/SVG files (the slow part) when only the page is wanted.
    """
    from plotly.offline import get_plotlyjs

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    frame = frame if frame is not None else pd.DataFrame()
    per_task, averaged = curves(frame)
    _, oracle_avg = oracle_points(frame)
    tmap = task_map(frame)
    written = figures.write_figures(out_dir / "figures", per_task, averaged, oracle_avg, tmap) if static_figures else []
    written += export_curves(averaged, per_task, out_dir)
    aups = aup_by_task(per_task)
    leaderboard_html, table = _leaderboard_section(averaged, thresholds, aups, frame)
    if len(table):
        table.to_csv(out_dir / "leaderboard.csv", index=False)
        written.append(out_dir / "leaderboard.csv")
    if len(aups):
        aups.to_csv(out_dir / "aup.csv", index=False)
        written.append(out_dir / "aup.csv")

    def counted(column: str, noun: str) -> str:
        n = int(frame[column].nunique()) if column in frame and len(frame) else 0
        return f"<span><b>{n}</b> {noun}{'' if n == 1 else 's'}</span>"

    summary = (
        f'<div class="summary">{counted("model", "model")}{counted("config", "strategy setting")}'
        f'{counted("task", "task")}{counted("sample_id", "sample")}'
        f"<span><b>{len(frame)}</b> result{'' if len(frame) == 1 else 's'}</span></div>"
        f'<p class="precision" id="precision">{html.escape(precision_line(per_task)[0].upper() + precision_line(per_task)[1:])}. '
        "Intervals are 95%: Wilson for 0/1 scores, a bootstrap over samples otherwise (clustered by sample when seeds "
        "repeat); task averages combine the tasks' intervals.</p>"
    )
    sections = [
        ("summary", "Summary", summary),
        ("leaderboard-section", "Leaderboard", leaderboard_html),
        ("aup-section", "AUP per task", _aup_section(aups)),
        ("tradeoff", "Speed-quality trade-off", _tradeoff_section(averaged, oracle_avg)),
        ("per-task", "Per-task curves", _tasks_section(per_task)),
        ("task-map", "Task map", _taskmap_section(tmap)),
        ("failures", "Failure browser", _failures_section(frame)),
        ("files", "Figures and data files", _files_section(written, out_dir)),
    ]
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


def write_report(db_path: Path, out_dir: Path, *, static_figures: bool = True) -> Path:
    """Report for a results database (the runner's main job calls this); returns the HTML path."""
    frame = load_frame(Path(db_path))
    return build_report(frame, Path(out_dir), source=f"results from {db_path}", static_figures=static_figures)
