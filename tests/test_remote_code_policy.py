"""Planted code never runs without an explicit opt-in (issue 15 item 2, issue 16 item 4).

Trap checkpoints carry `.py` files that, when imported, write a marker file and raise.
`auto_map` points at them for the config, the model and the tokenizer, under names that
contain "llada" and "dream". Loading must not import them unless the user passes
trust_remote_code=true for a family without a native implementation; one positive
control shows that the trap does fire when remote code really runs.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from parallelbench.models import ModelSpecError, load_model  # noqa: E402
from parallelbench.models.hf.detect import native_family, remote_code_allowed  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TRAP = '''import pathlib
pathlib.Path({marker!r}).write_text("executed")  # absolute: transformers imports a copy of this file
raise RuntimeError("trap module imported")
'''
MARKER = "EXECUTED"


def trap_checkpoint(folder: Path, config: dict) -> Path:
    """A checkpoint whose every auto_map entry points at a trap module."""
    folder.mkdir(parents=True, exist_ok=True)
    for module in ("configuration_llada", "modeling_llada", "modeling_dream", "tokenization_dream"):
        (folder / f"{module}.py").write_text(TRAP.format(marker=str(folder.resolve() / MARKER)))
    auto_map = {"AutoConfig": "configuration_llada.LLaDAConfig", "AutoModel": "modeling_llada.LLaDAModelLM",
                "AutoModelForCausalLM": "modeling_dream.DreamModel"}
    (folder / "config.json").write_text(json.dumps({"auto_map": auto_map, **config}))
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "DreamTokenizer", "auto_map": {"AutoTokenizer": ["tokenization_dream.DreamTokenizer", None]}}))
    return folder


LLADA_CFG = {"model_type": "llada", "architectures": ["LLaDAModelLM"], "d_model": 32, "n_heads": 2, "n_kv_heads": 2,
             "n_layers": 1, "mlp_hidden_size": 64, "vocab_size": 64, "embedding_size": 64, "mask_token_id": 1}
DREAM_CFG = {"model_type": "Dream", "architectures": ["DreamModel"], "hidden_size": 32, "num_attention_heads": 2,
             "num_key_value_heads": 2, "num_hidden_layers": 1, "intermediate_size": 64, "vocab_size": 64}
NAMED_ONLY_CFG = {"model_type": "trap_custom", "architectures": ["LLaDAModelLM", "DreamModel"], "hidden_size": 32,
                  "num_hidden_layers": 1, "vocab_size": 64}


def _executed(folder: Path) -> bool:
    return (folder / MARKER).exists()


@pytest.mark.parametrize("config", [LLADA_CFG, DREAM_CFG], ids=["llada", "dream"])
@pytest.mark.parametrize("opt_in", [None, True, False])
def test_native_families_never_run_checkpoint_code(tmp_path, config, opt_in):
    folder = trap_checkpoint(tmp_path / "ckpt", config)
    options = {} if opt_in is None else {"trust_remote_code": opt_in}
    try:  # without the native package the load stops; with it, the missing weights stop it
        load_model(f"hf:{folder}", device="cpu", **options)
    except Exception as exc:  # noqa: BLE001 - the point is what did not happen
        assert "trap module imported" not in str(exc)
    assert not _executed(folder)
    assert not remote_code_allowed(config, opt_in)


@pytest.mark.parametrize("family", [None, "llada", "dream", "causal"])
def test_a_name_in_auto_map_turns_nothing_on(tmp_path, family):
    folder = trap_checkpoint(tmp_path / "ckpt", NAMED_ONLY_CFG)
    assert native_family(NAMED_ONLY_CFG) is None
    options = {} if family is None else {"family": family}
    with pytest.raises(ModelSpecError) as err:
        load_model(f"hf:{folder}", device="cpu", **options)
    message = str(err.value)
    assert "\n" not in message and "trap module imported" not in message
    if family is None:
        assert "cannot tell which adapter" in message
    elif family in ("llada", "dream"):
        assert "trust_remote_code=true" in message
    assert not _executed(folder)


def test_explicit_opt_in_for_a_family_without_native_code_does_run_it(tmp_path):
    """Positive control: the trap fires when remote code really runs, so the tests above can fail."""
    folder = trap_checkpoint(tmp_path / "ckpt", NAMED_ONLY_CFG)
    with pytest.raises(ModelSpecError) as err:
        load_model(f"hf:{folder}", device="cpu", family="llada", trust_remote_code=True)
    assert "\n" not in str(err.value)
    assert _executed(folder)


def test_policy_table():
    assert remote_code_allowed(NAMED_ONLY_CFG, True)
    for requested in (None, False, "true", 1):
        assert not remote_code_allowed(NAMED_ONLY_CFG, requested)
    assert native_family({"model_type": "LLaDA"}) == "llada"
    assert native_family({"model_type": "dream"}) == "dream"
    assert native_family({"model_type": "qwen2", "auto_map": {"AutoModel": "modeling_llada.LLaDAModelLM"}}) is None


# ---------------------------------------------------------------------- torch.load
def _torch_load_calls(src: Path):
    for path in sorted(src.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "load":
                base = node.func.value
                if isinstance(base, ast.Name) and base.id == "torch":
                    yield path, node


def test_every_torch_load_is_weights_only():
    root = Path(__file__).resolve().parents[1]
    calls = [c for d in ("src", "benchmarks", "tests") for c in _torch_load_calls(root / d)]
    assert calls, "the scan found no torch.load call at all"
    bad = [f"{p.relative_to(root)}:{n.lineno}" for p, n in calls
           if not any(k.arg == "weights_only" and isinstance(k.value, ast.Constant) and k.value.value is True
                      for k in n.keywords)]
    assert not bad, f"torch.load without weights_only=True: {bad}"


class _Planted:
    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (Path(self.marker), "executed"))


def test_resume_refuses_a_planted_pickle(tmp_path):
    from parallelbench.models.tiny.train import CheckpointError, TrainConfig, train

    out = tmp_path / "run"
    out.mkdir()
    marker = tmp_path / MARKER
    torch.save({"model": _Planted(str(marker))}, out / "checkpoint.pt")  # weights_only=False would run it
    with pytest.raises(CheckpointError, match="drop --resume") as err:
        train(TrainConfig(out=str(out), steps=1, threads=torch.get_num_threads()), resume=True, progress=False)
    assert "\n" not in str(err.value)
    assert not marker.exists()


def test_opt_in_on_a_native_family_is_ignored_with_a_warning(tmp_path, caplog):
    folder = trap_checkpoint(tmp_path / "ckpt", LLADA_CFG)
    with caplog.at_level("WARNING", logger="parallelbench.models.hf"):
        try:
            load_model(f"hf:{folder}", device="cpu", trust_remote_code=True)
        except Exception:  # noqa: BLE001 - no weights here; only the warning and the trap matter
            pass
    assert any("trust_remote_code=true ignored" in r.getMessage() for r in caplog.records)
    assert not _executed(folder)
