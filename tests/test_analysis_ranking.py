"""Leaderboard headlines with bootstrap intervals over samples, and ties with the leader."""

import numpy as np
import pandas as pd
import pytest

from parallelbench.analysis.curves import curves
from parallelbench.analysis.leaderboard import curves_from_points, rank
from parallelbench.analysis.ranking import headline_intervals, shared_ranks, tied_with_leader, with_intervals
from parallelbench.analysis.report import build_report
from parallelbench.analysis.synthetic import result_row


def _frame(accuracies: dict[str, dict[int, float]], samples: int, seed: int = 0) -> pd.DataFrame:
    """Top-k strategies, each k solved by a fixed share of samples (the first share of ids)."""
    rng = np.random.default_rng(seed)
    rows = []
    for strategy, by_k in accuracies.items():
        for k, share in by_k.items():
            solved = rng.permutation(samples) < round(share * samples)
            for i in range(samples):
                rows.append(result_row(strategy, {"k": k}, task="t", sample_id=f"s{i}", score=float(solved[i]),
                                       num_tokens=16, nfe=16 // k))
    return pd.DataFrame(rows)


def _ranked(frame, thresholds=(80.0,)):
    _, averaged = curves(frame)
    table = rank(curves_from_points(averaged), thresholds)
    table["AUP"] = float("nan")
    return with_intervals(table, headline_intervals(frame, thresholds, with_aup=False), ["80"])


def test_few_samples_tie_and_many_samples_separate():
    # "confidence-topk" holds 90% up to k = 4, "random" drops to 75% at k = 4: with 16 samples both could
    # sustain 2 or 4 tokens per step; with 400 samples "confidence-topk" is clearly ahead
    design = {"confidence-topk": {1: 1.0, 2: 0.95, 4: 0.9}, "random": {1: 1.0, 2: 0.9, 4: 0.75}}
    small = _ranked(_frame(design, 16)).set_index("strategy")
    assert small.loc["confidence-topk", "80"] == 4 and small.loc["random", "80"] == 2
    assert small.loc["random", "tied"] and small.loc["confidence-topk", "tied"]
    assert small.loc["random", "ci_low"] <= 2 <= small.loc["random", "ci_high"]
    large = _ranked(_frame(design, 400)).set_index("strategy")
    assert not large.loc["random", "tied"] and not large.loc["confidence-topk", "tied"]
    assert large.loc["confidence-topk", "ci_low"] == 4 and large.loc["random", "ci_high"] == 2


def test_intervals_are_deterministic_and_cover_the_headline():
    frame = _frame({"l2r": {1: 1.0, 2: 0.85, 4: 0.5}}, 40)
    first = headline_intervals(frame, (80.0, 70.0))
    assert first.equals(headline_intervals(frame, (80.0, 70.0)))
    assert {"80_ci_low", "80_ci_high", "70_ci_low", "AUP_ci_high"} <= set(first.columns)
    table = _ranked(frame)
    assert table.loc[0, "ci_low"] <= table.loc[0, "80"] <= table.loc[0, "ci_high"]


def test_tied_with_leader_rules():
    values = np.array([4.0, 3.0, 1.0])
    assert tied_with_leader(values, np.array([3.5, 2.0, 0.5]), np.array([4.5, 3.6, 1.5])) == [True, True, False]
    assert tied_with_leader(values, np.array([3.5, 2.0, 0.5]), np.array([4.5, 3.4, 1.5])) == [False, False, False]
    assert tied_with_leader(values, np.full(3, np.nan), np.full(3, np.nan)) == [False] * 3


def test_rows_the_samples_cannot_order_share_a_rank_below_the_leader():
    lows, highs = np.array([10.0, 2.0, 1.5, 0.0, 0.0]), np.array([12.0, 4.0, 2.5, 1.0, 0.5])
    assert shared_ranks(lows, highs) == [1, 2, 2, 4, 4]
    assert shared_ranks(np.array([1.0, np.nan]), np.array([2.0, np.nan])) == [1, 2]


def test_report_leaderboard_csv_has_intervals_and_ties(tmp_path):
    frame = _frame({"confidence-topk": {1: 1.0, 2: 0.95, 4: 0.9}, "random": {1: 1.0, 2: 0.9, 4: 0.75}}, 16)
    build_report(frame, tmp_path, static_figures=False)
    board = pd.read_csv(tmp_path / "leaderboard.csv")
    assert {"rank", "ci_low", "ci_high", "tied", "90_ci_low", "AUP_ci_low", "AUP_tied"} <= set(board.columns)
    assert board["tied"].dtype == bool
    page = (tmp_path / "report.html").read_text()
    assert 'data-tied="true"' in page and "Tied for first" in page and 'id="precision"' in page
    curve = pd.read_csv(next((tmp_path / "curves").rglob("confidence-topk.csv")))
    assert {"ci_low", "ci_high", "n"} <= set(curve.columns)
    avg = curve[curve["task"] == "avg"]
    assert (avg["ci_low"] <= avg["accuracy"]).all() and (avg["accuracy"] <= avg["ci_high"]).all()
    assert set(curve["n"]) == {16}


@pytest.mark.parametrize("samples", [0])
def test_empty_frame_gives_no_intervals(samples):
    assert headline_intervals(pd.DataFrame(), (80.0,)).empty
