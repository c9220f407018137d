"""The SQLite results store: schema, idempotent batches, concurrent writers."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from parallelbench.runner.store import COLUMNS, KEY_COLUMNS, ResultsStore, StoreError, canonical_json


def make_row(i: int, model: str = "m", seed: int = 0, output: str = "out") -> dict:
    return {
        "model": model,
        "model_kind": "diffusion",
        "strategy": "confidence-topk",
        "strategy_kind": "topk",
        "params": canonical_json({"k": 2}),
        "config": "confidence-topk[k=2]",
        "task": "waiting_line/copy",
        "category": "waiting_line",
        "sample_id": f"waiting_line/copy/{i}",
        "seed": seed,
        "output": output,
        "score": float(i % 2),
        "scores": {"exact": float(i % 2)},
        "nfe": 16,
        "num_tokens": 32,
        "tps": 2.0,
        "tokens_per_step": [2] * 16,
        "order": [j // 2 for j in range(32)],
        "token_texts": ["a"] * 32,
        "wall_time": 0.01,
        "versions": {"parallelbench": "0.1.0"},
        "created_at": "2026-01-01T00:00:00+00:00",
    }


def test_frame_has_contract_columns_and_json_text(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "r.db") as store:
        assert store.write([make_row(0), make_row(1)]) == 2
        frame = store.frame()
    assert list(frame.columns) == list(COLUMNS)
    assert len(frame) == 2
    assert json.loads(frame.loc[0, "tokens_per_step"]) == [2] * 16
    assert json.loads(frame.loc[1, "scores"]) == {"exact": 1.0}
    assert frame["seed"].tolist() == [0, 0]


def test_writes_are_idempotent_on_the_key(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "r.db") as store:
        assert store.write([make_row(i) for i in range(5)]) == 5
        # the same keys again (even with other outputs) add nothing and change nothing
        assert store.write([make_row(i, output="other") for i in range(5)]) == 0
        assert store.write([make_row(i, seed=1) for i in range(3)]) == 3
        assert store.count() == 8
        assert set(store.frame()["output"]) == {"out"}
        done = store.done_keys("m")
    assert ("confidence-topk", canonical_json({"k": 2}), "waiting_line/copy", "waiting_line/copy/4", 0) in done
    assert len(done) == 8


def test_database_uses_wal_and_a_unique_key(tmp_path: Path) -> None:
    ResultsStore(tmp_path / "r.db").close()
    con = sqlite3.connect(str(tmp_path / "r.db"))
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    indexes = con.execute("PRAGMA index_list(results)").fetchall()
    unique_cols = []
    for idx in indexes:
        if idx[2]:  # unique
            unique_cols.append(tuple(r[2] for r in con.execute(f"PRAGMA index_info('{idx[1]}')")))
    assert tuple(KEY_COLUMNS) + ("provenance",) in unique_cols  # the key, per provenance (issue 16)


@pytest.mark.parametrize("command", [["results"], ["results", "export", "--format", "csv", "--out", "rows.csv"],
                                     ["report", "--out", "rep"], ["leaderboard"], ["score"]])
def test_every_command_names_a_missing_database_in_the_same_line(tmp_path: Path, monkeypatch, command) -> None:
    from typer.testing import CliRunner

    from parallelbench.cli import app

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, command + ["--db", "no such.db"])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == ("error: no results database at no such.db; create it with "
                                     "`parallelbench run --db 'no such.db'`, or pass --db PATH of an existing one")
    assert not (tmp_path / "no such.db").exists()


def test_reading_a_missing_database_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no results database"):
        ResultsStore(tmp_path / "missing.db", create=False)
    assert not (tmp_path / "missing.db").exists()


def test_failed_batch_leaves_no_partial_rows(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.db")
    with pytest.raises(StoreError, match="key column"):
        store.write([make_row(0), {**make_row(1), "model": None}])
    # a value SQLite cannot bind, on the third row: the first two must not stay behind
    with pytest.raises(sqlite3.Error):
        store.write([make_row(0), make_row(1), {**make_row(2), "output": object()}])
    assert store.count() == 0
    assert store.write([make_row(0)]) == 1
    store.close()


WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {tests!r})
    from test_runner_store import make_row
    from parallelbench.runner.store import ResultsStore

    store = ResultsStore({db!r}, timeout=30)
    offset = int(sys.argv[1])
    for batch in range(40):
        # overlapping key ranges between the two writers
        store.write([make_row(offset + batch * 5 + j, model="shared") for j in range(10)])
    store.close()
    """
)


def test_two_processes_writing_the_same_database(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(tests=str(Path(__file__).parent), db=str(db)))
    procs = [subprocess.Popen([sys.executable, str(script), str(off)]) for off in (0, 3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    with ResultsStore(db, create=False) as store:
        frame = store.frame()
    expected = {f"waiting_line/copy/{i}" for off in (0, 3) for b in range(40) for i in range(off + b * 5, off + b * 5 + 10)}
    assert set(frame["sample_id"]) == expected
    assert len(frame) == len(expected)  # nothing doubled
