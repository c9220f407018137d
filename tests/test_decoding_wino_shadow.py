"""WINO's shadow block: one forward of canvas + shadow gives the drafts' leave-one-out predictions;
the attention-bias contract on the stand-in and the tiny model; refusing shadow='on' up front."""

from __future__ import annotations

import pytest
import torch
from test_decoding_models import EOS, MASK

from parallelbench.decoding import build_strategy, decode
from parallelbench.decoding.schedules.wino import shadow_forward, shadow_layout


class BiasNet(torch.nn.Module):
    """A small random bidirectional transformer that implements the attention-bias contract."""

    supports_attention_bias = True

    def __init__(self, layers: int = 1, vocab: int = 16, dim: int = 32, heads: int = 4, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        self.vocab_size, self.mask_id, self.eos_id, self.heads = vocab, MASK, EOS, heads
        self.embed = torch.nn.Embedding(vocab, dim)
        self.pos = torch.nn.Embedding(128, dim)
        layer = torch.nn.TransformerEncoderLayer(dim, heads, dim * 2, dropout=0.0, batch_first=True)
        self.body = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(dim, vocab)
        self.calls: list[tuple[int, int]] = []
        self.eval()

    def forward(self, canvas, *, attention_mask=None, rows=None, position_ids=None, attention_bias=None):
        self.calls.append(tuple(canvas.shape))
        if attention_mask is None:
            attention_mask = torch.ones_like(canvas, dtype=torch.bool)
        pos = (attention_mask.long().cumsum(1) - 1).clamp(min=0) if position_ids is None else position_ids
        h = self.embed(canvas) + self.pos(pos)
        if attention_bias is None:
            return self.head(self.body(h, src_key_padding_mask=~attention_mask)) * 3.0
        return self.head(self.body(h, mask=attention_bias.repeat_interleave(self.heads, dim=0))) * 3.0


class Plain:
    """The same network without the capability: WINO takes its fallback rows."""

    def __init__(self, net):
        self.net, self.mask_id, self.eos_id, self.vocab_size = net, net.mask_id, net.eos_id, net.vocab_size

    def forward(self, canvas, *, attention_mask=None, rows=None):
        return self.net.forward(canvas, attention_mask=attention_mask, rows=rows)


def canvas_and_drafts():
    """Two left-padded rows: prompt, then a generation region with drafted tokens and masks."""
    pad = 15
    canvas = torch.tensor([
        [pad, pad, 3, 4, 5, 9, MASK, 7, MASK, 11],
        [6, 7, 8, 9, 10, MASK, 12, 13, 5, MASK],
    ])
    attention = canvas != pad
    verify = torch.tensor([
        [True, False, True, False, False],
        [False, True, True, True, False],
    ])
    return canvas, attention, verify, 5


def leave_one_out(net, canvas, attention, verify, p_len):
    """The fallback's view: the canvas again with each verified token masked, one row each."""
    out = torch.full(verify.shape, float("nan"))
    for r, j in verify.nonzero().tolist():
        alone = canvas[r : r + 1].clone()
        alone[0, p_len + j] = net.mask_id
        logits = net.forward(alone, attention_mask=attention[r : r + 1])[0, p_len + j]
        out[r, j] = torch.log_softmax(logits, -1)[canvas[r, p_len + j]].exp()
    return out


def test_shadow_layout_hides_only_the_own_token_and_the_rest_of_the_shadow():
    canvas, attention, verify, p_len = canvas_and_drafts()
    slot_pos, slot_ok, pos, bias = shadow_layout(attention, verify, p_len)
    assert slot_pos.tolist() == [[0, 2, 0], [1, 2, 3]] and slot_ok.tolist() == [[True, True, False], [True] * 3]
    assert pos[0, 10:].tolist() == [3, 5, 3] and pos[1, 10:].tolist() == [6, 7, 8]  # the originals' positions
    see = bias == 0
    assert not see[:, :10, 10:].any()  # the canvas never sees the shadow
    assert see[0, 10, :10].tolist() == [False, False, True, True, True, False, True, True, True, True]
    assert see[1, 12, 10:].tolist() == [False, False, True]  # a shadow sees itself only, of the shadow block
    assert see[0, 12].tolist() == [False] * 12 + [True]  # a spare slot: itself


@torch.no_grad()
def test_one_layer_shadow_equals_leave_one_out_rows():
    net = BiasNet(layers=1)
    canvas, attention, verify, p_len = canvas_and_drafts()
    main, aux = shadow_forward(net, canvas, attention, torch.arange(2), verify, p_len)
    expected = leave_one_out(net, canvas, attention, verify, p_len)
    got = aux["verify_prob"]
    assert torch.equal(torch.isnan(got), torch.isnan(expected))
    assert torch.allclose(got.nan_to_num(0), expected.nan_to_num(0), atol=1e-5, rtol=1e-5)
    bare = net.forward(canvas, attention_mask=attention)
    assert torch.allclose(main, bare, atol=1e-5)  # the canvas logits are a bare forward's


@torch.no_grad()
def test_deeper_shadow_keeps_the_canvas_untouched():
    net = BiasNet(layers=3)
    canvas, attention, verify, p_len = canvas_and_drafts()
    main, _ = shadow_forward(net, canvas, attention, torch.arange(2), verify, p_len)
    assert torch.allclose(main, net.forward(canvas, attention_mask=attention), atol=1e-5)


@pytest.mark.parametrize("params", [{}, {"block_length": 4}, {"wide_threshold": 0.4, "narrow_threshold": 0.9}])
def test_wino_with_the_shadow_block_decodes_like_the_fallback(params):
    net = BiasNet(layers=1, seed=2)
    prompts = [[3, 4, 5], [6], [7, 8, 9, 10]]
    fast = decode(net, prompts, gen_length=16, strategy=build_strategy("wino", **params), seed=1)
    shapes = list(net.calls)
    slow = decode(Plain(net), prompts, gen_length=16, strategy=build_strategy("wino", **params), seed=1)
    assert [r.tokens for r in fast] == [r.tokens for r in slow]
    assert [r.tokens_per_step for r in fast] == [r.tokens_per_step for r in slow]
    assert [r.extra for r in fast] == [r.extra for r in slow]
    if params.get("wide_threshold") == 0.4:
        assert fast[1].extra["remasked"] == 3  # the narrowing out happened, and identically
    # one call per step, never more rows than the rows decoding, and the shadow was used
    steps = max(r.nfe for r in fast)
    assert len(shapes) == steps and all(b <= 3 for b, _ in shapes) and any(n > 20 for _, n in shapes)


def test_shadow_off_takes_the_fallback_rows():
    net = BiasNet(layers=1, seed=2)
    decode(net, [[3, 4, 5]], gen_length=16, strategy=build_strategy("wino", shadow="off", wide_threshold=0.4))
    assert all(n == 19 for _, n in net.calls) and any(b > 1 for b, _ in net.calls)


def test_shadow_on_without_the_capability_is_one_line_before_any_call():
    net = BiasNet()
    with pytest.raises(ValueError, match="supports_attention_bias") as err:
        decode(Plain(net), [[3]], gen_length=8, strategy=build_strategy("wino", shadow="on"))
    assert "shadow='auto'" in str(err.value) and "\n" not in str(err.value) and net.calls == []
    with pytest.raises(ValueError, match="valid range"):
        build_strategy("wino", shadow="sometimes")


def test_a_run_refuses_shadow_on_for_a_model_without_it(tmp_path):
    from typer.testing import CliRunner

    from parallelbench.cli import app

    db = tmp_path / "x.db"
    res = CliRunner().invoke(app, ["run", "--model", "ideal", "--tasks", "waiting_line/copy", "--limit", "1",
                                   "--strategy", "wino", "--param", "shadow=on", "--db", str(db), "--no-report"])
    assert res.exit_code != 0 and "supports_attention_bias" in res.output and "Traceback" not in res.output
    assert not db.exists()


# ---------------------------------------------------------------- the tiny model
def tiny_net(**cfg):
    from parallelbench.models.tiny.model import TinyConfig, TinyDenoiser

    torch.manual_seed(0)
    base = dict(vocab_size=40, mask_id=1, eos_id=2, pad_id=0, sep_id=3, d_model=32, n_layers=1, n_heads=4,
                d_ff=64, max_len=64)
    base.update(cfg)
    net = TinyDenoiser(TinyConfig(**base)).eval()
    for p in net.parameters():  # random, not the zero-initialised learned amounts
        torch.nn.init.normal_(p, std=0.3)
    return net


TINY_FEATURES = [
    {},
    {"rope": True},
    {"rope": True, "segments": True, "pointer": True, "list_pos": 8, "list_open_id": 4},
    {"grid": 4, "grid_bias": True, "grid_exclude": True, "grid_line_ids": [5], "grid_row_ids": [6],
     "grid_skip_ids": [7], "grid_cell_ids": list(range(10, 30))},
]


@pytest.mark.parametrize("cfg", TINY_FEATURES)
@torch.no_grad()
def test_tiny_model_shadow_equals_leave_one_out_on_one_layer(cfg):
    # (neighbour and coverage embeddings put a token into its neighbours' *inputs*, so there
    # even the first layer's keys change when it is masked: those are approximations, like depth)
    net = tiny_net(**cfg)
    assert net.supports_attention_bias is True
    canvas = torch.tensor([[0, 0, 12, 5, 3, 14, 1, 16, 17, 1], [11, 4, 13, 6, 3, 15, 20, 1, 21, 22]])
    attention = canvas != 0
    verify = torch.tensor([[True, False, True, True, False], [True, True, False, True, True]])
    _, aux = shadow_forward(net, canvas, attention, torch.arange(2), verify, 5)
    expected = leave_one_out(net, canvas, attention, verify, 5)
    assert torch.allclose(aux["verify_prob"].nan_to_num(0), expected.nan_to_num(0), atol=1e-5)


@torch.no_grad()
def test_shipped_tiny_model_gives_the_same_logits_through_the_contract():
    """Every feature of the shipped network (grid, coverage, neighbours, pointer...) read through
    position ids and a padding-only bias gives the plain call's logits."""
    from parallelbench.models.tiny import load_net

    net, _ = load_net()
    g = torch.Generator().manual_seed(0)
    body = torch.randint(4, net.vocab_size, (3, 30), generator=g)
    body[:, 12] = net.sep_id
    body[:, 20:] = torch.where(torch.rand(3, 10, generator=g) < 0.5, net.mask_id, body[:, 20:])
    pads = [4, 0, 2]  # left padding of each row
    canvas = torch.stack([torch.cat([torch.full((n,), net.cfg.pad_id), body[i, : 30 - n]]) for i, n in enumerate(pads)])
    attention = torch.arange(30).unsqueeze(0) >= torch.tensor(pads).unsqueeze(1)
    plain = net.forward(canvas, attention_mask=attention)
    pos = (attention.long().cumsum(1) - 1).clamp(min=0)
    bias = torch.zeros(3, 30, 30).masked_fill(~attention[:, None, :], float("-inf"))
    via = net.forward(canvas, attention_mask=attention, position_ids=pos, attention_bias=bias)
    assert torch.allclose(plain[attention], via[attention], atol=1e-4)


def test_wino_on_a_one_layer_tiny_model_decodes_like_the_fallback():
    net = tiny_net(rope=True, segments=True, pointer=True)
    prompts = [[12, 13, 3], [14, 15, 16, 17, 3]]
    fast = decode(net, prompts, gen_length=8, strategy=build_strategy("wino", wide_threshold=0.3), seed=0)
    slow = decode(Plain(net), prompts, gen_length=8, strategy=build_strategy("wino", wide_threshold=0.3), seed=0)
    assert [r.tokens for r in fast] == [r.tokens for r in slow]
    assert [r.tokens_per_step for r in fast] == [r.tokens_per_step for r in slow]
