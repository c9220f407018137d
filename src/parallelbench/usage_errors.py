"""Usage errors (unknown option, missing value, no such command) as one line on stderr.

Typer prints them as a usage line, a hint and a boxed panel; the project's rule is one line that
names what was wrong and how to fix it. Help output and exit codes (2, as Click's) are unchanged.
"""

from __future__ import annotations

import importlib
from typing import Any

import typer
from typer.core import TyperGroup

# Click's exceptions as typer raises them: recent typer vendors its own copy of Click.
click = importlib.import_module(typer.BadParameter.__module__)


def one_line(error: click.ClickException, command: str | None = None) -> str:
    """`error: <what was wrong> (did you mean …?); see '<command> --help'`.

    `command` names the command whose help to point at when Click left the error without a context
    (a missing option value is raised by its parser, before the command's context exists).
    """
    if isinstance(error, click.NoSuchOption):
        what = f"no such option {error.option_name}"
        if error.possibilities:
            what += f" (did you mean {' or '.join(error.possibilities)}?)"
    else:
        what = " ".join(error.format_message().split()).rstrip(".")
        what = what[:1].lower() + what[1:]
    ctx = getattr(error, "ctx", None)
    if isinstance(error, click.UsageError):
        if ctx is not None and ctx.help_option_names:
            command = f"{ctx.command_path} {ctx.help_option_names[0]}"
        elif command is not None:
            command = f"{command} --help"
        if command is not None:
            what += f"; see '{command}'"
    return f"error: {what}"


class OneLineErrorsGroup(TyperGroup):
    """The root group: every parse error below it passes through `make_context` or `invoke` here."""

    def make_context(self, *args: Any, **kwargs: Any) -> typer.Context:
        try:
            return super().make_context(*args, **kwargs)
        except click.ClickException as error:
            _exit_with_one_line(error, self.name)

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as error:
            sub = ctx.invoked_subcommand
            _exit_with_one_line(error, f"{ctx.command_path} {sub}" if sub else ctx.command_path)


def _exit_with_one_line(error: click.ClickException, command: str | None) -> None:
    if isinstance(error, click.NoArgsIsHelpError):
        raise error  # a bare group or command: its help, as before
    typer.echo(one_line(error, command), err=True)
    raise typer.Exit(error.exit_code)
