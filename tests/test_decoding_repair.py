"""Issue 32 item 4, engine side: the repair bookkeeping of the canvas loop (CONTRACTS.md).

The keys are checked against an independent reading of the decode's own history (every
snapshot of the region): first tokens, token-to-token changes, and the snapshot at which
the last original mask was filled.
"""

from __future__ import annotations

import pytest
import torch

from parallelbench.decoding import build_strategy, decode
from parallelbench.decoding.remasking import ReMDM
from parallelbench.decoding.repair import REPAIR_KEYS

from edit_threshold_reference import MixerNet

MASK = MixerNet.mask_id
EDITING = {
    "edit-threshold": {"threshold": 0.3, "edit_threshold": 0.05, "post_steps": 2},
    "edit-threshold-blocks": {"threshold": 0.3, "edit_threshold": 0.05, "block_length": 4, "post_steps": 2},
    "remdm": {"k": 2, "remask_steps": 3, "remask_k": 2},
    "rcr": {"k": 1},
    "wino": {"wide_threshold": 0.3, "narrow_threshold": 0.95, "shadow": "off"},
}


SCALE = {"wino": 2.0}  # logit scale of the mixer net at which each strategy rewrites something


def strategy(name: str):
    return build_strategy(name.replace("-blocks", ""), **EDITING[name])


class Recorder:
    """Wraps a strategy's step and keeps, per original row, what each step saw and decided."""

    def __init__(self, strategy):
        self.steps: dict[int, list] = {}
        inner = strategy.step

        def step(view):
            d = inner(view)
            tokens = d.tokens if d.tokens is not None else view.x0
            for i, r in enumerate(view.rows.tolist()):
                pick = (lambda x: None if x is None else x[i].tolist())
                self.steps.setdefault(r, []).append(
                    (view.canvas[i].tolist(), view.masked[i].tolist(), view.editable[i].tolist(), pick(d.commit),
                     tokens[i].tolist(), pick(d.edit), pick(d.remask)))
            return d

        strategy.step = step


def replay(steps) -> dict:
    """The repair keys, slot by slot, from the recorded steps (the engine's rules, written plainly)."""
    canvas, masked, editable = steps[0][0], steps[0][1], steps[0][2]
    g = len(canvas)
    first = [canvas[j] if editable[j] and not masked[j] else -1 for j in range(g)]
    last = list(first)
    original = {j for j in range(g) if masked[j]}
    edits, unmask = 0, (None if original else list(canvas))
    for canvas, masked, editable, commit, tokens, edit, remask in steps:
        drafted = [tokens[j] if commit[j] and masked[j] else canvas[j] for j in range(g)]
        for j in range(g):
            if commit[j] and masked[j]:
                edits += last[j] >= 0 and drafted[j] != last[j]
                first[j] = drafted[j] if first[j] < 0 else first[j]
                last[j] = drafted[j]
                original.discard(j)
        if unmask is None and not original:
            unmask = [drafted[j] if drafted[j] != MASK else last[j] for j in range(g)]
        for j in range(g):
            if edit is not None and edit[j] and not masked[j] and editable[j] and tokens[j] != last[j]:
                edits += 1
                last[j] = tokens[j]
    return {"edits": edits, "first_tokens": first, "unmask_tokens": unmask}


def prompts(n: int, same_length: bool = False) -> list[list[int]]:
    """Random prompts (of one length when the test compares rows alone with the batch: the mixer
    net averages over the whole canvas, left padding included)."""
    gen = torch.Generator().manual_seed(5)
    return [torch.randint(2, 40, (4 if same_length else 3 + i % 4,), generator=gen).tolist() for i in range(n)]


