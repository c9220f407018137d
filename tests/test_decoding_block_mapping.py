"""Issue 27 item 5: the official block-diffusion routines' parameters map onto our presets.

Each test runs a clean-room reference of the routine (tests/block_diffusion_reference.py, one
prompt at a time) and the engine with the mapped strategy (batched with left padding, and
each prompt alone; without and with the exact KV cache) on the toy block-causal net, and
asserts the same greedy tokens and the same number of denoising calls per prompt.
"""

from __future__ import annotations

import pytest
import torch
from block_causal_toy import ToyBlockNet
from block_diffusion_reference import llada2_generate, llada21_generate, sdar_generate

from parallelbench.decoding import build_strategy, decode

MASK, EOS = 0, 1


def prompts_of(lengths, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(2, 40, (n,), generator=g).tolist() for n in lengths]


def engine_runs(prompts, gen_length, strategy, **net_kw):
    """(batched, alone, batched with the cache) engine results."""
    plain = ToyBlockNet(scale=6.0, **net_kw)
    cached = ToyBlockNet(scale=6.0, cache_mode="block", **net_kw)
    batched = decode(plain, prompts, gen_length=gen_length, strategy=strategy)
    alone = [decode(plain, [p], gen_length=gen_length, strategy=strategy)[0] for p in prompts]
    with_cache = decode(cached, prompts, gen_length=gen_length, strategy=strategy)
    return batched, alone, with_cache


def assert_matches(reference, results, gen_length):
    """Reference (generated part incl. rounding slots, calls) vs the engine's rows."""
    for (ref, calls), res in zip(reference, results):
        ref = ref[:gen_length]
        stopped = MASK in ref  # the routine stopped before these slots; the engine fills them with EOS
        assert [t if t != MASK else EOS for t in ref] == res.tokens, (ref, res.tokens)
        assert res.nfe == calls, (res.nfe, calls)
        if stopped:
            assert EOS in res.tokens


def check(reference_fn, strategy, prompts, gen_length, **net_kw):
    net = ToyBlockNet(scale=6.0, **net_kw)
    reference = [reference_fn(net, p) for p in prompts]
    for results in engine_runs(prompts, gen_length, strategy, **net_kw):
        assert_matches(reference, results, gen_length)
    return reference


# prompt lengths: whole blocks, a tail of every size, and several rows in one batch
LENGTHS = [4, 5, 6, 7, 9, 2, 12]


@pytest.mark.parametrize(("block", "steps"), [(4, 4), (8, 8), (8, 4), (4, 2)])
def test_sdar_low_confidence_static_is_confidence_topk_k_block_over_steps(block, steps):
    k = block // steps
    # the static rule commits k at a time: prompt tails that leave a multiple of k masks in the first block
    lengths = [n for n in LENGTHS if (block - n % block) % k == 0] if k > 1 else LENGTHS
    prompts = prompts_of(lengths)
    ref = check(
        lambda net, p: sdar_generate(net, p, mask_id=MASK, gen_length=16, block_length=block, denoising_steps=steps,
                                     remasking_strategy="low_confidence_static"),
        build_strategy("confidence-topk", k=k, block_length=block), prompts, 16,
    )
    assert all(calls > 0 for _, calls in ref)


