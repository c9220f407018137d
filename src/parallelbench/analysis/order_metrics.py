"""Decoding-order metrics per sample and per strategy: how left-to-right a decode was.

The result columns (issue 26 item 4; the `score` side stores them at decode time):

- `dec_order_kendall`, `dec_order_spearman`: the rank correlation (Kendall's tau-b,
  Spearman's rho with average ranks) between the commit step of every generated position
  and the same steps sorted ascending, i.e. with a strictly left-to-right schedule, as the
  authors' lm-eval metadata defines them; 1 for left to right, NaN when every position was
  committed in one step.
- `..._ignore_pad`: the same over the positions before the first pad/EOS token.
- `ar_local`, `ar_global`: DiffuCoder's local and global AR-ness at k = 1, defined once in
  `parallelbench.scoring.order` (the columns the store writes): over the commits in order
  (commits of one step taken left to right), the share of commits after the first that are the
  immediate right neighbour of the previous commit, and the share that take the leftmost
  still-masked position.

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

from parallelbench.scoring.order import ORDER_COLUMNS, ar_global, ar_local, kendall_tau_b, spearman_rho  # noqa: F401
from parallelbench.scoring.order import order_correlations as _correlations

#: Short headers for tables (terminal and report), in `ORDER_COLUMNS` order.
SHORT_NAMES = ("τ all", "ρ all", "τ text", "ρ text", "AR local", "AR global")
LEGEND = (
    "τ / ρ: Kendall (tau-b) / Spearman rank correlation of each position's commit step with a left-to-right "
    "schedule (1 = left to right; dec_order_kendall / dec_order_spearman); all: every generated position, text: "
    "the positions before the first pad/EOS (the _ignore_pad variants); AR local / AR global: DiffuCoder's local "
    "and global AR-ness at k = 1 (share of commits that extend the previous one to the right / that take the "
    "leftmost masked position); means over samples"
)


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


def order_correlations(steps: Sequence[float]) -> tuple[float, float]:
    """(Kendall, Spearman) of the steps against left to right (`scoring.order`), NaN when undefined."""
    kendall, spearman = _correlations(list(steps))
    return _nan(kendall), _nan(spearman)


def ar_ness(steps: Sequence[int]) -> tuple[float, float]:
    """(local, global) AR-ness at k = 1 as `scoring.order` defines them (the stored columns), NaN when undefined."""
    return _nan(ar_local(list(steps))), _nan(ar_global(list(steps)))


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
    with np.errstate(invalid="ignore", divide="ignore"):  # one commit: local AR-ness is undefined (NaN)
        local = (positions[:, 1:] == positions[:, :-1] + 1).sum(axis=1) / (length - 1) if length > 1 \
            else np.full(len(positions), np.nan)
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
