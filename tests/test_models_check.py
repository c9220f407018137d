"""`parallelbench models check`: the command's plumbing around `parallelbench.models.native`.

The native package is replaced here by a small stand-in (`load_native`, `family_of`) so the
report, the batch-invariance measurement and the one-line errors are tested whether or not
the real implementations are installed; tests of the real loaders live with them.
"""

from __future__ import annotations

import json
import sys
import types

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
from typer.testing import CliRunner  # noqa: E402

from parallelbench.cli import app  # noqa: E402

CONFIG = {"model_type": "llada", "d_model": 16, "n_heads": 2, "n_layers": 1, "vocab_size": 40, "mask_token_id": 39,
          "rope_theta": 500000.0}


class _Net(torch.nn.Module):
    """One bidirectional attention layer; `use_mask=False` ignores padding (as LLaDA's own code does)."""

    def __init__(self, vocab: int, dim: int, use_mask: bool = True):
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(vocab, dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.out = torch.nn.Linear(dim, vocab)
        self.use_mask = use_mask

    def forward(self, canvas, attention_mask=None, position_ids=None, attention_bias=None):
        q, k, v = self.qkv(self.emb(canvas)).chunk(3, dim=-1)
        mask = None
        if attention_mask is not None and self.use_mask:
            mask = attention_mask[:, None, :].expand(-1, canvas.shape[1], -1)
        return self.out(torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask))


def _fake_native(use_mask: bool = True):
    mod = types.ModuleType("parallelbench.models.native")
    mod.family_of = lambda cfg: "llada" if str(cfg.get("model_type", "")).lower() == "llada" else None

    def load_native(path, device="cpu", dtype=None):
        cfg = json.loads((__import__("pathlib").Path(path) / "config.json").read_text())
        return _Net(cfg["vocab_size"], cfg["d_model"], use_mask), cfg

    mod.load_native = load_native
    return mod


@pytest.fixture
def ckpt(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    return tmp_path


def _run(*args):
    result = CliRunner().invoke(app, ["models", "check", *args])
    return result.exit_code, result.output


def test_report_names_config_parameters_dtype_and_batch_invariance(ckpt, monkeypatch):
    monkeypatch.setitem(sys.modules, "parallelbench.models.native", _fake_native())
    code, out = _run(f"hf:{ckpt}", "--json")
    assert code == 0, out
    report = json.loads(out)
    expected = sum(p.numel() for p in _Net(40, 16).parameters())
    assert report["family"] == "llada" and report["parameters"] == expected and report["dtypes"] == ["float32"]
    assert report["config"]["rope_theta"] == 500000.0 and report["lengths"] == [32, 25, 18]
    assert report["padded_vs_alone"] < 1e-5
    import transformers

    if int(transformers.__version__.split(".")[0]) >= 5:
        assert "does not run under transformers" in report["reference"] and report["reference_alone"] is None
    code, text = _run(f"hf:{ckpt}")
    assert code == 0 and f"parameters: {expected:,}" in text and "dtype: float32 on cpu" in text


def test_a_model_that_ignores_padding_shows_a_large_difference(ckpt, monkeypatch):
    monkeypatch.setitem(sys.modules, "parallelbench.models.native", _fake_native(use_mask=False))
    code, out = _run(f"hf:{ckpt}", "--json", "--canvases", "2", "--length", "12")
    assert code == 0, out
    assert json.loads(out)["padded_vs_alone"] > 1e-3


@pytest.mark.parametrize("case", ["no-native", "not-native-family", "not-hf", "bad-dtype"])
def test_errors_are_one_line(ckpt, monkeypatch, case):
    spec = f"hf:{ckpt}"
    extra = []
    if case == "no-native":
        monkeypatch.setitem(sys.modules, "parallelbench.models.native", None)  # import fails
    else:
        monkeypatch.setitem(sys.modules, "parallelbench.models.native", _fake_native())
    if case == "not-native-family":
        (ckpt / "config.json").write_text(json.dumps({**CONFIG, "model_type": "qwen2"}))
    if case == "not-hf":
        spec = "tiny"
    if case == "bad-dtype":
        extra = ["--dtype", "int8"]
    code, out = _run(spec, *extra)
    lines = [line for line in out.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), out
    assert {"no-native": "not in this install", "not-native-family": "not of a family with a native",
            "not-hf": "not an hf: spec", "bad-dtype": "--dtype"}[case] in lines[0]


def _shim_python(tmp_path, body: str) -> str:
    """An 'interpreter' for --reference-python: this python with a sitecustomize that replaces
    `AutoModel.from_pretrained` (the checkpoint's own code) by `body`'s `_from_pretrained`."""
    import inspect
    import os

    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(
        "import json, pathlib, torch, transformers\n" + inspect.getsource(_Net) + body
        + "transformers.AutoModel.from_pretrained = _from_pretrained\n")
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\nPYTHONPATH={shim} exec {sys.executable} \"$@\"\n")
    os.chmod(script, 0o755)
    return str(script)


_SAME_NET = """
def _from_pretrained(folder, **kw):
    cfg = json.loads((pathlib.Path(folder) / "config.json").read_text())
    return _Net(cfg["vocab_size"], cfg["d_model"])
"""


def test_reference_python_runs_the_checkpoint_code_in_that_interpreter(ckpt, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "parallelbench.models.native", _fake_native())
    python = _shim_python(tmp_path, _SAME_NET)
    code, out = _run(f"hf:{ckpt}", "--json", "--canvases", "2", "--length", "12", "--reference-python", python)
    assert code == 0, out
    report = json.loads(out)
    assert report["reference"].startswith("the checkpoint's own code under transformers"), report["reference"]
    assert report["reference_alone"] < 1e-5 and report["reference_padded"] < 1e-5


def test_reference_python_reports_a_differing_or_failing_reference(ckpt, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "parallelbench.models.native", _fake_native())
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    scaled = _SAME_NET.replace("    return _Net(cfg[\"vocab_size\"], cfg[\"d_model\"])",
                               "    net = _Net(cfg[\"vocab_size\"], cfg[\"d_model\"])\n"
                               "    net.out.weight.data *= 2\n    return net")
    assert scaled != _SAME_NET
    differing = _shim_python(tmp_path / "a", scaled)
    code, out = _run(f"hf:{ckpt}", "--json", "--canvases", "1", "--length", "8", "--reference-python", differing)
    assert code == 0, out
    assert json.loads(out)["reference_alone"] > 1e-2
    broken = _shim_python(tmp_path / "b", "def _from_pretrained(folder, **kw):\n    raise KeyError('default')\n")
    code, out = _run(f"hf:{ckpt}", "--json", "--canvases", "1", "--length", "8", "--reference-python", broken)
    assert code == 0, out
    report = json.loads(out)
    assert report["reference"].startswith("the checkpoint's own code failed in") and "KeyError" in report["reference"]
    assert report["reference_alone"] is None
    code, out = _run(f"hf:{ckpt}", "--reference-python", str(tmp_path / "missing" / "python"))
    lines = [line for line in out.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "--reference-python" in lines[0], out