@pytest.mark.parametrize(("block", "steps"), [(4, 4), (8, 4), (8, 2)])
def test_sdar_sequential_is_l2r_k_block_over_steps(block, steps):
    check(
        lambda net, p: sdar_generate(net, p, mask_id=MASK, gen_length=16, block_length=block, denoising_steps=steps,
                                     remasking_strategy="sequential"),
        build_strategy("l2r", k=block // steps, block_length=block), prompts_of(LENGTHS, seed=7), 16,
    )


@pytest.mark.parametrize(("block", "steps", "threshold"), [(4, 4, 0.6), (8, 8, 0.8), (8, 8, 0.5)])
def test_sdar_low_confidence_dynamic_is_confidence_threshold(block, steps, threshold):
    prompts = prompts_of(LENGTHS, seed=1)
    ref = check(
        lambda net, p: sdar_generate(net, p, mask_id=MASK, gen_length=16, block_length=block, denoising_steps=steps,
                                     remasking_strategy="low_confidence_dynamic", confidence_threshold=threshold),
        build_strategy("confidence-threshold", threshold=threshold, block_length=block), prompts, 16,
    )
    # the threshold made some steps commit several tokens
    assert sum(calls for _, calls in ref) < sum(16 + (-(n + 16)) % block for n in LENGTHS)


def test_sdar_dynamic_with_fewer_steps_than_the_block_is_min_k_block_over_steps():
    block, steps, threshold = 8, 4, 0.7
    net = ToyBlockNet(scale=6.0)
    prompts = prompts_of([8, 16, 2, 10], seed=2)
    strategy = build_strategy("confidence-threshold", threshold=threshold, min_k=block // steps, block_length=block)
    # where at least min_k masks are left at every step the two agree exactly (the official code
    # otherwise also rewrites settled slots, see block_diffusion_reference.py)
    reference = [sdar_generate(net, p, mask_id=MASK, gen_length=16, block_length=block, denoising_steps=steps,
                               remasking_strategy="low_confidence_dynamic", confidence_threshold=threshold)
                 for p in prompts]
    for results in engine_runs(prompts, 16, strategy):
        assert_matches(reference, results, 16)


def test_sdar_stop_ids_are_stop_at_eos():
    prompts = prompts_of(LENGTHS, seed=3)
    ref = check(
        lambda net, p: sdar_generate(net, p, mask_id=MASK, gen_length=24, block_length=4, denoising_steps=4,
                                     remasking_strategy="low_confidence_dynamic", confidence_threshold=0.7,
                                     stop_ids=[EOS]),
        build_strategy("confidence-threshold", threshold=0.7, block_length=4, stop_at_eos=True), prompts, 24,
        eos_boost=5.0,
    )
    assert any(MASK in r[:24] for r, _ in ref)  # some rows stopped early


@pytest.mark.parametrize(("block", "steps", "threshold"), [(4, 4, 0.8), (8, 8, 0.6), (8, 4, 0.9), (8, 2, 0.7)])
def test_llada2_generate_is_confidence_threshold_with_min_k(block, steps, threshold):
    prompts = prompts_of(LENGTHS, seed=4)
    check(
        lambda net, p: llada2_generate(net, p, mask_id=MASK, eos_id=EOS, gen_length=16, block_length=block,
                                       steps=steps, threshold=threshold),
        build_strategy("confidence-threshold", threshold=threshold, min_k=block // steps, block_length=block,
                       stop_at_eos=True),
        prompts, 16, eos_boost=2.0,
    )


@pytest.mark.parametrize(
    ("threshold", "editing", "post"), [(0.7, 0.5, 16), (0.5, 0.0, 16), (0.9, 0.6, 1), (0.6, 0.5, 0), (0.4, 0.3, 3)]
)
def test_llada21_generate_is_edit_threshold_with_the_confidence_rule_and_post_steps(threshold, editing, post):
    prompts = prompts_of(LENGTHS, seed=5)
    ref = check(
        lambda net, p: llada21_generate(net, p, mask_id=MASK, eos_id=EOS, gen_length=16, block_length=4,
                                        threshold=threshold, editing_threshold=editing, max_post_steps=post),
        build_strategy("edit-threshold", threshold=threshold, edit_threshold=editing, edit_rule="confidence",
                       post_steps=post, block_length=4, stop_at_eos=True),
        prompts, 16, eos_boost=1.0,
    )
    assert all(calls > 0 for _, calls in ref)


def test_llada21_editing_happens_in_these_runs():
    """The LLaDA2.1 comparisons above exercise edits and edit-only steps, not only mask filling."""
    net = ToyBlockNet(scale=6.0)
    prompts = prompts_of(LENGTHS, seed=5)
    res = decode(net, prompts, gen_length=16, strategy=build_strategy(
        "edit-threshold", threshold=0.5, edit_threshold=0.0, edit_rule="confidence", post_steps=16, block_length=4))
    assert sum(r.extra["edits"] for r in res) > 0 and sum(r.extra["post_steps"] for r in res) > 0


def test_llada21_without_eos_early_stop_decodes_every_block():
    prompts = prompts_of([3, 9], seed=6)
    check(
        lambda net, p: llada21_generate(net, p, mask_id=MASK, eos_id=EOS, gen_length=12, block_length=4,
                                        threshold=0.6, editing_threshold=0.5, max_post_steps=4,
                                        eos_early_stop=False),
        build_strategy("edit-threshold", threshold=0.6, edit_threshold=0.5, edit_rule="confidence", post_steps=4,
                       block_length=4),
        prompts, 12, eos_boost=2.0,
    )
