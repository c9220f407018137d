"""Every preset decodes to completion; schedules and remasking pinned on scripted models;
a researcher's own strategy loads by "module:Class"."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from test_decoding_models import MASK, ScriptModel, TableModel, TinyCausal, TinyNet, peaked

from parallelbench.decoding import Decision, DecodeOptions, Strategy, build_strategy, decode, strategy_names
from parallelbench.decoding.schedules.dus import dus_plan

PRESETS = [
    "random", "l2r", "confidence-topk", "topk-margin", "entropy-topk", "confidence-threshold",
    "confidence-factor", "eb", "klass", "dus", "slowfast", "wino", "apd", "remdm", "rcr",
]
TOPK = {"random", "l2r", "confidence-topk", "topk-margin", "entropy-topk"}


def test_every_preset_is_registered_with_its_kind():
    assert set(PRESETS) <= set(strategy_names())
    for name in PRESETS:
        s = build_strategy(name)
        assert s.name == name
        assert s.kind == ("topk" if name in TOPK else "adaptive")
        assert build_strategy(name, **s.params).params == s.params  # params rebuild the same strategy


@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize("params", [{}, {"temperature": 1.0}, {"block_length": 8}])
def test_every_preset_decodes_to_completion(name, params):
    net = TinyNet()
    res = decode(
        net, [[3, 4, 5], [6], [7, 8, 9, 10]], gen_length=16, strategy=build_strategy(name, **params),
        seed=3, verifier=TinyCausal(),
    )
    for r in res:
        assert len(r.tokens) == 16 and MASK not in r.tokens
        assert r.num_committed == 16 == sum(r.tokens_per_step)
        assert len(r.tokens_per_step) == r.nfe >= 1
        assert min(r.order) >= 0


def test_dus_plan_is_dilated_and_logarithmic():
    assert dus_plan(8) == [[0, 4], [2, 6], [1, 3, 5, 7]]
    assert dus_plan(4) == [[0, 2], [1, 3]]
    assert dus_plan(2) == [[0, 1]] and dus_plan(1) == [[0]]
    assert len(dus_plan(16)) == 4 and sorted(sum(dus_plan(16), [])) == list(range(16))
    assert dus_plan(6) == [[0, 4], [2], [1, 3, 5]]  # non powers of two: the plan of 8, cut
    r = decode(TinyNet(), [[3]], gen_length=16, strategy=build_strategy("dus", block_length=8))[0]
    assert r.nfe == 6 and r.tokens_per_step == [2, 2, 4, 2, 2, 4]
    assert r.order[:8] == [0, 2, 1, 2, 0, 2, 1, 2] and r.order[8:] == [3, 5, 4, 5, 3, 5, 4, 5]


def test_remdm_remasks_the_lowest_confidence_tokens():
    confs = [0.9, 0.5, 0.8, 0.7]
    model = TableModel([peaked(8, 2 + i, c) for i, c in enumerate(confs)])
    r = decode(model, [[3]], gen_length=4, strategy=build_strategy("remdm", k=2, remask_steps=1, remask_k=1))[0]
    # 2 steps decode everything, then the least confident token (position 1) is re-predicted once
    assert r.nfe == 3 and r.tokens_per_step == [2, 1, 1] and r.extra["remasked"] == 1
    assert r.order == [0, 2, 0, 1]
    r = decode(model, [[3]], gen_length=4, strategy=build_strategy("remdm", k=1, remask_steps=3, remask_k=2))[0]
    assert r.extra["remasked"] == 6 and r.nfe == 4 + 3 * 2
    r = decode(model, [[3]], gen_length=4, strategy=build_strategy("remdm", k=1, remask_steps=0))[0]
    assert r.nfe == 4 and "remasked" not in r.extra


def test_remdm_can_start_revising_before_the_end():
    model = TableModel([peaked(8, 2 + i, 0.9 - 0.1 * i) for i in range(4)])
    r = decode(model, [[3]], gen_length=4, strategy=build_strategy("remdm", k=1, remask_steps=1, remask_at=0.5))[0]
    assert r.extra["remasked"] == 1 and r.nfe == 5


def test_rcr_keeps_the_running_best_and_remasks_the_rest():
    def script(gen):
        first_done = gen[0] != MASK
        return [
            (2, 0.7 if gen[1] != MASK else 0.6),
            (3, 0.9 if first_done else 0.5),
            (4, 0.8 if first_done else 0.4),
        ]

    r = decode(ScriptModel(script, 3), [[5]], gen_length=3, strategy=build_strategy("rcr", k=1))[0]
    # step 0: position 0 (0.6); step 1: positions 1, 2 (0.9, 0.8) beat position 0 (running 0.6),
    # which is masked again; step 2: position 0 comes back
    assert r.tokens_per_step == [1, 1, 1] and r.extra["remasked"] == 1
    assert r.order == [2, 1, 1] and r.tokens == [2, 3, 4]


def test_rcr_without_better_candidates_never_remasks():
    model = TableModel([peaked(8, 2, c) for c in (0.9, 0.8, 0.7, 0.6)])
    r = decode(model, [[3]], gen_length=4, strategy=build_strategy("rcr", k=2))[0]
    assert "remasked" not in r.extra and r.tokens_per_step == [2, 2]


def test_rcr_ranks_pairwise_exactly_as_top_k():
    # rcr's pairwise ranks against the sort of selection.top_k: ties (the leftmost first), -inf
    # scores, rows without candidates, k from 0 to past the row's width
    from parallelbench.decoding import selection
    from parallelbench.decoding.selection import top_by_rank

    g = torch.Generator().manual_seed(0)
    for trial in range(400):
        b, width = int(torch.randint(1, 6, (1,), generator=g)), int(torch.randint(1, 40, (1,), generator=g))
        scores = torch.randint(0, 4, (b, width), generator=g).float() / 3
        if trial % 3 == 0:
            scores[torch.rand(b, width, generator=g) < 0.2] = float("-inf")
        candidates = torch.rand(b, width, generator=g) < 0.7
        k = torch.randint(0, width + 2, (b,), generator=g)
        assert torch.equal(top_by_rank(scores, candidates, k), selection.top_k(scores, candidates, k))


def wino_script(gen):
    head_done = gen[0] != MASK and gen[1] != MASK
    tail = 0.8 if head_done else 0.2
    return [(2, 0.7), (3, 0.7), (4, tail), (5, tail)]


def test_wino_verifies_drafts_and_remasks_weak_ones():
    model = ScriptModel(wino_script, 4)
    r = decode(model, [[6]], gen_length=4, strategy=build_strategy("wino", wide_threshold=0.6, narrow_threshold=0.9))[0]
    # step 0 drafts 0, 1; step 1 drafts 2, 3 and, verifying 0 and 1 left-one-out (0.7 < 0.9),
    # masks the weakest again (at most new drafts - 1 = 1 of them); step 2 redrafts 0
    assert r.tokens_per_step == [2, 1, 1] and r.extra["remasked"] == 1
    assert r.order == [2, 0, 1, 1] and r.nfe == 3
    # leave-one-out views ride in the same call: batch 1 at step 0, 1 + 2 drafts at step 1
    assert model.calls == [1, 3, 4]
    chunked = ScriptModel(wino_script, 4)
    small_calls = build_strategy("wino")
    small_calls.verify_chunk = 1
    again = decode(chunked, [[6]], gen_length=4, strategy=small_calls)[0]
    assert again.tokens == r.tokens and again.order == r.order and again.nfe == 3
    assert chunked.calls == [1] * 8  # the same 1 + 3 + 4 rows, one per call
    keep_all = decode(ScriptModel(wino_script, 4), [[6]], gen_length=4,
                      strategy=build_strategy("wino", wide_threshold=0.6, narrow_threshold=0.5))[0]
    assert keep_all.tokens_per_step == [2, 2] and "remasked" not in keep_all.extra


class ConstantCausal:
    """A verifier that always predicts `token`."""

    def __init__(self, token: int, vocab: int = 8):
        self.token, self.vocab_size, self.eos_id = token, vocab, 1
        self.calls = 0

    def forward(self, tokens, *, attention_mask=None):
        self.calls += 1
        out = torch.full((*tokens.shape, self.vocab_size), -10.0)
        out[..., self.token] = 10.0
        return out


def test_apd_accepts_the_prefix_where_mixture_and_draft_agree():
    model = TableModel([peaked(8, 2, 0.6)] * 6)
    agree = decode(model, [[3]], gen_length=6, strategy=build_strategy("apd", mixture_weight=0.0, max_lookahead=4),
                   verifier=ConstantCausal(2))[0]
    assert agree.tokens_per_step == [4, 2] and agree.extra["verifier_calls"] == 2
    disagree = decode(model, [[3]], gen_length=6, strategy=build_strategy("apd", mixture_weight=0.0),
                      verifier=ConstantCausal(5))[0]
    assert disagree.tokens_per_step == [1] * 6  # only the forced first draft each step
    trusting = decode(model, [[3]], gen_length=6, strategy=build_strategy("apd", mixture_weight=1.0),
                      verifier=ConstantCausal(5))[0]
    assert trusting.tokens_per_step == [6] and trusting.tokens == [2] * 6


def test_apd_without_a_verifier_says_how_to_give_one():
    with pytest.raises(ValueError, match="verifier"):
        decode(TinyNet(), [[3]], gen_length=4, strategy="apd")


def make_causal():
    return TinyCausal()


def test_apd_verifier_option_loads_a_factory():
    s = build_strategy("apd", verifier="test_decoding_strategies:make_causal")
    r = decode(TinyNet(), [[3]], gen_length=8, strategy=s)[0]
    assert r.num_committed == 8 and r.extra["verifier_calls"] == r.nfe


def test_slowfast_explores_then_sprints_through_the_converged_span():
    model = TableModel([peaked(8, 2, c) for c in (0.95, 0.95, 0.95, 0.95, 0.1, 0.1)])
    r = decode(model, [[3]], gen_length=6, strategy=build_strategy("slowfast", stable_steps=1))[0]
    assert r.tokens_per_step == [1, 3, 1, 1]
    r = decode(model, [[3]], gen_length=6, strategy=build_strategy("slowfast", stable_steps=2))[0]
    assert r.tokens_per_step == [1, 1, 2, 1, 1]


def test_klass_kl_bound_blocks_moving_distributions():
    def drifting(gen):  # same argmax every step, but the confidence moves between steps
        return [(2, 0.95 if gen.count(MASK) % 2 else 0.92)] * 4

    model = ScriptModel(drifting, 4)
    loose = decode(model, [[3]], gen_length=4, strategy=build_strategy("klass", threshold=0.9))[0]
    tight = decode(model, [[3]], gen_length=4, strategy=build_strategy("klass", threshold=0.9, kl_threshold=1e-6))[0]
    assert loose.tokens_per_step == [1, 3]
    assert tight.tokens_per_step == [1, 1, 1, 1]


# ---------------------------------------------------------------- a researcher's own strategy
@dataclass
class EveryOtherOptions(DecodeOptions):
    stride: int = 2


class EveryOther(Strategy):
    """Commit the best candidate plus every `stride`-th candidate after it (a toy rule)."""

    Options = EveryOtherOptions

    def select(self, view, scores):
        rank = torch.cumsum(view.candidates.long(), dim=1) - 1
        return view.candidates & (rank % self.options.stride == 0)


class LeftmostOnly(Strategy):
    def step(self, view):
        rank = torch.cumsum(view.candidates.long(), dim=1) - 1
        return Decision(commit=view.candidates & (rank == 0))


def test_a_strategy_defined_elsewhere_loads_by_module_path():
    s = build_strategy("test_decoding_strategies:EveryOther", stride=3)
    assert s.name == "test_decoding_strategies:EveryOther" and s.params["stride"] == 3
    r = decode(TinyNet(), [[3]], gen_length=9, strategy=s)[0]
    assert r.tokens_per_step == [3, 2, 2, 1, 1]
    l2r = decode(TinyNet(), [[3]], gen_length=5, strategy="test_decoding_strategies:LeftmostOnly")[0]
    assert l2r.order == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="stride"):
        build_strategy("test_decoding_strategies:EveryOther", strid=3)
    with pytest.raises(ValueError, match="module:Class|cannot load"):
        build_strategy("no_such_module:Thing")


def test_the_worked_example_in_the_docs_runs(tmp_path, monkeypatch):
    import re
    import sys
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "strategies.md").read_text()
    module_src = next(b for b in re.findall(r"```python\n(.*?)```", doc, re.S) if b.startswith("# my_module.py"))
    (tmp_path / "my_module.py").write_text(module_src)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("my_module", None)
    s = build_strategy("my_module:RelativeConfidence", ratio=0.9, block_length=8)
    assert s.name == "my_module:RelativeConfidence" and s.params["ratio"] == 0.9
    r = decode(TinyNet(), [[3, 4]], gen_length=16, strategy=s)[0]
    assert r.num_committed == 16 and r.nfe < 16
    with pytest.raises(ValueError, match="ratio"):
        build_strategy("my_module:RelativeConfidence", ratio=2.0)


@pytest.mark.parametrize("seed", range(6))
def test_remdm_full_commit_test_equals_the_division_rule(seed):
    """At remask_at = 1 ReMDM decides "everything committed" without counts; the same rows as the
    float32 share of committed slots against 1 - 1e-9 (rows without editable slots: no)."""
    from types import SimpleNamespace

    g = torch.Generator().manual_seed(seed)
    editable = torch.rand((9, 6), generator=g) < 0.7
    editable[0] = False
    masked = editable & (torch.rand((9, 6), generator=g) < 0.3)
    commit = masked & (torch.rand((9, 6), generator=g) < 0.6)
    view = SimpleNamespace(editable=editable, masked=masked)
    committed = editable & ~(masked & ~commit)
    total = editable.sum(dim=1)
    want = committed.sum(dim=1) / total.masked_fill(total == 0, 1) >= 1.0 - 1e-9
    assert torch.equal(build_strategy("remdm")._committed_enough(view, commit), want)
    assert want.any() and not want.all()
