"""pc-sampler, edit-threshold, prophet and credit: each one's defining behaviour on the ideal model."""

from __future__ import annotations

import itertools
import json

import pytest
import torch
from test_decoding_models import MASK, TinyCausal, TinyNet

from parallelbench.decoding import build_strategy, decode, strategy_names
from parallelbench.models.ideal import IdealModel

NEW = ["pc-sampler", "edit-threshold", "prophet", "credit"]
M, E, V = 1, 2, 16  # mask, EOS, vocabulary size of the hand-made answer sets


def ideal(answers, probs):
    return IdealModel.from_answers([answers], V, mask_id=M, eos_id=E, probs=[probs])


def independent(tops):
    """Positions that do not depend on each other: position i is 4 + i w.p. p_i, else 8 + i."""
    choices = [[(4 + i, p), (8 + i, 1.0 - p)] for i, p in enumerate(tops)]
    answers, probs = [], []
    for combo in itertools.product(*choices):
        answers.append([t for t, _ in combo])
        probs.append(float(torch.tensor([p for _, p in combo], dtype=torch.float64).prod()))
    return ideal(answers, probs)


def run(model, name, gen_length, **params):
    return decode(model, [[3]], gen_length=gen_length, strategy=build_strategy(name, **params))[0]


def test_new_presets_are_registered_listed_and_rebuild_from_params():
    assert set(NEW) <= set(strategy_names())
    for name in NEW:
        s = build_strategy(name)
        assert s.name == name
        assert build_strategy(name, **s.params).params == s.params
    assert build_strategy("pc-sampler").kind == "topk"


@pytest.mark.parametrize("name", NEW)
@pytest.mark.parametrize("params", [{}, {"temperature": 1.0}, {"block_length": 8}])
def test_new_presets_decode_to_completion(name, params):
    res = decode(TinyNet(), [[3, 4, 5], [6]], gen_length=16, strategy=build_strategy(name, **params), seed=3,
                 verifier=TinyCausal())
    for r in res:
        assert MASK not in r.tokens and r.num_committed == 16 == sum(r.tokens_per_step)
        assert len(r.tokens_per_step) == r.nfe >= 1


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("pc-sampler", {"lam": -1}, "lam=-1"),
        ("pc-sampler", {"alpha": 0}, "alpha=0"),
        ("edit-threshold", {"threshold": 0}, "threshold=0"),
        ("edit-threshold", {"edit_threshold": 1.5}, "edit_threshold=1.5"),
        ("prophet", {"gap_mid": -1}, "gap_mid=-1"),
        ("credit", {"decay": 1.0}, "decay=1.0"),
        ("credit", {"exponent": 0}, "exponent=0"),
    ],
)
def test_out_of_range_options_name_the_option_and_the_valid_range(name, params, message):
    with pytest.raises(ValueError, match="valid range") as err:
        build_strategy(name, **params)
    assert message in str(err.value) and "\n" not in str(err.value)


# ---------------------------------------------------------------- pc-sampler
def test_pc_sampler_position_weighting_turns_confidence_order_into_left_to_right():
    model = independent([0.6, 0.7, 0.8, 0.9])  # confidence alone decodes right to left
    assert run(model, "confidence-topk", 4).order == [3, 2, 1, 0]
    assert run(model, "pc-sampler", 4, lam=0.0).order == [3, 2, 1, 0]  # no weighting: confidence order
    # default lam = 0.25: log p_i - 0.25 i falls with i here, so left to right
    assert run(model, "pc-sampler", 4).order == [0, 1, 2, 3]


def test_pc_sampler_suppresses_frequent_tokens(tmp_path):
    model = independent([0.6, 0.7, 0.8, 0.9])
    freq = tmp_path / "freq.json"
    freq.write_text(json.dumps({"7": 1000}))  # position 3's token is everywhere in the reference corpus
    r = run(model, "pc-sampler", 4, lam=0.0, frequencies=str(freq))
    assert r.order == [2, 1, 0, 3]  # the most confident position now comes last
    model.token_frequencies = [0] * 7 + [1000] + [0] * 8  # the same table from the model itself
    assert run(model, "pc-sampler", 4, lam=0.0).order == [2, 1, 0, 3]


