"""Answer tokens per step beside tokens per step (issue 35 item 6): stored with every row, computed
for rows of older databases, shown by `results`, ranked on by `leaderboard --tps answer`, and in
the report's CSVs."""

from __future__ import annotations

import json
import sqlite3

import pandas as pd
import pytest
from typer.testing import CliRunner

from parallelbench.analysis.board import build_boards
from parallelbench.analysis.synthetic import result_row
from parallelbench.cli import app
from parallelbench.runner.store import ResultsStore
from parallelbench.tps import answer_columns, answer_tokens, measured


def test_answer_tokens_are_the_committed_entries_of_the_stored_order():
    assert answer_tokens("[3, 0, 1, 1]") == 4
    assert answer_tokens([-1, -1, 2, 0]) == 2  # template positions are not committed
    assert answer_tokens("[]", "diffusion", 32) == 0  # EOS first: an empty answer
    assert answer_tokens("[]", "api", 17) == 17  # no canvas: the API counted the text's tokens
    assert answer_tokens("[]", "diffusion", None) is None  # a failed row
    assert answer_tokens(None) is None and answer_tokens("not json") is None
    assert answer_columns({"order": "[0, 0, 1]", "nfe": 4, "num_tokens": 8}) == {"answer_tokens": 3, "answer_tps": 0.75}


def _rows(order_of, nfe: int = 8, num_tokens: int = 32, **fields):
    return [result_row("confidence-threshold", {"threshold": t}, task="waiting_line/copy", sample_id=f"s{i}",
                       order=json.dumps(order_of(t, i)), nfe=nfe, num_tokens=num_tokens, score=1.0, **fields)
            for t in (0.9, 0.5) for i in range(4)]


def test_the_store_writes_them_and_fills_them_in_for_older_files(tmp_path):
    path = tmp_path / "r.db"
    rows = _rows(lambda t, i: [0] * (4 + i))
    with ResultsStore(path) as store:
        store.write(rows)
        frame = store.frame()
    assert frame["answer_tokens"].tolist() == [4, 5, 6, 7] * 2
    assert frame["answer_tps"].tolist() == pytest.approx([n / 8 for n in (4, 5, 6, 7)] * 2)
    # a database written before these columns: read-only, they are computed; opened by `run`, added and filled
    with sqlite3.connect(path) as conn:
        conn.execute("ALTER TABLE results DROP COLUMN answer_tokens")
        conn.execute("ALTER TABLE results DROP COLUMN answer_tps")
    with ResultsStore(path, create=False) as store:
        assert store.frame()["answer_tokens"].tolist() == [4, 5, 6, 7] * 2
    with ResultsStore(path) as store:
        pass
    with sqlite3.connect(path) as conn:
        stored = [r[0] for r in conn.execute("SELECT answer_tokens FROM results ORDER BY id")]
    assert stored == [4, 5, 6, 7] * 2


def _two_strategies() -> pd.DataFrame:
    """Threshold: 32 tokens per step on the window but a 4-token answer in 4 steps (1 per step);
    top-k k=2: 2 per step on both, the answer being the whole canvas."""
    rows = []
    for i in range(8):
        rows.append(result_row("confidence-threshold", {"threshold": 0.9}, task="t", sample_id=f"s{i}", score=1.0,
                               nfe=4, num_tokens=128, order=json.dumps([0, 1, 2, 3])))
        rows.append(result_row("confidence-topk", {"k": 2}, task="t", sample_id=f"s{i}", score=1.0,
                               nfe=16, num_tokens=32, order=json.dumps([j // 2 for j in range(32)])))
    return pd.DataFrame(rows)


@pytest.mark.parametrize("rule", ["site", "max"])
def test_pb_rules_computed_on_either_measure(rule):
    frame = _two_strategies()
    window = build_boards(frame, [90.0], rule, intervals=False)[0].table.set_index("strategy")
    answer = build_boards(frame, [90.0], rule, intervals=False, tps="answer")[0].table.set_index("strategy")
    assert window.loc["confidence-threshold", "90"] == 32.0
    assert answer.loc["confidence-threshold", "90"] == 1.0
    assert window.loc["confidence-topk", "90"] == answer.loc["confidence-topk", "90"] == 2.0
    assert list(window.index) == ["confidence-threshold", "confidence-topk"]
    assert list(answer.index) == ["confidence-topk", "confidence-threshold"]  # ranked on the answer
    # each board carries the ranking headline on the other measure
    assert window.loc["confidence-threshold", "90_answer"] == 1.0
    assert answer.loc["confidence-threshold", "90_window"] == 32.0


def test_measured_frame_swaps_in_the_answer_counts():
    frame = measured(_two_strategies(), "answer")
    assert set(frame["num_tokens"]) == {4.0, 32.0} and set(frame["tps"]) == {1.0, 2.0}


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("answer") / "a.db"
    with ResultsStore(path) as store:
        store.write(_two_strategies().to_dict("records"))
    return path


def test_results_cells_show_both(db):
    out = CliRunner().invoke(app, ["results", "--db", str(db)], env={"COLUMNS": "200"}).output
    assert "· 32.0 (1.0)" in out and "· 2.0 (2.0)" in out
    assert "answer tokens per step" in " ".join(out.split())


def test_leaderboard_column_and_tps_flag(db):
    runner = CliRunner()
    out = runner.invoke(app, ["leaderboard", "--db", str(db)], env={"COLUMNS": "200"}).output
    assert "answer ≥90%" in out and "tokens per step (--tps window)" in out
    window = json.loads(runner.invoke(app, ["leaderboard", "--db", str(db), "--json"]).output)
    answer = json.loads(runner.invoke(app, ["leaderboard", "--db", str(db), "--json", "--tps", "answer"]).output)
    assert window["confidence-threshold"]["90"] == 32.0 and answer["confidence-threshold"]["90"] == 1.0
    ranked = runner.invoke(app, ["leaderboard", "--db", str(db), "--tps", "answer"], env={"COLUMNS": "200"}).output
    assert "window ≥90%" in ranked and "answer tokens per step sustained" in ranked
    assert ranked.splitlines()[0].startswith(f"Leaderboard ({db}): answer tokens per step sustained"), ranked  # the title too
    bad = runner.invoke(app, ["leaderboard", "--db", str(db), "--tps", "tokens"])
    assert bad.exit_code == 2 and "use one of: window, answer" in " ".join(bad.output.split())


def test_report_and_exports_carry_both(db, tmp_path):
    runner = CliRunner()
    assert runner.invoke(app, ["report", "--db", str(db), "--out", str(tmp_path / "out"), "--tps", "answer"]).exit_code == 0
    board = pd.read_csv(tmp_path / "out" / "leaderboard.csv")
    assert set(board["tps"]) == {"answer"} and "90_window" in board
    curve = pd.read_csv(tmp_path / "out" / "curves" / "m" / "confidence-threshold.csv")
    assert curve["answer_tps"].tolist() == pytest.approx([1.0, 1.0])  # task t and the avg row
    page = (tmp_path / "out" / "report.html").read_text()
    assert "answer tokens per step" in page and "window PB90" in page
    exported = tmp_path / "rows.csv"
    assert runner.invoke(app, ["results", "export", "--db", str(db), "--format", "csv", "--out", str(exported)]).exit_code == 0
    rows = pd.read_csv(exported)
    assert {"answer_tokens", "answer_tps"} <= set(rows.columns)
