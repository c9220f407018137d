"""Issue 27 item 4: edit-threshold's edit_rule and post_steps, confidence-threshold's min_k.

A scripted model hands out chosen probabilities per slot, depending on whether the canvas
still holds masks, so each option's defining behaviour shows in a few steps.
"""

from __future__ import annotations

import math

import pytest
import torch

from parallelbench.decoding import build_strategy, decode

MASK, EOS, V = 0, 1, 8
A, B, C, D = 4, 5, 6, 7


def logits_for(dist: dict[int, float]) -> torch.Tensor:
    """Logits whose softmax puts `dist` on its tokens and spreads the rest evenly (mask token 0)."""
    rest = 1.0 - sum(dist.values())
    others = [t for t in range(V) if t not in dist and t != MASK]
    p = torch.full((V,), rest / len(others))
    p[MASK] = 0.0
    for t, q in dist.items():
        p[t] = q
    return torch.log(p.clamp_min(1e-30))


class Scripted:
    """`script(gen, masked_left)` -> one dict per generation slot; the model's logits follow it.
    With block_causal it is a one-block block-causal net: the engine's positions and bias are
    accepted (and ignored), and with a prompt of whole blocks the last gen_length columns of
    each call are the generation slots."""

    def __init__(self, script, gen_length, block_causal=False):
        self.script, self.g = script, gen_length
        self.mask_id, self.eos_id, self.vocab_size = MASK, EOS, V
        if block_causal:
            self.block_causal, self.block_size, self.default_block_length, self.cache_mode = True, None, gen_length, "none"

    def forward(self, canvas, *, attention_mask=None, rows=None, position_ids=None, attention_bias=None):
        out = torch.zeros(canvas.shape[0], canvas.shape[1], V)
        for r in range(canvas.shape[0]):
            gen = canvas[r, -self.g :].tolist()
            for j, dist in enumerate(self.script(gen, gen.count(MASK))):
                out[r, canvas.shape[1] - self.g + j] = logits_for(dist)
        return out


def run(model, name, gen, **params):
    prompt = [3] * gen if getattr(model, "block_causal", False) else [3]  # whole blocks: the region is the slots
    return decode(model, [prompt], gen_length=gen, strategy=build_strategy(name, **params))[0]


# ---------------------------------------------------------------------- edit_rule
def changing_mind(gen, masked_left):
    """Both slots are committed in step 0 (A, B at .9); once settled, slot 0's model moves to C
    with p .6 while A keeps .35: a gain of .25 but a confidence of .6."""
    if masked_left:
        return [{A: 0.9}, {B: 0.9}]
    return [{C: 0.6, A: 0.35}, {B: 0.9}]


@pytest.mark.parametrize("block_causal", [False, True])
def test_confidence_rule_edits_on_the_new_tokens_probability_gain_on_the_lead(block_causal):
    model = Scripted(changing_mind, 2, block_causal)
    conf = run(model, "edit-threshold", 2, threshold=0.5, edit_threshold=0.5, edit_rule="confidence", post_steps=1)
    gain = run(model, "edit-threshold", 2, threshold=0.5, edit_threshold=0.5, edit_rule="gain", post_steps=1)
    assert conf.tokens == [C, B] and conf.extra["edits"] == 1  # .6 > .5
    assert gain.tokens == [A, B] and gain.extra["edits"] == 0  # .6 - .35 = .25 < .5
    low_gain = run(model, "edit-threshold", 2, threshold=0.5, edit_threshold=0.2, post_steps=1)
    assert low_gain.tokens == [C, B]  # .25 > .2


def test_gain_is_the_default_rule():
    s = build_strategy("edit-threshold")
    assert s.params["edit_rule"] == "gain" and s.params["post_steps"] == 0


# ---------------------------------------------------------------------- post_steps
def flip_flop(gen, masked_left):
    """Once settled, slot 0 always wants the other of A / C (p .9): every edit-only step edits."""
    if masked_left:
        return [{A: 0.9}, {B: 0.9}]
    return [{C if gen[0] == A else A: 0.9}, {B: 0.9}]


def settle_once(gen, masked_left):
    """Once settled, slot 0 wants C (p .9): one edit, then the block is stable."""
    if masked_left:
        return [{A: 0.9}, {B: 0.9}]
    return [{C: 0.9}, {B: 0.9}]


