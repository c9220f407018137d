"""`hf:` masked-LM dLLMs (issue 28 item 4): transformers' own `*ForMaskedLM` checkpoints.

Tiny random checkpoints are built offline by the package's example builder
(`parallelbench.models.hf.examples.write_masked_lm`): a WordPiece tokenizer from a vocab file and
a `BertForMaskedLM` (also RoBERTa, DistilBERT and ModernBERT, which place positions
differently), saved with `save_pretrained` and loaded back through `hf:<dir>`.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from parallelbench.models import load_model  # noqa: E402
from parallelbench.models.hf.examples import MASKED_LM_WORDS, write_masked_lm  # noqa: E402
from parallelbench.models.hf.detect import detect_family  # noqa: E402
from parallelbench.models.registry import ModelSpecError  # noqa: E402
from parallelbench.tasks.base import Sample  # noqa: E402

WORDS = MASKED_LM_WORDS


def build(folder: Path, arch: str = "bert", *, seed: int = 0, tokenizer_special: dict | None = None) -> Path:
    """A tiny random `*ForMaskedLM` checkpoint with a WordPiece tokenizer (pad 0, mask 4, SEP 3): the package's example."""
    return write_masked_lm(folder, arch=arch, seed=seed, tokenizer_special=tokenizer_special)


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("bert") / "ckpt")


@pytest.fixture(scope="module")
def bert(bert_dir):
    return load_model(f"hf:{bert_dir}", device="cpu")


def reference(folder: Path):
    return transformers.AutoModelForMaskedLM.from_pretrained(str(folder)).eval()


