"""Issue 32 item 5: the ideal model answers editing steps, has a block-causal face, and theory
simulate measures how much editing repairs top-2 parallel decoding (closed forms for n = 3, 4)."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from parallelbench.decoding import build_strategy, decode
from parallelbench.decoding.block_grid import BlockGrid, block_causal_bias
from parallelbench.models.ideal import IMPOSSIBLE, IdealModel
from parallelbench.models.ideal.synthetic import BOS, EOS, FIRST_ITEM, synthetic_task
from parallelbench.theory import closed_forms as cf
from parallelbench.theory.simulate import simulate

M, E = 0, 4  # mask and EOS ids of a hand-made vocabulary of size 6
A, B, C, D = range(FIRST_ITEM, FIRST_ITEM + 4)  # items of the synthetic tasks
ANSWERS = [[1, 2, 3], [1, 3, 2], [2, 2, 5], [3, 1, 2]]
WEIGHTS = [0.4, 0.2, 0.3, 0.1]


def hand_model(**kw) -> IdealModel:
    return IdealModel.from_answers([ANSWERS], 6, mask_id=M, eos_id=E, probs=[WEIGHTS], **kw)


def brute_force(canvas: list[int], position: int) -> list[float] | None:
    """P(slot `position` = v | every other slot as on the canvas: written ones fixed, masks summed
    over), by enumeration; None when no answer agrees with the other slots."""
    weights = [0.0] * 6
    for answer, w in zip(ANSWERS, WEIGHTS):
        if all(c == M or c == a for j, (c, a) in enumerate(zip(canvas, answer)) if j != position):
            weights[answer[position]] += w
    total = sum(weights)
    return None if total == 0 else [w / total for w in weights]


CANVASES = [list(c) for c in itertools.product([M, 1, 2, 3, 5], repeat=3)]


@pytest.mark.parametrize("canvas", CANVASES, ids=lambda c: "".join(map(str, c)))
def test_written_slots_get_their_leave_one_out_conditional(canvas):
    """Every canvas over the hand-made tokens (tokens no answer has at a slot included): a written
    slot's distribution is its exact conditional given every other slot; where no answer agrees
    with the other slots the model keeps the written token; masked slots are unchanged by `edits`."""
    with_edits = hand_model(edits=True).forward(torch.tensor([[9 % 6, *canvas]])).softmax(-1)[0, 1:]
    without = hand_model().forward(torch.tensor([[9 % 6, *canvas]])).softmax(-1)[0, 1:]
    for j, token in enumerate(canvas):
        if token == M:
            assert with_edits[j].tolist() == pytest.approx(without[j].tolist(), abs=1e-6)
            continue
        want = brute_force(canvas, j)
        if want is None:
            want = [1.0 if v == token else 0.0 for v in range(6)]
        assert with_edits[j].tolist() == pytest.approx(want, abs=1e-6), (canvas, j)
        assert without[j].tolist() == pytest.approx([1.0 if v == token else 0.0 for v in range(6)], abs=1e-6)


def test_leave_one_out_logits_are_finite_and_noise_breaks_ties_at_written_slots():
    model = hand_model(edits=True, noise_std=1e-3, seed=0)
    logits = model.forward(torch.tensor([[5, 2, M, M]] * 200))  # slot 0 given nothing else: 1 (.7) 2 (.3)
    assert torch.isfinite(logits).all() and logits.min() >= IMPOSSIBLE - 1
    tie = synthetic_task("shuffle", 3, formatting=False).model(400, noise_std=1e-3, edits=True)
    first = tie.forward(torch.tensor([[BOS, A, M, M]] * 400))[:, 1].argmax(-1)  # written A: A, B, C equally likely
    counts = torch.bincount(first, minlength=C + 1)[A : C + 1]
    assert counts.min() > 90, counts  # 400 draws of 3 equal options: about 133 each


# ---------------------------------------------------------------------- block-causal face
def grid_call(model: IdealModel, answer_canvas: torch.Tensor, block: int):
    """Lay `answer_canvas` [b, L] out as decode() would (prompt [BOS]) and call the block face."""
    b, length = answer_canvas.shape
    grid = BlockGrid.build(torch.ones(b, dtype=torch.long), length, block)
    canvas, _, real, positions = grid.layout(torch.full((b, 1), BOS), torch.ones(b, 1, dtype=torch.bool),
                                             answer_canvas, EOS, M)
    blk = grid.blocks_of(real, positions)
    bias = block_causal_bias(real, blk, 0, canvas.shape[1])
    logits = model.forward(canvas, attention_mask=real, position_ids=positions, attention_bias=bias)
    cols = grid.head_width + grid.output_columns(torch.device("cpu"))
    return logits.gather(1, cols.unsqueeze(-1).expand(-1, -1, logits.shape[-1]))


def test_block_face_with_one_block_equals_the_canvas_face():
    spec = synthetic_task("shuffle", 4, formatting=False)
    block = spec.model(1, block_causal=True, edits=True)
    canvas = spec.model(1, edits=True)
    assert block.block_causal is True and block.default_block_length == 1 + 4 and block.block_size is None
    for state in ([M, M, M, M], [A, M, B, M], [A, A, M, M], [A, B, C, D], [B, A, D, C], [A, 5, M, M]):
        x = torch.tensor([state])
        want = canvas.forward(torch.cat([torch.full((1, 1), BOS), x], 1))[:, 1:]
        got = grid_call(block, x, block.default_block_length)
        assert torch.equal(got[..., : canvas.vocab_size], want)
        assert (got[..., canvas.vocab_size :] == IMPOSSIBLE).all()  # DELETE and SPLIT: never predicted
    assert (block.delete_token_id, block.split_token_id) == (canvas.vocab_size, canvas.vocab_size + 1)


def test_block_face_honours_the_attention_bias():
    """Blocks of 2 over shuffle n = 4 (prompt [BOS]): slot 0 sits in the prompt's block, slots
    1-2 in the next, slot 3 in the last; a slot predicts from the slots its block sees, the later
    ones count as masked; the grid's extra slots after the answer predict EOS."""
    spec = synthetic_task("shuffle", 4, formatting=False)
    block, canvas = spec.model(1, block_causal=True, edits=True), spec.model(1, edits=True)
    state = torch.tensor([[A, B, M, D]])
    got = grid_call(block, state, 2)
    for slot, visible in ((0, [A, M, M, M]), (1, [A, B, M, M]), (2, [A, B, M, M]), (3, [A, B, M, D])):
        full = canvas.forward(torch.cat([torch.full((1, 1), BOS), torch.tensor([visible])], 1))[0, 1 + slot]
        assert torch.equal(got[0, slot, : canvas.vocab_size], full), slot
    b = 1
    grid = BlockGrid.build(torch.ones(b, dtype=torch.long), 4, 4)  # region of 8 columns: 3 slots past the answer
    c, _, real, pos = grid.layout(torch.full((1, 1), BOS), torch.ones(1, 1, dtype=torch.bool), state, EOS, M)
    out = block.forward(c, attention_mask=real, position_ids=pos,
                        attention_bias=block_causal_bias(real, grid.blocks_of(real, pos), 0, c.shape[1]))
    assert (out[0, grid.head_width + 5 :].argmax(-1) == EOS).all()


