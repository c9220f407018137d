"""`multi-block` (d3LLM's multi-block decoding): its defining behaviour on hand-made logits, batch
invariance, and the parameter mapping against plain reference loops of d3LLM's routines
(`d3llm_reference.py`)."""

from __future__ import annotations

import pytest
import torch
from d3llm_reference import entropy64, multi_block
from test_decoding_models import EOS, MASK, TableModel, TinyNet, entropy_of, peaked

from parallelbench.decoding import build_strategy, decode, strategy_names

V = 8


def dist(h_target: float) -> list[float]:
    """A distribution over V tokens (token 2 on top) whose entropy is close to `h_target` nats."""
    lo, hi = 1.0 / (V - 1), 1.0
    for _ in range(60):  # entropy falls as the top probability rises
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if entropy_of(peaked(V, 2, mid)) > h_target else (lo, mid)
    return peaked(V, 2, (lo + hi) / 2)


class Recording(TableModel):
    """TableModel that also keeps every canvas it was shown."""

    def __init__(self, probs):
        super().__init__(probs)
        self.canvases: list[list[list[int]]] = []

    def forward(self, canvas, *, attention_mask=None, rows=None):
        self.canvases.append(canvas.tolist())
        return super().forward(canvas, attention_mask=attention_mask, rows=rows)


def run(model, gen_length, **params):
    return decode(model, [[5]], gen_length=gen_length, strategy=build_strategy("multi-block", **params))[0]


def test_registered_listed_and_rebuilt_from_params():
    assert "multi-block" in strategy_names()
    s = build_strategy("multi-block")
    assert s.kind == "adaptive"
    assert s.params == {"temperature": 0.0, "block_length": 32, "stop_at_eos": False, "threshold": 0.5,
                        "add_block_threshold": 0.1, "activate_threshold": 0.95, "commit_lowest": True}
    assert build_strategy("multi-block", **s.params).params == s.params


@pytest.mark.parametrize(("params", "message"), [
    ({"threshold": 1.5}, "threshold=1.5 is invalid: valid range is [0, 1]"),
    ({"threshold": -0.1}, "threshold=-0.1"),
    ({"add_block_threshold": 2}, "add_block_threshold=2"),
    ({"activate_threshold": -1}, "activate_threshold=-1"),
    ({"add_block_threshold": 0.9, "activate_threshold": 0.5}, "activate_threshold does nothing"),
])
def test_bad_options_are_one_line_before_anything_decodes(params, message):
    with pytest.raises(ValueError) as err:
        build_strategy("multi-block", **params)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_entropy_ranking_commits_every_candidate_at_or_below_the_threshold_and_the_lowest_always():
    h = [1.2, 0.1, 0.3, 0.9]  # one block of 4
    model = TableModel([dist(x) for x in h])
    got = [float(entropy64(torch.tensor(dist(x)).clamp_min(1e-30).log())) for x in h]
    assert all(abs(a - b) < 1e-3 for a, b in zip(got, h))
    r = run(model, 4, block_length=4, threshold=0.3 + 1e-3)
    assert r.order == [2, 0, 0, 1]  # {1, 2} at or below 0.3; then the lowest (0.9) alone; then 1.2
    assert r.tokens_per_step == [2, 1, 1] and r.nfe == 3


def test_lowest_of_all_blocks_vs_only_the_forced_commit():
    """Two blocks in flight from the start (add 0), the second not fully active (activate 1):
    d3LLM's LLaDA routine commits the lowest of all blocks AND forces progress in the first;
    its Dream routine (commit_lowest=false) only forces progress in the first fully active block."""
    model = TableModel([dist(x) for x in (2.0, 1.5, 0.8, 1.9)])
    common = dict(block_length=2, threshold=0.5, add_block_threshold=0.0, activate_threshold=1.0)
    llada = run(model, 4, **common)
    assert llada.order == [1, 0, 0, 1]  # step 0: 0.8 (block 1, lowest) + 1.5 (forced in block 0)
    dream = run(model, 4, commit_lowest=False, **common)
    assert dream.order == [1, 0, 2, 3]  # block 1 waits until block 0 is done and it becomes fully active


