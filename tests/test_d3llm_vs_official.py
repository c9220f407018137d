"""`multi-block` and cache=delayed against d3LLM's official multi-block routines.

Opt-in: d3LLM's code needs transformers 4.49, so it runs in a scratch venv through
benchmarks/verify_d3llm.py. Set PARALLELBENCH_D3LLM_VENV (that venv's python) and
PARALLELBENCH_D3LLM_CODE (a copy of hao-ai-lab/d3LLM; see `python benchmarks/verify_d3llm.py
--help`); CI has neither, so the comparison skips there. The harness's own helpers are tested always.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_scripts import load_script, opt_in

vd = load_script("verify_d3llm")


def test_the_final_fill_sets_every_slot_after_the_first_eos():
    assert vd.final_fill([4, 7, 2, 9, 2, 5], 2) == [4, 7, 2, 2, 2, 2]
    assert vd.final_fill([4, 7, 9], 2) == [4, 7, 9]
    assert vd.final_fill([4, 2, 9], None) == [4, 2, 9]  # without early_stop nothing is filled


def test_the_spec_covers_both_routines_with_and_without_cache_and_early_stop():
    for quick in (True, False):
        spec = vd.make_spec(quick, 0)
        assert {c["family"] for c in spec["checkpoints"].values()} == {"llada", "dream"}
        settings = spec["settings"]
        assert {s["early_stop"] for s in settings} == {False, True}
        assert any(s["cache"] is None for s in settings) and any(s["cache"] is not None for s in settings)
        for s in settings:
            assert spec["gen_length"] % s["block"] == 0 and s["add"] <= s["activate"]


def test_a_missing_official_tree_is_one_line_and_a_skip_for_quick(tmp_path, capsys):
    assert vd.main(["--quick", "--official", str(tmp_path)]) == 77
    err = capsys.readouterr().err.strip()
    assert "lacks d3llm/d3llm_LLaDA/d3llm_llada_generate_util.py" in err and "\n" not in err


@pytest.mark.skipif(opt_in("PARALLELBENCH_D3LLM_VENV", "PARALLELBENCH_D3LLM_CODE") is None, reason="opt-in: set PARALLELBENCH_D3LLM_VENV (a transformers-4.49 venv's "
                    "python) and PARALLELBENCH_D3LLM_CODE (a copy of hao-ai-lab/d3LLM); see benchmarks/verify_d3llm.py --help")
def test_multi_block_matches_d3llms_routines(tmp_path):
    python, code = opt_in("PARALLELBENCH_D3LLM_VENV", "PARALLELBENCH_D3LLM_CODE")
    assert Path(python).is_file(), f"PARALLELBENCH_D3LLM_VENV={python} does not exist"
    report = vd.verify(python, Path(code), tmp_path, quick=True)
    assert report.ok, "\n" + report.table()
