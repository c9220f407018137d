"""LLaDA-MoE, native (issue 32 item 3): detection, loading without the checkpoint's code, logits
against an independent reading of the published tensors, left padding, decoding, `models check`,
and the one-line refusals. The official modeling code itself is compared by
benchmarks/verify_lladamoe.py (opt-in test tests/test_lladamoe_vs_official.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
import native_ckpt as nc  # noqa: E402
import native_moe_ckpt as moe  # noqa: E402

from parallelbench.decoding import build_strategy, decode  # noqa: E402
from parallelbench.models.hf.detect import detect_family, native_family  # noqa: E402
from parallelbench.models.hf.errors import HFModelError  # noqa: E402
from parallelbench.models.registry import load_model  # noqa: E402

torch.set_num_threads(1)

VARIANTS = {
    "default": {},  # qk norm, RoPE on half of each head, expert bias, shared expert, a dense first layer
    "plain": dict(qk_layernorm=False, partial_rotary_factor=1.0, moe_router_enable_expert_bias=False,
                  shared_expert_intermediate_size=None, moe_layer_freq=[1, 1], num_key_value_heads=4),
    "biased-tied-llada": dict(attention_bias=True, tie_word_embeddings=True, model_type="llada",
                              moe_layer_freq=[0, 0, 1], num_hidden_layers=3, num_experts_per_tok=3),
}


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    root = tmp_path_factory.mktemp("lladamoe")
    return {name: moe.write_checkpoint(root / name, seed=i, shards=2 if i == 0 else 1, **over)
            for i, (name, over) in enumerate(VARIANTS.items())}


def test_detected_from_its_model_type_and_from_a_published_llada_config():
    from parallelbench.models.hf.examples import config

    cfg = config("lladamoe")
    assert native_family(cfg) == detect_family(cfg) == "lladamoe"
    assert native_family({**cfg, "model_type": "llada"}) == "lladamoe"  # the hub configs keep "llada"
    assert native_family(config("llada")) == "llada"  # an OLMo-style LLaDA config stays LLaDA


@pytest.mark.parametrize("name", list(VARIANTS))
def test_logits_equal_the_independent_reading_and_no_checkpoint_code_runs(ckpts, name):
    folder = ckpts[name]
    model = load_model(f"hf:{folder}", device="cpu", dtype="float32", trust_remote_code="true")
    net = model.net
    assert net.family == "lladamoe" and not nc.code_ran(folder)
    ids = torch.tensor([5, 9, net.mask_id, 12, 7, net.mask_id, net.mask_id, 20, 31, 8, net.mask_id, 14])
    ref = moe.reference_logits(folder, ids)[:, : net.vocab_size]
    got = net.forward(ids.unsqueeze(0))[0]
    assert (got - ref).abs().max() < 1e-4
    assert net.mask_id == nc.vocabulary("lladamoe")["<|mask|>"]


def test_a_left_padded_batch_equals_each_row_alone(ckpts):
    net = load_model(f"hf:{ckpts['default']}", device="cpu", dtype="float32").net
    rows = [torch.randint(5, 40, (n,), generator=torch.Generator().manual_seed(n)) for n in (11, 6, 3)]
    width = 11
    canvas = torch.full((3, width), net.pad_id)
    att = torch.zeros((3, width), dtype=torch.bool)
    for i, r in enumerate(rows):
        canvas[i, width - len(r):] = r
        att[i, width - len(r):] = True
    padded = net.forward(canvas, attention_mask=att)
    for i, r in enumerate(rows):
        alone = net.forward(r.unsqueeze(0))[0]
        assert (padded[i, width - len(r):] - alone).abs().max() < 1e-4


@pytest.mark.parametrize(("strategy", "options"), [
    (build_strategy("confidence-topk", steps=8, block_length=8), {}),
    (build_strategy("multi-block", block_length=4, threshold=0.9, stop_at_eos=True), {"cache": "delayed",
                                                                                       "cache_delay": 1}),
])
def test_decodes_batched_as_alone(ckpts, strategy, options):
    net = load_model(f"hf:{ckpts['default']}", device="cpu", dtype="float32", **options).net
    prompts = [[5, 6, 7], [8], [9, 10, 11, 12, 13]]
    batched = decode(net, prompts, gen_length=16, strategy=strategy)
    for p, r in zip(prompts, batched):
        alone = decode(net, [p], gen_length=16, strategy=strategy)[0]
        assert (r.tokens, r.nfe) == (alone.tokens, alone.nfe) and net.mask_id not in r.tokens


def test_bf16_loads_bf16_and_stays_close(ckpts):
    f32 = load_model(f"hf:{ckpts['default']}", device="cpu", dtype="float32").net
    b16 = load_model(f"hf:{ckpts['default']}", device="cpu", dtype="bfloat16").net
    assert next(b16.model.parameters()).dtype == torch.bfloat16
    ids = torch.tensor([[5, 9, 12, 7, 20, 31, 8, 14]])
    assert (b16.forward(ids).float() - f32.forward(ids)).abs().max() < 0.5


def test_models_check_knows_it(ckpts):
    from parallelbench.models.hf.check import check

    report = check(str(ckpts["default"]), canvases=3, length=16)
    text = "\n".join(report.lines())
    assert "family: lladamoe" in text and "expert_intermediate_size=16" in text
    assert report.padded_vs_alone < 1e-4


@pytest.mark.parametrize(("over", "message"), [
    ({"moe_layer_freq": [1, 0]}, "dense layer after an expert layer"),
    ({"moe_layer_freq": [1]}, "field 'moe_layer_freq' must list"),
    ({"clip_qkv": 8.0}, "clip_qkv=8.0 is not supported natively"),
    ({"partial_rotary_factor": None}, "field 'partial_rotary_factor' must be a number in (0, 1]"),
    ({"hidden_act": "gelu"}, "hidden_act 'gelu'"),
])
def test_configs_the_native_layers_do_not_cover_are_refused_in_one_line(tmp_path, over, message):
    folder = moe.write_checkpoint(tmp_path / "bad")
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(over)
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(HFModelError) as err:
        load_model(f"hf:{folder}", device="cpu")
    assert message in str(err.value) and "config.json" in str(err.value) and "\n" not in str(err.value)


def test_compile_is_accepted(ckpts):
    """compile=true compiles the whole forward (tests/test_native_compile.py decodes with it: eager tokens)."""
    net = load_model(f"hf:{ckpts['default']}", device="cpu", compile="true").net
    assert net.model.compiled and net.versions().get("compile") == "true"
