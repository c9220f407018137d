"""The loop itself: batching, dropped rows, NFE and tokens-per-step accounting, seeds,
templates, EOS handling, history and option validation."""

from __future__ import annotations

import math

import pytest
import torch
from test_decoding_models import EOS, MASK, TableModel, TinyNet, peaked

from parallelbench.decoding import build_strategy, decode

V = 8


def test_rows_progress_independently_and_finished_rows_are_dropped():
    easy = [peaked(V, 2 + i, 0.99) for i in range(4)]
    hard = [peaked(V, 2 + i, 0.5) for i in range(4)]
    model = TableModel([easy, hard, easy])
    res = decode(model, [[5], [5, 6, 7], [6]], gen_length=4, strategy=build_strategy("confidence-threshold", threshold=0.9))
    assert [r.nfe for r in res] == [1, 4, 1]
    assert res[1].tokens_per_step == [1, 1, 1, 1]
    assert res[0].tokens_per_step == [4]
    # finished rows leave the batch; `rows` names the original row of each line
    assert model.calls == [[0, 1, 2], [1], [1], [1]]


def test_nfe_and_tokens_per_step_add_up():
    net = TinyNet()
    prompts = [[3, 4, 5], [6], [7, 8], [9, 10, 11, 12]]
    for name, params in [
        ("confidence-threshold", {"threshold": 0.5}),
        ("confidence-factor", {"factor": 2.0}),
        ("random", {"k": 3}),
        ("eb", {"gamma": 1.0, "block_length": 4}),
    ]:
        for r in decode(net, prompts, gen_length=16, strategy=build_strategy(name, **params)):
            assert len(r.tokens_per_step) == r.nfe
            assert sum(r.tokens_per_step) == r.num_committed == 16
            assert sorted(set(r.order)) == list(range(r.nfe))
            assert MASK not in r.tokens


def test_topk_nfe_is_ceil_of_length_over_k():
    net = TinyNet()
    for k in (1, 2, 3, 5):
        r = decode(net, [[3, 4]], gen_length=16, strategy=build_strategy("confidence-topk", k=k))[0]
        assert r.nfe == math.ceil(16 / k)


def test_seeds_make_decoding_reproducible_and_batch_independent():
    probs = [[0.0, 0.1, 0.2, 0.3, 0.4, 0.0, 0.0, 0.0]] * 6
    model = TableModel(probs)
    s = build_strategy("random", k=2, temperature=1.0)
    a = decode(model, [[2]] * 3, gen_length=6, strategy=s, seed=7)
    b = decode(model, [[2]] * 3, gen_length=6, strategy=s, seed=7)
    assert [r.tokens for r in a] == [r.tokens for r in b] and [r.order for r in a] == [r.order for r in b]
    c = decode(model, [[2]] * 3, gen_length=6, strategy=s, seed=8)
    assert [r.tokens for r in a] != [r.tokens for r in c]
    # row i draws from seed + i: decoding row 2 alone with seed + 2 gives the same result
    alone = decode(model, [[2]], gen_length=6, strategy=s, seed=9)[0]
    assert alone.tokens == a[2].tokens and alone.order == a[2].order


def test_temperature_sampling_follows_the_model_distribution():
    p = [0.0, 0.0, 0.2, 0.8] + [0.0] * (V - 4)
    n = 4000
    model = TableModel([p])
    res = decode(model, [[2]] * n, gen_length=1, strategy=build_strategy("confidence-topk", temperature=1.0), seed=0)
    freq = sum(r.tokens[0] == 3 for r in res) / n
    assert abs(freq - 0.8) < 4 * math.sqrt(0.8 * 0.2 / n)
    greedy = decode(model, [[2]] * 5, gen_length=1, strategy=build_strategy("confidence-topk"))
    assert all(r.tokens == [3] for r in greedy)
    # a low temperature sharpens towards the argmax
    cold = decode(model, [[2]] * 500, gen_length=1, strategy=build_strategy("confidence-topk", temperature=0.1))
    assert sum(r.tokens[0] == 3 for r in cold) == 500


def test_template_positions_stay_fixed():
    net = TinyNet()
    template = [[MASK, 5, MASK, 6, MASK, MASK], [7, 7, 7, 7, 7, 7]]
    res = decode(net, [[3], [4]], gen_length=6, strategy=build_strategy("confidence-topk"), template=template)
    assert res[0].tokens[1] == 5 and res[0].tokens[3] == 6
    assert res[0].order[1] == -1 and res[0].order[3] == -1
    assert res[0].num_committed == 4 and res[0].nfe == 4
    # a row with nothing to generate costs no model call
    assert res[1].nfe == 0 and res[1].tokens == [7] * 6 and res[1].tokens_per_step == []


