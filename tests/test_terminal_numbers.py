"""Terminal tables never cut a number (issue 35 item 3), and name configs in full when the width
allows (item 12).

Every command that prints a Rich table is rendered at 60, 80 and 200 columns and piped (no
COLUMNS: Rich lays out for 80). A number is whole when no `…` appears, every decimal number of
the narrow output is one the 200-column output prints too (a number folded over two lines or
cut to `2071…` is not), and every table line fits the width. Where a table cannot fit, it drops
columns from the right (with a line naming them) or stacks a cell's parts, never cuts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from parallelbench.analysis.synthetic import synthetic_frame
from parallelbench.cli import app
from parallelbench.runner.store import ResultsStore

from test_terminal_width import long_named_frame

WIDTHS = ["60", "80", "200", "piped"]
DECIMAL = re.compile(r"\d+\.\d+")
BOX = "┏┃┡│├└━┗┠┨╇┩┣"
CUSTOM = "lab_experiments.strategies.adaptive:EntropyBoundedUnmasking"


def _env(width: str) -> dict:
    return {"COLUMNS": None, "LINES": None} if width == "piped" else {"COLUMNS": width}


def render(args: list[str], width: str) -> str:
    result = CliRunner().invoke(app, args, env=_env(width))
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result.output


def assert_whole(narrow: str, wide: str, width: str) -> None:
    assert "…" not in narrow, narrow
    cut = set(DECIMAL.findall(narrow)) - set(DECIMAL.findall(wide))
    assert not cut, f"numbers that the wide table does not print (cut or folded): {sorted(cut)[:10]}\n{narrow}"
    limit = 80 if width == "piped" else int(width)
    for line in narrow.splitlines():
        if line[:1] in BOX or line[:2].strip() in ("─", "━"):
            assert len(line) <= limit, line


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    """Long model and strategy names, two code versions of the custom strategy, and one scorer
    that failed on some rows: every table's hard case at once."""
    path = tmp_path_factory.mktemp("numbers") / "numbers.db"
    frame = long_named_frame()
    frame["versions"] = json.dumps({"code": {"strategy": "a" * 16}, "data": "d" * 12, "model": {"weights": "e" * 16}})
    frame["provenance"] = "old"
    newer = frame[frame["strategy"] == CUSTOM].copy()
    newer["versions"] = json.dumps({"code": {"strategy": "b" * 16}, "data": "d" * 12, "model": {"weights": "e" * 16}})
    newer["provenance"] = "new"
    failed = frame.index[(frame["task"] == "waiting_line/copy") & (frame["strategy"] == "random")][:5]
    frame.loc[failed, "versions"] = json.dumps({"scorer": {"error": "scorer 'mine' raised ValueError: boom"}})
    editing = frame[frame["strategy"] == "confidence-threshold"].copy()  # an editing strategy, for results --repair
    editing["strategy"] = "edit-threshold"
    editing["config"] = editing["config"].str.replace("confidence-threshold", "edit-threshold", regex=False)
    editing["unmask_score"] = 1.0 - editing["score"]
    editing["edits"] = 3
    with ResultsStore(path) as store:
        store.write(pd.concat([frame, newer, editing]).to_dict("records"))
    return path


def main_job_like_frame() -> pd.DataFrame:
    """Shaped like the main job's results: 12 tasks, 11 configs (the quick sweep), 16 samples."""
    parts = []
    for seed in range(3):
        part = synthetic_frame(seed=seed, samples=16, model="tiny")
        part["task"] = part["task"] + f"-{seed}"
        part["sample_id"] = part["sample_id"] + f"-{seed}"
        parts.append(part)
    frame = pd.concat(parts, ignore_index=True)
    frame["num_tokens"] *= 4  # a 64-position canvas whose answer is the first 16: tokens per step up to 64
    frame["tps"] *= 4
    threshold = frame["strategy"] == "confidence-threshold"  # as on tiny: right at every threshold but the lowest
    low = frame["params"].str.contains('"threshold": 0.5')
    frame.loc[threshold & ~low, "score"] = 1.0
    frame.loc[threshold & low, "score"] = (frame.index[threshold & low] % 3 != 0).astype(float)
    keep = {"random[k=1]", "random[k=2]", "random[k=4]", "confidence-topk[k=1]", "confidence-topk[k=2]",
            "confidence-topk[k=4]", "confidence-threshold[threshold=0.5]", "confidence-threshold[threshold=0.7]",
            "confidence-threshold[threshold=0.9]", "random[block_length=4,k=2]", "random[block_length=16,k=2]"}
    return frame[frame["config"].isin(keep)]


