"""Inputs a model cannot take reach the user as one line naming the model and the task (issue 35
item 12): a masked LM's prompt longer than its positions, a block length its blocks do not divide,
in `run` and in `parallelbench lm-eval`; never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("transformers")

from parallelbench.cli import app  # noqa: E402
from parallelbench.models.hf.examples import write_example, write_masked_lm  # noqa: E402

runner = CliRunner()


@pytest.fixture(scope="module")
def short_bert(tmp_path_factory) -> Path:
    """A BERT masked LM with 64 positions: a Waiting Line prompt and its answer do not fit."""
    return write_masked_lm(tmp_path_factory.mktemp("bert") / "bert64", max_position_embeddings=64)


def test_a_masked_lm_prompt_longer_than_its_positions_is_one_line_naming_model_and_task(tmp_path, monkeypatch, short_bert):
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["run", "--model", f"hf:{short_bert}", "--tasks", "waiting_line/copy", "--strategy",
                              "confidence-topk", "--k", "4", "--limit", "2", "--db", "r.db", "--no-progress"])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    (line,) = [x for x in res.output.splitlines() if x.startswith("skipped")]
    assert line.startswith(f"skipped waiting_line/copy for hf:{short_bert}: a prompt plus its answer region is ")
    assert "more than the model's 64 positions (max_position_embeddings)" in line
    assert not (tmp_path / "r.db").exists()


def test_the_other_tasks_of_the_run_go_on(tmp_path, monkeypatch):
    """A task that does not fit is skipped; a task that fits runs (BERT with 184 positions: copy needs 183, sudoku 185)."""
    monkeypatch.chdir(tmp_path)
    bert = write_masked_lm(tmp_path / "bert184", max_position_embeddings=184)
    res = runner.invoke(app, ["run", "--model", f"hf:{bert}", "--tasks", "puzzle/sudoku,waiting_line/copy",
                              "--strategy", "confidence-topk", "--k", "8", "--limit", "1", "--db", "r.db",
                              "--no-progress", "--no-report"])
    skipped = [x for x in res.output.splitlines() if x.startswith("skipped")]
    assert res.exit_code == 0 and len(skipped) == 1 and skipped[0].startswith("skipped puzzle/sudoku") and "184 positions" in skipped[0], res.output


def test_lm_eval_stops_with_one_line_naming_model_and_task(short_bert):
    pytest.importorskip("lm_eval")
    from lm_eval.api.instance import Instance

    from parallelbench.integrations.lm_eval import ParallelBenchLM, ParallelBenchLMError
    from parallelbench.integrations.lm_eval_tasks import doc_of
    from parallelbench.tasks import get_task

    lm = ParallelBenchLM(model=f"hf:{short_bert}", strategy="confidence-topk", k=4, device="cpu")
    doc = doc_of(get_task("waiting_line/copy").samples(1)[0])
    req = Instance(request_type="generate_until", doc=doc, arguments=(doc["text"], {"until": [], "max_gen_toks": 32}),
                   idx=0)
    req.task_name = "parallelbench_waiting_line_copy"
    with pytest.raises(ParallelBenchLMError) as err:
        lm.generate_until([req])
    assert str(err.value).startswith(f"model=hf:{short_bert} cannot decode lm-eval task "
                                     "'parallelbench_waiting_line_copy': a prompt plus its answer region is ")


def test_a_block_length_the_blocks_do_not_divide_names_model_and_task(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_example(tmp_path / "sdar-example", "sdar")  # blocks of 4
    res = runner.invoke(app, ["run", "--model", "hf:sdar-example", "--tasks", "waiting_line/copy", "--strategy",
                              "confidence-topk", "--k", "2", "--block-length", "2", "--limit", "2", "--db", "r.db"])
    assert res.exit_code == 2
    line = res.output.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line
    assert line.startswith("error: model 'hf:sdar-example' cannot decode task waiting_line/copy with "
                           "confidence-topk[block_length=2,k=2]: block_length=2 does not suit ")
    assert "must be a positive multiple of 4" in line


def run_own_model(folder: Path, module: str, source: str):
    """`run` on copy and sort with `py:<module>:make`, the module written to `folder` (the current directory)."""
    (folder / f"{module}.py").write_text(source)
    try:
        return runner.invoke(app, ["run", "--model", f"py:{module}:make", "--tasks", "waiting_line/copy,waiting_line/sort",
                                   "--strategy", "confidence-topk", "--k", "1", "--limit", "2", "--db", "r.db",
                                   "--no-progress", "--no-report"])
    finally:
        import sys

        sys.modules.pop(module, None)


def test_a_model_of_your_own_raises_model_input_error_and_gets_the_same_line(tmp_path, monkeypatch):
    """A `py:` model that raises ModelInputError: the task is skipped with one line, the run goes on."""
    monkeypatch.chdir(tmp_path)
    res = run_own_model(tmp_path, "pbi_models", '''
from parallelbench.models.base import ModelInputError
from parallelbench.models.ideal.bench import IdealBenchModel


class Picky(IdealBenchModel):
    def generate(self, samples, strategy, **kw):
        if any(s.task == "waiting_line/sort" for s in samples):
            raise ModelInputError("lists to sort are longer than this model's 3 items; use n <= 3")
        return super().generate(samples, strategy, **kw)


def make():
    return Picky(name="picky")
''')
    assert res.exit_code == 0, res.output
    assert ("skipped waiting_line/sort for picky: lists to sort are longer than this model's 3 items; use n <= 3"
            in res.output)


def test_a_model_of_your_own_that_raises_anything_else_is_one_line_not_a_traceback(tmp_path, monkeypatch):
    """A `py:` model whose network overflows its positions (IndexError deep in torch) stops the run
    with one line naming the model, task, config and the line of the user's code, and keeps the
    rows finished before it."""
    monkeypatch.chdir(tmp_path)
    res = run_own_model(tmp_path, "pbi_crash", '''
from parallelbench.models.ideal.bench import IdealBenchModel


class Short(IdealBenchModel):
    def generate(self, samples, strategy, **kw):
        if any(s.task == "waiting_line/sort" for s in samples):
            return self.embed(samples)
        return super().generate(samples, strategy, **kw)

    def embed(self, samples):
        return [][len(samples)]  # an index past the end, as a position table too short would


def make():
    return Short(name="short")
''')
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1, res.output
    line = " ".join(res.output.split())
    assert line.startswith("error: model 'py:pbi_crash:make' raised IndexError while decoding task waiting_line/sort "
                           "with confidence-topk[k=1]: list index out of range (pbi_crash.py:12 in embed); "), line
    assert "ModelInputError" in line
    from parallelbench.runner.store import ResultsStore

    assert set(ResultsStore(tmp_path / "r.db").frame()["task"]) == {"waiting_line/copy"}  # finished rows kept