def test_pc_sampler_unreadable_frequencies_is_one_line_before_decoding(tmp_path):
    with pytest.raises(ValueError, match="option frequencies=") as err:
        run(independent([0.6, 0.7]), "pc-sampler", 2, frequencies=str(tmp_path / "missing.json"))
    assert "\n" not in str(err.value)


# ---------------------------------------------------------------- prophet
def test_prophet_commits_everything_once_every_gap_clears_the_threshold():
    model = ideal([[4, 4, 4, 4], [5, 5, 5, 5]], [0.5, 0.5])  # one commit settles the rest
    r = run(model, "prophet", 4)
    assert r.tokens_per_step == [1, 3] and r.nfe == 2 and r.extra["early_commit"] == 1
    assert r.tokens in ([4, 4, 4, 4], [5, 5, 5, 5])
    assert run(model, "confidence-topk", 4).nfe == 4  # the base rule alone


def test_prophet_does_not_commit_early_while_one_position_is_open():
    # position 3 stays a coin flip whatever else is committed: never every gap is large
    answers = [[a, a, a, b] for a in (4, 5) for b in (6, 7)]
    r = run(ideal(answers, [0.25] * 4), "prophet", 4)
    assert r.tokens_per_step == [1, 1, 1, 1] and r.extra["early_commit"] == 0


def test_prophet_threshold_is_staged_by_progress():
    # every position is 9:1 (gap ln 9 = 2.2): below the early and middle thresholds, above a late one of 2
    model = independent([0.9] * 3)
    assert run(model, "prophet", 3).tokens_per_step == [1, 1, 1]
    assert run(model, "prophet", 3, gap_mid=2.0).tokens_per_step == [1, 2]
    assert run(model, "prophet", 3, gap_early=2.0).tokens_per_step == [3]


@pytest.mark.parametrize("table", [True, False], ids=["table", "rule"])
def test_prophet_stage_on_integers_equals_the_float_progress(table, monkeypatch):
    """gap_threshold's integer rule against committed / editable in floats, over random rows (masks
    within the editable slots), empty rows (progress 0: the early gap) and every third's edge; looked
    up in the table of every (masks, editable) pair, and computed (regions wider than the table)."""
    from parallelbench.decoding.schedules import prophet
    from parallelbench.decoding.view import StepView

    if not table:
        monkeypatch.setattr(prophet, "STAGE_TABLE_UP_TO", 0)

    strategy = build_strategy("prophet", gap_early=7.0, gap_mid=5.0, gap_late=3.0)
    g = torch.Generator().manual_seed(5)
    b, width = 64, 12
    editable = torch.rand(b, width, generator=g) < 0.8
    editable[:4] = False  # empty rows
    masked = editable & (torch.rand(b, width, generator=g) < torch.rand(b, 1, generator=g))
    editable[4:8], masked[4:8] = True, torch.arange(width) < torch.tensor([[0], [4], [8], [12]])  # 1, 2/3, 1/3, 0 done
    view = StepView(
        logits=torch.zeros(b, width, 3), canvas=torch.where(masked, M, 5), masked=masked, editable=editable,
        block_of=torch.zeros(width, dtype=torch.long), block=torch.zeros(b, dtype=torch.long),
        block_step=torch.zeros(b, dtype=torch.long), step=torch.zeros(b, dtype=torch.long), rows=torch.arange(b),
        rng_keys=torch.arange(b), temperature=0.0, mask_id=M, eos_id=E, num_blocks=1, block_length=width,
        commit_conf=torch.zeros(b, width),
    )
    done = (editable & ~masked).sum(dim=1).double()
    progress = done / editable.sum(dim=1).clamp(min=1).double()
    want = torch.where(progress < 1 / 3, 7.0, torch.where(progress < 2 / 3, 5.0, 3.0)).float()
    assert torch.equal(strategy.gap_threshold(view), want)
    assert want[4:8].tolist() == [3.0, 3.0, 5.0, 7.0] and (want[:4] == 7.0).all()


