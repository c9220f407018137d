"""`indel-threshold` (issue 32 item 2): LLaDA 2.2's insert/delete editing on the block-causal path.

Defining behaviour on hand-made logits (a scripted block-causal net): DELETE and SPLIT shifts,
original-mask tracking, the final-round scrub, both post-edit rules, the loop escape; then, on a
random toy net, tokens, model calls and the repair record equal to a plain one-prompt reference
loop (tests/indel_threshold_reference.py), batched and alone, with and without the KV cache;
bad input refused in one line before any model call.
"""

from __future__ import annotations

import pytest
import torch
from block_causal_toy import ToyBlockNet
from indel_threshold_reference import indel_generate

from parallelbench.decoding import build_strategy, decode
from parallelbench.decoding.schedules import indel_threshold

MASK, EOS, DEL, SPLIT = 0, 1, 2, 3
A, B, C, D, E, F, G = range(10, 17)
PROMPT = [[4, 5, 6, 7]]  # a whole block: the generation block starts empty


class ScriptNet:
    """Block-causal net whose logits for the active block are a function of that block's tokens:
    `script(block)` gives, per slot, {token: logit} (every other logit 0)."""

    block_causal = True
    block_size = None
    default_block_length = 4
    cache_mode = "none"
    mask_id, eos_id, vocab_size = MASK, EOS, 20
    delete_token_id, split_token_id = DEL, SPLIT

    def __init__(self, script):
        self.script = script
        self.calls = 0

    def forward(self, canvas, *, attention_mask=None, rows=None, position_ids=None, attention_bias=None):
        self.calls += 1
        logits = torch.zeros(*canvas.shape, self.vocab_size)
        for i, row in enumerate(canvas[:, -4:].tolist()):
            for j, spec in enumerate(self.script(tuple(row))):
                for tok, value in spec.items():
                    logits[i, -4 + j, tok] = value
        return logits

    __call__ = forward


def same(*tokens):
    """Each slot keeps predicting its own token, confidently."""
    return [{t: 8.0} for t in tokens]


def run(script, **params):
    params.setdefault("threshold", 0.5)
    params.setdefault("edit_threshold", 0.5)
    net = ScriptNet(script)
    res = decode(net, PROMPT, gen_length=4, strategy=build_strategy("indel-threshold", **params))[0]
    assert res.nfe == net.calls
    return res


def test_a_written_delete_removes_its_slot_and_a_new_mask_fills_the_end():
    def script(block):
        return {(0, 0, 0, 0): same(A, B, C, D),
                (A, B, C, D): [{A: 8}, {DEL: 8}, {C: 8}, {D: 8}],
                (A, C, D, 0): same(A, C, D, E)}[block]

    r = run(script, post_steps=2)
    assert r.tokens == [A, C, D, E] and r.nfe == 3
    assert r.order == [0, 0, 0, 2] and r.tokens_per_step == [4, -1, 1]  # C and D keep their commit step
    assert (r.extra["deletes"], r.extra["inserts"], r.extra["edits"]) == (1, 0, 0)
    assert r.extra["first_tokens"] == [A, C, D, E] and r.extra["unmask_tokens"] == [A, B, C, D]


def test_a_written_split_opens_a_mask_before_the_slots_token_and_the_last_slot_drops_off():
    def script(block):
        return {(0, 0, 0, 0): same(A, B, C, D),
                (A, B, C, D): [{A: 8}, {SPLIT: 8}, {C: 8}, {D: 8}],
                (A, 0, B, C): same(A, E, B, C)}[block]

    r = run(script, post_steps=2)
    assert r.tokens == [A, E, B, C] and r.nfe == 3
    assert (r.extra["inserts"], r.extra["deletes"]) == (1, 0)
    assert r.extra["first_tokens"] == [A, E, B, C] and r.order == [0, 2, 0, 0]


