"""`parallelbench run` (the evaluation grid) and `parallelbench results` (summaries, export).

Heavy imports (torch, ray, pandas) happen inside the commands so `--help` stays fast.
"""

from __future__ import annotations

import contextlib
import signal
from pathlib import Path
from typing import List, Optional, Tuple

import typer

from parallelbench.display import counted

RUN_HELP = """Run an evaluation grid: models x strategy configs x tasks x samples x seeds.

Every decoded sample is one row of the results database; rerunning skips finished rows whose provenance matches (model, its options and code, strategy code and options, the task's samples, scorer version and --scoring mode), so an interrupted run resumes where it stopped; --force recomputes them. With no arguments this is the main job: the bundled model (or the ideal model until it exists) on Waiting Line and Puzzles with the `quick` sweep, then the report.

Examples:

  parallelbench run

  parallelbench run --model tiny --tasks waiting_line/copy,waiting_line/shuffle --strategy confidence-topk --k 1,2,4

  parallelbench run --strategy my_module:MyStrategy --k 1,2 --baselines

  parallelbench run --workers 2

  parallelbench run --spec grid.yaml --executor ray --workers 4

  parallelbench run --model ideal --tasks waiting_line/copy --strategy random --k 2 --scoring paper
"""

results_app = typer.Typer(
    help=(
        "Summaries and exports of the results database.\n\n"
        "Examples: parallelbench results --db parallelbench.db ;  "
        "parallelbench results export --format csv --out results.csv"
    ),
    invoke_without_command=True,
    no_args_is_help=False,
)


