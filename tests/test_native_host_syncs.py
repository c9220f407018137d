"""Native forwards read nothing on the host (issue 33 item 2): LLaDA, Dream, SDAR and LLaDA 2 MoE
(and LLaDA-MoE, on the same dispatch) with every cache mode, on tiny random checkpoints in the published formats, counted with the
TorchDispatchMode of `parallelbench.decoding.host_syncs`."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("safetensors")

import native_block_ckpt as bc  # noqa: E402
import native_ckpt as nc  # noqa: E402

from parallelbench.decoding import build_strategy, decode  # noqa: E402
from parallelbench.decoding.canvas import left_pad  # noqa: E402
from parallelbench.decoding.host_syncs import count_host_syncs  # noqa: E402
from parallelbench.models import load_model  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)
CASES = [("llada", "none"), ("llada", "prefix"), ("llada", "dual"), ("llada", "delayed"), ("dream", "none"),
         ("dream", "prefix"), ("dream", "dual"), ("dream", "delayed"), ("sdar", "none"), ("sdar", "block"),
         ("llada2", "none"), ("llada2", "block"), ("lladamoe", "none"), ("lladamoe", "prefix"),
         ("lladamoe", "dual"), ("lladamoe", "delayed")]
PROMPTS = [[7, 9, 11, 13, 15, 17, 19, 21, 23], [8, 10, 12, 14, 16], [30, 29, 28, 27, 26, 25, 24]]


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    root = tmp_path_factory.mktemp("syncs")
    return {"llada": nc.write_checkpoint(root / "llada", "llada"), "dream": nc.write_checkpoint(root / "dream", "dream"),
            "sdar": bc.write_checkpoint(root / "sdar", "sdar"), "llada2": bc.write_checkpoint(root / "llada2", "llada2"),
            "lladamoe": nc.write_checkpoint(root / "lladamoe", "lladamoe")}


def _drive(net, gen: int, block: int, plans: bool):
    """A decoding loop as the engine runs it (one token per row per step, finished rows dropped),
    handing the net its host plan with the loop's own per-step read when `plans`."""
    ids, mask = left_pad(PROMPTS, net.pad_id, torch.device("cpu"))
    p = ids.shape[1]
    canvas = torch.cat([ids, torch.full((len(PROMPTS), gen), net.mask_id)], dim=1)
    attention = torch.cat([mask, torch.ones(len(PROMPTS), gen, dtype=torch.bool)], dim=1)
    rows, seen = torch.arange(len(PROMPTS)), []
    with net.session(gen, block), count_host_syncs(net) as syncs:
        while rows.numel():
            logits = net.forward(canvas, attention_mask=attention, rows=rows)
            seen.append((rows.clone(), logits))
            masked = canvas[:, p:] == net.mask_id
            first = masked.long().argmax(dim=1, keepdim=True)
            best = logits[:, p:].index_fill(-1, torch.tensor([net.mask_id]), float("-inf")).argmax(dim=-1)
            canvas = canvas.clone()
            canvas[:, p:] = canvas[:, p:].scatter(1, first, best.gather(1, first))
            keep = (canvas[:, p:] == net.mask_id).any(dim=1)
            plan = net.host_plan(canvas, rows, keep) if plans else None
            values = torch.cat([keep.sum().view(1), plan if plan is not None else keep.new_zeros(0).long()]).tolist()
            canvas, attention, rows = canvas[keep], attention[keep], rows[keep]
            if plan is not None:
                net.set_host_plan(values[0], values[1:])
        refreshes = net.cache_refreshes()
    return seen, syncs, refreshes


@pytest.mark.parametrize("family,cache", CASES)
def test_native_forward_issues_no_host_sync(ckpts, family, cache):
    net = load_model(f"hf:{ckpts[family]}", device="cpu", dtype="float32", cache=cache).net
    if cache in ("prefix", "dual"):
        with_plans, syncs, refreshes = _drive(net, 8, 4, plans=True)
        alone, own_reads, _ = _drive(net, 8, 4, plans=False)
        assert syncs.calls == len(with_plans) >= 8 and syncs.inside == 0, syncs.summary()
        # without the loop's plan the cache reads its three numbers itself: one transfer per call after the first
        assert own_reads.inside == own_reads.calls - 1, own_reads.summary()
        assert all(torch.equal(a[1], b[1]) and torch.equal(a[0], b[0]) for a, b in zip(with_plans, alone))
        assert refreshes == {0: 2, 1: 2, 2: 2}  # one refresh per block of 4, 8 tokens
        return
    if cache == "delayed":  # d3LLM's cache, driven by multi-block (which reads the cache's plan with its step)
        strategy = build_strategy("multi-block", block_length=4, threshold=0.5)
        with count_host_syncs(net) as syncs:
            decode(net, PROMPTS, gen_length=12, strategy=strategy)
        kinds = {k for row in net._delayed.kinds.values() for k in row}
        assert {"store", "window"} <= kinds, kinds  # the cache took part
    else:
        strategy = build_strategy("confidence-threshold", threshold=0.5, block_length=4)
        with net.session(8, 4), count_host_syncs(net) as syncs:
            decode(net, PROMPTS, gen_length=8, strategy=strategy)
    assert syncs.calls >= 2 and syncs.inside == 0, syncs.summary()


def test_the_counter_sees_each_kind_of_host_read():
    """The harness itself: each listed op counts once, inside or outside a watched model."""

    class Model(torch.nn.Module):
        def forward(self, x):
            return x[x > 0].sum() + int(x.sum())  # a boolean-mask index and a scalar read

    x = torch.randn(4, 5)
    m = Model()
    with count_host_syncs(m) as syncs:
        m(x)
        (x > 0).nonzero()
        torch.bincount(torch.tensor([1, 2]))
        torch.repeat_interleave(torch.arange(3), torch.tensor([1, 2, 3]))
        torch.repeat_interleave(torch.arange(3), torch.tensor([1, 2, 3]), output_size=6)  # sized: no read
        x.masked_select(x > 0)
        torch.unique(torch.tensor([1, 2, 2]))
        torch.histc(x)
        bool(x.any())
        torch.equal(x, x)
        x.sum(1).tolist()
        x.index_select(0, torch.tensor([1]))  # an integer index reads nothing
        x.masked_fill(x > 0, 0.0)
    got = syncs.by_op()
    assert syncs.calls == 1 and syncs.inside == 2
    assert got[("inside", "aten.index[bool]")] == 1 and got[("inside", "aten._local_scalar_dense")] == 1
    for op in ("aten.nonzero", "aten.bincount", "aten.repeat_interleave[tensor repeats]", "aten.masked_select",
               "aten._unique2", "aten.histc", "aten._local_scalar_dense", "aten.equal", "Tensor.tolist"):
        assert got[("outside", op)] == 1, (op, got)
    assert syncs.outside == 9
    assert type(m) is Model  # the watched model gets its own class back
