"""DiffusionGemma (transformers' own block-diffusion class) and causal LMs, on tiny local checkpoints."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from parallelbench.decoding import build_strategy, decode, strategy_class, strategy_names  # noqa: E402
from parallelbench.models import load_model  # noqa: E402
from test_models_hf import MESSAGES, make_tokenizer  # noqa: E402
from smollm2_files import SMOLLM2_MISSING, smollm2_available  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)


def gemma_checkpoint(folder: Path) -> Path:
    from transformers import DiffusionGemmaConfig, DiffusionGemmaForBlockDiffusion

    _, vocab = make_tokenizer(folder)
    text = dict(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                num_key_value_heads=1, head_dim=16, global_head_dim=16, sliding_window=16,
                layer_types=["sliding_attention", "full_attention"], max_position_embeddings=256, num_experts=2,
                top_k_experts=1, moe_intermediate_size=32, eos_token_id=2, pad_token_id=0, bos_token_id=6)
    vision = dict(model_type="gemma4_vision", hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                  num_attention_heads=2, num_key_value_heads=2, head_dim=8, position_embedding_size=64)
    torch.manual_seed(0)
    model = DiffusionGemmaForBlockDiffusion(DiffusionGemmaConfig(text_config=text, vision_config=vision, canvas_length=16))
    model.save_pretrained(folder)
    return folder


def causal_checkpoint(folder: Path) -> Path:
    from transformers import LlamaConfig, LlamaForCausalLM

    _, vocab = make_tokenizer(folder)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=256,
                      eos_token_id=2, pad_token_id=0, bos_token_id=6)
    LlamaForCausalLM(cfg).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf2")
    return {"gemma": gemma_checkpoint(root / "gemma"), "causal": causal_checkpoint(root / "causal")}


def test_diffusion_gemma_is_detected_and_decodes_with_every_strategy(ckpts) -> None:
    model = load_model(f"hf:{ckpts['gemma']}", device="cpu")
    net = model.net
    # no mask token (uniform noise): the pad id marks masked positions, and padding uses EOS
    assert net.family == "diffusion_gemma" and net.mask_id == 0 and net.pad_id == net.eos_id
    prompts = [model.tokenizer.encode_chat(MESSAGES), model.tokenizer.encode_chat(MESSAGES[:1])]
    width = max(map(len, prompts)) + 8
    canvas = torch.full((2, width), net.mask_id)
    canvas[:, : width - 8] = 3
    logits = net.forward(canvas, attention_mask=torch.ones(2, width, dtype=torch.bool))  # prompt ends at 1st mask
    assert logits.shape == (2, width, net.vocab_size) and torch.isfinite(logits[:, -8:]).any(-1).all()
    causal = load_model(f"hf:{ckpts['causal']}", device="cpu")
    for name in strategy_names():
        if strategy_class(name).requires_block_causal:
            continue  # indel-threshold: block-diffusion models only
        with net.session(16, build_strategy(name).options.block_length):
            results = decode(net, prompts, gen_length=16, strategy=build_strategy(name), verifier=causal)
        assert all(len(r.tokens) == 16 and net.mask_id not in r.tokens for r in results), name


def test_diffusion_gemma_prompt_cache_equals_reencoding(ckpts) -> None:
    """The decoder reads the encoder's prompt KV read-only and the causal encoder sees only
    the prompt, so reusing it for the whole decode must give the re-encoded tokens."""
    cached = load_model(f"hf:{ckpts['gemma']}", device="cpu")  # default cache=prefix
    plain = load_model(f"hf:{ckpts['gemma']}", device="cpu", cache="none")
    from parallelbench.tasks import get_task

    samples = get_task("waiting_line/copy").samples(3)
    strategy = build_strategy("confidence-threshold", threshold=0.5)
    a = cached.generate(samples, strategy, max_new_tokens=16, seed=3)
    b = plain.generate(samples, strategy, max_new_tokens=16, seed=3)
    assert [g.text for g in a] == [g.text for g in b] and [g.nfe for g in a] == [g.nfe for g in b]
    assert all(g.extra["cache_refreshes"] == 1 for g in a)  # one encoder pass per decode
    assert all(g.extra["cache_refreshes"] == g.nfe for g in b)  # re-encoded every step


def test_causal_lm_decodes_one_token_per_step(ckpts) -> None:
    from parallelbench.tasks import get_task

    model = load_model(f"hf:{ckpts['causal']}", device="cpu", batch_size=2)
    assert model.kind == "autoregressive" and model.name.startswith("hf:")
    samples = get_task("waiting_line/copy").samples(3)
    gens = model.generate(samples, None, max_new_tokens=12)
    assert len(gens) == 3
    for g in gens:
        assert g.nfe == g.num_tokens == sum(g.tokens_per_step) and set(g.tokens_per_step) <= {1}
        assert len(g.order) == len(g.token_texts) and 1 <= g.nfe <= 12
    with pytest.raises(ValueError, match="autoregressive"):
        model.generate(samples, build_strategy("l2r"), max_new_tokens=4)
    # the batch does not change a row's greedy answer (left padding is masked)
    alone = model.generate(samples[1:2], None, max_new_tokens=12)
    assert alone[0].text == gens[1].text


def test_causal_lm_run_lands_in_the_results_db(ckpts, tmp_path: Path) -> None:
    from rich.console import Console

    from parallelbench.runner.job import run_job
    from parallelbench.runner.spec import RunSpec
    from parallelbench.runner.store import ResultsStore

    db = tmp_path / "r.db"
    spec = RunSpec().apply_flags(model=f"hf:{ckpts['causal']}", tasks="waiting_line/copy", limit=2, db=str(db),
                                 model_options=["device=cpu"])
    run_job(spec, Console(quiet=True), show_progress=False)
    frame = ResultsStore(db).frame()
    assert len(frame) == 2 and set(frame["model_kind"]) == {"autoregressive"}
    assert json.loads(frame.iloc[0]["versions"])["model"]["hf_family"] == "causal"


@pytest.mark.slow
@pytest.mark.skipif(not smollm2_available(), reason=SMOLLM2_MISSING)
def test_smollm2_copy_run_scores_above_zero(tmp_path: Path) -> None:
    """Real weights: SmolLM2-135M-Instruct through `parallelbench run` (about 2 minutes on CPU)."""
    from rich.console import Console

    from parallelbench.runner.job import run_job
    from parallelbench.runner.spec import RunSpec
    from parallelbench.runner.store import ResultsStore

    db = tmp_path / "smol.db"
    spec = RunSpec().apply_flags(model="hf:smollm2", tasks="waiting_line/copy", limit=5, db=str(db))
    run_job(spec, Console(quiet=True), show_progress=False)
    frame = ResultsStore(db).frame()
    assert len(frame) == 5 and set(frame["model_kind"]) == {"autoregressive"}
    assert frame["score"].mean() > 0
