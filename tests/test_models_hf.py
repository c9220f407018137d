"""Offline tests of the `hf:` adapters on tiny randomly initialised checkpoints built here.

The remote-code adapters (checkpoints that ship their own model code, LLaDA- and
Dream-like) are tested on checkpoints whose model code is `hf_standin_code.py`, loaded
with an explicit family and trust_remote_code=true (`load_standin`);
DiffusionGemma and the causal LM use transformers' own classes with tiny configs.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from parallelbench.decoding import build_strategy, decode, strategy_class, strategy_names  # noqa: E402
from parallelbench.models import ModelSpecError, load_model  # noqa: E402
from parallelbench.models.hf.detect import detect_family, estimate_parameters  # noqa: E402
from parallelbench.models.hf.net import merge_stop_logits, shift_logits  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)

STANDIN = Path(__file__).with_name("hf_standin_code.py")
SPECIALS = ["<pad>", "<|mask|>", "<|endoftext|>", "<|eot_id|>", "<|im_end|>", "<unk>", "<|start|>"]
WORDS = ("user assistant system You are managing a waiting line . Copy the list : Susan Fox Philip Gray "
         "Anna Lee [ ] \" , the answer is A B C D 1 2 3 4").split()
TEMPLATE = ("{% for m in messages %}<|start|> {{ m['role'] }} {{ m['content'] }} <|eot_id|> {% endfor %}"
            "{% if add_generation_prompt %}<|start|> assistant {% endif %}")
MESSAGES = [{"role": "user", "content": "Copy the list : Susan Fox"},
            {"role": "assistant", "content": "Susan Fox"},
            {"role": "user", "content": "Copy the list : Anna Lee Philip Gray"}]


def make_tokenizer(folder: Path):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(dict.fromkeys(SPECIALS + WORDS))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<|endoftext|>",
                                   mask_token="<|mask|>", unk_token="<unk>",
                                   additional_special_tokens=["<|eot_id|>", "<|im_end|>", "<|start|>"])
    fast.chat_template = TEMPLATE
    fast.save_pretrained(folder)
    return fast, len(vocab)


def standin_checkpoint(folder: Path, family: str, layers: int = 1, seed: int = 0) -> Path:
    import hf_standin_code as code
    folder.mkdir(parents=True, exist_ok=True)
    _, vocab = make_tokenizer(folder)
    cfg_cls, model_cls = ((code.LLaDAStandInConfig, code.LLaDAStandInLM) if family == "llada"
                          else (code.DreamStandInConfig, code.DreamStandInLM))
    torch.manual_seed(seed)
    model = model_cls(cfg_cls(vocab_size=vocab, num_hidden_layers=layers, mask_token_id=1))
    model.save_pretrained(folder)
    shutil.copy(STANDIN, folder / "modeling_standin.py")
    cfg = json.loads((folder / "config.json").read_text())
    cfg["auto_map"] = {"AutoConfig": f"modeling_standin.{cfg_cls.__name__}",
                       "AutoModel": f"modeling_standin.{model_cls.__name__}"}
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    return {
        "llada": standin_checkpoint(root / "llada", "llada"),
        "dream": standin_checkpoint(root / "dream", "dream"),
        "dream2": standin_checkpoint(root / "dream2", "dream", layers=2),
    }


def load_standin(path: Path, **options):
    """A stand-in checkpoint through its remote-code adapter: both opt-ins are explicit."""
    family = json.loads((path / "config.json").read_text())["model_type"].split("_")[0]
    return load_model(f"hf:{path}", family=family, trust_remote_code=True, **options)


def prompts_of(model, n=3):
    sample_msgs = [MESSAGES, MESSAGES[:1], [{"role": "user", "content": "the answer is A B"}]]
    return [model.tokenizer.encode_chat(m) for m in sample_msgs[:n]]


# ---------------------------------------------------------------------- detection and errors
def test_family_detection_from_config_fields() -> None:
    assert detect_family({"model_type": "llada"}) == "llada"
    assert detect_family({"model_type": "LLaDA"}) == "llada"
    assert detect_family({"d_model": 64, "n_heads": 4, "n_layers": 2, "mask_token_id": 126336}) == "llada"  # OLMo-style
    assert detect_family({"model_type": "Dream"}) == "dream"  # Dream 7B and DiffuCoder
    # a class *name* selects nothing: neither architectures nor auto_map opt a checkpoint into a family
    assert detect_family({"architectures": ["LLaDAModelLM"], "model_type": "x"}) is None
    assert detect_family({"auto_map": {"AutoModel": "modeling_dream.DreamModel"}}) is None
    assert detect_family({"model_type": "diffusion_gemma"}) == "diffusion_gemma"
    assert detect_family({"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"]}) == "causal"
    assert detect_family({"model_type": "llama"}) == "causal"
    assert detect_family({"model_type": "bert-ish"}) is None


def test_parameter_estimate_flags_8b_models() -> None:
    llada_8b = {"d_model": 4096, "n_layers": 32, "mlp_hidden_size": 12288, "vocab_size": 126464}
    assert 6e9 < estimate_parameters(llada_8b) < 10e9
    dream_7b = {"hidden_size": 3584, "num_hidden_layers": 28, "intermediate_size": 18944, "vocab_size": 152064}
    assert 5e9 < estimate_parameters(dream_7b) < 9e9


def test_large_model_on_cpu_fails_in_one_line_unless_forced(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    (tmp_path / "config.json").write_text(json.dumps(
        {"model_type": "llada", "d_model": 4096, "n_layers": 32, "mlp_hidden_size": 12288, "vocab_size": 126464}))
    with pytest.raises(ModelSpecError, match="needs a GPU") as err:
        load_model(f"hf:{tmp_path}")
    assert "\n" not in str(err.value) and "device=cpu" in str(err.value)
    with pytest.raises(ModelSpecError, match="no CUDA GPU"):
        load_model(f"hf:{tmp_path}", device="cuda")


def test_missing_models_fail_in_one_line(tmp_path: Path, monkeypatch) -> None:
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # no network in tests
    for spec in (f"hf:{tmp_path}/nothing", "hf:not-an-id", f"hf:{tmp_path}/x.gguf"):
        with pytest.raises(ModelSpecError, match="not found") as err:
            load_model(spec)
        assert "\n" not in str(err.value)
    with pytest.raises(ModelSpecError, match="Hugging Face Hub") as err:  # offline hub
        load_model("hf:nobody-here/no-such-model-xyz")
    assert "\n" not in str(err.value)


def test_bad_options_are_named(ckpts) -> None:
    with pytest.raises(ModelSpecError, match="unknown hf model option"):
        load_standin(ckpts["llada"], colour="blue")
    with pytest.raises(ModelSpecError, match="cache"):
        load_standin(ckpts["llada"], device="cpu", cache="dual")  # LLaDA's forward has no position ids


# ---------------------------------------------------------------------- logits helpers
def test_shift_moves_logits_one_position_right() -> None:
    raw = torch.arange(2 * 4 * 3, dtype=torch.float32).view(2, 4, 3)
    out = shift_logits(raw)
    assert torch.equal(out[:, 1:], raw[:, :-1]) and torch.equal(out[:, 0], raw[:, 0])


def test_stop_ids_merge_their_probability_into_eos() -> None:
    logits = torch.randn(2, 5, 8)
    merged = merge_stop_logits(logits, 2, [3, 4])
    p_before, p_after = logits.softmax(-1), merged.softmax(-1)
    assert torch.allclose(p_after[..., 2], p_before[..., 2:5].sum(-1), atol=1e-6)
    assert torch.all(p_after[..., 3:5] == 0)
    assert torch.allclose(p_after[..., [0, 1, 5, 6, 7]], p_before[..., [0, 1, 5, 6, 7]], atol=1e-6)


# ---------------------------------------------------------------------- tokenizer and loading
def test_chat_template_and_stop_ids(ckpts) -> None:
    model = load_standin(ckpts["llada"], device="cpu")
    tok = model.tokenizer
    ids = tok.encode_chat(MESSAGES)
    text = tok.tokenizer.decode(ids)
    assert text.startswith("<|start|> user Copy") and text.rstrip().endswith("<|start|> assistant")
    assert text.count("<|eot_id|>") == 3
    vocab = tok.tokenizer.get_vocab()
    assert set(tok.stop_ids) >= {vocab["<|endoftext|>"], vocab["<|eot_id|>"], vocab["<|im_end|>"]}
    answer = [vocab["Susan"], vocab["Fox"], vocab["<|eot_id|>"], vocab["<|endoftext|>"], vocab["A"]]
    assert tok.decode(answer) == "Susan Fox"


def test_loaded_adapters_expose_the_engine_interface(ckpts) -> None:
    for family, path in (("llada", ckpts["llada"]), ("dream", ckpts["dream"])):
        model = load_standin(path, device="cpu")
        net = model.net
        assert net.family == family and model.kind == "diffusion"
        vocab = model.tokenizer.tokenizer.get_vocab()
        assert net.mask_id == vocab["<|mask|>"] and net.eos_id == vocab["<|endoftext|>"]
        canvas = torch.tensor([[7, 8, 9, net.mask_id, net.mask_id]])
        logits = net.forward(canvas, attention_mask=torch.ones_like(canvas, dtype=torch.bool))
        assert logits.shape == (1, 5, net.vocab_size) and logits.dtype == torch.float32
        # by default the checkpoint's own end-of-turn logits are kept (merge_stops=false)
        assert torch.isfinite(logits[..., vocab["<|eot_id|>"]]).all()


def test_dream_logits_come_from_the_previous_position(ckpts) -> None:
    net = load_standin(ckpts["dream"], device="cpu").net
    canvas = torch.tensor([[7, 8, 9, 1, 1, 1]])
    raw = net.model(canvas, attention_mask="full").logits
    out = net.forward(canvas, attention_mask=torch.ones_like(canvas, dtype=torch.bool))
    keep = [i for i in range(out.shape[-1]) if i not in net.merge_ids and i != net.eos_id]
    assert torch.allclose(out[0, 1:, keep], raw[0, :-1, keep]) and torch.allclose(out[0, 0, keep], raw[0, 0, keep])


def test_left_padding_is_masked_out(ckpts) -> None:
    """A padded row gives the same logits at its real positions as the row alone (Dream
    counts positions from the first real token), and pad values never matter (both).
    Position 2 is skipped: Dream's logit there comes from the pad before it (shift)."""
    for name in ("llada", "dream"):
        net = load_standin(ckpts[name], device="cpu").net
        row = torch.tensor([[7, 8, 9, 1, 1]])
        padded = torch.tensor([[0, 0, 7, 8, 9, 1, 1]])
        other_pad = torch.tensor([[12, 13, 7, 8, 9, 1, 1]])
        mask = torch.tensor([[False, False, True, True, True, True, True]])
        a = net.forward(padded, attention_mask=mask)
        b = net.forward(other_pad, attention_mask=mask)
        assert torch.allclose(a[:, 3:], b[:, 3:], atol=1e-5)
        if name == "dream":
            alone = net.forward(row, attention_mask=torch.ones_like(row, dtype=torch.bool))
            assert torch.allclose(a[:, 3:], alone[:, 1:], atol=1e-5)