def canvases(lengths=(23, 17, 9, 4), seed=1) -> list[torch.Tensor]:
    """Random token rows, about half of them [MASK] (id 4), of different lengths."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for n in lengths:
        row = torch.randint(5, len(WORDS), (n,), generator=g)
        row[torch.rand(n, generator=g) < 0.5] = 4
        row[0] = 2  # [CLS]
        out.append(row)
    return out


def left_padded(rows, pad: int = 0):
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, r in enumerate(rows):
        ids[i, width - len(r):] = r
        mask[i, width - len(r):] = True
    return ids, mask


def test_detected_from_architectures_and_loaded_with_its_own_tokens(bert_dir, bert):
    config = json.loads((bert_dir / "config.json").read_text())
    assert config["architectures"] == ["BertForMaskedLM"] and detect_family(config) == "masked_lm"
    assert bert.kind == "diffusion" and bert.net.family == "masked_lm"
    assert bert.net.mask_id == 4  # the tokenizer's [MASK]
    assert bert.net.eos_id == 3  # no EOS in a BERT vocabulary: its [SEP] ends an answer
    assert bert.net.vocab_size == len(WORDS)
    versions = bert.versions()
    assert versions["hf_family"] == "masked_lm" and versions["architecture"] == "BertForMaskedLM"
    forced = load_model(f"hf:{bert_dir}", device="cpu", family="masked_lm")
    assert forced.net.family == "masked_lm"


def test_net_forward_is_the_transformers_models_own_logits(bert_dir, bert):
    ref = reference(bert_dir)
    with torch.no_grad():
        for row in canvases():
            mine = bert.net.forward(row.unsqueeze(0))
            theirs = ref(input_ids=row.unsqueeze(0)).logits
            assert torch.equal(mine, theirs)


@pytest.mark.parametrize("arch", ["bert", "roberta", "distilbert", "modernbert"])
def test_left_padded_rows_equal_each_row_alone(tmp_path, arch):
    folder = build(tmp_path / arch, arch)
    model = load_model(f"hf:{folder}", device="cpu")
    assert model.net.family == "masked_lm"
    ref = reference(folder)
    rows = canvases()
    ids, mask = left_padded(rows, pad=model.net.pad_id)
    with torch.no_grad():
        batched = model.net.forward(ids, attention_mask=mask)
        for i, row in enumerate(rows):
            alone = ref(input_ids=row.unsqueeze(0)).logits[0]  # transformers' own positions, no padding
            got = batched[i, ids.shape[1] - len(row):]
            assert (got - alone).abs().max().item() < 1e-4, (arch, i)
    # without explicit positions (a forward that takes none) rows are moved to the left edge instead
    model.net.explicit_positions = False
    with torch.no_grad():
        rolled = model.net.forward(ids, attention_mask=mask)
    assert (rolled - batched)[mask].abs().max().item() < 1e-4
    # the padding really matters: transformers' default positions on the padded batch are wrong
    if arch in ("bert", "distilbert"):
        with torch.no_grad():
            naive = ref(input_ids=ids, attention_mask=mask.long()).logits
        assert (naive - batched)[mask].abs().max().item() > 1e-2


def prompt_samples() -> list[Sample]:
    texts = [
        "give me the new list of people please",
        "susan fox",
        "who is first in the waiting line , philip gray or maria lee and then who is last",
        "copy the list",
    ]
    return [
        Sample(id=f"t/{i}", task="t", prompt=t, messages=[{"role": "user", "content": t}], answer="", scorer="list_exact")
        for i, t in enumerate(texts)
    ]


@pytest.mark.parametrize("strategy", ["confidence-topk", "confidence-threshold"])
def test_decoding_padded_and_alone_gives_the_same_tokens(bert, strategy):
    samples = prompt_samples()
    lengths = {len(bert.tokenizer.encode_chat(s.messages)) for s in samples}
    assert len(lengths) == len(samples)  # really ragged: the batch is left-padded
    from parallelbench.decoding import build_strategy

    s = build_strategy(strategy, **({"k": 2} if strategy == "confidence-topk" else {"threshold": 0.3}))
    together = bert.generate(samples, s, max_new_tokens=16, seed=0)
    alone = [bert.generate([x], s, max_new_tokens=16, seed=i)[0] for i, x in enumerate(samples)]
    assert [g.token_texts for g in together] == [g.token_texts for g in alone]
    assert [g.order for g in together] == [g.order for g in alone]
    assert [g.text for g in together] == [g.text for g in alone]
    assert any(g.token_texts for g in together)  # something was generated before [SEP]


def test_prompt_is_the_chat_template_when_there_is_one_else_the_plain_prompt(tmp_path, bert):
    msgs = [{"role": "user", "content": "copy the list"}]
    ids = bert.tokenizer.encode_chat(msgs)
    raw = bert.tokenizer.tokenizer
    assert ids[0] == raw.cls_token_id and ids[-1] != raw.sep_token_id  # the answer continues the prompt
    assert raw.decode(ids, skip_special_tokens=True) == "user : copy the list assistant :"
    folder = build(tmp_path / "chat")
    tok = transformers.AutoTokenizer.from_pretrained(str(folder))
    tok.chat_template = "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} [SEP] {% endfor %}assistant :"
    tok.save_pretrained(folder)
    chat = load_model(f"hf:{folder}", device="cpu")
    expected = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)
    expected = expected["input_ids"] if hasattr(expected, "keys") else expected
    assert chat.tokenizer.encode_chat(msgs) == list(expected)


def test_eos_wins_over_sep_when_the_tokenizer_has_one(tmp_path):
    folder = build(tmp_path / "eos", tokenizer_special={"eos_token": "[CLS]"})
    model = load_model(f"hf:{folder}", device="cpu")
    assert model.net.eos_id == 2 and model.tokenizer.stop_ids == (2,)  # SEP is then an ordinary token


def test_family_masked_lm_without_a_mask_token_fails_in_one_line(tmp_path):
    folder = build(tmp_path / "nomask", tokenizer_special={"mask_token": None})
    with pytest.raises(ModelSpecError) as err:
        load_model(f"hf:{folder}", device="cpu", family="masked_lm")
    text = str(err.value)
    assert "no mask token" in text and "masked_lm" in text and "\n" not in text


def test_kv_cache_and_too_long_canvases_are_refused(bert_dir, bert):
    with pytest.raises(ModelSpecError, match="cache='prefix' is not supported by the masked_lm adapter"):
        load_model(f"hf:{bert_dir}", device="cpu", cache="prefix")
    with pytest.raises(ValueError, match="more than the model's 512 positions"):
        bert.net.forward(torch.full((1, 600), 5, dtype=torch.long))


def test_run_end_to_end(tmp_path, bert_dir, monkeypatch):
    from typer.testing import CliRunner

    from parallelbench.cli import app

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", "--model", f"hf:{bert_dir}", "--model-opt", "device=cpu",
                                      "--tasks", "waiting_line/copy", "--limit", "2", "--strategy", "confidence-topk",
                                      "--k", "4", "--db", "r.db", "--no-report", "--no-progress"])
    assert result.exit_code == 0, result.output
    with sqlite3.connect(tmp_path / "r.db") as con:
        got = con.execute("SELECT model, model_kind, nfe FROM results").fetchall()
    assert len(got) == 2 and all(kind == "diffusion" and nfe == 8 for _, kind, nfe in got)


def test_forcing_masked_lm_on_a_llada_checkpoint_fails_in_one_whole_line(tmp_path, capfd):
    from parallelbench.models.hf.examples import write_example

    folder = write_example(tmp_path / "llada", "llada")
    capfd.readouterr()
    with pytest.raises(ModelSpecError) as err:
        load_model(f"hf:{folder}", device="cpu", family="masked_lm")
    text = str(err.value)
    inner = text[text.index("(ValueError: ") + 1: text.index(");")]
    assert "\n" not in text and inner.endswith((".", " ...")), text  # never cut mid-word
    assert text.endswith("add --model-opt trust_remote_code=true"), text
    assert "[transformers]" not in capfd.readouterr().err  # the library's warning does not bury the error


def test_library_warnings_of_a_load_show_only_when_it_succeeds():
    import logging

    from transformers.utils import logging as hf_logging

    from parallelbench.models.hf.loading import _short, library_warnings_held

    shown: list[str] = []

    class Show(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            shown.append(record.getMessage())

    library, show = hf_logging.get_logger(), Show()
    library.addHandler(show)
    try:
        logger = hf_logging.get_logger("transformers.configuration_utils")
        with pytest.raises(RuntimeError), library_warnings_held():
            logger.warning("dropped with the failed load")
            raise RuntimeError("load failed")
        with library_warnings_held():
            logger.warning("kept after a good load")
            assert shown == []  # held until the block ends
    finally:
        library.removeHandler(show)
    assert shown == ["kept after a good load"]
    assert _short(ValueError("word " * 100)) == "ValueError: " + "word " * 40 + "..."
