"""The training path of the tiny model, on a toy configuration: runs, resumes, exports, loads."""

from __future__ import annotations

import json

import pytest
import torch

from parallelbench.models.tiny.train import TrainConfig, train

TOY = dict(
    tasks=["waiting_line/copy", "synthetic_infill/shuffle"], steps=6, batch_size=8, d_model=32, n_layers=1,
    n_heads=2, d_ff=64, chunk_per_task=16, vocab_chunks=1, vocab_samples=32, warmup=2, checkpoint_every=2,
    log_every=1, threads=1,
)


def _weights(folder):
    return torch.load(folder / "model.pt", weights_only=True)


def test_train_exports_a_loadable_model(tmp_path):
    out = train(TrainConfig(out=str(tmp_path / "a"), **TOY), progress=False)
    info = json.loads((out / "config.json").read_text())
    assert info["train"]["steps_done"] == 6 and info["transition"] == "masked"
    log = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [1, 2, 3, 4, 5, 6] and all(r["loss"] > 0 for r in log)

    from parallelbench.decoding import build_strategy
    from parallelbench.models.tiny import load
    from parallelbench.tasks import get_task

    model = load(path=out)
    assert model.name == "tiny"
    samples = get_task("waiting_line/copy").samples(2)
    gens = model.generate(samples, build_strategy("random", k=2), max_new_tokens=32, seed=0)
    assert len(gens) == 2 and all(g.nfe >= 1 for g in gens)


def test_same_seed_same_weights_and_resume_matches(tmp_path):
    straight = train(TrainConfig(out=str(tmp_path / "straight"), **TOY), progress=False)
    again = train(TrainConfig(out=str(tmp_path / "again"), **TOY), progress=False)
    part = train(TrainConfig(out=str(tmp_path / "resumed"), stop_at=3, **TOY), progress=False)
    assert json.loads((part / "config.json").read_text())["train"]["steps_done"] == 3
    resumed = train(TrainConfig(out=str(tmp_path / "resumed"), **TOY), resume=True, progress=False)
    a, b, c = _weights(straight), _weights(again), _weights(resumed)
    for key in a:
        assert torch.equal(a[key], b[key]), key
        assert torch.equal(a[key], c[key]), key


def test_resume_without_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="--resume"):
        train(TrainConfig(out=str(tmp_path / "none"), **TOY), resume=True, progress=False)


def test_warm_start_carries_weights_over_a_changed_vocabulary(tmp_path):
    from parallelbench.models.tiny.model import TinyConfig, TinyDenoiser, alphabetical_ranks
    from parallelbench.models.tiny.train import warm_start
    from parallelbench.models.tokenizer import WordTokenizer

    old = train(TrainConfig(out=str(tmp_path / "old"), **TOY), progress=False)
    old_tok = WordTokenizer.load(old / "tokenizer.json")
    weights = _weights(old)
    name = next(t for t in old_tok.tokens if t.istitle() and len(t) > 3)  # a first name, e.g. "Susan"
    tokens = old_tok.tokens[:4] + ['"' + name, "brand-new"] + old_tok.tokens[4:]
    new_tok = WordTokenizer(tokens, old_tok.data_pieces)
    saved = json.loads((old / "config.json").read_text())["model"]
    cfg = TinyConfig(**{**saved, "vocab_size": len(tokens), "token_rank": alphabetical_ranks(tokens)})
    net = TinyDenoiser(cfg)
    carried = warm_start(net, new_tok, old)
    assert carried["tokens_seeded"] == len(tokens) - 1 and carried["new"] == 0
    state = net.state_dict()
    emb, head = state["tok.weight"], state["head.weight"]
    for t in (name, old_tok.tokens[-1], "[MASK]"):
        assert torch.equal(emb[new_tok.index[t]], weights["tok.weight"][old_tok.index[t]].float())
        assert torch.equal(head[new_tok.index[t]], weights["head.weight"][old_tok.index[t]].float())
    assert torch.equal(emb[new_tok.index['"' + name]], emb[new_tok.index[name]])  # a quoted name starts as the name
    assert torch.equal(state["blocks.0.qkv.weight"], weights["blocks.0.qkv.weight"].float())
    with pytest.raises(FileNotFoundError, match="--init-from"):
        warm_start(net, new_tok, tmp_path)