# ---------------------------------------------------------------------- every strategy, every dLLM
@pytest.mark.parametrize("family", ["llada", "dream"])
def test_every_strategy_decodes_to_completion(ckpts, family) -> None:
    model = load_standin(ckpts[family], device="cpu")
    prompts = prompts_of(model)
    verifier = _ShiftedVerifier(model.net)
    for name in strategy_names():
        if strategy_class(name).requires_block_causal:
            continue  # indel-threshold: block-diffusion models only
        strategy = build_strategy(name)
        results = decode(model.net, prompts, gen_length=16, strategy=strategy, seed=1, verifier=verifier)
        for res in results:
            assert len(res.tokens) == 16 and model.net.mask_id not in res.tokens, name
            assert res.nfe >= 1 and res.num_committed == 16, name


class _ShiftedVerifier:
    """APD needs an autoregressive verifier over the same vocabulary; the dLLM's own logits
    shifted by one stand in for it here (shape and protocol are what the test checks)."""

    def __init__(self, net):
        self.net, self.eos_id, self.vocab_size = net, net.eos_id, net.vocab_size

    def forward(self, tokens, *, attention_mask=None):
        return self.net.forward(tokens, attention_mask=attention_mask)


# ---------------------------------------------------------------------- KV cache
def _decode_with(net, prompts, strategy, gen_length=16):
    with net.session(gen_length, strategy.options.block_length):
        results = decode(net, prompts, gen_length=gen_length, strategy=strategy)
        return results, net.cache_refreshes()


