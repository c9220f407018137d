"""The ideal model's marginals are exact; its bookkeeping (rows, prompt, noise, fallback) holds."""

import itertools

import pytest
import torch

from parallelbench.models.base import MaskedDiffusionModel
from parallelbench.models.ideal import IMPOSSIBLE, AnswerSet, IdealModel
from parallelbench.models.ideal.synthetic import MASK, synthetic_task

M, E = 0, 4  # mask and EOS ids of the hand-made vocabulary of size 5


def _hand_model(**kw):
    # P(1,2,3) = 1/2, P(1,3,2) = 1/4, P(2,2) = 1/4 (padded with EOS to length 3)
    return IdealModel.from_answers(
        [[[1, 2, 3], [1, 3, 2], [2, 2]]], 5, mask_id=M, eos_id=E, probs=[[0.5, 0.25, 0.25]], **kw
    )


def _probs(model, canvas, **kw):
    return model.forward(torch.tensor(canvas), **kw).softmax(-1)


def test_is_a_masked_diffusion_model():
    assert isinstance(_hand_model(), MaskedDiffusionModel)


def test_marginals_exact_on_hand_made_distribution():
    p = _probs(_hand_model(), [[M, M, M]])[0]
    assert p[0].tolist() == pytest.approx([0, 0.75, 0.25, 0, 0], abs=1e-6)
    assert p[1].tolist() == pytest.approx([0, 0, 0.75, 0.25, 0], abs=1e-6)
    assert p[2].tolist() == pytest.approx([0, 0, 0.25, 0.5, 0.25], abs=1e-6)
    # Given y0 = 1 the (2,2,EOS) answer drops out: y1 = 2 w.p. 2/3.
    p = _probs(_hand_model(), [[1, M, M]])[0]
    assert p[1].tolist() == pytest.approx([0, 0, 2 / 3, 1 / 3, 0], abs=1e-6)
    assert p[2].tolist() == pytest.approx([0, 0, 1 / 3, 2 / 3, 0], abs=1e-6)
    # Committed positions are one-hot on their token.
    assert p[0].tolist() == pytest.approx([0, 1, 0, 0, 0], abs=1e-6)
    # Given y2 = EOS only (2,2,EOS) remains.
    p = _probs(_hand_model(), [[M, M, E]])[0]
    assert p[0].tolist() == pytest.approx([0, 0, 1, 0, 0], abs=1e-6)


def test_inconsistent_canvas_falls_back_to_uniform_over_seen_tokens():
    p = _probs(_hand_model(), [[2, 3, M]])[0]  # no answer starts 2, 3
    assert p[2].tolist() == pytest.approx([0, 0, 1 / 3, 1 / 3, 1 / 3], abs=1e-6)
    p = _probs(_hand_model(), [[3, M, M]])[0]  # 3 never occurs at position 0
    assert p[1].tolist() == pytest.approx([0, 0, 0.5, 0.5, 0], abs=1e-6)


def test_prompt_positions_and_logit_range():
    logits = _hand_model().forward(torch.tensor([[4, 4, M, M, M]]))
    assert logits.shape == (1, 5, 5)
    assert torch.isfinite(logits).all()
    assert (logits[0, :2] == 0).all()
    assert logits.min() >= IMPOSSIBLE - 1


def _brute_marginals(answers, probs, canvas, vocab):
    length = len(canvas)
    fits = [i for i, a in enumerate(answers) if all(c == M or c == a[j] for j, c in enumerate(canvas))]
    total = sum(probs[i] for i in fits)
    out = torch.zeros(length, vocab)
    for i in fits:
        for j in range(length):
            out[j, answers[i][j]] += probs[i] / total
    return out


def test_marginals_match_brute_force_on_random_distributions():
    gen = torch.Generator().manual_seed(0)
    vocab, length = 6, 4
    for trial in range(20):
        num = int(torch.randint(1, 8, (1,), generator=gen))
        answers = torch.randint(1, vocab, (num, length), generator=gen).tolist()
        probs = (torch.rand(num, generator=gen) + 0.1).tolist()
        total = sum(probs)
        probs = [p / total for p in probs]
        model = IdealModel.from_answers([answers], vocab, mask_id=M, eos_id=5, probs=[probs])
        # canvases: a random answer with random positions masked (always consistent)
        for _ in range(5):
            src = answers[int(torch.randint(num, (1,), generator=gen))]
            keep = torch.rand(length, generator=gen) < 0.5
            canvas = [t if k else M for t, k in zip(src, keep.tolist())]
            got = _probs(model, [canvas])[0]
            want = _brute_marginals(answers, probs, canvas, vocab)
            masked = torch.tensor([c == M for c in canvas])
            assert torch.allclose(got[masked], want[masked], atol=1e-5), (trial, canvas)


