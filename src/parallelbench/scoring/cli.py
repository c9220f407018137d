"""`parallelbench score`: score a file of model outputs against task files."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Optional

import typer


def _fail(console, message: str) -> None:
    """Print one unwrapped error line on stderr and exit with status 2 (a usage error)."""
    from rich.console import Console  # noqa: PLC0415
    from rich.markup import escape  # noqa: PLC0415

    Console(stderr=True).print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _summary_table(rows: list[dict], mode: str = "default"):
    """Mean score and components per task, over the rows whose scorer did not fail; a `scorer errors`
    column when some did (those rows are not counted as 0)."""
    from rich.markup import escape  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    from parallelbench.display import display_name  # noqa: PLC0415
    from parallelbench.scoring.errors import error_of_meta  # noqa: PLC0415

    by_task: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_task[row["task"]].append(row)
    failed = {id(r) for r in rows if error_of_meta(r.get("meta"))}
    table = Table(title=f"Scores per task, {mode} scoring (headline = mean score; components are means too)")
    table.add_column("task")
    table.add_column("n", justify="right", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    if failed:
        table.add_column("scorer errors", justify="right", no_wrap=True)
    table.add_column("components")
    for task in sorted(by_task):
        group = [r for r in by_task[task] if id(r) not in failed]
        errors = len(by_task[task]) - len(group)
        n = len(group)
        names = list(dict.fromkeys(k for r in group for k in r["components"]))
        parts = []
        for name in names:
            values = [r["components"][name] for r in group if name in r["components"]]
            parts.append(f"{name} {sum(values) / len(values):.3f}")
        mean = f"{sum(r['score'] for r in group) / n:.3f}" if n else "scorer error"
        table.add_row(escape(display_name(task)), str(n), mean, *([str(errors)] if failed else []), "  ".join(parts))
    return table


def _print_scorer_errors(console, rows: list[dict]) -> None:
    """The line `run` and `results` print: which scorer failed on how many rows, and the first error."""
    from parallelbench.analysis.terminal import print_line  # noqa: PLC0415
    from parallelbench.scoring.errors import count_errors, error_of_meta  # noqa: PLC0415

    for group in count_errors((r["task"], error_of_meta(r.get("meta"))) for r in rows):
        print_line(console, group.line(), "yellow")


def score(
    tasks: Optional[str] = typer.Option(
        None, "--tasks", help="A task JSONL file, or a folder of them (from `parallelbench tasks export` or `tasks import`), "
        "or module:NAME: tasks of your own module (every sample is generated)."
    ),
    outputs: Optional[Path] = typer.Option(None, "--outputs", help='JSONL file of {"id": ..., "output": "..."} lines.'),
    db: Optional[Path] = typer.Option(
        None, "--db", help="Rescore the stored outputs of this results database instead of --outputs (no decoding)."
    ),
    scoring: str = typer.Option(
        "default", "--scoring", help="default (valid solutions of the prompt as written) or paper (the paper's metric exactly)."
    ),
    per_sample: Optional[Path] = typer.Option(
        None, "--per-sample", help="Also write one JSONL line per answer: id, task, score, every component, meta."
    ),
    grammar_backend: Optional[str] = typer.Option(
        None, "--grammar-backend", help="harper (offline, the default) or languagetool (needs PARALLELBENCH_LANGUAGETOOL_URL)."
    ),
    bertscore_model: Optional[str] = typer.Option(
        None, "--bertscore-model", help="minilm (bundled, the default), roberta-large or a local model folder, if on disk."
    ),
    scorers: Optional[str] = typer.Option(
        None, "--scorers", help="Module(s) of your own whose @register_scorer scorers the task files name (comma list)."
    ),
) -> None:
    """Score model outputs against task files (or rescore a results database) and print a per-task table.

    Example: parallelbench score --tasks tasks/ --outputs answers.jsonl --per-sample scores.jsonl
    Example: parallelbench score --db parallelbench.db --scoring paper --per-sample paper_scores.jsonl
    Example: parallelbench score --tasks my_out/ --scorers my_tasks --outputs answers.jsonl
    """
    from rich.console import Console  # noqa: PLC0415

    from parallelbench.analysis.terminal import print_table  # noqa: PLC0415
    from parallelbench.scoring.files import ScoreInputError, read_outputs, read_samples  # noqa: PLC0415
    from parallelbench.scoring.grammar import BACKEND_ENV, GrammarBackendError, get_backend  # noqa: PLC0415
    from parallelbench.scoring.similarity import MODEL_ENV, MetricUnavailable  # noqa: PLC0415

    from parallelbench.scoring.base import SCORING_MODES  # noqa: PLC0415

    console = Console()
    if scoring not in SCORING_MODES:
        _fail(console, f"--scoring must be one of {', '.join(SCORING_MODES)}, got {scoring!r}")
    if db is not None and outputs is not None:
        _fail(console, "give either --db (rescore a results database) or --outputs (with --tasks), not both")
    if db is None and (tasks is None or outputs is None):
        _fail(console, "give --tasks and --outputs, or --db to rescore a results database; see parallelbench score --help")
    if per_sample is not None:  # an unwritable --per-sample is known before any scoring
        from parallelbench.outputs import OutputError, check_file  # noqa: PLC0415

        try:
            check_file(per_sample, "the per-sample scores")
        except OutputError as err:
            _fail(console, str(err))
    if grammar_backend:
        os.environ[BACKEND_ENV] = grammar_backend
    if bertscore_model:
        os.environ[MODEL_ENV] = bertscore_model
    from parallelbench.tasks import TaskSourceError, task_source_samples  # noqa: PLC0415
    from parallelbench.tasks.user import import_scorer_modules, is_task_source  # noqa: PLC0415

    if db is not None:
        try:
            import_scorer_modules(scorers or "")
        except TaskSourceError as err:
            _fail(console, str(err))
        _rescore_db(console, db, tasks, scoring, per_sample)
        return
    try:
        import_scorer_modules(scorers or "")
        if is_task_source(tasks) and not Path(tasks).exists():
            samples = task_source_samples(tasks)
        else:
            samples = read_samples(Path(tasks))
        answers = read_outputs(outputs)
    except (ScoreInputError, TaskSourceError) as err:
        _fail(console, str(err))
    unknown = [sample_id for sample_id, _ in answers if sample_id not in samples]
    if unknown:
        shown = ", ".join(repr(u) for u in unknown[:3]) + (" ..." if len(unknown) > 3 else "")
        _fail(console, f"{len(unknown)} output id(s) are not in {tasks}: {shown}; score against the task file the outputs came from")
    chosen = [samples[sample_id] for sample_id, _ in answers]
    texts = [text for _, text in answers]

    from parallelbench.scoring import get_scorer, score_many  # noqa: PLC0415

    try:
        for scorer in {s.scorer for s in chosen}:
            get_scorer(scorer)
        if any(s.scorer in ("summarization", "paraphrase", "w2s") for s in chosen):
            get_backend()
        with console.status(f"scoring {len(chosen)} answers..."):
            results = score_many(chosen, texts, mode=scoring)
    except KeyError as err:
        _fail(console, f"{err.args[0]}; the task file names a scorer this version does not have (a scorer of your own: name its module with --scorers MODULE)")
    except (GrammarBackendError, MetricUnavailable) as err:
        _fail(console, str(err))

    rows = [
        {"id": s.id, "task": s.task, "score": r.score, "components": r.components, "meta": r.meta}
        for s, r in zip(chosen, results)
    ]
    print_table(console, _summary_table(rows, scoring))
    _print_scorer_errors(console, rows)
    skipped = len(samples) - len(chosen)
    if skipped:
        console.print(f"{skipped} sample(s) of {tasks} have no output and were not scored.", highlight=False)
    if per_sample is not None:
        try:
            per_sample.parent.mkdir(parents=True, exist_ok=True)
            with per_sample.open("w", encoding="utf-8") as handle:
                for row in rows:
                    line = {"id": row["id"], "task": row["task"], "score": row["score"], **row["components"], "meta": row["meta"]}
                    handle.write(json.dumps(line, ensure_ascii=False) + "\n")
        except OSError as err:
            _fail(console, f"cannot write {per_sample}: {err.strerror or err}")
        console.print(f"wrote {len(rows)} per-sample scores to {per_sample}", highlight=False)


def _rescore_db(console, db: Path, tasks: Optional[str], mode: str, per_sample: Optional[Path]) -> None:
    """Score the stored outputs of `db` again in `mode`; print stored vs new means per task."""
    from rich.markup import escape  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    from parallelbench.display import display_name  # noqa: PLC0415
    from parallelbench.runner.store import ResultsStore, StoreError  # noqa: PLC0415
    from parallelbench.scoring.files import ScoreInputError, read_samples  # noqa: PLC0415
    from parallelbench.scoring.grammar import GrammarBackendError  # noqa: PLC0415
    from parallelbench.scoring.rescore import rescore_rows  # noqa: PLC0415
    from parallelbench.scoring.similarity import MetricUnavailable  # noqa: PLC0415

    from parallelbench.tasks import TaskSourceError, task_source_samples  # noqa: PLC0415
    from parallelbench.tasks.user import is_task_source  # noqa: PLC0415

    try:
        with ResultsStore(db, create=False) as store:
            rows = list(store.iter_rows())
        if tasks is None:
            given = None
        elif is_task_source(tasks) and not Path(tasks).exists():  # module:NAME, as without --db
            given = task_source_samples(tasks)
        else:
            given = read_samples(Path(tasks))
    except (StoreError, ScoreInputError, TaskSourceError) as err:
        _fail(console, " ".join(str(err).split()))
    if not rows:
        _fail(console, f"{db} holds no finished rows to rescore; run `parallelbench run --db {db}` first")
    try:
        with console.status(f"rescoring {len(rows)} stored outputs ({mode} scoring)..."):
            result = rescore_rows(rows, mode=mode, given=given)
    except KeyError as err:
        _fail(console, f"{err.args[0]}; the database names a scorer this version does not have")
    except (GrammarBackendError, MetricUnavailable) as err:
        _fail(console, str(err))

    by_task: dict[str, list[dict]] = defaultdict(list)
    for row in result.rows:
        by_task[row["task"]].append(row)
    from parallelbench.analysis.terminal import dropped_line, fit_columns, print_line, print_table  # noqa: PLC0415
    from parallelbench.scoring.errors import error_of_meta  # noqa: PLC0415

    failed = any(error_of_meta(r.get("meta")) for r in result.rows)
    cells: dict[str, dict[str, str]] = {}
    for task in sorted(by_task):
        group = by_task[task]
        stored = [r["stored"] for r in group if r["stored"] is not None and not r.get("stored_error")]
        scored = [r["score"] for r in group if not error_of_meta(r.get("meta"))]
        cells[task] = {
            "rows": str(len(group)), "stored": f"{sum(stored) / len(stored):.3f}" if stored else "-",
            mode: f"{sum(scored) / len(scored):.3f}" if scored else "scorer error",
            "changed": str(sum(r["stored"] is not None and r["stored"] != r["score"] for r in group)),
            "scorer errors": str(len(group) - len(scored)),
        }

    def build(optional) -> Table:
        table = Table(title=f"{db}: stored scores and {mode} scoring of the same outputs (means per task)")
        columns = ["rows", "stored", mode, *optional]
        table.add_column("task", no_wrap=False)
        for name in columns:
            table.add_column(name, justify="right", no_wrap=True)
        for task, row in cells.items():
            table.add_row(escape(display_name(task)), *(row[name] for name in columns))
        return table

    # a narrow terminal loses the right-hand counts (named in a line), never a cut number
    table, dropped = fit_columns(console, build, ["changed", *(["scorer errors"] if failed else [])])
    print_table(console, table)
    if dropped:
        print_line(console, dropped_line(dropped, "score --db"), "yellow")
    _print_scorer_errors(console, result.rows)
    if result.missing:
        tasks_missing = sorted({t for t, _ in result.missing})
        console.print(
            f"{len(result.missing)} stored row(s) of {len(tasks_missing)} task(s) ({', '.join(tasks_missing[:3])}"
            f"{' ...' if len(tasks_missing) > 3 else ''}) were not rescored: their samples are not the registered ones; "
            "pass --tasks with the task files they came from (or module:NAME for tasks of your own)",
            highlight=False, soft_wrap=True,
        )
    if per_sample is not None:
        try:
            per_sample.parent.mkdir(parents=True, exist_ok=True)
            with per_sample.open("w", encoding="utf-8") as handle:
                for row in result.rows:
                    line = {k: row[k] for k in ("model", "config", "task", "sample_id", "seed", "stored", "score")}
                    handle.write(json.dumps({**line, **row["components"], "scoring": mode}, ensure_ascii=False) + "\n")
        except OSError as err:
            _fail(console, f"cannot write {per_sample}: {err.strerror or err}")
        console.print(f"wrote {len(result.rows)} rescored rows to {per_sample}", highlight=False)
