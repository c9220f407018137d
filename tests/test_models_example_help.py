"""`models example --help` names every family the command writes (lladamoe was missing)."""

from typer.testing import CliRunner

from parallelbench.cli import app
from parallelbench.models.hf.examples import FAMILIES


def test_help_lists_every_family():
    out = " ".join(CliRunner().invoke(app, ["models", "example", "--help"], env={"COLUMNS": "200"}).output.split())
    assert all(family in out for family in FAMILIES), out