@pytest.mark.parametrize("name", sorted(EDITING))
def test_repair_keys_agree_with_a_plain_replay_of_the_steps(name):
    net = MixerNet(vocab=40, seed=3, scale=SCALE.get(name, 4.0))
    g = 8
    s = strategy(name)
    rec = Recorder(s)
    results = decode(net, prompts(6), gen_length=g, strategy=s, seed=1)
    changed = 0
    for i, r in enumerate(results):
        assert set(REPAIR_KEYS) <= set(r.extra)
        want = replay(rec.steps[i])
        assert r.extra["edits"] == want["edits"]
        assert r.extra["first_tokens"] == want["first_tokens"]
        assert r.extra["unmask_tokens"] == want["unmask_tokens"]
        assert r.extra["inserts"] == 0 and r.extra["deletes"] == 0  # the canvas loop neither inserts nor deletes
        assert all(isinstance(t, int) for t in r.extra["unmask_tokens"] + r.extra["first_tokens"])
        changed += r.extra["edits"]
    assert changed > 0, f"{name} made no edit: the test proves nothing"


@pytest.mark.parametrize("name", sorted(EDITING))
def test_repair_keys_do_not_depend_on_the_batch(name):
    net = MixerNet(vocab=40, seed=3, scale=SCALE.get(name, 4.0))
    ps = prompts(5, same_length=True)
    batched = decode(net, ps, gen_length=8, strategy=strategy(name), seed=2)
    for i, p in enumerate(ps):
        alone = decode(net, [p], gen_length=8, strategy=strategy(name), seed=2 + i)[0]
        assert {k: alone.extra[k] for k in REPAIR_KEYS} == {k: batched[i].extra[k] for k in REPAIR_KEYS}


@pytest.mark.parametrize("name,params", [("confidence-topk", {"k": 2}), ("confidence-threshold", {"threshold": 0.5}),
                                         ("random", {"k": 3})])
def test_strategies_that_never_edit_leave_the_keys_out(name, params):
    net = MixerNet(vocab=40, seed=3, scale=4.0)
    for r in decode(net, prompts(3), gen_length=8, strategy=build_strategy(name, **params)):
        assert not set(REPAIR_KEYS) & set(r.extra)


class UndeclaredRemdm(ReMDM):
    """A strategy of one's own that remasks without declaring `rewrites`."""

    rewrites = False


@pytest.mark.parametrize("cls", [ReMDM, UndeclaredRemdm])
def test_rows_finished_before_the_record_began_get_their_final_tokens(cls):
    """Undeclared, the record begins at the first revision step; either way a row a template
    filled completely (finished before any step) gets the keys from its final tokens, and
    template slots are -1."""
    net = MixerNet(vocab=40, seed=3, scale=4.0)
    full = [7, 8, 9, 10, 11, 12]
    partial = [7, MASK, 9, MASK, MASK, MASK]
    s = cls(k=2, remask_steps=2)
    rec = Recorder(s)
    res = decode(net, prompts(2), gen_length=6, strategy=s, template=[full, partial], seed=0)
    assert res[0].extra["unmask_tokens"] == full and res[0].extra["first_tokens"] == [-1] * 6
    assert res[0].extra["edits"] == 0 and res[0].nfe == 0
    first = res[1].extra["first_tokens"]
    assert first[0] == -1 and first[2] == -1 and all(t >= 0 for j, t in enumerate(first) if partial[j] == MASK)
    want = replay(rec.steps[1])
    assert res[1].extra["unmask_tokens"] == want["unmask_tokens"] and res[1].extra["edits"] == want["edits"]


def test_an_edit_threshold_rewrite_is_one_edit_and_the_unmask_snapshot_is_before_it():
    """Hand-made logits: both slots drafted at step 0 (A, B), slot 0 rewritten to C at step 1."""
    A, B, C, V = 4, 5, 6, 8

    class Scripted:
        mask_id, eos_id, vocab_size = 0, 1, V

        def forward(self, canvas, *, attention_mask=None, rows=None):
            out = torch.full((canvas.shape[0], canvas.shape[1], V), -10.0)
            for r in range(canvas.shape[0]):
                gen = canvas[r, -2:].tolist()
                settled = MASK not in gen
                out[r, -2, C if settled else A] = 10.0
                out[r, -1, B] = 10.0
            return out

    r = decode(Scripted(), [[3]], gen_length=2, strategy=build_strategy(
        "edit-threshold", threshold=0.5, edit_threshold=0.5, post_steps=1))[0]
    assert r.tokens == [C, B] and r.extra["edits"] == 1
    assert r.extra["unmask_tokens"] == [A, B] and r.extra["first_tokens"] == [A, B]


