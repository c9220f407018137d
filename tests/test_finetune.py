"""`parallelbench finetune`: tiny full fine-tune, LoRA on an hf: stand-in, data split, resume, bad input.

Every run here is a few optimiser steps on a few dozen samples with one CPU thread, so the
file takes well under a minute; the measured before/after figure lives in
docs/beyond-decoding.md.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from typer.testing import CliRunner  # noqa: E402

from parallelbench.cli import app  # noqa: E402
from parallelbench.models import load_model  # noqa: E402
from parallelbench.models.finetune.data import SEED_BASE, SplitError, check_split, make_splits, split_seed  # noqa: E402
from parallelbench.tasks import get_task  # noqa: E402
from parallelbench.tasks.base import Sample  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)
runner = CliRunner()
QUICK = ["--train-samples", "32", "--val-samples", "4", "--batch-size", "16", "--threads", "1", "--no-progress"]


def _invoke(*args: str):
    return runner.invoke(app, ["finetune", *args])


def _ok(result) -> None:
    """Exit 0, else the output and the exception's traceback (CliRunner keeps it in exc_info)."""
    if result.exit_code != 0:
        import traceback

        trace = "".join(traceback.format_exception(*result.exc_info)) if result.exc_info else ""
        raise AssertionError(f"exit {result.exit_code}\n{result.output}\n{trace}")


def _one_line_error(result) -> str:
    text = result.output.strip()
    assert result.exit_code == 2, text
    assert "Traceback" not in text
    # transformers' own weight-loading bar may come first
    lines = [line for line in text.splitlines() if line.strip() and "Loading weights" not in line]
    assert lines[0].startswith("error:"), text
    return " ".join(line.strip() for line in lines)  # Rich may wrap the one line at the console width


# ---------------------------------------------------------------------- data split
def test_splits_are_disjoint_from_the_test_prompts_and_each_other() -> None:
    tasks = [get_task("waiting_line/sort"), get_task("waiting_line/copy")]
    splits = make_splits(tasks, 300, 60, seed=3)
    assert len(splits.train) == 600 and len(splits.val) == 120
    test = {s.prompt for t in tasks for s in t.samples()}
    assert not test & {s.prompt for s in splits.train + splits.val}
    assert not {s.prompt for s in splits.train} & {s.prompt for s in splits.val}
    assert all(s.id.split("/")[2] in ("train", "val") for s in splits.train + splits.val)
    assert min(split_seed(t.id, sp, p, 3) for t in tasks for sp in ("train", "val") for p in range(50)) >= SEED_BASE
    assert all(t.params.seed < SEED_BASE for t in tasks)  # test sets use small seeds
    # same seed, same data; another seed, other data
    assert make_splits(tasks[:1], 20, 5, seed=3).fingerprint() == make_splits(tasks[:1], 20, 5, seed=3).fingerprint()
    assert make_splits(tasks[:1], 20, 5, seed=3).fingerprint() != make_splits(tasks[:1], 20, 5, seed=4).fingerprint()


def test_check_split_catches_a_leaked_test_prompt() -> None:
    task = get_task("waiting_line/copy")
    splits = make_splits([task], 10, 3)
    splits.train.append(task.samples(1)[0])
    with pytest.raises(SplitError, match="equal a test prompt"):
        check_split(splits, [task])
    splits.train.pop()
    splits.val.append(splits.train[0])
    with pytest.raises(SplitError, match="equal a training prompt"):
        check_split(splits, [task])


# ---------------------------------------------------------------------- tiny
@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("ft")
    out, data = root / "sort", root / "data"
    result = _invoke("--model", "tiny", "--tasks", "waiting_line/sort", "--out", str(out), "--max-steps", "2",
                     "--val-decode", "2", "--dump-data", str(data), *QUICK)
    _ok(result)
    return out, data, result


