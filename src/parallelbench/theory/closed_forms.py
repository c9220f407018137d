"""Section 4 of the paper as functions: total correlation, L_T and decoding accuracies.

Everything here is exact arithmetic on the four synthetic list operations over
`n` distinct items (copy, replace index, replace random, shuffle), in bits, and on the
three structured tasks with n fields, one token per field (the ideal model's tokenizer):
`json_any_order` is shuffle (n! orders of n distinct tokens), `json_fields` and
`tool_call` are copy (one answer, C(Y|X) = 0).
Accuracies assume the paper's *unbiased* ideal model: exact conditional
marginals, plus (for greedy decoding) an infinitesimal zero-mean logit noise
that only breaks exact ties at random. `enumeration.py` recomputes the
information quantities from the answer sets, and `simulate.py` measures the
accuracies with the real decoding engine, to check these formulas.

Conventions the paper leaves open (documented in docs/theory.md):
- k not dividing n: every step commits k positions and the last one commits
  the remainder (what the engine does).
- thresholds compare strictly (a position commits when its confidence > gamma);
  when none does, the single most confident position commits (top-1 fallback).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Sequence

LIST_TASKS = ("copy", "replace_index", "replace_random", "shuffle")
STRUCTURED_TASKS = ("json_fields", "json_any_order", "tool_call")
TASKS = LIST_TASKS + STRUCTURED_TASKS
# A structured task's formulas are those of the list task with the same answer set at n fields.
SAME_AS = {"json_fields": "copy", "json_any_order": "shuffle", "tool_call": "copy"}

LOG2_E = math.log2(math.e)


def check_task(task: str) -> str:
    if task not in TASKS:
        raise ValueError(f"unknown synthetic task {task!r}; choose one of {', '.join(TASKS)}")
    return task


def list_twin(task: str) -> str:
    """The list task whose formulas a task follows (itself for the list tasks)."""
    return SAME_AS.get(check_task(task), task)


def _check_n(n: int) -> int:
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"list length n must be a positive integer, got {n!r}")
    return n


def _log2_factorial(n: int) -> float:
    return math.lgamma(n + 1) / math.log(2)


def step_sizes(n: int, k: int) -> list[int]:
    """Tokens committed per step by top-k on n positions: k each, the last step the remainder."""
    _check_n(n)
    if k < 1:
        raise ValueError(f"tokens per step k must be >= 1, got {k}")
    sizes = [k] * (n // k)
    if n % k:
        sizes.append(n % k)
    return sizes


# ---------------------------------------------------------------- data perspective


def total_correlation(task: str, n: int) -> float:
    """C(Y|X) in bits (section 4.1); a structured task's n is its number of fields."""
    task = list_twin(task)
    _check_n(n)
    if task in ("copy", "replace_index") or n == 1:
        return 0.0
    if task == "replace_random":
        return (n - 1) * (math.log2(n) - math.log2(n - 1))
    return n * math.log2(n) - _log2_factorial(n)


def total_correlation_limit(task: str) -> float:
    """lim_{n->inf} C(Y|X): 0, 0, log2(e) and infinity (json_any_order as shuffle, the others 0)."""
    task = list_twin(task)
    return {"copy": 0.0, "replace_index": 0.0, "replace_random": LOG2_E, "shuffle": math.inf}[task]


def shuffle_lt(sizes: Sequence[int]) -> float:
    """L_T of shuffle for a partition with these step sizes: sum |S_t| log2 k_t - log2 n!.

    k_t is the number of positions still masked before step t. By symmetry of
    the uniform permutation only the sizes matter, not which positions.
    """
    if not sizes or any(s < 1 for s in sizes):
        raise ValueError(f"step sizes must be positive, got {list(sizes)}")
    n = sum(sizes)
    remaining, total = n, 0.0
    for s in sizes:
        total += s * math.log2(remaining)
        remaining -= s
    return total - _log2_factorial(n)


def shuffle_l_half(n: int) -> float:
    """L_{n/2} = log2(n!! / (n-1)!!): shuffle decoded two positions per step (n even)."""
    _check_n(n)
    if n % 2:
        raise ValueError(f"L_(n/2) needs an even n, got {n}; use shuffle_lt(step_sizes(n, 2))")
    return sum(math.log2(i) for i in range(n, 0, -2)) - sum(math.log2(i) for i in range(n - 1, 0, -2))


