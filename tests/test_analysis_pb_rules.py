"""The two PB rules: `site` (the public leaderboard's walk, default) and `max` (the authors' `pb analyze`).

Hand-computed expectations, a grid where the rules differ, the pooled number, the CLI, the
report and the CSV; an opt-in test runs the authors' own `compute_pb_scores` beside ours when
PB_AUTHORS_REPO points at a checkout of their rewrite.
"""

import json
import math
import os
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from parallelbench.analysis.leaderboard import curves_from_points, rank
from parallelbench.analysis.curves import curves
from parallelbench.analysis.pb_rules import (
    PBRuleError, check_rule, generation_lengths, max_rule_points, max_rule_table, pb_max,
)
from parallelbench.analysis.synthetic import result_row, synthetic_frame
from parallelbench.cli import app
from parallelbench.runner.store import ResultsStore

ROOT = Path(__file__).resolve().parents[1]


def recovery_grid() -> pd.DataFrame:
    """One task, 5 samples, generation length 32 (task unknown to the registry: num_tokens):
    threshold 0.9 -> 80% at 32/16 = 2 tokens/step, 0.7 -> 48% at 4, 0.5 -> 68% at 8."""
    rows = []
    for threshold, nfe, scores in ((0.9, 16, [1, 1, 1, 1, 0]), (0.7, 8, [1, 1, 0.4, 0, 0]), (0.5, 4, [1, 1, 1, 0.4, 0])):
        for i, score in enumerate(scores):
            rows.append(result_row("confidence-threshold", {"threshold": threshold}, model="m", task="handmade/list",
                                   sample_id=f"s{i}", score=float(score), nfe=nfe, num_tokens=32))
    return pd.DataFrame(rows)


def site_values(frame, thresholds):
    table = rank(curves_from_points(curves(frame)[1]), thresholds)
    return dict(zip(table["strategy"], table[[f"{t:g}" for t in thresholds]].to_numpy().tolist()))


def test_the_rules_differ_where_accuracy_recovers_and_where_site_interpolates():
    frame = recovery_grid()
    site = site_values(frame, [90, 80, 70, 60])["confidence-threshold"]
    # site: walk 2 (80%) -> 4 (48%): stop, interpolate 2 + (80 - x) / (80 - 48) * 2
    assert site == pytest.approx([0.0, 2.0, 2 + 10 / 32 * 2, 2 + 20 / 32 * 2])
    table = max_rule_table(frame, [90, 80, 70, 60])
    row = table.iloc[0]
    assert math.isnan(row["90"])  # no setting reaches 90%: pb analyze's None
    assert (row["80"], row["70"], row["60"]) == (2.0, 2.0, 8.0)  # 68% at 8 tokens/step counts at 60%


def test_adaptive_tokens_per_step_is_the_per_sample_mean_of_max_tokens_over_nfe():
    rows = [result_row("confidence-threshold", {"threshold": 0.5}, task="x/a", sample_id="s1", score=1.0, nfe=4, num_tokens=32),
            result_row("confidence-threshold", {"threshold": 0.5}, task="x/a", sample_id="s2", score=1.0, nfe=16, num_tokens=32)]
    points = max_rule_points(pd.DataFrame(rows))
    assert points["tps"].iloc[0] == pytest.approx((32 / 4 + 32 / 16) / 2)  # 5.0, not the ratio of sums 64 / 20 = 3.2
    site = site_values(pd.DataFrame(rows), [90])["confidence-threshold"][0]
    assert site == pytest.approx(3.2)


def test_top_k_tokens_per_step_is_exactly_k_and_tasks_weigh_the_same():
    rows = []
    for task, n, correct in (("x/a", 2, 2), ("x/b", 4, 1)):  # task a 100%, task b 25%: average 62.5
        for i in range(n):
            # nfe that disagrees with k: the max rule still counts k
            rows.append(result_row("confidence-topk", {"k": 4}, task=task, sample_id=f"{task}{i}",
                                   score=1.0 if i < correct else 0.0, nfe=7, num_tokens=32))
    points = max_rule_points(pd.DataFrame(rows))
    assert points["tps"].iloc[0] == 4.0
    assert points["accuracy"].iloc[0] == pytest.approx(62.5)


def test_pooled_takes_the_best_setting_of_any_strategy():
    frame = synthetic_frame(seed=1, samples=6)
    frame = frame[frame["params"].map(lambda p: "block_length" not in p)]
    per_strategy = max_rule_table(frame, [70])
    pooled = max_rule_table(frame, [70], pooled=True)
    assert list(pooled["kind"]) == ["pooled"] and pooled["strategy"].iloc[0] == "all strategies (pooled)"
    assert pooled["70"].iloc[0] == pytest.approx(per_strategy["70"].max())
    points = max_rule_points(frame)
    assert pooled["70"].iloc[0] == pytest.approx(points[points["accuracy"] >= 70]["tps"].max())


