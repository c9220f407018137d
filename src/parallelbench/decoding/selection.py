"""Selection rules: given scores over the candidate positions, which to commit now.

Every rule is vectorised over the batch and returns a BoolTensor [b, G] that is a
subset of `candidates` with at least one position per row that has candidates.
Ties are broken towards the left (stable sort), so results are deterministic.
"""

from __future__ import annotations

import torch

from parallelbench.decoding.op_kinds import cached, constant, filled, float32, minus, ramp

NEG_INF = float("-inf")


def top_k(scores: torch.Tensor, candidates: torch.Tensor, k: torch.Tensor | int) -> torch.Tensor:
    """The k best-scoring candidates of each row (k may differ per row)."""
    if not torch.is_tensor(k) and int(k) == 1:  # no sort for k = 1
        return best(scores, candidates)
    # the sorted slots below k put back in place (non-candidates sort last): a sort and a scatter,
    # the kinds eb and the factor rule run too
    order = torch.sort(float32(scores).masked_fill(~candidates, NEG_INF), dim=1, descending=True, stable=True)[1]
    slots = ramp(0, scores.shape[1], torch.long, scores.device)
    admitted = slots < k.unsqueeze(1) if torch.is_tensor(k) else (slots < int(k)).expand(order.shape)
    return _unsort(admitted, order, candidates)


# Up to this many slots a row's ranks come from comparing every pair of its slots (G^2 elements).
PAIRWISE_UP_TO = 64


