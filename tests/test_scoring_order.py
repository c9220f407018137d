"""Decoding-order metrics: rank correlation with left to right and DiffuCoder's AR-ness, per
sample, as result columns (older databases get them from their stored `order`)."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

from parallelbench.scoring.order import (
    ORDER_COLUMNS,
    ar_global,
    ar_local,
    kendall_tau_b,
    order_correlations,
    order_metrics,
    spearman_rho,
)


def test_left_to_right_is_one_and_right_to_left_minus_one():
    assert order_correlations(list(range(8))) == (1.0, 1.0)
    assert order_correlations(list(range(8))[::-1]) == (-1.0, -1.0)
    assert order_correlations([0, 0, 1, 1, 2, 2, 3, 3]) == (1.0, 1.0)  # two tokens per step, left to right
    assert order_correlations([3, 3, 2, 2, 1, 1, 0, 0]) == (-1.0, -1.0)


def test_undefined_correlations_are_none():
    assert order_correlations([]) == (None, None)
    assert order_correlations([5]) == (None, None)
    assert order_correlations([2, 2, 2]) == (None, None)  # everything in one step


@pytest.mark.parametrize("seed", range(6))
def test_correlations_match_scipy_with_ties(seed):
    stats = pytest.importorskip("scipy.stats")
    rng = random.Random(seed)
    n = rng.randint(2, 80)
    steps = [rng.randint(-1, n // 3 + 1) for _ in range(n)]
    ranked = sorted(steps)
    kendall, spearman = order_correlations(steps)
    ref_k, ref_s = stats.kendalltau(ranked, steps)[0], stats.spearmanr(ranked, steps)[0]
    if ref_k != ref_k:  # scipy: nan when undefined
        assert kendall is None and spearman is None
    else:
        assert kendall == pytest.approx(ref_k, abs=1e-12) and spearman == pytest.approx(ref_s, abs=1e-12)
    other = [rng.randint(0, 3) for _ in range(n)]
    ref = stats.kendalltau(steps, other)[0]
    got = kendall_tau_b(steps, other)
    assert (got is None and ref != ref) or got == pytest.approx(ref, abs=1e-12)
    ref = stats.spearmanr(steps, other)[0]
    got = spearman_rho(steps, other)
    assert (got is None and ref != ref) or got == pytest.approx(ref, abs=1e-12)


def test_ar_ness_on_small_orders():
    # positions decoded in the order 0, 2, 1, 3
    order = [0, 2, 1, 3]
    assert ar_local(order) == 0.0  # no event follows the previous event's position
    assert ar_global(order) == 0.75  # 0, 1 and 3 were the leftmost masked positions; 2 was not
    assert ar_local([0, 1, 2, 3]) == ar_global([0, 1, 2, 3]) == 1.0
    assert ar_local([0, 0, 1, 1]) == ar_global([0, 0, 1, 1]) == 1.0  # a block per step, left to right within it
    assert ar_local([3, 2, 1, 0]) == 0.0 and ar_global([3, 2, 1, 0]) == 0.25
    assert ar_local([-1, 0, 1]) == 1.0  # a pre-filled position is not a decoding event
    assert ar_local([7]) is None and ar_global([]) is None
    assert ar_local([0, 1, 2, 4, 3], k=2) == pytest.approx(1 / 3)


def test_random_orders_have_low_ar_ness():
    rng = random.Random(0)
    order = list(range(200))
    rng.shuffle(order)
    assert ar_local(order) < 0.05 and ar_global(order) < 0.1


def test_padding_counts_only_in_the_whole_generation_variants():
    answer = [0, 1, 2, 3]  # the answer left to right...
    pad = [0, 0, 1, 1]  # ...after the EOS tail, decoded first
    m = order_metrics(answer, pad)
    assert set(m) == set(ORDER_COLUMNS)
    assert m["dec_order_kendall_ignore_pad"] == m["dec_order_spearman_ignore_pad"] == 1.0
    assert m["dec_order_kendall"] < 0.5 and m["dec_order_spearman"] < 0.5
    assert m["ar_local"] == m["ar_global"] == 1.0


def test_a_tail_filled_at_once_by_stop_at_eos_counts_at_the_last_step():
    m = order_metrics([0, 1, 2], [-1, -1, -1])
    assert m["dec_order_kendall"] == 1.0  # filled when the answer ended: after every answer token


def test_unknown_tail_and_bad_input_leave_values_empty():
    m = order_metrics([0, 1, 2])
    assert m["dec_order_kendall"] is None and m["dec_order_kendall_ignore_pad"] == 1.0
    assert order_metrics(None) == dict.fromkeys(ORDER_COLUMNS)
    assert order_metrics(["x"]) == dict.fromkeys(ORDER_COLUMNS)


# ---- result columns ---------------------------------------------------------------------------


def _row(i: int, order: list[int], **extra) -> dict:
    return {"model": "m", "model_kind": "diffusion", "strategy": "s", "strategy_kind": "topk", "params": "{}",
            "config": "s", "task": "t", "category": "c", "sample_id": f"t/{i}", "seed": 0, "output": "x",
            "score": 1.0, "scores": "{}", "nfe": 3, "num_tokens": 3, "tps": 1.0, "tokens_per_step": "[1,1,1]",
            "order": json.dumps(order), "token_texts": "[]", "wall_time": 0.0, "versions": "{}",
            "created_at": "2026-01-01", **extra}


def test_new_rows_get_the_columns_from_order_and_pad_order(tmp_path: Path):
    from parallelbench.runner.store import COLUMNS, ResultsStore

    assert set(ORDER_COLUMNS) <= set(COLUMNS)
    with ResultsStore(tmp_path / "r.db") as store:
        store.write([_row(0, [2, 1, 0], pad_order=[0]), _row(1, [0, 1, 2], pad_order=[]), _row(2, [])])
        frame = store.frame().set_index("sample_id")
    assert frame.loc["t/0", "dec_order_kendall_ignore_pad"] == -1.0
    assert frame.loc["t/1", "dec_order_kendall"] == 1.0 and frame.loc["t/1", "ar_global"] == 1.0
    assert frame.loc["t/2", ORDER_COLUMNS].isna().all()  # no order (a failed or API row): empty


def _drop_order_columns(path: Path) -> None:
    con = sqlite3.connect(path)
    for c in ORDER_COLUMNS:
        con.execute(f'ALTER TABLE results DROP COLUMN "{c}"')
    con.commit()
    con.close()


def test_older_files_get_the_columns_computed_from_their_order(tmp_path: Path):
    from parallelbench.runner.store import ResultsStore

    path = tmp_path / "old.db"
    with ResultsStore(path) as store:
        store.write([_row(0, [0, 1, 2, 3], pad_order=[0]), _row(1, [3, 1, 0, 2])])
    _drop_order_columns(path)  # as written before the columns existed
    with ResultsStore(path, create=False) as store:  # read-only: computed on the fly
        old = store.frame().set_index("sample_id")
    assert old.loc["t/0", "dec_order_kendall_ignore_pad"] == 1.0 and old.loc["t/0", "ar_local"] == 1.0
    assert old.loc["t/0", "dec_order_kendall"] is None  # the tail's steps were never stored
    with ResultsStore(path) as store:  # opened for writing: the columns are added and filled
        store.write([_row(2, [0, 1], pad_order=[])])
        migrated = store.frame().set_index("sample_id")
    names = {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(results)")}
    assert set(ORDER_COLUMNS) <= names
    expected = order_metrics([3, 1, 0, 2])
    for c in ("dec_order_kendall_ignore_pad", "dec_order_spearman_ignore_pad", "ar_local", "ar_global"):
        assert migrated.loc["t/1", c] == pytest.approx(expected[c])
    assert migrated.loc["t/2", "dec_order_kendall"] == 1.0


def test_a_run_stores_every_order_column(tmp_path: Path):
    from typer.testing import CliRunner

    from parallelbench.cli import app
    from parallelbench.runner.store import ResultsStore

    db = tmp_path / "run.db"
    res = CliRunner().invoke(app, ["run", "--model", "tiny", "--tasks", "waiting_line/copy", "--strategy", "random",
                                   "--k", "1", "--limit", "2", "--db", str(db), "--no-report"])
    assert res.exit_code == 0, res.output
    with ResultsStore(db, create=False) as store:
        frame = store.frame()
    assert len(frame) == 2
    for c in ORDER_COLUMNS:
        assert frame[c].notna().all(), c
        assert ((frame[c] >= -1) & (frame[c] <= 1)).all(), c
