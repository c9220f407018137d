"""`parallelbench medusa train`: Medusa-1 heads for a frozen causal LM, on CPU in minutes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

console = Console(stderr=True)

from parallelbench.models.medusa.defaults import DEFAULT_TASKS  # noqa: E402

app = typer.Typer(
    help=(
        "Medusa-style parallel decoding of autoregressive models (the paper's Medusa appendix).\n\n"
        "Example: parallelbench medusa train --model hf:smollm2 --heads 4 --out heads/ --max-steps 100"
    ),
    no_args_is_help=True,
)


def _fail(message: str) -> None:
    console.print(f"[red]error:[/red] {message}", markup=True, highlight=False)
    raise typer.Exit(2)


@app.command("train")
def train(
    model: str = typer.Option(..., "--model", help="A causal LM, hf:<dir-or-id> (e.g. hf:smollm2)."),
    out: Path = typer.Option(..., "--out", help="Folder for the heads (Medusa-1 format: config.json + medusa_lm_head.pt)."),
    heads: int = typer.Option(4, "--heads", min=1, max=16, help="Extra heads; k tokens per step needs k - 1 heads."),
    max_steps: int = typer.Option(200, "--max-steps", min=1, help="Cap on optimiser steps."),
    epochs: int = typer.Option(1, "--epochs", min=1, help="Passes over the training text."),
    samples: int = typer.Option(64, "--samples", min=1, help="Training samples per task (training seeds, never test samples)."),
    distill: int = typer.Option(12, "--distill", min=0, help="Greedy continuations of varied prompts by the backbone itself."),
    tasks: str = typer.Option(",".join(DEFAULT_TASKS),
                              "--tasks", help="Comma-separated task ids whose prompts and answers make the training text."),
    batch_size: int = typer.Option(8, "--batch-size", min=1),
    lr: float = typer.Option(1e-3, "--lr", min=0.0, help="Peak learning rate (AdamW, warm-up then cosine)."),
    seed: int = typer.Option(0, "--seed"),
    model_opt: Optional[List[str]] = typer.Option(None, "--model-opt", help="KEY=VALUE loader option, e.g. device=cpu."),
    force: bool = typer.Option(False, "--force", help="Overwrite heads already in --out."),
) -> None:
    """Train Medusa-1 heads (one residual block per head) on a frozen causal LM.

    Then decode k tokens per step:
    parallelbench run --model hf:smollm2 --model-opt medusa=heads/ --strategy medusa --k 1,2,3
    """
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from parallelbench.models.medusa.train import MedusaTrainConfig, train_heads
    from parallelbench.models.registry import ModelSpecError, load_model
    from parallelbench.tasks import get_task

    if not model.startswith("hf:"):
        _fail(f"model {model!r} has no trainable causal backbone; Medusa heads train on hf:<causal-lm>, e.g. hf:smollm2")
    if (out / "medusa_lm_head.pt").exists() and not force:
        _fail(f"{out} already holds Medusa heads; choose another --out or pass --force to overwrite")
    if out.exists() and not out.is_dir():
        _fail(f"--out {out} is a file; give a folder")
    task_ids = [t.strip() for t in tasks.split(",") if t.strip()]
    for t in task_ids:
        try:
            get_task(t)
        except (KeyError, ValueError) as exc:
            _fail(str(exc).strip("'\""))
    options = {}
    for item in model_opt or []:
        key, sep, value = item.partition("=")
        if not sep:
            _fail(f"--model-opt {item!r} must look like KEY=VALUE")
        options[key.strip()] = value.strip()
    try:
        base = load_model(model, **options)
    except (ModelSpecError, ValueError) as exc:
        _fail(str(exc).splitlines()[0])
    if getattr(base, "kind", None) != "autoregressive":
        _fail(f"model {model!r} is {getattr(base, 'kind', 'unknown')}, not a causal LM; Medusa heads need an autoregressive backbone")
    cfg = MedusaTrainConfig(heads=heads, max_steps=max_steps, epochs=epochs, samples=samples, distill=distill,
                            batch_size=batch_size, lr=lr, seed=seed, tasks=task_ids)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _fail(f"cannot create {out}: {exc.strerror}; choose a writable folder")
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console) as progress:
        try:
            summary = train_heads(base, out, cfg, base_spec=model, log=lambda m: progress.console.print(m),
                                  progress=progress)
        except OSError as exc:
            _fail(f"cannot write heads to {out}: {exc.strerror}; choose a writable folder")
    accs = ", ".join(f"{a:.2f}" for a in summary["head_accuracy"])
    console.print(f"trained {heads} heads in {summary['steps']} steps ({summary['seconds']} s): final loss "
                  f"{summary['loss']:.3f}, top-1 accuracy per head on the last batch {accs}")
    console.print(f"heads saved to {out}; decode with: parallelbench run --model {model} --model-opt medusa={out} "
                  f"--strategy medusa --k 1,2,3")
    typer.echo(json.dumps({"out": str(out), **{k: summary[k] for k in ("steps", "loss", "head_accuracy")}}))