def top_by_rank(scores: torch.Tensor, candidates: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """top_k(scores, candidates, k) for a per-row k [b], exactly (the same stable order:
    the higher score first, the leftmost on a tie), without its sort and scatter: those two op kinds
    cost more right after the model's forward than a few comparisons of the kinds the step runs
    anyway, on a block of a few slots. A slot's place in that order is the number of slots before it:
    the later slots that score higher and the earlier ones that score at least as high. Rows wider
    than PAIRWISE_UP_TO slots (G^2 comparisons) go to top_k itself, so callers need no choice of their own."""
    if scores.shape[1] > PAIRWISE_UP_TO:
        return top_k(scores, candidates, k)
    s = float32(scores)
    s = torch.where(candidates, s, constant(NEG_INF, s))  # non-candidates sort last
    g = s.shape[1]
    later = cached(("later", g, s.device), lambda: torch.ones(g, g, dtype=torch.bool, device=s.device).triu(1))
    earlier = cached(("earlier", g, s.device), lambda: torch.ones(g, g, dtype=torch.bool, device=s.device).tril(-1))
    row, column = s.unsqueeze(2), s.unsqueeze(1)  # [b, i, j]: s_i, s_j
    # a later slot j is before i if it scores higher; an earlier one unless it scores lower (bools: x < True is not x)
    before = (column < row) < earlier
    torch.where(later, row < column, before, out=before)  # (where's out= kind, as the loop's)
    return (before.sum(dim=2) < k.unsqueeze(1)) & candidates


def _unsort(admitted: torch.Tensor, order: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """[b, G] the candidates at the sorted slots `admitted` ([b, G] bool; `order` from the sort)."""
    return filled(False, candidates.shape, candidates).scatter_(1, order, admitted) & candidates


def best(scores: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """[b, G] each row's best-scoring candidate (the leftmost on a tie: top_k's rule, without a sort)."""
    # masked_fill / eq rather than where with a scalar / scatter: op kinds the step already ran
    s = float32(scores).masked_fill(~candidates, NEG_INF)
    return (ramp(0, s.shape[1], torch.long, s.device) == s.argmax(dim=1, keepdim=True)) & candidates


def with_fallback(chosen: torch.Tensor, scores: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """Rows that chose nothing take their single best candidate (decided on the device: no host read)."""
    # (best is empty on a row without candidates; any() as amax, the kind the loop reduces with)
    return chosen | (best(scores, candidates) & ~chosen.amax(dim=1, keepdim=True))


def threshold(
    confidence: torch.Tensor, candidates: torch.Tensor, gamma: float, scores: torch.Tensor | None = None
) -> torch.Tensor:
    """Candidates with confidence strictly above gamma (Fast-dLLM); else the top-1 by `scores`."""
    chosen = candidates & (confidence > gamma)
    return with_fallback(chosen, confidence if scores is None else scores, candidates)


def threshold_at_least(
    confidence: torch.Tensor, candidates: torch.Tensor, gamma: float, at_least: int, scores: torch.Tensor | None = None
) -> torch.Tensor:
    """Candidates with confidence strictly above gamma, but at least the `at_least` best by
    `scores` (default: confidence) when fewer pass: SDAR's / LLaDA2's dynamic rule."""
    chosen = candidates & (confidence > gamma)
    short = chosen.sum(dim=1) < at_least
    most = top_k(confidence if scores is None else scores, candidates, at_least)
    return torch.where(short.unsqueeze(1), chosen | most, chosen)


def sorted_candidates(values: torch.Tensor, candidates: torch.Tensor, descending: bool):
    """Values of each row's candidates sorted, plus a validity mask for the sorted slots."""
    fill = NEG_INF if descending else float("inf")
    v = values.double().masked_fill(~candidates, fill)
    sorted_v = torch.sort(v, dim=1, descending=descending, stable=True).values
    count = candidates.sum(dim=1, keepdim=True)
    valid = torch.arange(v.shape[1], device=v.device).unsqueeze(0) < count
    return sorted_v.masked_fill(~valid, 0.0), valid


def prefix_count(ok: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Length of the leading run of True in each row, at least 1 where a row has candidates."""
    run = (ok & valid).long().cumprod(dim=1).sum(dim=1)
    return torch.where(valid.any(dim=1), run.clamp(min=1), run)


def factor_count(confidence: torch.Tensor, candidates: torch.Tensor, f: float) -> torch.Tensor:
    """Largest n with (n + 1)(1 - c_n) < f, c_n the n-th highest confidence (at least 1).

    (n + 1)(1 - c_n) never decreases in n, so the admissible n form a prefix.
    """
    c, valid = sorted_candidates(confidence, candidates, descending=True)
    n = torch.arange(1, c.shape[1] + 1, device=c.device, dtype=torch.float64).unsqueeze(0)
    return prefix_count((n + 1.0) * (1.0 - c) < f, valid)


def factor(confidence: torch.Tensor, candidates: torch.Tensor, f: float) -> torch.Tensor:
    """top_k(confidence, candidates, factor_count(...)) from one sort: the admissible n form a
    prefix of the sorted slots, so the slots admitted (and the first, at least) are the tokens.
    (The same sort order as top_k's: float32 to float64 is exact.)"""
    c, order = torch.sort(confidence.double().masked_fill(~candidates, NEG_INF), dim=1, descending=True, stable=True)
    # (n + 1)(1 - c_n), n = 1, 2, ..., rounded as factor_count's; -inf slots (no candidate) give +inf
    admitted = ramp(2, c.shape[1] + 2, torch.float64, c.device) * minus(constant(1.0, c), c) < f
    admitted.select(1, 0).fill_(True)
    return _unsort(admitted, order, candidates)


def entropy_bounded_count(entropy: torch.Tensor, candidates: torch.Tensor, gamma: float) -> torch.Tensor:
    """EB-sampler: the largest prefix U (by ascending entropy) with sum_U H - max_U H <= gamma.

    Sorted ascending, max_U H is the last entry, so the left side is the sum of the
    entropies before it; it never decreases, so the admissible sets form a prefix.
    """
    h, valid = sorted_candidates(entropy, candidates, descending=False)
    before = torch.cumsum(h, dim=1)
    before = torch.cat([torch.zeros_like(before[:, :1]), before[:, :-1]], dim=1)
    return prefix_count(before <= gamma, valid)


def entropy_bounded(
    entropy: torch.Tensor, candidates: torch.Tensor, gamma: float, scores: torch.Tensor | None = None,
    inf_elsewhere: bool = False,
) -> torch.Tensor:
    """Commit that many tokens; ranked by `scores` (default: lowest entropy first).

    Ranked by entropy, the tokens are the first `count` of the very sort that finds the count
    (ascending, stable: the same order as top_k on -entropy). Entropies are never negative, so
    the sums along the sort never decrease and the admissible slots are exactly those whose
    predecessors sum to at most gamma (slot 0 always): no count, no prefix run. `inf_elsewhere`:
    the entropy is already +inf off the candidates (where they sort last), so it is not masked here."""
    if scores is not None:
        return top_k(scores, candidates, entropy_bounded_count(entropy, candidates, gamma))
    if not inf_elsewhere:
        entropy = entropy.masked_fill(~candidates, float("inf"))
    # sorted in their own dtype (the order in float64 too: the conversion is exact), summed in float64
    h, order = torch.sort(entropy, dim=1, stable=True)
    # slot i + 1 is admitted by within[i] (the first i + 1 entropies sum to at most gamma), slot 0
    # always: within's last entry (the sum of all, not needed) stands for slot 0, compared with +inf
    # (True: the sums are never NaN), so one scatter through the order rotated by one slot puts them back
    width = h.shape[1]
    within = torch.cumsum(h, dim=1, dtype=torch.float64) <= _budgets(gamma, width, h.device)
    return _unsort(within, order.index_select(1, _next_slot(width, order.device)), candidates)


def _next_slot(width: int, device: torch.device) -> torch.Tensor:
    """[width] long (1, 2, ..., width - 1, 0), made once per (width, device): read it, never write."""
    return cached(("next_slot", width, device), lambda: torch.arange(1, width + 1, device=device) % width)


def _budgets(gamma: float, width: int, device: torch.device) -> torch.Tensor:
    """[width] float64 (gamma, ..., gamma, +inf), made once per (gamma, width, device): read it, never write."""
    def make() -> torch.Tensor:
        budgets = torch.full((width,), float(gamma), dtype=torch.float64, device=device)
        budgets[width - 1 :] = float("inf")
        return budgets
    return cached(("budgets", gamma, width, device), make)


def steps_schedule_k(remaining: torch.Tensor, steps_left: torch.Tensor) -> torch.Tensor:
    """Tokens this step so `remaining` tokens finish in `steps_left` steps, larger steps first.

    ceil(remaining / steps_left) reproduces LLaDA's split (base + 1 for the first
    `remainder` steps) and stays right if tokens are remasked on the way.
    """
    steps_left = steps_left.clamp(min=1)
    return torch.div(remaining + steps_left - 1, steps_left, rounding_mode="floor").clamp(min=1)
