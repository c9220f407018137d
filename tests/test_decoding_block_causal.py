"""Block-causal decoding (issue 27): the absolute block grid, the engine-built attention, the
exact KV cache, stopping after the EOS block, and the refusals, on a toy block-causal net."""

from __future__ import annotations

import pytest
import torch
from block_causal_toy import ToyBlockNet

from parallelbench.decoding import build_strategy, decode
from parallelbench.decoding.block_grid import BlockGrid

PROMPTS = [[5, 6, 7, 8, 9], [10, 11], [12, 13, 14, 15, 16, 17, 18, 19, 20], [21, 22, 23, 24]]


def net(**kw):
    kw.setdefault("scale", 6.0)
    return ToyBlockNet(**kw)


def run(model, prompts, gen, name="confidence-threshold", seed=0, **params):
    return decode(model, prompts, gen_length=gen, strategy=build_strategy(name, **params), seed=seed)


def summary(results):
    return [(r.tokens, r.nfe, r.tokens_per_step, r.order, r.num_committed) for r in results]


class Spy(ToyBlockNet):
    """Records what the engine hands the net."""

    def __init__(self, **kw):
        super().__init__(scale=6.0, **kw)
        self.seen = []

    def forward(self, canvas, *, attention_mask=None, rows=None, position_ids=None, attention_bias=None):
        self.seen.append(("forward", canvas.clone(), position_ids, attention_bias, rows.clone()))
        return super().forward(canvas, attention_mask=attention_mask, rows=rows, position_ids=position_ids,
                               attention_bias=attention_bias)

    def forward_cached(self, ids, *, kv, rows, start, position_ids, attention_bias, store=None):
        self.seen.append(("cached", ids.clone(), start, None if store is None else store.clone(), rows.clone()))
        return super().forward_cached(ids, kv=kv, rows=rows, start=start, position_ids=position_ids,
                                      attention_bias=attention_bias, store=store)

    __call__ = forward


# ---------------------------------------------------------------------- the grid
def test_grid_puts_the_prompt_tail_in_the_first_block_and_rounds_each_row_up():
    grid = BlockGrid.build(torch.tensor([5, 2, 9, 4]), 8, 4)
    assert grid.tail.tolist() == [1, 2, 1, 0] and grid.head.tolist() == [4, 0, 8, 4]
    assert grid.span.tolist() == [12, 12, 12, 8]  # ceil((tail + 8) / 4) * 4
    assert (grid.head_width, grid.region_width) == (8, 12)


def test_every_region_slot_up_to_the_block_boundary_is_decoded_and_counted():
    # k = 1: one slot per step, so the steps are exactly the row's slots on its grid
    res = run(net(), PROMPTS, 8, "confidence-topk", k=1, block_length=4)
    assert [r.nfe for r in res] == [11, 10, 11, 8]  # span - tail: 8 returned + 3 / 2 / 3 / 0 extra
    for r in res:
        assert len(r.tokens) == 8 and 0 not in r.tokens
        assert r.num_committed == 8 == sum(r.tokens_per_step) and len(r.tokens_per_step) == r.nfe


def test_the_engine_builds_positions_and_the_block_causal_bias_itself():
    spy = Spy()
    run(spy, [[5, 6, 7, 8, 9], [10, 11]], 8, "confidence-topk", k=1, block_length=4)
    kind, canvas, pos, bias, rows = spy.seen[0]
    assert kind == "forward" and pos is not None and bias is not None
    # the first call runs up to the end of block 0: row 0 = head [5 6 7 8] | tail 9 + 3 slots;
    # row 1 = 4 pads | tail 10 11 + 2 slots
    assert canvas.shape == (2, 8) and canvas[0, :5].tolist() == [5, 6, 7, 8, 9] and canvas[1, 4:6].tolist() == [10, 11]
    assert pos[0].tolist() == list(range(8)) and pos[1, 4:].tolist() == [0, 1, 2, 3]
    seen = torch.isfinite(bias)
    # row 0: prompt block 0 (cols 0-3) sees only itself; block 1 (cols 4-7) sees both
    assert seen[0, 0, :4].all() and not seen[0, 0, 4:].any() and seen[0, 5].all()
    # row 1: padding is never a key; its block 0 (cols 4-7) sees itself
    assert not seen[1, 4:, :4].any() and seen[1, 4:, 4:].all()


def test_a_plain_decode_call_needs_nothing_set_on_the_net():
    a = run(net(), PROMPTS, 8, block_length=4, threshold=0.6)
    b = run(net(default_block_length=4), PROMPTS, 8, threshold=0.6)  # the net's default block length
    assert summary(a) == summary(b)


@pytest.mark.parametrize(("name", "params"), [("confidence-threshold", {"threshold": 0.7}), ("credit", {}),
                                              ("slowfast", {}), ("confidence-topk", {"k": 3})])
