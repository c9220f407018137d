"""`results --all-versions` groups by decoding version (issue 35 item 7), `results --strategy`
(item 12), and the wording of messages item 12 lists."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from parallelbench.cli import app
from test_runner_fakes import MY_STRATEGY

MODULE = "versions_view_strategy"  # a module name of this file's own: imported once per test process
RUN = ["--model", "ideal", "--tasks", "waiting_line/reverse,waiting_line/copy", "--strategy", f"{MODULE}:MyStrategy",
       "--k", "1,2", "--baselines", "--limit", "2", "--no-progress", "--no-report"]


@pytest.fixture(scope="module")
def two_code_versions(tmp_path_factory) -> Path:
    """The strategy developer's loop: run, edit the strategy's module, run again."""
    folder = tmp_path_factory.mktemp("dev")
    db = folder / "dev.db"
    runner = CliRunner()
    here = os.getcwd()
    os.chdir(folder)
    try:
        (folder / f"{MODULE}.py").write_text(MY_STRATEGY)
        assert runner.invoke(app, ["run", *RUN, "--db", str(db)]).exit_code == 0
        (folder / f"{MODULE}.py").write_text(MY_STRATEGY + "\n# tuned\n")
        second = runner.invoke(app, ["run", *RUN, "--db", str(db)])
    finally:
        os.chdir(here)
    assert second.exit_code == 0 and "8 rows added" in " ".join(second.output.split())  # only MyStrategy again
    return db


def test_all_versions_is_one_table_per_decoding_version(two_code_versions):
    out = CliRunner().invoke(app, ["results", "--db", str(two_code_versions), "--all-versions"],
                             env={"COLUMNS": "250"}).output
    titles = re.findall(r"^ideal (v:[0-9a-f]{8}): ", out, re.M)
    # the baselines' code and two versions of MyStrategy's: three tables, not one per task and version
    assert len(set(titles)) == 3 and len(titles) == 3, out
    legend = [line for line in out.splitlines() if re.match(r"v:[0-9a-f]{8} = ", line)]
    assert sorted(line[:10] for line in legend) == sorted(titles)  # one line per version
    assert "data: the task's data version" in out
    # each table holds both tasks, with the task's data version (8 characters) as a column
    for task in ("reverse", "copy"):
        assert len(re.findall(rf"│ {task}\s+│ [0-9a-f]{{8}} │", out)) == 3
    # no hash longer than 8 characters anywhere
    assert not re.search(r"\b[0-9a-f]{9,}\b", out)


def test_results_strategy_filter(two_code_versions):
    runner = CliRunner()
    out = runner.invoke(app, ["results", "--db", str(two_code_versions), "--strategy", "confidence-topk"],
                        env={"COLUMNS": "250"}).output
    assert "confidence-topk[k=1]" in out and "confidence-threshold" not in out and "MyStrategy" not in out
    one = runner.invoke(app, ["results", "--db", str(two_code_versions), "--strategy", "confidence-topk[k=2],random"],
                        env={"COLUMNS": "250"}).output
    assert "confidence-topk[k=2]" in one and "confidence-topk[k=1]" not in one
    missing = runner.invoke(app, ["results", "--db", str(two_code_versions), "--strategy", "fastest"])
    text = " ".join(missing.output.split())
    assert "no rows match --strategy fastest" in text and "strategies [" in text and "confidence-topk" in text


def test_compare_p_value_and_counts_read_as_sentences():
    from parallelbench.analysis.uncertainty import PairedDifference, precision_line
    from parallelbench.runner.compare import Comparison, describe

    result = PairedDifference(0.5, 0.4, 0.6, 1e-6, "McNemar exact", 1, 1, 1.0, 0.5, 1, 0)
    lines = describe(Comparison(("a", "m"), ("b", "m"), result, 1))
    assert "p < 0.0001" in lines[2] and "p = <" not in lines[2]
    assert lines[3] == "on 1 common sample over 1 task"
    import pandas as pd

    line = precision_line(pd.DataFrame({"n": [1], "ci_low": [0.0], "ci_high": [100.0]}))
    assert "1 sample per task (1 task point)" in line


def test_block_length_errors_name_no_internal_class():
    from parallelbench.decoding.block_grid import block_length_for

    class BlockCausalNet:
        block_size = 4
        default_block_length = None

    with pytest.raises(ValueError) as err:
        block_length_for(BlockCausalNet(), 6)
    assert "BlockCausalNet" not in str(err.value) and "does not suit this model" in str(err.value)
    assert "multiple of 4" in str(err.value)


def test_model_errors_name_the_model_once(tmp_path):
    from parallelbench.models import ModelSpecError, load_model
    from test_models_hf_masked_lm import build

    folder = build(tmp_path / "nomask", tokenizer_special={"mask_token": None})
    with pytest.raises(ModelSpecError) as err:
        load_model(f"hf:{folder}", device="cpu", family="masked_lm")
    assert str(err.value).count(f"hf:{folder}") == 1, str(err.value)


def test_model_errors_name_the_model_as_spelled(tmp_path, monkeypatch):
    """A relative `hf:DIR` is not named a second time as its resolved absolute path."""
    from parallelbench.models import ModelSpecError, load_model
    from test_models_hf_masked_lm import build

    build(tmp_path / "nomask", tokenizer_special={"mask_token": None})
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModelSpecError) as err:
        load_model("hf:nomask", device="cpu", family="masked_lm")
    message = str(err.value)
    assert message.count("hf:") == 1 and "'hf:nomask'" in message and str(tmp_path) not in message, message


def test_indel_token_errors_name_no_internal_class():
    from parallelbench.decoding.schedules.indel_threshold import IndelThresholdOptions, edit_token_ids

    class BlockCausalNet:
        vocab_size, mask_id = 10, 9

    with pytest.raises(ValueError) as err:
        edit_token_ids(IndelThresholdOptions(), BlockCausalNet())
    assert "BlockCausalNet" not in str(err.value) and "the model has no delete_token_id" in str(err.value)
    with pytest.raises(ValueError) as err:
        edit_token_ids(IndelThresholdOptions(delete_token=9, split_token=3), BlockCausalNet())
    assert "BlockCausalNet" not in str(err.value) and "the model's mask id" in str(err.value)


def test_results_help_keeps_the_config_label_examples():
    """Rich markup read `[k=2]` in the help as a tag and dropped it: the example label looked like a name."""
    out = " ".join(CliRunner().invoke(app, ["results", "--help"], env={"COLUMNS": "200"}).output.split())
    assert "(confidence-topk[k=2])" in out and "e.g. 'confidence-topk[k=2]'" in out


def test_an_unknown_family_option_names_the_option_not_the_detection(tmp_path):
    """`--model-opt family=bogus` said "cannot tell which adapter ... needs (model_type 'bert')"."""
    from parallelbench.models import ModelSpecError, load_model
    from parallelbench.models.hf.detect import FAMILIES
    from test_models_hf_masked_lm import build

    folder = build(tmp_path / "bert")
    with pytest.raises(ModelSpecError) as err:
        load_model(f"hf:{folder}", device="cpu", family="bogus")
    message = str(err.value)
    assert "family='bogus' is not a family" in message and "cannot tell" not in message
    assert all(family in message for family in FAMILIES)