def _fail(message: str) -> None:
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True).print(f"[bold red]error:[/bold red] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def run(
    spec_file: Optional[Path] = typer.Option(None, "--spec", help="YAML run spec (see docs/runner.md); flags override its keys."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Model spec(s), comma-separated: tiny, tiny-uniform, ideal, hf:<id>, api:<name>, py:module:factory."),
    tasks: Optional[str] = typer.Option(None, "--tasks", "-t", help="Task ids, categories (waiting_line, puzzle, text_writing, structured) or 'paper', comma-separated."),
    strategy: Optional[str] = typer.Option(None, "--strategy", "-s", help="Strategy name(s) or module:Class, comma-separated (list them: parallelbench strategies)."),
    k: Optional[str] = typer.Option(None, "--k", help="Tokens per step for top-k strategies, e.g. 1,2,4 or pow2 (1, 2, 4, ... up to the generation length)."),
    threshold: Optional[str] = typer.Option(None, "--threshold", help="Confidence thresholds gamma, e.g. 0.5,0.7,0.9."),
    factor: Optional[str] = typer.Option(None, "--factor", help="Factor-based unmasking f values, e.g. 0.7,1.0,1.3."),
    block_length: Optional[str] = typer.Option(None, "--block-length", help="Semi-AR block lengths (must divide the generation length), e.g. 4,8,16."),
    temperature: Optional[str] = typer.Option(None, "--temperature", help="Sampling temperatures, e.g. 0,1.0."),
    param: List[str] = typer.Option([], "--param", help="Any other strategy option as NAME=V1,V2 (repeatable), e.g. --param steps=8,16."),
    sweep: Optional[str] = typer.Option(None, "--sweep", help="Named sweep(s): quick, paper. Default: quick when no --strategy is given."),
    baselines: Optional[bool] = typer.Option(None, "--baselines/--no-baselines", help="Add confidence-topk (same k) and confidence-threshold (0.55, 0.7, 0.9) beside --strategy."),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", help="Samples per task (default: the sweep's, e.g. 16 for quick; all for paper)."),
    seed: Optional[str] = typer.Option(None, "--seed", help="Seed(s), comma-separated (default 0)."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", "-b", help="Samples per generate call and per database transaction (default 8)."),
    db: Optional[str] = typer.Option(None, "--db", help="Results database (default ./parallelbench.db)."),
    out: Optional[str] = typer.Option(None, "--out", help="Folder for the report (default: beside the database, named after it: parallelbench.db -> ./parallelbench-out, tour.db -> ./tour-out)."),
    executor: Optional[str] = typer.Option(None, "--executor", help="local (default) or ray."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Decoding processes: local worker processes (each loads the model once and decodes with --threads torch threads) or Ray actors. Default: every core this process may use, or one per visible GPU for a model on a GPU (a run with under about 20 s of decoding left after its first batch stays in this process); 1 decodes in this process. Rows are the same for any number."),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="Existing Ray cluster address (default: start a local one)."),
    gpus_per_worker: Optional[float] = typer.Option(None, "--gpus-per-worker", help="Ray: GPUs each actor reserves (1 = one actor per GPU; default 0, CPU workers)."),
    threads: Optional[int] = typer.Option(None, "--threads", help="torch CPU threads per decoding process (default 1: oversubscribed cores slow decoding many times over; raise it for big CPU models on an idle machine)."),
    model_opt: List[str] = typer.Option([], "--model-opt", help="Model loader option KEY=VALUE (repeatable), e.g. --model-opt device=cuda. Unknown keys fail before anything loads."),
    scoring: Optional[str] = typer.Option(None, "--scoring", help="Scoring mode: default (the project's rules) or paper (the reference metric's). Rows decoded before are scored again without decoding."),
    force: bool = typer.Option(False, "--force", help="Recompute rows even where matching ones are stored; the new rows become the current version, the old stay under `results --all-versions`."),
    report: bool = typer.Option(True, "--report/--no-report", help="Write the HTML report when the run ends."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show progress: a live bar on a terminal; piped or logged, a plain line at each 10% and at most every 30 s between."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Validate and print the plan; decode nothing, write nothing."),
) -> None:
    from rich.console import Console

    from parallelbench.runner.spec import RunSpec, SpecError
    console = Console()
    try:
        spec = RunSpec.from_yaml(spec_file) if spec_file is not None else RunSpec()
        spec.apply_flags(
            model=model,
            tasks=tasks,
            strategy=strategy,
            sweep=sweep,
            params={"k": k, "threshold": threshold, "factor": factor, "block_length": block_length, "temperature": temperature},
            extra_params=param,
            baselines=baselines,
            limit=limit,
            seed=seed,
            batch_size=batch_size,
            db=db,
            out=out,
            executor=executor,
            workers=workers,
            ray_address=ray_address,
            gpus_per_worker=gpus_per_worker,
            threads=threads,
            model_options=model_opt,
            scoring=scoring,
            force=force or None,
        )
        if dry_run:
            _print_plan(spec.plan(), console)
            return
        _run(spec, console, report=report, show_progress=progress)
    except SpecError as exc:
        _fail(str(exc))


def _print_plan(plan, console) -> None:
    from rich.markup import escape

    n_samples = {t.id: len(t.samples(plan.limit)) for t in plan.tasks}
    rows = sum(n_samples[t] * len(cs) for t, cs in plan.configs.items()) * len(plan.spec.seeds) * len(plan.models)
    console.print(f"models: {', '.join(plan.models)}")
    console.print(f"tasks ({len(plan.tasks)}): {', '.join(f'{t} ({n})' for t, n in n_samples.items())}")
    labels = list(dict.fromkeys(c.label for cs in plan.configs.values() for c in cs))
    console.print(f"strategy configs ({len(labels)}): {escape(', '.join(labels))}")
    console.print(f"seeds: {', '.join(map(str, plan.spec.seeds))}  ->  up to {counted(rows, 'row')} in {plan.spec.db}")
    _dry_run_checks(plan, console)


def _dry_run_checks(plan, console) -> None:
    """What a real run would refuse or skip: an unusable --db, tasks a cheap model cannot decode."""
    from rich.markup import escape

    from parallelbench.runner.job import ModelLoadError, _load
    from parallelbench.runner.spec import FALLBACK_MODEL
    from parallelbench.runner.store import StoreError, check_store_path
    from parallelbench.runner.units import unsupported_tasks

    try:
        check_store_path(plan.spec.db)
    except StoreError as exc:
        _fail(str(exc))
    runnable = 0
    for model in plan.models:
        if model != FALLBACK_MODEL:  # other models would need their weights loaded to tell
            runnable += len(plan.tasks)
            continue
        try:
            skip = unsupported_tasks(plan, _load(model, {}))
        except ModelLoadError:
            skip = {}
        for task_id, reason in skip.items():
            console.print(f"[yellow]would skip {escape(task_id)} for {escape(model)}:[/yellow] {escape(reason)}",
                          soft_wrap=True)
        runnable += len(plan.tasks) - len(skip)
    if runnable == 0:
        _fail("nothing in this plan can run: every task is skipped; pick tasks the model can decode")


def _run(spec, console, *, report: bool, show_progress: bool) -> None:
    from parallelbench.runner.job import ModelLoadError, run_job
    from parallelbench.runner.store import StoreError

    try:
        from parallelbench.runner.ray_executor import RayUnavailable
    except ImportError:  # pragma: no cover
        RayUnavailable = RuntimeError  # type: ignore[misc,assignment]
    if report:  # learn about an unwritable --out before decoding, not after
        from parallelbench.outputs import OutputError, check_folder

        try:
            check_folder(spec.report_out, "the report")
        except OutputError as exc:
            _fail(f"{exc} (or pass --no-report)")
            return
    from parallelbench.models.registry import ModelSpecError
    from parallelbench.runner.job import RunInterrupted
    from parallelbench.runner.pool import WorkerLoadError
    from parallelbench.runner.units import UserModelCrash

    with _sigterm_as_interrupt() as terminated:
        try:
            result = run_job(spec, console, show_progress=show_progress)
        except (ModelLoadError, RayUnavailable, StoreError, ModelSpecError, WorkerLoadError,
                UserModelCrash) as exc:  # e.g. a rejected API key
            _fail(str(exc))
            return
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (turned into one above)
            _interrupted(spec, console, exc.result.rows_added if isinstance(exc, RunInterrupted) else None, terminated)
            return
        try:
            _finish(spec, result, console, report=report)
        except KeyboardInterrupt:  # while the report is written: every row is saved already
            _interrupted(spec, console, result.rows_added, terminated)


class _Terminated(KeyboardInterrupt):
    """SIGTERM during a run: ends it the way Ctrl-C does."""


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """While a run goes, SIGTERM (`kill`, `timeout`, a batch scheduler) raises like Ctrl-C, so finished
    batches are saved and the same line is printed; yields a list that holds True once it came."""
    came: list[bool] = []

    def handler(signum, frame):
        came.append(True)
        raise _Terminated()

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (an embedding application): leave signals alone
        yield came
        return
    try:
        yield came
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupted(spec, console, saved: int | None, terminated: list[bool]) -> None:
    """The one line of an interrupted run; exit 130 for Ctrl-C (SIGINT), 143 for SIGTERM (128 + signal)."""
    said = f"{counted(saved, 'row')} of this run {'is' if saved == 1 else 'are'} saved" if saved is not None \
        else "finished batches are saved"
    console.print(f"[yellow]interrupted[/yellow]: {said} in {spec.db}; re-run the same command to resume",
                  soft_wrap=True, highlight=False)
    raise typer.Exit(143 if terminated else 130)


def _finish(spec, result, console, *, report: bool) -> None:
    """After the rows are saved: the report (or a summary), the precision line, where everything is."""
    if result.nothing_ran:
        skipped = ", ".join(sorted({t for _, t, _ in result.skipped}))
        _fail(f"nothing ran: every task was skipped ({skipped}); pick tasks the model can decode")
    db_path = result.db.resolve()
    from rich.markup import escape

    from parallelbench.runner.store import ResultsStore

    with ResultsStore(db_path, create=False) as store:
        everything = store.frame()
        state = store.state()
    frame = everything[everything["model"].isin(result.models)]
    report_path = None
    if report and everything.empty:  # every sample failed: a report would be empty
        console.print("[yellow]no report written:[/yellow] the database holds no finished row yet (every sample of "
                      "this run failed); re-run the same command to retry them", soft_wrap=True, highlight=False)
    elif report:
        report_path = _write_report(db_path, Path(spec.report_out), console, state)
    if report_path is None and not frame.empty:
        from parallelbench.runner.summary import print_summary

        print_summary(frame, console)
    _print_scorer_errors(frame, console)
    _print_precision(_without_scorer_errors(frame), console)
    rescored = f"{result.rows_rescored} rescored without decoding, " if result.rows_rescored else ""
    console.print(
        f"[bold]results database:[/bold] {db_path}  ({counted(result.rows_added, 'row')} added, {rescored}"
        f"{result.rows_skipped} already there, {result.wall_time:.1f} s)", soft_wrap=True
    )
    if report_path is not None:
        console.print(f"[bold]report:[/bold] {report_path}")
    console.print("[dim]next: parallelbench results --db " + str(db_path) + "[/dim]")
    if result.failed:  # stored as failed rows, not as wrong answers; a re-run retries only those
        console.print(f"[bold red]{escape(result.failure_line())}[/bold red]", soft_wrap=True, highlight=False)
    if result.lost or result.not_run:  # a worker process died: a re-run decodes what it lost
        console.print(f"[bold red]{escape(result.lost_line())}[/bold red]", soft_wrap=True, highlight=False)
    if result.failed or result.lost or result.not_run:
        raise typer.Exit(1)


def _print_precision(frame, console) -> None:
    """How many samples each accuracy point has and how wide its 95% interval is (issue 20)."""
    from rich.markup import escape

    from parallelbench.analysis.curves import task_points
    from parallelbench.analysis.uncertainty import precision_line

    if len(frame):
        console.print(f"[bold]precision:[/bold] {escape(precision_line(task_points(frame)))}", soft_wrap=True, highlight=False)


REPORT_STATE = ".parallelbench-report.json"  # in the report folder: what the report was built from


def _report_state(db_path: Path, state: list[int]) -> dict:
    """What a report depends on: the database (path and row state) and the report code."""
    from parallelbench import __version__
    from parallelbench.runner.provenance import package_fingerprint

    return {"db": str(db_path), "rows": state, "version": __version__, "code": package_fingerprint("analysis")}


def _up_to_date(out_dir: Path, wanted: dict) -> Path | None:
    """The report written from exactly this database state by this code, if it is still there."""
    import json

    try:
        held = json.loads((out_dir / REPORT_STATE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(held, dict) or {k: held.get(k) for k in wanted} != wanted:
        return None
    page = Path(str(held.get("page", "")))
    try:  # rewritten since (e.g. by `parallelbench report` with other options): not ours to keep
        return page if page.stat().st_mtime_ns == held.get("page_mtime_ns") else None
    except OSError:
        return None


def _write_report(db_path: Path, out_dir: Path, console, state: list[int] | None = None) -> Path | None:
    """The analysis helper's HTML report, when that module is installed. A resumed run that changed
    nothing in the database keeps the report it wrote last time (building it is most of a resume)."""
    import json

    from rich.markup import escape

    wanted = _report_state(db_path, state) if state is not None else None
    if wanted is not None:
        kept = _up_to_date(out_dir, wanted)
        if kept is not None:
            console.print("[dim]the report is up to date (the database has not changed since it was written)[/dim]")
            return kept.resolve()
    try:
        from parallelbench.analysis.report import write_report
    except ImportError:
        return None
    try:
        written = write_report(db_path, out_dir)
    except OSError as exc:  # disk full, read-only folder: one line, the results are safe
        from parallelbench.outputs import output_error

        console.print(f"[yellow]the report could not be written[/yellow]: {escape(str(output_error(out_dir, exc, 'the report')))}; "
                      "results are saved, try `parallelbench report`", soft_wrap=True)
        return None
    except Exception as exc:  # noqa: BLE001 - results are saved; say why the report is missing
        console.print(f"[yellow]the report could not be written[/yellow] ({type(exc).__name__}: {escape(str(exc))}); "
                      "results are saved, try `parallelbench report`")
        return None
    page = Path(written).resolve() if written else out_dir.resolve()
    if wanted is not None and page.is_file():
        try:
            (out_dir / REPORT_STATE).write_text(json.dumps({**wanted, "page": str(page),
                                                            "page_mtime_ns": page.stat().st_mtime_ns}))
        except OSError:
            pass  # only a shortcut for the next resume
    return page


@results_app.callback()
def results(
    ctx: typer.Context,
    db: str = typer.Option("parallelbench.db", "--db", help="Results database to read."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Only these models (comma-separated specs)."),
    tasks: Optional[str] = typer.Option(None, "--tasks", "-t", help="Only these tasks: ids, families (waiting_line), categories or paper, comma-separated."),
    strategy: Optional[str] = typer.Option(None, "--strategy", "-s", help="Only these strategies: names (confidence-topk) or config labels as the tables show them (confidence-topk\\[k=2]), comma-separated."),
    all_versions: bool = typer.Option(False, "--all-versions", help="Also rows of older model, data or strategy versions (not reused by `run`): one table per decoding version (model, strategy code, options), the task's data version as a column."),
    order: bool = typer.Option(False, "--order", help="Decoding order per strategy config instead: rank correlation of the commit order with left to right (Kendall, Spearman) and local/global AR-ness."),
    repair: bool = typer.Option(False, "--repair", help="Repair by editing instead: per model, editing strategy config and task, the mean score when the last original mask was filled (unmask) and at the end, with 95% intervals, the share of rows repaired (wrong then right) and broken (right then wrong), and mean edits."),
    compare: Optional[Tuple[str, str]] = typer.Option(
        None, "--compare", metavar="A B",
        help="Paired difference A − B on the samples both configs decoded, with its 95% interval and p-value. "
             "Name a config as the table lists it, e.g. 'confidence-topk\\[k=2]', adding @MODEL when several models ran it.",
    ),
) -> None:
    """Print accuracy ± 95% half-width, tokens per step and answer tokens per step per task and strategy config, or compare two configs.

    Example: parallelbench results --db parallelbench.db --model tiny --strategy confidence-threshold

    Example: parallelbench results --all-versions

    Example: parallelbench results --compare 'confidence-topk[k=2]' 'random[k=2]'

    Example: parallelbench results --order --model tiny

    Example: parallelbench results --repair --tasks waiting_line
    """
    ctx.obj = {"db": db}
    if ctx.invoked_subcommand is not None:
        return
    from rich.console import Console
    from rich.markup import escape

    from parallelbench.runner.store import ResultsStore
    from parallelbench.runner.summary import print_summary

    from parallelbench.runner.store import StoreError

    try:
        with ResultsStore(db, create=False) as store:
            frame = store.frame(all_versions=all_versions)
            failures = store.failures()
    except StoreError as exc:
        _fail(str(exc))
        return
    console = Console()
    if failures:
        console.print(f"[yellow]{counted(len(failures), 'failed sample')} {'is' if len(failures) == 1 else 'are'} "
                      "stored without a score[/yellow] (first: "
                      f"{escape(' '.join(str(failures[0][3]).split())[:160])}); re-run `parallelbench run` to retry them",
                      soft_wrap=True, highlight=False)

    if frame.empty:
        print_summary(frame, console)
        return
    selected = frame
    if model:
        selected = selected[_model_matches(selected, [m.strip() for m in model.split(",")])]
    if tasks:
        selected = selected[selected["task"].isin(_task_ids(tasks))]
    if strategy:
        selected = selected[_strategy_matches(selected, strategy)]
    if selected.empty:
        wanted = " and ".join(f"{flag} {value}" for flag, value in
                              (("--model", model), ("--tasks", tasks), ("--strategy", strategy)) if value)
        from parallelbench.display import display_name

        def listed(values) -> str:  # names as shown: cleaned, cut, at most 20
            names = sorted(display_name(v) for v in set(values))
            return ", ".join(names[:20]) + (f", ... ({len(names)} in all)" if len(names) > 20 else "")

        models = listed(frame["model"])
        held = f"models {escape(f'[{models}]')} and {counted(frame['task'].nunique(), 'task')} ({escape(listed(frame['task']))})"
        if strategy:
            strategies = listed(frame["strategy"])
            held += f" and strategies {escape(f'[{strategies}]')}"
        console.print(f"[yellow]no rows match {escape(wanted)}[/yellow]; the database holds {held}", soft_wrap=True)
        return
    _print_scorer_errors(selected, console)
    if compare and all(compare):
        _print_comparison(_without_scorer_errors(selected), compare, console)
        return
    if order:
        from parallelbench.runner.summary import print_order_summary

        print_order_summary(selected, console)
        return
    if repair:
        from parallelbench.runner.summary import print_repair_summary

        print_repair_summary(selected, console)
        return
    if not all_versions:
        print_summary(selected, console)
        return
    from parallelbench.analysis.terminal import print_line
    from parallelbench.runner.versions_view import DATA_LEGEND, by_version

    grouped, titles, legend = by_version(selected)
    print_summary(grouped, console, titles=titles)
    for label, desc in legend.items():
        print_line(console, f"{label} = {desc}", "dim")
    scored_again = any(" s:" in str(d) for d in grouped["data"])
    print_line(console, DATA_LEGEND + ("; s: the scorer version / scoring mode, where rows were scored again"
                                       if scored_again else ""), "dim")


def _strategy_matches(frame, strategy: str):
    """Rows whose strategy name, config label or curve label is one of the comma list."""
    from parallelbench.analysis.selection import split_list

    wanted = split_list(strategy)
    names = frame["strategy"].astype(str)
    match = names.isin(wanted) | frame["config"].astype(str).isin(wanted)
    if match.all() or frame.empty:
        return match
    from parallelbench.analysis.curves import with_curves

    return match | with_curves(frame[["strategy", "params", "config"]])["curve"].astype(str).isin(wanted)


def _print_scorer_errors(frame, console) -> None:
    """One line per scorer that failed on some of these rows (their 0 is no score)."""
    from parallelbench.analysis.terminal import print_line
    from parallelbench.scoring.errors import frame_errors

    for group in frame_errors(frame):
        print_line(console, group.line(), "yellow")


def _without_scorer_errors(frame):
    from parallelbench.runner.summary import error_mask

    mask = error_mask(frame)
    return frame[[not m for m in mask]] if any(mask) else frame


def _model_matches(frame, wanted: list[str]):
    """Rows whose model is one of `wanted`, by the name they carry or the spec they were run as
    (a `py:` factory's rows carry the name its model reports; `versions.model_spec` keeps the spec)."""
    import json

    def spec_of(versions: str) -> str:
        try:
            value = json.loads(versions or "{}")
        except (TypeError, ValueError):
            return ""
        return str(value.get("model_spec", "")) if isinstance(value, dict) else ""

    by_name = frame["model"].isin(wanted)
    if by_name.all():
        return by_name
    return by_name | frame["versions"].map(spec_of).isin(wanted)


def _print_comparison(frame, names: tuple[str, str], console) -> None:
    from rich.markup import escape

    from parallelbench.runner.compare import CompareError, compare, describe

    try:
        comparison = compare(frame, *names)
    except CompareError as exc:
        _fail(str(exc))
        return
    for line in describe(comparison):
        console.print(escape(line), soft_wrap=True, highlight=False)


def _task_ids(tasks: str) -> list[str]:
    """The ids `run` would select for these task specs (ids, families, categories, paper)."""
    from parallelbench.tasks import resolve_tasks

    items = [t.strip() for t in tasks.split(",") if t.strip()]
    ids: list[str] = []
    for item in items:  # one by one, so an unknown spec still matches stored ids literally
        try:
            ids += [t.id for t in resolve_tasks([item])]
        except (KeyError, ValueError):
            ids.append(item)
    return ids


@results_app.command("export")
def export(
    ctx: typer.Context,
    fmt: str = typer.Option(..., "--format", "-f", help="csv, jsonl or parquet (parquet needs pyarrow)."),
    out: Path = typer.Option(..., "--out", "-o", help="File to write."),
    db: Optional[str] = typer.Option(None, "--db", help="Results database (default: the one given to `results`, else ./parallelbench.db)."),
) -> None:
    """Write every row of the database to a file.

    Example: parallelbench results export --format jsonl --out results.jsonl
    """
    from rich.console import Console

    from parallelbench.outputs import OutputError, check_file
    from parallelbench.runner.export import ExportError, export_rows
    from parallelbench.runner.store import ResultsStore, StoreError

    path = db or (ctx.obj or {}).get("db", "parallelbench.db")
    try:
        check_file(out, f"the {fmt} export")
        with ResultsStore(path, create=False) as store:
            n = export_rows(store, fmt, out)
    except (StoreError, ExportError, OutputError) as exc:
        _fail(str(exc))
        return
    Console().print(f"wrote {counted(n, 'row')} to {out}")


run.__doc__ = RUN_HELP