# ---------------------------------------------------------------- credit
def test_credit_commits_a_stable_position_after_it_accumulates_credit():
    model = independent([0.9] * 6)  # every step: p = 0.9 < 0.94 at every open position
    assert run(model, "confidence-threshold", 6, threshold=0.94).tokens_per_step == [1] * 6
    # fused confidence: 0.935 after one step of credit, 0.946 after two: everything left goes at step 1
    r = run(model, "credit", 6, threshold=0.94)
    assert r.tokens_per_step == [1, 5]
    assert run(model, "credit", 6, threshold=0.94, fusion=0.0).tokens_per_step == [1] * 6  # no credit: plain rule


def test_credit_held_by_a_token_that_is_no_longer_the_top_one_fuses_its_own_probability():
    """A slot whose credit token lost the top place: its fused confidence is the credited token's
    softmax probability p_c boosted as in the module docstring, p_c e^d / (1 - p_c + p_c e^d) with
    d = fusion log(1 + credit), when that beats the top token's; the top token's p otherwise."""
    from parallelbench.decoding.view import StepView

    strategy = build_strategy("credit", threshold=0.99)
    o = strategy.options
    b, width, vocab, mask = 2, 4, 12, 11
    masked = torch.ones(b, width, dtype=torch.bool)
    state = strategy.init_state(b, width, torch.device("cpu"))
    state["credit_token"][:] = 3  # every slot: credit held by token 3 ...
    state["credit"][:] = torch.tensor([[2.0, 1.5, 3.0, 0.05], [4.0, 1.3, 2.0, 6.0]])
    logits = torch.zeros(b, width, vocab)
    logits[..., 5] = 3.0  # ... while token 5 is the top one now (p_5 > p_3)
    logits[..., 3] = torch.tensor([[2.5, 2.9, 1.0, 2.0], [0.0, 2.0, 2.5, 1.5]])
    credit_before = state["credit"].clone()
    view = StepView(
        logits=logits, canvas=torch.full((b, width), mask), masked=masked, editable=torch.ones_like(masked),
        block_of=torch.zeros(width, dtype=torch.long), block=torch.zeros(b, dtype=torch.long),
        block_step=torch.zeros(b, dtype=torch.long), step=torch.zeros(b, dtype=torch.long), rows=torch.arange(b),
        rng_keys=torch.arange(b), temperature=0.0, mask_id=mask, eos_id=1, num_blocks=1, block_length=width,
        commit_conf=torch.zeros(b, width), state=state, focus=masked, focus_masked=True,
    )
    tokens, conf = strategy.fused(view)
    p = torch.softmax(logits.double(), dim=-1)
    p_top = p[..., 5]
    decayed, gain = credit_before.double() * o.decay, p_top ** o.exponent
    held = gain <= decayed  # the larger credit keeps its token: 3 stays where its decayed credit wins
    credit = torch.where(held, decayed, gain)
    p_c = torch.where(held, p[..., 3], p_top)
    boosted = p_c * torch.exp(o.fusion * torch.log1p(credit))
    other = torch.where(held, p_top, 0.0)  # the top token's p where it is not the credited one
    pick = boosted >= other
    want = torch.where(pick, boosted, other) / (1 - p_c + boosted)
    assert (held & pick).any() and (held & ~pick).any() and (~held).any()  # each case is exercised
    assert torch.equal(tokens, torch.where(held & pick, 3, 5))
    assert torch.allclose(conf.double(), want, rtol=1e-5, atol=0)
    assert torch.allclose(state["credit"].double(), credit, rtol=1e-6, atol=0)


# ---------------------------------------------------------------- edit-threshold
class Revisiting:
    """The ideal model, but a committed position is predicted from the rest (it is masked for that
    prediction), as a trained editing model would re-read it, instead of one-hot on itself."""

    def __init__(self, model):
        self.model = model
        self.mask_id, self.eos_id, self.vocab_size = model.mask_id, model.eos_id, model.vocab_size

    def forward(self, canvas, *, attention_mask=None, rows=None):
        out = self.model.forward(canvas, attention_mask=attention_mask, rows=rows)
        g = self.model.gen_length
        start = canvas.shape[1] - g
        for j in range(g):
            pos = start + j
            committed = canvas[:, pos] != self.mask_id
            if committed.any():
                alone = canvas.clone()
                alone[:, pos] = self.mask_id
                loo = self.model.forward(alone, attention_mask=attention_mask, rows=rows)
                out[committed, pos] = loo[committed, pos]
        return out


