"""95% intervals for scores: how much a measured accuracy could move with other samples.

Rules (docs/report.md, "Intervals"):

- 0/1 scores: the Wilson score interval. When a sample was decoded under several seeds
  its rows are not independent, so the count is shrunk to an effective sample size
  n_rows / design effect, the design effect estimated from how much samples' means vary
  (between 1 and the rows per sample; at an accuracy of 0 or 1 nothing can be estimated
  and every sample counts once).
- Continuous scores: a percentile bootstrap over samples (fixed seed); with repeated
  seeds it resamples sample ids and keeps all the seeds of each drawn sample.
- A task average (each task weighs the same) combines its tasks' intervals with MOVER
  (Zou and Donner 2008), which keeps the asymmetry of each task's interval.
- Paired comparisons of two configs on their common samples: a paired cluster bootstrap
  interval for the difference and a McNemar exact p-value for 0/1 scores with one seed
  per sample (a paired bootstrap p-value otherwise).

numpy only: the package does not depend on scipy.
"""

from __future__ import annotations

from parallelbench.display import counted

import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

#: Two-sided 95% normal quantile.
Z95 = 1.959963984540054
#: Bootstrap resamples and seed (fixed: the same data give the same interval).
BOOTSTRAP_REPS = 2000
BOOTSTRAP_SEED = 0


@dataclass(frozen=True)
class Interval:
    """A mean score with its 95% interval (score units), the sample count and the method."""

    estimate: float
    low: float
    high: float
    n: int  # distinct samples (clusters), not rows
    rows: int
    method: str  # "wilson", "wilson-clustered", "bootstrap", "bootstrap-clustered", "none"

    @property
    def half_width(self) -> float:
        return half_width(self.low, self.high)


def half_width(low: float, high: float) -> float:
    """Half the width of an interval: what `score ± half-width` shows (intervals may be asymmetric)."""
    return (float(high) - float(low)) / 2.0