def test_original_masks_are_tracked_through_shifts_and_new_masks_raise_the_minimum():
    def script(block):
        return {(0, 0, 0, 0): [{A: 8}, {SPLIT: 8}, {B: 1}, {C: 1}],  # a split written into a mask
                # marks [filled, new, original, original]: 2 original + 1 new mask -> at least 2 commits
                (A, 0, 0, 0): [{A: 8}, {E: 2}, {B: 3}, {C: 1}],
                (A, E, B, 0): [{A: 8}, {E: 8}, {B: 8}, {C: 1}],
                (A, E, B, C): same(A, E, B, C)}[block]

    r = run(script, post_steps=1)
    assert r.tokens == [A, E, B, C] and r.extra["inserts"] == 1
    assert r.tokens_per_step == [1, 2, 1, 0]  # the second round commits two masks (min_k 1 + 1 new mask)
    assert r.nfe == 4  # the fourth round is the first with no original mask: post-edit round 1 = final


def test_an_original_mask_whose_argmax_is_the_mask_takes_its_best_other_token():
    def script(block):
        return {(0, 0, 0, 0): [{MASK: 9, A: 8}, {B: 8}, {C: 8}, {D: 8}]}[block]

    # p(A) = e^8 / (e^9 + e^8 + 18) = 0.27 > 0.2: every original mask filled in the first round, which
    # (post_steps=0) is the final one
    r = run(script, threshold=0.2, post_steps=0)
    assert r.tokens == [A, B, C, D] and r.nfe == 1


def test_the_final_round_writes_no_mask_delete_or_split():
    def script(block):
        return {(0, 0, 0, 0): [{A: 8}, {B: 8}, {C: 8}, {DEL: 8, D: 5}],  # a delete written into a mask
                # no original mask left: post-edit round 1 of 1 is the final one
                (A, B, C, 0): [{SPLIT: 9, F: 8}, {B: 8}, {C: 8}, {SPLIT: 8, D: 5}]}[block]

    r = run(script, post_steps=1)
    assert r.tokens == [F, B, C, D] and r.nfe == 2
    assert (r.extra["deletes"], r.extra["inserts"], r.extra["edits"]) == (1, 0, 1)
    assert r.extra["first_tokens"] == [A, B, C, D]


def _reappearing(block):
    return {(0, 0, 0, 0): same(A, B, C, D),
            (A, B, C, D): [{MASK: 8}, {B: 8}, {C: 8}, {D: 8}],  # post-edit round 1 masks an original slot again
            (0, B, C, D): same(E, B, C, D),
            (E, B, C, D): same(E, F, C, D),
            (E, F, C, D): same(E, F, G, D)}[block]


def test_cumulative_post_rule_counts_post_edit_rounds_over_the_block():
    r = run(_reappearing, post_steps=2, post_rule="cumulative")
    assert r.tokens == [E, F, C, D] and r.nfe == 4  # rounds 2 and 4 are post-edit rounds 1 and 2
    assert r.extra["remasked"] == 1 and r.extra["edits"] == 2  # E re-committed over A, F over B
    assert r.extra["first_tokens"] == [A, B, C, D] and r.extra["unmask_tokens"] == [A, B, C, D]


def test_reset_post_rule_restarts_the_count_while_original_masks_remain():
    r = run(_reappearing, post_steps=2, post_rule="reset")
    assert r.tokens == [E, F, G, D] and r.nfe == 5  # the remasked original restarts the count at round 3


def test_a_block_state_seen_before_changes_its_least_confident_slot():
    def script(block):
        return {(0, 0, 0, 0): same(A, B, C, D),
                (A, B, C, D): [{E: 8, F: 6}, {B: 8}, {C: 8}, {D: 8}],
                (E, B, C, D): [{A: 8, F: 6}, {B: 8}, {C: 8}, {D: 8}],
                (F, B, C, D): same(F, B, C, D)}[block]

    # rounds 2-3 flip A -> E -> A; round 4 sees (A, B, C, D) again: slot 0 takes its best token not yet
    # written there this block (F), and round 5 writes nothing
    r = run(script, post_steps=8)
    assert r.tokens == [F, B, C, D] and r.nfe == 5


