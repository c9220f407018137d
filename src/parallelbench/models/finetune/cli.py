"""`parallelbench finetune`: fine-tune a dLLM on tasks (LoRA for hf:, full for the tiny models)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from parallelbench.models.finetune.defaults import DEFAULTS, kind_of

console = Console(stderr=True)


def _fail(message: str) -> None:
    console.print(f"[red]error:[/red] {message}", markup=True, highlight=False)
    raise typer.Exit(2)


def _pick(value, key: str, kind: str):
    return DEFAULTS[kind][key] if value is None else value


def finetune(
    model: str = typer.Option(..., "--model", help="tiny, tiny-uniform, tiny:<dir>, tiny-uniform:<dir> or hf:<dLLM>."),
    tasks: str = typer.Option(..., "--tasks", help="Comma-separated task ids or families (e.g. waiting_line/sort)."),
    out: Path = typer.Option(..., "--out", help="Folder for the result (a tiny model folder or a LoRA adapter)."),
    train_samples: Optional[int] = typer.Option(None, "--train-samples", min=1, help="Training samples per task (paper: 20,000; tiny default 2,000)."),
    val_samples: Optional[int] = typer.Option(None, "--val-samples", min=1, help="Validation samples per task (paper: 5,000; tiny default 200)."),
    epochs: Optional[int] = typer.Option(None, "--epochs", min=1, help="Passes over the training set (paper: 10; tiny default 3)."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", min=1, help="Cap on optimiser steps, for quick runs (the schedule spans the capped run)."),
    dump_data: Optional[Path] = typer.Option(None, "--dump-data", help="Also write the training and validation samples here as train.jsonl / val.jsonl."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", min=1, help="Examples per optimiser step (paper: 32; tiny default 64)."),
    grad_accum: int = typer.Option(1, "--grad-accum", min=1, help="Split each batch into this many micro-batches (less memory; the same expected gradient)."),
    lr: Optional[float] = typer.Option(None, "--lr", min=0.0, help="Peak learning rate, AdamW (paper: 1e-5 LoRA; tiny default 3e-4, as the paper's SEDD fine-tuning)."),
    warmup: Optional[float] = typer.Option(None, "--warmup", min=0.0, max=1.0, help="Warm-up share of the steps, then cosine decay (paper: 0.05; tiny 0.25)."),
    rank: Optional[int] = typer.Option(None, "--rank", min=1, help="LoRA rank r (paper: 128; hf: only)."),
    alpha: Optional[int] = typer.Option(None, "--alpha", min=1, help="LoRA alpha (paper: 256; hf: only)."),
    dropout: Optional[float] = typer.Option(None, "--dropout", min=0.0, max=1.0, help="LoRA dropout (paper: 0.05; hf: only)."),
    val_decode: Optional[int] = typer.Option(None, "--val-decode", min=0, help="Validation samples per task decoded one by one after each epoch (hf default 64, tiny 100)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the data splits, their order and the noise."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --out from its last checkpoint (its own options apply)."),
    model_opt: Optional[List[str]] = typer.Option(None, "--model-opt", help="KEY=VALUE loader option of hf: models, e.g. device=cuda."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, help="torch CPU threads."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show the progress bar."),
) -> None:
    """Fine-tune a diffusion LM on tasks: LoRA on query/key/value for hf: dLLMs (the paper's
    LLaDA 1.5 settings by default), a full fine-tune on CPU for the bundled tiny models.

    Example: parallelbench finetune --model tiny --tasks waiting_line/sort --out ft-sort/

    Then: parallelbench run --model tiny:ft-sort/ --tasks waiting_line/sort (an hf: result: --model hf:BASE --model-opt adapter=OUT).

    Data come from the task generators with seeds disjoint from the test samples; the command checks that no test prompt is among them and says so.
    """
    from parallelbench.models.finetune.loop import CheckpointError, FinetuneConfig, load_checkpoint

    kind = kind_of(model)
    if kind is None:
        _fail(f"model {model!r} has no trainable path; finetune trains tiny, tiny-uniform (or tiny:<dir>) "
              "and hf:<dLLM> models, not api:, ideal or py: models")
    options: dict[str, str] = {}
    for item in model_opt or []:
        key, sep, value = item.partition("=")
        if not sep:
            _fail(f"--model-opt {item!r} must look like KEY=VALUE")
        options[key.strip()] = value.strip()
    if kind == "tiny" and options:
        _fail(f"--model-opt is for hf: models; {model} takes none")
    if "adapter" in options:
        _fail("finetune starts from base weights: drop --model-opt adapter=... (each fine-tune is its own adapter)")
    if kind == "tiny" and any(v is not None for v in (rank, alpha, dropout)):
        _fail(f"--rank, --alpha and --dropout set LoRA, which hf: models use; {model} is fine-tuned in full")
    if out.exists() and not out.is_dir():
        _fail(f"--out {out} is a file; give a folder")
    state = None
    if resume:
        try:
            state = load_checkpoint(out)
        except CheckpointError as exc:
            _fail(str(exc))
        saved = state["config"]
        if saved["base"] != model:
            _fail(f"{out} holds a fine-tune of {saved['base']}, not {model}; resume with --model {saved['base']}")
        from parallelbench.tasks import resolve_tasks

        try:
            asked = [t.id for t in resolve_tasks(tasks)]
        except KeyError as exc:
            _fail(str(exc).strip("'\""))
        if asked != saved["tasks"]:
            _fail(f"{out} holds a fine-tune on {','.join(saved['tasks'])}; resume with --tasks {','.join(saved['tasks'])}")
        cfg = FinetuneConfig(**saved)
        cfg.stop_after = None
    else:
        if (out / "finetune.json").exists() or (out / "finetune-checkpoint.pt").exists():
            _fail(f"{out} already holds a fine-tuning run; pass --resume to continue it or choose another --out")
        held = [n for n in ("model.pt", "config.json", "adapter_config.json") if (out / n).exists()]
        if held:
            _fail(f"{out} already holds a model ({held[0]}); choose an empty or new --out")
        from parallelbench.tasks import resolve_tasks

        try:
            task_ids = [t.id for t in resolve_tasks(tasks)]
        except KeyError as exc:
            _fail(str(exc).strip("'\""))
        cfg = FinetuneConfig(
            base=model, tasks=task_ids, train_samples=_pick(train_samples, "train_samples", kind),
            val_samples=_pick(val_samples, "val_samples", kind), epochs=_pick(epochs, "epochs", kind),
            batch_size=_pick(batch_size, "batch_size", kind), lr=_pick(lr, "lr", kind),
            warmup=_pick(warmup, "warmup", kind), max_steps=max_steps, grad_accum=grad_accum,
            rank=_pick(rank, "rank", kind), alpha=_pick(alpha, "alpha", kind), dropout=_pick(dropout, "dropout", kind),
            val_decode=_pick(val_decode, "val_decode", kind), seed=seed, model_options=options,
        )
    from parallelbench.models.finetune.train import FinetuneError, finetune as run_finetune

    try:
        record = run_finetune(cfg, out, state=state, dump_data=dump_data, threads=threads, progress=progress,
                              console=console)
    except FinetuneError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        console.print(f"interrupted; the last checkpoint is in {out}: continue with --resume")
        raise typer.Exit(130)
    if not record.get("complete", True):
        console.print(f"stopped early; continue with: parallelbench finetune --model {cfg.base} --tasks "
                      f"{','.join(cfg.tasks)} --out {out} --resume")
        return
    load = f"--model {cfg.base} --model-opt adapter={out}" if kind == "hf" else f"--model {model.split(':')[0]}:{out}"
    console.print(f"[green]done:[/green] {record['steps']} steps in {record['seconds']:.0f} s; "
                  f"run it with: parallelbench run {load} --tasks {','.join(cfg.tasks)}")
    typer.echo(json.dumps({"out": str(out), "steps": record["steps"], "history": record["history"]}))