class Fixed:
    """Every slot's prediction is fixed: `table[j]` is slot j's token while the whole region is
    masked, `settled[j]` (default the same) once anything is written."""

    mask_id, eos_id, vocab_size = 0, 1, 8

    def __init__(self, table, settled=None):
        self.table, self.settled = table, settled or table

    def forward(self, canvas, *, attention_mask=None, rows=None):
        g = len(self.table)
        out = torch.full((canvas.shape[0], canvas.shape[1], 8), -10.0)
        for r in range(canvas.shape[0]):
            use = self.table if set(canvas[r, -g:].tolist()) == {MASK} else self.settled
            for j, tok in enumerate(use):
                out[r, canvas.shape[1] - g + j, tok] = 10.0
        return out


def test_the_eos_fill_of_stop_at_eos_is_no_edit():
    """All three slots drafted at once (A, EOS, B); stop_at_eos turns B into EOS: no edit, B is
    still the slot's first token, and the unmask answer is the filled one."""
    A, B, EOS = 4, 5, 1
    r = decode(Fixed([A, EOS, B]), [[3]], gen_length=3, strategy=build_strategy(
        "edit-threshold", threshold=0.5, stop_at_eos=True))[0]
    assert r.tokens == [A, EOS, EOS] and r.extra["edits"] == 0
    assert r.extra["first_tokens"] == [A, EOS, B] and r.extra["unmask_tokens"] == [A, EOS, EOS]


def test_a_revision_in_the_step_that_fills_the_last_mask_is_not_in_the_unmask_answer():
    """ReMDM (remask_at=1) masks a token again in the very step that fills the last mask; the
    unmask answer is that step's drafts, with no hole; re-committing the same token is no edit,
    another token one edit."""
    A, B, C = 4, 5, 6
    same = decode(Fixed([A, B]), [[3]], gen_length=2, strategy=build_strategy(
        "remdm", k=2, remask_steps=1, remask_k=1))[0]
    assert same.extra["remasked"] == 1 and same.extra["edits"] == 0
    assert same.extra["unmask_tokens"] == [A, B] and same.tokens == [A, B]
    other = decode(Fixed([A, B], settled=[C, C]), [[3]], gen_length=2, strategy=build_strategy(
        "remdm", k=2, remask_steps=1, remask_k=1))[0]
    assert other.extra["remasked"] == 1 and other.extra["edits"] == 1
    assert other.extra["unmask_tokens"] == [A, B] and other.extra["first_tokens"] == [A, B]
    assert other.tokens != [A, B] and MASK not in other.extra["unmask_tokens"]


