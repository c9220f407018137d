"""How far a decoding order is from left to right, per sample.

Pure functions of a row's stored decoding order: ``order[i]`` is the step at which answer
position ``i`` was committed (the answer is the generation up to its first EOS; -1 marks
a position pre-filled by a template), and ``pad_order`` the steps of the generation
positions from the first EOS on (-1 where ``stop_at_eos`` filled them with EOS at once).

- ``dec_order_kendall`` / ``dec_order_spearman``: Kendall's tau-b and Spearman's rho between
  the steps of all generation positions, in position order, and the same steps sorted
  (the ParallelBench rewrite's definition): 1 for left to right (one token or a block of
  tokens per step), -1 for right to left. ``_ignore_pad``: the answer positions only, the
  EOS / padding tail left out. Undefined (None) with fewer than two positions or a single
  step.
- ``ar_local`` / ``ar_global``: DiffuCoder's local and global AR-ness at k = 1 (Gong et al.
  2025, "DiffuCoder", section 3): list the answer's decoding events in order (by step,
  left to right within a step); local = the share of events that decode the position
  right after the previous event's; global = the share of events that decode the leftmost
  position still masked. Both are 1 for left-to-right decoding and near 1/n for a random
  order.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

ORDER_COLUMNS: tuple[str, ...] = (
    "dec_order_kendall",
    "dec_order_spearman",
    "dec_order_kendall_ignore_pad",
    "dec_order_spearman_ignore_pad",
    "ar_local",
    "ar_global",
)


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _tied_pairs(values) -> int:
    counts: dict = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return sum(c * (c - 1) // 2 for c in counts.values())


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b (ties in either sequence handled as scipy's default does); None if undefined.

    O(n log n): with the pairs sorted by (x, y), a discordant pair is an inversion of y,
    counted with a Fenwick tree over y's distinct values.
    """
    n = len(x)
    if n < 2 or len(y) != n:
        return None
    pairs = sorted(zip(x, y))
    ys = [b for _, b in pairs]
    level = {v: i + 1 for i, v in enumerate(sorted(set(ys)))}
    tree = [0] * (len(level) + 1)
    discordant = 0
    for seen, v in enumerate(ys):
        r, below = level[v], 0
        while r > 0:  # how many earlier values are <= v
            below += tree[r]
            r -= r & -r
        discordant += seen - below
        r = level[v]
        while r < len(tree):
            tree[r] += 1
            r += r & -r
    total = n * (n - 1) // 2
    tied_x, tied_y, tied_both = _tied_pairs(x), _tied_pairs(y), _tied_pairs(pairs)
    denom = math.sqrt((total - tied_x) * (total - tied_y))
    if denom == 0:
        return None
    return (total - tied_x - tied_y + tied_both - 2 * discordant) / denom


def average_ranks(values: Sequence[float]) -> np.ndarray:
    """1-based ranks, tied values sharing the mean of their ranks."""
    a = np.asarray(values, dtype=float)
    order = np.argsort(a, kind="mergesort")
    ranks = np.empty(len(a), dtype=float)
    sorted_a = a[order]
    start = 0
    for end in range(1, len(a) + 1):
        if end == len(a) or sorted_a[end] != sorted_a[start]:
            ranks[order[start:end]] = (start + end + 1) / 2.0
            start = end
    return ranks


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho: Pearson's correlation of the average ranks; None if undefined."""
    if len(x) < 2 or len(x) != len(y):
        return None
    rx, ry = average_ranks(x), average_ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denom = math.sqrt(float((rx * rx).sum()) * float((ry * ry).sum()))
    return _finite(float((rx * ry).sum()) / denom) if denom > 0 else None


def order_correlations(steps: Sequence[int]) -> tuple[float | None, float | None]:
    """(Kendall, Spearman) of the steps in position order against the same steps sorted."""
    ranked = sorted(steps)
    return kendall_tau_b(ranked, steps), spearman_rho(ranked, steps)


def decode_sequence(order: Sequence[int]) -> list[int]:
    """Answer positions in the order they were decoded: by step, left to right within a step
    (pre-filled positions, step -1, are not decoding events)."""
    return [pos for step, pos in sorted((int(s), p) for p, s in enumerate(order) if int(s) >= 0)]


def ar_local(order: Sequence[int], k: int = 1) -> float | None:
    """Share of decoding events preceded by k events at the k positions just before it."""
    seq = decode_sequence(order)
    if len(seq) <= k:
        return None
    hits = sum(all(seq[i - j] == seq[i] - j for j in range(1, k + 1)) for i in range(k, len(seq)))
    return hits / (len(seq) - k)


def ar_global(order: Sequence[int], k: int = 1) -> float | None:
    """Share of decoding events that decode one of the k leftmost positions still masked."""
    seq = decode_sequence(order)
    if not seq:
        return None
    size = len(order)
    tree = [0] * (size + 1)  # Fenwick tree of the masked positions, for "how many masked left of p"

    def add(pos: int, delta: int) -> None:
        pos += 1
        while pos <= size:
            tree[pos] += delta
            pos += pos & -pos

    def masked_before(pos: int) -> int:
        total = 0
        while pos > 0:
            total += tree[pos]
            pos -= pos & -pos
        return total

    for pos in seq:
        add(pos, 1)
    hits = 0
    for pos in seq:
        hits += masked_before(pos) < k
        add(pos, -1)
    return hits / len(seq)


def _steps(values) -> list[int] | None:
    if values is None:
        return None
    try:
        return [int(v) for v in values]
    except (TypeError, ValueError):
        return None


def order_metrics(order: Sequence[int] | None, pad_order: Sequence[int] | None = None) -> dict[str, float | None]:
    """The six `ORDER_COLUMNS` of one sample; None where undefined or unknown.

    Without `pad_order` (rows stored before it was recorded, and models that decode no
    padding) the whole-generation correlations are unknown; the rest need only `order`.
    """
    answer = _steps(order)
    out: dict[str, float | None] = dict.fromkeys(ORDER_COLUMNS)
    if answer is None:
        return out
    out["dec_order_kendall_ignore_pad"], out["dec_order_spearman_ignore_pad"] = order_correlations(answer)
    out["ar_local"], out["ar_global"] = ar_local(answer), ar_global(answer)
    tail = _steps(pad_order)
    if tail is not None:
        last = max([s for s in answer + tail if s >= 0], default=-1)  # the step at which stop_at_eos filled the tail
        full = answer + [s if s >= 0 else last for s in tail]
        out["dec_order_kendall"], out["dec_order_spearman"] = order_correlations(full)
    return out