def test_tiny_finetune_loads_as_tiny_dir_and_decodes(tiny_run) -> None:
    out, _, result = tiny_run
    assert json.loads(result.stdout.strip().splitlines()[-1])["steps"] == 2
    record = json.loads((out / "finetune.json").read_text())
    assert record["base"] == "tiny" and record["tasks"] == ["waiting_line/sort"] and record["steps"] == 2
    assert [h["epoch"] for h in record["history"]] == [0, 1]
    assert all(0.0 <= h["val_accuracy"] <= 1.0 for h in record["history"])
    model = load_model(f"tiny:{out}")
    base = load_model("tiny")
    v = model.versions()
    assert v["finetune.base"] == "tiny" and v["finetune.tasks"] == "waiting_line/sort"
    assert v["tiny.weights"] != base.versions()["tiny.weights"]
    assert v["finetune.base_weights"] == base.versions()["tiny.weights"]
    sample = get_task("waiting_line/sort").samples(1)
    gen = model.generate(sample, "confidence-topk", max_new_tokens=32)[0]
    assert gen.text and gen.nfe > 0
    changed = [k for k, p in model.net.state_dict().items() if not torch.equal(p, base.net.state_dict()[k])]
    assert changed  # the weights moved


def test_tiny_dir_runs_through_parallelbench_run(tiny_run, tmp_path: Path, monkeypatch) -> None:
    out, _, _ = tiny_run
    monkeypatch.chdir(tmp_path)  # `run` keeps its results under the current folder
    result = runner.invoke(app, ["run", "--model", f"tiny:{out}", "--tasks", "waiting_line/sort", "--limit", "2",
                                 "--strategy", "confidence-topk", "--k", "1"])
    _ok(result)
    assert "2 rows added" in " ".join(result.output.split())


def test_output_says_the_split_was_checked_and_dumps_jsonl(tiny_run) -> None:
    _, data, result = tiny_run
    said = " ".join(result.output.split())
    assert "none of them is among the 100 test prompts" in said
    train = [Sample.from_dict(json.loads(line)) for line in (data / "train.jsonl").read_text().splitlines()]
    val = [Sample.from_dict(json.loads(line)) for line in (data / "val.jsonl").read_text().splitlines()]
    assert len(train) == 32 and len(val) == 4
    assert {s.task for s in train + val} == {"waiting_line/sort"}
    test = {s.prompt for s in get_task("waiting_line/sort").samples()}
    assert not test & {s.prompt for s in train + val}


def test_a_run_folder_is_not_overwritten(tiny_run) -> None:
    out, _, _ = tiny_run
    before = (out / "model.pt").read_bytes()
    msg = _one_line_error(_invoke("--model", "tiny", "--tasks", "waiting_line/sort", "--out", str(out), *QUICK))
    assert "--resume" in msg and (out / "model.pt").read_bytes() == before


def test_a_model_folder_is_never_written_over(tmp_path: Path) -> None:
    from parallelbench.models.tiny import shipped_files

    folder = tmp_path / "base"
    folder.mkdir()
    for f, name in zip(shipped_files("masked-"), ("config.json", "model.pt", "tokenizer.json")):
        shutil.copyfile(f, folder / name)
    before = (folder / "model.pt").read_bytes()
    msg = _one_line_error(_invoke("--model", f"tiny:{folder}", "--tasks", "waiting_line/copy", "--out", str(folder), *QUICK))
    assert "already holds a model" in msg and (folder / "model.pt").read_bytes() == before


def test_tiny_dir_of_the_other_variant_is_refused(tiny_run) -> None:
    out, _, _ = tiny_run
    with pytest.raises(ValueError, match="load it as tiny:"):
        load_model(f"tiny-uniform:{out}")