def test_stop_at_eos_stops_once_the_prefix_is_committed():
    probs = [peaked(V, 2, 0.5), peaked(V, 3, 0.6), peaked(V, EOS, 0.99), peaked(V, 4, 0.7), peaked(V, 5, 0.8)]
    model = TableModel(probs)
    plain = decode(model, [[2]], gen_length=5, strategy=build_strategy("l2r"))[0]
    assert plain.nfe == 5 and plain.tokens == [2, 3, EOS, 4, 5]
    r = decode(model, [[2]], gen_length=5, strategy=build_strategy("l2r", stop_at_eos=True))[0]
    assert r.nfe == 3 and r.tokens == [2, 3, EOS, EOS, EOS]
    assert r.order == [0, 1, 2, -1, -1] and r.num_committed == 3 == sum(r.tokens_per_step)
    t = decode(model, [[2]], gen_length=5, strategy=build_strategy("confidence-threshold", threshold=0.9, stop_at_eos=True))[0]
    # EOS at step 0, then one by one by confidence: 5, 4, 3 (position 1), 2 (position 0): nothing is saved
    assert t.tokens == [2, 3, EOS, EOS, EOS] and t.nfe == 5 and t.order == [4, 3, 0, 2, 1]
    x = decode(model, [[2]], gen_length=5, strategy=build_strategy("confidence-threshold", threshold=0.55, stop_at_eos=True))[0]
    # step 0 commits EOS, 5, 4, 3 (all > 0.55); step 1 commits position 0 and stops
    assert x.nfe == 2 and x.tokens == [2, 3, EOS, EOS, EOS]


def test_history_records_each_step():
    net = TinyNet()
    r = decode(net, [[3, 4]], gen_length=8, strategy=build_strategy("confidence-topk", k=3), return_history=True)[0]
    assert len(r.history) == r.nfe == 3
    assert r.history[-1] == r.tokens
    assert [sum(t != MASK for t in h) for h in r.history] == [3, 6, 8]


def test_left_padding_and_tensor_prompts():
    net = TinyNet()
    ragged = decode(net, [[3, 4, 5], [6]], gen_length=8, strategy="confidence-topk")
    single = decode(net, [[6]], gen_length=8, strategy="confidence-topk")
    # padding is masked out of attention, so the short row decodes as it does alone
    assert ragged[1].tokens == single[0].tokens
    as_tensor = decode(net, torch.tensor([[3, 4, 5]]), gen_length=8, strategy="confidence-topk")
    assert as_tensor[0].tokens == ragged[0].tokens
    assert decode(net, [], gen_length=8, strategy="confidence-topk") == []


@pytest.mark.parametrize(
    "name,params,gen_length,needle",
    [
        ("confidence-topk", {"block_length": 5}, 16, "block_length"),
        ("confidence-topk", {"k": 0}, 16, "k"),
        ("confidence-topk", {"k": 2, "steps": 4}, 16, "steps"),
        ("confidence-topk", {"steps": 3, "block_length": 8}, 16, "steps"),
        ("confidence-threshold", {"threshold": 1.5}, 16, "threshold"),
        ("confidence-threshold", {"threshold": 0.0}, 16, "threshold"),
        ("confidence-factor", {"factor": -1}, 16, "factor"),
        ("eb", {"gamma": -0.1}, 16, "gamma"),
        ("random", {"temperature": -1}, 16, "temperature"),
        ("random", {"bogus": 1}, 16, "bogus"),
        ("random", {"k": 1.5}, 16, "k"),
    ],
)
def test_invalid_options_name_the_option(name, params, gen_length, needle):
    with pytest.raises(ValueError, match=needle):
        build_strategy(name, **params).validate(gen_length)


def test_unknown_strategy_lists_valid_names():
    with pytest.raises(ValueError, match="confidence-threshold"):
        build_strategy("no-such-strategy")


def test_template_shape_is_checked():
    with pytest.raises(ValueError, match="template"):
        decode(TinyNet(), [[3]], gen_length=4, strategy="l2r", template=[[MASK] * 3])


def test_invariants_hold_for_random_configurations():
    """Every strategy x temperature x blocks x stop_at_eos x random templates keeps the accounting."""
    import random

    from test_decoding_models import TinyCausal

    from parallelbench.decoding import strategy_class, strategy_names

    net, verifier, rng = TinyNet(), TinyCausal(), random.Random(0)
    canvas_strategies = [n for n in strategy_names() if not strategy_class(n).requires_block_causal]
    for trial in range(40):
        name = rng.choice(canvas_strategies)
        g = rng.choice([8, 16])
        params = {"temperature": rng.choice([0.0, 1.0]), "stop_at_eos": rng.choice([False, True])}
        if name != "dus" and rng.random() < 0.5:
            params["block_length"] = rng.choice([2, 4, 8])
        prompts = [[rng.randrange(2, 16) for _ in range(rng.randrange(1, 6))] for _ in range(rng.randrange(1, 5))]
        template = [[MASK if rng.random() < 0.7 else rng.randrange(1, 16) for _ in range(g)] for _ in prompts]
        strategy = build_strategy(name, **params)
        res = decode(net, prompts, gen_length=g, strategy=strategy, template=template, seed=trial, verifier=verifier)
        for r, t in zip(res, template):
            assert sum(r.tokens_per_step) == r.num_committed and len(r.tokens_per_step) == r.nfe
            assert MASK not in r.tokens
            for tok, fixed, o in zip(r.tokens, t, r.order):
                if fixed != MASK:
                    assert o == -1 and (tok == fixed or (params["stop_at_eos"] and tok == EOS))
            if not params["stop_at_eos"]:
                assert r.num_committed == t.count(MASK)
