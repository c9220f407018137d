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


def _summary_table(rows: list[dict]):
    from rich.markup import escape  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    from parallelbench.display import display_name  # noqa: PLC0415

    by_task: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_task[row["task"]].append(row)
    table = Table(title="Scores per task (headline = mean score; components are means too)")
    table.add_column("task")
    table.add_column("n", justify="right")
    table.add_column("score", justify="right")
    table.add_column("components")
    for task in sorted(by_task):
        group = by_task[task]
        n = len(group)
        names = list(dict.fromkeys(k for r in group for k in r["components"]))
        parts = []
        for name in names:
            values = [r["components"][name] for r in group if name in r["components"]]
            parts.append(f"{name} {sum(values) / len(values):.3f}")
        table.add_row(escape(display_name(task)), str(n), f"{sum(r['score'] for r in group) / n:.3f}", "  ".join(parts))
    return table


def score(
    tasks: str = typer.Option(
        ..., "--tasks", help="A task JSONL file, or a folder of them (from `parallelbench tasks export` or `tasks import`), "
        "or module:NAME: tasks of your own module (every sample is generated)."
    ),
    outputs: Path = typer.Option(..., "--outputs", help='JSONL file of {"id": ..., "output": "..."} lines.'),
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
    """Score model outputs against task files and print a per-task table.

    Example: parallelbench score --tasks tasks/ --outputs answers.jsonl --per-sample scores.jsonl
    Example: parallelbench score --tasks my_out/ --scorers my_tasks --outputs answers.jsonl
    """
    from rich.console import Console  # noqa: PLC0415

    from parallelbench.scoring.files import ScoreInputError, read_outputs, read_samples  # noqa: PLC0415
    from parallelbench.scoring.grammar import BACKEND_ENV, GrammarBackendError, get_backend  # noqa: PLC0415
    from parallelbench.scoring.similarity import MODEL_ENV, MetricUnavailable  # noqa: PLC0415

    console = Console()
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
            results = score_many(chosen, texts)
    except KeyError as err:
        _fail(console, f"{err.args[0]}; the task file names a scorer this version does not have (a scorer of your own: name its module with --scorers MODULE)")
    except (GrammarBackendError, MetricUnavailable) as err:
        _fail(console, str(err))

    rows = [
        {"id": s.id, "task": s.task, "score": r.score, "components": r.components, "meta": r.meta}
        for s, r in zip(chosen, results)
    ]
    console.print(_summary_table(rows))
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