@pytest.mark.parametrize("block_causal", [False, True])
def test_post_steps_keep_a_filled_block_for_edit_only_steps(block_causal):
    params = {"threshold": 0.5, "edit_threshold": 0.5, "edit_rule": "confidence"}
    none = run(Scripted(flip_flop, 2, block_causal), "edit-threshold", 2, post_steps=0, **params)
    assert none.tokens == [A, B] and none.nfe == 1  # no edit-only step: the block ends when full
    for m in (1, 2, 3):  # at most M edit-only steps, each edits
        r = run(Scripted(flip_flop, 2, block_causal), "edit-threshold", 2, post_steps=m, **params)
        assert r.nfe == 1 + m and r.extra["post_steps"] == m and r.extra["edits"] == m
        assert r.tokens == [C if m % 2 else A, B] and r.tokens_per_step == [2] + [0] * m
    # the block ends after the first edit-only step without an edit, whatever M allows
    r = run(Scripted(settle_once, 2, block_causal), "edit-threshold", 2, post_steps=16, **params)
    assert r.tokens == [C, B] and r.nfe == 3 and r.extra["post_steps"] == 2 and r.extra["edits"] == 1


def test_post_steps_hold_each_block_in_turn():
    """Blocks of 2: every block gets its edit-only steps before the next one starts."""

    def script(gen, masked_left):
        out = []
        for j, tok in enumerate(gen):
            if tok == MASK:
                out.append({A: 0.9})
            else:  # settled slots want C, once
                out.append({C: 0.9} if tok == A else {tok: 0.9})
        return out

    r = run(Scripted(script, 4), "edit-threshold", 4, threshold=0.5, edit_threshold=0.5, edit_rule="confidence",
            post_steps=4, block_length=2)
    # block 0: fill (A A), edit (C C), no edit -> leave; block 1 likewise
    assert r.tokens == [C, C, C, C] and r.nfe == 6 and r.extra["post_steps"] == 4 and r.extra["edits"] == 4
    assert r.order == [1, 1, 4, 4]


# ---------------------------------------------------------------------- min_k
def spread(gen, masked_left):
    return [{A: 0.95}, {B: 0.5}, {C: 0.4}, {D: 0.3}]


@pytest.mark.parametrize("block_causal", [False, True])
def test_min_k_commits_every_slot_above_the_threshold_but_at_least_k(block_causal):
    model = Scripted(spread, 4, block_causal)
    assert run(model, "confidence-threshold", 4, threshold=0.9).tokens_per_step == [1, 1, 1, 1]
    assert run(model, "confidence-threshold", 4, threshold=0.9, min_k=2).tokens_per_step == [2, 2]
    assert run(model, "confidence-threshold", 4, threshold=0.45, min_k=1).tokens_per_step == [2, 1, 1]
    assert run(model, "confidence-threshold", 4, threshold=0.45, min_k=3).tokens_per_step == [3, 1]
    r = run(model, "confidence-threshold", 4, threshold=0.9, min_k=3)
    assert r.tokens_per_step == [3, 1] and r.order == [0, 0, 0, 1]  # the three most confident first


# ---------------------------------------------------------------------- bad values
@pytest.mark.parametrize(
    ("name", "params", "fragment"),
    [
        ("edit-threshold", {"edit_rule": "lead"}, "edit_rule='lead' is invalid: valid range is gain | confidence"),
        ("edit-threshold", {"post_steps": -1}, "post_steps=-1 is invalid: valid range is an integer >= 0"),
        ("edit-threshold", {"post_steps": 1.5}, "post_steps=1.5 is invalid"),
        ("confidence-threshold", {"min_k": 0}, "min_k=0 is invalid: valid range is an integer >= 1"),
    ],
)
def test_out_of_range_options_fail_in_one_line_listing_the_valid_values(name, params, fragment):
    with pytest.raises(ValueError) as err:
        build_strategy(name, **params)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_confidence_bound_never_skips_a_possible_edit():
    """The sigmoid bound used to skip the normaliser: p(top) <= sigmoid(lead)."""
    from parallelbench.decoding.schedules.edit_threshold import EditThreshold

    s = EditThreshold(edit_rule="confidence", edit_threshold=0.8)
    torch.manual_seed(0)
    z = torch.randn(2000, 16) * 3
    p = torch.softmax(z, -1)
    top, best = p.max(-1)
    now = torch.randint(0, 16, (2000,))
    lead = z.gather(1, best[:, None]).squeeze(1) - z.gather(1, now[:, None]).squeeze(1)
    possible = (top > 0.8) & (best != now)
    assert possible.any() and bool((lead[possible] > s.min_lead()).all())
    assert math.isinf(EditThreshold(edit_rule="confidence", edit_threshold=1.0).min_lead())


