"""`write_report`: one self-contained HTML page (plotly.js and CSS inlined, works offline).

Sections: leaderboard, speed-quality trade-off with the oracle, per-task panels, task map,
chain-of-thought vs direct runs (when a `<task>-cot` task was run),
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
from parallelbench.analysis.aup import aup_by_task
from parallelbench.analysis.cot import cot_comparison
from parallelbench.analysis.leaderboard import curves_from_points, rank, threshold_name
from parallelbench.analysis.ranking import headline_intervals, with_intervals
from parallelbench.analysis.uncertainty import precision_line

# The report's headline columns PB90..PB60: tokens per step sustained at >= 90/80/70/60 % accuracy.
REPORT_THRESHOLDS = (90.0, 80.0, 70.0, 60.0)
from parallelbench.analysis.oracle import oracle_points
from parallelbench.analysis import plots
from parallelbench.analysis.taskmap import DEFINITION, task_map
from parallelbench.display import display_name

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


def _leaderboard_section(averaged: pd.DataFrame, thresholds, aups: pd.DataFrame | None = None,
                         frame: pd.DataFrame | None = None) -> tuple[str, pd.DataFrame]:
    intro = (
        '<p class="help">Most tokens per step a strategy sustains while its task-averaged accuracy stays at or above each '
        "threshold. Operating points are walked from the lowest tokens per step upward; adaptive strategies interpolate "
        "linearly to the crossing, top-k strategies keep the last point above. 0 means even the slowest setting is below "
        "the threshold. Higher is better. Under each value: its 95% interval (bootstrap over samples, the same draws for "
        "every strategy). ≈ marks strategies whose interval overlaps the leader's in that column: they are tied with it, "
        "and the order among them is not established by these samples. In the # column, rows whose PB interval of the "
        "ranking column overlaps that of the row heading their group share its rank (=1, =3 ...).</p>"
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
        shared = bool(row["tied"]) or list(table["rank"]).count(row["rank"]) > 1
        rank_text = f"={row['rank']}" if shared else str(row["rank"])
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


def build_report(
    frame: pd.DataFrame, out_dir: Path, source: str = "", thresholds=REPORT_THRESHOLDS, static_figures: bool = True,
    x_scale: str = "log2",
) -> Path:
    """Write report.html, figures and curve CSVs for `frame` into `out_dir`; returns the HTML path.

    `static_figures=False` skips the matplotlib PNG/SVG files (the slow part) when only the page is wanted;
    `x_scale` ("log2" or "linear") is the tokens-per-step axis of every plot.
    """
    from plotly.offline import get_plotlyjs

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    frame = frame if frame is not None else pd.DataFrame()
    per_task, averaged = curves(frame)
    _, oracle_avg = oracle_points(frame)
    tmap = task_map(frame)
    written = figures.write_figures(out_dir / "figures", per_task, averaged, oracle_avg, tmap, x_scale) if static_figures else []
    written += export_curves(averaged, per_task, out_dir)
    aups = aup_by_task(per_task)
    leaderboard_html, table = _leaderboard_section(averaged, thresholds, aups, frame)
    if len(table):
        table.to_csv(out_dir / "leaderboard.csv", index=False)
        written.append(out_dir / "leaderboard.csv")
    if len(aups):
        aups.to_csv(out_dir / "aup.csv", index=False)
        written.append(out_dir / "aup.csv")
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
        f'<p class="precision" id="precision">{html.escape(precision_line(per_task)[0].upper() + precision_line(per_task)[1:])}. '
        "Intervals are 95%: Wilson for 0/1 scores, a bootstrap over samples otherwise (clustered by sample when seeds "
        "repeat); task averages combine the tasks' intervals.</p>"
    )
    sections = [
        ("summary", "Summary", summary),
        ("leaderboard-section", "Leaderboard", leaderboard_html),
        ("aup-section", "AUP per task", _aup_section(aups)),
        ("tradeoff", "Speed-quality trade-off", _tradeoff_section(averaged, oracle_avg, x_scale)),
        ("per-task", "Per-task curves", _tasks_section(per_task, x_scale)),
        ("task-map", "Task map", _taskmap_section(tmap)),
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


def write_report(db_path: Path, out_dir: Path, *, static_figures: bool = True, x_scale: str = "log2") -> Path:
    """Report for a results database (the runner's main job calls this); returns the HTML path."""
    frame = load_frame(Path(db_path))
    return build_report(frame, Path(out_dir), source=f"results from {db_path}", static_figures=static_figures, x_scale=x_scale)
