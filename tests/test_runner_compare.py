"""`parallelbench results --compare A B`: naming configs, pairing samples, one-line errors."""

import pandas as pd
import pytest
from typer.testing import CliRunner

from parallelbench.analysis.synthetic import result_row
from parallelbench.cli import app
from parallelbench.runner.compare import CompareError, compare, describe, resolve


def _frame() -> pd.DataFrame:
    rows = []
    for model in ("m1", "m2"):
        for i in range(20):
            rows.append(result_row("confidence-topk", {"k": 2}, model=model, task="t", sample_id=f"s{i}", score=1.0))
            rows.append(result_row("random", {"k": 2}, model=model, task="t", sample_id=f"s{i}", score=float(i >= 10)))
    rows.append(result_row("l2r", {"k": 2}, model="m1", task="other", sample_id="x", score=1.0))
    return pd.DataFrame(rows)


def test_configs_are_named_as_results_lists_them_with_an_optional_model():
    frame = _frame()
    assert resolve("l2r[k=2]", frame) == ("l2r[k=2]", "m1")
    assert resolve("random[k=2]@m2", frame) == ("random[k=2]", "m2")
    with pytest.raises(CompareError, match=r"several models \(m1, m2\).*random\[k=2\]@MODEL"):
        resolve("random[k=2]", frame)
    with pytest.raises(CompareError, match=r"no config 'random\[k=3\]'.*known configs: confidence-topk\[k=2\]"):
        resolve("random[k=3]", frame)


def test_paired_difference_on_common_samples():
    c = compare(_frame(), "confidence-topk[k=2]@m1", "random[k=2]@m1")
    r = c.result
    assert r.n == 20 and r.difference == pytest.approx(0.5) and r.test == "McNemar exact"
    assert (r.a_only, r.b_only) == (10, 0) and r.p_value == pytest.approx(2 / 1024)
    assert 0 < r.low < 0.5 < r.high
    text = "\n".join(describe(c))
    assert "A − B = +0.500" in text and "p = 0.0020" in text and "20 common samples over 1 task" in text


def test_repeated_seeds_switch_to_the_paired_bootstrap():
    rows = [result_row(s, {"k": 2}, task="t", sample_id=f"s{i}", seed=seed, score=float(s == "l2r" or i % 2))
            for s in ("l2r", "random") for i in range(30) for seed in (0, 1)]
    r = compare(pd.DataFrame(rows), "l2r[k=2]", "random[k=2]").result
    assert r.test == "paired bootstrap" and r.n == 30 and r.rows == 60 and r.p_value < 0.01


def test_no_common_samples_and_same_config_are_one_line_errors():
    with pytest.raises(CompareError, match="share no samples"):
        compare(_frame(), "l2r[k=2]", "random[k=2]@m1")
    with pytest.raises(CompareError, match="two different configs"):
        compare(_frame(), "l2r[k=2]", "l2r[k=2]@m1")


def test_cli_compare_prints_the_difference_and_fails_in_one_line(tmp_path):
    db = tmp_path / "r.db"
    runner = CliRunner()
    ran = runner.invoke(app, ["run", "-m", "ideal", "-t", "waiting_line/shuffle", "-s", "confidence-topk,random",
                              "--k", "1,2", "-n", "12", "--db", str(db), "--no-report", "--no-progress"])
    assert ran.exit_code == 0, ran.output
    shown = runner.invoke(app, ["results", "--db", str(db), "--compare", "confidence-topk[k=1]", "random[k=2]"])
    assert shown.exit_code == 0, shown.output
    flat = " ".join(shown.output.split())
    assert "A − B = " in flat and "95% interval" in flat and "p = " in flat and "12 common samples" in flat
    bad = runner.invoke(app, ["results", "--db", str(db), "--compare", "confidence-topk[k=1]", "nope"])
    assert bad.exit_code == 2 and "no config 'nope'" in bad.output and "Traceback" not in bad.output
    assert len([line for line in bad.output.splitlines() if line.strip()]) <= 3  # one (wrapped) line


def test_hostile_names_are_cut_in_errors():
    rows = [result_row("random", {"k": 2, "x": "y" * 5000}, task="t", sample_id="s", score=1.0)]
    with pytest.raises(CompareError) as err:
        compare(pd.DataFrame(rows), "z" * 5000, "random")
    assert len(str(err.value)) < 600 and "\n" not in str(err.value)
