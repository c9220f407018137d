"""Result reuse keyed on what produced a row (issue 16 item 3), failed rows, and the v1 -> v2 migration."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import parallelbench.runner.units as units
from parallelbench.cli import app
from parallelbench.runner.job import run_job
from parallelbench.runner.spec import RunSpec
from parallelbench.runner.store import COLUMNS, SCHEMA_VERSION, ResultsStore, row_provenance

QUIET = Console(file=open("/dev/null", "w"))


def _spec(db: Path) -> RunSpec:
    return RunSpec().apply_flags(model="ideal", tasks="waiting_line/copy", strategy="confidence-topk",
                                 params={"k": "1"}, limit=3, db=str(db))


def _run(db: Path):
    return run_job(_spec(db), QUIET, show_progress=False)


def test_rows_are_reused_only_while_model_and_data_versions_match(tmp_path: Path, monkeypatch) -> None:
    db = tmp_path / "r.db"
    assert _run(db).rows_added == 3
    again = _run(db)
    assert again.rows_added == 0 and again.rows_skipped == 3  # same model, data, strategy: reused

    real = units.base_versions
    monkeypatch.setattr(units, "base_versions", lambda m: {**real(m), "model": {"weights": "retrained"}})
    changed = _run(db)
    assert changed.rows_added == 3 and changed.rows_skipped == 0  # new weights: old rows not reused
    with ResultsStore(db, create=False) as store:
        assert len(store.frame()) == 3  # what results and the report show: the newest row per key
        assert len(store.frame(all_versions=True)) == 6
        assert {json.loads(v)["model"].get("weights") for v in store.frame()["versions"]} == {"retrained"}

    monkeypatch.setattr(units, "task_data_version", lambda task: "other-data")
    assert _run(db).rows_added == 3  # the task's data changed: run again

    shown = CliRunner().invoke(app, ["results", "--db", str(db), "--all-versions"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    out = shown.output
    # the old and the retrained weights are two decoding versions: a table each, a legend line each
    titles = re.findall(r"^ideal (v:[0-9a-f]{8}): ", out, re.M)
    legend = dict(re.findall(r"^(v:[0-9a-f]{8}) = (.*)$", out, re.M))
    assert len(set(titles)) == 2 and sorted(legend) == sorted(titles), out
    assert ["weights=retrained" in legend[v] for v in titles].count(True) == 1, out
    # the changed data is a row of its own beside the retrained weights' first rows: three versions in all
    tables = dict(zip(titles, re.split(r"^ideal v:[0-9a-f]{8}: .*$", out, flags=re.M)[1:]))
    data = {(v, d) for v, table in tables.items() for d in re.findall(r"^│ copy\s+│ (\S+)\s+│", table, re.M)}
    retrained = next(v for v in titles if "weights=retrained" in legend[v])
    first = next(v for v in titles if v != retrained)
    assert len(data) == 3 and (retrained, "other-da") in data and (first, "other-da") not in data, out


def test_a_v1_database_is_migrated_and_its_rows_kept_but_recomputed(tmp_path: Path) -> None:
    """v1 rows lack the fingerprints of code, options and samples (issue 25): they are kept, readable
    and listed under --all-versions, but a run cannot prove they match, so it decodes them again."""
    db = tmp_path / "r.db"
    _run(db)
    with ResultsStore(db, create=False) as store:
        rows = list(store.iter_rows())
    # the same rows in a database as version 1 wrote it (no status, error or provenance; 6-column key)
    old = tmp_path / "old.db"
    con = sqlite3.connect(old)
    cols = ", ".join(f'"{c}"' for c in COLUMNS)
    con.execute(f"CREATE TABLE results (id INTEGER PRIMARY KEY AUTOINCREMENT, {cols}, "
                'UNIQUE("model", "strategy", "params", "task", "sample_id", "seed"))')
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.executemany(f"INSERT INTO results ({cols}) VALUES ({', '.join('?' for _ in COLUMNS)})",
                    [tuple(r[c] for c in COLUMNS) for r in rows])
    con.commit()
    con.close()

    with ResultsStore(old, create=False) as store:  # read-only: readable as it is
        assert len(store.frame()) == 3
    again = _run(old)  # opening for writing migrates
    assert again.rows_added == 3 and again.rows_skipped == 0
    assert _run(old).rows_skipped == 3  # the new rows are reused from now on
    con = sqlite3.connect(old)
    assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    stored = con.execute("SELECT status, provenance, versions, model, strategy, params FROM results ORDER BY id").fetchall()
    con.close()
    assert len(stored) == 6 and all(s == "ok" for s, *_ in stored)
    for _, prov, versions, model, strategy, params in stored[:3]:  # the migrated rows, as v1 recorded them
        assert prov == row_provenance({"versions": versions, "model": model, "strategy": strategy, "params": params})
    with ResultsStore(old, create=False) as store:
        assert len(store.frame()) == 3 and len(store.frame(all_versions=True)) == 6


def test_failed_rows_are_kept_apart_and_replaced_by_a_later_success(tmp_path: Path) -> None:
    base = {"model": "m", "strategy": "s", "params": "{}", "task": "t", "sample_id": "0", "seed": 0,
            "provenance": "p"}
    with ResultsStore(tmp_path / "r.db") as store:
        assert store.write([{**base, "status": "failed", "error": "timeout: slow"}]) == 1
        assert store.frame().empty and store.failures() == [("m", "t", "0", "timeout: slow")]
        assert store.reusable_keys("m") == set()
        assert store.write([{**base, "output": "x", "score": 1.0}]) == 1  # the retry replaces it
        assert store.failures() == [] and len(store.frame()) == 1
        assert store.reusable_keys("m") == {("s", "{}", "t", "0", 0, "p")}
        assert store.write([{**base, "status": "failed", "error": "later failure"}]) == 0  # never over a result
        assert store.frame()["output"].tolist() == ["x"]


@pytest.mark.parametrize("failed,attempted,reasons,expected", [
    (12, 1700, {"429 rate limited": 12}, "12 of 1,700 samples failed: 429 rate limited; re-run to retry them"),
    (3, 8, {"timeout": 2, "HTTP 500": 1}, "3 of 8 samples failed: timeout (2); HTTP 500 (1); re-run to retry them"),
])
def test_failure_line(failed, attempted, reasons, expected) -> None:
    from parallelbench.runner.job import JobResult

    r = JobResult(db=Path("x"), models=[], attempted=attempted, failed=failed, failure_reasons=reasons)
    assert r.failure_line() == expected
