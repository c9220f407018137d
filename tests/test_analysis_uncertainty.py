"""95% intervals: Wilson, clustered Wilson, bootstrap, task averages, paired comparisons."""

import math

import numpy as np
import pandas as pd
import pytest

from parallelbench.analysis.curves import curves
from parallelbench.analysis.synthetic import result_row
from parallelbench.analysis.uncertainty import (
    combine,
    design_effect,
    interval,
    mcnemar_exact,
    paired_difference,
    precision_line,
    wilson,
)


def test_wilson_matches_textbook_values():
    # 8/16: centre 0.5, (0.2800, 0.7200); 16/16 still leaves room below 1
    assert wilson(8, 16) == pytest.approx((0.2800, 0.7200), abs=1e-4)
    low, high = wilson(16, 16)
    assert high == 1.0 and low == pytest.approx(0.8064, abs=1e-4)
    assert wilson(0, 16)[0] == 0.0 and wilson(0, 16)[1] == pytest.approx(1 - 0.8064, abs=1e-4)
    assert all(math.isnan(v) for v in wilson(0, 0))


def test_binary_scores_use_wilson_and_count_samples():
    ci = interval([1, 0] * 8, [f"s{i}" for i in range(16)])
    assert ci.method == "wilson" and ci.n == 16 and ci.rows == 16
    assert (ci.low, ci.high) == pytest.approx(wilson(8, 16))


def test_repeated_seeds_shrink_the_count_to_an_effective_sample_size():
    # every sample solved by both of its seeds or by neither: rows are perfectly correlated,
    # so the interval must be that of 8 samples, not of 16 rows
    scores = [1, 1, 0, 0] * 4
    samples = [f"s{i // 2}" for i in range(16)]
    ci = interval(scores, samples)
    assert ci.method == "wilson-clustered" and ci.n == 8 and ci.rows == 16
    assert (ci.low, ci.high) == pytest.approx(wilson(4, 8))
    # seeds that disagree within a sample carry more information: design effect near 1
    alternating = [1, 0] * 8
    assert design_effect(*_sums(alternating, samples)) == 1.0
    assert interval(alternating, samples).high < ci.high
    # all correct: nothing to estimate a correlation from, each sample counts once
    full = interval([1] * 16, samples)
    assert (full.low, full.high) == pytest.approx(wilson(8, 8))


def _sums(scores, samples):
    frame = pd.DataFrame({"s": samples, "v": scores}).groupby("s", sort=False)["v"]
    return frame.sum().to_numpy(float), frame.size().to_numpy(float)


def test_continuous_scores_bootstrap_deterministically_over_samples():
    rng = np.random.default_rng(3)
    scores = rng.uniform(0.3, 0.9, size=40)
    first = interval(scores)
    assert first.method == "bootstrap" and first.low < scores.mean() < first.high
    assert interval(scores) == first  # fixed seed: same data, same interval
    # about mean ± 1.96 sd / sqrt(n)
    expected = 1.96 * scores.std(ddof=1) / math.sqrt(40)
    assert first.half_width == pytest.approx(expected, rel=0.15)
    # duplicated rows of one sample (two seeds, same score) are one sample, not two
    clustered = interval(np.repeat(scores, 2), np.repeat(np.arange(40), 2))
    assert clustered.method == "bootstrap-clustered" and clustered.n == 40
    assert clustered.half_width == pytest.approx(first.half_width, rel=0.1)
    assert interval(np.repeat(scores, 2)).half_width < 0.8 * first.half_width  # unclustered overstates


def test_task_average_combines_task_intervals():
    est, low, high = combine([50.0, 100.0], [28.0, 80.6], [72.0, 100.0])
    assert est == 75.0
    assert low == pytest.approx(75 - math.hypot(22, 19.4) / 2)
    assert high == pytest.approx(75 + math.hypot(22, 0) / 2)
    frame = pd.DataFrame(
        [result_row("random", {"k": 2}, task="t1", sample_id=f"a{i}", score=float(i % 2)) for i in range(16)]
        + [result_row("random", {"k": 2}, task="t2", sample_id=f"b{i}", score=1.0) for i in range(16)]
    )
    per_task, averaged = curves(frame)
    assert list(per_task["n"]) == [16, 16]
    row = averaged.iloc[0]
    assert row["ci_low"] < row["accuracy"] < row["ci_high"] and row["n"] == 32


def test_mcnemar_exact_values():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(8, 0) == pytest.approx(2 / 256)
    assert mcnemar_exact(3, 3) == 1.0
    # b=1, c=9: 2 * (1 + 10) / 1024
    assert mcnemar_exact(1, 9) == pytest.approx(22 / 1024)


def test_paired_difference_binary_uses_mcnemar_and_continuous_a_bootstrap():
    a = [1] * 10 + [0] * 2 + [1] * 8
    b = [0] * 10 + [0] * 2 + [1] * 8
    result = paired_difference(a, b, list(range(20)))
    assert result.test == "McNemar exact" and result.a_only == 10 and result.b_only == 0
    assert result.difference == pytest.approx(0.5) and result.p_value == pytest.approx(2 / 1024)
    assert 0 < result.low < 0.5 < result.high <= 1.0
    rng = np.random.default_rng(0)
    base = rng.uniform(size=50)
    cont = paired_difference(base + 0.2, base, list(range(50)))
    assert cont.test == "paired bootstrap" and cont.difference == pytest.approx(0.2)
    assert cont.p_value < 0.01 and cont.low == pytest.approx(0.2) and cont.high == pytest.approx(0.2)
    noisy = paired_difference(base, rng.permutation(base), list(range(50)))
    assert noisy.p_value > 0.05 and noisy.low < 0 < noisy.high
    with pytest.raises(ValueError, match="equally long"):
        paired_difference([1, 0], [1])


def test_precision_line_states_samples_and_widths():
    points = pd.DataFrame({"n": [16, 16], "ci_low": [28.0, 80.6], "ci_high": [72.0, 100.0]})
    line = precision_line(points)
    assert "16 samples per task" in line and "±22.0" in line and "--limit" in line


def test_precision_line_gives_no_range_of_one_width():
    """`(±24.5 to ±24.5)` after a single point (or equal widths) said nothing a new user could use."""
    line = precision_line(pd.DataFrame({"n": [4], "ci_low": [51.0], "ci_high": [100.0]}))
    assert "95% intervals are ±24.5 accuracy points wide;" in line and " to ±" not in line
    spread = precision_line(pd.DataFrame({"n": [16, 16], "ci_low": [28.0, 80.6], "ci_high": [72.0, 100.0]}))
    assert "wide at the median (±9.7 to ±22.0)" in spread
