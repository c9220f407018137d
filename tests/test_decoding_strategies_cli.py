"""`parallelbench strategies` (issue 35 item 11): one line per strategy on what it does, beside its
kind and options' defaults, and the same in `--json`."""

from __future__ import annotations

import json
import textwrap

from typer.testing import CliRunner

from doc_blocks import block
from parallelbench.cli import app
from parallelbench.decoding.strategy import describe, strategy_class, strategy_names

runner = CliRunner()


def test_every_strategy_says_in_one_line_what_it_does():
    for name in strategy_names():
        text = describe(strategy_class(name))
        assert text and "\n" not in text and len(text) <= 100, (name, text)
    assert len({describe(strategy_class(n)) for n in strategy_names()}) == len(strategy_names())  # no copies


def test_the_listing_and_json_carry_the_descriptions():
    res = runner.invoke(app, ["strategies"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    names = strategy_names()
    assert len(lines) == 2 * len(names)
    for name, head, options in zip(names, lines[0::2], lines[1::2]):
        assert head.split()[0] == name and head.rstrip().endswith(describe(strategy_class(name)))
        assert "temperature=" in options and not options.startswith(name)
    rows = json.loads(runner.invoke(app, ["strategies", "--json"]).output)
    assert [r["name"] for r in rows] == names
    assert all(r["description"] == describe(strategy_class(r["name"])) for r in rows)
    assert rows[names.index("confidence-threshold")]["options"]["threshold"] == 0.9


def test_the_docs_show_what_the_command_prints():
    shown = block("strategies.md", "$ parallelbench strategies confidence-threshold", lang="text").splitlines()
    res = runner.invoke(app, shown[0].split()[2:])
    assert res.exit_code == 0 and res.output.splitlines() == shown[1:], res.output


def test_a_class_of_your_own_is_described_by_its_docstring(tmp_path, monkeypatch):
    import sys

    (tmp_path / "pbs_strat.py").write_text(textwrap.dedent('''
        from parallelbench.decoding.presets import ConfidenceTopK


        class Sure(ConfidenceTopK):
            """Commit only what the model is sure of. More prose follows here."""


        class Plain(ConfidenceTopK):
            pass
    '''))
    monkeypatch.chdir(tmp_path)
    try:
        res = runner.invoke(app, ["strategies", "pbs_strat:Sure", "--json"])
        assert res.exit_code == 0, res.output
        assert json.loads(res.output)[0]["description"] == "Commit only what the model is sure of"
        plain = json.loads(runner.invoke(app, ["strategies", "pbs_strat:Plain", "--json"]).output)[0]
        assert plain["description"] == describe(strategy_class("confidence-topk"))  # what it extends says
        missing = runner.invoke(app, ["strategies", "pbs_strat:Nope"])
        assert missing.exit_code == 2 and "has no 'Nope'" in missing.output
    finally:
        sys.modules.pop("pbs_strat", None)
