"""`parallelbench theory table | simulate`: the paper's Table 1 as numbers, and its check."""

from __future__ import annotations

import json
import math
from typing import List, Optional

import typer

app = typer.Typer(
    help=(
        "The paper's closed forms (section 4, Table 1) and ideal-model simulations.\n\n"
        "Example: parallelbench theory table --n 3..10"
    ),
    no_args_is_help=True,
)

STRATEGY_HINT = "random, confidence-topk or confidence-threshold (any engine preset runs; those three have closed forms)"


def parse_ns(text: str) -> list[int]:
    """'3..10' -> 3..10 inclusive; '3,4,5' -> [3, 4, 5]; '6' -> [6]."""
    text = text.strip()
    try:
        if ".." in text:
            lo, hi = (int(p) for p in text.split("..", 1))
            ns = list(range(lo, hi + 1))
        else:
            ns = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a range like 3..10 or a list like 3,4,5") from None
    if not ns:
        raise typer.BadParameter(f"{text!r} names no list length; use a range like 3..10 (low <= high)")
    if min(ns) < 2:
        raise typer.BadParameter(f"list lengths must be >= 2, got {min(ns)} in {text!r}")
    return ns


def _fmt(x: float | None, digits: int = 4) -> str:
    if x is None:
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x:.{digits}f}"


def table_rows(ns: list[int], threshold: float) -> list[dict]:
    from parallelbench.theory import closed_forms as cf

    rows = []
    for task in cf.TASKS:
        for n in ns:
            row = {
                "task": task,
                "n": n,
                "total_correlation": cf.total_correlation(task, n),
                "total_correlation_limit": cf.total_correlation_limit(task),
                "greedy_topk_k1": cf.accuracy(task, n, "random", k=1),
                "greedy_topk_k2": cf.accuracy(task, n, "random", k=2),
                "greedy_topk_kn": cf.accuracy(task, n, "random", k=n),
                "sampling_one_step": cf.accuracy(task, n, "random", k=n, temperature=1.0),
                "threshold": threshold,
                "greedy_threshold": cf.accuracy(task, n, "confidence-threshold", threshold=threshold),
                "threshold_condition": {
                    "copy": "any γ",
                    "replace_index": "any γ",
                    "replace_random": f"γ ≥ {(n - 1) / n:.3f}",
                    "shuffle": "γ ≥ 0.5",
                }[cf.list_twin(task)],
                "shuffle_l_two_per_step": cf.shuffle_lt(cf.step_sizes(n, 2)) if cf.list_twin(task) == "shuffle" else None,
            }
            rows.append(row)
    return rows


def _json_safe(value):
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return value


