"""`indel-threshold`: LLaDA 2.2's insert/delete ("Levenshtein") editing, on block-diffusion models.

A block-causal net whose vocabulary has a DELETE and a SPLIT token can repair a block by
removing a slot or opening a new one, besides rewriting tokens. Each round (one model call) of
the active block B slots long, with x the argmax of every slot (over the whole vocabulary) and
p its probability:

1. mask to token: every mask with p > `threshold`, but at least k plus the masks this block's
   edits introduced (the most confident when too few pass; k = `min_k`, or the `steps` schedule),
   while masks present when the block started ("original" masks) remain; once none does, every
   mask. An original mask whose argmax is the mask token takes its best other token;
2. token to token: a written, editable slot whose argmax differs from its token and has
   p > `edit_threshold` takes it (a mask token written there masks it again);
3. DELETE written into a slot removes it (the block's later slots move left, a new mask fills
   the end); SPLIT turns the slot into a new mask followed by the token the slot held (later
   slots move right, the last one drops off). Slots that are not editable (the prompt's tail)
   stay in place. The original-mask marks travel with their slots.

Once no original mask is left at the start of a round, the round counts as a post-edit round;
the `post_steps`-th is the block's final round (with `post_steps=0`, the round that fills the
last original mask), and so is any round past B + `post_steps`: it commits every mask and
writes no mask, DELETE or SPLIT (each slot that would takes its best other token). A block also
ends after a round that writes nothing. A block whose slots were seen before in the same block
gets one deterministic change: among the slots this round changes, the least confident takes
its best token never written there this block (the hub decoder draws this slot at random).
`post_rule="cumulative"` counts post-edit rounds over the whole block (SGLang);
`"reset"` restarts the count whenever original masks reappear (the hub decoder).

This is SGLang's `JointThresholdInDel.step` (python/sglang/srt/dllm/algorithm/
joint_threshold_indel.py, the version whose docstring names the cumulative count) as a
batched strategy: one model call per round, so NFE counts every round, edit rounds included
(SGLang's extra forward that only stores a block changed by its final round is not a round).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from parallelbench.decoding import selection
from parallelbench.decoding.strategy import DecodeOptions, Strategy, option_error, register_strategy
from parallelbench.decoding.op_kinds import and_not, cached, constant, float32, minus, ramp
from parallelbench.decoding.view import PLAIN_UP_TO, Decision, Shift, StepView, width_for, winning_chunk

POST_RULES = ("cumulative", "reset")
# _needed: on the CPU, read whether the loop escape, the remask and the shift are needed (tests turn it off)
READ_ON_CPU = True
NEG_INF = float("-inf")


@dataclass
class IndelThresholdOptions(DecodeOptions):
    threshold: float = 0.5  # mask to token: commit masks above this confidence (SGLang's default)
    edit_threshold: float = 0.0  # token to token: rewrite a written slot whose differing argmax is above this
    min_k: int = 1  # masks committed at least per round, besides those the block's edits introduced (SGLang)
    steps: int | None = None  # instead of min_k: the hub decoder's schedule, B split evenly over `steps` rounds
    post_steps: int = 16  # post-edit rounds once the original masks are filled; the last one is scrubbed
    post_rule: str = "cumulative"  # cumulative (SGLang) | reset (the hub decoder)
    delete_token: int | None = None  # DELETE id; None = the model's `delete_token_id` (its config)
    split_token: int | None = None  # SPLIT id; None = the model's `split_token_id`


def split_schedule(block_length: int, steps: int) -> list[int]:
    """B split over `steps` rounds, the first B % steps rounds one larger (LLaDA 2's schedule)."""
    base, extra = divmod(block_length, steps)
    return [base + (1 if s < extra else 0) for s in range(steps)]


def edit_token_ids(options: IndelThresholdOptions, model: Any) -> tuple[int, int]:
    """(DELETE, SPLIT) ids for `model`: the options', else the model's; one ValueError line if unusable."""
    found = {}  # the caller's line names the model spec; its class name would mean nothing to a user
    for role, given, attr in (("delete", options.delete_token, "delete_token_id"),
                              ("split", options.split_token, "split_token_id")):
        value, where = (given, f"option {role}_token") if given is not None else (
            getattr(model, attr, None), f"the model's {attr}")
        if value is None:
            raise ValueError(
                f"strategy 'indel-threshold' needs DELETE and SPLIT token ids, and the model has no {attr} (LLaDA 2.2 "
                f"checkpoints state delete_token_id / split_token_id in config.json): give delete_token=ID split_token=ID")
        vocab = int(getattr(model, "vocab_size", 0) or 0)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < vocab:
            raise ValueError(f"{where}={value!r} is outside the vocabulary of the model (ids 0..{vocab - 1}); "
                             f"give an id of its {role.upper()} token")
        if value == int(model.mask_id):
            raise ValueError(f"{where}={value} is the model's mask id; give the id of its {role.upper()} token")
        found[role] = int(value)
    if found["delete"] == found["split"]:
        raise ValueError(f"DELETE and SPLIT are the same id {found['delete']}; give two different tokens")
    return found["delete"], found["split"]


@register_strategy("indel-threshold")
class IndelThreshold(Strategy):
    Options = IndelThresholdOptions
    description = "LLaDA 2.2: commit above threshold, rewrite tokens, delete and insert slots (block-diffusion models)"
    kind = "adaptive"
    rewrites = True  # edits, inserts and deletes: the engine keeps the repair record
    requires_block_causal = True
    focus = "candidates"  # the step reads the block's logits itself and hands over tokens and confidences

    def check_options(self) -> None:
        super().check_options()
        o = self.options
        for name in ("threshold", "edit_threshold"):
            value = getattr(o, name)
            if not 0.0 <= value <= 1.0:
                raise option_error(name, value, "[0, 1]")
        if o.min_k < 1:
            raise option_error("min_k", o.min_k, "an integer >= 1 (masks committed at least per round)")
        if o.steps is not None:
            if o.steps < 1:
                raise option_error("steps", o.steps, "an integer >= 1 (rounds the block length is split over), or None")
            if o.min_k != 1:
                raise ValueError("options min_k and steps are exclusive: give min_k (SGLang's rule) or steps "
                                 "(the hub decoder's schedule), not both")
        if o.post_steps < 0:
            raise option_error("post_steps", o.post_steps, "an integer >= 0 (post-edit rounds per block)")
        if o.post_rule not in POST_RULES:
            raise option_error("post_rule", o.post_rule, " | ".join(POST_RULES))
        for name in ("delete_token", "split_token"):
            value = getattr(o, name)
            if value is not None and value < 0:
                raise option_error(name, value, "a token id >= 0, or None (the model's config)")
        if o.delete_token is not None and o.delete_token == o.split_token:
            raise ValueError(f"options delete_token and split_token are the same id {o.delete_token}; "
                             "give two different tokens")
        if o.temperature != 0.0:
            raise option_error("temperature", o.temperature, "0 (indel-threshold decodes greedily, as LLaDA 2.2 does)")

    def check_model(self, model: Any) -> None:
        super().check_model(model)  # block-causal models only (requires_block_causal), block length
        edit_token_ids(self.options, model)

    def begin(self, context: dict[str, Any]) -> None:
        self.check_model(context["model"])

    def max_steps(self, gen_length: int) -> int:
        # at most B + post_steps + 1 rounds per block of B >= 1 slots
        return 8 * gen_length + 64 + gen_length * (self.options.post_steps + 1)

    def init_state(self, batch_size: int, gen_length: int, device: torch.device) -> dict[str, Any]:
        return {
            "orig": torch.zeros((batch_size, gen_length), dtype=torch.bool, device=device),  # original-mask marks
            "post": torch.zeros(batch_size, dtype=torch.long, device=device),  # post-edit rounds counted
            "rounds": {"rows": batch_size},  # per-block round records, indexed by original row
        }

    def step(self, view: StepView) -> Decision:
        o = self.options
        st = view.state
        delete_id, split_id = edit_token_ids(o, view.aux["model"])
        mask_id = view.mask_id
        canvas, masked, editable = view.canvas, view.masked, view.editable
        b, g = canvas.shape
        block = view.block_length
        # this round's index within the block, the same for every row: on the host (the loop gives it)
        # (a view built by hand without it: one host read, every row on the same round as in the loop)
        r = view.block_round if view.block_round is not None else int(view.block_step[0])
        if r == 0:  # a new block: its masks are the original ones, no post-edit round counted yet
            orig, post = masked, cached(("indel-post0", b, canvas.device), lambda: torch.zeros(b, dtype=torch.long,
                                                                                       device=canvas.device))
        else:
            orig, post = st["orig"], st["post"]

        orig_masks = orig & masked
        n_orig = orig_masks.sum(dim=1)
        none_left = n_orig == constant(0, n_orig)
        if o.post_rule == "cumulative":
            post = post + none_left
        else:
            post = torch.where(none_left, post + 1, 0)
        m = o.post_steps
        if r >= block + m:  # round r + 1 > block + m
            final = cached(("indel-final", b, canvas.device), lambda: torch.ones(b, dtype=torch.bool, device=canvas.device))
        else:
            final = (constant(m - 1, post) < post) if m > 0 else none_left  # post >= m (lt: a kind the step runs)

        # an original mask whose argmax is the mask token takes its best other token: x is the argmax
        # without the mask token there (in the model's dtype: no float copy of the whole block)
        x, clean, p, flat = _vocab_choices(view.logits, mask_id, delete_id, split_id,
                                           no_mask=and_not(orig_masks, final.unsqueeze(1)))
        ids = _set_aside(flat.shape[1], (mask_id, delete_id, split_id), canvas.device)

        # mask to token: above the threshold, and at least k plus the masks this block's edits introduced
        # (the union: when enough pass, the best `required` pass; when too few, they are among the best)
        k = o.min_k if o.steps is None else split_schedule(block, o.steps)[min(r, o.steps - 1)]
        required = minus(masked.sum(dim=1), n_orig) + k
        chosen = (masked & (constant(o.threshold, p) < p)) | selection.top_by_rank(p, masked, required)
        past = none_left | final  # rows past their regular rounds: every mask
        m2t = torch.where(past.unsqueeze(1), masked, chosen)
        if m == 0:  # the round that fills the last original mask is the final one
            last = ~(past | and_not(orig_masks, m2t).amax(dim=1))
            final = final | last
            m2t = torch.where(last.unsqueeze(1), masked, m2t)

        # token to token
        t2t = and_not(and_not(editable, masked) & (constant(o.edit_threshold, p) < p), canvas == x)
        writes = m2t | t2t

        # the final round writes no mask, DELETE or SPLIT: clean, which is x itself where x is none of them
        # (x is the first of the best tokens, so the first of those outside the three)
        x = torch.where(writes & final.unsqueeze(1), clean, x)
        same = x == canvas
        rounds = st["rounds"]
        if "seen" not in rounds:  # the records of a block's rounds (at most B + post_steps + 1), by decode row
            cap = block + m + 2
            rounds["seen"] = torch.full((rounds["rows"], cap, g), -1, dtype=torch.long, device=canvas.device)
            rounds["written"] = torch.full((rounds["rows"], g, cap), view.logits.shape[-1], dtype=torch.long,
                                           device=canvas.device)
        # rows that meet an earlier state of the block (round 0 has none) and change a slot
        changing = and_not(writes, same) if r > 0 else None
        again = _seen_again(rounds, view, r, changing, final) if changing is not None else None
        wrote, hits = _written(writes, x, ids)
        escapes, remasks, shifts = _needed(again, hits)
        if escapes:
            x = _loop_escape(rounds, view, r, flat, x, p, changing, again, orig_masks)
            same = x == canvas
            wrote, hits = _written(writes, x, ids)
            remasks = shifts = True  # (the read was of the writes before the escape)
        _record_round(rounds, view, r, canvas, wrote)

        # what the writes do: tokens, masks again, deletes and splits (then the shift)
        masks, deleted, split = hits.unbind(2)
        special = hits.amax(dim=2) if shifts else masks
        commit = and_not(m2t, special)  # a token written as such
        edit = and_not(and_not(t2t, special), same)
        remask = t2t & masks if remasks else None  # (None: the loop skips its remask work)
        if shifts:
            shift = _shift(editable, deleted, split)
            st["orig"] = and_not(orig.gather(1, shift.origin), shift.new)  # a slot keeps its mark; new masks have none
        else:  # no row deletes or splits: every slot stays (no Shift: the loop writes the block in place)
            shift = None
            if r == 0:  # a copy: the loop updates the block's masks in place
                st["orig"] = orig.clone()
        st["post"] = post
        hold = and_not(writes.amax(dim=1), final)  # a final round, or one that writes nothing, ends the block
        return Decision(commit=commit, tokens=x, confidence=p, edit=edit, remask=remask, hold=hold, shift=shift)


def _needed(again: torch.Tensor | None, hits: torch.Tensor) -> tuple[bool, bool, bool]:
    """(whether a row escapes a loop, whether a row writes a mask, whether a row deletes or splits):
    on the CPU one read of the device, which costs nothing there and spares most rounds the loop
    escape, the shift and the loop's remask work (none of them needed in such rounds); elsewhere
    no read, and all of them run (no-ops where nothing is needed), so a GPU never waits on the step.
    Outputs are the same either way."""
    if hits.device.type != "cpu" or not READ_ON_CPU:
        return again is not None, True, True
    written = hits.amax(dim=(0, 1))  # [3]: a mask, DELETE, SPLIT written anywhere
    if again is None:  # round 0: no earlier state to meet
        mask, delete, split = written.tolist()
        return False, mask, delete or split
    escape, mask, delete, split = torch.stack((again.amax(), *written.unbind())).tolist()
    return escape, mask, delete or split


def _written(writes: torch.Tensor, x: torch.Tensor, ids: "_SetAside") -> tuple[torch.Tensor, torch.Tensor]:
    """([b, G] the token each slot is written, the vocabulary size ("none") where nothing is, and
    [b, G, 3] whether that is a mask, DELETE, SPLIT: "none" is none of them)."""
    wrote = torch.where(writes, x, ids.vocab)
    return wrote, wrote.unsqueeze(2) == ids.order


def _seen_again(rounds: dict[str, Any], view: StepView, r: int, changing: torch.Tensor,
                final: torch.Tensor) -> torch.Tensor:
    """[b] rows whose block state was seen before in this block (rounds 0..r-1), that change a slot
    and are not in their final round: they escape the loop (_loop_escape)."""
    seen = rounds["seen"] if view.canvas.shape[0] == rounds["rows"] else rounds["seen"].index_select(0, view.rows)
    seen = seen[:, :r]  # [b, r, G]
    seen_before = (seen == view.canvas.unsqueeze(1)).amin(dim=2).amax(dim=1)
    return and_not(seen_before & changing.amax(dim=1), final)


def _loop_escape(rounds: dict[str, Any], view: StepView, r: int, flat: torch.Tensor, x: torch.Tensor,
                 p: torch.Tensor, changing: torch.Tensor, escape: torch.Tensor,
                 orig_masks: torch.Tensor) -> torch.Tensor:
    """x, where a row that escapes (`escape` [b], _seen_again) changes its least confident changing
    slot to its best token never written there in this block (not the mask token at an original
    mask). Gathers by flat line index (index_select) and the records of rounds before r only; no host read."""
    b, g = x.shape
    rows = view.rows
    # the least confident changing slot, the first on a tie (argmax of -p: the kinds the step runs)
    at = torch.where(changing, minus(constant(0.0, p), p), constant(NEG_INF, p)).argmax(dim=1)
    line = torch.add(at, ramp(0, b, torch.long, x.device), alpha=g)  # row * G + at
    cap, vocab = rounds["written"].shape[2], flat.shape[1]
    # the slot's logits, in the model's dtype (argmax is the same in float32), in a buffer with one
    # column more whose -inf takes the "none" id (vocab) of the records: the bans are scattered into
    # the logits themselves, no [b, V] mask is made or applied
    pick = rounds.get(("pick", b))
    if pick is None or pick.dtype != flat.dtype:
        pick = rounds[("pick", b)] = torch.full((b, vocab + 1), NEG_INF, dtype=flat.dtype, device=x.device)
    torch.index_select(flat, 0, line, out=pick[:, :vocab])
    at_row = line if b == rounds["rows"] else torch.add(at, rows, alpha=g)  # the record's line (rows: 0..b-1)
    banned = rounds["written"].view(-1, cap).index_select(0, at_row)  # [b, cap], a copy
    orig_at = orig_masks.reshape(-1).index_select(0, line)
    if r < cap:  # column r (this round's, not yet recorded) bans the mask token at an original mask
        torch.where(orig_at, constant(view.mask_id, banned), constant(vocab, banned), out=banned[:, r])
        banned = banned[:, : r + 1]
    else:
        banned = banned[:, :r]
        pick.select(1, view.mask_id).masked_fill_(orig_at, NEG_INF)
    pick.scatter_(1, banned, NEG_INF)
    slot = escape.unsqueeze(1) & (ramp(0, g, torch.long, x.device) == at.unsqueeze(1))
    return torch.where(slot, pick.argmax(dim=1, keepdim=True), x)


def _record_round(rounds: dict[str, Any], view: StepView, r: int, canvas: torch.Tensor, written: torch.Tensor) -> None:
    """Round r's block state and the tokens it writes (the vocabulary size where none), at the rows'
    own places (rows are the decode's; a block's rounds 0..r-1 were written by its earlier steps, so
    nothing is reset when a block begins)."""
    slot = min(r, rounds["seen"].shape[1] - 1)
    rounds["seen"].select(1, slot).index_copy_(0, view.rows, canvas)
    rounds["written"].select(2, slot).index_copy_(0, view.rows, written)


def _vocab_choices(logits: torch.Tensor, mask_id: int, delete_id: int, split_id: int,
                   no_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
    """Per slot of [b, G, V] logits: the argmax over the vocabulary (x; over all but the mask token
    where `no_mask` [b, G]) and over all but mask, DELETE and SPLIT (clean), each the first index on a
    tie (SGLang's argmax of logits with those columns at -inf), x's float32 softmax probability, and
    the logits as [b * G, V] rows. One chunked pass finds clean; x is clean or one of the three
    set-aside columns, so no second pass over the vocabulary and no copy of the logits are needed."""
    b, g, v = logits.shape
    flat = logits.reshape(b * g, v)
    ids = _set_aside(v, (mask_id, delete_id, split_id), flat.device)
    aside = flat.index_select(1, ids.order)  # [N, 3], a copy: the three columns
    clean_value, clean = _best_outside(flat, ids, aside)
    if no_mask is not None:
        aside.select(1, 0).masked_fill_(no_mask.reshape(-1), NEG_INF)
    top = torch.maximum(clean_value, aside.amax(dim=1))
    first_aside = torch.where(aside == top.unsqueeze(1), ids.order, ids.vocab).amin(dim=1)
    x = torch.where(clean_value == top, torch.minimum(clean, first_aside), first_aside)
    p = _softmax_at(flat, x.unsqueeze(1))
    return x.view(b, g), clean.view(b, g), p.view(b, g), flat


class _SetAside:
    """The three set-aside ids of a vocabulary, laid out for _best_outside (made once per vocabulary)."""

    def __init__(self, v: int, banned: tuple[int, int, int], device: torch.device):
        self.order = torch.tensor(banned, device=device)  # mask, DELETE, SPLIT
        self.vocab = torch.tensor(v, device=device)  # an id past the vocabulary: "none"
        self.width = width_for(v) if device.type == "cpu" else None  # elsewhere: the plain way


def _set_aside(v: int, banned: tuple[int, int, int], device: torch.device) -> _SetAside:
    return cached(("indel-set-aside", v, banned, device), lambda: _SetAside(v, banned, device))


def _best_outside(flat: torch.Tensor, ids: _SetAside, aside: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(values, indices) of each row's maximum of [N, V] leaving out the set-aside columns, the
    first index on a tie. On many rows: the set-aside columns set to -inf in `flat` itself and put
    back afterwards from `aside` (their copy, [N, 3]; no copy of the logits), the chunks' maxima
    (vectorised amax), and the index looked for only in the winning chunk; on few rows (or off the
    CPU), a copy with the columns at -inf and max(dim)."""
    n, v = flat.shape
    w = ids.width if n * v > PLAIN_UP_TO else None
    if w is None:
        return flat.index_fill(1, ids.order, NEG_INF).max(dim=-1)
    if not flat.is_contiguous() or (flat.is_inference() and not torch.is_inference_mode_enabled()):
        # a copy of its own, nothing to put back (an inference tensor cannot be written outside inference mode)
        flat = flat.clone(memory_format=torch.contiguous_format)
        aside = None
    # index_copy_ both ways: a kind the step runs (index_fill_ is not)
    flat.index_copy_(1, ids.order, cached(("indel-minus-inf", n, flat.dtype, flat.device),
                                          lambda: torch.full((n, 3), NEG_INF, dtype=flat.dtype, device=flat.device)))
    try:
        blocks = flat.view(n, v // w, w)
        chunk_max = blocks.amax(dim=-1)
        # max(dim) as amax and argmax (the first chunk holding it): kinds the step runs, max(dim) is not
        values, block = chunk_max.amax(dim=-1), chunk_max.argmax(dim=-1)
        inner = winning_chunk(blocks, block).argmax(dim=-1)
    finally:
        if aside is not None:
            flat.index_copy_(1, ids.order, aside)
    return values, torch.add(inner, block, alpha=w)  # block * w + inner in one op


def _softmax_at(flat: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """[N, k] float32 softmax(flat)[row, cols[row]], in row chunks of about 256 MB of float32 (a
    block of a large vocabulary at a large batch)."""
    rows = max(1, (1 << 26) // max(flat.shape[-1], 1))
    if flat.shape[0] <= rows:
        return torch.softmax(float32(flat), dim=-1).gather(1, cols)
    return torch.cat([torch.softmax(float32(f), dim=-1).gather(1, c) for f, c in zip(flat.split(rows), cols.split(rows))])


def _shift(editable: torch.Tensor, deleted: torch.Tensor, split: torch.Tensor) -> Shift:
    """The edit operations' Shift: per slot of [b, G], the slot whose content it holds afterwards, -1 for
    a new mask (with `new` and `origin`, and the inserts and deletes per row).

    The editable slots, read in order, are a sequence: a DELETE slot contributes nothing, a SPLIT
    slot a new mask then its own content, any other slot its content. That sequence, cut or padded
    with new masks to the number of editable slots, fills them in order; other slots stay put.
    With E, S, D the running counts of editable, SPLIT and DELETE slots, slot s's part ends at
    end_s = E_s + S_s - D_s, and the editable slot q takes the E_q-th item: that of the first s with
    end_s >= E_q, its content when end_s == E_q (the last item of s), a new mask when not (the mask
    a SPLIT opens, or past the sequence's end)."""
    g = editable.shape[1]
    counts, splits, deletes = torch.stack((editable, split, deleted)).cumsum(dim=2)  # (DELETE and SPLIT are editable)
    end = minus(counts + splits, deletes)
    src = torch.minimum(torch.searchsorted(end, counts), constant(g - 1, end))  # a valid index (clamp's kind spared)
    new = and_not(editable, counts == end.gather(1, src))
    origin = torch.where(editable, src, ramp(0, g, torch.long, editable.device))
    source = torch.where(new, constant(-1, origin), origin)
    return Shift(source=source, inserts=splits[:, -1], deletes=deletes[:, -1], new=new, origin=origin)
