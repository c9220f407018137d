"""The decoding loops make a GPU wait for the host at most once per model call (issue 33 item 2).

Counted with `parallelbench.decoding.host_syncs`: outside the model's forward, every top-k,
threshold, factor and blocked preset issues at most one host-synchronising op per model call (the
step's single read: finished rows, and what the next call needs) plus at most 4 per decode (its
set-up and the final transfer of the results), on the canvas loop and on the block-causal loop
with and without the block KV cache. Presets that need a host decision per step list their counts
in docs/strategies.md and are not bound here.
"""

from __future__ import annotations

import pytest
import torch
from block_causal_toy import ToyBlockNet
from test_decoding_models import TinyNet

from parallelbench.decoding import build_strategy, decode
from parallelbench.decoding.host_syncs import count_host_syncs

SET_UP = 4
PRESETS = [("random", {}), ("l2r", {}), ("confidence-topk", {"k": 2}), ("confidence-topk", {"steps": 8}),
           ("topk-margin", {}), ("entropy-topk", {}), ("confidence-threshold", {"threshold": 0.7}),
           ("confidence-threshold", {"threshold": 0.7, "min_k": 2}), ("confidence-factor", {}), ("dus", {}),
           ("eb", {}), ("klass", {}), ("slowfast", {}), ("pc-sampler", {}), ("rcr", {}), ("credit", {"threshold": 0.7})]
PROMPTS = [[3, 4, 5], [6], [7, 8, 9, 10, 11], [12, 13]]


def _check(model, strategy, **kw):
    with count_host_syncs(model) as syncs:
        results = decode(model, PROMPTS, gen_length=16, strategy=strategy, **kw)
    assert syncs.calls >= 2
    assert syncs.outside <= syncs.calls + SET_UP, syncs.summary()
    return results, syncs


@pytest.mark.parametrize("name,params", PRESETS, ids=[f"{n}{p}" for n, p in PRESETS])
@pytest.mark.parametrize("block", [None, 4])
def test_canvas_loop_reads_the_device_once_per_step(name, params, block):
    _check(TinyNet(), build_strategy(name, block_length=block, **params))


@pytest.mark.parametrize("name,params", PRESETS, ids=[f"{n}{p}" for n, p in PRESETS])
@pytest.mark.parametrize("cache", ["none", "block"])
def test_block_causal_loop_reads_the_device_once_per_step(name, params, cache):
    model = ToyBlockNet(vocab=40, cache_mode=cache, default_block_length=4)
    for block in (4, 8):
        _check(model, build_strategy(name, block_length=block, **params))


@pytest.mark.parametrize("cache", ["none", "block"])
def test_sampling_stop_at_eos_templates_and_history_keep_the_bound(cache):
    """Temperature draws, the EOS fill, infilling templates and history do not add reads per step."""
    canvas_model = TinyNet()
    block_model = ToyBlockNet(vocab=40, cache_mode=cache, default_block_length=4, eos_boost=2.0)
    template = torch.full((len(PROMPTS), 16), canvas_model.mask_id)
    template[:, 5] = 4
    for model in (canvas_model, block_model):
        for options in ({"temperature": 1.0}, {"stop_at_eos": True}, {"temperature": 0.7, "stop_at_eos": True}):
            strategy = build_strategy("confidence-threshold", threshold=0.8, block_length=4, **options)
            results, _ = _check(model, strategy, return_history=True, seed=3)
            assert all(len(r.history) == r.nfe for r in results)
    results, _ = _check(canvas_model, build_strategy("confidence-topk", k=2), template=template)
    assert all(r.tokens[5] == 4 for r in results)


def test_the_bound_can_fail():
    """A strategy that reads a value on the host each step exceeds it: the counter sees engine-side reads."""

    class Peeking(type(build_strategy("confidence-topk"))):
        def step(self, view):
            if bool(view.masked.any()):  # one host read per step
                return super().step(view)
            return super().step(view)

    model = TinyNet()
    with count_host_syncs(model) as syncs:
        decode(model, PROMPTS, gen_length=16, strategy=Peeking(k=1))
    assert syncs.outside > 16 + SET_UP


