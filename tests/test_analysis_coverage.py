"""Do the 95% intervals cover 95% of the time? Checked by simulation on the ideal model.

Shuffle n = 4 decoded by confidence top-k with k = 2 has the closed-form accuracy
4·3/4² · 2/2² = 0.375 (eq. 5). 400 repetitions of 80 samples each go through the same path
as real results (`curves.task_points`, one "task" per repetition); the share of
repetitions whose interval holds 0.375 must be 93-97%. The Wilson interval's exact
coverage at n = 80, p = 0.375 is 95.1% (computed below from the binomial), so with 400
repetitions (standard error 1.1 points) the band is about ±1.8 standard errors wide.
"""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from parallelbench.analysis.curves import task_points
from parallelbench.analysis.synthetic import result_row
from parallelbench.analysis.uncertainty import wilson
from parallelbench.decoding import build_strategy, decode
from parallelbench.models.ideal.synthetic import BOS, synthetic_task
from parallelbench.theory.closed_forms import accuracy

REPETITIONS, PER_REPETITION = 400, 80


def _decode_correct(samples: int, seed: int) -> np.ndarray:
    """1/0 per decoded sample of shuffle n=4, confidence top-k k=2, greedy with tie-breaking noise."""
    spec = synthetic_task("shuffle", 4)
    model = spec.model(samples, noise_std=1e-3, seed=seed)
    prompts = torch.full((samples, 1), BOS, dtype=torch.long)
    results = decode(model, prompts, gen_length=spec.answers.shape[1], strategy=build_strategy("confidence-topk", k=2),
                     template=spec.template.repeat(samples, 1), seed=seed)
    return spec.is_valid(torch.tensor([r.tokens for r in results])).numpy().astype(float)


def _frame(correct: np.ndarray, seeds_per_sample: int = 1) -> pd.DataFrame:
    rows = []
    for i, score in enumerate(correct):
        rep, j = divmod(i, PER_REPETITION)
        rows.append(result_row("confidence-topk", {"k": 2}, task=f"rep{rep:03d}", sample_id=f"s{j // seeds_per_sample}",
                               seed=j % seeds_per_sample, score=float(score)))
    return pd.DataFrame(rows)


def _exact_wilson_coverage(n: int, p: float) -> float:
    return sum(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1) if wilson(k, n)[0] <= p <= wilson(k, n)[1])


def test_the_setting_is_one_where_wilson_is_nominal():
    p = accuracy("shuffle", 4, "confidence-topk", k=2)
    assert p == pytest.approx(0.375)
    assert 0.945 <= _exact_wilson_coverage(PER_REPETITION, p) <= 0.955


@pytest.fixture(scope="module")
def correct():
    torch.set_num_threads(1)
    return _decode_correct(REPETITIONS * PER_REPETITION, seed=2026)


def _coverage(points: pd.DataFrame, p: float) -> float:
    assert len(points) == REPETITIONS
    return float(((points["ci_low"] <= 100 * p) & (100 * p <= points["ci_high"])).mean())


def test_95_percent_intervals_cover_the_closed_form_93_to_97_percent_of_the_time(correct):
    p = accuracy("shuffle", 4, "confidence-topk", k=2)
    assert abs(correct.mean() - p) < 3 * math.sqrt(p * (1 - p) / correct.size)  # the decodes are right
    points = task_points(_frame(correct))
    assert set(points["ci_method"]) == {"wilson"} and set(points["n"]) == {PER_REPETITION}
    assert 0.93 <= _coverage(points, p) <= 0.97


def test_clustered_intervals_keep_their_coverage_when_seeds_repeat(correct):
    # the same decodes read as 40 samples x 2 seeds: independent rows, so the design
    # effect is near 1 and the clustered interval must still cover about 95%
    p = accuracy("shuffle", 4, "confidence-topk", k=2)
    points = task_points(_frame(correct, seeds_per_sample=2))
    assert set(points["ci_method"]) == {"wilson-clustered"} and set(points["n"]) == {PER_REPETITION // 2}
    assert 0.93 <= _coverage(points, p) <= 0.97
