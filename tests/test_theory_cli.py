"""`parallelbench theory table | simulate`: output, JSON shape and user errors."""

import json
import math

import pytest
from typer.testing import CliRunner

from parallelbench.cli import app
from parallelbench.theory import closed_forms as cf
from parallelbench.theory.cli import parse_ns

runner = CliRunner()


def _flat(output: str) -> str:
    """Rich draws errors in a wrapped box: drop the frame and rejoin the words."""
    return " ".join(output.replace("│", " ").split())


def test_parse_ns_forms_and_errors():
    import typer

    assert parse_ns("3..6") == [3, 4, 5, 6]
    assert parse_ns("3,5") == [3, 5]
    assert parse_ns("7") == [7]
    for bad in ("3..x", "a,b", "6..3", "1..3", ""):
        with pytest.raises(typer.BadParameter):
            parse_ns(bad)


def test_table_json_matches_closed_forms():
    res = runner.invoke(app, ["theory", "table", "--n", "3..10", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    assert len(rows) == 7 * 8  # the four list operations and the three structured tasks
    by = {(r["task"], r["n"]): r for r in rows}
    for n in range(3, 11):  # json_any_order's numbers are shuffle's (n = fields); the others copy's
        same = {k: v for k, v in by[("json_any_order", n)].items() if k != "task"}
        assert same == {k: v for k, v in by[("shuffle", n)].items() if k != "task"}
        for task in ("json_fields", "tool_call"):
            assert by[(task, n)]["total_correlation"] == 0.0 and by[(task, n)]["greedy_topk_kn"] == 1.0
    assert by[("shuffle", 6)]["total_correlation"] == pytest.approx(6 * math.log2(6) - math.log2(720))
    assert by[("shuffle", 6)]["greedy_topk_k2"] == pytest.approx(15 / 48)
    assert by[("shuffle", 10)]["total_correlation_limit"] == "inf"
    assert by[("replace_random", 10)]["greedy_topk_k2"] == 0.5
    assert by[("replace_random", 10)]["greedy_topk_kn"] == 0.0
    assert by[("replace_random", 10)]["sampling_one_step"] == pytest.approx(0.9**9)
    assert by[("replace_random", 10)]["greedy_threshold"] == 1.0  # gamma 0.9 >= 9/10
    assert by[("replace_random", 9)]["total_correlation"] == pytest.approx(cf.total_correlation("replace_random", 9))


def test_table_prints_rich_tables():
    res = runner.invoke(app, ["theory", "table", "--n", "3,4"])
    assert res.exit_code == 0, res.output
    assert "C(Y|X)" in res.output and "shuffle" in res.output and "0.375" in res.output


def test_table_bad_range_is_one_clear_error():
    res = runner.invoke(app, ["theory", "table", "--n", "3..x"])
    assert res.exit_code == 2
    assert "range like 3..10" in _flat(res.output)
    assert "Traceback" not in res.output


def test_simulate_json():
    res = runner.invoke(
        app,
        ["theory", "simulate", "--task", "shuffle", "--n", "4", "--strategy", "confidence-topk",
         "--k", "2", "--samples", "500", "--json"],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    for key in ("measured", "stderr", "analytic", "n", "samples", "strategy", "params"):
        assert key in out
    assert out["analytic"] == pytest.approx(cf.shuffle_topk_accuracy(4, 2))
    assert abs(out["measured"] - out["analytic"]) < 4 * math.sqrt(0.375 * 0.625 / 500)
    assert out["params"]["k"] == 2


def test_simulate_text_and_null_analytic():
    res = runner.invoke(app, ["theory", "simulate", "--task", "shuffle", "--n", "4", "--strategy", "l2r",
                              "--k", "2", "--samples", "100", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["analytic"] is None
    res = runner.invoke(app, ["theory", "simulate", "--task", "copy", "--n", "4", "--strategy", "random",
                              "--k", "4", "--samples", "50"])
    assert res.exit_code == 0 and "measured 1.0000" in res.output and "analytic 1.0000" in res.output


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--task", "sort"], "unknown task"),
        (["--strategy", "random"], "needs --k"),
        (["--strategy", "confidence-threshold"], "needs --threshold"),
        (["--strategy", "bogus", "--k", "2"], "unknown strategy"),
        (["--n", "12", "--k", "2"], "n <= 9"),
    ],
)
def test_simulate_user_errors(args, needle):
    res = runner.invoke(app, ["theory", "simulate", "--samples", "10", *args])
    assert res.exit_code == 2, res.output
    assert needle in _flat(res.output)
    assert "Traceback" not in res.output


def test_help_has_examples():
    for cmd in ("table", "simulate"):
        res = runner.invoke(app, ["theory", cmd, "--help"])
        assert res.exit_code == 0 and "Example: parallelbench theory" in res.output


def test_simulate_on_a_confidence_level_agrees_with_the_closed_form_and_says_which_side():
    """γ = 0.5 on shuffle: the noise only orders ties, so measured and analytic are both 1."""
    on_level = runner.invoke(app, ["theory", "simulate", "--task", "shuffle", "--n", "3", "--strategy",
                                   "confidence-threshold", "--threshold", "0.5", "--samples", "200", "--json"])
    assert on_level.exit_code == 0, on_level.output
    text = on_level.output + (on_level.stderr if on_level.stderr_bytes is not None else "")
    assert "equals the confidence level 1/2 of shuffle" in text and "do not commit" in text
    assert "tie-breaking noise" not in text
    result = json.loads(on_level.stdout)
    assert result["measured"] == 1.0 == result["analytic"]
    below = runner.invoke(app, ["theory", "simulate", "--task", "shuffle", "--n", "3", "--strategy", "confidence-threshold",
                                "--threshold", repr(math.nextafter(0.5, 0)), "--samples", "50"])
    assert below.exit_code == 0, below.output
    text = " ".join((below.output + (below.stderr if below.stderr_bytes is not None else "")).split())
    assert "threshold=0.49999999999999994" in text and "5.6e-17 below the confidence level 1/2" in text
    assert "positions at that level commit" in text
    off_level = runner.invoke(app, ["theory", "simulate", "--task", "replace_random", "--n", "4", "--strategy",
                                    "confidence-threshold", "--threshold", "0.8", "--samples", "50"])
    assert off_level.exit_code == 0 and "confidence level" not in off_level.output
    hit = runner.invoke(app, ["theory", "simulate", "--task", "replace_random", "--n", "4", "--strategy",
                              "confidence-threshold", "--threshold", "0.75", "--samples", "50"])
    assert "confidence level 3/4 of replace_random" in hit.output + (hit.stderr if hit.stderr_bytes is not None else "")