# ---------------------------------------------------------------- strategy perspective


def shuffle_topk_accuracy(n: int, k: int) -> float:
    """Eq. 5: prod over steps of P(m, s) / m^s, m positions masked, s committed.

    Holds for random and confidence top-k, greedy or temperature sampling: every
    masked position's marginal is uniform over the m items not yet placed, so
    positions are interchangeable and s independent draws must be distinct.
    """
    remaining, acc = n, 1.0
    for s in step_sizes(n, k):
        for j in range(s):
            acc *= (remaining - j) / remaining
        remaining -= s
    return acc


def replace_random_greedy_topk_accuracy(n: int, k: int) -> float:
    """Greedy top-k on replace random: decided by the size r of the last step.

    While m >= 3 positions are masked, keeping the item (prob (m-1)/m) beats F
    (1/m), so every committed position keeps. The last step commits r positions:
    r >= 3 keeps them all (no replacement: 0); r = 2 is a fair tie per position,
    right in 2 of 4 outcomes (0.5); r = 1 is forced to F (1). With k = 1 the step
    at m = 2 ties, and either choice leaves the last position determined: 1.
    """
    _check_n(n)
    r = step_sizes(n, k)[-1]
    if n == 1 or r == 1:
        return 1.0
    return 0.5 if r == 2 else 0.0


def replace_random_sampling_topk_accuracy(n: int, k: int) -> float:
    """Temperature sampling (tau = 1) with random top-k on replace random.

    With m masked and s committed, each draws F with prob 1/m independently:
    exactly one F finishes the task, none moves on, two or more fail. For k = n
    this is ((n-1)/n)^(n-1) (the paper's one-step result, -> 1/e).
    """
    _check_n(n)
    remaining, reach, acc = n, 1.0, 0.0
    for s in step_sizes(n, k):
        keep = (remaining - 1) / remaining
        acc += reach * s * (1 / remaining) * keep ** (s - 1)
        reach *= keep**s
        remaining -= s
    return acc


def replace_random_one_step_sampling_accuracy(n: int) -> float:
    """((n-1)/n)^(n-1): one-step generation with temperature sampling."""
    _check_n(n)
    return ((n - 1) / n) ** (n - 1)


def shuffle_threshold_accuracy(n: int, gamma: float) -> float:
    """Confidence threshold on shuffle (greedy or tau = 1).

    With m masked every confidence is 1/m. While 1/m <= gamma only the top-1
    fallback commits, so decoding is one by one until the first m with
    1/m > gamma; then all m commit at once and succeed with prob m!/m^m.
    gamma >= 0.5 therefore gives 1 (the paper states gamma > 0.5).
    """
    _check_n(n)
    m = n
    while m > 1 and not (1 / m > gamma):
        m -= 1
    return math.factorial(m) / m**m


def replace_random_threshold_accuracy(n: int, gamma: float) -> float:
    """Greedy confidence threshold on replace random: 1 if gamma >= (n-1)/n else 0 (n >= 3).

    At m masked all confidences are (m-1)/m, which only shrinks as m drops; if it
    beats gamma at the start, every position commits "keep" at once (0). Otherwise
    one position per step until the last, which is forced to F (1). For n = 2
    both positions tie at 0.5: gamma < 0.5 commits both, right half the time.
    """
    _check_n(n)
    if n == 1:
        return 1.0
    if (n - 1) / n > gamma:
        return 0.5 if n == 2 else 0.0
    return 1.0


