"""`parallelbench models ...`: inspect model checkpoints (torch and transformers imported inside)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(
    help=(
        "Inspect model checkpoints, or write a small one to try a family on a CPU.\n\n"
        "Example: parallelbench models check hf:GSAI-ML/LLaDA-1.5 ;  "
        "parallelbench models example --family sdar --out sdar-example"
    ),
    no_args_is_help=True,
)


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)  # one line, never wrapped
    raise typer.Exit(2)


@app.command("check")
def check(
    spec: str = typer.Argument(..., metavar="hf:<dir-or-id>", help="A LLaDA / LLaDA 1.5 or Dream / DiffuCoder checkpoint: local folder or hub id."),
    device: str = typer.Option("cpu", "--device", help="cpu, cuda, cuda:1 ..."),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="float32, bfloat16 or float16 (default: the native loader's: float32 on CPU)."),
    canvases: int = typer.Option(3, "--canvases", min=1, help="Random canvases to run (lengths LENGTH, LENGTH-7, ...)."),
    length: int = typer.Option(32, "--length", min=4, help="Length of the longest canvas."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random canvases."),
    revision: Optional[str] = typer.Option(None, "--revision", help="Hub revision."),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code", help="Also run the checkpoint's own modeling code (needs transformers 4.x) and compare logits with it."),
    reference_python: Optional[str] = typer.Option(None, "--reference-python", metavar="PATH", help="Run the checkpoint's own modeling code with this interpreter (a venv with transformers 4.49) and compare logits with it; naming it is the request to run that code."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as one JSON object."),
) -> None:
    """Load a checkpoint natively (never its own code) and report config, parameter count, dtype,
    and the largest logit differences: padded batch vs each canvas alone, and, with
    --reference-python PATH (or --trust-remote-code under transformers 4.x), against the
    checkpoint's own code.

    Examples:

      parallelbench models check hf:GSAI-ML/LLaDA-1.5

      parallelbench models check hf:./checkpoints/dream --canvases 5 --length 64 --json

      # the checkpoint's own code run by a scratch venv with transformers==4.49 (see docs/models.md):
      parallelbench models check hf:GSAI-ML/LLaDA-8B-Instruct --reference-python /tmp/pb-tf449/bin/python
    """
    from parallelbench.models.hf.check import check as run_check
    from parallelbench.models.hf.errors import HFModelError

    if not spec.startswith("hf:") or len(spec) == 3:
        _fail(f"{spec!r} is not an hf: spec; give hf:<folder> or hf:<owner/name>")
    try:
        report = run_check(spec[3:], device=device, dtype=dtype, canvases=canvases, length=length, seed=seed,
                           revision=revision, trust_remote_code=trust_remote_code,
                           reference_python=reference_python)
    except HFModelError as exc:
        _fail(str(exc))
    if as_json:
        from dataclasses import asdict

        typer.echo(json.dumps(asdict(report), default=str))
    else:
        for line in report.lines():
            typer.echo(line)


@app.command("example")
def example(
    family: str = typer.Option(..., "--family", help="llada, dream, sdar, llada2, lladamoe or masked_lm."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder to write (new or empty)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random weights."),
) -> None:
    """Write a small random-weight checkpoint of a family in its hub format (config, safetensors,
    tokenizer), which `hf:DIR` loads and decodes on a CPU in seconds. The answers mean nothing
    (random weights); loading, chat template, mask, caches and strategies run as on the real model.

    Examples:

      parallelbench models example --family sdar --out sdar-example

      parallelbench run --model hf:sdar-example --tasks waiting_line/copy --strategy confidence-topk --k 2 --limit 4 --db example.db
    """
    from parallelbench.models.hf.examples import FAMILIES, write_example
    from parallelbench.outputs import OutputError, check_folder

    if family not in FAMILIES:
        _fail(f"unknown family {family!r}; valid: {', '.join(FAMILIES)}")
    try:
        check_folder(out, "the checkpoint")
    except OutputError as exc:
        _fail(str(exc))
    if out.is_dir() and any(out.iterdir()):
        _fail(f"{out} is not empty; give a new or empty folder for the checkpoint")
    try:
        write_example(out, family, seed=seed)
    except ImportError as exc:
        _fail(f"writing a {family} checkpoint needs the hf extra ({exc}); install it with: pip install 'parallelbench[hf]'")
    except OSError as exc:
        _fail(f"cannot write the checkpoint to {out}: {exc.strerror or exc}")
    files = sorted(p.name for p in out.iterdir())
    size = sum(p.stat().st_size for p in out.iterdir()) / 1e6
    typer.echo(f"wrote a random-weight {family} checkpoint to {out} ({', '.join(files)}; {size:.2f} MB)")
    typer.echo(f"try it: parallelbench run --model hf:{out} --tasks waiting_line/copy --strategy confidence-topk --k 2 "
               "--limit 4 --db example.db")
