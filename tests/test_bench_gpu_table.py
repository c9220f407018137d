"""benchmarks/bench_gpu_table.py (issue 33 item 5) is ready for a GPU: its --smoke mode runs every
row on the CPU with tiny shapes, and its weight-read accounting counts what a forward reads."""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")
from bench_scripts import load_script  # noqa: E402

gpu_table = load_script("bench_gpu_table")


def test_smoke_mode_prints_every_row_of_the_table(capsys):
    assert gpu_table.main(["--smoke"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "---" not in line]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[1:]]
    for model in ("LLaDA2.0-mini", "SDAR-4B"):
        for mode in ("eager", "compiled"):
            mine = [r for r in rows if r[0].startswith(model) and r[2] == mode]
            whats = {r[1] for r in mine}
            assert any(w.startswith("forward, one") for w in whats), (model, mode, whats)
            assert {"decode, threshold 0.95", "decode, k = 2"} <= whats, (model, mode, whats)
            assert {int(r[3]) for r in mine} == {1, 2}  # the smoke run's batches
    llada = [r for r in rows if r[0].startswith("LLaDA-8B")]
    assert {r[1] for r in llada} == {"forward, 16 tokens", "decode dual cache, k = 2", "decode dual cache, threshold 0.95"}
    for r in rows:
        assert float(r[5]) > 0 and float(r[6].replace(",", "")) > 0
        assert re.fullmatch(r"\d+%", r[8]), r  # a share of the weight-read limit on every row
        assert r[9] == "-" or re.fullmatch(r"\d+\.\d%", r[9])


def test_weights_read_per_forward_count_only_the_routed_experts():
    from parallelbench.models.native import build_random

    cfg = gpu_table.bn.LLADA2_QUICK
    module = build_random("llada2", cfg, dtype="float32")
    moe = gpu_table.RoutedExperts(module)
    per_expert = sum(w[0].numel() * 4 for w in (moe.layers[0].gate_w, moe.layers[0].up_w, moe.layers[0].down_w))
    with torch.no_grad(), moe:
        module(torch.tensor([[5]]))  # one token routes to exactly top_k experts per MoE layer
    assert moe.bytes == len(moe.layers) * cfg["num_experts_per_tok"] * per_expert
    with torch.no_grad(), moe:
        module(torch.randint(0, 1000, (4, 64)))
    assert cfg["num_experts_per_tok"] * per_expert * len(moe.layers) < moe.bytes <= \
        len(moe.layers) * cfg["num_experts"] * per_expert
    assert "route" not in vars(moe.layers[0])  # the hook is gone
    dense = gpu_table.weight_bytes(module)
    everything = sum(p.numel() * 4 for p in module.parameters())
    experts = sum(m.gate_w.numel() + m.up_w.numel() + m.down_w.numel() for m in moe.layers) * 4
    assert dense == everything - experts - module.embed.weight.numel() * 4  # untied: the table is gathered, not read


def test_cards_are_named_and_unknown_ones_need_a_bandwidth(monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H100 80GB HBM3")
    assert gpu_table.card_bandwidth("cuda", None) == ("NVIDIA H100 80GB HBM3", 3.35e12)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H100 PCIe")
    assert gpu_table.card_bandwidth("cuda", None)[1] == 2.0e12
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "Mystery GPU")
    with pytest.raises(SystemExit, match="--bandwidth"):
        gpu_table.card_bandwidth("cuda", None)
    assert gpu_table.card_bandwidth("cuda", 1.5)[1] == 1.5e12
