"""`parallelbench strategies`: the registered decoding strategies, what each does, its kind and options."""

from __future__ import annotations

import json

import typer


def strategies(
    name: str = typer.Argument(None, help="Show one strategy only (a name, or module:Class for your own)."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list of {name, kind, description, options}."),
) -> None:
    """List every strategy `--strategy` accepts: what it does in one line, its kind (topk: a fixed
    number of tokens per step; adaptive: the strategy decides) and its options' defaults.

    Examples:

      parallelbench strategies

      parallelbench strategies prophet --json
    """
    from parallelbench.decoding.strategy import build_strategy, describe, strategy_names

    names = strategy_names()
    if name is not None:
        if name not in names and ":" not in name:
            typer.echo(f"error: unknown strategy {name!r}; valid: {', '.join(names)}, or module:Class", err=True)
            raise typer.Exit(2)
        names = [name]
    rows = []
    for n in names:
        try:
            s = build_strategy(n)
        except ValueError as exc:  # a module:Class that cannot load, or needs options
            typer.echo(f"error: {' '.join(str(exc).split())}", err=True)
            raise typer.Exit(2)
        common = set(_common_options())
        own = {k: v for k, v in s.params.items() if k not in common}
        rest = {k: v for k, v in s.params.items() if k in common}
        rows.append({"name": n, "kind": s.kind, "description": describe(type(s)), "options": {**own, **rest}})
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        opts = ", ".join(f"{k}={v!r}" for k, v in r["options"].items())
        typer.echo(f"{r['name']:{width}s}  {r['kind']:8s}  {r['description']}")
        typer.echo(f"{'':{width}s}  {'':8s}  {opts}")


def _common_options() -> list[str]:
    """Options every strategy has (temperature, block_length, stop_at_eos): listed after its own."""
    import dataclasses

    from parallelbench.decoding.strategy import DecodeOptions

    return [f.name for f in dataclasses.fields(DecodeOptions)]
