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
from parallelbench.decoding.op_kinds import float32
from parallelbench.decoding.view import PLAIN_UP_TO, Decision, Shift, StepView, width_for, winning_chunk

POST_RULES = ("cumulative", "reset")
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
        b, width = canvas.shape
        block = view.block_length
        device = canvas.device
        rounds = st["rounds"]
        vocab = view.logits.shape[-1]
        cap = block + o.post_steps + 2  # rounds a block can take, with room to spare
        if "seen" not in rounds:
            rounds["seen"] = torch.full((rounds["rows"], cap, width), -1, dtype=torch.long, device=device)
            # tokens written per slot and round; the vocabulary size where none was (a column past the vocabulary)
            rounds["written"] = torch.full((rounds["rows"], width, cap), vocab, dtype=torch.long, device=device)
        r = view.block_step.to(device)  # this round's index within the block (the same for every row)
        fresh = r == 0
        # every row in the call: view.rows is 0..n-1, so the records are updated where they are
        whole = view.rows.shape[0] == rounds["rows"]
        if whole:
            seen = rounds["seen"].masked_fill_(fresh[:, None, None], -1)  # block states of earlier rounds
            written = rounds["written"].masked_fill_(fresh[:, None, None], vocab)
        else:
            seen = torch.where(fresh[:, None, None], -1, rounds["seen"][view.rows])
            written = torch.where(fresh[:, None, None], vocab, rounds["written"][view.rows])
        orig = torch.where(fresh.unsqueeze(1), masked, st["orig"])
        post = torch.where(fresh, 0, st["post"])

        logits = view.logits  # in the model's dtype: no float copy of the whole block
        x, other, clean, p, p_other = _vocab_choices(logits, mask_id, delete_id, split_id)

        orig_masks = orig & masked
        n_orig, n_masks = orig_masks.sum(dim=1), masked.sum(dim=1)
        introduced = n_masks - n_orig
        if o.post_rule == "cumulative":
            post = post + (n_orig == 0)
        else:
            post = torch.where(n_orig > 0, 0, post + 1)
        m = o.post_steps
        final = r >= block + m  # round r + 1 > block + m
        final = final | ((post >= m) if m > 0 else (n_orig == 0))

        # an original mask whose argmax is the mask token takes its best other token
        fallback = orig_masks & (x == mask_id) & ~final.unsqueeze(1)
        x = torch.where(fallback, other, x)
        p = torch.where(fallback, p_other, p)

        # mask to token
        conf = torch.where(masked, p, NEG_INF)
        if o.steps is None:
            k = o.min_k
        else:
            schedule = torch.tensor(split_schedule(block, o.steps), device=device)
            k = schedule[r.clamp(max=o.steps - 1)]
        required = torch.minimum(introduced + k, n_masks)
        high = conf > o.threshold  # conf is -inf off the masks, and the threshold is at least 0
        chosen = torch.where((high.sum(dim=1) >= required).unsqueeze(1), high, selection.top_k(conf, masked, required))
        regular = (n_orig > 0) & ~final
        m2t = torch.where(regular.unsqueeze(1), chosen, masked)
        if m == 0:  # the round that fills the last original mask is the final one
            last = regular & ~(orig_masks & ~m2t).any(dim=1)
            final = final | last
            m2t = torch.where(last.unsqueeze(1), masked, m2t)

        # token to token
        t2t = ~masked & editable & (p > o.edit_threshold) & (canvas != x)
        writes = m2t | t2t
        quiet = ~writes.any(dim=1)  # nothing to write: the block is done

        # the final round writes no mask, DELETE or SPLIT: clean, which is x itself where x is none of them
        # (x, as other, is the first of the best tokens, so the first of those outside the three)
        x = torch.where(writes & final.unsqueeze(1), clean, x)

        # loop escape: a block state seen before changes its least confident changing slot
        seen_before = (seen == canvas.unsqueeze(1)).all(dim=2).any(dim=1)
        changing = writes & (x != canvas)
        escape = seen_before & ~final & changing.any(dim=1)
        at = torch.where(changing, p, float("inf")).argmin(dim=1)
        ar = torch.arange(b, device=device)
        pick = logits[ar, at].float()
        ban = torch.zeros((b, vocab + 1), dtype=torch.bool, device=device).scatter_(1, written[ar, at], True)
        pick.masked_fill_(ban[:, :-1], NEG_INF).select(1, mask_id).masked_fill_(orig_masks[ar, at], NEG_INF)
        redraw = pick.argmax(dim=-1)
        x[ar, at] = torch.where(escape, redraw, x[ar, at])
        slot = r.clamp(max=cap - 1)
        seen[ar, slot] = canvas
        written[ar, :, slot] = torch.where(writes, x, written[ar, :, slot])
        if not whole:
            rounds["seen"][view.rows] = seen
            rounds["written"][view.rows] = written

        # what the writes do: tokens, masks again, deletes and splits (then the shift)
        is_delete, is_split, is_mask = x == delete_id, x == split_id, x == mask_id
        deleted, split = writes & is_delete, writes & is_split
        plain = writes & ~(is_delete | is_split | is_mask)  # a token written as such
        commit = m2t & plain
        edit = t2t & plain & (x != canvas)
        remask = t2t & is_mask
        source = _shift_source(editable, deleted, split)
        moved = source.clamp(min=0)
        st["orig"] = (source >= 0) & orig.gather(1, moved)  # a slot keeps its mark when filled; new masks have none
        st["post"] = post
        shift = Shift(source=source, inserts=split.sum(dim=1), deletes=deleted.sum(dim=1))
        return Decision(commit=commit, tokens=x, confidence=p, edit=edit, remask=remask, hold=~(final | quiet),
                        shift=shift)