def test_the_hub_schedule_commits_at_least_its_share_per_round():
    def script(block):
        return [{t: 1.0} for t in (A, B, C, D)]  # nothing above the threshold

    assert run(script, steps=2, post_steps=0).tokens_per_step == [2, 2]
    assert run(script, min_k=1, post_steps=0).tokens_per_step == [1, 1, 1, 1]
    assert run(script, min_k=3, post_steps=0).tokens_per_step == [3, 1]


# ---------------------------------------------------------------------- against the reference loop
PROMPTS = [[5, 6, 7, 8, 9], [10, 11], [12, 13, 14, 15, 16, 17, 18, 19, 20], [21, 22, 23, 24]]
SETTINGS = [
    {"threshold": 0.3, "edit_threshold": 0.2, "post_steps": 3},
    {},  # SGLang's defaults: threshold 0.5, edit_threshold 0, post_steps 16
    {"threshold": 0.5, "edit_threshold": 0.3, "post_steps": 0},
    {"threshold": 0.4, "edit_threshold": 0.1, "post_steps": 2, "post_rule": "reset"},
    {"threshold": 0.9, "edit_threshold": 0.3, "post_steps": 1, "steps": 2, "block_length": 8},
    {"threshold": 0.6, "edit_threshold": 0.25, "post_steps": 4, "min_k": 2, "stop_at_eos": True},
    {"threshold": 0.3, "edit_threshold": 0.1, "post_steps": 3, "net": {"boost": 2.0, "mask_free": True, "mask_boost": 2.0}},
    {"threshold": 0.5, "edit_threshold": 0.05, "post_steps": 0, "net": {"boost": 1.5, "mask_free": True}},
]


def split_params(params):
    params = dict(params)
    return params.pop("net", {}), params


class EditingToy(ToyBlockNet):
    """The toy net with DELETE and SPLIT favoured and, with `mask_free`, the mask token predicted like
    any other (so written slots are masked again and original masks fall back to their next token)."""

    def __init__(self, *, boost: float = 0.0, mask_free: bool = False, mask_boost: float = 0.0, **kw):
        super().__init__(**kw)
        self.boost, self.mask_free, self.mask_boost = boost, mask_free, mask_boost
        self.delete_token_id, self.split_token_id = DEL, SPLIT

    def _logits(self, x):
        z = self.head(self.norm(x)) * self.scale
        z[..., self.eos_id] += self.eos_boost
        z[..., DEL] += self.boost
        z[..., SPLIT] += self.boost
        if self.mask_free:
            z[..., self.mask_id] += self.mask_boost
        else:
            z[..., self.mask_id] = -1e4
        return z


def toy(cache="none", **kw):
    net_kw = {k: kw.pop(k) for k in ("boost", "mask_free", "mask_boost") if k in kw}
    return EditingToy(scale=2.5, default_block_length=4, cache_mode=cache, eos_boost=1.0, **net_kw, **kw)


def reference(net, prompt, params, gen):
    p = dict(params)
    block = p.pop("block_length", 4)
    eos = net.eos_id if p.pop("stop_at_eos", False) else None
    return indel_generate(net, prompt, mask_id=net.mask_id, delete_id=DEL, split_id=SPLIT, gen_length=gen,
                          block_length=block, eos_id=eos, **p)


def keys(r):
    return {"tokens": r.tokens, "nfe": r.nfe, **{k: r.extra[k] for k in
                                                ("edits", "inserts", "deletes", "first_tokens", "unmask_tokens")}}