def test_blocks_enter_at_add_block_threshold_and_decode_before_they_are_fully_active():
    h = [1.5, 1.6, 0.1, 0.2, 0.1, 0.1]  # block 0 uncertain, blocks 1 and 2 easy
    model = TableModel([dist(x) for x in h])
    pipelined = run(model, 6, block_length=2, threshold=0.5, add_block_threshold=0.5, activate_threshold=1.0)
    # step 0: block 0 alone; step 1: block 0 is half done, block 1 enters (not fully active) and its two easy
    # masks are committed with block 0's forced one; step 2: block 2 enters
    assert pipelined.order == [0, 1, 1, 1, 2, 2] and pipelined.nfe == 3
    sequential = run(model, 6, block_length=2, threshold=0.5, add_block_threshold=1.0, activate_threshold=1.0)
    assert sequential.order == [0, 1, 2, 2, 3, 3] and sequential.nfe == 4


def test_a_block_enters_when_the_last_one_has_no_mask_left():
    model = TableModel([dist(x) for x in (0.1, 0.1, 0.1, 0.1)])
    r = run(model, 4, block_length=2, threshold=0.5, add_block_threshold=1.0, activate_threshold=1.0)
    assert r.order == [0, 0, 1, 1]


def test_eos_fill_the_model_sees_eos_after_the_first_eos_and_later_blocks_end():
    probs = [dist(1.5), peaked(V, EOS, 0.999), dist(1.4), dist(0.05), dist(1.3), dist(1.2)]
    common = dict(block_length=2, threshold=0.5, add_block_threshold=0.0, activate_threshold=0.0)
    model = Recording(probs)
    r = decode(model, [[5]], gen_length=6, strategy=build_strategy("multi-block", stop_at_eos=True, **common))[0]
    # step 0 (blocks 0 and 1 in flight): EOS at 1 and the easy slot 3 of block 1; step 1: the model sees
    # EOS from slot 2 on (slot 3's token replaced), block 2 never enters, only slot 0 is left
    assert model.canvases[1][0][1:] == [MASK, EOS, EOS, EOS, EOS, EOS]
    assert r.tokens == [2, EOS, EOS, EOS, EOS, EOS] and r.nfe == 2 and r.tokens_per_step == [2, 1]
    assert r.order[:2] == [1, 0]
    plain = decode(Recording(probs), [[5]], gen_length=6, strategy=build_strategy("multi-block", **common))[0]
    assert plain.nfe > 2 and plain.tokens[2:] != [EOS] * 4  # without stop_at_eos every slot is decoded


def test_no_repair_keys_and_one_commit_at_least_per_step():
    model = TableModel([dist(x) for x in (1.0, 1.1, 1.2, 1.3, 0.9, 1.4, 1.5, 1.6)])
    r = run(model, 8, block_length=2, threshold=0.0, add_block_threshold=0.0, activate_threshold=0.5)
    assert not set(r.extra) & {"edits", "inserts", "deletes", "unmask_tokens", "first_tokens"}
    assert min(r.tokens_per_step) >= 1 and sum(r.tokens_per_step) == 8


# ---------------------------------------------------------------- real nets: batch invariance and the mapping
class Sharp:
    """TinyNet with sharper logits and the mask never proposed: varied decodes that commit several
    tokens per step. Its end token is 3, a token this net often predicts, so rows end at different
    places (TinyNet's own EOS id is never predicted)."""

    def __init__(self, seed: int = 0, scale: float = 2.5):
        self.net = TinyNet(seed=seed)
        self.vocab_size, self.mask_id, self.eos_id = self.net.vocab_size, MASK, 3
        self.scale = scale

    @torch.no_grad()
    def forward(self, canvas, *, attention_mask=None, rows=None):
        z = self.net(canvas, attention_mask=attention_mask) * self.scale
        z[..., MASK] = -30.0
        return z