@pytest.mark.parametrize("read", [
    lambda v: v.masked.sum().item(), lambda v: int(v.masked.sum()), lambda v: v.masked.nonzero(as_tuple=True),
    lambda v: torch.argwhere(v.masked), lambda v: torch.where(v.masked), lambda v: v.canvas[v.masked],
], ids=["item", "int", "nonzero-tuple", "argwhere", "where-one-arg", "bool-mask-index"])
def test_reads_are_seen_under_inference_mode(read):
    """The loops decode under torch.inference_mode, where composite ops (`.item()`, nonzero(as_tuple=True),
    argwhere, one-argument where) reach a dispatch mode whole: each still counts as a host read."""

    class Reading(type(build_strategy("confidence-topk"))):
        def step(self, view):
            read(view)
            return super().step(view)

    model = TinyNet()
    with count_host_syncs(model) as syncs:
        decode(model, PROMPTS, gen_length=16, strategy=Reading(k=1))
    assert syncs.outside >= 16 + syncs.calls, syncs.summary()


@pytest.mark.parametrize("cache", ["none", "block"])
def test_prophet_reads_once_per_step_without_masks_outside_the_block(cache):
    """Prophet finds its candidates from the loop's count and checks other masks only where there
    are some: one read per step on the block-causal loop and on the canvas loop with one block."""
    _check(ToyBlockNet(vocab=40, cache_mode=cache, default_block_length=4), build_strategy("prophet", block_length=4))
    _check(TinyNet(), build_strategy("prophet"))


@pytest.mark.parametrize("cache", ["none", "block"])
def test_greedy_edit_threshold_over_one_block_reads_once_per_step(cache):
    """edit-threshold's block pass (greedy, a view of one block): one softmax over the block instead of
    searching its committed slots, so one read per step on the block-causal loop and on the canvas loop
    with one block; with blocks on the canvas loop (or sampling) it searches them (docs/strategies.md)."""
    params = dict(threshold=0.5, edit_threshold=0.1)
    _check(ToyBlockNet(vocab=40, cache_mode=cache, default_block_length=4),
           build_strategy("edit-threshold", block_length=4, **params))
    _check(TinyNet(), build_strategy("edit-threshold", **params))
    model = TinyNet()
    with count_host_syncs(model) as syncs:
        decode(model, PROMPTS, gen_length=16, strategy=build_strategy("edit-threshold", block_length=4, **params))
    assert syncs.outside > syncs.calls + SET_UP  # the bounded path's nonzero: the check above can fail


@pytest.mark.parametrize("cache", ["none", "block"])
def test_indel_threshold_reads_once_per_step_as_on_a_gpu_and_twice_on_the_cpu(cache, monkeypatch):
    """indel-threshold off the CPU (READ_ON_CPU off: the step as on a GPU) reads nothing itself: one
    read per call. On the CPU it reads once more per round after its first (does a row delete, split
    or meet an earlier state?), where a read costs nothing and spares the loop escape and the shift."""
    from parallelbench.decoding.schedules import indel_threshold
    from test_decoding_indel import EditingToy

    def model():
        return EditingToy(boost=2.0, mask_free=True, scale=2.5, default_block_length=4, cache_mode=cache, eos_boost=1.0)

    strategy = build_strategy("indel-threshold", threshold=0.3, edit_threshold=0.1, post_steps=3, block_length=4)
    monkeypatch.setattr(indel_threshold, "READ_ON_CPU", False)
    gpu_like, _ = _check(model(), strategy)
    monkeypatch.setattr(indel_threshold, "READ_ON_CPU", True)
    with count_host_syncs(m := model()) as syncs:
        on_cpu = decode(m, PROMPTS, gen_length=16, strategy=strategy)
    assert syncs.calls + SET_UP < syncs.outside <= 2 * syncs.calls + SET_UP, syncs.summary()
    assert [(r.tokens, r.nfe, r.extra["deletes"], r.extra["inserts"]) for r in on_cpu] == [
        (r.tokens, r.nfe, r.extra["deletes"], r.extra["inserts"]) for r in gpu_like]
    assert sum(r.extra["deletes"] + r.extra["inserts"] for r in on_cpu) > 0  # the shift path ran too
