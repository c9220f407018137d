"""Each selection rule pinned on hand-made confidences, directly and through `decode`."""

from __future__ import annotations

import pytest
import torch
from test_decoding_models import EOS, MASK, TableModel, TinyNet, entropy_of, peaked

from parallelbench.decoding import build_strategy, decode, selection

V = 8


def table(confs, tokens=None):
    tokens = tokens or [2 + (i % (V - 2)) for i in range(len(confs))]
    return [peaked(V, t, c) for t, c in zip(tokens, confs)]


def run(probs, strategy, **kw):
    return decode(TableModel(probs), [[3, 4]], gen_length=len(probs), strategy=strategy, **kw)[0]


def test_top_k_takes_best_scores_and_breaks_ties_left():
    scores = torch.tensor([[0.5, 0.9, 0.9, 0.1]])
    cand = torch.tensor([[True, True, True, True]])
    assert selection.top_k(scores, cand, 2).tolist() == [[False, True, True, False]]
    cand = torch.tensor([[True, False, True, True]])
    assert selection.top_k(scores, cand, 2).tolist() == [[True, False, True, False]]
    # k larger than the candidates commits all of them and nothing else
    assert selection.top_k(scores, cand, 9).tolist() == [[True, False, True, True]]


def test_threshold_commits_all_above_and_falls_back_to_top1():
    r = run(table([0.5, 0.95, 0.3, 0.97]), build_strategy("confidence-threshold", threshold=0.9))
    assert r.tokens_per_step == [2, 1, 1]
    assert r.order == [1, 0, 2, 0]
    assert r.nfe == 3


def test_threshold_is_strict():
    conf = torch.tensor([[0.9, 0.8]])
    cand = torch.ones(1, 2, dtype=torch.bool)
    # nothing strictly above 0.9: the fallback takes the single best
    assert selection.threshold(conf, cand, 0.9).tolist() == [[True, False]]
    assert selection.threshold(conf, cand, 0.79).tolist() == [[True, True]]


def test_factor_boundary_exact():
    c = torch.tensor([[0.75, 0.5, 0.25, 0.0]], dtype=torch.float64)
    cand = torch.tensor([[True, True, True, False]])
    # (n+1)(1-c_n): n=1 -> 0.5, n=2 -> 1.5, n=3 -> 3.0 (strict inequality)
    assert selection.factor_count(c, cand, 0.5).tolist() == [1]  # none admissible: at least one
    assert selection.factor_count(c, cand, 0.51).tolist() == [1]
    assert selection.factor_count(c, cand, 1.5).tolist() == [1]
    assert selection.factor_count(c, cand, 1.51).tolist() == [2]
    assert selection.factor_count(c, cand, 3.0).tolist() == [2]
    assert selection.factor_count(c, cand, 3.01).tolist() == [3]
    assert selection.factor_count(c, cand, 100.0).tolist() == [3]  # never beyond the candidates


def test_factor_through_decode():
    probs = table([0.5, 0.75, 0.25])  # sorted: 0.75, 0.5, 0.25
    r = run(probs, build_strategy("confidence-factor", factor=1.6))
    # step 0: n=2 admissible (3 * 0.5 = 1.5 < 1.6), n=3 not (4 * 0.75 = 3); step 1: one left
    assert r.tokens_per_step == [2, 1]
    assert r.order == [0, 0, 1]
    r = run(probs, build_strategy("confidence-factor", factor=1.4))
    assert r.tokens_per_step == [1, 1, 1]


def test_eb_bound_exact():
    h = torch.tensor([[0.5, 0.125, 0.25, 9.0]], dtype=torch.float64)
    cand = torch.tensor([[True, True, True, False]])
    # ascending 0.125, 0.25, 0.5: sum - max = 0, 0.125, 0.375 (the bound is inclusive)
    assert selection.entropy_bounded_count(h, cand, 0.0).tolist() == [1]
    assert selection.entropy_bounded_count(h, cand, 0.124).tolist() == [1]
    assert selection.entropy_bounded_count(h, cand, 0.125).tolist() == [2]
    assert selection.entropy_bounded_count(h, cand, 0.374).tolist() == [2]
    assert selection.entropy_bounded_count(h, cand, 0.375).tolist() == [3]
    chosen = selection.entropy_bounded(h, cand, 0.125)
    assert chosen.tolist() == [[False, True, True, False]]


def test_eb_through_decode():
    confs = [0.99, 0.6, 0.9]
    probs = table(confs)
    h = sorted(entropy_of(p) for p in probs)
    gamma = h[0] + 0.5 * (h[1] - h[0])  # admits the two lowest-entropy tokens (sum - max = h0), not three
    assert h[0] + h[1] > gamma
    r = run(probs, build_strategy("eb", gamma=gamma))
    assert r.tokens_per_step == [2, 1]
    assert r.order == [0, 1, 0]


def test_blocks_limit_each_step_to_the_active_block():
    probs = table([0.3, 0.4, 0.99, 0.98])  # block 2 is more confident but must wait
    r = run(probs, build_strategy("confidence-topk", k=3, block_length=2))
    assert r.tokens_per_step == [2, 2]
    assert r.order == [0, 0, 1, 1]
    r = run(probs, build_strategy("confidence-threshold", threshold=0.9, block_length=2))
    assert r.order == [1, 0, 2, 2]