def edit_scenario():
    # position 0: A .45 (C, D .275); position 1: A .55, B .45; position 2 spread out (max .275)
    A, B, C, D = 4, 5, 6, 7
    answers = [[A, B, 8], [A, B, 9], [C, A, 10], [D, A, 11]]
    return Revisiting(ideal(answers, [0.225, 0.225, 0.275, 0.275]))


def test_edit_threshold_rewrites_a_committed_token_when_the_model_changes_its_mind():
    # step 0 drafts A A (both above 0.4): no answer has that. Step 1 re-reads them: position 1
    # now wants B with probability 1 (gain 1 > 0.6), position 0 only C/D at .5 (gain .5): one edit.
    r = run(edit_scenario(), "edit-threshold", 3, threshold=0.4, edit_threshold=0.6)
    assert r.tokens == [4, 5, 8] and r.extra["edits"] == 1 and r.nfe == 2
    assert r.order[1] == 1  # position 1 was last written at step 1


def test_edit_threshold_of_one_never_edits():
    r = run(edit_scenario(), "edit-threshold", 3, threshold=0.4, edit_threshold=1.0)
    assert r.tokens == [4, 4, 8] and r.extra["edits"] == 0


def test_strategies_command_lists_the_new_presets_with_their_defaults():
    from typer.testing import CliRunner

    from parallelbench.cli import app

    res = CliRunner().invoke(app, ["strategies", "--json"])
    assert res.exit_code == 0, res.output
    rows = {r["name"]: r for r in json.loads(res.output)}
    assert set(NEW) <= set(rows)
    assert rows["prophet"]["options"]["gap_early"] == 7.5 and rows["credit"]["options"]["decay"] == 0.65
    assert rows["pc-sampler"]["kind"] == "topk" and rows["pc-sampler"]["options"]["lam"] == 0.25
    bad = CliRunner().invoke(app, ["strategies", "nope"])
    assert bad.exit_code == 2 and "unknown strategy 'nope'" in bad.output


def test_a_run_refuses_an_unreadable_frequency_file_before_decoding(tmp_path):
    from typer.testing import CliRunner

    from parallelbench.cli import app

    db = tmp_path / "x.db"
    res = CliRunner().invoke(app, ["run", "--model", "ideal", "--tasks", "waiting_line/copy", "--limit", "1",
                                   "--strategy", "pc-sampler", "--param", f"frequencies={tmp_path / 'no.json'}",
                                   "--db", str(db), "--no-report"])
    assert res.exit_code != 0 and "option frequencies=" in res.output and "Traceback" not in res.output
    assert not db.exists()


def test_prophet_early_commit_fills_later_blocks_with_their_top_tokens():
    model = ideal([[4, 4, 4, 4], [5, 5, 5, 5]], [0.5, 0.5])
    r = run(model, "prophet", 4, block_length=2)  # the early commit reaches past the active block
    assert r.tokens_per_step == [1, 3] and r.tokens in ([4, 4, 4, 4], [5, 5, 5, 5])


def test_edit_threshold_fast_path_equals_the_textbook_rule():
    """The gathered, bounded computation makes the same edits as the plain softmax rule."""
    from edit_threshold_reference import MixerNet, PlainEditThreshold

    from parallelbench.decoding import build_strategy, decode

    net = MixerNet(97, seed=3, scale=3.0)
    g = torch.Generator().manual_seed(1)
    prompts = [torch.randint(2, 97, (8,), generator=g).tolist() for _ in range(6)]
    total_edits = 0
    for threshold, edit in ((0.3, 0.1), (0.7, 0.5), (0.2, 0.05)):
        fast = decode(net, prompts, gen_length=16, strategy=build_strategy("edit-threshold", threshold=threshold, edit_threshold=edit))
        plain = decode(net, prompts, gen_length=16, strategy=PlainEditThreshold(threshold=threshold, edit_threshold=edit))
        assert [r.tokens for r in fast] == [r.tokens for r in plain] and [r.nfe for r in fast] == [r.nfe for r in plain]
        total_edits += sum(int(r.extra.get("edits", 0)) for r in fast)
    assert total_edits > 0  # the comparison exercised the edit path