@pytest.mark.parametrize("read", [True, False], ids=["cpu-read", "no-read"])
@pytest.mark.parametrize("params", SETTINGS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()) or "defaults")
def test_tokens_calls_and_repair_record_equal_the_reference_batched_and_alone(params, read, monkeypatch):
    # read=False: the step as on a GPU (no read of the device; the loop escape and the shift run every round)
    monkeypatch.setattr(indel_threshold, "READ_ON_CPU", read)
    gen = 8
    net_kw, params = split_params(params)
    strategy = build_strategy("indel-threshold", **params)
    net = toy(**net_kw)
    refs = [reference(net, p, params, gen) for p in PROMPTS]
    batched = decode(net, PROMPTS, gen_length=gen, strategy=strategy)
    alone = [decode(net, [p], gen_length=gen, strategy=strategy)[0] for p in PROMPTS]
    cached = decode(toy("block", **net_kw), PROMPTS, gen_length=gen, strategy=strategy)
    for i, ref in enumerate(refs):
        assert keys(batched[i]) == ref, f"row {i}"
        assert keys(alone[i]) == ref, f"row {i} alone"
        assert keys(cached[i]) == ref, f"row {i} cache=block"
        assert sum(batched[i].tokens_per_step) == batched[i].num_committed


def test_the_reference_settings_exercise_deletes_inserts_and_edits():
    totals = {"inserts": 0, "deletes": 0, "edits": 0, "remasked": 0}
    for params in SETTINGS:
        net_kw, params = split_params(params)
        for r in decode(toy(**net_kw), PROMPTS, gen_length=8, strategy=build_strategy("indel-threshold", **params)):
            for k in totals:
                totals[k] += r.extra.get(k, 0)
    assert all(v >= 3 for v in totals.values()), totals


def test_history_shows_every_round_and_no_special_token_survives():
    net = toy()
    res = decode(net, PROMPTS, gen_length=8, strategy=build_strategy("indel-threshold", **SETTINGS[0]),
                 return_history=True)
    for r in res:
        assert len(r.history) == r.nfe
        assert not {MASK, DEL, SPLIT} & set(r.tokens)


# ---------------------------------------------------------------------- bad input, before any call
@pytest.mark.parametrize("params, words", [
    ({"threshold": 1.5}, "threshold=1.5"),
    ({"edit_threshold": -0.1}, "edit_threshold=-0.1"),
    ({"post_rule": "sometimes"}, "cumulative | reset"),
    ({"min_k": 2, "steps": 4}, "exclusive"),
    ({"temperature": 0.7}, "greedily"),
    ({"delete_token": 4, "split_token": 4}, "same id"),
])
def test_bad_options_fail_in_one_line(params, words):
    with pytest.raises(ValueError) as err:
        build_strategy("indel-threshold", **params)
    assert words in str(err.value) and "\n" not in str(err.value)


def _refused(net, **params):
    with pytest.raises(ValueError) as err:
        decode(net, [[5, 6]], gen_length=4, strategy=build_strategy("indel-threshold", **params))
    assert "\n" not in str(err.value) and getattr(net, "calls", 0) == 0
    return str(err.value)


def test_models_it_cannot_run_on_are_refused_before_decoding():
    plain = toy()
    plain.delete_token_id = plain.split_token_id = None
    assert "delete_token=ID split_token=ID" in _refused(plain)
    assert "outside the vocabulary" in _refused(toy(), delete_token=40)  # the toy vocabulary is 0..39
    assert "outside the vocabulary" in _refused(toy(), split_token=99)
    assert "mask id" in _refused(toy(), delete_token=MASK)
    given = _refused(toy(), delete_token=DEL, split_token=DEL)
    assert "same id" in given
    canvas = toy()
    canvas.block_causal = False
    message = _refused(canvas)
    assert "block-diffusion models only" in message and "LLaDA 2.x" in message


def test_options_name_the_ids_when_the_model_states_none():
    plain = toy()
    plain.delete_token_id = plain.split_token_id = None
    res = decode(plain, PROMPTS[:1], gen_length=4, strategy=build_strategy("indel-threshold", delete_token=DEL,
                                                                            split_token=SPLIT))
    assert res[0].nfe == plain.calls > 0


