"""Closed forms of section 4 against enumeration of the answer sets, and hand checks."""

import itertools
import math

import numpy as np
import pytest

from parallelbench.models.ideal.synthetic import synthetic_task
from parallelbench.theory import closed_forms as cf
from parallelbench.theory import enumeration as en

NS = range(3, 9)


def _answers(task, n):
    return synthetic_task(task, n, formatting=False).answers.numpy()


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("task", cf.TASKS)
def test_total_correlation_matches_enumeration(task, n):
    assert abs(en.total_correlation(_answers(task, n)) - cf.total_correlation(task, n)) < 1e-9


@pytest.mark.parametrize("n", NS)
def test_shuffle_lt_matches_enumeration_for_every_step_size(n):
    answers = _answers("shuffle", n)
    for k in range(1, n + 1):
        sizes = cf.step_sizes(n, k)
        got = en.lt(answers, en.contiguous_partition(sizes))
        assert abs(got - cf.shuffle_lt(sizes)) < 1e-9, (n, k)


@pytest.mark.parametrize("n", [4, 5, 6])
def test_shuffle_lt_depends_only_on_sizes_not_positions(n):
    answers = _answers("shuffle", n)
    rng = np.random.default_rng(n)
    perm = rng.permutation(n).tolist()
    sizes = [2, 1] + [1] * (n - 3)
    partition, start = [], 0
    for s in sizes:
        partition.append(perm[start : start + s])
        start += s
    assert abs(en.lt(answers, partition) - cf.shuffle_lt(sizes)) < 1e-9