def wilson(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion; `n` may be an effective (non-integer) count."""
    if not n > 0:
        return (float("nan"), float("nan"))
    p = min(max(successes / n, 0.0), 1.0)
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    spread = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    low = 0.0 if successes <= 0 else max(0.0, centre - spread)
    high = 1.0 if successes >= n else min(1.0, centre + spread)  # exact ends: no rounding below 1
    return (low, high)


def is_binary(values: Iterable[float]) -> bool:
    """True when every score is exactly 0 or 1 (then Wilson and McNemar apply)."""
    arr = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=float)
    return bool(arr.size) and bool(np.all((arr == 0.0) | (arr == 1.0)))


def _clusters(values: np.ndarray, clusters: Sequence[Any] | None) -> tuple[np.ndarray, np.ndarray]:
    """(sum of scores, rows) per cluster; every row its own cluster when `clusters` is None."""
    if clusters is None:
        return values.astype(float), np.ones(len(values))
    codes = _codes(clusters)
    sums = np.bincount(codes, weights=values, minlength=codes.max() + 1 if len(codes) else 0)
    counts = np.bincount(codes, minlength=len(sums)).astype(float)
    return sums, counts


def _codes(clusters: Sequence[Any]) -> np.ndarray:
    """Integer codes 0..G-1 for hashable cluster labels (tuples allowed), in first-seen order."""
    seen: dict[Any, int] = {}
    return np.fromiter((seen.setdefault(c, len(seen)) for c in clusters), dtype=np.int64, count=len(clusters))


def design_effect(sums: np.ndarray, counts: np.ndarray) -> float:
    """Variance of the clustered mean over the variance it would have with independent rows.

    Clipped to [1, mean rows per cluster]; when the naive variance is 0 (accuracy 0 or 1)
    the upper end is returned, i.e. each sample counts once.
    """
    total = counts.sum()
    groups = len(counts)
    upper = max(1.0, total / groups) if groups else 1.0
    if upper == 1.0:
        return 1.0
    if groups < 2:
        return upper
    p = sums.sum() / total
    naive = p * (1 - p) / total
    if naive <= 0:
        return upper
    robust = groups / (groups - 1) * float(np.sum((sums - counts * p) ** 2)) / total**2
    return float(min(max(robust / naive, 1.0), upper))


def bootstrap_ratio(sums: np.ndarray, counts: np.ndarray, reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """Bootstrap replicates of sum(sums)/sum(counts), resampling whole clusters with replacement."""
    rng = np.random.default_rng(seed)
    groups = len(sums)
    weights = _resample_counts(rng, groups, reps)
    num = weights @ sums
    den = weights @ counts
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / den


def _resample_counts(rng: np.random.Generator, groups: int, reps: int) -> np.ndarray:
    """[reps, groups] how often each cluster is drawn in each resample (multinomial counts)."""
    return rng.multinomial(groups, np.full(groups, 1.0 / groups), size=reps).astype(float)


def percentile(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The central `level` range of bootstrap replicates (NaN replicates left out)."""
    values = values[np.isfinite(values)]
    if values.size == 0:
        return (float("nan"), float("nan"))
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return (float(low), float(high))


def interval(scores: Sequence[float], clusters: Sequence[Any] | None = None, *, reps: int = BOOTSTRAP_REPS,
             seed: int = BOOTSTRAP_SEED) -> Interval:
    """The mean of `scores` with its 95% interval; `clusters` (e.g. sample ids) groups repeated seeds."""
    values = np.asarray(scores, dtype=float)
    values = values[np.isfinite(values)] if clusters is None else values
    if clusters is not None:
        keep = np.isfinite(values)
        clusters = [c for c, k in zip(clusters, keep) if k]
        values = values[keep]
    if values.size == 0:
        nan = float("nan")
        return Interval(nan, nan, nan, 0, 0, "none")
    sums, counts = _clusters(values, clusters)
    groups, rows = len(sums), int(values.size)
    mean = float(values.mean())
    repeated = bool(np.any(counts > 1))
    if is_binary(values):
        n_eff = rows / design_effect(sums, counts) if repeated else float(rows)
        low, high = wilson(mean * n_eff, n_eff)
        return Interval(mean, low, high, groups, rows, "wilson-clustered" if repeated else "wilson")
    if groups < 2:
        return Interval(mean, mean, mean, groups, rows, "bootstrap")
    low, high = percentile(bootstrap_ratio(sums, counts, reps, seed))
    return Interval(mean, min(low, mean), max(high, mean), groups, rows, "bootstrap-clustered" if repeated else "bootstrap")


def combine(estimates: Sequence[float], lows: Sequence[float], highs: Sequence[float],
            weights: Sequence[float] | None = None) -> tuple[float, float, float]:
    """(estimate, low, high) of a weighted sum of independent estimates (MOVER).

    Default weights 1/len: the task average, where each task weighs the same.
    """
    est = np.asarray(estimates, dtype=float)
    lo = np.asarray(lows, dtype=float)
    hi = np.asarray(highs, dtype=float)
    w = np.full(est.size, 1.0 / est.size) if weights is None else np.asarray(weights, dtype=float)
    if est.size == 0:
        nan = float("nan")
        return (nan, nan, nan)
    total = float(np.sum(w * est))
    down = np.where(w >= 0, est - lo, hi - est) * np.abs(w)
    up = np.where(w >= 0, hi - est, est - lo) * np.abs(w)
    return (total, total - float(np.sqrt(np.sum(down**2))), total + float(np.sqrt(np.sum(up**2))))


# ---------------------------------------------------------------- paired comparisons


@dataclass(frozen=True)
class PairedDifference:
    """mean(A) - mean(B) on common rows, its 95% interval and a two-sided p-value."""

    difference: float
    low: float
    high: float
    p_value: float
    test: str  # "McNemar exact" or "paired bootstrap"
    n: int  # common samples
    rows: int  # common rows (sample x seed)
    mean_a: float
    mean_b: float
    a_only: int = 0  # 0/1 scores: rows A got right and B wrong (McNemar's discordant pairs)
    b_only: int = 0


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value: a binomial(b + c, 1/2) test on the discordant pairs."""
    total = a_only + b_only
    if total == 0:
        return 1.0
    smaller = min(a_only, b_only)
    log_half = total * math.log(0.5)
    tail = sum(math.exp(math.lgamma(total + 1) - math.lgamma(i + 1) - math.lgamma(total - i + 1) + log_half) for i in range(smaller + 1))
    return float(min(1.0, 2.0 * tail))


def paired_difference(a: Sequence[float], b: Sequence[float], clusters: Sequence[Any] | None = None, *,
                      reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED) -> PairedDifference:
    """Compare two configs on the same rows (a[i] and b[i] score one sample under one seed).

    Interval: percentile bootstrap of the mean difference, resampling samples (`clusters`)
    so repeated seeds of a sample stay together. p-value: McNemar exact when both score
    0/1 and no sample repeats; otherwise the share of bootstrap differences, shifted to
    mean 0, at least as far from 0 as the observed one.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape or a.size == 0:
        raise ValueError("paired_difference needs two equally long, non-empty score lists")
    diff = a - b
    sums, counts = _clusters(diff, clusters)
    observed = float(diff.mean())
    replicates = bootstrap_ratio(sums, counts, reps, seed) if len(sums) > 1 else np.array([observed])
    low, high = percentile(replicates)
    low, high = min(low, observed), max(high, observed)
    binary = is_binary(a) and is_binary(b)
    a_only = int(np.sum((a == 1) & (b == 0))) if binary else 0
    b_only = int(np.sum((a == 0) & (b == 1))) if binary else 0
    if binary and not np.any(counts > 1):
        p, test = mcnemar_exact(a_only, b_only), "McNemar exact"
    else:
        shifted = replicates[np.isfinite(replicates)] - observed
        far = int(np.sum(np.abs(shifted) >= abs(observed) - 1e-12)) if abs(observed) > 0 else len(shifted)
        p, test = min(1.0, (1 + far) / (1 + len(shifted))), "paired bootstrap"
    return PairedDifference(observed, low, high, p, test, len(sums), int(a.size), float(a.mean()), float(b.mean()), a_only, b_only)


# ---------------------------------------------------------------- what a run can say


def precision_summary(points: Any) -> dict[str, Any]:
    """Samples per point and interval half-widths (accuracy points) of per-task points.

    `points` has columns n, ci_low, ci_high (accuracy in percent), as `curves.task_points`
    writes them. Returns {points, n_min, n_max, half_min, half_median, half_max}.
    """
    if points is None or len(points) == 0:
        return {"points": 0}
    n = np.asarray(points["n"], dtype=float)
    half = (np.asarray(points["ci_high"], dtype=float) - np.asarray(points["ci_low"], dtype=float)) / 2.0
    half = half[np.isfinite(half)]
    out: dict[str, Any] = {"points": int(len(n)), "n_min": int(n.min()), "n_max": int(n.max())}
    if half.size:
        out.update(half_min=float(half.min()), half_median=float(np.median(half)), half_max=float(half.max()))
    return out


def precision_line(points: Any) -> str:
    """One sentence for the screen and the report: samples per point and interval widths."""
    s = precision_summary(points)
    if not s["points"]:
        return "no operating points yet"
    samples = f"{s['n_min']}" if s["n_min"] == s["n_max"] else f"{s['n_min']}-{s['n_max']}"
    noun = "sample" if s["n_max"] == 1 else "samples"
    text = f"each accuracy point rests on {samples} {noun} per task ({counted(s['points'], 'task point')})"
    if "half_median" in s:
        low, median, high = (f"±{s[k]:.1f}" for k in ("half_min", "half_median", "half_max"))
        if low == high:  # one width (one point, or equal samples at 0% or 100%): no range to give
            text += f"; 95% intervals are {median} accuracy points wide"
        else:
            text += f"; 95% intervals are {median} accuracy points wide at the median ({low} to {high})"
    return text + "; more samples per task (--limit N) narrow them roughly as 1/sqrt(N)"
