"""`parallelbench lm-eval [lm-eval arguments...]`: lm-eval's own command line with our model registered."""

from __future__ import annotations

import sys

import typer

HELP = """Run lm-evaluation-harness with the `parallelbench` model registered; every argument goes to lm-eval.

Example: parallelbench lm-eval --model parallelbench --model_args model=tiny,strategy=confidence-topk,k=2 --include_path pb_tasks --tasks parallelbench_waiting_line_copy --limit 20

Model arguments: model, strategy and its options (k, threshold, block_length, temperature...),
gen_length, seed, batch_size, mc_samples, stats_path. Tasks whose data come from a hub need the
network; tasks exported with `parallelbench tasks export --format lm-eval` run offline.
`--tasks my_tasks:make_tasks` (module:NAME) runs tasks of your own module: they are exported
to a temporary folder that is added with --include_path.
lm-eval's own options follow."""


def lm_eval_command(ctx: typer.Context) -> None:
    """Run lm-evaluation-harness with the parallelbench model registered (all arguments go to lm-eval).

    Example: parallelbench lm-eval --model parallelbench --model_args model=tiny,strategy=confidence-topk,k=2 --tasks parallelbench_waiting_line_copy --include_path pb_tasks --limit 20
    """
    args = list(ctx.args)
    try:
        import lm_eval.__main__ as lm_main
    except ImportError:
        typer.echo("error: lm-eval is not installed; install it with: pip install 'parallelbench[lmeval]'", err=True)
        raise typer.Exit(2)
    from parallelbench.integrations.lm_eval import ParallelBenchLMError  # registers the model
    from parallelbench.models.registry import ModelSpecError

    if not args or args[0] in ("-h", "--help"):
        typer.echo(HELP)
        args = ["run", "--help"]
    import tempfile

    from parallelbench.integrations.lm_eval_command import check_include_path, missing_tasks_line
    from parallelbench.integrations.lm_eval_user import with_user_tasks
    from parallelbench.tasks import TaskSourceError

    wrong = check_include_path(args)
    if wrong:
        typer.echo(f"error: {wrong}", err=True)
        raise typer.Exit(2)
    saved = sys.argv
    folder = tempfile.TemporaryDirectory(prefix="parallelbench-lm-eval-")
    try:
        sys.argv = ["lm-eval", *with_user_tasks(args, folder.name)]
        lm_main.cli_evaluate()
    except TaskSourceError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    except (ParallelBenchLMError, ModelSpecError, NotImplementedError) as exc:
        typer.echo(f"error: {' '.join(str(exc).split())}", err=True)
        raise typer.Exit(2)
    except ValueError as exc:  # lm-eval's "Tasks not found: X": where it looked and what is there
        line = missing_tasks_line(str(exc), args)
        if line is None:
            raise
        typer.echo(f"error: {line}", err=True)
        raise typer.Exit(2)
    except SystemExit as exc:
        raise typer.Exit(exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1))
    finally:
        sys.argv = saved
        folder.cleanup()
