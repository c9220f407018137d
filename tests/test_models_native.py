"""Native LLaDA and Dream implementations on tiny checkpoints in the families' published formats.

The checkpoints (`native_ckpt.py`) are written here: real config field names, bf16 safetensors
under the published tensor names, a small tokenizer with the family's mask token, and `.py`
files behind `auto_map` that record any import. Logits are compared with an independent
reading of the same tensors (`native_ckpt.reference_logits`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("safetensors")

import native_ckpt as nc  # noqa: E402

from parallelbench.decoding import build_strategy, decode  # noqa: E402
from parallelbench.models import ModelSpecError, load_model  # noqa: E402
from parallelbench.models.native import NativeCheckpointError, family_of, load_native  # noqa: E402
from parallelbench.models.native.net import shift_per_row  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)
FAMILIES = ("llada", "dream")
TOL = 1e-4  # fp32, the bound for padded vs alone


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    root = tmp_path_factory.mktemp("native")
    return {
        "llada": nc.write_checkpoint(root / "llada", "llada"),
        "dream": nc.write_checkpoint(root / "dream", "dream", shards=3),  # sharded, with an index
        "llada1": nc.write_checkpoint(root / "llada1", "llada", n_layers=1),
        "dream1": nc.write_checkpoint(root / "dream1", "dream", num_hidden_layers=1),
        "llada_gqa": nc.write_checkpoint(root / "llada_gqa", "llada", n_kv_heads=2, seed=3),
    }


def _diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """Largest |a - b|, counting equal entries (the -inf of merged stop ids) as 0."""
    return float(torch.where(a == b, torch.zeros_like(a), a - b).abs().max())


def _ids(n: int, vocab: int = 40, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(5, vocab, (n,), generator=g)


# ---------------------------------------------------------------------- the forward pass
@pytest.mark.parametrize("name", ["llada", "dream", "llada_gqa"])
def test_logits_match_an_independent_reading_of_the_tensors(ckpts, name):
    module, config = load_native(ckpts[name], dtype="float32")
    ids = _ids(13)
    with torch.no_grad():
        got = module(ids[None])[0]
    ref = nc.reference_logits(ckpts[name], ids)
    assert got.shape == ref.shape == (13, config.get("embedding_size") or config["vocab_size"])
    assert (got - ref).abs().max() < TOL
    assert not nc.code_ran(ckpts[name])


def test_grouped_kv_heads_and_sizes_come_from_the_config(ckpts):
    dream, _ = load_native(ckpts["dream"], dtype="float32")
    blk = dream.layers[0]
    assert (blk.heads, blk.kv_heads, blk.head_dim) == (4, 2, 8)
    assert blk.k.weight.shape == (16, 32) and blk.q.bias is not None and blk.o.bias is None
    llada, _ = load_native(ckpts["llada_gqa"], dtype="float32")
    assert llada.layers[0].kv_heads == 2 and llada.layers[0].q.bias is None
    assert llada.head.weight.shape[0] == llada.embed.weight.shape[0] == 48  # embedding_size, not vocab_size


def test_rope_theta_is_read_from_the_config(tmp_path, ckpts):
    other = nc.write_checkpoint(tmp_path / "theta", "llada", rope_theta=7.0)  # same seed, same weights
    ids = _ids(16)
    with torch.no_grad():
        a = load_native(ckpts["llada"], dtype="float32")[0](ids[None])[0]
        b = load_native(other, dtype="float32")[0](ids[None])[0]
    assert (a - b).abs().max() > 1e-2  # a different theta changes the logits ...
    assert (b - nc.reference_logits(other, ids)).abs().max() < TOL  # ... exactly as the reference says


def test_tied_head_uses_the_embedding(tmp_path):
    folder = nc.write_checkpoint(tmp_path / "tied", "dream", tie_word_embeddings=True)
    module, _ = load_native(folder, dtype="float32")
    assert module.head is None
    ids = _ids(9)
    with torch.no_grad():
        assert (module(ids[None])[0] - nc.reference_logits(folder, ids)).abs().max() < TOL


def test_dream_logits_are_shifted_by_one_and_llada_not(ckpts):
    for family in FAMILIES:
        model = load_model(f"hf:{ckpts[family]}", device="cpu")
        net = model.net
        ids = _ids(10)
        ref = nc.reference_logits(ckpts[family], ids)[:, : net.vocab_size]
        out = net.forward(ids[None])[0]
        keep = [i for i in range(net.vocab_size) if i not in net.merge_ids and i != net.eos_id]
        if family == "dream":
            assert (out[1:, keep] - ref[:-1, keep]).abs().max() < TOL  # position i reads i - 1
            assert (out[0, keep] - ref[0, keep]).abs().max() < TOL  # position 0 repeats itself
        else:
            assert (out[:, keep] - ref[:, keep]).abs().max() < TOL


def test_shift_per_row_starts_at_each_rows_first_real_token():
    logits = torch.arange(2 * 5, dtype=torch.float32).view(2, 5, 1)
    mask = torch.tensor([[True] * 5, [False, False, True, True, True]])
    out = shift_per_row(logits, mask)[..., 0]
    assert out[0].tolist() == [0, 0, 1, 2, 3]
    assert out[1, 2:].tolist() == [7, 7, 8]


@pytest.mark.parametrize("family", FAMILIES)
def test_left_padded_rows_match_the_row_alone(ckpts, family):
    net = load_model(f"hf:{ckpts[family]}", device="cpu").net
    rows = [_ids(n, seed=n) for n in (11, 6, 3)]
    width = max(len(r) for r in rows)
    canvas = torch.full((3, width), 0, dtype=torch.long)
    mask = torch.zeros((3, width), dtype=torch.bool)
    for i, r in enumerate(rows):
        canvas[i, width - len(r):], mask[i, width - len(r):] = r, True
    padded = net.forward(canvas, attention_mask=mask)
    for i, r in enumerate(rows):
        alone = net.forward(r[None])[0]
        assert _diff(padded[i, width - len(r):], alone) < TOL, (family, i)


def test_bf16_load_keeps_bf16_weights_and_close_logits(ckpts):
    fp32, _ = load_native(ckpts["dream"], dtype="float32")
    bf16, _ = load_native(ckpts["dream"], dtype="bfloat16")
    assert {p.dtype for p in bf16.parameters()} == {torch.bfloat16}
    ids = _ids(12)
    with torch.no_grad():
        a, b = fp32(ids[None]).float(), bf16(ids[None]).float()
    # bf16 keeps 8 bits of mantissa: a few percent of the logits' spread after two layers
    assert (a - b).abs().max() < 0.05 * a.abs().max()
    model = load_model(f"hf:{ckpts['llada']}", device="cpu", dtype="bfloat16")
    assert next(model.net.model.parameters()).dtype == torch.bfloat16


def test_sharded_and_single_file_checkpoints_load_the_same_weights(tmp_path):
    one = nc.write_checkpoint(tmp_path / "one", "llada", seed=5)
    many = nc.write_checkpoint(tmp_path / "many", "llada", seed=5, shards=4)
    assert (many / "model.safetensors.index.json").is_file() and not (many / "model.safetensors").exists()
    a, _ = load_native(one, dtype="float32")
    b, _ = load_native(many, dtype="float32")
    for (na, pa), (nb, pb) in zip(a.named_parameters(), b.named_parameters()):
        assert na == nb and torch.equal(pa, pb)


# ---------------------------------------------------------------------- the attention-bias extension
def test_attention_bias_and_position_ids(ckpts):
    net = load_model(f"hf:{ckpts['llada']}", device="cpu").net
    assert net.supports_attention_bias is True
    ids = _ids(8)[None]
    plain = net.forward(ids)
    zero = net.forward(ids, attention_bias=torch.zeros(1, 8, 8), position_ids=torch.arange(8)[None])
    assert _diff(plain, zero) < TOL
    hide = torch.zeros(1, 8, 8)
    hide[..., 2] = float("-inf")  # nobody sees key 2 ...
    masked = torch.ones(1, 8, dtype=torch.bool)
    masked[0, 2] = False  # ... which is what a pad at 2 means, when positions stay 0..7
    a = net.forward(ids, attention_bias=hide, position_ids=torch.arange(8)[None])
    b = net.forward(ids, attention_mask=masked, position_ids=torch.arange(8)[None])
    assert _diff(a, b) < TOL and _diff(a, plain) > 1e-3
    shifted = net.forward(ids, position_ids=torch.arange(8)[None] + 5)  # RoPE: only relative positions matter
    assert _diff(shifted, plain) < 1e-3


# ---------------------------------------------------------------------- decoding and caches
def _prompts(n: int = 3) -> list[list[int]]:
    return [_ids(length, seed=10 + length).tolist() for length in (9, 5, 7)[:n]]


class _Recorder:
    """Wraps a net and keeps, per original row, the logits each call gave that row."""

    def __init__(self, net):
        self.net, self.mask_id, self.eos_id, self.vocab_size = net, net.mask_id, net.eos_id, net.vocab_size
        self.seen: dict[int, list[torch.Tensor]] = {}
        self.gen = 0

    def forward(self, canvas, *, attention_mask=None, rows=None):
        out = self.net.forward(canvas, attention_mask=attention_mask, rows=rows)
        for i, r in enumerate(rows.tolist()):
            self.seen.setdefault(int(r), []).append(out[i, -self.gen:].clone())
        return out


def _run(net, prompts, strategy, gen=16):
    rec = _Recorder(net)
    rec.gen = gen
    with net.session(gen, strategy.options.block_length):
        results = decode(rec, prompts, gen_length=gen, strategy=strategy)
        refreshes = net.cache_refreshes()
    return results, rec.seen, refreshes


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("cache", ["none", "prefix", "dual"])
def test_every_cache_mode_is_batch_invariant(ckpts, family, cache):
    """Each row decodes the same tokens with the same logits at every step, alone or in a padded batch
    whose rows sit in different blocks (threshold decoding moves them at different speeds)."""
    net = load_model(f"hf:{ckpts[family]}", device="cpu", cache=cache).net
    strategy = build_strategy("confidence-threshold", threshold=0.1, block_length=4)
    prompts = _prompts()
    batch, batch_logits, batch_ref = _run(net, prompts, strategy)
    for i, p in enumerate(prompts):
        alone, alone_logits, alone_ref = _run(net, [p], strategy)
        assert alone[0].tokens == batch[i].tokens and alone[0].nfe == batch[i].nfe
        assert len(alone_logits[0]) == len(batch_logits[i])
        worst = max(_diff(a, b) for a, b in zip(alone_logits[0], batch_logits[i]))
        assert worst < TOL, (family, cache, i, worst)
        if cache != "none":
            assert alone_ref[0] == batch_ref[i] == 4  # one refresh per block, whatever the batch does
    assert len({r.nfe for r in batch}) > 1  # rows moved at different speeds, so they sat in different blocks


@pytest.mark.parametrize("family", FAMILIES)
def test_caches_are_exact_on_a_one_layer_model(ckpts, family):
    """With one layer, a position's keys/values depend only on its own token and position, and a step
    changes tokens only inside the active block: the cache then holds exactly what a full pass computes."""
    prompts = _prompts()
    plain_net = load_model(f"hf:{ckpts[family + '1']}", device="cpu").net
    for strategy in (build_strategy("confidence-topk", k=1, block_length=4),
                     build_strategy("confidence-threshold", threshold=0.5, block_length=8)):
        plain, plain_logits, _ = _run(plain_net, prompts, strategy)
        for cache in ("prefix", "dual"):
            net = load_model(f"hf:{ckpts[family + '1']}", device="cpu", cache=cache).net
            got, got_logits, refreshes = _run(net, prompts, strategy)
            assert [r.tokens for r in got] == [r.tokens for r in plain], cache
            block = strategy.options.block_length
            for i in range(len(prompts)):
                assert refreshes[i] == 16 // block
                # inside the active block the logits are a full pass's (outside it they may be stale)
                first = got_logits[i][0]
                assert _diff(first, plain_logits[i][0]) < TOL


def test_caches_on_a_deeper_model_differ_from_the_full_pass_but_only_slightly(ckpts):
    prompts = _prompts()
    strategy = build_strategy("confidence-topk", k=1, block_length=4)
    _, plain_logits, _ = _run(load_model(f"hf:{ckpts['llada']}", device="cpu").net, prompts, strategy)
    _, dual_logits, _ = _run(load_model(f"hf:{ckpts['llada']}", device="cpu", cache="dual").net, prompts, strategy)
    step2 = [_diff(a[1][:4], b[1][:4]) for a, b in zip(plain_logits.values(), dual_logits.values())]
    assert max(step2) > 1e-6  # two layers: the cached keys are an approximation ...


def test_generate_reports_refreshes(ckpts):
    from parallelbench.tasks import get_task

    samples = get_task("waiting_line/copy").samples(2)
    model = load_model(f"hf:{ckpts['dream']}", device="cpu", cache="dual", batch_size=2)
    gens = model.generate(samples, build_strategy("confidence-topk", k=2, block_length=8), max_new_tokens=16)
    assert [g.extra["cache_refreshes"] for g in gens] == [2, 2] and all(g.nfe == 8 for g in gens)
    assert model.net.versions()["native_family"] == "dream"


# ---------------------------------------------------------------------- bad checkpoints
def _broken(tmp_path: Path, case: str) -> tuple[Path, str]:
    folder = tmp_path / case
    if case == "missing-shard":
        nc.write_checkpoint(folder, "llada", shards=2)
        (folder / "model-00002-of-00002.safetensors").unlink()
        return folder, "model-00002-of-00002.safetensors"
    if case == "wrong-shape":
        nc.write_checkpoint(folder, "dream")
        cfg = json.loads((folder / "config.json").read_text())
        cfg["intermediate_size"] = 40
        (folder / "config.json").write_text(json.dumps(cfg))
        return folder, "model.safetensors"
    if case == "unknown-model-type":
        nc.write_checkpoint(folder, "dream")
        cfg = json.loads((folder / "config.json").read_text())
        cfg["model_type"] = "dreamy"
        (folder / "config.json").write_text(json.dumps(cfg))
        return folder, "config.json"
    if case == "mask-outside-vocab":
        nc.write_checkpoint(folder, "llada", mask_token_id=999)
        return folder, "config.json"
    if case == "tokenizer-without-mask":
        nc.write_checkpoint(folder, "dream", with_mask_token=False)
        return folder, "tokenizer.json"
    raise AssertionError(case)


CASES = ["missing-shard", "wrong-shape", "unknown-model-type", "mask-outside-vocab", "tokenizer-without-mask"]


@pytest.mark.parametrize("case", CASES)
def test_bad_checkpoints_fail_in_one_line_naming_the_file(tmp_path, case):
    folder, file = _broken(tmp_path, case)
    with pytest.raises(ModelSpecError) as err:
        if case == "unknown-model-type":
            load_native(folder)
        else:
            load_model(f"hf:{folder}", device="cpu")
    message = str(err.value)
    assert "\n" not in message and file in message, message
    assert any(word in message for word in ("re-download", "fix", "use the", "check that")), message
    assert not nc.code_ran(folder)


def test_load_native_errors_are_typed(tmp_path):
    folder, _ = _broken(tmp_path, "mask-outside-vocab")
    with pytest.raises(NativeCheckpointError, match="mask_token_id=999 is outside the vocabulary"):
        load_native(folder)
    assert family_of({"model_type": "Dream"}) == "dream" and family_of({"model_type": "qwen2"}) is None


# ---------------------------------------------------------------------- the command line
def test_run_command_end_to_end_and_nothing_stored_for_a_broken_checkpoint(ckpts, tmp_path):
    from typer.testing import CliRunner

    from parallelbench.cli import app

    db = tmp_path / "results.db"
    args = ["run", "-t", "waiting_line/copy", "-s", "confidence-topk", "--k", "2", "-n", "2", "--db", str(db),
            "--no-report", "--no-progress", "--model-opt", "cache=prefix", "--model-opt", "batch_size=2"]
    result = CliRunner().invoke(app, ["run", "-m", f"hf:{ckpts['dream']}", *args[1:]])
    assert result.exit_code == 0, result.output
    from parallelbench.runner.store import ResultsStore

    frame = ResultsStore(db, create=False).frame()
    assert len(frame) == 2 and set(frame["model"]) == {f"hf:{ckpts['dream']}"}
    bad, _ = _broken(tmp_path, "missing-shard")
    db2 = tmp_path / "bad.db"
    args[args.index(str(db))] = str(db2)
    result = CliRunner().invoke(app, ["run", "-m", f"hf:{bad}", *args[1:]])
    assert result.exit_code != 0 and "model-00002-of-00002.safetensors" in result.output
    assert "Traceback" not in result.output
    assert not db2.exists() or len(ResultsStore(db2, create=False).frame()) == 0
    assert not nc.code_ran(ckpts["dream"]) and not nc.code_ran(bad)


@torch.no_grad()
def test_wino_shadow_block_on_native_llada_is_leave_one_out_and_dream_takes_the_fallback(ckpts):
    """One layer: WINO's shadow block gives exactly the leave-one-out probabilities. Dream reads
    predictions one index earlier, which a shadow block cannot express, so it does not declare
    the capability (its forward still accepts the keywords) and WINO decodes through the fallback."""
    from parallelbench.decoding.schedules.wino import shadow_forward

    net = load_model(f"hf:{ckpts['llada1']}", device="cpu").net
    assert net.supports_attention_bias is True
    canvas = torch.tensor([[0, 0, 7, 8, 9, 10, 4, 12, 4, 14], [6, 7, 8, 9, 10, 4, 12, 13, 5, 4]])
    attention = torch.ones_like(canvas, dtype=torch.bool)
    attention[0, :2] = False
    verify = torch.tensor([[True, False, True, False, False], [False, True, True, True, False]])
    _, aux = shadow_forward(net, canvas, attention, torch.arange(2), verify, 5)
    for r, j in verify.nonzero().tolist():
        alone = canvas[r : r + 1].clone()
        alone[0, 5 + j] = net.mask_id
        logits = net.forward(alone, attention_mask=attention[r : r + 1])[0, 5 + j]
        expected = torch.softmax(logits, -1)[canvas[r, 5 + j]]
        assert abs(float(aux["verify_prob"][r, j]) - float(expected)) < 1e-5
    dream = load_model(f"hf:{ckpts['dream']}", device="cpu").net
    assert dream.supports_attention_bias is False
    results = decode(dream, _prompts(2), gen_length=8, strategy=build_strategy("wino", block_length=4))
    assert all(dream.mask_id not in r.tokens for r in results)
