"""`parallelbench train` and `parallelbench tiny ...`: train, evaluate and plot the tiny model.

torch and the model code are imported inside the commands so `parallelbench --help` stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

console = Console(stderr=True)

app = typer.Typer(
    help=(
        "The bundled tiny diffusion LM: accuracy table and figure 3.\n\n"
        "Example: parallelbench tiny accuracy --limit 20"
    ),
    no_args_is_help=True,
)


def _fail(message: str) -> None:
    console.print(f"[red]error:[/red] {message}")
    raise typer.Exit(2)


def train(
    out: Path = typer.Option(Path("runs/tiny"), "--out", help="Folder for checkpoints, log and the exported model."),
    steps: int = typer.Option(11000, "--steps", min=1, help="Optimiser steps (the learning-rate schedule spans them)."),
    minutes: Optional[float] = typer.Option(None, "--minutes", min=0.0, help="Stop after this wall time, with a checkpoint (resume later)."),
    stop_at: Optional[int] = typer.Option(None, "--stop-at", min=1, help="Stop after this step, with a checkpoint, as if interrupted (the schedule still spans --steps); --resume continues."),
    transition: str = typer.Option("masked", "--transition", help="masked (absorbing state, MDLM/LLaDA) or uniform (SEDD-style)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the data stream, noise and initial weights."),
    resume: bool = typer.Option(False, "--resume", help="Continue from OUT/checkpoint.pt."),
    batch_size: int = typer.Option(64, "--batch-size", min=1),
    lr: float = typer.Option(2e-3, "--lr", min=0.0, help="Peak learning rate (AdamW, warm-up then cosine)."),
    d_model: int = typer.Option(128, "--d-model", min=8),
    layers: int = typer.Option(4, "--layers", min=1),
    heads: int = typer.Option(4, "--heads", min=1),
    threads: int = typer.Option(2, "--threads", min=1, help="torch CPU threads (results are reproducible for a fixed value)."),
    grid: bool = typer.Option(True, "--grid/--no-grid", help="Grid row/column embeddings and same-row/column attention biases (the puzzles need them); --no-grid trains the earlier network."),
    grid_exclude: bool = typer.Option(True, "--grid-exclude/--no-grid-exclude", help="Learned same-row/column candidate elimination on the output (needs --grid)."),
    rank: bool = typer.Option(True, "--rank/--no-rank", help="Alphabetical-rank features of every token (for sorting by name)."),
    tasks: Optional[str] = typer.Option(None, "--tasks", help="Comma-separated task ids to train on (default: all Waiting Line, puzzle and synthetic tasks)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar (the log is always written)."),
    validate_every: int = typer.Option(0, "--validate-every", min=0, help="Decode a validation stream (disjoint from the test sets) every N steps and export the best weights; 0 exports the last step."),
    validate_samples: int = typer.Option(16, "--validate-samples", min=1, help="Validation samples per training task (with --validate-every)."),
    init_from: Optional[Path] = typer.Option(None, "--init-from", help="Warm start: seed the weights from a trained model folder (a `parallelbench train` OUT, or the shipped weights folder); rows of tokens both vocabularies share are carried over by text."),
    task_weight: Optional[list[str]] = typer.Option(None, "--task-weight", help="NAME=W: this task's share of each chunk instead of the recipe's (repeatable; e.g. json_any_order=6)."),
) -> None:
    """Train the bundled tiny diffusion LM on the task generators' training streams.

    Example: parallelbench train --out runs/tiny --steps 11000 --validate-every 500

    Warm start: parallelbench train --out runs/tiny-ft --init-from runs/tiny --steps 3000 --task-weight json_any_order=6

    Same seed and steps give the same weights on the same machine; --minutes stops early
    with a checkpoint and --resume continues it. The exported model (model.pt,
    config.json, tokenizer.json) loads with `load_model("tiny", path=OUT)`.
    """
    if transition not in ("masked", "uniform"):
        raise typer.BadParameter(f"{transition!r} is not a transition; use masked or uniform", param_hint="--transition")
    if d_model % heads:
        raise typer.BadParameter(f"--d-model {d_model} must be divisible by --heads {heads}", param_hint="--d-model")
    task_ids = [t.strip() for t in tasks.split(",") if t.strip()] if tasks else None
    if task_ids:
        from parallelbench.tasks import registry

        unknown = [t for t in task_ids if t not in registry()]
        if unknown:
            raise typer.BadParameter(f"unknown task ids {unknown}; run `parallelbench tasks list`", param_hint="--tasks")
    weights = {}
    for item in task_weight or []:
        name, _, value = item.partition("=")
        try:
            weights[name.strip()] = float(value)
        except ValueError:
            raise typer.BadParameter(f"{item!r} is not NAME=WEIGHT (e.g. json_any_order=6)", param_hint="--task-weight") from None
    if weights:
        from parallelbench.models.tiny.data import training_tasks

        known = {n for t in training_tasks(task_ids) for n in (t.id, t.id.split("/")[-1])}
        stray = sorted(set(weights) - known)
        if stray:
            raise typer.BadParameter(f"{', '.join(stray)} is not a task of this run; name one by id or short name "
                                     "(e.g. structured/json_any_order or json_any_order)", param_hint="--task-weight")
    if init_from is not None and not init_from.is_dir():
        raise typer.BadParameter(f"{init_from} is not a folder; pass a trained model folder", param_hint="--init-from")
    if resume and not (out / "checkpoint.pt").exists():
        raise typer.BadParameter(f"{out}/checkpoint.pt does not exist; drop --resume to start afresh", param_hint="--resume")
    from parallelbench.models.tiny.train import CheckpointError, TrainConfig, train as run_training

    cfg = TrainConfig(out=str(out), steps=steps, minutes=minutes, transition=transition, seed=seed,
                      batch_size=batch_size, lr=lr, d_model=d_model, n_layers=layers, n_heads=heads,
                      d_ff=4 * d_model, threads=threads, tasks=task_ids, stop_at=stop_at,
                      grid=TrainConfig.grid if grid else 0, grid_bias=grid, grid_exclude=grid and grid_exclude, rank=rank,
                      validate_every=validate_every, validate_samples=validate_samples,
                      init_from=str(init_from) if init_from else None, task_weights=weights or None)
    try:
        folder = run_training(cfg, resume=resume, progress=progress)
    except (CheckpointError, FileNotFoundError) as exc:  # an unreadable checkpoint, a folder without weights
        _fail(str(exc))
    info = json.loads((folder / "config.json").read_text())
    console.print(f"[green]done:[/green] {info['train']['steps_done']} steps in {info['train']['seconds']:.0f} s; "
                  f"model in {folder} ({info['parameters']:,} parameters)")
    chosen = info.get("selection", {})
    if "valid_accuracy" in chosen:
        console.print(f"exported the weights of step {chosen['step']}: best validation accuracy {chosen['valid_accuracy']:.1%}")


def _load(path: Optional[Path], uniform: bool):
    from parallelbench.models.tiny import load, load_uniform

    try:
        return (load_uniform if uniform else load)(path=path)
    except FileNotFoundError as exc:
        _fail(str(exc))


@app.command("accuracy")
def accuracy(
    path: Optional[Path] = typer.Option(None, "--path", help="Trained model folder (default: the shipped weights)."),
    uniform: bool = typer.Option(False, "--uniform", help="Evaluate the uniform-transition variant."),
    tasks: Optional[str] = typer.Option(None, "--tasks", help="Comma-separated task ids (default: the card's 19 tasks)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="First N test samples per task (default: all)."),
    seed: int = typer.Option(0, "--seed"),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    markdown_out: Optional[Path] = typer.Option(None, "--markdown", help="Also write the table as Markdown here."),
    split: str = typer.Option("test", "--split", help="test (the benchmark's test sets) or validation (the stream checkpoints are selected on, disjoint from the tests; --limit samples per task, default 100)."),
) -> None:
    """Accuracy per task, greedy: 1 token/step most-confident-first (judged against the
    targets), and 1 and 2 tokens/step in random order (the parallel-decoding drop).

    Example: parallelbench tiny accuracy --json --limit 20 --split test
    """
    if split not in ("test", "validation"):
        raise typer.BadParameter(f"{split!r} is not a split; use test or validation", param_hint="--split")
    from parallelbench.models.tiny import evaluate as ev

    task_ids = [t.strip() for t in tasks.split(",")] if tasks else ev.TABLE_TASKS
    from parallelbench.tasks import registry

    unknown = [t for t in task_ids if t not in registry()]
    if unknown:
        raise typer.BadParameter(f"unknown task ids {unknown}; run `parallelbench tasks list`", param_hint="--tasks")
    model = _load(path, uniform)
    from parallelbench.models.tokenizer import UnknownWordsError

    try:
        rows = ev.accuracy_table(model, task_ids, limit=limit, seed=seed, split=split,
                                 progress=None if as_json else (lambda r: console.print(f"  {r.task}: {r.acc_conf:.1%} | {r.acc_k1:.1%} / {r.acc_k2:.1%}")))
    except UnknownWordsError as exc:
        _fail(f"{exc} (--tasks picks tasks; this model folder was trained on fewer tasks)")
    result = {"model": model.name, "versions": model.versions(), "rows": [r.to_dict() for r in rows],
              "finding": ev.finding(rows)}
    if markdown_out:
        markdown_out.parent.mkdir(parents=True, exist_ok=True)
        markdown_out.write_text(ev.markdown(rows) + "\n")
    if as_json:
        typer.echo(json.dumps(result, indent=1))
        return
    from rich.table import Table

    from parallelbench.analysis.terminal import dropped_line, fit_columns, print_line, print_table

    def cells(r) -> dict[str, str]:
        target = "" if r.target is None else (f"≥{r.target:.0%} " + ("[green]met[/green]" if r.meets_target else "[red]missed[/red]"))
        return {"C(Y|X)\n=0": "yes" if r.zero_dependency else "no", "n": str(r.samples), "conf\nk=1": f"{r.acc_conf:.1%}",
                "random\nk=1": f"{r.acc_k1:.1%}", "random\nk=2": f"{r.acc_k2:.1%}", "drop": f"{100 * r.drop:+.1f}",
                "target": target}

    def build(columns) -> Table:
        table = Table(title=f"{model.name}: accuracy (greedy; confidence top-k and random top-k)")
        table.add_column("task", no_wrap=True)
        for col in columns:
            table.add_column(col, no_wrap=True, justify="left" if col in ("target", "C(Y|X)\n=0") else "right")
        for r in rows:
            values = cells(r)
            table.add_row(r.task, *(values[c] for c in columns))
        return table

    out = Console()
    table, dropped = fit_columns(out, build, ["n", "conf\nk=1", "random\nk=1", "random\nk=2", "drop", "C(Y|X)\n=0", "target"])
    print_table(out, table)
    if dropped:
        print_line(out, dropped_line([c.replace("\n", " ") for c in dropped], "tiny accuracy") + "; --json gives every column",
                   "yellow")
    Console().print(result["finding"])


@app.command("figure3")
def figure3(
    out: Path = typer.Option(Path("docs/img/tiny-figure3.png"), "--out", help="PNG to write."),
    path: Optional[Path] = typer.Option(None, "--path", help="Trained model folder (default: the shipped weights)."),
    uniform: bool = typer.Option(False, "--uniform", help="Use the uniform-transition variant."),
    samples: int = typer.Option(100, "--samples", min=1, help="Samples per (task, n)."),
    n_max: int = typer.Option(10, "--n-max", min=2, max=12, help="Largest list length."),
    seed: int = typer.Option(0, "--seed"),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Also write the measured points as JSON."),
) -> None:
    """Figure 3: infilling shuffle and replace random, k = 1, 2, n, beside the theory.

    Example: parallelbench tiny figure3 --out docs/img/tiny-figure3.png --samples 100
    """
    from parallelbench.models.tiny import figure3 as f3

    model = _load(path, uniform)
    points = f3.measure(model, n_values=range(2, n_max + 1), samples=samples, seed=seed,
                        progress=lambda p: console.print(f"  {p['op']} n={p['n']} k={p['k']}: {p['accuracy']:.2f} (theory {p['theory']:.2f})"))
    f3.plot(points, out, title=model.name)
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(points, indent=1))
    console.print(f"[green]wrote[/green] {out}")