def test_per_row_answer_sets_follow_rows_argument():
    model = IdealModel.from_answers([[[1, 2]], [[3, 1]]], 5, mask_id=M, eos_id=E)
    canvas = torch.tensor([[M, M], [M, M]])
    p = model.forward(canvas).softmax(-1)
    assert p[0, 0, 1] == pytest.approx(1.0) and p[1, 0, 3] == pytest.approx(1.0)
    # After row 0 finished and was dropped, the engine passes rows=[1].
    p = model.forward(canvas[:1], rows=torch.tensor([1])).softmax(-1)
    assert p[0, 0, 3] == pytest.approx(1.0)


def test_shared_answer_set_many_rows():
    task = synthetic_task("shuffle", 4)
    model = task.model(1000)
    canvas = task.template.repeat(1000, 1)
    canvas[::2, task.item_positions[0]] = 7  # even rows placed item A first
    p = model.forward(canvas).softmax(-1)
    second = task.item_positions[1]
    assert torch.allclose(p[0::2, second, 8:11], torch.full((500, 3), 1 / 3), atol=1e-6)
    assert torch.allclose(p[1::2, second, 7:11], torch.full((500, 4), 1 / 4), atol=1e-6)


def test_noise_is_zero_mean_seeded_and_only_on_possible_masked_tokens():
    task = synthetic_task("replace_random", 5, formatting=False)
    canvas = task.template.repeat(4000, 1)
    canvas[:, 0] = 7
    clean = task.model(4000).forward(canvas)
    noisy = task.model(4000, noise_std=0.5, seed=3).forward(canvas)
    again = task.model(4000, noise_std=0.5, seed=3).forward(canvas)
    assert torch.equal(noisy, again)
    diff = noisy - clean
    possible = clean > IMPOSSIBLE / 2
    assert (diff[:, 0] == 0).all()  # committed position untouched
    assert (diff[~possible] == 0).all()  # impossible tokens stay impossible
    masked_diff = diff[:, 1:][possible[:, 1:]]
    # mean of ~32k N(0, 0.25) draws: 5 standard errors is 5 * 0.5 / sqrt(32000) ~ 0.014
    assert abs(float(masked_diff.mean())) < 5 * 0.5 / masked_diff.numel() ** 0.5
    assert float(masked_diff.std()) == pytest.approx(0.5, rel=0.05)


def test_noise_free_confidence_is_the_exact_marginal_in_float64():
    """Issue 20 item 6: threshold rules decide on this, so (n-1)/n must equal Python's fraction."""
    task = synthetic_task("replace_random", 6, formatting=False)
    canvas = task.template.repeat(300, 1)
    canvas[:100, 0] = 7  # a third of the rows kept item A at position 0
    model = task.model(300, noise_std=0.5, seed=3)
    logits, clean = model.forward_with_confidence(canvas)
    assert torch.equal(logits, task.model(300, noise_std=0.5, seed=3).forward(canvas))  # same noise stream
    assert clean.dtype == torch.float64 and clean.shape == canvas.shape
    assert (clean[:100, 0] == 1.0).all()  # committed
    assert (clean[:100, 1:] == 4 / 5).all() and (clean[100:] == 5 / 6).all()
    assert task.model(300).forward_with_confidence(canvas)[1] is None  # no noise: nothing to separate


def test_answer_set_validation_errors():
    with pytest.raises(ValueError, match="share a length"):
        IdealModel([AnswerSet(torch.tensor([[1, 2]])), AnswerSet(torch.tensor([[1]]))], vocab_size=5, mask_id=0, eos_id=4)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        IdealModel.from_answers([[[9]]], 5, mask_id=0, eos_id=4)
    with pytest.raises(ValueError, match="n <= 9"):
        synthetic_task("shuffle", 10)


@pytest.mark.parametrize("task,count", [("copy", 1), ("replace_index", 1), ("replace_random", 5), ("shuffle", 120)])
def test_synthetic_answer_sets(task, count):
    spec = synthetic_task(task, 5)
    assert spec.answers.shape == (count, 11)
    assert (spec.answers[:, [0, 2, 4, 6, 8, 10]] == spec.template[[0, 2, 4, 6, 8, 10]]).all()
    assert (spec.template[spec.item_positions] == MASK).all()
    assert spec.is_valid(spec.answers).all()
    if task == "shuffle":
        items = spec.answers[:, spec.item_positions]
        assert {tuple(r) for r in items.tolist()} == set(itertools.permutations(range(7, 12)))