@pytest.mark.parametrize("seed", range(12))
def test_deferred_record_equals_the_step_by_step_one(seed):
    """RepairLog keeps its updates and applies them at once when read (`deferred`); that equals
    applying each step as it comes, through commits, edits, remasks, the EOS fill, rows that
    finish and leave, and reads in the middle."""
    from parallelbench.decoding.repair import RepairLog

    g = torch.Generator().manual_seed(seed)
    b, width, mask, eos = 5, 7, 1, 0
    editable = torch.rand((b, width), generator=g) < 0.85
    gen = torch.where(editable, mask, torch.randint(2, 9, (b, width), generator=g))
    masked = editable.clone()
    masked[0] = False  # a row with nothing to fill
    gen[0] = torch.where(editable[0], 5, gen[0])
    logs = [RepairLog(gen, masked, editable, mask, deferred=d) for d in (False, True)]
    for step in range(14):
        rows = gen.shape[0]
        commit = masked & (torch.rand((rows, width), generator=g) < 0.4)
        tokens = torch.randint(2, 9, (rows, width), generator=g)
        drafted = torch.where(commit, tokens, gen)
        settled = ~masked & editable
        edit = settled & (torch.rand((rows, width), generator=g) < 0.2)
        new = torch.where(edit, torch.randint(2, 9, (rows, width), generator=g), drafted)
        remask = (settled | commit) & ~edit & (torch.rand((rows, width), generator=g) < 0.15)
        new = torch.where(remask, mask, new)
        new_masked = (masked & ~commit) | remask
        fill = None
        if step % 4 == 3:  # the EOS fill of rows that stop
            stop = torch.rand((rows, 1), generator=g) < 0.5
            fill = stop & new_masked
            new = torch.where(fill, eos, new)
            new_masked = new_masked & ~fill
        for log in logs:
            log.update(drafted, new, new_masked, editable, fill)
        gen, masked = new, new_masked
        if step % 5 == 4 and rows > 1:  # a row finishes: read it, then drop it
            keep = torch.arange(rows) != step % rows
            outs = [{}, {}]
            for log, out in zip(logs, outs):
                log.finish(~keep, torch.tensor([0]), out, 1)
                log.keep(keep)
            for key in outs[0]:
                assert torch.equal(outs[0][key], outs[1][key]), key
            gen, masked, editable = gen[keep], masked[keep], editable[keep]
        if step % 3 == 2:
            logs[1]._settle()
            for name in ("first", "last", "original", "pending", "unmask", "edits"):
                assert torch.equal(getattr(logs[0], name), getattr(logs[1], name)), (step, name)
    logs[1]._settle()
    for name in ("first", "last", "original", "pending", "unmask", "edits"):
        assert torch.equal(getattr(logs[0], name), getattr(logs[1], name)), name
    assert int(logs[0].edits.sum()) > 0


def _four_logs(g: torch.Generator, b: int, width: int, mask: int):
    """A random region (about 90% editable, all of it masked) and four records of it: step by step,
    deferred, and the same two again for the variant under test."""
    from parallelbench.decoding.repair import RepairLog

    editable = torch.rand((b, width), generator=g) < 0.9
    gen = torch.where(editable, mask, torch.randint(2, 9, (b, width), generator=g))
    masked = editable.clone()
    return editable, gen, masked, [RepairLog(gen, masked, editable, mask, deferred=d) for d in (False, True) * 2]


def _window_step(g: torch.Generator, window, gen, masked, editable, mask: int):
    """A random step inside `window` (commits, edits of settled slots, remasks): (drafted, result, masked)."""
    shape = gen.shape
    commit = window & masked & (torch.rand(shape, generator=g) < 0.5)
    drafted = torch.where(commit, torch.randint(2, 9, shape, generator=g), gen)
    settled = window & ~masked & editable
    edit = settled & (torch.rand(shape, generator=g) < 0.25)
    new = torch.where(edit, torch.randint(2, 9, shape, generator=g), drafted)
    remask = window & (settled | commit) & ~edit & (torch.rand(shape, generator=g) < 0.15)
    return drafted, torch.where(remask, mask, new), (masked & ~commit) | remask


def _assert_all_equal(logs) -> None:
    for log in logs:
        log._settle()
    for name in ("first", "last", "original", "pending", "unmask", "edits"):
        for log in logs[1:]:
            assert torch.equal(getattr(logs[0], name), getattr(log, name)), name

