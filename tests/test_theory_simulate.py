"""The ideal model decoded by the real engine matches every analytic accuracy of section 4.

Each case decodes N samples and checks |measured - analytic| <= 3 standard errors,
the standard error taken at the analytic value, sqrt(p(1-p)/N) (plus half a count
of continuity correction), so cases with p near 0 or 1 are judged fairly.
Sampling (tau = 1) is slower in the engine (a per-row random stream), so those
cases use fewer samples; fixed seeds make every run identical.
"""

import math

import pytest
import torch

from parallelbench.theory import closed_forms as cf
from parallelbench.theory.simulate import simulate

torch.set_num_threads(1)
NS = list(range(3, 9))


def _check(result):
    assert result.analytic is not None, result
    p, n = result.analytic, result.samples
    tol = 3 * math.sqrt(p * (1 - p) / n) + 0.5 / n
    assert abs(result.measured - p) <= tol, (
        f"{result.task} n={result.n} {result.strategy} {result.params}: measured {result.measured:.4f} "
        f"vs analytic {p:.4f} (tolerance {tol:.4f}, N={n})"
    )


def _ks(n):
    return sorted({1, 2, n})


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("strategy", ["random", "confidence-topk"])
def test_shuffle_topk_greedy(n, strategy):
    for k in _ks(n):
        samples = {7: 1000, 8: 400}.get(n, 2000)  # 8! answers make each call heavier
        r = simulate("shuffle", n, strategy, k=k, temperature=0.0, samples=samples, seed=11 * n + k)
        assert r.analytic == pytest.approx(cf.shuffle_topk_accuracy(n, k))
        _check(r)


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("strategy", ["random", "confidence-topk"])
def test_shuffle_topk_sampling(n, strategy):
    for k in _ks(n):
        samples = 100 if k == 1 else (250 if n >= 7 else 400)
        r = simulate("shuffle", n, strategy, k=k, temperature=1.0, samples=samples, seed=13 * n + k, formatting=False)
        _check(r)


@pytest.mark.parametrize("n", NS)
def test_replace_random_greedy_topk(n):
    for strategy in ("random", "confidence-topk"):
        for k in sorted({1, 2, 3, n}):
            r = simulate("replace_random", n, strategy, k=k, samples=2000, seed=17 * n + k)
            assert r.analytic == cf.replace_random_greedy_topk_accuracy(n, k)
            _check(r)


@pytest.mark.parametrize("n", NS)
def test_replace_random_one_step_sampling(n):
    r = simulate("replace_random", n, "random", k=n, temperature=1.0, samples=1000, seed=19 * n, formatting=False)
    assert r.analytic == pytest.approx(((n - 1) / n) ** (n - 1))
    _check(r)


@pytest.mark.parametrize("n", NS)
def test_confidence_threshold_both_tasks(n):
    boundary = (n - 1) / n
    for gamma in (boundary - 0.02, boundary + 0.01, 0.95):
        r = simulate("replace_random", n, "confidence-threshold", threshold=gamma, samples=500, seed=23 * n)
        assert r.analytic == (1.0 if gamma >= boundary else 0.0)
        _check(r)
    # thresholds between the 1/m levels (the levels themselves: the test below)
    for gamma in (0.22, 0.45, 0.55, 0.9):
        certain = cf.shuffle_threshold_accuracy(n, gamma) == 1.0  # one failure would show
        samples = (150 if certain else 400) if n >= 7 else 1000
        r = simulate("shuffle", n, "confidence-threshold", threshold=gamma, samples=samples, seed=29 * n)
        _check(r)
    assert cf.shuffle_threshold_accuracy(n, 0.55) == 1.0


@pytest.mark.parametrize(
    "task,n,level",
    [("shuffle", 4, 1 / 2), ("shuffle", 4, 1 / 3), ("shuffle", 6, 1 / 2),
     ("replace_random", 4, 3 / 4), ("replace_random", 6, 5 / 6), ("replace_random", 5, 3 / 4)],
)
def test_threshold_exactly_on_a_confidence_level_and_one_float_step_either_side(task, n, level):
    """Issue 20 item 6: the noise only orders tied positions, so at gamma equal to a confidence
    level (strict: that confidence does not commit) and at the neighbouring floats the
    simulation matches the closed form, which puts gamma = level on the "does not exceed" side."""
    below, above = math.nextafter(level, 0.0), math.nextafter(level, 1.0)
    for gamma in (below, level, above):
        r = simulate(task, n, "confidence-threshold", threshold=gamma, samples=600, seed=7)
        _check(r)
    exact = simulate(task, n, "confidence-threshold", threshold=level, samples=50, seed=1).analytic
    assert exact == cf.accuracy(task, n, "confidence-threshold", threshold=above)
    if task == "replace_random" and level == (n - 1) / n:
        assert exact == 1.0 and cf.accuracy(task, n, "confidence-threshold", threshold=below) == 0.0