def accuracy(
    task: str,
    n: int,
    strategy: str,
    *,
    k: int | None = None,
    threshold: float | None = None,
    temperature: float = 0.0,
) -> float | None:
    """The analytic accuracy of `strategy` on a synthetic task, or None where none is derived.

    strategy: "random" or "confidence-topk" (needs k), or "confidence-threshold"
    (needs threshold). Copy and replace index are 1 under every strategy: each
    position's marginal is a single token. Structured tasks follow their list twin.
    """
    task = list_twin(task)
    _check_n(n)
    topk = strategy in ("random", "confidence-topk")
    if topk and (k is None or k < 1):
        raise ValueError(f"strategy {strategy!r} needs k >= 1 tokens per step")
    if strategy == "confidence-threshold" and threshold is None:
        raise ValueError("strategy 'confidence-threshold' needs a threshold")
    if not topk and strategy != "confidence-threshold":
        return None
    if temperature not in (0, 0.0, 1, 1.0):
        return None
    if task in ("copy", "replace_index"):
        return 1.0
    greedy = temperature == 0
    if task == "shuffle":
        return shuffle_topk_accuracy(n, k) if topk else shuffle_threshold_accuracy(n, threshold)
    # replace random
    if topk:
        if greedy:
            # Every masked position has the same max probability, so confidence
            # top-k ranks by the tie-breaking noise alone: it is random top-k.
            return replace_random_greedy_topk_accuracy(n, k)
        # Under sampling the engine's confidence is the probability of the drawn
        # token, which favours "keep" draws: only random top-k is analysed.
        return replace_random_sampling_topk_accuracy(n, k) if strategy == "random" else None
    return replace_random_threshold_accuracy(n, threshold) if greedy else None


# ---------------------------------------------------------------------- editing (issue 32 item 5)
#: Shuffle, top-2 drafts plus token-to-token edits under the exact model (docs/theory.md, "Repair
#: under the exact model"): n -> (final accuracy, accuracy at unmasking, mean edits with post_steps=0),
#: when every slot whose token is impossible given the others is edited (0 < E < 1/(n - 1)).
SHUFFLE_EDIT_TOP2: dict[int, tuple[Fraction, Fraction, Fraction]] = {
    # n = 3: a duplicate after step 0 (1/3): both copies move to independent uniform picks of the
    # 2 other items while the last slot, given an inconsistent canvas, draws uniformly from all 3:
    # right with 1/2 * 1/3. 2/3 + 1/3 * 1/6 = 13/18; two edits per duplicate.
    3: (Fraction(13, 18), Fraction(2, 3), Fraction(2, 3)),
    # n = 4: distinct drafts (3/4) end right when the last two draw distinct items (1/2); a
    # duplicate (1/4) is repaired when both copies pick distinct items of the 3 others (2/3) and the
    # last two slots, drawing from all 4, take the two items left in either order (2/16).
    4: (Fraction(19, 48), Fraction(3, 8), Fraction(1, 2)),
}


def edit_rule_repairs(n: int, edit_threshold: float) -> bool:
    """Whether a gain-rule edit threshold E edits every slot whose token the other slots make
    impossible while masks remain: such a slot's gain is 1/r with r <= n - 1 items left for it."""
    return 0.0 < edit_threshold < 1.0 / (n - 1)


def edit_rule_idle(n: int, edit_threshold: float) -> bool:
    """Whether E is too high for any edit while masks remain (top-2 drafts on shuffle): the largest
    gain then is 1/r for the fewest items left before the last step, r = (last step size) + 1."""
    return edit_threshold >= 1.0 / (step_sizes(n, 2)[-1] + 1)


def shuffle_edit_top2(n: int, edit_threshold: float) -> dict[str, float] | None:
    """Shuffle under `edit-threshold threshold=1 min_k=2 edit_rule=gain edit_threshold=E` (top-2
    drafts, then edits) with the exact model: final accuracy, accuracy at unmasking, repaired and
    broken shares and mean edits (post_steps = 0; the accuracies hold for any post_steps, which
    never repair shuffle: a full canvas with a duplicate pair makes both copies move together).
    When E is too high for any edit while masks remain (`edit_rule_idle`) it is eq. 5's top-2
    accuracy; None where no closed form is derived (n > 4 with edits)."""
    _check_n(n)
    if not 0.0 <= edit_threshold <= 1.0:
        raise ValueError(f"edit_threshold must lie in [0, 1], got {edit_threshold}")
    if edit_rule_idle(n, edit_threshold):
        top2 = shuffle_topk_accuracy(n, 2)
        return {"final": top2, "unmask": top2, "repaired": 0.0, "broken": 0.0, "mean_edits": 0.0}
    if not edit_rule_repairs(n, edit_threshold) or n not in SHUFFLE_EDIT_TOP2:
        return None
    final, unmask, edits = SHUFFLE_EDIT_TOP2[n]
    return {"final": float(final), "unmask": float(unmask), "repaired": float(final - unmask), "broken": 0.0,
            "mean_edits": float(edits)}
