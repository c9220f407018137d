"""Decoding-order metrics per sample and per strategy: how left-to-right a decode was.

The result columns (issue 26 item 4; the `score` side stores them at decode time):

- `dec_order_kendall`, `dec_order_spearman`: the rank correlation (Kendall's tau-b,
  Spearman's rho with average ranks) between the commit step of every generated position
  and the same steps sorted ascending, i.e. with a strictly left-to-right schedule, as the
  authors' lm-eval metadata defines them; 1 for left to right, NaN when every position was
  committed in one step.
- `..._ignore_pad`: the same over the positions before the first pad/EOS token.
- `ar_local`, `ar_global`: DiffuCoder's local and global AR-ness at k = 1 (Gong et al.
  2025, appendix A.2), over the commits in order (commits of one step taken left to
  right): the share of commits that are the immediate right neighbour of the previous
  commit (the first commit: of the context, i.e. the first masked position), and the
  share that take the leftmost still-masked position.

`order_metrics(frame)` uses the stored columns where a row has them. Until then (and for
old rows) it computes what the stored `order` column allows: that column stops at the
first stop token, so the `_ignore_pad` correlations and both AR-ness values come from it,
while the two pad-inclusive correlations, which need the EOS/pad positions too, stay NaN.
This module is the one place to change when the stored columns become the only source.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

ORDER_COLUMNS = (
    "dec_order_kendall",
    "dec_order_spearman",
    "dec_order_kendall_ignore_pad",
    "dec_order_spearman_ignore_pad",
    "ar_local",
    "ar_global",
)
#: Short headers for tables (terminal and report), in `ORDER_COLUMNS` order.
SHORT_NAMES = ("τ all", "ρ all", "τ text", "ρ text", "AR local", "AR global")
LEGEND = (
    "τ / ρ: Kendall (tau-b) / Spearman rank correlation of each position's commit step with a left-to-right "
    "schedule (1 = left to right; dec_order_kendall / dec_order_spearman); all: every generated position, text: "
    "the positions before the first pad/EOS (the _ignore_pad variants); AR local / AR global: DiffuCoder's local "
    "and global AR-ness at k = 1 (share of commits that extend the previous one to the right / that take the "
    "leftmost masked position); means over samples"
)


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b of two equal-length sequences (ties counted as in tau-b); NaN when undefined."""
    a, b = np.asarray(x, float), np.asarray(y, float)
    n = len(a)
    if n < 2:
        return math.nan
    upper = np.triu_indices(n, 1)
    da = np.sign(a[:, None] - a[None, :])[upper]
    db = np.sign(b[:, None] - b[None, :])[upper]
    pairs = len(da)
    ties_a, ties_b = int(np.count_nonzero(da == 0)), int(np.count_nonzero(db == 0))
    denominator = math.sqrt(float(pairs - ties_a) * float(pairs - ties_b))
    if denominator == 0:
        return math.nan
    return float(np.sum(da * db)) / denominator


def average_ranks(values: Sequence[float]) -> np.ndarray:
    """1-based ranks, tied values sharing the mean of their ranks."""
    v = np.asarray(values, float)
    order = np.argsort(v, kind="stable")
    ranks = np.empty(len(v))
    sorted_v = v[order]
    start = 0
    for end in range(1, len(v) + 1):
        if end == len(v) or sorted_v[end] != sorted_v[start]:
            ranks[order[start:end]] = (start + end + 1) / 2.0
            start = end
    return ranks


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho (Pearson correlation of average ranks); NaN when either side is constant."""
    if len(x) < 2:
        return math.nan
    rx, ry = average_ranks(x), average_ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denominator = math.sqrt(float(np.dot(rx, rx)) * float(np.dot(ry, ry)))
    return float(np.dot(rx, ry)) / denominator if denominator else math.nan


def order_correlations(steps: Sequence[float]) -> tuple[float, float]:
    """(Kendall, Spearman) of the commit steps against the same steps sorted ascending."""
    steps = [float(s) for s in steps]
    left_to_right = sorted(steps)
    return kendall_tau_b(left_to_right, steps), spearman_rho(left_to_right, steps)


def ar_ness(steps: Sequence[int]) -> tuple[float, float]:
    """(local, global) AR-ness at k = 1 of a decode given each position's commit step; positions
    with a negative step (pre-filled) are not commits and count as unmasked from the start."""
    commits = sorted((int(s), p) for p, s in enumerate(steps) if int(s) >= 0)
    if not commits:
        return math.nan, math.nan
    masked = sorted(p for _, p in commits)
    pointer = 0  # index into `masked` of the leftmost position still masked
    done = set()
    local = global_ = 0
    previous = masked[0] - 1  # the context (prompt, pre-filled tokens) ends just left of the first masked position
    for _, position in commits:
        local += position == previous + 1
        while pointer < len(masked) and masked[pointer] in done:
            pointer += 1
        global_ += position == masked[pointer]
        done.add(position)
        previous = position
    return local / len(commits), global_ / len(commits)


def sample_metrics(order: Sequence[int]) -> dict[str, float]:
    """The six columns for one stored `order` list (see the module doc for the NaN ones)."""
    kendall, spearman = order_correlations(order) if len(order) else (math.nan, math.nan)
    local, global_ = ar_ness(order)
    return {
        "dec_order_kendall": math.nan,
        "dec_order_spearman": math.nan,
        "dec_order_kendall_ignore_pad": kendall,
        "dec_order_spearman_ignore_pad": spearman,
        "ar_local": local,
        "ar_global": global_,
    }


def _parsed(value) -> list[int]:
    if isinstance(value, list):
        return value
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return []
    parsed = json.loads(value)
    return parsed if isinstance(parsed, list) else []


def _batch_correlations(steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`order_correlations` for every row of a [R, L] array at once (L >= 2)."""
    x = np.sort(steps, axis=1)
    n = steps.shape[1]
    dx = np.sign(x[:, :, None] - x[:, None, :])
    dy = np.sign(steps[:, :, None] - steps[:, None, :])
    pairs = n * (n - 1) / 2.0
    ties_x = (np.count_nonzero(dx == 0, axis=(1, 2)) - n) / 2.0
    ties_y = (np.count_nonzero(dy == 0, axis=(1, 2)) - n) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        kendall = (dx * dy).sum(axis=(1, 2)) / 2.0 / np.sqrt((pairs - ties_x) * (pairs - ties_y))
        # average ranks: 1 + (values below) + (ties, self excluded) / 2
        rx = 1.0 + (dx > 0).sum(axis=2) + ((dx == 0).sum(axis=2) - 1) / 2.0
        ry = 1.0 + (dy > 0).sum(axis=2) + ((dy == 0).sum(axis=2) - 1) / 2.0
        rx -= rx.mean(axis=1, keepdims=True)
        ry -= ry.mean(axis=1, keepdims=True)
        spearman = (rx * ry).sum(axis=1) / np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))
    kendall[~np.isfinite(kendall)] = np.nan
    spearman[~np.isfinite(spearman)] = np.nan
    return kendall, spearman