# ---------------------------------------------------------------------- repair record, block-causal loop
def _replay(history: list[list[int]]) -> dict:
    """The repair keys of a decode without shifts, read off its history (the region after every step):
    commits fill masks and edits rewrite written slots, so a step's edits are the slots that were
    written before it and changed in it."""
    g = len(history[0])
    before = [MASK] * g
    first, edits, unmask = [-1] * g, 0, None
    for snap in history:
        for j in range(g):
            if before[j] != MASK and snap[j] != before[j]:
                edits += 1
            if first[j] < 0 and snap[j] != MASK:
                first[j] = snap[j]
        if unmask is None and MASK not in snap:
            unmask = [before[j] if before[j] != MASK else snap[j] for j in range(g)]
        before = snap
    return {"edits": edits, "first_tokens": first, "unmask_tokens": unmask, "inserts": 0, "deletes": 0}


def test_edit_threshold_on_the_block_causal_loop_reports_its_repairs():
    prompts = [[5, 6, 7, 8], [9, 10, 11, 12, 13, 14, 15, 16]]  # whole blocks: no slots past gen_length
    strategy = build_strategy("edit-threshold", threshold=0.3, edit_threshold=0.1, edit_rule="confidence",
                              post_steps=2, block_length=4)
    res = decode(toy(), prompts, gen_length=8, strategy=strategy, return_history=True)
    assert sum(r.extra["edits"] for r in res) > 0
    for r in res:
        assert {k: r.extra[k] for k in ("edits", "first_tokens", "unmask_tokens", "inserts", "deletes")} == \
            _replay(r.history)
    plain = decode(toy(), prompts, gen_length=8, strategy=build_strategy("confidence-threshold", block_length=4))
    assert all("edits" not in r.extra and "first_tokens" not in r.extra for r in plain)


# ---------------------------------------------------------------------- a native LLaDA 2 checkpoint
def test_a_llada2_checkpoint_states_its_delete_and_split_ids(tmp_path):
    import native_block_ckpt as bc

    from parallelbench.models.registry import load_model

    vocab = bc.vocabulary("llada2")
    ids = sorted(vocab.values())[-2:]  # two ordinary words serve as DELETE and SPLIT
    with_ids = bc.write_checkpoint(tmp_path / "l22", "llada2", delete_token_id=ids[0], split_token_id=ids[1])
    without = bc.write_checkpoint(tmp_path / "l20", "llada2")
    strategy = build_strategy("indel-threshold", threshold=0.3, edit_threshold=0.2, post_steps=2, block_length=4)
    prompts = [[5, 6, 7, 8, 9], [10, 11]]
    runs = {}
    for cache in ("none", "block"):
        net = load_model(f"hf:{with_ids}", device="cpu", dtype="float32", cache=cache).net
        assert (net.delete_token_id, net.split_token_id) == tuple(ids)
        runs[cache] = [keys(r) for r in decode(net, prompts, gen_length=8, strategy=strategy)]
    assert runs["none"] == runs["block"]
    plain = load_model(f"hf:{without}", device="cpu", dtype="float32").net
    assert plain.delete_token_id is None
    with pytest.raises(ValueError, match="delete_token=ID split_token=ID"):
        decode(plain, prompts, gen_length=8, strategy=strategy)
    given = build_strategy("indel-threshold", block_length=4, delete_token=ids[0], split_token=ids[1])
    assert len(decode(plain, prompts, gen_length=8, strategy=given)) == 2


def test_template_slots_stay_in_place_while_the_others_shift():
    net = toy(boost=2.0)
    template = [[MASK, 30, MASK, MASK, MASK, MASK, 31, MASK], [MASK] * 8]
    res = decode(net, PROMPTS[:2], gen_length=8, template=template,
                 strategy=build_strategy("indel-threshold", threshold=0.3, edit_threshold=0.1, post_steps=3))
    assert sum(r.extra["deletes"] + r.extra["inserts"] for r in res) > 0
    r = res[0]
    assert (r.tokens[1], r.tokens[6]) == (30, 31) and (r.order[1], r.order[6]) == (-1, -1)
    assert (r.extra["first_tokens"][1], r.extra["first_tokens"][6]) == (-1, -1)
    assert not {MASK, DEL, SPLIT} & set(r.tokens) and sum(r.tokens_per_step) == r.num_committed == 6


