"""The two worked examples of docs/models.md ("Your own model"), executed from the page itself.

Assertions marked PROV need the runner change of the "prov" branch (issue 28 item 3): a `py:`
factory's declared options are its keyword parameters (unknown ones fail in one line before
loading) and its model's `name` is the `model` column of its rows, the spec recorded beside it.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from doc_blocks import block
from parallelbench.cli import app

torch = pytest.importorskip("torch")
DLLM = block("models.md", "# my_dllm.py")
AR = block("models.md", "# my_ar.py")
runner = CliRunner()


@pytest.fixture
def examples(tmp_path, monkeypatch):
    """my_dllm.py and my_ar.py in the current directory, as a reader would save them."""
    (tmp_path / "my_dllm.py").write_text(DLLM, encoding="utf-8")
    (tmp_path / "my_ar.py").write_text(AR, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for name in ("my_dllm", "my_ar"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield tmp_path
    for name in ("my_dllm", "my_ar"):
        sys.modules.pop(name, None)


def samples(n=3):
    from parallelbench.tasks import get_task

    return get_task("waiting_line/copy").samples(n)


def rows(db: Path) -> list[dict]:
    with sqlite3.connect(db) as con:
        con.row_factory = sqlite3.Row
        return [dict(r) for r in con.execute("SELECT * FROM results ORDER BY sample_id")]


def run(*args: str):
    return runner.invoke(app, ["run", *args, "--no-report", "--no-progress"])


def test_masked_diffusion_example_loads_and_decodes_batch_invariantly(examples):
    from parallelbench.models import load_model
    from parallelbench.models.protocols import MaskedDiffusionModel

    model = load_model("py:my_dllm:make", batch_size=3)
    assert model.kind == "diffusion" and model.name == "my-dllm"
    assert isinstance(model.net, MaskedDiffusionModel)
    assert set(model.versions()) >= {"my_dllm.weights", "my_dllm.code"}
    batch = samples(3)
    assert len({len(model.tokenizer.encode_chat(s.messages)) for s in batch}) > 1  # really left-padded
    together = model.generate(batch, "confidence-topk", max_new_tokens=8, seed=0)
    alone = [model.generate([s], "confidence-topk", max_new_tokens=8, seed=i)[0] for i, s in enumerate(batch)]
    assert [g.token_texts for g in together] == [g.token_texts for g in alone]
    assert [g.order for g in together] == [g.order for g in alone]
    assert all(g.nfe == 8 for g in together)  # k = 1: one position per model call
    other = load_model("py:my_dllm:make", seed=1)
    assert other.versions()["my_dllm.weights"] != model.versions()["my_dllm.weights"]


def test_masked_diffusion_example_runs_and_new_weights_decode_again(examples):
    result = run("--model", "py:my_dllm:make", "--tasks", "waiting_line/copy", "--strategy", "confidence-topk",
                 "--k", "2,4", "--limit", "2", "--db", "r.db")
    assert result.exit_code == 0, result.output
    first = rows(examples / "r.db")
    assert len(first) == 4 and {r["model_kind"] for r in first} == {"diffusion"}
    again = run("--model", "py:my_dllm:make", "--tasks", "waiting_line/copy", "--strategy", "confidence-topk",
                "--k", "2,4", "--limit", "2", "--db", "r.db")
    assert again.exit_code == 0 and len(rows(examples / "r.db")) == 4  # reused: same weights
    import my_dllm

    with torch.random.fork_rng():
        torch.manual_seed(5)
        torch.save(my_dllm.TinyDenoiser(my_dllm.ByteTokenizer.vocab_size).state_dict(), examples / "my.pt")
    retrained = run("--model", "py:my_dllm:make", "--model-opt", "weights=my.pt", "--tasks", "waiting_line/copy",
                    "--strategy", "confidence-topk", "--k", "2,4", "--limit", "2", "--db", "r.db")
    assert retrained.exit_code == 0, retrained.output
    stored = rows(examples / "r.db")
    assert len(stored) == 8  # new weights: decoded again, the old rows kept
    hashes = {json.loads(r["versions"])["model"]["my_dllm.weights"] for r in stored}
    assert len(hashes) == 2


def test_rows_carry_the_factory_name_and_the_spec_beside(examples):
    """PROV: the row's model column is the name the factory's model reports."""
    result = run("--model", "py:my_dllm:make", "--tasks", "waiting_line/copy", "--strategy", "confidence-topk",
                 "--k", "4", "--limit", "1", "--db", "r.db")
    assert result.exit_code == 0, result.output
    (row,) = rows(examples / "r.db")
    assert row["model"] == "my-dllm"  # PROV
    assert json.loads(row["versions"])["model_spec"] == "py:my_dllm:make"  # PROV


def test_unknown_options_fail_in_one_line_before_loading(examples):
    result = run("--model", "py:my_dllm:make", "--model-opt", "colour=red", "--tasks", "waiting_line/copy",
                 "--strategy", "confidence-topk", "--k", "1", "--limit", "1", "--db", "r.db")
    assert result.exit_code == 2, result.output
    assert "colour" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert "valid: batch_size, device, seed, weights" in result.output  # PROV
    assert not (examples / "r.db").exists()


def test_option_values_that_do_not_fit_the_type_hints_fail_as_the_page_shows(examples):
    page = (Path(__file__).resolve().parents[1] / "docs" / "models.md").read_text(encoding="utf-8")
    result = run("--model", "py:my_dllm:make", "--model-opt", "batch_size=many", "--tasks", "waiting_line/copy",
                 "--strategy", "confidence-topk", "--k", "1", "--limit", "1", "--db", "r.db")
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    line = result.output.strip()
    assert line in page, line
    assert not (examples / "r.db").exists()


def test_autoregressive_example_loads_runs_and_serves_as_a_verifier(examples):
    from parallelbench.models import load_model
    from parallelbench.models.protocols import CausalModel

    model = load_model("py:my_ar:make")
    assert model.kind == "autoregressive" and model.name == "my-ar" and isinstance(model, CausalModel)
    gens = model.generate(samples(2), None, max_new_tokens=6)
    assert all(g.nfe == g.num_tokens == len(g.tokens_per_step) and 1 <= g.nfe <= 6 for g in gens)
    with pytest.raises(ValueError, match="autoregressive"):
        model.generate(samples(1), "confidence-topk", max_new_tokens=4)
    # next-token logits of a left-padded batch equal each row alone
    ids = [model.tokenizer.encode_chat(s.messages)[:40] for s in samples(2)]
    ids[1] = ids[1][:25]
    batch = torch.full((2, 40), model.tokenizer.pad_id)
    mask = torch.zeros((2, 40), dtype=torch.bool)
    for i, row in enumerate(ids):
        batch[i, 40 - len(row):] = torch.tensor(row)
        mask[i, 40 - len(row):] = True
    logits = model.forward(batch, attention_mask=mask)
    alone = model.forward(torch.tensor([ids[1]]))
    assert torch.allclose(logits[1, 15:], alone[0], atol=1e-5)
    result = run("--model", "py:my_ar:make", "--tasks", "waiting_line/copy", "--limit", "2", "--db", "r.db")
    assert result.exit_code == 0, result.output
    got = rows(examples / "r.db")
    assert len(got) == 2 and {r["strategy"] for r in got} == {"autoregressive"}
    assert all(r["nfe"] == r["num_tokens"] for r in got)
    assert {r["model"] for r in got} == {"my-ar"}  # PROV
