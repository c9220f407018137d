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


def leaderboard(
    curves: Optional[Path] = typer.Option(
        None, "--curves", help="Folder of external curves: one <strategy-id>.csv per strategy with columns task,tps,accuracy (percent); rows with task 'avg' are ranked."
    ),
    db: Path = typer.Option(DEFAULT_DB, "--db", help="Results database to rank when --curves is not given."),
    thresholds: str = typer.Option("90,80,70,60", "--thresholds", help="Comma-separated accuracy thresholds in percent."),
    as_json: bool = typer.Option(False, "--json", help="Print {strategy: {threshold: tokens per step}} as JSON."),
) -> None:
    """Rank strategies by the most tokens per step they sustain above each accuracy threshold, with AUP beside it.

    Example: parallelbench leaderboard --curves parallelbench-out/curves/tiny --thresholds 90,80,70,60
    """
    from parallelbench.analysis.leaderboard import as_json as table_json
    from parallelbench.analysis.leaderboard import curves_from_points, parse_thresholds, rank, read_curves_dir, threshold_name

    try:
        levels = parse_thresholds(thresholds)
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint="--thresholds") from None
    if curves is not None:
        if not curves.is_dir():
            raise typer.BadParameter(f"{curves} is not a folder; pass a folder of <strategy-id>.csv files", param_hint="--curves")
        try:
            ranked = rank(read_curves_dir(curves), levels)
        except ValueError as err:
            _fail(f"{err} (in --curves {curves})")
        from parallelbench.analysis.aup import read_task_points_dir

        per_task = read_task_points_dir(curves)
        source = str(curves)
    else:
        from parallelbench.analysis.curves import curves as build_curves
        from parallelbench.analysis.report import ResultsDatabaseError, load_frame

        try:
            frame = load_frame(db)
        except (FileNotFoundError, ResultsDatabaseError) as err:
            _fail(str(err))
        per_task, averaged = build_curves(frame)
        ranked = rank(curves_from_points(averaged), levels)
        source = str(db)
        if not as_json and len(ranked):
            from parallelbench.analysis.ranking import headline_intervals, with_intervals

            ranked = with_intervals(ranked, headline_intervals(frame, levels, with_aup=False),
                                    [threshold_name(t) for t in levels])
    if as_json:
        typer.echo(json.dumps(table_json(ranked, levels), indent=2))
        return
    if ranked.empty:
        _fail(f"no results to rank in {source}; run `parallelbench run` first")
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from parallelbench.analysis.aup import aup_by_task
    from parallelbench.display import display_name

    aups = aup_by_task(per_task)
    aup_of = dict(zip(aups["strategy"], aups["AUP"]))
    table = Table(title=f"Leaderboard ({escape(source)}): tokens per step sustained at accuracy ≥ threshold")
    table.add_column("#", justify="right")
    table.add_column("strategy")
    table.add_column("kind")
    names = [threshold_name(t) for t in levels]
    for name in names:
        table.add_column(f"≥{name}%", justify="right")
    table.add_column("AUP (task avg)", justify="right")
    for i, row in ranked.iterrows():
        value = aup_of.get(row["strategy"])
        shown = "–" if value is None or value != value else f"{value:.1f}"
        shared = "rank" in ranked and (bool(row["tied"]) or list(ranked["rank"]).count(row["rank"]) > 1)
        number = f"={row['rank']}" if shared else str(row["rank"] if "rank" in ranked else i + 1)
        table.add_row(number, escape(display_name(row["strategy"])),
                      escape(display_name(row["kind"])), *(_headline(row, n) for n in names), shown)
    console = Console()
    console.print(table)
    if "tied" in ranked:
        console.print("[dim]brackets: 95% interval (bootstrap over samples); ≈: the interval overlaps the leader's (tied); "
                      "=N: rows sharing a rank, their intervals on the first threshold overlap, so these samples do not "
                      "order them[/dim]", soft_wrap=True)
    task_columns = [c for c in aups.columns if c.startswith("AUP ")]
    if task_columns:
        # tasks as rows and strategies as columns (numbered, named below): a dozen task names
        # across the page would be cut to one letter each in a terminal
        per = Table(title="AUP per task (accuracy under parallelism, d3LLM leaderboard definition; y_max over the rows shown)")
        per.add_column("task")
        names = [display_name(str(s)) for s in aups["strategy"]]
        for i in range(len(names)):
            per.add_column(f"S{i + 1}", justify="right")
        for column in task_columns:
            values = aups[column].tolist()
            per.add_row(escape(display_name(column[4:])), *("–" if v != v else f"{v:.1f}" for v in values))
        console.print(per)
        console.print("[dim]" + escape("; ".join(f"S{i + 1} = {n}" for i, n in enumerate(names))) + "[/dim]",
                      soft_wrap=True)


def _headline(row, name: str) -> str:
    """`2.00 [1.00–4.00]≈`: the headline, its interval when known, ≈ when tied with the leader."""
    low = row.get(f"{name}_ci_low", float("nan"))
    if low != low:
        return f"{row[name]:.2f}"
    tied = "≈" if bool(row.get(f"{name}_tied", False)) else ""
    return f"{row[name]:.2f} [{low:.2f}–{row[f'{name}_ci_high']:.2f}]{tied}"


def report(
    db: Path = typer.Option(DEFAULT_DB, "--db", help="Results database written by `parallelbench run`."),
    out: Path = typer.Option(Path("parallelbench-out"), "--out", help="Folder for report.html, figures/ (PNG + SVG) and curves/."),
    x_scale: str = typer.Option("log2", "--x-scale", help="Tokens-per-step axis of every plot: log2 (ticks 1, 2, 4, 8 ...) or linear."),
) -> None:
    """Write a self-contained HTML report (works offline) plus PNG/SVG figures.

    Example: parallelbench report --db parallelbench.db --out parallelbench-out --x-scale log2
    """
    if x_scale not in ("log2", "linear"):
        _fail(f"--x-scale must be log2 or linear, not {x_scale!r}")
    from parallelbench.analysis.report import ResultsDatabaseError, write_report
    from parallelbench.outputs import OutputError, check_folder, output_error

    try:
        check_folder(out, "the report")
        path = write_report(db, out, x_scale=x_scale)
    except (FileNotFoundError, ResultsDatabaseError, OutputError) as err:
        _fail(str(err))
    except OSError as err:  # disk full or permissions changed while writing
        _fail(str(output_error(out, err, "the report")))
    typer.echo(f"report written to {path}")