def test_resume_ends_with_the_weights_of_an_uninterrupted_run(tmp_path: Path) -> None:
    from parallelbench.models.finetune.loop import FinetuneConfig
    from parallelbench.models.finetune.train import finetune

    cfg = dict(base="tiny", tasks=["waiting_line/copy"], train_samples=32, val_samples=4, epochs=2,
               batch_size=16, lr=3e-4, warmup=0.25, val_decode=0, seed=1)
    finetune(FinetuneConfig(**cfg), tmp_path / "whole", progress=False)
    part = finetune(FinetuneConfig(**cfg, stop_after=1), tmp_path / "part", progress=False)
    assert part["complete"] is False and part["steps"] == 2 and not (tmp_path / "part" / "model.pt").exists()
    result = _invoke("--model", "tiny", "--tasks", "waiting_line/copy", "--out", str(tmp_path / "part"), "--resume",
                     "--threads", "1", "--no-progress")
    _ok(result)
    whole = torch.load(tmp_path / "whole" / "model.pt", weights_only=True)
    resumed = torch.load(tmp_path / "part" / "model.pt", weights_only=True)
    assert whole.keys() == resumed.keys()
    assert all(torch.equal(whole[k], resumed[k]) for k in whole)
    record = json.loads((tmp_path / "part" / "finetune.json").read_text())
    assert record["steps"] == 4 and [h["epoch"] for h in record["history"]] == [0, 1, 2]


