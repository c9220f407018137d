"""`parallelbench leaderboard` and `parallelbench report`.

pandas, plotly and matplotlib are imported inside the commands so `parallelbench --help`
stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

DEFAULT_DB = Path("parallelbench.db")


def _fail(message: str) -> None:
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True, soft_wrap=True).print(f"[bold red]error:[/] {escape(message)}")
    raise typer.Exit(2)


FILTER_HELP = {
    "model": "Only these models (comma-separated specs as run, e.g. tiny,ideal).",
    "tasks": "Only these tasks: ids, families (waiting_line), categories or paper, comma-separated.",
    "strategy": "Only these strategies: names (confidence-topk) or config labels as tables show them, comma-separated.",
    "pb_rule": "PB rule: site (the public leaderboard's walk, default) or max (the authors' pb analyze: largest "
               "tokens per step of any setting at >= x%); see docs/report.md.",
    "tps": "Tokens per step the PB columns and AUP use: window (every position committed on the canvas, EOS padding "
           "included; the default and the authors' metric) or answer (tokens before the first stop token); see "
           "docs/report.md.",
}


def _selected(db: Path, model: Optional[str], tasks: Optional[str], strategy: Optional[str]):
    """The results frame of `db` narrowed by the filters; one-line errors."""
    from parallelbench.analysis.report import ResultsDatabaseError, load_frame
    from parallelbench.analysis.selection import SelectionError, select

    try:
        return select(load_frame(db), model, tasks, strategy)
    except (FileNotFoundError, ResultsDatabaseError, SelectionError) as err:
        _fail(str(err))


def _check_tps(tps: str) -> str:
    from parallelbench.tps import TpsMeasureError, check_measure

    try:
        return check_measure(tps)
    except TpsMeasureError as err:
        _fail(f"--tps: {err}")


def _scorer_error_lines(frame) -> None:
    """One yellow line per scorer that failed on rows of `frame` (left out, not counted as 0)."""
    from rich.console import Console

    from parallelbench.analysis.terminal import print_line
    from parallelbench.scoring.errors import frame_errors

    console = Console()
    for group in frame_errors(frame):
        print_line(console, group.line(), "yellow")


def _check_rule(rule: str) -> str:
    from parallelbench.analysis.pb_rules import PBRuleError, check_rule

    try:
        return check_rule(rule)
    except PBRuleError as err:
        _fail(f"--pb-rule: {err}")


def leaderboard(
    curves: Optional[Path] = typer.Option(
        None, "--curves", help="Folder of external curves: one <strategy-id>.csv per strategy with columns task,tps,accuracy (percent); rows with task 'avg' are ranked."
    ),
    db: Path = typer.Option(DEFAULT_DB, "--db", help="Results database to rank when --curves is not given."),
    thresholds: str = typer.Option("90,80,70,60", "--thresholds", help="Comma-separated accuracy thresholds in percent."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help=FILTER_HELP["model"]),
    tasks: Optional[str] = typer.Option(None, "--tasks", "-t", help=FILTER_HELP["tasks"]),
    strategy: Optional[str] = typer.Option(None, "--strategy", "-s", help=FILTER_HELP["strategy"]),
    pb_rule: str = typer.Option("site", "--pb-rule", help=FILTER_HELP["pb_rule"]),
    tps: str = typer.Option("window", "--tps", help=FILTER_HELP["tps"]),
    as_json: bool = typer.Option(False, "--json", help="Print {strategy: {threshold: tokens per step}} as JSON (--pb-rule max: null where no setting qualifies, plus the pooled 'all strategies (pooled)' entry)."),
) -> None:
    """Rank strategies by the most tokens per step they sustain above each accuracy threshold, with AUP beside it.

    Entries are ranked only on the tasks and samples they all decoded (a line says what was left out).

    Example: parallelbench leaderboard --db parallelbench.db --model tiny --tasks waiting_line --pb-rule max

    Example: parallelbench leaderboard --db parallelbench.db --tps answer

    Example: parallelbench leaderboard --curves parallelbench-out/curves/tiny --thresholds 90,80,70,60
    """
    from parallelbench.analysis.leaderboard import as_json as table_json
    from parallelbench.analysis.leaderboard import parse_thresholds

    try:
        levels = parse_thresholds(thresholds)
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint="--thresholds") from None
    rule = _check_rule(pb_rule)
    measure = _check_tps(tps)
    if curves is not None:
        if measure != "window":
            _fail("--tps answer needs a results database (--db): curve files hold one tokens-per-step column")
        boards, source = _curve_boards(curves, levels, rule, model, tasks, strategy)
    else:
        from parallelbench.analysis.board import build_boards

        frame = _selected(db, model, tasks, strategy)
        if not as_json:
            _scorer_error_lines(frame)
        boards = build_boards(frame, levels, rule, intervals=not as_json, aup_intervals=False, tps=measure) if len(frame) else []
        source = str(db)
    if as_json:
        merged = {}
        for board in boards:
            merged.update(table_json(board.table, levels))
            if board.pooled is not None and len(board.pooled):  # max rule: pb analyze's pooled number too
                merged.update(table_json(board.pooled, levels))
        typer.echo(json.dumps(merged, indent=2))
        return
    if not boards or all(b.table.empty for b in boards):
        if curves is None and len(frame):
            _fail(f"no results to rank in {source}: every selected row is a scorer error (see the line above); "
                  "fix the scorer and run `parallelbench run` again (the outputs are scored again without decoding)")
        _fail(f"no results to rank in {source}; run `parallelbench run` first")
    from rich.console import Console

    from parallelbench.analysis.leaderboard_view import print_boards

    print_boards(Console(), boards, source)


def _curve_boards(curves: Path, levels, rule: str, model, tasks, strategy):
    """Boards from a folder of curve CSVs (no samples: no intervals, no common-set check)."""
    from parallelbench.analysis.aup import aup_by_task, read_task_points_dir
    from parallelbench.analysis.board import Board
    from parallelbench.analysis.leaderboard import rank, read_curves_dir
    from parallelbench.analysis.pb_rules import max_rule_from_curves
    from parallelbench.analysis.selection import split_list

    if model or tasks:
        _fail("--model and --tasks filter a results database (--db); curve files are already task-averaged, "
              "pick them with --strategy")
    if not curves.is_dir():
        raise typer.BadParameter(f"{curves} is not a folder; pass a folder of <strategy-id>.csv files", param_hint="--curves")
    try:
        found = read_curves_dir(curves)
    except ValueError as err:
        _fail(f"{err} (in --curves {curves})")
    wanted = split_list(strategy)
    if wanted:
        unknown = [w for w in wanted if w not in found and not any(s.split("[")[0] == w for s in found)]
        if unknown:
            _fail(f"--strategy {', '.join(unknown)}: no such curve in {curves}; it holds: {', '.join(sorted(found))}")
        found = {s: v for s, v in found.items() if s in wanted or s.split("[")[0] in wanted}
    table = max_rule_from_curves(found, levels) if rule == "max" else rank(found, levels)
    per_task = read_task_points_dir(curves)
    per_task = per_task[per_task["curve"].isin(list(found))]
    aups = aup_by_task(per_task)
    aup_of = dict(zip(aups["strategy"], aups["AUP"])) if len(aups) else {}
    table["AUP"] = [aup_of.get(s, float("nan")) for s in table["strategy"]]
    note = ("tokens per step as the curve files give them (task-averaged ratio of sums); the max rule's per-sample "
            "max_tokens / NFE needs a results database") if rule == "max" else None
    return [Board(table, aups, _empty_bounds(), None, note, rule, tuple(levels))], str(curves)


def _empty_bounds():
    import pandas as pd

    return pd.DataFrame(columns=["strategy", "task", "ci_low", "ci_high"])


def report(
    db: Path = typer.Option(DEFAULT_DB, "--db", help="Results database written by `parallelbench run`."),
    out: Optional[Path] = typer.Option(None, "--out", help="Folder for report.html, figures/ (PNG + SVG) and curves/ (default: beside the database, named after it: parallelbench.db -> parallelbench-out, tour.db -> tour-out)."),
    x_scale: str = typer.Option("log2", "--x-scale", help="Tokens-per-step axis of every plot: log2 (ticks 1, 2, 4, 8 ...) or linear."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help=FILTER_HELP["model"]),
    tasks: Optional[str] = typer.Option(None, "--tasks", "-t", help=FILTER_HELP["tasks"]),
    strategy: Optional[str] = typer.Option(None, "--strategy", "-s", help=FILTER_HELP["strategy"]),
    pb_rule: str = typer.Option("site", "--pb-rule", help=FILTER_HELP["pb_rule"]),
    tps: str = typer.Option("window", "--tps", help=FILTER_HELP["tps"]),
) -> None:
    """Write a self-contained HTML report (works offline) plus PNG/SVG figures.

    Example: parallelbench report --db parallelbench.db --out parallelbench-out --x-scale log2

    Example: parallelbench report --db parallelbench.db --model tiny --strategy confidence-topk,confidence-threshold --pb-rule max
    """
    if x_scale not in ("log2", "linear"):
        _fail(f"--x-scale must be log2 or linear, not {x_scale!r}")
    rule = _check_rule(pb_rule)
    measure = _check_tps(tps)
    from parallelbench.analysis.report import ResultsDatabaseError, write_report
    from parallelbench.analysis.selection import SelectionError
    from parallelbench.outputs import OutputError, check_folder, output_error, report_folder

    out = out if out is not None else report_folder(db)
    frame = _selected(db, model, tasks, strategy)
    _scorer_error_lines(frame)  # the line `run`, `results` and `leaderboard` print too
    try:
        check_folder(out, "the report")
        path = write_report(db, out, x_scale=x_scale, pb_rule=rule, models=model, tasks=tasks, strategies=strategy,
                            tps=measure, frame=frame)
    except (FileNotFoundError, ResultsDatabaseError, OutputError, SelectionError) as err:
        _fail(str(err))
    except OSError as err:  # disk full or permissions changed while writing
        _fail(str(output_error(out, err, "the report")))
    typer.echo(f"report written to {path}")
