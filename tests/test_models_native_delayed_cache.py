"""d3LLM's delayed prefix cache (`cache=delayed`) of the native LLaDA and Dream nets, driven by
`multi-block`: the kind of every call and the tokens against a plain reference of d3LLM's cached
loop (`d3llm_reference.multi_block_cached`), batch invariance, exactness where a cache must be
exact (one layer), and the one-line refusals."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
import native_ckpt as nc  # noqa: E402
from d3llm_reference import multi_block, multi_block_cached  # noqa: E402

from parallelbench.decoding import build_strategy, decode  # noqa: E402
from parallelbench.models.hf.errors import HFModelError  # noqa: E402
from parallelbench.models.registry import load_model  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    root = tmp_path_factory.mktemp("delayed")
    return {
        "llada": nc.write_checkpoint(root / "llada", "llada", seed=1),
        "dream": nc.write_checkpoint(root / "dream", "dream", seed=2),
        "llada1": nc.write_checkpoint(root / "llada1", "llada", n_layers=1, seed=3),
        "dream1": nc.write_checkpoint(root / "dream1", "dream", num_hidden_layers=1, seed=4),
    }


def sharp(folder: Path, **options):
    """The net with a sharper head (several commits per step), the mask token's row zeroed (never
    proposed) and, as its end token, the token it predicts most often (rows end early)."""
    net = load_model(f"hf:{folder}", device="cpu", dtype="float32", **options).net
    with torch.no_grad():
        net.model.head.weight.mul_(4.0)
        net.model.head.weight[net.mask_id] = 0.0
        probe = torch.randint(5, net.vocab_size, (1, 40), generator=torch.Generator().manual_seed(0))
        top = net.forward(probe)[0].argmax(-1)
    net.eos_id = int(torch.bincount(top[top != net.mask_id]).argmax())
    return net


PROMPTS = [[5, 6, 7, 8], [9], [10, 11, 12, 13, 14, 15], [16, 17]]
SETTINGS = [  # (multi-block options, cache_delay, refresh_interval)
    (dict(block_length=4, threshold=0.6, add_block_threshold=0.25, activate_threshold=0.75), 1, None),
    (dict(block_length=4, threshold=0.9, add_block_threshold=0.5, activate_threshold=0.5, stop_at_eos=True), 2, 3),
    (dict(block_length=8, threshold=0.4, add_block_threshold=0.0, activate_threshold=1.0), 0, None),
    (dict(block_length=4, threshold=0.8, add_block_threshold=1.0, activate_threshold=1.0, stop_at_eos=True,
          commit_lowest=False), 3, 4),
]


@pytest.mark.parametrize("family", ["llada", "dream"])
@pytest.mark.parametrize(("params", "delay", "interval"), SETTINGS)
def test_calls_and_tokens_equal_the_reference_alone_and_batched(ckpts, family, params, delay, interval):
    opts = {"cache": "delayed", "cache_delay": delay}
    if interval is not None:
        opts["refresh_interval"] = interval
    net = sharp(ckpts[family], **opts)
    strategy = build_strategy("multi-block", **params)
    batched = decode(net, PROMPTS, gen_length=16, strategy=strategy)
    kinds_batched = {r: list(k) for r, k in net._delayed.kinds.items()}
    routine = "llada" if params.get("commit_lowest", True) else "dream"
    seen = set()
    for i, (prompt, got) in enumerate(zip(PROMPTS, batched)):
        alone = decode(net, [prompt], gen_length=16, strategy=strategy)[0]
        assert (alone.tokens, alone.nfe) == (got.tokens, got.nfe)
        assert net._delayed.kinds[0] == kinds_batched[i]
        tokens, calls, _, kinds = multi_block_cached(
            net.model, prompt, 16, block_size=params["block_length"], threshold=params["threshold"],
            add=params["add_block_threshold"], activate=params["activate_threshold"], mask_id=net.mask_id,
            cache_delay=delay, refresh_interval=interval or 10**9, eos_id=net.eos_id,
            early_stop=params.get("stop_at_eos", False), shift=net.logit_shift, routine=routine,
            vocab_size=net.vocab_size)
        assert (got.tokens, got.nfe) == (tokens, calls)
        assert kinds_batched[i] == kinds
        seen.update(kinds)
    assert "store" in seen and len(seen) >= 2  # the cache took part, in several kinds of call


def test_a_direct_decode_of_the_loaded_net_uses_the_cache(ckpts):
    model = load_model(f"hf:{ckpts['llada']}", device="cpu", dtype="float32", cache="delayed", cache_delay=1)
    strategy = build_strategy("multi-block", block_length=4, threshold=0.5)
    results = decode(model.net, PROMPTS[:2], gen_length=16, strategy=strategy)
    for row, r in enumerate(results):
        kinds = model.net._delayed.kinds[row]
        assert len(kinds) == r.nfe and "window" in kinds and "store" in kinds
        assert model.net.cache_refreshes()[row] == kinds.count("full") + kinds.count("refresh") < r.nfe
    assert model.net.versions()["kv_cache"] == "delayed" and model.net.versions()["cache_delay"] == "1"


def test_exact_on_one_layer_and_an_approximation_on_two(ckpts):
    """One layer: a finished block's keys/values depend only on its own tokens, so the cache
    changes nothing (LLaDA); with two layers they also depend on the rest of the canvas."""
    params = dict(block_length=4, threshold=0.7, add_block_threshold=0.25, activate_threshold=0.5)
    plain = decode(sharp(ckpts["llada1"]), PROMPTS, gen_length=16, strategy=build_strategy("multi-block", **params))
    net = sharp(ckpts["llada1"], cache="delayed", cache_delay=0)
    cached = decode(net, PROMPTS, gen_length=16, strategy=build_strategy("multi-block", **params))
    assert [r.tokens for r in cached] == [r.tokens for r in plain]
    assert all("window" in k for k in net._delayed.kinds.values())
    later, exact = three_calls(sharp(ckpts["llada"], cache="delayed", cache_delay=0))
    assert (later[0, 12:] - exact[0, 12:]).abs().max() > 1e-3  # the cached prompt was computed on another canvas


def three_calls(net):
    """Logits of a third call (a window after two stores) and of a plain forward of its canvas."""
    from parallelbench.models.protocols import BlockProgress

    canvas = torch.tensor([PROMPTS[0] + [net.mask_id] * 4 + [20, 21, 22, 23] + [net.mask_id] * 8])
    net.forward(canvas, block_progress=BlockProgress(1, 4, 4, torch.tensor([[False, True, False, False]])))
    canvas[0, 4:8] = torch.tensor([24, 25, 26, 27])
    done = torch.tensor([[True, True, False, False]])
    net.forward(canvas, block_progress=BlockProgress(2, 4, 4, done))
    later = net.forward(canvas, block_progress=BlockProgress(3, 4, 4, done))
    assert net._delayed.kinds[0] == ["store", "store", "window"]
    return later, net.forward(canvas)


def test_dream_windows_read_their_first_column_from_itself(ckpts):
    """Dream's logit i comes from query i - 1; a window (d3LLM's Dream loop shifts each window's own
    logits) has no query before its first column, which repeats itself. On one layer everything
    else equals the uncached forward."""
    net = sharp(ckpts["dream1"], cache="delayed", cache_delay=0)
    later, exact = three_calls(net)
    assert torch.allclose(later[0, 13:], exact[0, 13:], atol=1e-5)  # the window is columns 12.. (prompt 4 + 2 blocks)
    raw = net.model(torch.tensor([PROMPTS[0] + [24, 25, 26, 27, 20, 21, 22, 23] + [net.mask_id] * 8]))
    assert torch.allclose(later[0, 12], raw[0, 12, :net.vocab_size], atol=1e-5)
    assert not torch.allclose(later[0, 12], exact[0, 12], atol=1e-3)


def test_the_uncached_multi_block_loop_agrees_with_the_reference_on_the_native_nets(ckpts):
    for family in ("llada", "dream"):
        net = sharp(ckpts[family])
        params = dict(block_length=4, threshold=0.6, add_block_threshold=0.25, activate_threshold=0.75, stop_at_eos=True)
        got = decode(net, PROMPTS, gen_length=16, strategy=build_strategy("multi-block", **params))
        for prompt, r in zip(PROMPTS, got):
            tokens, calls, _ = multi_block(lambda x: net.forward(x), prompt, 16, block_size=4, threshold=0.6, add=0.25,
                                           activate=0.75, mask_id=net.mask_id, eos_id=net.eos_id, early_stop=True)
            assert (r.tokens, r.nfe) == (tokens, calls)


# ---------------------------------------------------------------- bad input, one line each
@pytest.mark.parametrize(("options", "message"), [
    ({"cache_delay": 2}, "cache_delay applies to cache=delayed only"),
    ({"refresh_interval": 3, "cache": "prefix"}, "refresh_interval applies to cache=delayed only"),
    ({"cache": "delayed", "cache_delay": -1}, "cache_delay=-1 is invalid"),
    ({"cache": "delayed", "refresh_interval": 0}, "refresh_interval=0 is invalid"),
])
def test_bad_delayed_cache_options_fail_in_one_line_before_loading(ckpts, options, message):
    with pytest.raises(HFModelError) as err:
        load_model(f"hf:{ckpts['llada']}", device="cpu", **options)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_cache_delayed_on_a_family_without_it_is_refused(tmp_path):
    import native_block_ckpt as nbc

    folder = nbc.write_checkpoint(tmp_path / "sdar", "sdar")
    with pytest.raises(HFModelError) as err:
        load_model(f"hf:{folder}", device="cpu", cache="delayed")
    assert "cache=delayed" in str(err.value) and "native LLaDA, LLaDA-MoE and Dream families only" in str(err.value)
    assert "\n" not in str(err.value)


def test_other_strategies_refuse_a_delayed_cache_net_before_decoding(ckpts):
    net = load_model(f"hf:{ckpts['dream']}", device="cpu", cache="delayed").net
    with pytest.raises(ValueError, match="driven by strategy 'multi-block' only") as err:
        build_strategy("confidence-threshold").check_model(net)
    assert "\n" not in str(err.value)
    build_strategy("multi-block").check_model(net)
    dual = load_model(f"hf:{ckpts['dream']}", device="cpu", cache="dual").net
    with pytest.raises(ValueError, match="cannot use cache=dual"):
        build_strategy("multi-block").check_model(dual)