@pytest.mark.parametrize("family,modes", [("llada", ["prefix"]), ("dream", ["prefix", "dual"])])
def test_cache_matches_uncached_when_it_must(ckpts, family, modes) -> None:
    """One-layer bidirectional model: a position's keys/values depend only on its own token
    and position, and tokens outside the window do not change between refreshes (a step
    commits only inside the active block). So the cached keys are exactly what a full pass
    would compute, and cached decoding must give the uncached tokens."""
    base = load_standin(ckpts[family], device="cpu")
    prompts = prompts_of(base)
    for strategy in (build_strategy("confidence-topk", k=1, block_length=4),
                     build_strategy("confidence-threshold", threshold=0.5, block_length=8),
                     build_strategy("confidence-topk", k=2)):
        plain, _ = _decode_with(base.net, prompts, strategy)
        for mode in modes:
            cached = load_standin(ckpts[family], device="cpu", cache=mode)
            got, refreshes = _decode_with(cached.net, prompts, strategy)
            assert [r.tokens for r in got] == [r.tokens for r in plain], (mode, strategy)
            assert [r.nfe for r in got] == [r.nfe for r in plain]  # a refresh is one of the NFEs
            blocks = 16 // (strategy.options.block_length or 16)
            assert all(1 <= refreshes[i] <= blocks * 2 for i in range(len(prompts)))


def test_cache_on_a_deep_model_refreshes_once_per_block(ckpts) -> None:
    model = load_standin(ckpts["dream2"], device="cpu", cache="dual")
    prompts = [model.tokenizer.encode_chat(MESSAGES)]  # one row: blocks change only at block ends
    strategy = build_strategy("confidence-topk", k=1, block_length=4)
    results, refreshes = _decode_with(model.net, prompts, strategy)
    assert results[0].nfe == 16 and refreshes == {0: 4}
    assert model.net.mask_id not in results[0].tokens


def test_generate_reports_refreshes_and_cuts_at_end_of_turn(ckpts) -> None:
    from parallelbench.tasks import get_task

    samples = get_task("waiting_line/copy").samples(2)
    model = load_standin(ckpts["llada"], device="cpu", cache="prefix", batch_size=2)
    gens = model.generate(samples, build_strategy("confidence-topk", k=2, block_length=8), max_new_tokens=16)
    assert len(gens) == 2
    for g in gens:
        assert g.nfe == 8 and g.extra["cache_refreshes"] >= 2
        assert len(g.order) == len(g.token_texts) == g.extra["eos_index"]