def test_task_weights_replace_the_recipe_share(tmp_path):
    from parallelbench.models.tiny.data import TASK_WEIGHT, task_weight
    from parallelbench.tasks import get_task

    task = get_task("structured/json_any_order")
    assert task_weight(task) == TASK_WEIGHT["json_any_order"]
    assert task_weight(task, {"json_any_order": 6}) == 6.0 == task_weight(task, {"structured/json_any_order": 6})
    assert task_weight(get_task("waiting_line/copy"), {"json_any_order": 6}) == TASK_WEIGHT["copy"]


def test_train_cli_rejects_a_bad_task_weight_and_a_missing_init_folder(tmp_path):
    from typer.testing import CliRunner

    from parallelbench.cli import app

    bad = CliRunner().invoke(app, ["train", "--out", str(tmp_path / "x"), "--task-weight", "sort"])
    assert bad.exit_code == 2 and "NAME=WEIGHT" in bad.output
    typo = CliRunner().invoke(app, ["train", "--out", str(tmp_path / "x"), "--task-weight", "jsn_any_order=6"])
    assert typo.exit_code == 2 and "jsn_any_order is not a task of this run" in typo.output
    missing = CliRunner().invoke(app, ["train", "--out", str(tmp_path / "x"), "--init-from", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "not a folder" in missing.output


def test_uniform_variant_trains_and_samples(tmp_path):
    out = train(TrainConfig(out=str(tmp_path / "u"), transition="uniform", **TOY), progress=False)
    assert json.loads((out / "config.json").read_text())["transition"] == "uniform"

    from parallelbench.decoding import build_strategy
    from parallelbench.models.tiny import load_uniform
    from parallelbench.tasks import get_task

    model = load_uniform(path=out)
    samples = get_task("synthetic_infill/shuffle").samples(3)
    gens = model.generate(samples, build_strategy("random", k=2), max_new_tokens=32, seed=1)
    assert len(gens) == 3 and all(g.nfe == 16 and sum(g.tokens_per_step) == g.num_tokens for g in gens)

    from parallelbench.models.tiny.uniform import uniform_sample

    tok = model.tokenizer
    templates = [tok.encode_template(s.output_format, 32) for s in samples]
    prompts = [tok.encode_chat(s.messages) for s in samples]
    rows = uniform_sample(model.net, prompts, 32, steps=4, template=templates, temperature=1.0, seed=0)
    for template, row in zip(templates, rows):
        # Formatting tokens of the infilling template never change; item slots never hold [MASK].
        assert all(t == x for t, x in zip(template, row["tokens"]) if t != tok.mask_id)
        assert tok.mask_id not in row["tokens"]
        assert all(o == -1 for t, o in zip(template, row["order"]) if t != tok.mask_id)


class _Spy(torch.nn.Module):
    """Records what the loss feeds the network; predicts uniform logits."""

    mask_id, eos_id, vocab_size = 1, 2, 10

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(()))
        self.seen = None

    def forward(self, canvas, attention_mask=None, positions=None, layout=None):
        self.seen = canvas.clone()
        self.layout = layout
        logits = torch.zeros(*canvas.shape, self.vocab_size) + self.w
        return logits if positions is None else logits[positions]


def _toy_batch():
    canvas = torch.tensor([[5, 6, 7, 8, 9, 2, 2, 2]] * 64)
    answer = torch.zeros_like(canvas, dtype=torch.bool)
    answer[:, 3:] = True
    maskable = answer.clone()
    maskable[:, 4] = False  # e.g. a formatting token of an infilling template
    return {"canvas": canvas, "attention": torch.ones_like(answer), "answer": answer, "maskable": maskable}


def test_masked_loss_masks_only_maskable_answer_positions_and_is_weighted():
    import math

    from parallelbench.models.tiny.train import EOS_WEIGHT, T_MIN, masked_diffusion_loss

    spy, batch = _Spy(), _toy_batch()
    loss = masked_diffusion_loss(spy, batch, torch.Generator().manual_seed(0))
    masked = spy.seen == spy.mask_id
    assert masked.any() and not (masked & ~batch["maskable"]).any()
    # Uniform logits: CE = log V per masked token. With t log-uniform on [T_MIN, 1] and the
    # constant weight ln(1/T_MIN), E[loss] = log V * E[t] * ln(1/T_MIN) * (weighted maskable)
    # / answer, where E[t] * ln(1/T_MIN) = 1 - T_MIN. 64 rows x 4 maskable positions give
    # about 80 masked tokens, a relative spread near 12%; 35% is three spreads.
    expected = math.log(10) * (1 - T_MIN) * (1 + 3 * EOS_WEIGHT) / 5
    assert abs(float(loss.detach()) - expected) < 0.35 * expected


def test_grid_clean_rows_read_the_grid_from_the_clean_answer():
    from parallelbench.models.tiny.train import masked_diffusion_loss

    spy, batch = _Spy(), _toy_batch()
    masked_diffusion_loss(spy, batch, torch.Generator().manual_seed(0))
    assert spy.layout is None  # off by default: the grid is read from the noised canvas
    masked_diffusion_loss(spy, batch, torch.Generator().manual_seed(0), grid_clean=1.0)
    assert (spy.seen == spy.mask_id).any() and torch.equal(spy.layout, batch["canvas"])
    masked_diffusion_loss(spy, batch, torch.Generator().manual_seed(0), grid_clean=0.5)
    clean = (spy.layout == batch["canvas"]).all(1)
    noisy = (spy.layout == spy.seen).all(1)
    assert (clean | noisy).all() and 16 < int((clean & ~noisy).sum()) < 48  # about half of 64 rows


def test_uniform_loss_corrupts_without_mask_tokens():
    from parallelbench.models.tiny.uniform import uniform_diffusion_loss

    spy, batch = _Spy(), _toy_batch()
    spy.cfg = type("C", (), {"pad_id": 0})()
    spy.sep_id = 3
    uniform_diffusion_loss(spy, batch, torch.Generator().manual_seed(0))
    changed = spy.seen != batch["canvas"]
    assert changed.any() and not (changed & ~batch["maskable"]).any()
    assert not (spy.seen == spy.mask_id).any() and not (spy.seen == 3).any()


def test_checkpoints_are_selected_on_a_validation_stream_disjoint_from_the_tests(tmp_path):
    from parallelbench.models.tiny.data import HeldOutGuard, training_tasks, validation_split

    tasks = training_tasks(TOY["tasks"])
    for task in tasks:
        valid = validation_split(task, 8)
        again = validation_split(task, 8)
        test_prompts = {s.prompt for s in task.samples()}
        assert len(valid) == 8 and [s.prompt for s in valid] == [s.prompt for s in again]  # deterministic
        assert not test_prompts & {s.prompt for s in valid}  # never a test sample
        assert all(HeldOutGuard([task]).keep(s) for s in valid)
    out = train(TrainConfig(out=str(tmp_path / "v"), validate_every=3, validate_samples=2, **TOY), progress=False)
    log = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    checks = [r for r in log if "valid_accuracy" in r]
    assert [r["step"] for r in checks] == [3, 6] and all(0.0 <= r["valid_accuracy"] <= 1.0 for r in checks)
    info = json.loads((out / "config.json").read_text())
    chosen = info["selection"]
    best = max(checks, key=lambda r: (r["valid_accuracy"], -r["step"]))  # ties keep the earlier step
    assert chosen["step"] == best["step"] and chosen["valid_accuracy"] == best["valid_accuracy"]
    exported, saved = _weights(out), torch.load(out / "best.pt", weights_only=True)
    for key in exported:
        assert torch.equal(exported[key], saved[key].to(torch.float16)), key
    # without validation nothing is selected: the last step is exported, and config.json says so
    plain = json.loads((train(TrainConfig(out=str(tmp_path / "p"), **TOY), progress=False) / "config.json").read_text())
    assert plain["selection"] == {"rule": "last step (no checkpoint selection)", "step": 6}


def test_accuracy_table_measures_the_test_set_or_the_validation_stream():
    from parallelbench.models.tiny.evaluate import VALIDATION_SIZE, split_samples
    from parallelbench.tasks import get_task

    task = get_task("puzzle/latin_square")
    test = split_samples(task, "test", 5)
    valid = split_samples(task, "validation", 5)
    assert [s.prompt for s in test] == [s.prompt for s in task.samples(5)]
    assert len(valid) == 5 and not {s.prompt for s in valid} & {s.prompt for s in task.samples()}
    assert len(split_samples(task, "validation")) == VALIDATION_SIZE
    with pytest.raises(ValueError, match="validation"):
        split_samples(task, "train")


def test_accuracy_cli_rejects_an_unknown_split():
    from typer.testing import CliRunner

    from parallelbench.cli import app

    result = CliRunner().invoke(app, ["tiny", "accuracy", "--split", "train", "--limit", "1"])
    assert result.exit_code != 0 and "test or validation" in result.output
