"""Leaderboard rule on hand-computed curves, external CSV curves and the CLI."""

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from parallelbench.analysis.leaderboard import merge_equal_tps, parse_thresholds, rank, read_curves_dir, sustained_tps
from parallelbench.cli import app

FALLING = [(1.0, 90.0), (2.0, 85.0), (3.0, 70.0), (4.0, 60.0)]


def test_adaptive_interpolates_between_last_above_and_first_below():
    # 2 + (85 - 80) / (85 - 70) * (3 - 2) = 2.3333; 2 + 10/15 = 2.6667; at 70 the walk stops before (4, 60): 3 + 0
    assert sustained_tps(FALLING, 80, "adaptive") == pytest.approx(2 + 5 / 15)
    assert sustained_tps(FALLING, 75, "adaptive") == pytest.approx(2 + 10 / 15)
    assert sustained_tps(FALLING, 70, "adaptive") == pytest.approx(3.0)


def test_topk_takes_last_point_above_without_interpolation():
    assert sustained_tps(FALLING, 80, "topk") == 2.0
    assert sustained_tps(FALLING, 75, "topk") == 2.0
    assert sustained_tps(FALLING, 70, "topk") == 3.0


def test_equal_tps_count_once_with_their_best_accuracy():
    points = [(1.0, 90.0), (2.0, 70.0), (2.0, 85.0), (3.0, 60.0)]
    assert merge_equal_tps(points) == [(1.0, 90.0), (2.0, 85.0), (3.0, 60.0)]
    # merged (2, 85) then (3, 60): 2 + 5/25 = 2.2 (a walk that kept (2, 70) would stop at 1.5)
    assert sustained_tps(points, 80, "adaptive") == pytest.approx(2.2)
    assert sustained_tps(points, 80, "topk") == 2.0


def test_zero_when_first_point_is_below():
    points = [(1.0, 79.0), (2.0, 95.0)]
    assert sustained_tps(points, 80, "adaptive") == 0.0
    assert sustained_tps(points, 80, "topk") == 0.0
    assert sustained_tps([], 80, "adaptive") == 0.0


def test_highest_tps_when_never_below():
    points = [(4.0, 85.0), (1.0, 95.0), (2.0, 90.0)]  # unsorted on purpose
    assert sustained_tps(points, 80, "adaptive") == 4.0
    assert sustained_tps(points, 80, "topk") == 4.0


def test_walk_stops_at_first_dip_even_if_accuracy_recovers():
    points = [(1.0, 90.0), (2.0, 70.0), (3.0, 95.0)]
    assert sustained_tps(points, 80, "topk") == 1.0
    assert sustained_tps(points, 80, "adaptive") == pytest.approx(1.5)


def test_point_exactly_at_threshold_counts_as_above():
    assert sustained_tps([(1.0, 90.0), (2.0, 80.0), (3.0, 50.0)], 80, "topk") == 2.0


def test_rank_orders_by_first_threshold_then_later_ones():
    table = rank(
        {
            "a": ("topk", [(1.0, 90.0), (2.0, 50.0)]),
            "b": ("adaptive", FALLING),
            "c": ("topk", [(1.0, 90.0), (2.0, 79.0), (3.0, 77.0)]),
        },
        [80, 75],
    )
    assert list(table["strategy"]) == ["b", "c", "a"]
    assert table.loc[1, "75"] == 3.0
    assert list(table["points"]) == [4, 3, 2]


def test_parse_thresholds_errors_name_the_bad_value():
    assert parse_thresholds("80, 75,70") == [80.0, 75.0, 70.0]
    with pytest.raises(ValueError, match="'eighty'"):
        parse_thresholds("eighty,70")
    with pytest.raises(ValueError, match="outside"):
        parse_thresholds("180")


def _write_curves(folder):
    folder.mkdir()
    pd.DataFrame(
        {"task": ["copy", "copy", "avg", "avg", "avg", "avg"], "tps": [1, 2, 1, 2, 3, 4], "accuracy": [100, 100, 90, 85, 70, 60]}
    ).to_csv(folder / "confidence-threshold.csv", index=False)
    pd.DataFrame({"task": ["avg", "avg", "avg", "avg"], "tps": [1, 2, 3, 4], "accuracy": [90, 85, 70, 60]}).to_csv(folder / "random.csv", index=False)


