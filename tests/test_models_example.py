"""`parallelbench models example` (issue 35 item 10): a small random-weight checkpoint of each `hf:`
family in its hub format, which `hf:DIR` loads and decodes on a CPU; docs/models.md's three-line
tour for each family runs as written."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from parallelbench.cli import app  # noqa: E402
from parallelbench.models.hf.examples import FAMILIES  # noqa: E402

DOC = (Path(__file__).resolve().parents[1] / "docs" / "models.md").read_text(encoding="utf-8")
runner = CliRunner()


def _tour(family: str) -> list[str]:
    """The family's three commands in docs/models.md, comments left out."""
    found = re.search(rf"```bash\n(parallelbench models example --family {family} .*?)```", DOC, re.S)
    assert found, f"docs/models.md has no tour for {family}"
    return [line.split("#")[0].strip() for line in found.group(1).splitlines() if line.split("#")[0].strip()]


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_writes_a_hub_checkpoint_that_loads_and_decodes(tmp_path, family):
    from parallelbench.models import load_model
    from parallelbench.tasks import get_task

    out = tmp_path / f"{family}-example"
    res = runner.invoke(app, ["models", "example", "--family", family, "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert f"wrote a random-weight {family} checkpoint to {out}" in res.output
    names = {p.name for p in out.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer_config.json"} <= names and "tokenizer.json" in names
    assert not any(n.endswith(".py") for n in names)  # hub format, and no code of its own to run
    model = load_model(f"hf:{out}", device="cpu")
    from parallelbench.decoding import build_strategy

    samples = get_task("waiting_line/copy").samples(2)
    gens = model.generate(samples, build_strategy("confidence-topk", k=2), max_new_tokens=8, seed=0)
    assert len(gens) == 2 and all(g.num_tokens == 8 and g.nfe >= 4 for g in gens)  # at most 2 per step
    if family not in ("sdar", "llada2"):  # block-causal families also decode their last block's extra slots
        assert all(g.nfe == 4 for g in gens)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_docs_tour_of_each_family_runs_as_written(tmp_path, monkeypatch, family):
    monkeypatch.chdir(tmp_path)
    commands = _tour(family)
    assert len(commands) == 3 and commands[1].startswith(f"parallelbench run --model hf:{family}-example")
    for command in commands:
        res = runner.invoke(app, shlex.split(command)[1:] + (["--no-progress"] if " run " in f" {command} " else []))
        assert res.exit_code == 0, (command, res.output)
    # the results table: its title, the config's row with a whole cell (score ± half-width · tokens per step)
    assert re.search(rf"^hf:{family}-example: 4 samples per cell, 4 rows$", res.output, re.M), res.output
    assert re.search(r"│ confidence-topk\[k=2\] +│ +[01]\.\d\d ± 0\.\d\d · \d+\.\d \(\d+\.\d\) │", res.output), res.output


def test_bad_family_and_busy_folder_are_one_line(tmp_path):
    res = runner.invoke(app, ["models", "example", "--family", "gpt", "--out", str(tmp_path / "x")])
    assert res.exit_code == 2
    assert res.output.strip() == "error: unknown family 'gpt'; valid: llada, dream, sdar, llada2, lladamoe, masked_lm"
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    res = runner.invoke(app, ["models", "example", "--family", "llada", "--out", str(tmp_path / "busy")])
    assert res.exit_code == 2 and "is not empty" in res.output and len(res.output.strip().splitlines()) == 1
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"
