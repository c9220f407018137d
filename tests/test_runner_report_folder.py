"""The report goes beside its database (issue 35 item 4): `--db tour.db` writes `tour-out/`, so a
second database never replaces the main job's `parallelbench-out/`."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from parallelbench.cli import app
from parallelbench.outputs import report_folder

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def test_report_folder_is_named_after_the_database():
    assert report_folder("parallelbench.db") == Path("parallelbench-out")
    assert report_folder("tour.db") == Path("tour-out")
    assert report_folder("results/grid.db") == Path("results/grid-out")
    assert report_folder("plain") == Path("plain-out")


def test_run_and_report_write_beside_their_database(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "parallelbench-out").mkdir()
    (tmp_path / "parallelbench-out" / "report.html").write_text("the main job's report")
    res = runner.invoke(app, ["run", "--model", "ideal", "--tasks", "waiting_line/copy", "--strategy", "confidence-topk",
                              "--k", "2", "--limit", "2", "--db", "tour.db", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "tour-out" / "report.html").is_file()
    assert (tmp_path / "parallelbench-out" / "report.html").read_text() == "the main job's report"
    assert "tour-out" in res.output
    (tmp_path / "sub").mkdir()
    res = runner.invoke(app, ["report", "--db", "tour.db"])
    assert res.exit_code == 0, res.output
    assert "tour-out" in res.output
    res = runner.invoke(app, ["report", "--db", str(tmp_path / "tour.db"), "--out", "elsewhere"])
    assert res.exit_code == 0 and (tmp_path / "elsewhere" / "report.html").is_file(), res.output


def test_readme_tour_says_where_its_report_goes():
    tour = (ROOT / "README.md").read_text(encoding="utf-8").split("## A five-minute tour", 1)[1].split("\n## ", 1)[0]
    assert "tour-out" in tour
    assert not re.search(r"report --db tour\.db --out", tour)  # the default already keeps it apart