def test_tokens_per_step_counts_each_rows_commits_at_its_own_steps(name, params):
    # no remask, no edit: a row's slot committed at its own step s has order s, so the counts per step
    # follow from `order` alone (rows finish at different steps and sit steps out)
    for cache_mode in ("none", "block"):
        res = run(net(cache_mode=cache_mode), PROMPTS, 8, name, block_length=4, **params)
        assert len({r.nfe for r in res}) > 1
        for r in res:
            assert r.tokens_per_step == [r.order.count(s) for s in range(r.nfe)]


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("confidence-topk", {"k": 2}),
        ("confidence-threshold", {"threshold": 0.7}),
        ("confidence-threshold", {"threshold": 0.9, "min_k": 2}),
        ("edit-threshold", {"threshold": 0.5, "edit_threshold": 0.6, "edit_rule": "confidence", "post_steps": 2}),
        ("eb", {}),
        ("klass", {}),
        ("dus", {"block_length": 4}),
        ("credit", {}),
        ("rcr", {"k": 1}),
        ("remdm", {"k": 2}),
        ("prophet", {"k": 1}),
        ("pc-sampler", {"k": 2}),
        ("slowfast", {}),
        ("random", {"k": 2}),
        ("topk-margin", {"steps": 8}),
        ("confidence-factor", {}),
        ("confidence-threshold", {"threshold": 0.7, "temperature": 1.0}),
        ("entropy-topk", {"k": 1, "temperature": 0.7}),
    ],
)
def test_a_row_decodes_the_same_alone_in_a_batch_and_with_the_cache(name, params):
    params = {"block_length": 4, **params}
    model = net()
    batched = run(model, PROMPTS, 8, name, **params)
    alone = [run(model, [p], 8, name, seed=i, **params)[0] for i, p in enumerate(PROMPTS)]  # row i draws from seed + i
    assert summary(batched) == summary(alone)
    assert [r.extra for r in batched] == [r.extra for r in alone]
    cached = run(net(cache_mode="block"), PROMPTS, 8, name, **params)
    assert summary(cached) == summary(batched)


def test_the_cache_computes_each_finished_block_once_and_each_step_in_one_call():
    spy = Spy(cache_mode="block")
    res = run(spy, [[5, 6, 7, 8, 9]], 12, "confidence-threshold", threshold=0.6, block_length=4)
    calls = [s for s in spy.seen if s[0] == "cached"]
    assert len(calls) == res[0].nfe and not [s for s in spy.seen if s[0] == "forward"]
    stored = torch.zeros(4 + 16, dtype=torch.long)  # head 4 + region 16
    for _, ids, start, store, _ in calls:
        assert ids.shape[1] <= 8 or start == 0  # one block, or the block plus the one it stores
        if store is not None:
            stored[start : start + ids.shape[1]] += store[0].long()
    # the prompt's whole block and the first three region blocks once each; the last block never
    assert stored.tolist() == [1] * 16 + [0] * 4


def test_cache_and_no_cache_agree_on_a_longer_batched_decode():
    prompts = [list(range(3, 3 + n)) for n in (1, 3, 6, 8, 13)]
    for name, params in (("confidence-threshold", {"threshold": 0.8}), ("confidence-topk", {"k": 1})):
        plain = run(net(seed=2), prompts, 16, name, block_length=8, **params)
        cached = run(net(seed=2, cache_mode="block"), prompts, 16, name, block_length=8, **params)
        assert summary(plain) == summary(cached)


def test_templates_fill_slots_on_the_grid():
    template = torch.full((2, 8), 0, dtype=torch.long)
    template[:, 0] = 30
    template[1, 5] = 31
    res = decode(net(), [[5, 6, 7, 8, 9], [10, 11]], gen_length=8, template=template,
                 strategy=build_strategy("confidence-topk", k=1, block_length=4))
    assert res[0].tokens[0] == 30 and res[1].tokens[0] == 30 and res[1].tokens[5] == 31
    assert res[0].order[0] == -1 and res[0].num_committed == 7 and res[1].num_committed == 6