def test_steps_schedule_matches_llada_split():
    probs = table([0.9 - 0.05 * i for i in range(8)])
    r = run(probs, build_strategy("confidence-topk", steps=3))
    assert r.tokens_per_step == [3, 3, 2]
    r = run(probs, build_strategy("confidence-topk", steps=4, block_length=4))
    assert r.tokens_per_step == [2, 2, 2, 2]
    assert r.order == [0, 0, 1, 1, 2, 2, 3, 3]


@pytest.mark.parametrize(
    "name,expected_first",
    [("confidence-topk", 2), ("topk-margin", 2), ("entropy-topk", 2), ("l2r", 0)],
)
def test_scores_rank_positions(name, expected_first):
    probs = table([0.4, 0.5, 0.9])
    r = run(probs, build_strategy(name, k=1))
    assert r.order.index(0) == expected_first


def test_margin_and_entropy_can_disagree_with_confidence():
    # Position 0: 0.5 vs 0.49 (tiny margin); position 1: 0.45 vs spread rest (large margin).
    p0 = [0.0, 0.01, 0.5, 0.49, 0.0, 0.0, 0.0, 0.0]
    p1 = [0.0, 0.11, 0.0, 0.0, 0.45, 0.11, 0.11, 0.22]
    conf = run([p0, p1], build_strategy("confidence-topk"))
    marg = run([p0, p1], build_strategy("topk-margin"))
    assert conf.order == [0, 1] and marg.order == [1, 0]
    ent = run([p0, p1], build_strategy("entropy-topk"))
    assert ent.order == [0, 1]  # p0 has the lower entropy
    assert entropy_of(p0) < entropy_of(p1)


def test_entropy_topk_one_token_matches_the_general_rule():
    # k = 1 takes the least entropy directly; top_k over -entropy (the general path) must agree,
    # ties (the leftmost first) and several rows included
    from parallelbench.decoding.presets import EntropyTopK
    from parallelbench.decoding.strategy import Strategy

    class General(EntropyTopK):
        step = Strategy.step

    tied = TableModel([peaked(V, 2, 0.6), peaked(V, 3, 0.9), peaked(V, 4, 0.6), peaked(V, 5, 0.9)])
    for model, prompts, gen in ((tied, [[3]], 4), (TinyNet(), [[3], [5, 6, 7]], 12)):
        fast = decode(model, prompts, gen_length=gen, strategy=EntropyTopK())
        general = decode(model, prompts, gen_length=gen, strategy=General())
        assert [(r.tokens, r.order) for r in fast] == [(r.tokens, r.order) for r in general]


def test_klass_waits_for_stability_then_commits_confident_tokens():
    probs = table([0.95, 0.97, 0.5, 0.6])
    r = run(probs, build_strategy("klass", threshold=0.9, stable_steps=2))
    # step 0: nothing stable yet -> top-1 fallback (pos 1); step 1: pos 0 stable and confident
    assert r.order[1] == 0 and r.order[0] == 1
    assert r.tokens_per_step[:2] == [1, 1]
    r1 = run(probs, build_strategy("klass", threshold=0.9, stable_steps=1))
    assert r1.tokens_per_step[0] == 2


def test_mask_token_is_never_committed():
    p = [0.9, 0.0, 0.1] + [0.0] * (V - 3)  # the mask token would be the argmax
    r = run([p, p], build_strategy("confidence-topk", k=2))
    assert MASK not in r.tokens and r.tokens == [2, 2]


def test_eos_positions_decode_like_any_token():
    p = peaked(V, EOS, 0.9)
    r = run([p, p], build_strategy("confidence-topk", k=1))
    assert r.tokens == [EOS, EOS]


def _rank_top_k(scores, cand, k):
    """The rank-based definition: candidates whose descending stable rank is below k."""
    s = scores.float().masked_fill(~cand, float("-inf"))
    rank = torch.argsort(torch.argsort(s, dim=1, descending=True, stable=True), dim=1)
    return (rank < k.unsqueeze(1)) & cand


@pytest.mark.parametrize("seed", range(20))
def test_one_sort_rules_equal_their_count_definitions(seed):
    """top_k with a per-row k, the factor rule and eb (one sort and a scatter each) choose what the
    count-then-rank definitions do, ties (repeated values) and empty rows included."""
    g = torch.Generator().manual_seed(seed)
    b, n = 6, 12
    conf = torch.randint(0, 6, (b, n), generator=g).float() / 5  # many ties
    cand = torch.rand((b, n), generator=g) < 0.7
    cand[0] = False  # a row without candidates
    k = torch.randint(0, n + 2, (b,), generator=g)
    assert torch.equal(selection.top_k(conf, cand, k), _rank_top_k(conf, cand, k))
    for k_int in (2, 5):
        assert torch.equal(selection.top_k(conf, cand, k_int), _rank_top_k(conf, cand, torch.full((b,), k_int)))
    for f in (0.3, 1.0, 1.6, 4.0):
        want = _rank_top_k(conf, cand, selection.factor_count(conf, cand, f))
        assert torch.equal(selection.factor(conf, cand, f), want)
    h = torch.randint(0, 4, (b, n), generator=g).float() / 8  # entropies, never negative
    for gamma in (0.0, 0.125, 0.3, 1.0, 10.0):
        want = _rank_top_k(-h, cand, selection.entropy_bounded_count(h, cand, gamma))
        assert torch.equal(selection.entropy_bounded(h, cand, gamma), want)