def _vocab_choices(logits: torch.Tensor, mask_id: int, delete_id: int, split_id: int) -> tuple[torch.Tensor, ...]:
    """Per slot of [b, G, V] logits: the argmax over the vocabulary (x), over all but the mask token
    (other) and over all but mask, DELETE and SPLIT (clean), each the first index on a tie (SGLang's
    argmax of logits with those columns at -inf), and the float32 softmax probabilities of x and
    other. One chunked pass finds clean; x and other are clean or one of the three set-aside
    columns, so no second pass over the vocabulary and no copy of the logits are needed."""
    b, g, v = logits.shape
    flat = logits.reshape(b * g, v)
    ids = _set_aside(v, (mask_id, delete_id, split_id), flat.device)
    clean_value, clean = _best_outside(flat, ids)
    # x and other: clean, or one of the three set-aside columns (the mask's left out for other)
    aside = flat.index_select(1, ids.order).unsqueeze(1) + ids.left_out  # [N, 2, 3]
    top = torch.maximum(clean_value.unsqueeze(1), aside.amax(dim=2))  # [N, 2]
    first_aside = torch.where(aside == top.unsqueeze(2), ids.order, v).amin(dim=2)
    choice = torch.where(clean_value.unsqueeze(1) == top, torch.minimum(clean.unsqueeze(1), first_aside), first_aside)
    probs = _softmax_at(flat, choice)
    x, other = choice.unbind(1)
    return (x.view(b, g), other.view(b, g), clean.view(b, g), probs[:, 0].view(b, g), probs[:, 1].view(b, g))