# ---------------------------------------------------------------------- stopping at EOS
def test_stop_at_eos_ends_a_row_after_the_block_that_holds_its_first_eos():
    model = net(eos_boost=4.0)
    full = run(model, PROMPTS, 16, "confidence-topk", k=1, block_length=4)
    stopped = run(model, PROMPTS, 16, "confidence-topk", k=1, block_length=4, stop_at_eos=True)
    grid = BlockGrid.build(torch.tensor([len(p) for p in PROMPTS]), 16, 4)
    ended_early = 0
    for f, s, tail in zip(full, stopped, grid.tail.tolist()):
        if 1 not in f.tokens:  # no EOS: nothing to stop at
            assert (s.tokens, s.nfe) == (f.tokens, f.nfe)
            continue
        first = f.tokens.index(1)
        end = ((tail + first) // 4 + 1) * 4 - tail  # slots up to the end of the EOS block
        assert s.tokens[:end] == f.tokens[:end] and s.tokens[end:] == [1] * (16 - end)
        assert s.nfe == end  # k = 1: one step per slot up to the end of that block
        ended_early += s.nfe < f.nfe
    assert ended_early >= 2


# ---------------------------------------------------------------------- refusals
def test_a_block_length_that_does_not_suit_the_model_is_refused_before_any_call():
    model = net(block_size=4)
    with pytest.raises(ValueError) as err:
        run(model, PROMPTS, 12, block_length=6)
    assert model.calls == 0 and "\n" not in str(err.value)
    assert "block_length=6" in str(err.value) and "multiple of 4" in str(err.value)
    with pytest.raises(ValueError, match="block_length=6"):
        build_strategy("confidence-threshold", block_length=6).check_model(model)
    assert run(model, PROMPTS, 8, block_length=8)[0].nfe > 0  # a multiple is fine


@pytest.mark.parametrize("name", ["wino", "apd"])
def test_strategies_that_work_across_the_canvas_are_refused_in_one_line(name):
    model = net()
    with pytest.raises(ValueError) as err:
        run(model, PROMPTS, 8, name, block_length=4)
    assert model.calls == 0 and "\n" not in str(err.value) and "block-causal" in str(err.value)


def test_a_block_cache_net_without_the_cached_call_is_refused():
    class NoCache(ToyBlockNet):
        forward_cached = None

    model = NoCache(cache_mode="block")
    with pytest.raises(ValueError, match="forward_cached"):
        run(model, PROMPTS, 8, block_length=4)
    assert model.calls == 0


# ---------------------------------------------------------------------- the next call's plan, host or device
def _gappy_template(rows: int, gen: int) -> torch.Tensor:
    """Mask id 0 where to generate; some rows have whole blocks of 4 given (they skip those blocks, so
    rows reach a block's first call with different columns stored) and one row is given in full."""
    template = torch.zeros((rows, gen), dtype=torch.long)
    template[1, 4:12] = 25  # row 1: its second and third blocks given
    template[3, :6] = 26
    template[4, 8:] = 27  # row 4: done after its second block
    template[5, :] = 28  # row 5: nothing to generate
    return template


@pytest.mark.parametrize("cache", ["none", "block"])
@pytest.mark.parametrize("name,params", [
    ("confidence-topk", {"k": 1, "block_length": 4, "template": True}),
    ("confidence-topk", {"k": 1, "block_length": 4}),
    ("confidence-topk", {"k": 2, "block_length": 8}),
    ("confidence-threshold", {"threshold": 0.6, "block_length": 4, "stop_at_eos": True}),
    ("random", {"k": 2, "block_length": 4, "temperature": 0.9}),
    ("edit-threshold", {"block_length": 4}),  # holds blocks: the held flags travel in the read
    ("edit-threshold", {"block_length": 8, "stop_at_eos": True}),
    ("edit-threshold", {"block_length": 4, "template": True}),
])
def test_the_host_reduction_of_the_plan_equals_the_device_reduction(monkeypatch, name, params, cache):
    """On the CPU a small region is read whole and reduced in Python (_plan_rows, and the next step's
    focus positions: _focus_at); larger regions and other devices reduce on the device. Rows that
    wait, finish early, hold a block or stop at EOS: the model sees the same calls and every result
    is the same either way."""
    from parallelbench.decoding import block_causal

    used = []
    plan_rows = block_causal._plan_rows
    monkeypatch.setattr(block_causal, "_plan_rows", lambda *a: used.append(1) or plan_rows(*a))
    prompts = PROMPTS + [[30, 31, 32, 33, 34, 35, 36], [39]]
    outcomes = []
    for limit in (block_causal.HOST_PLAN_UP_TO, 0):
        monkeypatch.setattr(block_causal, "HOST_PLAN_UP_TO", limit)
        used.clear()
        spy = Spy(cache_mode=cache, eos_boost=1.0)
        kw = dict(params)
        template = _gappy_template(len(prompts), 16) if kw.pop("template", False) else None
        res = decode(spy, prompts, gen_length=16, strategy=build_strategy(name, **kw), seed=3, return_history=True,
                     template=template)
        outcomes.append((summary(res), [r.history for r in res], [r.extra for r in res], len(used)))
        calls = [tuple(x.tolist() if torch.is_tensor(x) else x for x in call) for call in spy.seen]
        outcomes[-1] += (calls,)
    (host, host_hist, host_extra, host_used, host_calls), (dev, dev_hist, dev_extra, dev_used, dev_calls) = outcomes
    assert host_used > 0 and dev_used == 0  # each path really ran
    assert host == dev and host_hist == dev_hist and host_extra == dev_extra
    assert host_calls == dev_calls
    assert len({len(call[-1]) for call in host_calls}) > 1  # windows of some rows: others waited or finished
