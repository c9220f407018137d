"""Fair comparisons (issue 25 item 4): filters on `leaderboard` / `report`, ranking only on the
tasks and samples every entry decoded, and the ranking column and its direction named."""

import pandas as pd
import pytest
from typer.testing import CliRunner

from parallelbench.analysis.board import build_boards
from parallelbench.analysis.common_set import comparable_groups
from parallelbench.analysis.selection import SelectionError, select
from parallelbench.analysis.synthetic import synthetic_frame
from parallelbench.cli import app
from parallelbench.runner.store import ResultsStore

TWO_TASKS = ["waiting_line/copy", "waiting_line/shuffle"]


def uneven_frame() -> pd.DataFrame:
    """`ideal` on 2 tasks (6 samples), `tiny` on 4 tasks (8 samples), only top-k without blocks."""
    tiny = synthetic_frame(seed=0, samples=8, model="tiny")
    ideal = synthetic_frame(seed=1, samples=6, model="ideal")
    ideal = ideal[ideal["task"].isin(TWO_TASKS)]
    frame = pd.concat([tiny, ideal], ignore_index=True)
    return frame[~frame["params"].str.contains("block_length")].reset_index(drop=True)


def write_db(path, frame):
    with ResultsStore(path) as store:
        store.write(frame.to_dict("records"))
    return path


def test_common_set_keeps_only_what_every_entry_decoded():
    groups = comparable_groups(uneven_frame())
    assert len(groups) == 1
    group = groups[0]
    assert set(group.frame["task"]) == set(TWO_TASKS)
    assert set(group.frame["sample_id"]) == {f"{t.split('/')[1]}-{i}" for t in TWO_TASKS for i in range(6)}
    assert "ranked on the common set, 2 of 4 tasks and 12 of 32 samples" in group.note
    assert "text_writing/w2s_easy" in group.note  # what was left out
    # same tasks and samples everywhere: nothing to say
    assert comparable_groups(synthetic_frame(samples=3))[0].note is None


def test_ranking_on_the_common_set_equals_ranking_the_restricted_frame():
    frame = uneven_frame()
    board = build_boards(frame, [80, 60], intervals=False)[0]
    restricted = frame[frame["task"].isin(TWO_TASKS) & (frame["sample_id"].str[-1].astype(int) < 6)]
    expected = build_boards(restricted, [80, 60], intervals=False)[0]
    assert board.note and expected.note is None
    pd.testing.assert_frame_equal(board.table, expected.table)
    # without the common set, tiny would be ranked on its 4 tasks: a different table
    tiny_all = build_boards(frame[frame["model"] == "tiny"], [80, 60], intervals=False)[0].table
    tiny_common = board.table[board.table["strategy"].str.startswith("tiny/")]
    on_all = {s: (a, b) for s, a, b in zip(tiny_all["strategy"], tiny_all["80"], tiny_all["60"])}
    on_common = {s[5:]: (a, b) for s, a, b in zip(tiny_common["strategy"], tiny_common["80"], tiny_common["60"])}
    assert set(on_all) == set(on_common) and on_all != on_common


def test_entries_sharing_nothing_are_ranked_in_separate_groups():
    a = synthetic_frame(seed=0, samples=4, model="a")
    b = synthetic_frame(seed=1, samples=4, model="b")
    frame = pd.concat([a[a["task"].isin(TWO_TASKS)], b[~b["task"].isin(TWO_TASKS)]], ignore_index=True)
    groups = comparable_groups(frame)
    assert len(groups) == 2
    assert [g.note.split(":")[0] for g in groups] == ["group 1 of 2", "group 2 of 2"]
    assert {frozenset(g.frame["model"]) for g in groups} == {frozenset({"a"}), frozenset({"b"})}


def test_cli_says_so_in_one_line_and_names_the_ranking_column(tmp_path):
    db = write_db(tmp_path / "u.db", uneven_frame())
    result = CliRunner().invoke(app, ["leaderboard", "--db", str(db)], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert sum("ranked on the common set" in line for line in lines) == 1
    assert any(line.startswith("ranked by PB90") and "higher is better" in line for line in lines)
    page_out = tmp_path / "out"
    assert CliRunner().invoke(app, ["report", "--db", str(db), "--out", str(page_out)]).exit_code == 0
    page = (page_out / "report.html").read_text(encoding="utf-8")
    assert "ranked on the common set, 2 of 4 tasks" in page
    assert "ranked by PB90" in page and "higher is better" in page


def test_filters_narrow_leaderboard_and_report(tmp_path):
    db = write_db(tmp_path / "u.db", uneven_frame())
    runner = CliRunner()
    only = runner.invoke(app, ["leaderboard", "--db", str(db), "--json", "--model", "tiny", "--strategy", "random,l2r",
                               "--tasks", "waiting_line"])
    assert only.exit_code == 0, only.output
    import json

    assert set(json.loads(only.output)) == {"random", "l2r"}  # one model: no model prefix
    out = tmp_path / "out"
    report = runner.invoke(app, ["report", "--db", str(db), "--out", str(out), "--model", "ideal", "--strategy",
                                 "confidence-topk"])
    assert report.exit_code == 0, report.output
    board = pd.read_csv(out / "leaderboard.csv")
    assert list(board["strategy"]) == ["confidence-topk"]
    assert "--model ideal" in (out / "report.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("flag,value,listed", [
    ("--model", "tiny2", "ideal, tiny"),
    ("--tasks", "waiting_line/sortt", "waiting_line/copy"),
    ("--strategy", "confidence-topkk", "confidence-topk"),
])
@pytest.mark.parametrize("command", ["leaderboard", "report"])
def test_unknown_filter_values_are_one_line_naming_what_is_there(tmp_path, flag, value, listed, command):
    db = write_db(tmp_path / "u.db", uneven_frame())
    args = [command, "--db", str(db), flag, value] + (["--out", str(tmp_path / "o")] if command == "report" else [])
    result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert value in lines[0] and listed in lines[0] and "Traceback" not in result.output


def test_select_by_family_category_and_config_label():
    frame = uneven_frame()
    assert set(select(frame, tasks="waiting_line")["task"]) == set(TWO_TASKS)
    assert set(select(frame, strategies="random[k=2]")["config"]) == {"random[k=2]"}
    with pytest.raises(SelectionError, match="not in one row"):
        select(frame, models="ideal", tasks="text_writing/w2s_easy")
