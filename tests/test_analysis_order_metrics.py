"""Decoding-order metrics (issue 26 item 4, display side): rank correlation of the commit order
with left to right and DiffuCoder's local / global AR-ness, per sample and per strategy."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from parallelbench.analysis.order_metrics import (
    ORDER_COLUMNS, ar_ness, kendall_tau_b, order_correlations, order_metrics, order_summary, spearman_rho,
)
from parallelbench.analysis.report import build_report
from parallelbench.analysis.synthetic import result_row, synthetic_frame
from parallelbench.cli import app
from parallelbench.runner.store import ResultsStore


def test_correlations_by_hand():
    assert order_correlations([0, 1, 2, 3]) == (1.0, 1.0)  # left to right
    assert order_correlations([3, 2, 1, 0]) == (-1.0, -1.0)  # right to left
    # two tokens per step, left to right: still perfectly ordered
    assert order_correlations([0, 0, 1, 1]) == (1.0, 1.0)
    # steps [1, 0, 2]: sorted [0, 1, 2]; pairs (0,1) discordant, (0,2), (1,2) concordant: tau = 1/3
    kendall, spearman = order_correlations([1, 0, 2])
    assert kendall == pytest.approx(1 / 3) and spearman == pytest.approx(0.5)
    assert math.isnan(order_correlations([2, 2, 2])[0])  # one step for everything: undefined
    # tau-b with ties on both sides: x = [0, 0, 1], y = [0, 1, 1]: 2 concordant of 3 pairs, 1 tie each side
    assert kendall_tau_b([0, 0, 1], [0, 1, 1]) == pytest.approx(1 / math.sqrt(2 * 2))
    assert spearman_rho([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def test_correlations_equal_scipy_on_random_orders():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    for n in range(2, 40):
        steps = list(rng.integers(-1, 6, size=n))
        kendall, spearman = order_correlations(steps)
        ours = np.array([kendall, spearman])
        theirs = np.array([stats.kendalltau(sorted(steps), steps)[0], stats.spearmanr(sorted(steps), steps)[0]])
        assert np.allclose(ours, theirs, equal_nan=True), steps


def test_ar_ness_by_hand():
    assert ar_ness([0, 1, 2, 3]) == (1.0, 1.0)
    # right to left: never the next token; the leftmost masked only at the last commit
    assert ar_ness([3, 2, 1, 0]) == (0.0, 0.25)
    # commits in order: position 2, 0, 1, 3. Local: of the three commits after the first, only 1 extends
    # its predecessor (0). Global: 0, 1 and 3 each take the leftmost masked position, 2 does not
    local, global_ = ar_ness([1, 2, 0, 3])
    assert local == pytest.approx(1 / 3) and global_ == pytest.approx(3 / 4)
    # a pre-filled first position (-1) is context: decoding 1, 2 after it is left to right
    assert ar_ness([-1, 0, 1]) == (1.0, 1.0)
    assert all(math.isnan(v) for v in ar_ness([-1, -1]))


def test_stored_columns_win_and_the_order_column_fills_in():
    rows = [result_row(order=json.dumps([0, 1, 2])), result_row(order=json.dumps([2, 1, 0]), ar_local=0.5)]
    frame = pd.DataFrame(rows)
    metrics = order_metrics(frame)
    assert list(metrics.columns) == list(ORDER_COLUMNS)
    assert metrics["dec_order_kendall_ignore_pad"].tolist() == [1.0, -1.0]
    assert metrics["ar_local"].tolist() == [1.0, 0.5]  # row 2's stored value kept
    # the pad-inclusive correlations need the pad positions, which the stored order lacks
    assert metrics["dec_order_kendall"].isna().all()
    frame["dec_order_kendall"] = [0.25, 0.75]
    assert order_metrics(frame)["dec_order_kendall"].tolist() == [0.25, 0.75]


def test_summary_per_strategy_and_l2r_is_left_to_right():
    summary = order_summary(synthetic_frame(samples=3)).set_index("config")
    assert summary.loc["l2r[k=2]", "dec_order_kendall_ignore_pad"] == 1.0
    assert summary.loc["l2r[k=2]", "ar_global"] == 1.0
    assert summary.loc["random[k=1]", "ar_global"] < 0.6
    assert (summary["n"] == 12).all()  # 4 tasks x 3 samples


def test_results_order_and_the_report_show_them(tmp_path):
    path = tmp_path / "o.db"
    with ResultsStore(path) as store:
        store.write(synthetic_frame(samples=3).to_dict("records"))
    result = CliRunner().invoke(app, ["results", "--db", str(path), "--order"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    for text in ("τ text", "AR local", "AR global", "l2r[k=2]", "Kendall", "DiffuCoder"):
        assert text in result.output
    page = build_report(synthetic_frame(samples=3), tmp_path / "out", static_figures=False).read_text(encoding="utf-8")
    assert 'id="decoding-order"' in page and "AR global" in page
    assert set(pd.read_csv(tmp_path / "out" / "order.csv").columns) >= set(ORDER_COLUMNS)


def test_batched_frame_metrics_equal_the_per_sample_definition():
    from parallelbench.analysis.order_metrics import sample_metrics

    rng = np.random.default_rng(1)
    orders = [list(map(int, rng.integers(low, rng.integers(1, 9), size=n)))
              for low in (-1, 0) for n in rng.integers(0, 30, size=200)]  # with and without pre-filled positions
    frame = pd.DataFrame([result_row(order=json.dumps(o)) for o in orders])
    metrics = order_metrics(frame)
    for i, order in enumerate(orders):
        expected = pd.Series(sample_metrics(order))
        got = metrics.iloc[i][expected.index]
        assert np.allclose(got.to_numpy(float), expected.to_numpy(float), equal_nan=True, atol=1e-12), order