def test_pb_max_and_rule_names():
    assert pb_max([(1, 95), (2, 70), (8, 91)], 90) == 8
    assert pb_max([(1, 85)], 90) is None
    assert check_rule("site") == "site" and check_rule("max") == "max"
    with pytest.raises(PBRuleError, match="site, max"):
        check_rule("maximum")


def test_generation_length_is_the_tasks_max_new_tokens_else_num_tokens():
    from parallelbench.tasks import get_task

    frame = pd.DataFrame([result_row(task="waiting_line/copy", num_tokens=7), result_row(task="nowhere/x", num_tokens=9)])
    assert list(generation_lengths(frame)) == [float(get_task("waiting_line/copy").max_new_tokens), 9.0]


@pytest.fixture()
def recovery_db(tmp_path):
    path = tmp_path / "r.db"
    with ResultsStore(path) as store:
        store.write(recovery_grid().to_dict("records"))
    return path


def test_leaderboard_cli_both_rules(recovery_db):
    runner = CliRunner()
    site = json.loads(runner.invoke(app, ["leaderboard", "--db", str(recovery_db), "--json"]).output)
    best = json.loads(runner.invoke(app, ["leaderboard", "--db", str(recovery_db), "--json", "--pb-rule", "max"]).output)
    assert site["confidence-threshold"]["60"] == pytest.approx(3.25)
    assert best["confidence-threshold"] == {"90": None, "80": 2.0, "70": 2.0, "60": 8.0}
    assert best["all strategies (pooled)"] == best["confidence-threshold"] and "all strategies (pooled)" not in site
    shown = runner.invoke(app, ["leaderboard", "--db", str(recovery_db), "--pb-rule", "max"], env={"COLUMNS": "100"})
    assert shown.exit_code == 0, shown.output
    assert "PB rule: max rule" in shown.output and "pb analyze" in shown.output
    assert "all strategies (pooled)" in shown.output and "PB60 8.00" in shown.output


@pytest.mark.parametrize("command", ["leaderboard", "report"])
def test_unknown_pb_rule_is_one_line_naming_the_valid_ones(recovery_db, tmp_path, command):
    args = [command, "--db", str(recovery_db), "--pb-rule", "best"] + (["--out", str(tmp_path / "o")] if command == "report" else [])
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "site, max" in lines[0] and "'best'" in lines[0] and "Traceback" not in result.output


def test_report_names_its_rule_and_the_csv_carries_it(recovery_db, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["report", "--db", str(recovery_db), "--out", str(out), "--pb-rule", "max"])
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "PB rule: max</b>" in page and "pb analyze" in page
    board = pd.read_csv(out / "leaderboard.csv")
    assert set(board["pb_rule"]) == {"max"}
    strategy = board[board["strategy"] == "confidence-threshold"].iloc[0]
    assert math.isnan(strategy["90"]) and strategy["60"] == 8.0
    assert list(board[board["kind"] == "pooled"]["strategy"]) == ["all strategies (pooled)"]
    # the default stays the site rule
    CliRunner().invoke(app, ["report", "--db", str(recovery_db), "--out", str(tmp_path / "site")])
    site = pd.read_csv(tmp_path / "site" / "leaderboard.csv")
    assert set(site["pb_rule"]) == {"site"} and site["60"].iloc[0] == pytest.approx(3.25)
    assert "PB rule: site</b>" in (tmp_path / "site" / "report.html").read_text(encoding="utf-8")


@pytest.mark.skipif(not os.environ.get("PB_AUTHORS_REPO"), reason=(
    "set PB_AUTHORS_REPO to a checkout of the authors' 2026 rewrite of ParallelBench (github.com/furiosa-ai/ParallelBench, "
    "parallelbench/analysis/pb_score.py inside) to compare with their compute_pb_scores"))
def test_max_rule_equals_the_authors_compute_pb_scores():
    import importlib.util

    spec = importlib.util.spec_from_file_location("compare_pb_rules", ROOT / "benchmarks" / "compare_pb_rules.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    compute = bench.load_authors(Path(os.environ["PB_AUTHORS_REPO"]))
    for frame in (synthetic_frame(seed=3, samples=8), recovery_grid()):
        assert bench.compare("test grid", frame, compute) <= 1e-9