class _SetAside:
    """The three set-aside ids of a vocabulary, laid out for _best_outside (made once per vocabulary)."""

    def __init__(self, v: int, banned: tuple[int, int, int], device: torch.device):
        self.order = torch.tensor(banned, device=device)  # mask, DELETE, SPLIT
        # added to the three columns' logits: as they are (for x), the mask's left out (for other)
        self.left_out = torch.tensor([[0.0, 0.0, 0.0], [NEG_INF, 0.0, 0.0]], device=device)
        self.width = width_for(v) if device.type == "cpu" else None  # elsewhere: the plain way
        if self.width is not None:
            w = self.width
            cols = torch.zeros(v, dtype=torch.bool, device=device).index_fill_(0, self.order, True)
            self.ban = cols.view(v // w, w)  # [chunks, w]: True at the set-aside columns
            self.chunks = torch.tensor(sorted({i // w for i in banned}), device=device)  # the chunks holding one
            self.chunk_ban = self.ban.index_select(0, self.chunks)


_SET_ASIDE: dict[tuple[int, tuple[int, int, int], torch.device], _SetAside] = {}


def _set_aside(v: int, banned: tuple[int, int, int], device: torch.device) -> _SetAside:
    key = (v, banned, device)
    found = _SET_ASIDE.get(key)
    if found is None:
        found = _SET_ASIDE[key] = _SetAside(v, banned, device)
    return found


def _best_outside(flat: torch.Tensor, ids: _SetAside) -> tuple[torch.Tensor, torch.Tensor]:
    """(values, indices) of each row's maximum of [N, V] leaving out the set-aside columns, the
    first index on a tie. On many rows: the chunks' maxima (vectorised amax), those of the chunks
    holding a set-aside column taken again without it, and the index looked for only in the
    winning chunk; on few rows (or off the CPU), a copy with the columns at -inf and max(dim)."""
    n, v = flat.shape
    w = ids.width if n * v > PLAIN_UP_TO else None
    if w is None:
        return flat.index_fill(1, ids.order, NEG_INF).max(dim=-1)
    blocks = flat.view(n, v // w, w) if flat.is_contiguous() else flat.reshape(n, v // w, w)
    chunk_max = blocks.amax(dim=-1)
    fixed = blocks.index_select(1, ids.chunks).masked_fill_(ids.chunk_ban, NEG_INF).amax(dim=-1)
    values, block = chunk_max.index_copy_(1, ids.chunks, fixed).max(dim=-1)  # the first chunk holding it
    inner = winning_chunk(blocks, block).masked_fill_(ids.ban.index_select(0, block), NEG_INF).argmax(dim=-1)
    return values, block * w + inner


def _softmax_at(flat: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """[N, k] float32 softmax(flat)[row, cols[row]], in row chunks of about 256 MB of float32 (a
    block of a large vocabulary at a large batch)."""
    rows = max(1, (1 << 26) // max(flat.shape[-1], 1))
    if flat.shape[0] <= rows:
        return torch.softmax(float32(flat), dim=-1).gather(1, cols)
    return torch.cat([torch.softmax(float32(f), dim=-1).gather(1, c) for f, c in zip(flat.split(rows), cols.split(rows))])


def _shift_source(editable: torch.Tensor, deleted: torch.Tensor, split: torch.Tensor) -> torch.Tensor:
    """[b, G] the slot whose content each slot holds after the edit operations, -1 for a new mask.

    The editable slots, read in order, are a sequence: a DELETE slot contributes nothing, a SPLIT
    slot a new mask then its own content, any other slot its content. That sequence, cut or padded
    with new masks to the number of editable slots, fills them in order; other slots stay put."""
    b, g = editable.shape
    width = torch.where(editable, torch.where(deleted, 0, torch.where(split, 2, 1)), 0)
    end = width.cumsum(dim=1)
    rank = editable.long().cumsum(dim=1) - 1  # each editable slot's place in the sequence
    src = torch.searchsorted(end, rank.clamp(min=0), right=True)  # the slot whose part covers that place
    inside = src < g
    src = src.clamp(max=g - 1)
    part = rank - (end - width).gather(1, src)  # 0 or 1 (1: the old content of a SPLIT)
    opened = split.gather(1, src) & (part == 0)
    out = torch.where(inside & ~opened, src, -1)
    return torch.where(editable, out, torch.arange(g, device=editable.device).expand(b, g))