# ---------------------------------------------------------------------- bad input: one line, nothing written
@pytest.mark.parametrize("args, expected", [
    (["--model", "api:gpt-4o"], "no trainable path"),
    (["--model", "ideal"], "no trainable path"),
    (["--model", "tiny", "--tasks", "waiting_line/sorting"], "unknown task"),
    (["--model", "tiny:/nonexistent/folder"], "missing"),
    (["--model", "tiny", "--rank", "8"], "LoRA"),
    (["--model", "tiny", "--tasks", "text_writing/paraphrasing"], "without training on the test set"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path, args, expected) -> None:
    out = tmp_path / "out"
    if "--tasks" not in args:
        args = [*args, "--tasks", "waiting_line/copy"]
    msg = _one_line_error(_invoke(*args, "--out", str(out), "--dump-data", str(tmp_path / "d"), *QUICK))
    assert expected in msg
    assert not out.exists() and not (tmp_path / "d").exists()


# ---------------------------------------------------------------------- hf: LoRA on a stand-in
STANDIN = Path(__file__).with_name("finetune_standin_code.py")
SPECIALS = ["<pad>", "<|mask|>", "<|endoftext|>", "<|eot_id|>", "<unk>", "<|start|>"]


def _standin(folder: Path, seed: int) -> Path:
    import sys

    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    sys.path.insert(0, str(STANDIN.parent))
    import finetune_standin_code as code

    folder.mkdir(parents=True)
    task = get_task("waiting_line/copy")
    words = {w for s in task.samples() for text in (s.prompt, s.answer) for w in text.split()}
    vocab = {t: i for i, t in enumerate(SPECIALS + sorted(words | {"user", "assistant"}))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<|endoftext|>",
                                   mask_token="<|mask|>", unk_token="<unk>",
                                   additional_special_tokens=["<|eot_id|>", "<|start|>"])
    fast.chat_template = ("{% for m in messages %}<|start|> {{ m['role'] }} {{ m['content'] }} <|eot_id|> {% endfor %}"
                          "{% if add_generation_prompt %}<|start|> assistant {% endif %}")
    fast.save_pretrained(folder)
    torch.manual_seed(seed)
    code.FtStandInLM(code.FtStandInConfig(vocab_size=len(vocab), mask_token_id=1)).save_pretrained(folder)
    shutil.copy(STANDIN, folder / "modeling_ftstandin.py")
    cfg = json.loads((folder / "config.json").read_text())
    cfg["auto_map"] = {"AutoConfig": "modeling_ftstandin.FtStandInConfig", "AutoModel": "modeling_ftstandin.FtStandInLM"}
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


OPTS = {"family": "llada", "trust_remote_code": "true", "device": "cpu"}
OPT_ARGS = [a for k, v in OPTS.items() for a in ("--model-opt", f"{k}={v}")]


@pytest.fixture(scope="module")
def lora_run(tmp_path_factory):
    pytest.importorskip("peft")
    pytest.importorskip("transformers")
    root = tmp_path_factory.mktemp("lora")
    base, other = _standin(root / "base", 0), _standin(root / "other", 1)
    out = root / "adapter"
    result = _invoke("--model", f"hf:{base}", *OPT_ARGS, "--tasks", "waiting_line/copy", "--out", str(out),
                     "--max-steps", "3", "--val-decode", "2", "--rank", "4", "--alpha", "8", "--lr", "1e-2",
                     "--grad-accum", "2", *QUICK)
    _ok(result)
    return base, other, out, result


def test_lora_adapter_is_saved_with_the_paper_targets(lora_run) -> None:
    _, _, out, _ = lora_run
    config = json.loads((out / "adapter_config.json").read_text())
    assert sorted(config["target_modules"]) == ["k_proj", "q_proj", "v_proj"]
    assert config["r"] == 4 and config["lora_alpha"] == 8
    assert (out / "adapter_model.safetensors").exists()
    record = json.loads((out / "finetune.json").read_text())
    assert record["kind"] == "hf" and record["steps"] == 3 and record["config"]["grad_accum"] == 2
    assert record["lora_mode"] == "modules"  # the stand-in calls its projection modules


def test_lora_defaults_are_the_papers() -> None:
    from parallelbench.models.finetune.defaults import DEFAULTS

    assert DEFAULTS["hf"] == {**DEFAULTS["hf"], "train_samples": 20_000, "val_samples": 5_000, "epochs": 10,
                              "batch_size": 32, "lr": 1e-5, "warmup": 0.05, "rank": 128, "alpha": 256, "dropout": 0.05}


def test_adapter_loads_on_its_base_and_changes_the_logits(lora_run) -> None:
    base, _, out, _ = lora_run
    plain = load_model(f"hf:{base}", **OPTS)
    tuned = load_model(f"hf:{base}", **OPTS, adapter=str(out))
    v = tuned.versions()
    assert v["adapter.base"] == f"hf:{base}" and v["adapter.tasks"] == "waiting_line/copy" and len(v["adapter.weights"]) == 16
    ids = torch.tensor([plain.tokenizer.encode_chat(get_task("waiting_line/copy").samples(1)[0].messages) + [1] * 8])
    a, b = plain.net(ids), tuned.net(ids)
    assert a.shape == b.shape and not torch.allclose(a, b)
    gen = tuned.generate(get_task("waiting_line/copy").samples(2), "confidence-topk", max_new_tokens=8)
    assert len(gen) == 2 and all(g.nfe > 0 for g in gen)


def test_adapter_for_another_base_is_refused_in_one_line(lora_run, tmp_path: Path, monkeypatch) -> None:
    _, other, out, _ = lora_run
    from parallelbench.models import ModelSpecError

    with pytest.raises(ModelSpecError, match="was fine-tuned from hf:") as err:
        load_model(f"hf:{other}", **OPTS, adapter=str(out))
    assert "\n" not in str(err.value)
    monkeypatch.chdir(tmp_path)  # `run` keeps its results under the current folder
    result = runner.invoke(app, ["run", "--model", f"hf:{other}", *OPT_ARGS, "--model-opt", f"adapter={out}",
                                 "--tasks", "waiting_line/copy", "--limit", "1", "--strategy", "confidence-topk", "--k", "1"])
    assert result.exit_code != 0 and "was fine-tuned from" in " ".join(result.output.split())
    with pytest.raises(ModelSpecError, match="not an adapter"):
        load_model(f"hf:{other}", **OPTS, adapter=str(other))


def test_finetune_refuses_a_model_without_qkv_projections(tmp_path: Path) -> None:
    pytest.importorskip("peft")
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from test_models_hf import standin_checkpoint  # a fused-qkv stand-in: nothing for LoRA to target

    ckpt = standin_checkpoint(tmp_path / "fused", "llada")
    msg = _one_line_error(_invoke("--model", f"hf:{ckpt}", *OPT_ARGS, "--tasks", "waiting_line/copy",
                                  "--out", str(tmp_path / "o"), *QUICK))
    assert "q_proj/k_proj/v_proj" in msg and not (tmp_path / "o").exists()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_lora_on_gpu_trains_in_bf16_and_loads(tmp_path: Path) -> None:
    """On a GPU the base loads in bf16, the adapter trains in fp32 under bf16 autocast."""
    pytest.importorskip("peft")
    from parallelbench.models.finetune.lora import LoraBackend

    base = _standin(tmp_path / "base", 0)
    opts = {"family": "llada", "trust_remote_code": "true", "device": "cuda"}
    backend = LoraBackend(f"hf:{base}", opts, rank=8, alpha=16, dropout=0.05)
    assert backend.autocast and next(backend.net.model.get_base_model().parameters()).dtype == torch.bfloat16
    assert all(p.dtype == torch.float32 for p in backend.parameters())
    out = tmp_path / "adapter"
    result = _invoke("--model", f"hf:{base}", *[a for k, v in opts.items() for a in ("--model-opt", f"{k}={v}")],
                     "--tasks", "waiting_line/copy", "--out", str(out), "--max-steps", "4", "--val-decode", "4",
                     "--lr", "1e-2", "--rank", "8", "--alpha", "16", "--grad-accum", "2", *QUICK)
    _ok(result)
    record = json.loads((out / "finetune.json").read_text())
    assert all(h.get("loss") is None or h["loss"] == h["loss"] for h in record["history"])  # finite, not NaN
    tuned = load_model(f"hf:{base}", **opts, adapter=str(out))
    plain = load_model(f"hf:{base}", **opts)
    ids = torch.tensor([plain.tokenizer.encode_chat(get_task("waiting_line/copy").samples(1)[0].messages) + [1] * 8],
                       device="cuda")
    assert not torch.allclose(plain.net(ids).float(), tuned.net(ids).float())
    gens = tuned.generate(get_task("waiting_line/copy").samples(4), "confidence-topk", max_new_tokens=32)
    assert all(g.nfe > 0 for g in gens)


@pytest.mark.parametrize("family", ["llada", "dream"])
def test_lora_on_the_native_implementation(tmp_path: Path, family: str) -> None:
    """Real LLaDA / Dream checkpoints load natively (layers q/k/v per block): LoRA targets those,
    trains through the native forward with gradients, and the adapter loads on that base only."""
    pytest.importorskip("peft")
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    import native_ckpt as nc

    base = nc.write_checkpoint(tmp_path / "base", family, n_layers=1) if family == "llada" else \
        nc.write_checkpoint(tmp_path / "base", family, num_hidden_layers=1)
    other = nc.write_checkpoint(tmp_path / "other", family, seed=5)
    out = tmp_path / "adapter"
    result = _invoke("--model", f"hf:{base}", "--model-opt", "device=cpu", "--tasks", "waiting_line/copy",
                     "--out", str(out), "--max-steps", "2", "--val-decode", "1", "--rank", "4", "--alpha", "8",
                     "--lr", "1e-2", *QUICK)
    _ok(result)
    assert sorted(json.loads((out / "adapter_config.json").read_text())["target_modules"]) == ["k", "q", "v"]
    assert not nc.code_ran(base)
    plain = load_model(f"hf:{base}", device="cpu")
    tuned = load_model(f"hf:{base}", device="cpu", adapter=str(out))
    ids = torch.tensor([plain.tokenizer.encode_chat(get_task("waiting_line/copy").samples(1)[0].messages) + [plain.net.mask_id] * 4])
    assert not torch.allclose(plain.net(ids).float(), tuned.net(ids).float())
    assert tuned.versions()["adapter.base"] == f"hf:{base}"
    from parallelbench.models import ModelSpecError

    with pytest.raises(ModelSpecError, match="was fine-tuned from"):
        load_model(f"hf:{other}", device="cpu", adapter=str(out))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_lora_on_gpu_through_the_native_implementation(tmp_path: Path) -> None:
    pytest.importorskip("peft")
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    import native_ckpt as nc

    base = nc.write_checkpoint(tmp_path / "base", "llada")
    out = tmp_path / "adapter"
    result = _invoke("--model", f"hf:{base}", "--model-opt", "device=cuda", "--tasks", "waiting_line/copy",
                     "--out", str(out), "--max-steps", "4", "--val-decode", "4", "--rank", "8", "--alpha", "16",
                     "--lr", "1e-2", "--grad-accum", "4", *QUICK)
    _ok(result)
    record = json.loads((out / "finetune.json").read_text())
    assert record["steps"] == 4 and record["history"][-1]["loss"] == record["history"][-1]["loss"]
    tuned = load_model(f"hf:{base}", device="cuda", adapter=str(out))
    assert tuned.versions()["dtype"] == "bfloat16"
    gens = tuned.generate(get_task("waiting_line/copy").samples(4), "confidence-topk", max_new_tokens=32)
    assert all(g.nfe > 0 for g in gens)


def test_native_lora_runs_through_peft_and_matches_the_merged_adapter(tmp_path: Path) -> None:
    """The native blocks call their q/k/v modules once peft wraps them, so peft's own LoRA runs
    (gradients reach the adapter); the saved adapter, merged at load, gives the trained logits."""
    pytest.importorskip("peft")
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    import native_ckpt as nc

    from parallelbench.models.finetune.lora import LoraBackend

    base = nc.write_checkpoint(tmp_path / "base", "llada", n_layers=1)
    backend = LoraBackend(f"hf:{base}", {"device": "cpu"}, rank=4, alpha=8, dropout=0.0)
    assert backend.mode == "modules"
    ids = torch.tensor([backend.tok.encode_chat([{"role": "user", "content": "Copy the list : Susan Fox"}])
                        + [backend.net.mask_id] * 4])
    plain = backend.net(ids).clone()
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in backend.peft.named_parameters():
            if "lora_B" in name:
                p.normal_(0.0, 0.5)
    backend.train_mode(False)
    trained = backend.net(ids)
    assert not torch.allclose(plain, trained)
    backend.export(tmp_path / "adapter", {"base": f"hf:{base}", "base_fingerprint": backend.fingerprint,
                                          "tasks": ["waiting_line/copy"]})
    loaded = load_model(f"hf:{base}", device="cpu", adapter=str(tmp_path / "adapter"))
    assert torch.allclose(loaded.net(ids), trained, atol=1e-4, rtol=1e-4)


def test_masked_diffusion_loss_never_masks_the_prompt_and_weights_by_one_over_t() -> None:
    from parallelbench.models.finetune import lora
    from parallelbench.models.tiny.data import Example, collate

    class FakeNet:
        mask_id, device = 1, torch.device("cpu")

        def __init__(self):
            self.table = torch.nn.Parameter(torch.randn(12, 12, generator=torch.Generator().manual_seed(0)))
            self.seen: list[torch.Tensor] = []

        def full_logits(self, canvas, attention):
            self.seen.append(canvas.clone())
            return self.table[canvas]

        def finish_logits(self, raw):
            return raw

    net = FakeNet()
    examples = [Example([5, 6, 7], [8, 9, 2, 2], [True] * 4, 0), Example([5, 6], [9, 8, 8, 2], [True] * 4, 0)]
    batch = collate(examples, pad_id=0)
    masked = 0
    for seed in range(200):
        gen = torch.Generator().manual_seed(seed)
        loss = lora.masked_diffusion_loss(net, batch, gen)
        canvas = net.seen[-1]
        assert not (canvas[~batch["answer"]] == 1).any()  # prompt and padding untouched
        masked += int((canvas == 1).sum())
        # recompute: the same draws, cross-entropy on masked answer tokens weighted 1/t, per answer length
        gen = torch.Generator().manual_seed(seed)
        t = (1 - lora.T_EPS) * (1 - torch.rand(2, generator=gen)) + lora.T_EPS
        noise = (torch.rand(batch["canvas"].shape, generator=gen) < t[:, None]) & batch["maskable"]
        ce = torch.nn.functional.cross_entropy(net.table[canvas][noise], batch["canvas"][noise], reduction="none")
        rows = noise.nonzero()[:, 0]
        expected = torch.stack([(ce[rows == r] / t[r]).sum() / 4 for r in range(2)]).mean()
        assert torch.allclose(loss, expected)
    assert 0.3 < masked / (200 * 8) < 0.7  # E[t] = 1/2 of the 8 answer positions
    loss.backward()
    assert net.table.grad is not None