def test_a_block_causal_decode_runs_on_the_block_face():
    spec = synthetic_task("shuffle", 3)
    model = spec.model(64, noise_std=1e-3, block_causal=True)
    out = decode(model, torch.full((64, 1), BOS), gen_length=spec.answers.shape[1],
                 strategy=build_strategy("confidence-topk", k=1), template=spec.template.repeat(64, 1))
    assert spec.is_valid(torch.tensor([r.tokens for r in out])).all()  # one by one never fails


# ---------------------------------------------------------------------- repair under the exact model
def _within(measured: float, analytic: float, samples: int) -> bool:
    """Within 3 standard errors of a binomial at the analytic value (plus half a count)."""
    se = math.sqrt(max(analytic * (1 - analytic), 0.0) / samples)
    return abs(measured - analytic) <= 3 * se + 0.5 / samples


EDITS = dict(threshold=1.0, min_k=2, edit_threshold=0.1)


@pytest.mark.parametrize("n,post", [(3, 0), (3, 3), (4, 0), (4, 4)])
def test_closed_form_of_top2_with_edits_equals_simulation(n, post):
    samples = 6000
    result = simulate("shuffle", n, "edit-threshold", samples=samples, seed=n + post, post_steps=post, **EDITS)
    form = cf.shuffle_edit_top2(n, 0.1)
    assert result.analytic == pytest.approx(form["final"])
    assert _within(result.measured, form["final"], samples), (result.measured, form)
    x = result.extra
    assert x["recorded"] == samples
    assert _within(x["unmask_accuracy"], form["unmask"], samples)
    assert _within(x["repaired"], form["repaired"], samples) and x["broken"] == 0.0
    if post == 0:  # two edits per duplicate drafted while masks remain
        assert x["mean_edits"] == pytest.approx(form["mean_edits"], abs=3 * math.sqrt(form["mean_edits"] * 2 / samples))


