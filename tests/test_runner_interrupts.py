"""Ctrl-C or SIGTERM arriving while a unit is written: the unit is saved and counted, or neither,
so the closing line says exactly how many rows the database got (issue 33 item 1, issue 35 item 9)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from rich.console import Console

from parallelbench.runner.interrupts import held
from parallelbench.runner.job import RunInterrupted, run_job
from parallelbench.runner.spec import RunSpec
from parallelbench.runner.store import ResultsStore
from test_runner_resume import count_rows


@pytest.fixture
def ctrl_c_raises():
    """Python's own Ctrl-C handler, also when the tests run with SIGINT ignored (in the background)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_signal_inside_the_block_acts_when_it_ends(ctrl_c_raises) -> None:
    done = []
    with pytest.raises(KeyboardInterrupt):
        with held():
            signal.raise_signal(signal.SIGINT)
            done.append("after")
    assert done == ["after"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

    terms: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: terms.append(signum))
    try:
        with held():
            signal.raise_signal(signal.SIGTERM)
            assert terms == []
        assert terms == [signal.SIGTERM]  # the run's own handler, once, after the block
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_ctrl_c_just_after_a_unit_commits_still_counts_it(tmp_path: Path, monkeypatch, ctrl_c_raises) -> None:
    db = tmp_path / "r.db"
    write = ResultsStore.write
    calls = []

    def write_then_ctrl_c(self, rows, **kw):
        written = write(self, rows, **kw)
        calls.append(len(rows))
        if len(calls) == 2:  # the second unit is in the database: Ctrl-C now
            signal.raise_signal(signal.SIGINT)
        return written

    monkeypatch.setattr(ResultsStore, "write", write_then_ctrl_c)
    spec = RunSpec().apply_flags(model="ideal", tasks="waiting_line/copy", strategy="random", params={"k": "2"},
                                 limit=8, batch_size=2, db=str(db), workers=1)
    with pytest.raises(RunInterrupted) as stopped:
        run_job(spec, Console(quiet=True), show_progress=False)
    assert calls == [2, 2]
    assert stopped.value.result.rows_added == count_rows(db) == 4