@app.command("table")
def table(
    n: str = typer.Option("3..10", "--n", help="List lengths: a range 3..10 or a list 3,4,5."),
    threshold: float = typer.Option(0.9, "--threshold", help="Confidence threshold gamma for the threshold column."),
    as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON rows instead of a table."),
) -> None:
    """Print Table 1 numerically: C(Y|X), its limit, greedy top-k and threshold accuracies.

    Example: parallelbench theory table --n 3..10 --threshold 0.9
    """
    ns = parse_ns(n)
    if not 0 < threshold < 1:
        raise typer.BadParameter(f"threshold must lie in (0, 1), got {threshold}", param_hint="--threshold")
    rows = table_rows(ns, threshold)
    if as_json:
        typer.echo(json.dumps([{k: _json_safe(v) for k, v in r.items()} for r in rows], indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    from parallelbench.analysis.terminal import dropped_line, fit_columns, print_line, print_table

    short = {"copy": "copy", "replace_index": "rep-index", "replace_random": "rep-random", "shuffle": "shuffle",
             "json_fields": "json-fields", "json_any_order": "json-any", "tool_call": "tool-call"}
    data = Table(title="Table 1, data perspective: C(Y|X) in bits")
    for col in ("task", "n", "C(Y|X)", "lim n→∞", "L_T, 2 per step"):
        data.add_column(col, justify="left" if col == "task" else "right", no_wrap=col != "L_T, 2 per step")
    # (header, row key): accuracies; the `= 1 iff` condition is text
    values = [("top-k\nk=1", "greedy_topk_k1"), ("k=2", "greedy_topk_k2"), ("k=n", "greedy_topk_kn"),
              ("τ=1\nk=n", "sampling_one_step"), ("thr.\nγ", "greedy_threshold"), ("= 1 iff", "threshold_condition")]

    def decoding(columns) -> Table:
        strat = Table(title=f"Table 1, decoding perspective: ideal-model accuracy (γ = {threshold:g})")
        for col in ("task", "n", *(header for header, _ in columns)):
            strat.add_column(col, justify="left" if col in ("task", "= 1 iff") else "right", no_wrap=True)
        for r in rows:
            strat.add_row(short[r["task"]], str(r["n"]), *(
                r[key] if key == "threshold_condition" else _fmt(r[key], 3) for _, key in columns))
        return strat

    for r in rows:
        data.add_row(short[r["task"]], str(r["n"]), _fmt(r["total_correlation"]), _fmt(r["total_correlation_limit"]),
                     _fmt(r["shuffle_l_two_per_step"]))
    console = Console()
    print_table(console, data)
    strat, dropped = fit_columns(console, lambda kept: decoding(values[:1] + kept), values[1:])
    print_table(console, strat)
    if dropped:
        print_line(console, dropped_line([h.replace("\n", " ") for h, _ in dropped], "theory table") +
                   "; --json gives every column", "yellow")
    console.print("top-k: random or confidence top-k, greedy (ties broken by the unbiased model's noise); "
                  "τ=1 k=n: one-step temperature sampling; threshold: greedy confidence threshold. "
                  "Structured tasks: n = fields, one token per field, punctuation given "
                  "(json-any = shuffle; json-fields and tool-call = copy).")


def _confidence_level_hit(task: str, n: int, gamma: float | None) -> str | None:
    """A note when γ is on, or within 1e-6 of, one of the task's exact confidence levels.

    Thresholds are strict and the ideal model decides on its noise-free confidence (exact
    fractions in float64), so a confidence equal to γ does not commit and one a float step
    above it does, in simulation as in the closed form.
    """
    if gamma is None:
        return None
    from parallelbench.theory.closed_forms import list_twin

    levels = {"shuffle": [(1, m) for m in range(2, n + 1)], "replace_random": [(m - 1, m) for m in range(2, n + 1)]}
    for num, den in levels.get(list_twin(task), []):
        level = num / den
        if gamma == level:
            return (f"threshold {_number(gamma)} equals the confidence level {num}/{den} of {task}; thresholds are "
                    "strict, so positions at exactly that (noise-free) confidence do not commit, in the simulation "
                    "as in the closed form.")
        if abs(gamma - level) < 1e-6:
            side = "below" if gamma < level else "above"
            what = "commit" if gamma < level else "do not commit"
            return (f"threshold {_number(gamma)} is {abs(gamma - level):.1e} {side} the confidence level {num}/{den} "
                    f"of {task}; positions at that level {what}, in the simulation as in the closed form.")
    return None


def _number(value: float) -> str:
    """`0.5`, or every digit when the short form would hide a difference (0.49999999999999994)."""
    short = f"{value:g}"
    return short if float(short) == value else repr(float(value))


@app.command("simulate")
def simulate_cmd(
    task: str = typer.Option("shuffle", "--task", help="copy, replace_index, replace_random, shuffle, or a structured task: json_fields, json_any_order, tool_call."),
    n: int = typer.Option(6, "--n", help="List length, or number of fields (shuffle and json_any_order: at most 9)."),
    strategy: str = typer.Option("confidence-topk", "--strategy", help=f"Decoding preset: {STRATEGY_HINT}."),
    k: Optional[int] = typer.Option(None, "--k", help="Tokens per step for top-k strategies."),
    threshold: Optional[float] = typer.Option(None, "--threshold", help="Confidence threshold gamma."),
    temperature: float = typer.Option(0.0, "--temperature", help="0 = greedy (with tie-breaking noise), 1 = sampling."),
    samples: int = typer.Option(20000, "--samples", help="Number of decoded samples."),
    seed: int = typer.Option(0, "--seed", help="Random seed."),
    noise_std: Optional[float] = typer.Option(None, "--noise-std", help="Logit noise std (default: 1e-3 if greedy, else 0)."),
    no_formatting: bool = typer.Option(False, "--no-formatting", help="Decode the items alone, without pre-filled brackets and commas."),
    param: List[str] = typer.Option([], "--param", help="Any other strategy option as NAME=VALUE (repeatable), e.g. --param edit_threshold=0.1 --param min_k=2."),
    block_causal: Optional[bool] = typer.Option(None, "--block-causal/--canvas", help="Decode through the ideal model's block-causal face (one block over the answer); default: only strategies that run on block-causal nets alone."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON object (measured, stderr, analytic, ...)."),
) -> None:
    """Decode a synthetic task with the ideal model; print measured accuracy beside the analytic value.
    A strategy that can change a written token also prints how much it repaired: accuracy when the
    last original mask was filled, rows repaired and broken, mean edits (docs/theory.md).

    Structured tasks are decoded at field level (one token per field, punctuation given):
    json_any_order is then shuffle, json_fields and tool_call are exact at any k.

    Example: parallelbench theory simulate --task shuffle --n 6 --strategy confidence-topk --k 2 --samples 20000
    Example: parallelbench theory simulate --task json_any_order --n 6 --strategy random --k 2

    Example: parallelbench theory simulate --task shuffle --n 3 --strategy edit-threshold --threshold 1 --param min_k=2 --param edit_threshold=0.1
    """
    from parallelbench.theory.closed_forms import TASKS

    if task not in TASKS:
        raise typer.BadParameter(f"unknown task {task!r}; choose one of {', '.join(TASKS)}", param_hint="--task")
    if n < 2:
        raise typer.BadParameter(f"n must be >= 2, got {n}", param_hint="--n")
    if task in ("shuffle", "json_any_order") and n > 9:
        raise typer.BadParameter(f"shuffle with n={n} has {math.factorial(n):,} answers; use n <= 9", param_hint="--n")
    if samples < 1:
        raise typer.BadParameter(f"samples must be >= 1, got {samples}", param_hint="--samples")
    if strategy in ("random", "confidence-topk") and k is None:
        raise typer.BadParameter(f"strategy {strategy!r} needs --k (tokens per step), e.g. --k 2", param_hint="--k")
    if strategy == "confidence-threshold" and threshold is None:
        raise typer.BadParameter("strategy 'confidence-threshold' needs --threshold, e.g. --threshold 0.9", param_hint="--threshold")
    params: dict = {"temperature": temperature}
    if k is not None:
        params["k"] = k
    if threshold is not None:
        params["threshold"] = threshold
    for item in param:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise typer.BadParameter(f"{item!r} is not NAME=VALUE, e.g. --param edit_threshold=0.1", param_hint="--param")
        params[name.strip()] = value.strip()
    from parallelbench.theory.simulate import simulate

    try:
        from parallelbench.decoding import strategy_names

        if ":" not in strategy and strategy not in strategy_names():
            raise typer.BadParameter(
                f"unknown strategy {strategy!r}; choose one of {', '.join(strategy_names())}", param_hint="--strategy"
            )
        result = simulate(
            task, n, strategy, samples=samples, seed=seed, noise_std=noise_std,
            formatting=not no_formatting, block_causal=block_causal, **params,
        )
    except (ValueError, TypeError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    hit = _confidence_level_hit(task, n, threshold)
    if hit is not None:
        typer.echo(f"note: {hit}", err=True)
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2))
        return
    label = ", ".join(f"{key}={_number(value) if isinstance(value, float) else value}" for key, value in params.items())
    z = result.z_score
    typer.echo(f"{task} n={n}, {strategy} [{label}], N={samples}, mean NFE {result.mean_nfe:.2f}")
    typer.echo(f"measured {result.measured:.4f} ± {result.stderr:.4f} (standard error)")
    if result.analytic is None:
        typer.echo("analytic none derived for this strategy and options")
    else:
        typer.echo(f"analytic {result.analytic:.4f} (z = {z:+.2f})")
    if result.extra.get("recorded"):
        x = result.extra
        typer.echo(f"at unmasking {x['unmask_accuracy']:.4f} ± {x['unmask_stderr']:.4f}; repaired {x['repaired']:.4f}, "
                   f"broken {x['broken']:.4f} of the samples; mean edits {x['mean_edits']:.2f}")