@pytest.mark.parametrize("seed", range(8))
def test_a_draft_of_the_window_placed_by_the_record_equals_the_whole_region_draft(seed):
    """The block-causal loop hands RepairLog only its window's draft (rows x block columns) and a
    `place` that writes it over the region; the record must equal the one given the whole region's
    draft, deferred or not, with the EOS fill reaching past the window."""
    g, b, width, block, mask, eos = torch.Generator().manual_seed(100 + seed), 6, 12, 4, 1, 0
    editable, gen, masked, logs = _four_logs(g, b, width, mask)
    for step in range(16):
        c0 = block * int(torch.randint(0, width // block, (1,), generator=g))
        rows = torch.nonzero(torch.rand(b, generator=g) < 0.7).view(-1)
        if rows.numel() == 0:
            rows = torch.arange(b)
        window = torch.zeros((b, width), dtype=torch.bool)
        window[rows.unsqueeze(1), torch.arange(c0, c0 + block).unsqueeze(0)] = True
        drafted, new, new_masked = _window_step(g, window, gen, masked, editable, mask)
        fill = None
        if step % 3 == 2:  # rows of the window stop: their later masks become EOS, in any column
            stop = torch.zeros((b, 1), dtype=torch.bool)
            stop[rows] = torch.rand((rows.numel(), 1), generator=g) < 0.5
            fill = stop & new_masked
            new = torch.where(fill, eos, new)
            new_masked = new_masked & ~fill
        part = drafted[rows][:, c0:c0 + block].clone()

        def place(full, d, rows=rows, c0=c0):
            full[rows.unsqueeze(1), torch.arange(c0, c0 + block).unsqueeze(0)] = d

        for log in logs[:2]:
            log.update(drafted, new, new_masked, editable, fill)
        for log in logs[2:]:
            log.update(part, new, new_masked, editable, fill, place=place)
        gen, masked = new, new_masked
    _assert_all_equal(logs)
    assert int(logs[0].edits.sum()) > 0


@pytest.mark.parametrize("seed", range(6))
def test_a_step_without_edits_remasks_or_fill_may_hand_over_no_draft(seed):
    """`update(None, ...)`: the draft is the step's result, for a step that neither edits nor remasks
    nor fills; the record must equal the one given that draft, deferred or not, placed or whole."""
    g, b, width, block, mask, eos = torch.Generator().manual_seed(200 + seed), 5, 12, 4, 1, 0
    editable, gen, masked, logs = _four_logs(g, b, width, mask)
    plain_steps = 0
    for step in range(18):
        c0 = block * int(torch.randint(0, width // block, (1,), generator=g))
        window = torch.zeros((b, width), dtype=torch.bool)
        window[:, c0:c0 + block] = True
        commit = window & masked & (torch.rand((b, width), generator=g) < 0.5)
        drafted = torch.where(commit, torch.randint(2, 9, (b, width), generator=g), gen)
        plain = step % 3 != 1  # a step that only commits
        settled = window & ~masked & editable
        edit = settled & (torch.rand((b, width), generator=g) < 0.25) & ~torch.tensor(plain)
        new = torch.where(edit, torch.randint(2, 9, (b, width), generator=g), drafted)
        remask = window & (settled | commit) & ~edit & (torch.rand((b, width), generator=g) < 0.15)
        remask &= ~torch.tensor(plain)
        new = torch.where(remask, mask, new)
        new_masked = (masked & ~commit) | remask
        fill = None
        if step % 6 == 1:  # the EOS fill, only in steps that hand over their draft
            fill = (torch.rand((b, 1), generator=g) < 0.5) & new_masked
            new = torch.where(fill, eos, new)
            new_masked = new_masked & ~fill
        plain_steps += plain

        def place(full, d, c0=c0):
            full[:, c0:c0 + block] = d

        for log in logs[:2]:
            log.update(drafted, new, new_masked, editable, fill)
        for log in logs[2:]:
            log.update(None if plain else drafted[:, c0:c0 + block].clone(), new, new_masked, editable, fill,
                       place=place)
        gen, masked = new, new_masked
    _assert_all_equal(logs)
    assert int(logs[0].edits.sum()) > 0 and plain_steps >= 10


def _shift_rows(g: torch.Generator, n: int, block: int):
    """Random deletes and splits for n rows of a block: (new, origin, inserts, deletes), as `Shift`
    gives them (a DELETE slot drops out, a SPLIT slot opens a new mask before itself)."""
    origin = torch.zeros((n, block), dtype=torch.long)
    new = torch.zeros((n, block), dtype=torch.bool)
    inserts, deletes = torch.zeros(n, dtype=torch.long), torch.zeros(n, dtype=torch.long)
    for i in range(n):
        order: list[int] = []
        for j in range(block):
            u = float(torch.rand(1, generator=g))
            if u < 0.2:
                deletes[i] += 1
                continue
            if u < 0.4:
                order.append(-1)
                inserts[i] += 1
            order.append(j)
        for j, s in enumerate((order + [-1] * block)[:block]):
            origin[i, j], new[i, j] = max(s, 0), s < 0
    return new, origin, inserts, deletes


@pytest.mark.parametrize("seed", range(10))
def test_a_deferred_record_equals_the_step_by_step_one_across_moves(seed):
    """Insert / delete shifts (`RepairLog.move`, indel-threshold) between deferred updates: the kept
    steps are applied before each move (one kept step by update's own rules, several at once) and
    the record goes on deferring afterwards; it must equal the step-by-step record, with moves of
    every row or of a subset, windows placed over the region and the EOS fill."""
    from parallelbench.decoding.repair import RepairLog

    g = torch.Generator().manual_seed(300 + seed)
    b, width, block, mask, eos = 5, 12, 4, 1, 0
    editable = torch.ones((b, width), dtype=torch.bool)
    editable[:, 0] = torch.rand(b, generator=g) < 0.5  # a fixed column in the first block of some rows
    gen = torch.where(editable, mask, torch.randint(2, 9, (b, width), generator=g))
    masked = editable.clone()
    logs = [RepairLog(gen, masked, editable, mask, deferred=d) for d in (False, True)]
    moves = 0
    for step in range(20):
        c0 = block * int(torch.randint(1, width // block, (1,), generator=g))
        rows = torch.nonzero(torch.rand(b, generator=g) < 0.7).view(-1)
        subset = bool(torch.rand(1, generator=g) < 0.5) and 0 < rows.numel() < b
        if not subset:
            rows = torch.arange(b)
        cols = torch.arange(c0, c0 + block).unsqueeze(0)
        window = torch.zeros((b, width), dtype=torch.bool)
        window[rows.unsqueeze(1), cols] = True
        drafted, new, new_masked = _window_step(g, window, gen, masked, editable, mask)
        if torch.rand(1, generator=g) < 0.4:  # this step shifts the window's rows
            moves += 1
            new_at, origin, inserts, deletes = _shift_rows(g, rows.numel(), block)

            def shifted(t, fill):
                part = torch.where(new_at, fill, t[rows][:, c0 : c0 + block].gather(1, origin))
                t = t.clone()
                t[rows.unsqueeze(1), cols] = part
                return t

            drafted, new, new_masked = shifted(drafted, mask), shifted(new, mask), shifted(new_masked, True)
            for log in logs:
                log.move(new_at, origin, inserts, deletes, c0, rows if subset else None)
        fill = None
        if step % 5 == 4:  # rows that stop at EOS fill their masks
            stop = torch.zeros((b, 1), dtype=torch.bool)
            stop[rows] = torch.rand((rows.numel(), 1), generator=g) < 0.5
            fill = stop & new_masked
            new, new_masked = torch.where(fill, eos, new), new_masked & ~fill
        part = drafted[rows][:, c0 : c0 + block].clone()

        def place(full, d, rows=rows, cols=cols):
            full[rows.unsqueeze(1), cols] = d

        for log in logs:
            log.update(part, new, new_masked, editable, fill, place=place)
        gen, masked = new, new_masked
        if step % 7 == 6:
            logs[1]._settle()
    assert moves > 0 and logs[1]._deferred  # the record still defers after its moves
    _assert_all_equal(logs)
    assert torch.equal(logs[0].inserts, logs[1].inserts) and torch.equal(logs[0].deletes, logs[1].deletes)