def test_read_curves_dir_uses_avg_rows_and_infers_kind(tmp_path):
    _write_curves(tmp_path / "curves")
    curves = read_curves_dir(tmp_path / "curves")
    assert curves["random"] == ("topk", FALLING)
    assert curves["confidence-threshold"][0] == "adaptive"
    assert curves["confidence-threshold"][1] == FALLING


def test_read_curves_dir_rejects_missing_columns(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "x.csv").write_text("task,speed\navg,1\n")
    with pytest.raises(ValueError, match="x.csv lacks column"):
        read_curves_dir(tmp_path / "c")


def test_cli_json_on_external_curves(tmp_path):
    _write_curves(tmp_path / "curves")
    default = CliRunner().invoke(app, ["leaderboard", "--curves", str(tmp_path / "curves"), "--json"])
    assert default.exit_code == 0, default.output
    assert list(json.loads(default.output)["random"]) == ["90", "80", "70", "60"]  # PB90..PB60 by default
    result = CliRunner().invoke(app, ["leaderboard", "--curves", str(tmp_path / "curves"), "--json", "--thresholds", "80,75,70"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert list(data) == ["confidence-threshold", "random"]
    assert data["confidence-threshold"]["80"] == pytest.approx(2 + 5 / 15)
    assert data["random"] == {"80": 2.0, "75": 2.0, "70": 3.0}


def test_cli_table_and_custom_thresholds(tmp_path):
    _write_curves(tmp_path / "curves")
    result = CliRunner().invoke(app, ["leaderboard", "--curves", str(tmp_path / "curves"), "--thresholds", "88"])
    assert result.exit_code == 0, result.output
    assert "≥88%" in result.output and "random" in result.output


def test_cli_errors_are_one_line_without_traceback(tmp_path):
    runner = CliRunner()
    missing_db = runner.invoke(app, ["leaderboard", "--db", str(tmp_path / "none.db")])
    assert missing_db.exit_code == 2
    assert "no results database at" in missing_db.output and "Traceback" not in missing_db.output
    bad = runner.invoke(app, ["leaderboard", "--curves", str(tmp_path), "--thresholds", "x"])
    assert bad.exit_code == 2 and "not a number" in bad.output
    empty = runner.invoke(app, ["leaderboard", "--curves", str(tmp_path)])
    assert empty.exit_code == 2 and "no *.csv" in empty.output


def test_database_curves_are_prefixed_by_model_when_several():
    from parallelbench.analysis.curves import curves
    from parallelbench.analysis.leaderboard import curves_from_points
    from parallelbench.analysis.synthetic import result_row

    rows = [result_row("random", {"k": k}, model=m, score=s, nfe=16 // k) for m in ("a", "b") for k, s in ((1, 1.0), (2, 0.0))]
    labelled = curves_from_points(curves(pd.DataFrame(rows))[1])
    assert labelled == {"a/random": ("topk", [(1.0, 100.0), (2.0, 0.0)]), "b/random": ("topk", [(1.0, 100.0), (2.0, 0.0)])}
    one_model = curves_from_points(curves(pd.DataFrame(rows[:2]))[1])
    assert list(one_model) == ["random"]


def test_cli_shows_aup_per_task_and_average_beside_the_headline(tmp_path):
    from parallelbench.analysis.aup import aup

    _write_curves(tmp_path / "curves")
    result = CliRunner().invoke(app, ["leaderboard", "--curves", str(tmp_path / "curves"), "--thresholds", "90,80,70,60"])
    assert result.exit_code == 0, result.output
    for t in ("≥90%", "≥80%", "≥70%", "≥60%", "AUP"):
        assert t in result.output
    # confidence-threshold has per-task rows on "copy": (1, 100), (2, 100) -> y_max 100, AUP = 100 + 100 = 200.
    assert aup([(1, 100), (2, 100)], 100) == pytest.approx(200.0)
    assert "200.0" in result.output and "copy" in result.output