def _batch_ar_ness(steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`ar_ness` for every row of a [R, L] array of steps >= 0 (no pre-filled positions)."""
    length = steps.shape[1]
    positions = np.argsort(steps * length + np.arange(length), axis=1)  # commits in order, a step left to right
    first = positions[:, :1] == positions.min(axis=1, keepdims=True)
    local = (first.sum(axis=1) + (positions[:, 1:] == positions[:, :-1] + 1).sum(axis=1)) / length
    # the leftmost masked position when commit t happens is the smallest position committed at t or later
    leftmost = np.minimum.accumulate(positions[:, ::-1], axis=1)[:, ::-1]
    return local, (positions == leftmost).sum(axis=1) / length


def _parsed_all(orders: list) -> list[list[int]]:
    """Every stored `order` value as a list; one JSON parse for the lot when they are all text."""
    if orders and all(isinstance(v, str) and v.startswith("[") for v in orders):
        try:
            parsed = json.loads("[" + ",".join(orders) + "]")
            if len(parsed) == len(orders):
                return parsed
        except ValueError:
            pass
    return [_parsed(v) for v in orders]


def _computed(orders: list) -> np.ndarray:
    """[rows, 6] metrics computed from stored `order` values, rows of one length in batches."""
    parsed = _parsed_all(orders)
    out = np.full((len(parsed), len(ORDER_COLUMNS)), np.nan)
    by_length: dict[int, list[int]] = {}
    for i, steps in enumerate(parsed):
        by_length.setdefault(len(steps), []).append(i)
    for length, rows in by_length.items():
        if length == 0:
            continue
        block = np.asarray([parsed[i] for i in rows], dtype=float)
        plain = (block >= 0).all(axis=1)
        if plain.any():
            local, global_ = _batch_ar_ness(block[plain].astype(np.int64))
            out[np.asarray(rows)[plain], 4], out[np.asarray(rows)[plain], 5] = local, global_
        for i in np.asarray(rows)[~plain]:  # pre-filled positions: one by one
            out[i, 4], out[i, 5] = ar_ness(parsed[i])
        if length < 2:
            continue
        chunk = max(1, 4_000_000 // (length * length))
        for start in range(0, len(rows), chunk):
            part = rows[start : start + chunk]
            kendall, spearman = _batch_correlations(block[start : start + chunk])
            out[part, 2], out[part, 3] = kendall, spearman
    return out


def order_metrics(frame: pd.DataFrame) -> pd.DataFrame:
    """The six `ORDER_COLUMNS` for every row of `frame` (same index): stored values where the
    frame has them, else computed from the `order` column."""
    values = np.full((len(frame), len(ORDER_COLUMNS)), np.nan)
    for j, column in enumerate(ORDER_COLUMNS):
        if column in frame:
            values[:, j] = pd.to_numeric(frame[column], errors="coerce").to_numpy(float)
    computable = [ORDER_COLUMNS.index(c) for c in ("dec_order_kendall_ignore_pad", "dec_order_spearman_ignore_pad",
                                                    "ar_local", "ar_global")]
    missing = np.flatnonzero(np.isnan(values[:, computable]).any(axis=1))
    if "order" in frame and len(missing):
        orders = frame["order"].tolist()
        computed = _computed([orders[i] for i in missing])
        held = values[missing]
        values[missing] = np.where(np.isnan(held), computed, held)  # keep any stored value
    return pd.DataFrame(values, index=frame.index, columns=list(ORDER_COLUMNS))


def order_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, config): `n` rows and the mean of each order metric over them."""
    columns = ["model", "strategy", "config", "n", *ORDER_COLUMNS]
    if frame is None or len(frame) == 0:
        return pd.DataFrame(columns=columns)
    metrics = order_metrics(frame.reset_index(drop=True))
    data = pd.concat([frame[["model", "strategy", "config"]].reset_index(drop=True), metrics], axis=1)
    with np.errstate(all="ignore"):
        out = data.groupby(["model", "strategy", "config"], sort=True).agg(
            n=("config", "size"), **{c: (c, "mean") for c in ORDER_COLUMNS}).reset_index()
    return out[columns]
