"""`parallelbench tasks ...`: list, show, export and import benchmark tasks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

app = typer.Typer(
    help="List, show, export and import benchmark tasks.\n\nExample: parallelbench tasks list --tasks paper",
    no_args_is_help=True,
)
_out = Console()
_err = Console(stderr=True)


def _fail(message: str) -> None:
    _err.print(f"[red]error:[/red] {message}", markup=True, highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _resolve(spec: str):
    from parallelbench.tasks import registry, resolve_tasks

    if spec.strip() == "all":
        return list(registry().values())
    try:
        return resolve_tasks(spec)
    except KeyError as exc:
        _fail(str(exc.args[0]) if exc.args else str(exc))


def _task_row(task) -> dict:
    p = task.params
    return {
        "id": task.id,
        "category": task.category,
        "samples": p.num_samples,
        "in_paper": task.in_paper,
        "n_min": p.n_min,
        "n_max": p.n_max,
        "shots": task.shots,
        "max_new_tokens": task.max_new_tokens,
        "scorer": task.scorer,
        "seed": p.seed,
        "description": task.description,
    }


@app.command("list")
def list_tasks(
    tasks: str = typer.Option("all", "--tasks", "-t", help="Ids, categories, 'paper' or module:NAME (comma list), or 'all'."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list of {id, category, samples, in_paper, ...}."),
) -> None:
    """List tasks with their category, sample count, n range, shots and scorer.

    Example: parallelbench tasks list --tasks paper
    """
    order = {"waiting_line": 0, "text_writing": 1, "puzzle": 2, "synthetic": 3, "structured": 4}
    rows = [_task_row(t) for t in sorted(_resolve(tasks), key=lambda t: order.get(t.category, 9))]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    from rich.table import Table

    from rich import box

    from parallelbench.analysis.terminal import dropped_line, fit_columns, print_line, print_table

    def cells(r: dict) -> dict[str, str]:
        n = str(r["n_min"]) if r["n_min"] == r["n_max"] else f"{r['n_min']}-{r['n_max']}"
        return {"samples": str(r["samples"]), "n": n, "shots": str(r["shots"]), "tokens": str(r["max_new_tokens"]),
                "paper": "yes" if r["in_paper"] else ""}

    def build(columns) -> Table:
        table = Table(title=f"{len(rows)} tasks ('paper': one of the paper's 17)", title_justify="left", box=box.SIMPLE)
        table.add_column("id", no_wrap=True)
        for col in columns:
            table.add_column(col, justify="left" if col == "paper" else "right", no_wrap=True)
        for r in rows:
            values = cells(r)
            table.add_row(r["id"], *(values[c] for c in columns))
        return table

    table, dropped = fit_columns(_out, build, ["samples", "n", "shots", "tokens", "paper"])
    print_table(_out, table)
    if dropped:
        print_line(_out, dropped_line(dropped, "tasks list") + "; --json gives every column", "yellow")


@app.command("show")
def show(
    task_id: Optional[str] = typer.Argument(None, help="Task id (e.g. waiting_line/shuffle) or module:NAME (your own tasks)."),
    tasks: Optional[str] = typer.Option(None, "--tasks", "-t", help="The same as the argument: a task id or module:NAME."),
    index: int = typer.Option(0, "--index", "-i", help="Which sample (0-based)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Generate with this seed instead of the task's."),
) -> None:
    """Show one sample: its prompt, chat messages (one-shot example included) and a correct answer.

    With module:NAME (tasks of your own module) the sample is shown for each of its tasks.

    Example: parallelbench tasks show waiting_line/shuffle --index 3
    Example: parallelbench tasks show --tasks my_tasks:make_tasks
    """
    from parallelbench.tasks import TaskSourceError, get_task
    from parallelbench.tasks._common import with_params
    from parallelbench.tasks.user import is_task_source

    spec = (task_id or tasks or "").strip()
    if not spec:
        _fail("name a task: parallelbench tasks show waiting_line/copy (or --tasks module:NAME for your own)")
    if task_id and tasks and task_id.strip() != tasks.strip():
        _fail(f"give the task once: either the argument ({task_id}) or --tasks ({tasks})")
    if is_task_source(spec) or "," in spec:
        chosen = _resolve(spec)
    else:
        try:
            chosen = [get_task(spec)]
        except KeyError as exc:
            _fail(str(exc.args[0]) if exc.args else str(exc))
    try:
        for task in chosen:
            if seed is not None:
                task = with_params(task, seed=seed)
            _show_sample(task, index)
    except TaskSourceError as exc:
        _fail(str(exc))


def _show_sample(task, index: int) -> None:
    from rich.panel import Panel
    from rich.text import Text

    from parallelbench.tasks import task_source, valid_answers
    from parallelbench.tasks._answers import count_valid_answers

    if index < 0 or index >= task.params.num_samples:
        _fail(f"--index {index} is out of range: {task.id} has {task.params.num_samples} samples (0..{task.params.num_samples - 1})")
    samples = task.samples(index + 1)
    if index >= len(samples):
        _fail(f"--index {index} is out of range: {task.id} has {len(samples)} samples")
    s = samples[index]
    _out.print(Text(f"{s.id}  (scorer {s.scorer}, max {task.max_new_tokens} new tokens)", style="bold"))
    _out.print(Panel(Text(s.prompt), title="prompt"))
    for m in s.messages:
        _out.print(Panel(Text(m["content"]), title=m["role"]))
    _out.print(Panel(Text(s.answer), title="a correct answer"))
    count = count_valid_answers(s)
    if count is not None and task_source(task.id) is None:
        listed = valid_answers(s)
        note = "" if listed is not None else " (too many to list)"
        _out.print(f"valid answers: {count}{note}", highlight=False)
    elif task.valid_answers is not None:
        listed = valid_answers(s)
        if listed is not None:
            _out.print(f"valid answers: {len(listed)}", highlight=False)
    _out.print(Panel(Text(json.dumps(s.data, ensure_ascii=False)), title="data"))


@app.command("export")
def export(
    out: Path = typer.Option(..., "--out", "-o", help="Folder for the JSONL files (created)."),
    tasks: str = typer.Option("paper", "--tasks", "-t", help="Ids, categories, 'paper' or module:NAME (your own tasks; comma list), or 'all'."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="At most this many samples per task."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Generator seed instead of each task's default."),
    n_min: Optional[int] = typer.Option(None, "--n-min", min=1, help="Shortest list length (list tasks) or fewest fields (structured tasks, 3..8)."),
    n_max: Optional[int] = typer.Option(None, "--n-max", min=1, help="Longest list length (list tasks) or most fields (structured tasks, 3..8)."),
    source: str = typer.Option("owned", "--source", help="'owned' (bundled data) or 'hub' (SAMSum / ChatGPT paraphrases; needs the network)."),
    fmt: str = typer.Option("jsonl", "--format", help="'jsonl' (our sample files) or 'lm-eval' (a task folder for lm-eval --include_path)."),
) -> None:
    """Write one JSONL file per task; each line is a sample (id, task, messages, answer, scorer, data).

    With --format lm-eval the folder is an lm-evaluation-harness task set in the layout of the
    authors' rewrite: tasks parallelbench_<category>_<task>, group parallelbench_all (the
    paper's 17) with subgroups per category, local data, our scorers (docs/lm-eval.md).

    Example: parallelbench tasks export --out tasks_out --tasks paper --limit 10
    Example: parallelbench tasks export --out my_out --tasks my_tasks:make_tasks
    Example: parallelbench tasks export --format lm-eval --out pb_tasks && lm_eval --model hf --model_args pretrained=gpt2 --include_path pb_tasks --tasks parallelbench_all

    Tasks of your own (--tasks my_tasks:make_tasks) get a group named after their module
    (my_tasks_all); the last lines print the complete command that runs everything written.
    """
    from parallelbench.outputs import OutputError, check_folder
    from parallelbench.tasks._common import with_params
    from parallelbench.tasks.export import export_tasks

    if source not in ("owned", "hub"):
        _fail(f"--source must be 'owned' or 'hub', got {source!r}")
    if fmt not in ("jsonl", "lm-eval"):
        _fail(f"--format must be 'jsonl' or 'lm-eval', got {fmt!r}")
    try:
        check_folder(out, "the task files")
    except OutputError as exc:
        _fail(str(exc))
    chosen = _resolve(tasks)
    if n_min is not None or n_max is not None:
        if any(t.category not in ("waiting_line", "synthetic", "structured") for t in chosen):
            _fail("--n-min/--n-max apply to list and structured tasks only; select waiting_line, synthetic or structured tasks")
    if n_min is not None and n_max is None:
        n_max = n_min
    if n_min is not None or n_max is not None or seed is not None:
        try:
            chosen = [with_params(t, n_min=n_min, n_max=n_max, seed=seed) for t in chosen]
        except ValueError as exc:
            _fail(str(exc))

    samples_of = None
    if source == "hub":
        from parallelbench.tasks.hub import HUB_TASKS, load_hub_samples

        def samples_of(task, lim):
            base = task.id if task.id in HUB_TASKS else None
            if base is None:
                return task.samples(lim)
            try:
                return load_hub_samples(base, num_samples=lim or task.params.num_samples,
                                        seed=task.params.seed)
            except RuntimeError as exc:
                _fail(str(exc))

    if fmt == "lm-eval":
        from parallelbench.integrations.lm_eval_command import printed_commands, run_targets
        from parallelbench.integrations.lm_eval_tasks import export_lm_eval
        from parallelbench.integrations.lm_eval_user import add_user_modules, write_user_groups

        try:
            rows = export_lm_eval(chosen, out, limit, samples_of)
            add_user_modules(out, chosen)  # tasks of your own: utils.py imports their module
            groups = write_user_groups(out, chosen)  # ... and each module has its group (my_tasks_all)
        except (FileNotFoundError, ValueError, OSError) as exc:
            _fail(" ".join(str(exc).split()))
        total = sum(c for _, _, c in rows)
        _out.print(f"wrote {total} samples of {len(rows)} lm-eval tasks to {out}", highlight=False, soft_wrap=True)
        for line in printed_commands(out, run_targets(chosen, groups)):
            _out.print(line, highlight=False, soft_wrap=True, markup=False)
        return
    try:
        rows = export_tasks(chosen, out, limit, samples_of)
    except (FileNotFoundError, ValueError, OutputError) as exc:
        _fail(str(exc))
    total = sum(c for _, _, c in rows)
    _out.print(f"wrote {total} samples of {len(rows)} tasks to {out}", highlight=False, soft_wrap=True)


@app.command("import")
def import_release(
    folder: Path = typer.Argument(..., help="The original release's output/test folder (waiting_line/, puzzle/, ...)."),
    out: Path = typer.Option(..., "--out", "-o", help="JSONL file to write (all tasks in one file)."),
    tasks: Optional[str] = typer.Option(None, "--tasks", "-t", help="Only these of our task ids / categories / 'paper'."),
) -> None:
    """Convert the original ParallelBench release's frozen files into our sample format.

    Example: parallelbench tasks import ../shared/official-parallelbench --out official.jsonl
    """
    from parallelbench.outputs import OutputError, check_file
    from parallelbench.tasks.export import write_samples
    from parallelbench.tasks.official import load_release

    try:
        check_file(out, "the imported samples")
    except OutputError as exc:
        _fail(str(exc))
    wanted = {t.id for t in _resolve(tasks)} if tasks else None
    try:
        result = load_release(folder, wanted)
    except (FileNotFoundError, ValueError, KeyError) as exc:
        _fail(str(exc))
    samples = [s for task_samples in result.samples.values() for s in task_samples]
    try:
        count = write_samples(samples, out)
    except OutputError as exc:
        _fail(str(exc))
    for rel in result.skipped:
        _err.print(f"skipped {rel}: no matching task", highlight=False)
    _out.print(f"imported {count} samples of {len(result.samples)} tasks to {out}", highlight=False, soft_wrap=True)