@pytest.mark.parametrize("n", [4, 6, 8])
def test_l_half_is_double_factorial_ratio(n):
    double = lambda m: math.prod(range(m, 0, -2))  # noqa: E731
    assert abs(cf.shuffle_l_half(n) - math.log2(double(n) / double(n - 1))) < 1e-12
    assert abs(cf.shuffle_l_half(n) - en.lt(_answers("shuffle", n), en.contiguous_partition([2] * (n // 2)))) < 1e-9


@pytest.mark.parametrize("n", NS)
def test_boundary_cases_of_lt(n):
    for task in cf.TASKS:
        answers = _answers(task, n)
        width = answers.shape[1]  # n, or n + 1 for a tool call (its name field)
        assert abs(en.lt(answers, [list(range(width))]) - en.total_correlation(answers)) < 1e-9
        assert abs(en.lt(answers, [[i] for i in range(width)])) < 1e-9


@pytest.mark.parametrize("n", NS)
def test_structured_tasks_are_their_list_twins_at_field_level(n):
    """json_any_order at one token per field is shuffle: the same answer set, C(Y|X) and L_T;
    json_fields and tool_call have one answer, C(Y|X) = 0 (issue 34)."""
    assert np.array_equal(_answers("json_any_order", n), _answers("shuffle", n))
    assert cf.total_correlation("json_any_order", n) == cf.total_correlation("shuffle", n) == pytest.approx(
        n * math.log2(n) - math.log2(math.factorial(n)))
    for k in range(1, n + 1):
        assert cf.accuracy("json_any_order", n, "random", k=k) == cf.shuffle_topk_accuracy(n, k)
        sizes = cf.step_sizes(n, k)
        assert abs(en.lt(_answers("json_any_order", n), en.contiguous_partition(sizes)) - cf.shuffle_lt(sizes)) < 1e-9
    for task in ("json_fields", "tool_call"):
        assert len(_answers(task, n)) == 1 and cf.total_correlation(task, n) == 0.0
        assert all(cf.accuracy(task, n, s, k=k, temperature=t) == 1.0
                   for s in ("random", "confidence-topk") for k in (1, 2, n) for t in (0.0, 1.0))


def test_limits():
    assert cf.total_correlation_limit("replace_random") == pytest.approx(1.4426950408889634)
    assert cf.total_correlation("replace_random", 10**6) == pytest.approx(math.log2(math.e), abs=1e-5)
    assert cf.total_correlation_limit("shuffle") == math.inf
    assert cf.total_correlation_limit("copy") == 0


def test_enumeration_on_a_hand_made_distribution():
    # Two binary tokens, P(00)=1/2, P(11)=1/2: perfectly correlated, C = 1 bit.
    assert en.total_correlation([[0, 0], [1, 1]]) == pytest.approx(1.0, abs=1e-12)
    # Independent fair bits: C = 0.
    assert en.total_correlation([[0, 0], [0, 1], [1, 0], [1, 1]]) == pytest.approx(0.0, abs=1e-12)
    # Weighted, duplicates merged: P(00)=0.5, P(01)=0.25, P(11)=0.25.
    answers, probs = [[0, 0], [0, 1], [1, 1], [0, 0]], [0.25, 0.25, 0.25, 0.25]
    h1 = -(0.75 * math.log2(0.75) + 0.25 * math.log2(0.25))
    h2 = 1.0
    hj = 1.5
    assert en.total_correlation(answers, probs) == pytest.approx(h1 + h2 - hj, abs=1e-12)


def test_shuffle_topk_special_cases():
    for n in NS:
        assert cf.shuffle_topk_accuracy(n, n) == pytest.approx(math.factorial(n) / n**n)
        assert cf.shuffle_topk_accuracy(n, 1) == 1.0
        if n % 2 == 0:
            double = lambda m: math.prod(range(m, 0, -2))  # noqa: E731
            assert cf.shuffle_topk_accuracy(n, 2) == pytest.approx(double(n - 1) / double(n))
    # k not dividing n: steps of 2, 2, 1 on n = 5.
    assert cf.shuffle_topk_accuracy(5, 2) == pytest.approx((4 / 5) * (2 / 3) * 1)


def _exact_topk_by_brute_force(n, k):
    """Probability that independent uniform draws over the remaining items are distinct, step by step."""
    remaining, acc = n, 1.0
    for s in cf.step_sizes(n, k):
        distinct = sum(
            1 for draw in itertools.product(range(remaining), repeat=s) if len(set(draw)) == s
        )
        acc *= distinct / remaining**s
        remaining -= s
    return acc


@pytest.mark.parametrize("n,k", [(4, 2), (5, 2), (5, 3), (6, 4)])
def test_eq5_against_brute_force(n, k):
    assert cf.shuffle_topk_accuracy(n, k) == pytest.approx(_exact_topk_by_brute_force(n, k), abs=1e-12)


def test_replace_random_accuracies():
    for n in NS:
        assert cf.replace_random_greedy_topk_accuracy(n, 1) == 1.0
        assert cf.replace_random_one_step_sampling_accuracy(n) == pytest.approx(((n - 1) / n) ** (n - 1))
        assert cf.replace_random_sampling_topk_accuracy(n, n) == pytest.approx(((n - 1) / n) ** (n - 1))
        assert cf.replace_random_sampling_topk_accuracy(n, 1) == pytest.approx(1.0)
        assert cf.replace_random_threshold_accuracy(n, (n - 1) / n) == 1.0
        assert cf.replace_random_threshold_accuracy(n, (n - 1) / n - 1e-6) == 0.0
        assert cf.shuffle_threshold_accuracy(n, 0.5) == 1.0
        assert cf.shuffle_threshold_accuracy(n, 0.51) == 1.0
        assert cf.shuffle_threshold_accuracy(n, 0.49) == 0.5
        assert cf.shuffle_threshold_accuracy(n, 0.0) == pytest.approx(math.factorial(n) / n**n)
    assert cf.replace_random_greedy_topk_accuracy(6, 2) == 0.5
    assert cf.replace_random_greedy_topk_accuracy(6, 3) == 0.0
    assert cf.replace_random_greedy_topk_accuracy(7, 2) == 1.0  # last step takes 1 position
    assert cf.replace_random_greedy_topk_accuracy(8, 3) == 0.5  # 3, 3, 2
    assert cf.replace_random_one_step_sampling_accuracy(10**6) == pytest.approx(1 / math.e, abs=1e-6)


def test_accuracy_dispatch_and_errors():
    assert cf.accuracy("copy", 5, "random", k=5) == 1.0
    assert cf.accuracy("shuffle", 6, "confidence-topk", k=2, temperature=1.0) == cf.shuffle_topk_accuracy(6, 2)
    assert cf.accuracy("replace_random", 6, "confidence-threshold", threshold=0.9, temperature=1.0) is None
    assert cf.accuracy("shuffle", 6, "entropy-topk", k=2) is None
    with pytest.raises(ValueError, match="needs k"):
        cf.accuracy("shuffle", 6, "random")
    with pytest.raises(ValueError, match="unknown synthetic task"):
        cf.total_correlation("sort", 4)
    with pytest.raises(ValueError, match="cover positions"):
        en.lt([[0, 1], [1, 0]], [[0]])


def _brute_lt(answers, probs, partition):
    """L_T straight from the definition with dictionaries (slow, obviously right)."""
    from collections import defaultdict

    def H(dist):
        return -sum(p * math.log2(p) for p in dist.values() if p > 0)

    total, seen = 0.0, []
    for block in partition:
        groups = defaultdict(list)
        for a, p in zip(answers, probs):
            groups[tuple(a[i] for i in seen)].append((a, p))
        for members in groups.values():
            mass = sum(p for _, p in members)
            joint, marg = defaultdict(float), [defaultdict(float) for _ in block]
            for a, p in members:
                joint[tuple(a[i] for i in block)] += p / mass
                for j, i in enumerate(block):
                    marg[j][a[i]] += p / mass
            total += mass * (sum(H(m) for m in marg) - H(joint))
        seen = seen + list(block)
    return total


def test_lt_matches_definition_on_random_weighted_distributions():
    rng = np.random.default_rng(7)
    for _ in range(10):
        num, length = int(rng.integers(2, 12)), 4
        answers = rng.integers(0, 3, size=(num, length)).tolist()
        probs = rng.random(num) + 0.05
        probs = (probs / probs.sum()).tolist()
        perm = rng.permutation(length).tolist()
        partition = [perm[:2], perm[2:3], perm[3:]]
        assert en.lt(answers, partition, probs) == pytest.approx(_brute_lt(answers, probs, partition), abs=1e-12)
        assert en.total_correlation(answers, probs) == pytest.approx(
            _brute_lt(answers, probs, [list(range(length))]), abs=1e-12
        )