@pytest.fixture(scope="module")
def main_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("mainlike") / "main.db"
    with ResultsStore(path) as store:
        store.write(main_job_like_frame().to_dict("records"))
    return path


COMMANDS = {
    "results": ["results"],
    "results --order": ["results", "--order"],
    "results --all-versions": ["results", "--all-versions"],
    "results --strategy": ["results", "--strategy", "confidence-threshold"],
    "results --repair": ["results", "--repair"],
    "leaderboard site": ["leaderboard"],
    "leaderboard max": ["leaderboard", "--pb-rule", "max"],
    "leaderboard --tps answer": ["leaderboard", "--tps", "answer"],
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_results_and_leaderboard_never_cut_a_number(db, name):
    args = [*COMMANDS[name], "--db", str(db)]
    wide = render(args, "200")
    for width in WIDTHS[:2] + WIDTHS[3:]:
        assert_whole(render(args, width), wide, width)


def test_leaderboard_rank_aup_and_intervals_whole_at_80(main_db):
    """The reported failure: `…` for `=3`, AUP cut to `2071…`, intervals to `[22.25–23.6…`."""
    args = ["leaderboard", "--db", str(main_db)]
    wide = render(args, "200")
    assert re.search(r"\d{4}\.\d", wide)  # AUP in the thousands, as on the main job
    interval = re.compile(r"\[\d+\.\d+–\d+\.\d+\]")
    for width in ("80", "piped"):
        narrow = render(args, width)
        assert_whole(narrow, wide, width)
        assert set(re.findall(r"(?<=[│ ])=\d+", narrow)) <= set(re.findall(r"(?<=[│ ])=\d+", wide))
        shown = set(interval.findall(narrow))
        assert shown and shown <= set(interval.findall(wide))


def test_narrow_leaderboard_says_what_it_dropped(db):
    narrow = render(["leaderboard", "--db", str(db)], "60")
    note = next(line for line in narrow.splitlines() if line.startswith("not shown at this width"))
    assert "AUP" in note and "COLUMNS=" in note


def test_results_names_configs_in_full_when_the_width_allows(main_db):
    """At 250 columns the main job's 11 configs are named in their headers, not C1..C11 (item 12)."""
    labels = main_job_like_frame()["config"].unique()
    wide = render(["results", "--db", str(main_db)], "250")
    assert "C1" not in wide
    assert all(f" {label} ┃" in wide for label in labels)  # each in a header
    for width in ("60", "80"):  # in the headers, or numbered with a legend: every label whole
        narrow = render(["results", "--db", str(main_db)], width)
        assert all(label in narrow for label in labels)


def test_score_tables(tmp_path):
    tasks = tmp_path / "tasks"
    assert CliRunner().invoke(app, ["tasks", "export", "--out", str(tasks), "--tasks", "waiting_line/copy,puzzle/sudoku",
                                    "--limit", "3"]).exit_code == 0
    outputs = tmp_path / "answers.jsonl"
    ids = [json.loads(line)["id"] for f in sorted(tasks.glob("**/*.jsonl")) for line in f.read_text().splitlines()]
    outputs.write_text("".join(json.dumps({"id": i, "output": "Susan Fox 12.5"}) + "\n" for i in ids))
    args = ["score", "--tasks", str(tasks), "--outputs", str(outputs)]
    wide = render(args, "200")
    for width in WIDTHS:
        assert_whole(render(args, width), wide, width)


def test_score_rescore_table(tmp_path):
    path = tmp_path / "ideal.db"
    run = CliRunner().invoke(app, ["run", "--model", "ideal", "--tasks", "waiting_line/copy", "--strategy",
                                   "confidence-topk", "--k", "2", "--limit", "2", "--db", str(path), "--no-report",
                                   "--no-progress"])
    assert run.exit_code == 0, run.output
    args = ["score", "--db", str(path), "--scoring", "paper"]
    wide = render(args, "200")
    for width in WIDTHS:
        assert_whole(render(args, width), wide, width)


@pytest.mark.parametrize("args", [["theory", "table", "--n", "3..8"], ["tasks", "list"], ["strategies"]],
                         ids=["theory table", "tasks list", "strategies"])
def test_other_tables(args):
    wide = render(args, "200")
    for width in WIDTHS:
        assert_whole(render(args, width), wide, width)


def test_tiny_accuracy_table():
    args = ["tiny", "accuracy", "--tasks", "waiting_line/insert_random,puzzle/sudoku", "--limit", "1"]
    wide = render(args, "200")
    for width in WIDTHS:
        assert_whole(render(args, width), wide, width)