@pytest.mark.parametrize("path", ["bounded", "block"])
@pytest.mark.parametrize("vocab,gen_length", [(256, 16), (1024, 32)], ids=["256", "1024"])
@pytest.mark.parametrize("rule", ["gain", "confidence"])
def test_edit_fast_path_with_chunk_bounds_equals_the_plain_rule(rule, vocab, gen_length, path, monkeypatch):
    """Both greedy paths give the plain rule's edits. The bounded one: with a vocabulary the chunked
    arg-max splits (1,024 over more than 32 committed rows: 8 chunks of 128), rows that cannot reach
    the threshold are skipped by a bound on the normaliser (the 1,024 case fails with a bound too
    tight; 256 over at most 90 rows stays on the plain max). The block one: one softmax over the
    block (a view of one block within DENSE_UP_TO logits)."""
    from edit_threshold_reference import MixerNet, PlainEditThreshold

    from parallelbench.decoding.schedules import edit_threshold

    monkeypatch.setattr(edit_threshold, "DENSE_UP_TO", 0 if path == "bounded" else 1 << 40)

    g = torch.Generator().manual_seed(2)
    prompts = [torch.randint(2, vocab, (8,), generator=g).tolist() for _ in range(6)]
    edits = 0
    for scale, threshold, edit in ((3.0, 0.3, 0.1), (6.0, 0.5, 0.3), (8.0, 0.7, 0.5), (4.0, 0.2, 0.05)):
        params = dict(threshold=threshold, edit_threshold=edit, edit_rule=rule)
        net = MixerNet(vocab, seed=5, scale=scale)
        fast = decode(net, prompts, gen_length=gen_length, strategy=build_strategy("edit-threshold", **params))
        plain = decode(net, prompts, gen_length=gen_length, strategy=PlainEditThreshold(**params))
        assert [r.tokens for r in fast] == [r.tokens for r in plain] and [r.nfe for r in fast] == [r.nfe for r in plain]
        edits += sum(r.extra["edits"] for r in fast)
    assert edits > 0


class _MaskOutsideTheLogits(torch.nn.Module):
    """A net whose mask id (its last embedding) has no logit: the head scores `vocab` tokens."""

    def __init__(self, vocab: int = 24):
        super().__init__()
        torch.manual_seed(3)
        self.vocab_size, self.mask_id, self.eos_id = vocab, vocab, 1
        self.embed = torch.nn.Embedding(vocab + 1, 16)
        self.head = torch.nn.Linear(16, vocab)

    def forward(self, canvas, *, attention_mask=None, rows=None):
        x = self.embed(canvas)
        return self.head(x + torch.tanh(x.mean(dim=1, keepdim=True))) * 4.0


@pytest.mark.parametrize("path", ["bounded", "block"])
def test_edits_with_the_mask_id_outside_the_logits(path, monkeypatch):
    """Masked slots hold a mask id the logits do not cover: neither greedy path indexes the logits
    with it, and both give the same tokens."""
    from parallelbench.decoding.schedules import edit_threshold

    monkeypatch.setattr(edit_threshold, "DENSE_UP_TO", 0 if path == "bounded" else 1 << 40)
    net = _MaskOutsideTheLogits()
    results = decode(net, [[2, 3, 4], [5, 6]], gen_length=8,
                     strategy=build_strategy("edit-threshold", threshold=0.3, edit_threshold=0.05))
    assert all(len(r.tokens) == 8 and all(0 <= t < 24 for t in r.tokens) for r in results)
    monkeypatch.setattr(edit_threshold, "DENSE_UP_TO", 1 << 40 if path == "bounded" else 0)
    other = decode(net, [[2, 3, 4], [5, 6]], gen_length=8,
                   strategy=build_strategy("edit-threshold", threshold=0.3, edit_threshold=0.05))
    assert [r.tokens for r in results] == [r.tokens for r in other]
