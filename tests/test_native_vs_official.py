"""The native LLaDA / Dream implementations against the families' official modeling code.

Opt-in: the official code needs transformers 4.x, so it runs in a scratch venv through
benchmarks/verify_native.py. Set PARALLELBENCH_OFFICIAL_VENV (that venv's python) and
PARALLELBENCH_OFFICIAL_CODE (a copy of Fast-dLLM's tree plus LLaDA's generate.py; see
`python benchmarks/verify_native.py --help`); CI has neither, so the comparison skips there.
The harness's own helpers are tested always.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "verify_native.py"


def _harness():
    spec = importlib.util.spec_from_file_location("verify_native", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("verify_native", module)
    spec.loader.exec_module(module)
    return module


vn = _harness()


def test_poisoned_code_raises_on_import(tmp_path):
    (tmp_path / "modeling_x.py").write_text("X = 1\n")
    (tmp_path / "config.json").write_text("{}")
    assert vn.poison_code(tmp_path) == ["modeling_x.py"]
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(ImportError, match="must not be imported"):
            importlib.import_module("modeling_x")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("modeling_x", None)
    assert (tmp_path / "config.json").read_text() == "{}"


def test_dream_reference_is_shifted_like_the_net():
    ref = torch.arange(12.0).reshape(4, 3)  # [L, V] raw: row t predicts position t + 1
    _, aligned = vn._align(None, ref, "dream")
    assert aligned.tolist() == [ref[0].tolist(), ref[0].tolist(), ref[1].tolist(), ref[2].tolist()]
    _, same = vn._align(None, ref, "llada")
    assert torch.equal(same, ref)


def test_end_token_merge_applied_to_the_reference():
    class Net:
        eos_id, merge_ids = 0, [2]

    ref = torch.tensor([[1.0, 5.0, 1.0, -2.0]])
    merged = vn._merge_like(Net(), ref)
    assert merged[0, 0].item() == pytest.approx(torch.logsumexp(torch.tensor([1.0, 1.0]), 0).item())
    assert merged[0, 2].item() == float("-inf")
    assert merged[0, 1].item() == 5.0 and merged[0, 3].item() == -2.0
    # -inf in the same places is a match; -inf on one side only is not
    assert vn._diff(merged, merged.clone()) == 0.0
    assert vn._diff(merged, ref) == float("inf")


def test_rows_fail_above_their_limit_and_on_token_mismatch():
    report = vn.Report(rows=[vn.Row("x", "fp32", 5e-5, 1e-4)])
    assert report.ok
    report.rows.append(vn.Row("x", "tokens", "15/16", 0.0))
    assert not report.ok
    assert not vn.Row("x", "fp32", float("nan"), 1e-4).ok
    assert "NO" in report.table()


def test_official_dir_layout_is_checked(tmp_path):
    problem = vn.official_dir_problem(tmp_path)
    assert "llada/model/modeling_llada.py" in problem and "llada/generate.py" in problem


def test_the_spec_covers_both_families_and_llada_generate():
    for quick in (True, False):
        spec = vn.make_spec(quick, 0)
        families = {c["family"] for c in spec["checkpoints"].values()}
        assert families == {"llada", "dream"}
        assert any(c.get("generate") for c in spec["checkpoints"].values())
        for steps, gen, block in spec["generate_settings"]:
            assert gen % block == 0 and steps % (gen // block) == 0  # what generate() asserts
        for steps, gen, block, threshold in spec["fastdllm_settings"]:
            assert gen % block == 0 and steps % (gen // block) == 0
            assert threshold is None or 0 < threshold < 1


def _official_env() -> tuple[str, str] | None:
    python = os.environ.get("PARALLELBENCH_OFFICIAL_VENV")
    code = os.environ.get("PARALLELBENCH_OFFICIAL_CODE")
    if not python or not code:
        return None
    return python, code


@pytest.mark.skipif(_official_env() is None, reason="opt-in: set PARALLELBENCH_OFFICIAL_VENV (a transformers-4.49 "
                    "venv's python) and PARALLELBENCH_OFFICIAL_CODE (the official code folder); see "
                    "benchmarks/verify_native.py --help")
def test_native_matches_the_official_code(tmp_path):
    python, code = _official_env()
    problem = vn.official_dir_problem(Path(code))
    assert problem is None, problem
    assert Path(python).is_file(), f"PARALLELBENCH_OFFICIAL_VENV={python} does not exist"
    report = vn.verify(python, Path(code), tmp_path, quick=True)
    assert report.ok, "\n" + report.table()


def test_by_default_the_net_keeps_the_checkpoints_own_end_token_logits(tmp_path):
    """What makes .net.forward equal the official logits and the engine reproduce LLaDA's generate():
    end-of-turn logits not merged into EOS unless merge_stops=true is asked for."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        import native_ckpt as nc
    finally:
        sys.path.pop(0)
    from parallelbench.models import ModelSpecError, load_model

    folder = nc.write_checkpoint(tmp_path / "llada", "llada")
    vocab = nc.vocabulary("llada")
    eos, eot = vocab["<|endoftext|>"], vocab["<|eot_id|>"]
    canvas = torch.tensor([[vocab["Copy"], vocab["the"], vocab["<|mdm_mask|>"], vocab["<|mdm_mask|>"]]])
    merged = load_model(f"hf:{folder}", device="cpu", dtype="float32", merge_stops="true").net
    own = load_model(f"hf:{folder}", device="cpu", dtype="float32").net
    assert eot in merged.merge_ids and own.merge_ids == []
    a, b = merged.forward(canvas), own.forward(canvas)
    assert torch.isinf(a[..., eot]).all() and torch.isfinite(b[..., eot]).all()
    assert torch.allclose(a[..., eos], torch.logsumexp(b[..., [eos, eot]], dim=-1), atol=1e-5)
    keep = [i for i in range(b.shape[-1]) if i not in (eos, eot)]
    assert torch.equal(a[..., keep], b[..., keep])
    with pytest.raises(ModelSpecError, match="merge_stops"):
        load_model(f"hf:{folder}", device="cpu", merge_stops="maybe")