@pytest.mark.parametrize("task", ["copy", "replace_index"])
def test_copy_and_replace_index_are_always_right(task):
    for strategy, params in [("random", {"k": 5}), ("confidence-topk", {"k": 2}), ("confidence-threshold", {"threshold": 0.5})]:
        r = simulate(task, 5, strategy, samples=300, **params)
        assert r.measured == 1.0 and r.analytic == 1.0


def test_result_fields_and_unanalysed_strategy():
    r = simulate("shuffle", 4, "l2r", k=2, samples=200)
    assert r.analytic is None and r.z_score is None
    assert 0 <= r.measured <= 1 and r.stderr == pytest.approx(math.sqrt(r.measured * (1 - r.measured) / 200))
    assert r.mean_nfe == 2
    d = r.to_dict()
    for key in ("measured", "stderr", "analytic", "n", "samples", "strategy", "params"):
        assert key in d


@pytest.mark.slow
@pytest.mark.parametrize(
    "task,strategy,params",
    [
        ("shuffle", "confidence-topk", {"k": 2}),
        ("shuffle", "random", {"k": 3, "temperature": 1.0}),
        ("replace_random", "random", {"k": 6, "temperature": 1.0}),
        ("replace_random", "random", {"k": 2}),
        ("shuffle", "confidence-threshold", {"threshold": 0.3}),
    ],
)
def test_large_sample_agreement_n6(task, strategy, params):
    """20,000 samples: a tolerance of about 0.01 instead of 0.03-0.06."""
    _check(simulate(task, 6, strategy, samples=20_000, seed=101, **params))


def test_z_score_when_every_sample_agreed():
    """0 successes against analytic 0.0154 is ~1.2 sd low, not "z = +inf"; a contradicted certainty is -inf."""
    from parallelbench.theory.simulate import SimulationResult

    def result(measured, analytic, samples=100):
        return SimulationResult("shuffle", 6, "confidence-topk", {"k": 6}, samples, round(measured * samples),
                                measured, 0.0, analytic, 1e-3, True, 1.0)

    z = result(0.0, 0.0154).z_score
    assert z == pytest.approx(-0.0154 / math.sqrt(0.0154 * (1 - 0.0154) / 100))
    assert result(0.0, 1.0).z_score == -math.inf
    assert result(1.0, 0.0).z_score == math.inf
    assert result(1.0, 1.0).z_score == 0.0


# ---- the structured family at field level (issue 34) -------------------------------------


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("strategy", ["random", "confidence-topk"])
def test_json_any_order_closed_form_equals_simulation_and_shuffle(n, strategy):
    """One token per field: the closed forms hold with n = fields, and every decode is shuffle's."""
    for k in _ks(n):
        samples = {7: 1000, 8: 400}.get(n, 2000)
        seed = 11 * n + k
        r = simulate("json_any_order", n, strategy, k=k, temperature=0.0, samples=samples, seed=seed)
        assert r.analytic == pytest.approx(cf.shuffle_topk_accuracy(n, k))
        _check(r)
        twin = simulate("shuffle", n, strategy, k=k, temperature=0.0, samples=samples, seed=seed)
        assert (r.correct, r.mean_nfe) == (twin.correct, twin.mean_nfe)


@pytest.mark.parametrize("task", ["json_fields", "tool_call"])
@pytest.mark.parametrize("n", [3, 5, 8])
def test_zero_dependency_structured_tasks_are_exact_at_every_k(task, n):
    width = n + (1 if task == "tool_call" else 0)  # a tool call's name is a field too
    for strategy in ("random", "confidence-topk"):
        for k in sorted({1, 2, n, width}):
            r = simulate(task, n, strategy, k=k, samples=200, seed=n + k)
            assert r.measured == 1.0 and r.analytic == 1.0
    r = simulate(task, n, "confidence-threshold", threshold=0.9, samples=100)
    assert r.measured == 1.0 == r.analytic and r.mean_nfe == 1.0  # every field certain: one step
