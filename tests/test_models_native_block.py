"""Native SDAR / TraDo and LLaDA 2.x (MoE) on tiny checkpoints in the families' published formats.

The checkpoints (`native_block_ckpt.py`) are written here with random weights; logits are compared
with an independent float64 reading of the same tensors written from the equations (explicit
attention, a per-expert loop for the MoE), under the block-causal mask and without it. The exact
block KV cache is compared with the uncached forward on finished-block continuations.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("safetensors")

import native_block_ckpt as bc  # noqa: E402
from native_ckpt import code_ran  # noqa: E402

from parallelbench.models import ModelSpecError, load_model  # noqa: E402
from parallelbench.models.hf.check import block_layout  # noqa: E402
from parallelbench.models.hf.detect import detect_family, native_family  # noqa: E402
from parallelbench.models.native import NativeCheckpointError, load_native  # noqa: E402
from parallelbench.models.native import moe as moe_module  # noqa: E402
from parallelbench.models.native.moe import MixtureOfExperts, MoESpec  # noqa: E402
from parallelbench.decoding.host_syncs import count_host_syncs  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)
TOL = 1e-4


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    root = tmp_path_factory.mktemp("block")
    return {
        "sdar": bc.write_checkpoint(root / "sdar", "sdar"),
        "sdar_tied_bias": bc.write_checkpoint(root / "sdar_tb", "sdar", seed=2, tie_word_embeddings=True,
                                              attention_bias=True, num_key_value_heads=1, block_size=8, shards=3),
        "llada2": bc.write_checkpoint(root / "llada2", "llada2"),
        "llada2_variant": bc.write_checkpoint(
            root / "llada2_v", "llada2", seed=5, use_qkv_bias=True, use_bias=True, first_k_dense_replace=0,
            num_shared_experts=0, n_group=2, topk_group=1, num_experts_per_tok=2, score_function="softmax",
            partial_rotary_factor=1.0, rotary_dim=8, moe_router_enable_expert_bias=False, routed_scaling_factor=1.0),
    }


def _ids(n: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(5, 40, (n,), generator=g)


def _bias(allowed: torch.Tensor) -> torch.Tensor:
    return torch.zeros(allowed.shape).masked_fill(~allowed, float("-inf"))


# ---------------------------------------------------------------------- forward vs the equations
@pytest.mark.parametrize("name", ["sdar", "sdar_tied_bias", "llada2", "llada2_variant"])
def test_logits_match_an_independent_reading_of_the_tensors(ckpts, name):
    module, config = load_native(ckpts[name], dtype="float32")
    ids = _ids(19, seed=1)
    block = config.get("block_size") or 8
    allowed = bc.block_causal_allowed(19, block)
    with torch.no_grad():
        causal = module(ids[None], position_ids=torch.arange(19)[None], attention_bias=_bias(allowed)[None],
                        bias_as_given=True)[0]
        plain = module(ids[None])[0]
    assert (causal.double() - bc.reference_logits(ckpts[name], ids, allowed)).abs().max() < TOL
    assert (plain.double() - bc.reference_logits(ckpts[name], ids)).abs().max() < TOL
    assert (causal - plain).abs().max() > 1e-2  # the mask matters: the test can tell the two apart
    assert not code_ran(ckpts[name])


def test_config_fields_reach_the_architecture(ckpts):
    sdar, _ = load_native(ckpts["sdar_tied_bias"], dtype="float32")
    blk = sdar.layers[0]
    assert (blk.heads, blk.kv_heads, blk.head_dim) == (4, 1, 8)  # head_dim from the config, not 24 / 4
    assert blk.q.bias is not None and blk.o.bias is not None and sdar.head is None
    assert blk.q_norm.weight.shape == (8,) and sdar.block_size == 8 and sdar.default_block_length == 8
    l2, _ = load_native(ckpts["llada2"], dtype="float32")
    assert l2.layers[0].moe is None and l2.layers[1].moe is not None  # first_k_dense_replace = 1
    assert l2.layers[1].moe.gate_w.shape == (8, 12, 24) and l2.layers[1].moe.spec.shared_ffn == 12
    assert l2.rotary.inv_freq.numel() == 2  # partial_rotary_factor 0.5 of head_dim 8: 4 rotated dimensions
    assert l2.block_size is None and l2.default_block_length == 32
    assert float(l2.layers[1].moe.expert_bias.detach().abs().sum()) > 0  # read from the checkpoint
    v, _ = load_native(ckpts["llada2_variant"], dtype="float32")
    assert float(v.layers[0].moe.expert_bias.detach().abs().sum()) == 0  # absent from the checkpoint: zeros


def test_left_padded_rows_on_their_own_block_grid_match_the_row_alone(ckpts):
    for name in ("sdar", "llada2"):
        module, config = load_native(ckpts[name], dtype="float32")
        block = config.get("block_size") or 8
        rows = [_ids(n, seed=n) for n in (17, 9, 12)]
        width = 17
        canvas = torch.zeros((3, width), dtype=torch.long)
        mask = torch.zeros((3, width), dtype=torch.bool)
        for i, r in enumerate(rows):
            canvas[i, width - len(r):] = r
            mask[i, width - len(r):] = True
        pos, bias = block_layout(mask, block)
        with torch.no_grad():
            padded = module(canvas, mask, position_ids=pos, attention_bias=bias, bias_as_given=True)
        for i, r in enumerate(rows):
            ref = bc.reference_logits(ckpts[name], r, bc.block_causal_allowed(len(r), block))
            assert (padded[i, width - len(r):].double() - ref).abs().max() < TOL


def test_bf16_load_is_close_to_fp32(ckpts):
    for name in ("sdar", "llada2"):
        a, _ = load_native(ckpts[name], dtype="float32")
        b, _ = load_native(ckpts[name], dtype="bfloat16")
        assert b.embed.weight.dtype == torch.bfloat16
        ids = _ids(12)
        with torch.no_grad():
            diff = (a(ids[None]) - b(ids[None]).float()).abs().max()
        assert diff < 0.5


# ---------------------------------------------------------------------- mixture of experts
def test_grouped_and_padded_dispatch_equal_a_per_expert_loop():
    torch.manual_seed(0)
    spec = MoESpec(experts=8, top_k=3, ffn=6, shared_ffn=0, groups=4, topk_groups=2, scaling=2.5,
                   score="sigmoid", normalize=True)
    moe = MixtureOfExperts(10, spec)
    with torch.no_grad():
        for p in moe.parameters():
            p.normal_()
    x = torch.randn(23, 10)
    idx, w = moe.route(x)
    assert idx.shape == (23, 3) and torch.allclose(w.sum(-1), torch.full((23,), 2.5))
    per_group = idx // 2  # every token's experts lie in at most topk_groups groups
    assert all(len(set(row.tolist())) <= 2 for row in per_group)
    loop = torch.zeros(23, 3, 10)
    for t in range(23):
        for s in range(3):
            e = int(idx[t, s])
            loop[t, s] = (torch.nn.functional.silu(x[t] @ moe.gate_w[e].T) * (x[t] @ moe.up_w[e].T)) @ moe.down_w[e].T
    with torch.no_grad(), count_host_syncs() as syncs:
        grouped = moe.experts(x, idx)
        padded_ok = moe_module._grouped_mm_ok
        try:  # the fixed-capacity batched GEMM that replaces the grouped kernel where it is missing
            moe_module._grouped_mm_ok = lambda rows: False
            padded = moe.experts(x, idx)
        finally:
            moe_module._grouped_mm_ok = padded_ok
    assert syncs.outside == 0, syncs.summary()  # no bincount, nothing shaped by the routing
    assert (grouped - loop).abs().max() < 1e-4
    assert (padded - loop).abs().max() < 1e-4


def test_expert_bias_steers_the_choice_but_not_the_weights():
    spec = MoESpec(experts=4, top_k=1, ffn=2, shared_ffn=0, groups=1, topk_groups=1, scaling=1.0,
                   score="sigmoid", normalize=True)
    moe = MixtureOfExperts(3, spec)
    with torch.no_grad():
        moe.router.copy_(torch.eye(4, 3))
        moe.expert_bias.copy_(torch.tensor([0.0, 0.0, 0.0, 5.0]))
    x = torch.tensor([[3.0, 0.0, 0.0]])
    idx, w = moe.route(x)
    assert int(idx[0, 0]) == 3  # bias wins the choice
    assert torch.allclose(w[0, 0], torch.sigmoid(torch.tensor(0.0)))  # weight: expert 3's unbiased score


# ---------------------------------------------------------------------- the exact block KV cache
@pytest.mark.parametrize("name", ["sdar", "llada2"])
def test_cached_windows_equal_the_uncached_forward(ckpts, name):
    """A left-padded batch whose rows sit on different block grids, decoded window by window as a
    block-wise decode would: each window spans every row's next block (so it overlaps finished
    columns of rows that are ahead, recomputed and re-stored), stores the positions whose block is
    complete in it, and the logits of those positions equal the uncached block-causal forward. The
    last window runs only two of the rows, in another order (a finished row dropped)."""
    net = load_model(f"hf:{ckpts[name]}", device="cpu", dtype="float32", cache="block").net
    plain = load_model(f"hf:{ckpts[name]}", device="cpu", dtype="float32").net
    assert net.supports_kv_cache and not plain.supports_kv_cache and net.cache_mode == "block"
    block, width, lengths = 4, 21, (19, 18, 9)
    canvas = torch.full((3, width), int(net.pad_id), dtype=torch.long)
    mask = torch.zeros((3, width), dtype=torch.bool)
    for i, n in enumerate(lengths):
        canvas[i, width - n:] = _ids(n, seed=10 + n)
        mask[i, width - n:] = True
    pos, bias = block_layout(mask, block)
    full = plain.forward(canvas, attention_mask=mask, position_ids=pos, attention_bias=bias)
    pads = torch.tensor([width - n for n in lengths])
    col = torch.arange(width)
    block_end = pads[:, None] + (pos // block + 1) * block - 1  # last column of each position's block
    kv = net.new_kv_cache(3, width)
    start, k, checked = 0, 0, 0
    while start < width:
        rows = torch.arange(3) if start < 14 else torch.tensor([2, 0])
        k_starts = (pads[rows] + k * block).clamp(max=width - 1)
        end = int((pads[rows] + (k + 1) * block).clamp(max=width).max())
        start = int(k_starts.min()) if k else 0
        w = slice(start, end)
        done = (block_end[rows, w] < end) | ~mask[rows, w]
        out = net.forward_cached(canvas[rows, w], kv=kv, rows=rows, start=start, position_ids=pos[rows, w],
                                 attention_bias=bias[rows, w, :end], store=done)
        check = done & mask[rows, w]
        assert ((out - full[rows, w]).abs().amax(-1)[check]).max() < TOL
        checked += int(check.sum())
        start, k = end, k + 1
    assert checked >= sum(lengths) - 9  # nearly every real position was checked through the cache


def test_unstored_garbage_columns_are_masked_not_read(ckpts):
    net = load_model(f"hf:{ckpts['sdar']}", device="cpu", dtype="float32", cache="block").net
    ids = _ids(8)[None]
    pos = torch.arange(8)[None]
    allowed = bc.block_causal_allowed(8, 4)
    full = net.forward(ids, position_ids=pos, attention_bias=_bias(allowed)[None])
    kv = net.new_kv_cache(1, 8)
    net.forward_cached(ids[:, :4], kv=kv, rows=torch.tensor([0]), start=0, position_ids=pos[:, :4],
                       attention_bias=_bias(allowed[:4, :4])[None], store=torch.ones(1, 4, dtype=torch.bool))
    for layer in range(len(kv.keys)):
        kv.keys[layer][:, :, 4:] = 1e4  # columns never stored: anything
    out = net.forward_cached(ids[:, 4:], kv=kv, rows=torch.tensor([0]), start=4, position_ids=pos[:, 4:],
                             attention_bias=_bias(allowed[4:])[None])
    assert (out - full[:, 4:]).abs().max() < TOL


# ---------------------------------------------------------------------- hf: loading
def test_hf_detects_by_model_type_and_loads_natively(ckpts):
    for name, family in (("sdar", "sdar"), ("llada2", "llada2")):
        config = json.loads((ckpts[name] / "config.json").read_text())
        assert native_family(config) == family == detect_family(config)
        model = load_model(f"hf:{ckpts[name]}", device="cpu", dtype="float32")
        net = model.net
        vocab = bc.vocabulary(family)
        assert net.block_causal is True and net.mask_id == vocab[bc.MASK[family]]
        assert net.versions()["native_family"] == family and net.cache_mode == "none"
        assert not code_ran(ckpts[name])
    trusted = load_model(f"hf:{ckpts['llada2']}", device="cpu", trust_remote_code="true")  # ignored: native only
    assert trusted.net.block_causal and not code_ran(ckpts["llada2"])
    sdar = load_model(f"hf:{ckpts['sdar']}", device="cpu").net
    vocab = bc.vocabulary("sdar")
    # end tokens: the tokenizer's EOS (<|im_end|>) first, then generation_config.json's ids
    assert sdar.eos_id == vocab["<|im_end|>"] and vocab["<|endoftext|>"] in load_model(
        f"hf:{ckpts['sdar']}", device="cpu").tokenizer.stop_ids
    assert (sdar.block_size, sdar.default_block_length) == (4, 4)


def test_trado_keeps_sdars_model_type():
    """TraDo checkpoints are SDAR fine-tunes: their config says model_type "sdar"."""
    assert native_family({"model_type": "sdar", "architectures": ["SDARForCausalLM"]}) == "sdar"
    assert native_family({"model_type": "llada2_moe"}) == "llada2"
    assert native_family({"model_type": "sdar_moe"}) is None  # no native MoE SDAR


def test_cache_option_and_compile_are_checked(ckpts):
    with pytest.raises(ModelSpecError, match="cache='prefix' is invalid for a block-diffusion model: use none or block"):
        load_model(f"hf:{ckpts['llada2']}", device="cpu", cache="prefix")
    compiled = load_model(f"hf:{ckpts['sdar']}", device="cpu", compile="true", cache="block").net
    assert compiled.compiled and compiled.versions()["compile"] == "true"  # compiles lazily, at its first call
    names = "LLaDA, LLaDA-MoE, Dream / DiffuCoder, SDAR / TraDo and LLaDA 2.x"
    with pytest.raises(ModelSpecError, match=f"compile=true has a compile path only for {names}.*masked LM"):
        load_model(f"hf:{ckpts['sdar']}", device="cpu", compile="true", family="masked_lm")
    with pytest.raises(ModelSpecError, match="cache='block' is invalid"):
        import native_ckpt as nc

        folder = nc.write_checkpoint(ckpts["sdar"].parent / "llada1", "llada")
        load_model(f"hf:{folder}", device="cpu", cache="block")


def test_mask_id_comes_from_the_tokenizer_when_the_config_has_none(ckpts, tmp_path):
    folder = bc.write_checkpoint(tmp_path / "nomask", "llada2")
    cfg = json.loads((folder / "tokenizer_config.json").read_text())
    del cfg["mask_token"]
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelSpecError, match="no mask_token_id, and the tokenizer files declare no mask token"):
        load_model(f"hf:{folder}", device="cpu")


@pytest.mark.parametrize("family,field,value,words", [
    ("llada2", "score_function", "sqrtsoftplus", "score_function 'sqrtsoftplus' is not supported"),
    ("llada2", "router_dtype", "bf16", "router_dtype 'bf16' is not supported"),
    ("llada2", "norm_head", True, "norm_head=True is not supported"),
    ("llada2", "use_sliding_window", True, "use_sliding_window=true is not supported"),
    ("llada2", "rotary_dim", 6, "rotary_dim=6 disagrees"),
    ("llada2", "topk_group", 9, "topk_group=9 exceeds n_group=4"),
    ("sdar", "hidden_act", "gelu", "hidden_act 'gelu' is not supported"),
    ("sdar", "rope_scaling", {"rope_type": "yarn", "factor": 4.0}, "rope_scaling .* is not supported"),
    ("sdar", "use_sliding_window", True, "use_sliding_window=true is not supported"),
    ("sdar", "block_size", 0, "'block_size' must be a positive integer"),
])
def test_unsupported_config_fields_stop_in_one_line_naming_them(tmp_path, family, field, value, words):
    folder = bc.write_checkpoint(tmp_path / "bad", family, **{field: value})
    with pytest.raises(NativeCheckpointError, match=words) as info:
        load_native(folder)
    assert "\n" not in str(info.value) and "config.json" in str(info.value)
    with pytest.raises(ModelSpecError, match=words):
        load_model(f"hf:{folder}", device="cpu")


def test_models_check_knows_the_new_families(ckpts):
    from parallelbench.models.hf.check import check

    for name in ("sdar", "llada2"):
        report = check(str(ckpts[name]))
        assert report.family == name and report.block
        assert report.padded_vs_alone < TOL
        assert any("block-causal attention in blocks of" in line for line in report.lines())


# ---------------------------------------------------------------------- through the engine
@pytest.mark.parametrize("name", ["sdar", "llada2"])
def test_block_cache_decodes_the_same_tokens_as_no_cache(ckpts, name):
    """decode() with cache=block (finished blocks computed once) and cache=none give the same tokens
    and steps, batched (left-padded, rows on different block grids) and each prompt alone."""
    from parallelbench.decoding import build_strategy, decode

    plain = load_model(f"hf:{ckpts[name]}", device="cpu", dtype="float32").net
    cached = load_model(f"hf:{ckpts[name]}", device="cpu", dtype="float32", cache="block").net
    prompts = [_ids(n, seed=n).tolist() for n in (3, 6, 9)]
    for strategy in (build_strategy("confidence-topk", k=2, block_length=4),
                     build_strategy("confidence-threshold", threshold=0.3, block_length=8)):
        a = decode(plain, prompts, gen_length=16, strategy=strategy)
        b = decode(cached, prompts, gen_length=16, strategy=strategy)
        c = [decode(cached, [p], gen_length=16, strategy=strategy)[0] for p in prompts]
        assert [r.tokens for r in a] == [r.tokens for r in b] == [r.tokens for r in c]
        assert [r.nfe for r in a] == [r.nfe for r in b] == [r.nfe for r in c]


def test_a_block_length_off_the_trained_grid_is_refused_before_decoding(ckpts):
    from parallelbench.decoding import build_strategy, decode

    net = load_model(f"hf:{ckpts['sdar']}", device="cpu", dtype="float32").net  # block_size 4
    with pytest.raises(ValueError, match="block_length"):
        decode(net, [[5, 6, 7]], gen_length=8, strategy=build_strategy("confidence-topk", k=1, block_length=6))
