"""`parallelbench strategies`: the registered decoding strategies, their kind and options."""

from __future__ import annotations

import json

import typer


def strategies(
    name: str = typer.Argument(None, help="Show one strategy only."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list of {name, kind, options}."),
) -> None:
    """List every strategy `--strategy` accepts, with its kind and its options' defaults.

    Examples:

      parallelbench strategies

      parallelbench strategies prophet --json
    """
    from parallelbench.decoding.strategy import build_strategy, strategy_names

    names = strategy_names()
    if name is not None:
        if name not in names:
            typer.echo(f"error: unknown strategy {name!r}; valid: {', '.join(names)}", err=True)
            raise typer.Exit(2)
        names = [name]
    rows = []
    for n in names:
        s = build_strategy(n)
        rows.append({"name": n, "kind": s.kind, "options": s.params})
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        opts = ", ".join(f"{k}={v!r}" for k, v in r["options"].items())
        typer.echo(f"{r['name']:{width}s}  {r['kind']:8s}  {opts}")