def test_run_refuses_a_checkpoint_without_ids_or_with_ids_outside_its_vocabulary_in_one_line(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from parallelbench.cli import app
    from parallelbench.models.hf.examples import write_example

    monkeypatch.chdir(tmp_path)
    write_example(tmp_path / "llada2-example", "llada2")  # a LLaDA 2.0 config: no DELETE / SPLIT ids
    base = ["run", "--model", "hf:llada2-example", "--tasks", "waiting_line/copy", "--strategy", "indel-threshold",
            "--limit", "1", "--db", "r.db", "--no-progress", "--workers", "1"]
    for extra, words in (([], "give delete_token=ID split_token=ID"),
                         (["--param", "delete_token=99999", "--param", "split_token=5"], "outside the vocabulary"),
                         (["--threshold", "1.5"], "threshold=1.5")):
        res = CliRunner().invoke(app, base + extra)
        line = res.output.strip()
        assert res.exit_code == 2 and len(line.splitlines()) == 1 and "Traceback" not in line, res.output
        assert line.startswith("error: ") and words in line, line


@pytest.mark.parametrize("rows", [3, 200])  # few rows: the plain way; many: the chunked search
@pytest.mark.parametrize("ids", [(0, 2, 3), (4095, 70, 64), (130, 1, 129)])  # (mask, DELETE, SPLIT)
def test_the_vocabulary_pass_equals_argmax_with_the_columns_at_minus_infinity(rows, ids):
    """x / other (no_mask) / clean are SGLang's argmax of the logits, the mask (and DELETE / SPLIT)
    columns at -inf, the first index on a tie; the probabilities are softmax(logits) there. The logits
    are left as they were, also non-contiguous views and inference tensors searched outside inference mode."""
    from parallelbench.decoding.schedules.indel_threshold import _vocab_choices

    g = torch.Generator().manual_seed(rows + ids[0])
    v = 4096
    for ties in (False, True):
        logits = torch.randn(rows, 2, v, generator=g)
        if ties:  # a few levels only: most rows tie at their maximum, often on a set-aside column
            logits = torch.randint(0, 3, (rows, 2, v), generator=g).float()
            logits[: rows // 2, :, list(ids)] = 2.0
        mask_id, delete_id, split_id = ids
        given = logits.clone()
        x, clean, p, _ = _vocab_choices(logits, mask_id, delete_id, split_id)
        assert torch.equal(logits, given)  # the search's -inf columns are put back
        other, clean_too, p_other, _ = _vocab_choices(logits, mask_id, delete_id, split_id,
                                                      no_mask=torch.ones(logits.shape[:2], dtype=torch.bool))
        assert torch.equal(clean_too, clean)

        def banned(cols):
            z = logits.clone()
            z[..., list(cols)] = float("-inf")
            return z.argmax(dim=-1)

        assert torch.equal(x, logits.argmax(dim=-1))
        assert torch.equal(other, banned([mask_id]))
        assert torch.equal(clean, banned(ids))
        probs = torch.softmax(logits, dim=-1)
        assert torch.equal(p, probs.gather(-1, x.unsqueeze(-1)).squeeze(-1))
        assert torch.equal(p_other, probs.gather(-1, other.unsqueeze(-1)).squeeze(-1))
        wide = torch.cat([logits, logits], dim=1)[:, 2:]  # non-contiguous views: a call's last columns,
        padded = torch.cat([logits, logits[..., :1]], dim=-1)[..., :v]  # and rows of a wider vocabulary
        with torch.inference_mode():  # logits made under inference mode, searched outside it
            frozen = logits.clone()
        for view in (wide, padded, frozen):
            kept = view.clone()
            assert torch.equal(_vocab_choices(view, mask_id, delete_id, split_id)[1], clean)
            assert torch.equal(view, kept)


def test_a_shift_given_by_its_source_alone_moves_slots_like_one_with_everything_given():
    """A third-party strategy may build `Shift(source=...)` only, in any integer dtype: the loop then
    derives the new masks and the gather index itself, with the same decode as a shift that hands them over."""
    from parallelbench.decoding.view import Shift

    base = type(build_strategy("confidence-topk"))

    class DeleteFirstOnce(base):
        rewrites = True
        requires_block_causal = True
        full = False

        def step(self, view):
            decision = super().step(view)
            b, g = view.canvas.shape
            # at steps 1 and 3, a row's first written slot of the block is deleted: the later slots move
            # left and a new mask enters last
            written = ~view.masked & view.editable
            hit = written.any(dim=1) & (view.t in (1, 3))
            first = written.long().argmax(dim=1, keepdim=True)
            j = torch.arange(g).expand(b, g)
            left = torch.where(j >= first, j + 1, j)
            left = torch.where(left >= g, -1, left)
            source = torch.where(hit.unsqueeze(1), left, j)
            counts = dict(inserts=torch.zeros(b, dtype=torch.long), deletes=hit.long())
            if self.full:
                shift = Shift(source=source, new=source < 0, origin=source.clamp(min=0), **counts)
            else:
                shift = Shift(source=source.to(torch.int32), **counts)
            decision.shift = shift
            decision.commit = decision.commit & ~hit.unsqueeze(1)  # nothing else moves in that step
            return decision

    prompts = [[3, 4, 5], [6], [7, 8, 9, 10, 11]]
    runs = []
    for full in (False, True):
        strategy = DeleteFirstOnce(k=1, block_length=4)
        strategy.full = full
        for cache in ("none", "block"):
            model = ToyBlockNet(vocab=40, cache_mode=cache, default_block_length=4)
            runs.append(decode(model, prompts, gen_length=8, strategy=strategy, seed=0))
    ref = [(r.tokens, r.nfe, r.order, sorted(r.extra.items())) for r in runs[0]]
    for other in runs[1:]:
        assert [(r.tokens, r.nfe, r.order, sorted(r.extra.items())) for r in other] == ref
    assert sum(r.extra["deletes"] for r in runs[0]) >= 3


class _Kept(EditingToy):
    """EditingToy that keeps a copy of every logits tensor it hands back, to check afterwards that the
    decode left them as they were (the chunked vocabulary search writes into them and puts them back)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.handed: list[tuple[torch.Tensor, torch.Tensor]] = []

    def forward(self, *args, **kw):
        out = super().forward(*args, **kw)
        self.handed.append((out, out.clone()))
        return out

    def forward_cached(self, *args, **kw):
        out = super().forward_cached(*args, **kw)
        self.handed.append((out, out.clone()))
        return out


@pytest.mark.parametrize("cache", ["none", "block"])
def test_a_large_vocabulary_takes_the_chunked_search_and_leaves_the_models_logits_as_they_were(cache):
    """With more than 2^15 logits per round the vocabulary pass searches in chunks, writing -inf into
    the three set-aside columns of the logits and putting them back: tokens, calls and the repair
    record still equal the reference loop's, and every tensor the model handed back is unchanged
    (one row and a block of 16: the block's logits are a view of the model's own output)."""
    params = {"threshold": 0.3, "edit_threshold": 0.1, "post_steps": 2}
    shifted = 0
    for prompts, block in (([[5, 6, 7, 8, 9], [10, 11]], 8), ([[12, 13, 14]], 16)):
        net = _Kept(boost=5.0, mask_free=True, mask_boost=1.0, vocab=4096, scale=2.5, default_block_length=4,
                    cache_mode=cache, eos_boost=1.0)
        setting = {**params, "block_length": block}
        refs = [reference(net, p, setting, 16) for p in prompts]
        net.handed.clear()
        got = decode(net, prompts, gen_length=16, strategy=build_strategy("indel-threshold", **setting))
        assert [keys(r) for r in got] == refs
        assert net.handed and all(torch.equal(out, kept) for out, kept in net.handed)
        shifted += sum(r["inserts"] + r["deletes"] for r in refs)
    assert shifted > 0  # the rounds that shift ran too
