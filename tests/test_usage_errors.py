"""Usage errors are one line on stderr naming what was wrong and where the help is; help stays as it was."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from parallelbench.cli import app


@pytest.mark.parametrize("args, line", [
    (["run", "--bogus"], "error: no such option --bogus (did you mean --out?); see 'parallelbench run --help'"),
    (["results", "--compare", "A"], "error: option '--compare' requires 2 arguments; see 'parallelbench results --help'"),
    (["run", "--model"], "error: option '--model' requires an argument; see 'parallelbench run --help'"),
    (["bogus"], "error: no such command 'bogus'; see 'parallelbench --help'"),
    (["results", "nosuch"], "error: no such command 'nosuch'; see 'parallelbench results --help'"),
    (["--bogus"], "error: no such option --bogus; see 'parallelbench --help'"),
])
def test_usage_error_is_one_line(args: list[str], line: str) -> None:
    result = CliRunner().invoke(app, args, prog_name="parallelbench")
    assert result.exit_code == 2, result.output
    assert result.output.strip() == line, result.output


def test_usage_error_goes_to_stderr_from_the_installed_entry_point() -> None:
    code = "import sys; from parallelbench.cli import main; sys.argv = ['parallelbench', 'run', '--bogus']; main()"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "error: no such option --bogus (did you mean --out?); see 'parallelbench run --help'"]


def test_help_and_bare_groups_still_print_help() -> None:
    runner = CliRunner()
    shown = runner.invoke(app, ["run", "--help"], prog_name="parallelbench")
    assert shown.exit_code == 0 and "Usage: parallelbench run" in shown.output and "error:" not in shown.output
    bare = runner.invoke(app, ["tasks"], prog_name="parallelbench")
    assert "Usage: parallelbench tasks" in bare.output and "error:" not in bare.output
