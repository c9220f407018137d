"""The counter-based random streams: uniform, independent, reproducible, batch-independent."""

from __future__ import annotations

import math

import torch

from parallelbench.decoding import sampling


def test_uniforms_are_uniform_and_in_the_open_interval():
    keys = sampling.row_keys(torch.arange(64), seed=0)
    u = sampling.uniform(keys, step=3, draw=0, shape=(1000,))
    assert u.shape == (64, 1000) and float(u.min()) > 0 and float(u.max()) < 1
    n = u.numel()
    assert abs(float(u.mean()) - 0.5) < 4 * math.sqrt(1 / 12 / n)
    # ten equal bins, chi-square with 9 degrees of freedom: 99.9% quantile is about 27.9
    counts = torch.histc(u, bins=10, min=0.0, max=1.0)
    chi2 = float(((counts - n / 10) ** 2 / (n / 10)).sum())
    assert chi2 < 27.9


def test_streams_differ_by_row_step_and_draw_and_repeat_exactly():
    keys = sampling.row_keys(torch.arange(4), seed=5)
    a = sampling.uniform(keys, 0, 0, (16,))
    assert torch.equal(a, sampling.uniform(keys, 0, 0, (16,)))
    assert not torch.equal(a[0], a[1])
    assert not torch.equal(a, sampling.uniform(keys, 1, 0, (16,)))
    assert not torch.equal(a, sampling.uniform(keys, 0, 1, (16,)))
    # a row's stream depends only on seed + row, not on its neighbours
    alone = sampling.uniform(sampling.row_keys(torch.tensor([2]), seed=5), 0, 0, (16,))
    assert torch.equal(alone[0], a[2])
    shifted = sampling.uniform(sampling.row_keys(torch.tensor([0]), seed=7), 0, 0, (16,))
    assert torch.equal(shifted[0], a[2])


def test_neighbouring_elements_are_uncorrelated():
    keys = sampling.row_keys(torch.arange(8), seed=1)
    u = sampling.uniform(keys, 0, 0, (5000,)).double()
    x, y = u[:, :-1].flatten() - 0.5, u[:, 1:].flatten() - 0.5
    corr = float((x * y).mean() / (x.std() * y.std()))
    assert abs(corr) < 4 / math.sqrt(x.numel())


def test_gumbel_max_samples_the_softmax():
    logits = torch.log(torch.tensor([0.1, 0.2, 0.7]))
    n = 20000
    keys = sampling.row_keys(torch.arange(n), seed=0)
    tokens = sampling.sample_tokens(logits.expand(n, 1, 3), 1.0, sampling.gumbel(keys, 0, 0, (1, 3)))
    for tok, p in enumerate([0.1, 0.2, 0.7]):
        freq = float((tokens == tok).double().mean())
        assert abs(freq - p) < 4 * math.sqrt(p * (1 - p) / n)
    assert torch.equal(sampling.sample_tokens(logits.expand(2, 1, 3), 0.0, None), torch.tensor([[2], [2]]))


def _chi2_ok(counts: torch.Tensor, probs: torch.Tensor, n: int) -> None:
    """Pearson chi-square over the tokens with expected count >= 5, against a bound of
    df + 6 sqrt(2 df) (about 4 standard deviations of the chi-square law above its mean)."""
    expected = probs * n
    keep = expected >= 5
    df = int(keep.sum()) - 1
    chi2 = float(((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum())
    assert chi2 < df + 6 * math.sqrt(2 * df), (chi2, df)


def test_inverse_cdf_samples_the_softmax():
    torch.manual_seed(0)
    vocab, n = 50, 40000
    logits = torch.randn(vocab) * 2
    probs = torch.softmax(logits, dim=0)
    keys = sampling.row_keys(torch.arange(n), seed=11)
    u = sampling.uniform(keys, step=0, draw=0, shape=(1,))[:, 0]
    tokens = sampling.inverse_cdf(probs.expand(n, vocab), u)
    counts = torch.bincount(tokens, minlength=vocab).double()
    _chi2_ok(counts, probs.double(), n)
    for tok in probs.topk(3).indices.tolist():  # and each frequent token within 4 sigma
        p = float(probs[tok])
        assert abs(float(counts[tok]) / n - p) < 4 * math.sqrt(p * (1 - p) / n)


def test_inverse_cdf_never_draws_a_zero_probability_token():
    probs = torch.tensor([0.0, 0.3, 0.0, 0.7, 0.0])
    u = torch.tensor([1e-9, 0.3, 0.3 + 1e-7, 0.99999994, 1.0 - 2.0**-25, 0.5])
    tokens = sampling.inverse_cdf(probs.expand(len(u), 5), u)
    assert set(tokens.tolist()) <= {1, 3}
    assert tokens[0] == 1 and tokens[3] == 3 and tokens[4] == 3
    # unnormalised weights are fine; a row with nothing left takes the fallback
    assert sampling.inverse_cdf(torch.tensor([[0.0, 2.0, 2.0]]), torch.tensor([0.75])).tolist() == [2]
    empty = torch.zeros(1, 3)
    assert sampling.inverse_cdf(empty, torch.tensor([0.5]), lambda: torch.tensor([2])).tolist() == [2]


def test_engine_draws_follow_the_tempered_softmax_without_the_mask():
    """Temperature 0.5 through `decode`: token frequencies match softmax(logits / T) renormalised
    over the non-mask tokens (the mask token carries most of the model's mass here)."""
    from test_decoding_models import MASK, TableModel

    from parallelbench.decoding import build_strategy, decode

    vocab, n, temperature = 8, 6000, 0.5
    weights = torch.tensor([0.0, 0.0, 0.1, 0.2, 0.3, 0.4, 0.0, 0.0], dtype=torch.float64)
    weights[MASK] = 0.9 / 0.1 * weights.sum()  # the mask token holds 90% of the raw mass
    probs = weights / weights.sum()
    model = TableModel([probs.tolist()])
    res = decode(model, [[2]] * n, gen_length=1, strategy=build_strategy("confidence-topk", temperature=temperature))
    tokens = torch.tensor([r.tokens[0] for r in res])
    assert MASK not in tokens.tolist()
    tempered = probs.clamp_min(1e-30) ** (1 / temperature)
    tempered[MASK] = 0.0
    tempered = tempered / tempered.sum()
    counts = torch.bincount(tokens, minlength=vocab).double()
    _chi2_ok(counts, tempered, n)


def test_a_position_draws_the_same_token_whatever_else_is_in_focus():
    """The uniform of (row, step, position) does not depend on which positions are drawn,
    so restricting work to the active block leaves the other draws unchanged."""
    keys = sampling.row_keys(torch.arange(3), seed=4)
    full = sampling.uniform(keys, 2, 0, (16,))
    r, p = torch.tensor([0, 2, 2]), torch.tensor([5, 0, 15])
    assert torch.equal(full[r, p], sampling.uniform(keys, 2, 0, (16,))[r, p])
    probs = torch.softmax(torch.randn(3, 16, 10, generator=torch.Generator().manual_seed(1)), dim=-1)
    everywhere = sampling.inverse_cdf(probs, full)
    assert torch.equal(everywhere[r, p], sampling.inverse_cdf(probs[r, p], full[r, p]))
