"""The HTML report: sections, offline assets, figures, curve export, empty and partial data."""

import re

import pandas as pd
import pytest
from typer.testing import CliRunner

from parallelbench.analysis.leaderboard import rank, read_curves_dir
from parallelbench.analysis.report import REPORT_THRESHOLDS, build_report, write_report
from parallelbench.analysis.synthetic import result_row, synthetic_frame
from parallelbench.cli import app


@pytest.fixture(scope="module")
def full_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    return build_report(synthetic_frame(samples=4, editing=True), out, source="synthetic"), out


def test_report_has_every_section_and_inlines_plotly(full_report):
    path, _ = full_report
    page = path.read_text(encoding="utf-8")
    for section in ("leaderboard-section", "tradeoff", "per-task", "task-map", "repair", "failures", "files"):
        assert f'id="{section}"' in page
    external = re.findall(r"<(?:script|link|img)\b[^>]*\b(?:src|href)=[\"']?(?:https?:)?//", page)
    assert external == []  # offline: plotly.js and CSS are inline, nothing is fetched
    assert len(re.findall(r"<script\b[^>]*>", page)) >= 4
    assert "Plotly.newPlot" in page or "Plotly.react" in page
    # random, confidence-topk, l2r, threshold, 4 semi-AR block lengths, edit-threshold
    assert page.count('class="lb-row"') == 9
    unescaped = page.replace("\\u002f", "/")  # plotly escapes "/" inside its JSON
    assert "tokens per step (tokens / forward pass)" in unescaped and "accuracy (%)" in page
    assert "oracle(confidence-threshold)" in page
    assert 'class="missing"' not in page  # the synthetic frame fills every section


def test_report_writes_png_svg_and_curves_that_rank_the_same(full_report):
    _, out = full_report
    names = {p.name for p in (out / "figures").iterdir()}
    for stem in ("tradeoff_synthetic-dllm", "tasks_synthetic-dllm", "taskmap", "repair_synthetic-dllm"):
        assert {f"{stem}.png", f"{stem}.svg"} <= names
    assert (out / "figures" / "taskmap.png").read_bytes()[:4] == b"\x89PNG"
    from_csv = rank(read_curves_dir(out / "curves" / "synthetic-dllm"), REPORT_THRESHOLDS)
    saved = pd.read_csv(out / "leaderboard.csv")
    merged = from_csv.merge(saved, on="strategy", suffixes=("_csv", "_db"))
    assert len(merged) == len(saved) == 9
    for t in ("90", "80", "70", "60"):
        assert merged[f"{t}_csv"].to_numpy() == pytest.approx(merged[f"{t}_db"].to_numpy())


def test_empty_frame_report_says_what_each_section_needs(tmp_path):
    path = build_report(pd.DataFrame(), tmp_path)
    page = path.read_text(encoding="utf-8")
    assert page.count('class="missing"') >= 5
    assert "confidence-threshold" in page or "parallelbench run" in page
    assert not (tmp_path / "figures").exists() or not any((tmp_path / "figures").iterdir())


def test_partial_data_only_threshold_runs(tmp_path):
    rows = [
        result_row("confidence-threshold", {"threshold": t}, task=task, sample_id=f"s{i}", score=float(i % 2 or t > 0.8), nfe=n)
        for task in ("a", "b") for i in range(3) for t, n in ((0.9, 12), (0.6, 6))
    ]
    page = build_report(pd.DataFrame(rows), tmp_path, static_figures=False).read_text(encoding="utf-8")
    assert page.count('class="lb-row"') == 1
    task_map_html = page[page.index('id="task-map"'): page.index('id="failures"')]
    assert "Needs top-k runs" in task_map_html
    failures_html = page[page.index('id="failures"'): page.index('id="files"')]
    assert "Needs one-by-one runs" in failures_html


def test_write_report_from_a_results_database(tmp_path):
    from parallelbench.runner.store import ResultsStore

    frame = synthetic_frame(samples=2)
    with ResultsStore(tmp_path / "r.db") as store:
        store.write(frame.to_dict("records"))
    path = write_report(tmp_path / "r.db", tmp_path / "out", static_figures=False)
    assert path == tmp_path / "out" / "report.html"
    page = path.read_text(encoding="utf-8")
    assert len(re.findall(r'class="lb-row"', page)) == 8


