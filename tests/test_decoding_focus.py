"""Per-position quantities computed only at a strategy's focus positions give the same
decodes as computing them everywhere, and the fast formulas match the textbook ones."""

from __future__ import annotations

import pytest
import torch
from test_decoding_models import MASK, TinyCausal, TinyNet

from parallelbench.decoding import build_strategy, decode, strategy_class, strategy_names
from parallelbench.decoding.view import StepView, entropy_of, row_max, rows_of


def _everywhere(strategy):
    """The same strategy with focus "all" (every quantity at every position, the old way)."""
    cls = type(strategy)
    wide = type(f"{cls.__name__}All", (cls,), {"focus": "all"})
    clone = wide(**strategy.params)
    clone.name = strategy.name
    return clone


@pytest.mark.parametrize("name", [n for n in strategy_names() if not strategy_class(n).requires_block_causal])
@pytest.mark.parametrize("params", [{}, {"block_length": 4}, {"temperature": 1.0}])
def test_focus_decodes_like_computing_everywhere(name, params):
    net = TinyNet(vocab=24)
    prompts = [[3, 4, 5], [6], [7, 8, 9, 10, 11]]
    strategy = build_strategy(name, **params)
    assert strategy.focus in ("candidates", "masked")  # every built-in preset narrows its work
    a = decode(net, prompts, gen_length=16, strategy=strategy, seed=2, verifier=TinyCausal(vocab=24), return_history=True)
    b = decode(net, prompts, gen_length=16, strategy=_everywhere(strategy), seed=2, verifier=TinyCausal(vocab=24),
               return_history=True)
    assert [(r.tokens, r.order, r.nfe, r.history) for r in a] == [(r.tokens, r.order, r.nfe, r.history) for r in b]


def _view(logits, masked, focus, temperature=0.0):
    b, g, _ = logits.shape
    return StepView(
        logits=logits, canvas=torch.where(masked, MASK, 5), masked=masked, editable=torch.ones_like(masked),
        block_of=torch.zeros(g, dtype=torch.long), block=torch.zeros(b, dtype=torch.long),
        block_step=torch.zeros(b, dtype=torch.long), step=torch.zeros(b, dtype=torch.long), rows=torch.arange(b),
        rng_keys=torch.arange(b), temperature=temperature, mask_id=MASK, eos_id=1, num_blocks=1, block_length=g,
        commit_conf=torch.zeros(b, g), focus=focus,
    )


def test_focus_quantities_equal_the_full_ones_at_focus_positions():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 12, 40, generator=g) * 3
    logits[0, 2, 7:] = float("-inf")  # zero-probability tokens
    masked = torch.rand(3, 12, generator=g) < 0.7
    focus = masked & (torch.rand(3, 12, generator=g) < 0.6)
    full, narrow = _view(logits, masked, None), _view(logits, masked, focus)
    for attr in ("x0", "confidence", "margin"):
        assert torch.equal(getattr(full, attr)[focus], getattr(narrow, attr)[focus]), attr
    assert torch.allclose(full.entropy[focus], narrow.entropy[focus], rtol=1e-5, atol=1e-6)
    assert torch.equal(narrow.x0[~focus], full.canvas[~focus])  # off focus: the canvas
    hot_full, hot_narrow = _view(logits, masked, None, 0.7), _view(logits, masked, focus, 0.7)
    assert torch.equal(hot_full.x0[focus], hot_narrow.x0[focus])
    assert torch.equal(hot_full.confidence[focus], hot_narrow.confidence[focus])


def test_prob_at_focus_is_the_token_probability_at_focus_and_zero_elsewhere():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(3, 12, 40, generator=g) * 3
    masked = torch.rand(3, 12, generator=g) < 0.7
    focus = masked & (torch.rand(3, 12, generator=g) < 0.6)
    tokens = torch.randint(0, 40, (3, 12), generator=g)
    tokens[tokens == MASK] = MASK + 1
    narrow, full = _view(logits, masked, focus), _view(logits, masked, None)
    got = narrow.prob_at_focus(tokens)
    want = torch.softmax(logits, dim=-1).gather(2, tokens.unsqueeze(2)).squeeze(2)
    assert torch.allclose(got[focus], want[focus], rtol=1e-6, atol=0)
    assert torch.equal(got[~focus], torch.zeros_like(got[~focus]))
    assert torch.equal(full.prob_at_focus(tokens)[focus], got[focus])
    at_mask = narrow.prob_at_focus(torch.full_like(tokens, MASK))  # the mask token is never proposed
    assert torch.equal(at_mask, torch.zeros_like(at_mask))


def test_entropy_formula_matches_entr_including_zero_and_one_hot_rows():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(6, 30, generator=g) * torch.tensor([0.1, 1, 5, 30, 1, 1]).unsqueeze(1)
    logits[4, 1:] = float("-inf")  # one-hot: entropy exactly 0
    logits[5, 10:] = float("-inf")
    p = torch.softmax(logits, dim=-1)
    top = p.amax(dim=-1)
    p[:, MASK] = 0.0
    expected = torch.special.entr(p).sum(dim=-1)
    got = entropy_of(logits, p, top)
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert float(got[4]) == 0.0


def test_rows_of_matches_advanced_indexing():
    x = torch.randn(4, 20, 6)
    r, p = torch.tensor([0, 3, 3, 1]), torch.tensor([2, 0, 11, 7])
    assert torch.equal(rows_of(x[:, 8:], r, p), x[:, 8:][r, p])
    y = torch.randn(20, 4, 6).transpose(0, 1)  # no row-major layout: falls back
    assert torch.equal(rows_of(y, r, p), y[r, p])
    ids = torch.arange(4 * 30).view(4, 30)  # [b, G] entries: a block's columns of a canvas, and a strided one
    for z in (ids[:, 8:20], ids[:, ::2], ids.t().contiguous().t()[:, 8:20]):
        assert torch.equal(rows_of(z, r, p), z[r, p])


def test_an_unknown_focus_is_refused_before_decoding():
    bad = type("Bad", (type(build_strategy("confidence-topk")),), {"focus": "everything"})()
    net = TinyNet()
    with pytest.raises(ValueError, match="focus='everything'.*'candidates', 'masked' or 'all'"):
        decode(net, [[3]], gen_length=4, strategy=bad)


def test_row_max_is_max_with_the_first_index_on_ties():
    g = torch.Generator().manual_seed(5)
    for shape in [(9, 4096), (4, 384), (3, 100), (0, 512)]:
        x = torch.randn(*shape, generator=g)
        if shape[0]:
            x[0] = 0.5  # all tied
            x[1, 7] = x[1, 300 % shape[1]] = 9.0  # tie across chunks
        expected = x.max(dim=-1)
        values, indices = row_max(x)
        assert torch.equal(values, expected.values) and torch.equal(indices, expected.indices), shape