def test_fractions_of_the_closed_forms():
    assert cf.shuffle_edit_top2(3, 0.1)["final"] == pytest.approx(13 / 18)
    assert cf.shuffle_edit_top2(4, 0.1)["final"] == pytest.approx(19 / 48)
    assert cf.shuffle_edit_top2(3, 0.6)["final"] == pytest.approx(cf.shuffle_topk_accuracy(3, 2))  # E too high: no edit
    assert cf.shuffle_edit_top2(6, 0.1) is None  # not derived
    assert cf.edit_rule_idle(5, 0.5) and not cf.edit_rule_idle(5, 0.4)  # odd n: the last step is one slot (r = 2)


def test_an_edit_threshold_too_high_to_edit_leaves_top2():
    samples = 4000
    result = simulate("shuffle", 5, "edit-threshold", samples=samples, seed=1, threshold=1.0, min_k=2,
                      edit_threshold=0.6)
    assert result.analytic == pytest.approx(cf.shuffle_topk_accuracy(5, 2))
    assert _within(result.measured, result.analytic, samples) and result.extra["mean_edits"] == 0.0


def test_copy_needs_no_repair():
    result = simulate("copy", 6, "edit-threshold", samples=500, post_steps=2, **EDITS)
    assert result.measured == 1.0 and result.analytic == 1.0
    assert result.extra["unmask_accuracy"] == 1.0 and result.extra["mean_edits"] == 0.0


def test_simulate_cli_prints_the_repair_line():
    from typer.testing import CliRunner

    from parallelbench.cli import app

    res = CliRunner().invoke(app, ["theory", "simulate", "--task", "shuffle", "--n", "3", "--strategy", "edit-threshold",
                                   "--threshold", "1", "--param", "min_k=2", "--param", "edit_threshold=0.1",
                                   "--samples", "2000"])
    assert res.exit_code == 0, res.output
    assert "analytic 0.7222" in res.output and "at unmasking 0.6" in res.output and "mean edits 0.6" in res.output
    bad = CliRunner().invoke(app, ["theory", "simulate", "--strategy", "edit-threshold", "--param", "min_k"])
    assert bad.exit_code == 2 and "NAME=VALUE" in bad.output


def test_indel_threshold_runs_on_the_block_face_and_its_loop_escape_repairs_shuffle():
    """theory simulate picks the block-causal face for indel-threshold. Without post-edit rounds
    (E = 0.9: no certain edit while masks remain) it is top-2; with them its loop escape repairs
    many rows (n = 4: 0.375 -> about 0.84) and breaks none; edit-threshold with the same
    confidence rule and no escape repairs none."""
    samples = 3000
    plain = simulate("shuffle", 4, "indel-threshold", samples=samples, seed=2, threshold=1.0, min_k=2,
                     edit_threshold=0.9, post_steps=0)
    assert _within(plain.measured, cf.shuffle_topk_accuracy(4, 2), samples) and plain.extra["mean_edits"] == 0.0
    rounds = simulate("shuffle", 4, "indel-threshold", samples=samples, seed=3, threshold=1.0, min_k=2,
                      edit_threshold=0.9, post_steps=4)
    assert rounds.extra["recorded"] == samples and rounds.extra["broken"] == 0.0
    assert rounds.measured > 0.75 and rounds.extra["repaired"] > 0.4
    control = simulate("shuffle", 4, "edit-threshold", samples=samples, seed=3, threshold=1.0, min_k=2,
                       edit_threshold=0.9, edit_rule="confidence", post_steps=4)
    assert control.extra["repaired"] == 0.0 and _within(control.measured, cf.shuffle_topk_accuracy(4, 2), samples)