def test_report_cli_missing_database_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(app, ["report", "--db", str(tmp_path / "missing.db"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "no results database at" in result.output and "missing.db" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("command", ["report", "leaderboard"])
def test_a_file_that_is_not_a_database_is_a_one_line_error(tmp_path, command):
    """A CSV export passed as --db used to end in sqlite3's traceback; it must not be touched either."""
    bogus = tmp_path / "results.csv"
    bogus.write_text("model,task,score\nideal,waiting_line/copy,1\n", encoding="utf-8")
    args = [command, "--db", str(bogus)] + (["--out", str(tmp_path / "o")] if command == "report" else [])
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "is not a results database" in result.output and "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert bogus.read_text(encoding="utf-8").startswith("model,task,score")


def test_help_texts_carry_an_example():
    runner = CliRunner()
    for command in ("leaderboard", "report"):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0 and "Example: parallelbench " + command in result.output


def test_empty_database_gives_a_report_not_an_error(tmp_path):
    from parallelbench.runner.store import ResultsStore

    ResultsStore(tmp_path / "empty.db").close()
    page = write_report(tmp_path / "empty.db", tmp_path / "out").read_text(encoding="utf-8")
    assert page.count('class="missing"') >= 5 and 'class="lb-row"' not in page


def test_several_models_get_their_own_plots_and_prefixed_rows(tmp_path):
    frame = pd.concat([synthetic_frame(samples=2, model="alpha"), synthetic_frame(samples=2, model="beta")])
    page = build_report(frame, tmp_path, static_figures=False).read_text(encoding="utf-8")
    assert page.count('class="lb-row"') == 16
    assert 'data-strategy="alpha/random"' in page and 'data-strategy="beta/random"' in page
    assert 'id="tradeoff-alpha"' in page and 'id="tradeoff-beta"' in page


def test_autoregressive_rows_appear_beside_a_dllm(tmp_path):
    """A causal LM's rows (strategy "autoregressive", one token per call) get a leaderboard row."""
    ar = [
        result_row("autoregressive", {}, strategy_kind="autoregressive", model="hf:smollm2", model_kind="autoregressive",
                   task=task, sample_id=f"{task}/{i}", score=float(i % 2 == 0), nfe=10, num_tokens=10)
        for task in ("waiting_line/copy", "waiting_line/shuffle") for i in range(4)
    ]
    frame = pd.concat([synthetic_frame(samples=2), pd.DataFrame(ar)], ignore_index=True)
    page = build_report(frame, tmp_path, static_figures=False).read_text(encoding="utf-8")
    assert "hf:smollm2" in page
    board = pd.read_csv(tmp_path / "leaderboard.csv")
    row = board[board["strategy"].str.contains("autoregressive")]
    assert len(row) == 1
    assert row.iloc[0]["70"] == 0.0  # 50% accuracy at 1 token per call: below every bar


def test_report_shows_pb_columns_and_aup(full_report):
    _, out = full_report
    page = (out / "report.html").read_text(encoding="utf-8")
    for name in ("PB90", "PB80", "PB70", "PB60"):
        assert f">{name}</th>" in page
    assert 'id="aup"' in page
    board = pd.read_csv(out / "leaderboard.csv")
    aups = pd.read_csv(out / "aup.csv")
    task_cols = [c for c in aups.columns if c.startswith("AUP ")]
    assert task_cols and (aups["AUP"] > 0).all()
    assert aups["AUP"].to_numpy() == pytest.approx(aups[task_cols].mean(axis=1).to_numpy())
    merged = board.merge(aups[["strategy", "AUP"]], on="strategy", suffixes=("", "_aup"))
    assert len(merged) == len(board) and merged["AUP"].to_numpy() == pytest.approx(merged["AUP_aup"].to_numpy())


def test_structured_tasks_reach_the_task_map_and_the_per_task_curves(tmp_path):
    """Issue 34: a run of the structured family (the ideal model, any-order top-k and semi-AR
    blocks at k = 2) gives each task its point on the task map, its panel and its curve rows."""
    from parallelbench.analysis.curves import curves
    from parallelbench.analysis.taskmap import task_map
    from parallelbench.runner.store import ResultsStore

    runner, db = CliRunner(), str(tmp_path / "s.db")
    base = ["run", "--model", "ideal", "--tasks", "structured", "--strategy", "random", "--limit", "6",
            "--db", db, "--no-report", "--no-progress"]
    for extra in (["--k", "1,2,8"], ["--k", "2", "--block-length", "8,32"]):
        res = runner.invoke(app, base + extra)
        assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["report", "--db", db, "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    with ResultsStore(db, create=False) as store:
        frame = store.frame()
    tmap = task_map(frame).set_index("task")
    ids = ["structured/json_any_order", "structured/json_fields", "structured/tool_call"]
    assert sorted(tmap.index) == ids and set(tmap["category"]) == {"structured"}
    assert tmap[["parallelizability", "order_slope"]].notna().all().all()
    # the exact model: records and tool calls (C = 0) at 100% at every k, any-order records fall with k
    assert tmap.loc["structured/json_fields", "accuracy"] == tmap.loc["structured/tool_call", "accuracy"] == 100.0
    assert tmap.loc["structured/json_any_order", "accuracy"] < 100.0
    per_task, _ = curves(frame)
    assert set(per_task["task"]) == set(ids)
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8").replace("\\u002f", "/")
    assert all(t in page for t in ids)
    assert {"taskmap.png", "tasks_ideal.png"} <= {p.name for p in (tmp_path / "out" / "figures").iterdir()}