PROMPTS = [[3, 4, 5], [6], [7, 8, 9, 10, 11], [12, 2]]
SETTINGS = [
    dict(block_length=4, threshold=0.5, add_block_threshold=0.1, activate_threshold=0.95),
    dict(block_length=4, threshold=0.9, add_block_threshold=0.5, activate_threshold=0.5, stop_at_eos=True),
    dict(block_length=8, threshold=0.2, add_block_threshold=0.0, activate_threshold=1.0, stop_at_eos=True),
    dict(block_length=4, threshold=0.6, add_block_threshold=0.25, activate_threshold=0.75, commit_lowest=False),
    dict(block_length=4, threshold=0.7, add_block_threshold=1.0, activate_threshold=1.0, stop_at_eos=True,
         commit_lowest=False),
    dict(block_length=5, threshold=0.8, add_block_threshold=0.2, activate_threshold=0.6, stop_at_eos=True),
    dict(block_length=32, threshold=0.5, add_block_threshold=0.1, activate_threshold=0.95),
]


@pytest.mark.parametrize("params", SETTINGS)
def test_batched_equals_alone_and_equals_the_reference_loop(params):
    model = Sharp()
    strategy = build_strategy("multi-block", **params)
    batched = decode(model, PROMPTS, gen_length=16, strategy=strategy)
    routine = "llada" if params.get("commit_lowest", True) else "dream"
    ended_early = 0
    for prompt, got in zip(PROMPTS, batched):
        alone = decode(model, [prompt], gen_length=16, strategy=strategy)[0]
        assert (got.tokens, got.nfe, got.order) == (alone.tokens, alone.nfe, alone.order)
        tokens, calls, counter = multi_block(
            lambda x: model.forward(x), prompt, 16, block_size=params["block_length"], threshold=params["threshold"],
            add=params["add_block_threshold"], activate=params["activate_threshold"], mask_id=MASK, eos_id=3,
            early_stop=params.get("stop_at_eos", False), routine=routine)
        assert got.tokens == tokens and got.nfe == calls
        # d3LLM's own counter: one more than the calls when the loop ended at an EOS fill
        assert counter - calls in ((0, 1) if params.get("stop_at_eos") else (0,))
        ended_early += counter - calls
    if params.get("stop_at_eos"):
        assert all(3 in r.tokens for r in batched) and ended_early >= 1


def test_a_block_length_that_does_not_divide_leaves_a_shorter_last_block():
    model = TableModel([dist(x) for x in (1.0, 1.1, 1.2, 0.1, 0.1)])
    r = run(model, 5, block_length=3, threshold=0.5, add_block_threshold=1.0, activate_threshold=1.0)
    assert r.order == [0, 1, 2, 3, 3]  # blocks [0, 3) and [3, 5)
    assert run(model, 5, block_length=8, threshold=0.5).order == [1, 2, 3, 0, 0]  # one block


def test_multi_block_commits_several_tokens_per_step_on_the_sharp_net():
    r = decode(Sharp(), PROMPTS, gen_length=16, strategy=build_strategy("multi-block", **SETTINGS[1]))
    assert max(max(x.tokens_per_step) for x in r) >= 3 and all(x.nfe < 16 for x in r)


def test_block_causal_models_are_refused_in_one_line():
    from block_causal_toy import ToyBlockNet  # noqa: PLC0415

    with pytest.raises(ValueError, match="cannot decode a block-causal model") as err:
        decode(ToyBlockNet(), [[3]], gen_length=8, strategy=build_strategy("multi-block", block_length=4))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("spec", ["ideal", "tiny"])
def test_runs_on_the_bundled_canvas_models(spec):
    from parallelbench.models import load_model
    from parallelbench.tasks import get_task

    model = load_model(spec)
    samples = get_task("waiting_line/copy").samples(2)
    strategy = build_strategy("multi-block", block_length=8, threshold=0.5, stop_at_eos=True)
    out = model.generate(samples, strategy, max_new_tokens=32, seed=0)
    assert all(g.text and g.nfe < 32 and sum(g.tokens_per_step) == g.num_tokens for g in out)
