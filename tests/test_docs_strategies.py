"""docs/strategies.md "Adding a strategy": the class and the loop it documents, run as written.

Assertions marked PROV need the runner change of the "prov" branch: the source of a
`module:Class` strategy is part of each row's provenance, so a rerun after editing the class
decodes it again and `results --all-versions` shows both versions.
"""

from __future__ import annotations

import re
import sqlite3
import sys

import pytest
from typer.testing import CliRunner

from doc_blocks import block
from parallelbench.cli import app

MODULE = block("strategies.md", "# my_module.py")
LOOP = ["--strategy", "my_module:RelativeConfidence", "--param", "ratio=0.5,0.8,0.95", "--baselines",
        "--tasks", "waiting_line/copy,waiting_line/shuffle", "--limit", "4"]
runner = CliRunner()


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    (tmp_path / "my_module.py").write_text(MODULE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("my_module", None)
    yield tmp_path
    sys.modules.pop("my_module", None)


def cli(*args):
    return runner.invoke(app, list(args))


def version_tables(output: str) -> dict[str, str]:
    """`results --all-versions` output as {"v:1a2b3c4d": the table under its title "ideal v:1a2b3c4d: ..."}."""
    parts = re.split(r"^ideal (v:[0-9a-f]{8}): .*$", output, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def configs(db) -> dict[str, int]:
    with sqlite3.connect(db) as con:
        return dict(con.execute("SELECT config, COUNT(*) FROM results GROUP BY config").fetchall())


def test_the_class_focuses_on_candidates_and_decodes_as_with_focus_all(workdir):
    from parallelbench.decoding import build_strategy, decode
    from parallelbench.models import load_model

    s = build_strategy("my_module:RelativeConfidence", ratio=0.6)
    assert type(s).focus == "candidates" and s.kind == "adaptive"
    everywhere = build_strategy("my_module:RelativeConfidence", ratio=0.6)
    everywhere.focus = "all"
    model = load_model("tiny")
    from parallelbench.tasks import get_task

    prompts = [model.tokenizer.encode_chat(x.messages) for x in get_task("waiting_line/copy").samples(3)]
    a = decode(model.net, prompts, gen_length=32, strategy=s, seed=0)
    b = decode(model.net, prompts, gen_length=32, strategy=everywhere, seed=0)
    assert [r.tokens for r in a] == [r.tokens for r in b] and [r.nfe for r in a] == [r.nfe for r in b]


def test_the_documented_loop_sweeps_compares_and_reruns(workdir):
    result = cli("run", "--model", "ideal", *LOOP, "--db", "mine.db", "--out", "out", "--no-progress")
    assert result.exit_code == 0, result.output
    got = configs(workdir / "mine.db")
    mine = {"my_module:RelativeConfidence[ratio=0.5]", "my_module:RelativeConfidence",
            "my_module:RelativeConfidence[ratio=0.95]"}
    assert mine <= set(got) and all(got[c] == 8 for c in mine)  # 2 tasks x 4 samples each
    assert {"confidence-topk[k=1]", "confidence-threshold[threshold=0.9]"} <= set(got)  # --baselines
    board = cli("leaderboard", "--db", "mine.db")
    assert board.exit_code == 0 and "my_module:RelativeConfidence" in board.output.replace("\n", ""), board.output
    summary = runner.invoke(app, ["results", "--db", "mine.db"], env={"COLUMNS": "400"})
    assert summary.exit_code == 0 and "my_module:RelativeConfidence[ratio=0.5]" in summary.output
    assert "my_module:RelativeConfidence" in (workdir / "out" / "report.html").read_text(encoding="utf-8")
    bad = cli("run", "--model", "ideal", "--strategy", "my_module:RelativeConfidence", "--param", "ratoi=0.5",
              "--db", "bad.db")
    assert bad.exit_code == 2 and "has no parameter 'ratoi'; its parameters:" in bad.output
    assert len(bad.output.strip().splitlines()) == 1 and not (workdir / "bad.db").exists()

    # the same command again: everything is reused
    again = cli("run", "--model", "ideal", *LOOP, "--db", "mine.db", "--no-report", "--no-progress")
    assert again.exit_code == 0, again.output
    assert configs(workdir / "mine.db") == got

    # edit the class, run again: only its configs decode again; the old rows stay
    path = workdir / "my_module.py"
    path.write_text(path.read_text().replace("(scores >= self.options.ratio * best)", "(scores > self.options.ratio * best)"))
    sys.modules.pop("my_module", None)  # a new process would import the edited file
    edited = cli("run", "--model", "ideal", *LOOP, "--db", "mine.db", "--no-report", "--no-progress")
    assert edited.exit_code == 0, edited.output
    after = configs(workdir / "mine.db")
    assert all(after[c] == got[c] for c in got if c not in mine)  # the baselines are reused
    assert all(after[c] == 2 * got[c] for c in mine)  # PROV: 3 configs x 2 tasks x 4 samples again, old rows kept
    versions = runner.invoke(app, ["results", "--db", "mine.db", "--all-versions"], env={"COLUMNS": "400"})
    assert versions.exit_code == 0, versions.output
    tables = version_tables(versions.output)
    mine_in = {v for v, table in tables.items() if "my_module:RelativeConfidence[ratio=0.5]" in table}
    assert len(mine_in) == 2, versions.output  # PROV: the class before and after the edit, one table each
    assert all(f"\n{v} = " in versions.output for v in tables), versions.output  # one legend line per version
