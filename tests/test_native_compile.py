"""compile=true (issue 33 item 3): every native forward, uncached and cached, is one graph under
torch.compile(fullgraph=True), and decoding through the compiled forwards gives the eager tokens.

Tracing is the slow part on a 2-core CPU, so each family gets one small checkpoint, one decode per
path, and torch.compile's "eager" backend (dynamo captures the whole forward, a graph break raises;
the captured graph runs with eager kernels). Inductor's generated code on the same decodes is
checked by `benchmarks/check_native_compile.py` (docs/benchmarks.md has its table).
"""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("safetensors")

import native_block_ckpt as bc  # noqa: E402
import native_ckpt as nc  # noqa: E402

from parallelbench.decoding import build_strategy, decode  # noqa: E402
from parallelbench.models import load_model  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)
PROMPTS = [[7, 9, 11, 13, 15, 17, 19, 21, 23], [8, 10, 12, 14, 16]]
PATHS = {"llada": ("none", "dual"), "dream": ("none", "prefix"), "sdar": ("none", "block"),
         "llada2": ("none", "block"), "lladamoe": ("none", "prefix")}


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    root = tmp_path_factory.mktemp("compile")
    return {
        "llada": nc.write_checkpoint(root / "llada", "llada", n_layers=1),
        "dream": nc.write_checkpoint(root / "dream", "dream", num_hidden_layers=1),
        "sdar": bc.write_checkpoint(root / "sdar", "sdar", num_hidden_layers=1),
        "llada2": bc.write_checkpoint(root / "llada2", "llada2", num_hidden_layers=2),  # one dense, one MoE layer
        "lladamoe": nc.write_checkpoint(root / "lladamoe", "lladamoe"),
    }


def _tokens(net) -> list[list[int]]:
    strategy = build_strategy("confidence-threshold", threshold=0.3, block_length=4)
    with net.session(8, 4):
        return [r.tokens for r in decode(net, PROMPTS, gen_length=8, strategy=strategy)]


@pytest.mark.parametrize("family", list(PATHS))
def test_compiled_forwards_are_whole_graphs_and_decode_the_eager_tokens(ckpts, family):
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    for cache in PATHS[family]:
        eager = load_model(f"hf:{ckpts[family]}", device="cpu", dtype="float32", cache=cache).net
        net = load_model(f"hf:{ckpts[family]}", device="cpu", dtype="float32", cache=cache).net
        net.model.enable_compile(dynamic=True, backend="eager")  # fullgraph=True: a graph break raises
        assert _tokens(net) == _tokens(eager), (family, cache)
        # the compiled bodies ran (a silent fall-back to eager would leave no frames behind)
        assert counters["stats"]["unique_graphs"] >= 1
    assert not counters["graph_break"], dict(counters["graph_break"])
