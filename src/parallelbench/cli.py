"""The `parallelbench` command. Each area owns its sub-commands; this file only mounts them.

Heavy libraries (torch, transformers, ray, plotting) are imported inside commands,
so `parallelbench --help` stays instant.
"""

from __future__ import annotations

import typer

from parallelbench import __version__
from parallelbench.usage_errors import OneLineErrorsGroup

app = typer.Typer(
    name="parallelbench",
    cls=OneLineErrorsGroup,
    help=(
        "ParallelBench: measure what parallel decoding costs diffusion language models.\n\n"
        "Example: parallelbench run            (the quick sweep on the bundled model, then a report)"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"parallelbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    pass


def _mount() -> None:
    from parallelbench.tasks.cli import app as tasks_app
    from parallelbench.scoring.cli import score
    from parallelbench.theory.cli import app as theory_app
    from parallelbench.runner.cli import results_app, run
    from parallelbench.analysis.cli import leaderboard, report
    from parallelbench.models.tiny.cli import app as tiny_app, train
    from parallelbench.models.medusa.cli import app as medusa_app
    from parallelbench.models.finetune.cli import finetune
    from parallelbench.models.cli import app as models_app
    from parallelbench.integrations.cli import lm_eval_command
    from parallelbench.decoding.cli import strategies

    app.add_typer(tasks_app, name="tasks")
    app.command("score")(score)
    app.add_typer(theory_app, name="theory")
    app.command("run")(run)
    app.command("strategies")(strategies)
    app.add_typer(results_app, name="results")
    app.command("leaderboard")(leaderboard)
    app.command("report")(report)
    app.command("train")(train)
    app.add_typer(tiny_app, name="tiny")
    app.add_typer(medusa_app, name="medusa")
    app.command("finetune")(finetune)
    app.add_typer(models_app, name="models")
    app.command(
        "lm-eval",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
        add_help_option=False,
    )(lm_eval_command)


_mount()


def main() -> None:
    from parallelbench.userimport import drop_implicit_cwd

    drop_implicit_cwd()  # `python -m parallelbench.cli`: user code only through an explicit spec
    app()


if __name__ == "__main__":
    main()
